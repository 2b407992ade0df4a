"""cocotb test: the host driver (the board code) on ``zq_top`` through the PYNQ shim.

Started by :func:`zynqflow.sim.rtl_host.run_job` with the cocotb runner (a
Verilator build of :mod:`zynqflow.sim.rtl_sim`). The job comes from the JSON
file ``$ZQ_HOST_JOB``::

    {"export": "<dir>", "regmap": null, "backpressure": 0.0, "seed": 1, "timeout_s": null,
     "steps": [{"op": "classify" | "stream", "frames": "<file.npy>"}, ...],
     "result": "<result.json>", "arrays": "<result.npz>"}

The driver (``ZqDriver``, exactly as on the board) runs in a
``cocotb.task.bridge`` thread; the shim turns each of its register and DMA
calls into simulation with ``cocotb.task.resume``. Results: logits and
times per step in the ``.npz``, a summary in the ``.json`` (including the
driver's error, if it raised a ``HostError``: the parent re-raises it).
"""

from __future__ import annotations

import json
import os
import time
import traceback
from pathlib import Path

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.task import bridge
from cocotb.triggers import ClockCycles

from zynqflow.host.driver import ZqDriver
from zynqflow.host.errors import HostError
from zynqflow.host.manifest import Export, find_regmap
from zynqflow.sim.sim_shim import SimOverlay

CLK_NS = 10


@cocotb.test(timeout_time=float(os.environ.get("ZQ_HOST_SIM_LIMIT_MS", "2000")), timeout_unit="ms")
async def host_job(dut):
    job = json.loads(Path(os.environ["ZQ_HOST_JOB"]).read_text())
    result_file, arrays_file = Path(job["result"]), Path(job["arrays"])
    export = Export(job["export"])
    regmap = find_regmap(export, job.get("regmap"))
    cocotb.start_soon(Clock(dut.ap_clk, CLK_NS, unit="ns", impl=os.environ.get("ZQ_CLOCK_IMPL", "gpi")).start())
    ol = SimOverlay(dut, period_ns=CLK_NS, backpressure=float(job.get("backpressure") or 0.0), seed=int(job.get("seed", 1)),
                    poll_cycles=int(os.environ.get("ZQ_POLL", job.get("poll_cycles", 256))))
    await ol.reset()
    steps = job["steps"]
    summary: dict = dict(steps=[], error=None)
    arrays: dict = {}

    def run() -> None:
        """The host program: runs in a bridge thread, exactly as on the board."""
        drv = ZqDriver(ol, ol.allocate, export, regmap, clock=ol.now, timeout_s=job.get("timeout_s"),
                       min_timeout_s=0.0, fclk_hz=1e9 / CLK_NS,
                       source=f"RTL simulation of {export.network} ({job.get('build', 'zq_top')})")
        with drv:
            for i, step in enumerate(steps):
                frames = np.load(step["frames"])
                t = time.perf_counter()
                st = drv.classify(frames) if step["op"] == "classify" else drv.stream(frames)
                wall = time.perf_counter() - t
                arrays[f"logits{i}"] = st.logits
                arrays[f"t_send{i}"] = st.t_send
                arrays[f"t_done{i}"] = st.t_done
                summary["steps"].append(dict(op=st.mode, frames=len(st.logits), sim_seconds=st.seconds,
                                             wall_seconds=wall, cycles_last=st.cycles_last,
                                             frames_done=st.frames_done, registers=st.registers))
            summary.update(net_id=drv.hw_id, id_probed=drv.id_probed)

    t0 = time.perf_counter()
    try:
        await bridge(run)()
    except HostError as e:
        summary["error"] = dict(type=type(e).__name__, message=str(e))
    except Exception as e:  # noqa: BLE001 - reported to the parent, and the test fails
        summary["error"] = dict(type=type(e).__name__, message=str(e), traceback=traceback.format_exc())
        raise
    finally:
        summary["wall_seconds"] = time.perf_counter() - t0
        # anything the engine sends after the last result is a second result for some frame
        ol.sink.pause = False
        ol.sink.clear_pause_generator()
        await ClockCycles(dut.ap_clk, int(job.get("drain_cycles", 200)))
        summary.update(
            extra_output_frames=ol.sink.count(), source_idle=bool(ol.source.idle()),
            mm2s_transfers=ol.dma.sendchannel.transfers, s2mm_transfers=ol.dma.recvchannel.transfers,
            mmio_reads=ol.mmio.reads, mmio_writes=ol.mmio.writes,
            sim_time_ns=cocotb.utils.get_sim_time("ns"))
        np.savez(arrays_file, **arrays)
        result_file.write_text(json.dumps(summary, indent=1, default=lambda o: o.tolist() if hasattr(o, "tolist")
                                          else str(o)))
