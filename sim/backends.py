"""The simulation backends of :class:`zynqflow.host.Accelerator`: ``csim``
(the HLS engine in g++ C simulation) and ``rtl`` (the board driver on the
Verilator RTL through the PYNQ shim). Registered as entry points in the
group ``zynqflow.backends`` (pyproject.toml), so the host package, which is
deployed to boards without this one, never imports them."""

from __future__ import annotations

import json
import os

from zynqflow.host.accelerator import Backend, _CpuBackend
from zynqflow.host.stats import driver_info
from zynqflow.host.errors import BackendError
from zynqflow.host.manifest import Export


class CSimBackend(_CpuBackend):
    name = "csim"

    def __init__(self, export: Export, native: bool = True, out_dir=None):
        super().__init__(export)
        export.require("csim")
        from zynqflow.sim.csim.runner import CSim, CSimError

        self._err = CSimError
        if out_dir is None:
            # build/<net>/export -> build/<net>/csim (as zynqflow.sim.csim.runner does); other export
            # directories side by side get one build directory each instead of sharing one
            d = export.dir
            out_dir = d.parent / ("csim" if d.name == "export" else f"csim-{d.name}")
        try:
            self.sim = CSim(export.dir, native=native, out_dir=out_dir)
        except CSimError as e:
            raise BackendError(f"csim backend: {e}") from e

    def _run(self, frames):
        try:
            return self.sim.run(frames, progress=False)
        except self._err as e:
            raise BackendError(f"csim backend: {e}") from e


class RtlBackend(Backend):
    """The board driver on the Verilator RTL (one simulation per call).

    ``fclk_mhz``: the PL clock to set (as on the board: the Zynq divisors, checked against
    ``timing``, a bitstream's ``.json``, when given); ``retries``: the driver's recoveries per
    call; ``faults``: DMA faults to inject (:mod:`zynqflow.sim.world.pynq_shim`; also from the
    environment variable ``ZQ_SIM_FAULTS``, JSON, so that the CLI can be tried against them)."""

    name = "rtl"

    def __init__(self, export: Export, rtl: str | None = None, backpressure: float = 0.0, seed: int = 1,
                 timeout_s: float | None = None, keep: bool = False, fclk_mhz: float | None = None,
                 timing=None, retries: int | None = None, faults=None, interrupts: bool = True):
        super().__init__(export)
        export.require("rtl")
        if faults is None and os.environ.get("ZQ_SIM_FAULTS"):
            try:
                faults = json.loads(os.environ["ZQ_SIM_FAULTS"])
            except ValueError as e:
                raise BackendError(f"ZQ_SIM_FAULTS is not JSON ({e})") from e
        driver = {k: v for k, v in dict(fclk_mhz=fclk_mhz, retries=retries,
                                        timing=str(timing) if timing is not None and not isinstance(timing, dict)
                                        else timing).items() if v is not None}
        self.opts = dict(rtl=rtl, backpressure=backpressure, seed=seed, timeout_s=timeout_s, keep=keep,
                         driver=driver, sim=dict(faults=list(faults or []), interrupts=interrupts))
        self.fclk_mhz = fclk_mhz
        self.last: dict = {}

    @property
    def clock(self) -> str:
        mhz = self.last.get("fclk_mhz") or self.fclk_mhz or 100
        return f"simulated time, RTL simulation at {mhz:g} MHz: accelerator only (host time not included)"

    def _job(self, op, frames):
        from zynqflow.sim.rtl.host_job import run_job

        res = run_job(self.export, [(op, frames)], **self.opts)
        self.last = res
        s = res["steps"][0]
        info = driver_info(dict(s, seconds=s["sim_seconds"] if op == "stream" else None), res["fclk_mhz"] * 1e6,
                           self.export.bytes_per_frame, self.export.num_classes * 4, simulated=True,
                           model=self.export.cycles_model)
        info.update(sim_wall_seconds=s["wall_seconds"],
                    sim_wall_fps=len(s["logits"]) / s["wall_seconds"] if s["wall_seconds"] > 0 else None,
                    net_id=f"0x{res['net_id']:08x}", extra_output_frames=res["extra_output_frames"],
                    rtl=res["kind"], ddr={k: f"0x{v:08x}" for k, v in res["ddr"].items()})
        if op == "classify":
            info["cycles_last_per_frame"] = s["cycles_last"]
        return s, info

    def classify(self, frames):
        s, info = self._job("classify", frames)
        return s["logits"], info

    def doctor(self) -> list[dict]:
        """``zynqflow doctor``'s checks (:mod:`zynqflow.host.doctor`) against the simulated design."""
        from zynqflow.sim.rtl.host_job import run_job

        res = run_job(self.export, [("doctor", None)], **self.opts)
        self.last = res
        return res["doctor"]

    def stream(self, frames):
        s, info = self._job("stream", frames)
        return s["logits"], s["t_done"] - s["t_send"], s["sim_seconds"], info
