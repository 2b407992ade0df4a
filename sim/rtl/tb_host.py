"""cocotb test: the host driver (the board code) on ``zq_top`` through the PYNQ shim.

Started by :func:`zynqflow.sim.rtl.host_job.run_job` with the cocotb runner (a
Verilator build of :mod:`zynqflow.sim.rtl.runner`). The job comes from the JSON
file ``$ZQ_HOST_JOB``::

    {"export": "<dir>", "engine": "rtl" | "hls", "backpressure": 0.0, "seed": 1, "timeout_s": null,
     "sim": {"faults": [...], "interrupts": true, "pynq_dma": false,
             "registers": "vitis" | "none" | {"<reg>": <offset in the .hwh>, ...},
             "dma_state": "reset" | "error", "dma": {"busy_reset_cycles": 600, ...},
             "omit_ips": ["axi_dma_0"], "kill_on_sigint": false,
             "alloc": {"base": <address>, "align": 4096, "forget_flush_bytes": <n>, "reuse": true}},
     "driver": {"retries": 2, "recover": true, "fclk_mhz": null, "timing": null, "open_reset": true},
     "continue_on_error": false,
     "steps": [{"op": "classify" | "stream" | "classify_async" | "stream_async", "frames": "<file.npy>"},
               {"op": "pl_reset"}, {"op": "reopen"}, ...]  (or [{"op": "doctor"}]),
     "result": "<result.json>", "arrays": "<result.npz>"}

``engine``: the DUT (the RTL twin, or the Vitis HLS export). ``sim``: the
shim's options (:class:`~zynqflow.sim.world.pynq_shim.SimOverlay`): DMA faults and
tampering to inject; the interrupt lines wired or not; pynq's own DMA channel
driver (``pynq_dma``; importing pynq in the simulator process takes seconds)
or, by default, the shim's port of it (the same register accesses, checks and
messages; the tests run both); the registers the overlay reports as read
from a ``.hwh`` (the Vitis HLS names of the specification's register map of
``engine``, none, or that map with some offsets changed); the DMA left halted
with an error (as an earlier process can leave a board); where ``allocate``
places buffers in the simulated DDR, and a buffer size whose ``flush()`` is
forgotten. ``driver``: the :class:`~zynqflow.host.driver.ZqDriver` options,
and a PL clock to set (checked against ``timing``, a bitstream's ``.json``, as
on the board). A ``pl_reset`` step pulls ``ap_rst_n`` low between two calls
(what reloading the bitstream does to the PL; the DDR keeps its contents);
``reopen`` closes the driver and opens another on the loaded design (a new
process with ``--no-download``). A DMA fault ``sigint`` raises
``KeyboardInterrupt`` in the driver (Ctrl-C): the driver is closed, as a
process's ``with`` does, or, with ``kill_on_sigint``, abandoned (a killed
process: its buffers freed, the DMA and the engine left as they were) and a
new one opened. ``doctor`` runs ``zynqflow doctor``'s checks instead of a
driver. The design's ``.hwh`` is written in the run directory and read back
as pynq does (:mod:`zynqflow.sim.world.vitis_hwh`).

The driver (``ZqDriver``, exactly as on the board) runs in a
``cocotb.task.bridge`` thread; the shim turns each of its register and DMA
calls into simulation with ``cocotb.task.resume``; the ``*_async`` steps run
the driver's asyncio methods in an event loop of that thread. Results:
logits and times per step in the ``.npz``, a summary in the ``.json``
(including the driver's error, if it raised a ``HostError``: the parent
re-raises it, unless ``continue_on_error`` records it per step).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import traceback
from pathlib import Path

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.task import bridge, resume
from cocotb.triggers import ClockCycles

from zynqflow.host.board import open_driver
from zynqflow.host.driver import DEFAULT_RETRIES
from zynqflow.host.errors import HostError
from zynqflow.host.manifest import Export
from zynqflow.sim.world.pynq_shim import SimOverlay, _pynq_channel_class, vitis_hwh_registers
from zynqflow.sim.world.vitis_hwh import read_hwh, registers_from_offsets, write_hwh
from zynqflow.spec import engine as E

CLK_NS = 10
OPS = ("classify", "stream", "classify_async", "stream_async", "pl_reset", "reopen", "doctor")


def _error(e: BaseException) -> dict:
    scalar = (int, float, str, bool, type(None))
    attrs = {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in vars(e).items()
             if isinstance(v, scalar) or isinstance(v, (list, tuple)) and all(isinstance(x, scalar) for x in v)}
    return dict(type=type(e).__name__, message=str(e), attrs=attrs)


@cocotb.test(timeout_time=float(os.environ.get("ZQ_HOST_SIM_LIMIT_MS", "2000")), timeout_unit="ms")
async def host_job(dut):
    job = json.loads(Path(os.environ["ZQ_HOST_JOB"]).read_text())
    result_file, arrays_file = Path(job["result"]), Path(job["arrays"])
    export = Export(job["export"])
    engine = job.get("engine", "rtl")
    sim, dopt = job.get("sim") or {}, job.get("driver") or {}
    clock = Clock(dut.ap_clk, CLK_NS, unit="ns", impl=os.environ.get("ZQ_CLOCK_IMPL", "gpi"))
    clock.start()
    regs = sim.get("registers", "vitis")
    # the .hwh of the simulated design (the RTL twin packaged as an IP: the specification's map with
    # Vitis's names, some offsets changed on request), written and read back as pynq does
    hwh = result_file.parent / "zq_top.hwh"
    offs = vitis_hwh_registers({**E.offsets(engine), **(regs if isinstance(regs, dict) else {})})
    write_hwh(hwh, registers_from_offsets({n: r["address_offset"] for n, r in offs.items()}))
    registers = None if regs in (None, "none") else read_hwh(hwh)["zq_top_0"]["registers"]
    ol = SimOverlay(dut, period_ns=CLK_NS, backpressure=float(job.get("backpressure") or 0.0),
                    seed=int(job.get("seed", 1)), poll_cycles=int(os.environ.get("ZQ_POLL", job.get("poll_cycles", 256))),
                    faults=sim.get("faults") or (), registers=registers, interrupts=bool(sim.get("interrupts", True)),
                    clock=clock, pynq_dma=bool(sim.get("pynq_dma", False)), engine=engine, alloc=sim.get("alloc"),
                    dma=sim.get("dma"), omit_ips=tuple(sim.get("omit_ips") or ()))
    if ol.use_pynq_dma:
        _pynq_channel_class()        # import pynq before the driver's thread starts
    await ol.reset()
    if sim.get("dma_state") == "error":
        ol.dma_model.set_error_state("s2mm")
    steps = job["steps"]
    summary: dict = dict(steps=[], error=None)
    arrays: dict = {}

    def open_drv():
        """The board's open sequence (clock, registers, DMA state) on the shim's objects."""
        return open_driver(export, ol, platform=ol.platform(
            source=f"RTL simulation of {export.network} ({job.get('build', 'zq_top')})",
            raw_mmio=dopt.get("open_reset", True), timing=dopt.get("timing")), fclk_mhz=dopt.get("fclk_mhz"),
            timeout_s=job.get("timeout_s"), min_timeout_s=0.0, retries=int(dopt.get("retries", DEFAULT_RETRIES)),
            recover=bool(dopt.get("recover", True)))

    def no_result(i: int) -> None:
        arrays[f"logits{i}"] = np.zeros((0, export.num_classes), np.int64)
        arrays[f"t_send{i}"] = arrays[f"t_done{i}"] = np.zeros(0)

    def run() -> None:
        """The host program: runs in a bridge thread, exactly as on the board."""
        if steps and steps[0]["op"] == "doctor":          # zynqflow doctor instead of a driver
            from zynqflow.host.doctor import run_checks

            summary["doctor"] = [c.as_dict() for c in run_checks(
                export, overlay=ol, hwh=hwh, environment=lambda: "RTL simulation: no board environment to check",
                platform_for=lambda overlay, bit: ol.platform(source=f"RTL simulation of {export.network}"),
                timeout_s=job.get("timeout_s"), min_timeout_s=0.0)]
            return
        drv = open_drv()
        summary.update(fclk_mhz=drv.fclk_hz / 1e6, fclk_set=drv.clock_info, open_log=[drv.open_log])
        summary.update(open_reset=drv.open_reset, registers_checked=drv.registers_checked,
                       has_interrupts=drv.has_interrupts, ddr={k: v for k, v in drv.bases.items()})
        try:
            for i, step in enumerate(steps):
                op = step["op"]
                if op == "pl_reset":                 # ap_rst_n, as reloading the bitstream does
                    resume(ol.reset)()
                    summary["steps"].append(dict(op=op, frames=0, error=None))
                    no_result(i)
                    continue
                if op == "reopen":                   # a new process on the loaded bitstream (--no-download)
                    drv.close()
                    ol.new_process()
                    drv = open_drv()
                    summary["open_log"].append(drv.open_log)
                    summary["steps"].append(dict(op=op, frames=0, error=None, open_reset=drv.open_reset,
                                                 ddr=dict(drv.bases)))
                    no_result(i)
                    continue
                frames = np.load(step["frames"])
                t = time.perf_counter()
                try:
                    if op.endswith("_async"):
                        st = asyncio.run(getattr(drv, op)(frames))
                    else:
                        st = getattr(drv, op)(frames)
                except KeyboardInterrupt as e:   # Ctrl-C: the process's `with` closes the driver, and ends
                    note = None
                    if sim.get("kill_on_sigint"):
                        # killed instead (SIGKILL): no close(); the kernel frees its buffers, the DMA and
                        # the engine stay as they were; the next process opens the loaded bitstream
                        drv.ddr.free_all()
                        ol.new_process()
                        drv = open_drv()
                        summary["open_log"].append(drv.open_log)
                    else:
                        drv.close()
                        note = drv.close_note
                    summary["steps"].append(dict(op=op, frames=len(frames), error=dict(
                        type="KeyboardInterrupt", message=str(e), attrs={}), close_note=note))
                    no_result(i)
                    continue
                except HostError as e:
                    if not job.get("continue_on_error"):
                        raise
                    summary["steps"].append(dict(op=op, frames=len(frames), error=_error(e)))
                    no_result(i)
                    continue
                wall = time.perf_counter() - t
                arrays[f"logits{i}"] = st.logits
                arrays[f"t_send{i}"] = st.t_send
                arrays[f"t_done{i}"] = st.t_done
                summary["steps"].append(dict(op=op, frames=len(st.logits), sim_seconds=st.seconds,
                                             wall_seconds=wall, cycles_last=st.cycles_last, engine=st.engine,
                                             dram_rd_bytes=st.dram_rd_bytes, dram_wr_bytes=st.dram_wr_bytes,
                                             dram_stall_cycles=st.dram_stall_cycles,
                                             frames_done=st.frames_done, registers=st.registers, host=st.host,
                                             recoveries=st.recoveries, mm2s_transfers=st.mm2s_transfers,
                                             s2mm_transfers=st.s2mm_transfers, interrupts=st.interrupts,
                                             error=None))
            summary.update(net_id=drv.hw_id, id_probed=drv.id_probed, engine=drv.engine,
                           engine_from=drv.engine_from, weight_loads=drv.weight_loads,
                           bases_rewritten=drv.bases_rewritten)
        finally:
            drv.close()

    t0 = time.perf_counter()
    try:
        await bridge(run)()
    except HostError as e:
        summary["error"] = _error(e)
    except Exception as e:  # noqa: BLE001 - reported to the parent, and the test fails
        summary["error"] = dict(type=type(e).__name__, message=str(e), traceback=traceback.format_exc())
        raise
    finally:
        summary["wall_seconds"] = time.perf_counter() - t0
        # anything the engine sends after the last result is a second result for some frame
        ol.sink.pause = False
        ol.sink.clear_pause_generator()
        await ClockCycles(dut.ap_clk, int(job.get("drain_cycles", 200)))
        m = ol.dma_model
        dma = ol.dma
        irqs = {}
        for name, irq in (("accel", ol.accel_irq), ("mm2s", dma and dma.mm2s_introut),
                          ("s2mm", dma and dma.s2mm_introut)):
            if irq:
                irqs[name] = dict(waits=irq.waits, fired=irq.fired, timeouts=irq.timeouts)
        summary.update(
            alloc_log=ol.allocate.log,
            dma_errors_ns=dict(mm2s=m.mm2s.t_error_ns, s2mm=m.s2mm.t_error_ns),
            extra_output_frames=ol.sink.count(), source_idle=bool(ol.source.idle()),
            mm2s_transfers=m.mm2s.transfers, s2mm_transfers=m.s2mm.transfers,
            dma=dict(channel_class=dma.channel_class if dma else None, resets=m.resets, stray_writes=m.stray_writes,
                     mid_packet=m.mid_packet,
                     mm2s_errors=m.mm2s.errors, s2mm_errors=m.s2mm.errors,
                     ignored_writes=m.mm2s.ignored_writes + m.s2mm.ignored_writes),
            interrupts=irqs, mmio_reads=ol.mmio.reads, mmio_writes=ol.mmio.writes, tampered=ol.tampered,
            ddr_bytes=dict(wts_rd=ol.ddr.wts.read.bytes, act_rd=ol.ddr.act.read.bytes + ol.ddr.act2.read.bytes,
                           act_wr=ol.ddr.act.write.bytes + ol.ddr.wts.write.bytes),
            sim_wall_seconds=ol.sim_wall_seconds(), sim_time_ns=cocotb.utils.get_sim_time("ns"))
        np.savez(arrays_file, **arrays)
        result_file.write_text(json.dumps(summary, indent=1, default=lambda o: o.tolist() if hasattr(o, "tolist")
                                          else str(o)))
