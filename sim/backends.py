"""The simulation backends of :class:`zynqflow.host.Accelerator`: ``csim``
(the HLS engine in g++ C simulation) and ``rtl`` (the board driver on the
Verilator RTL through the PYNQ shim). Registered as entry points in the
group ``zynqflow.backends`` (pyproject.toml), so the host package, which is
deployed to boards without this one, never imports them."""

from __future__ import annotations

from zynqflow.host.accelerator import Backend, _CpuBackend
from zynqflow.host.errors import BackendError
from zynqflow.host.manifest import Export


class CSimBackend(_CpuBackend):
    name = "csim"

    def __init__(self, export: Export, native: bool = True, out_dir=None):
        super().__init__(export)
        export.require("csim")
        from .csim import CSim, CSimError

        self._err = CSimError
        if out_dir is None:
            # build/<net>/export -> build/<net>/csim (as zynqflow.sim.csim does); other export
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
    """The board driver on the Verilator RTL (one simulation per call)."""

    name = "rtl"

    def __init__(self, export: Export, rtl: str | None = None, backpressure: float = 0.0, seed: int = 1,
                 timeout_s: float | None = None, keep: bool = False):
        super().__init__(export)
        export.require("rtl")
        self.opts = dict(rtl=rtl, backpressure=backpressure, seed=seed, timeout_s=timeout_s, keep=keep)
        self.last: dict = {}

    def _job(self, op, frames):
        from .rtl_host import CLOCK_HZ, run_job

        res = run_job(self.export, [(op, frames)], **self.opts)
        self.last = res
        s = res["steps"][0]
        cyc = s["cycles_last"]
        info = dict(cycles_last=cyc[-1] if cyc else None,
                    fps_at_100MHz_from_cycles_last=(CLOCK_HZ / cyc[-1]) if cyc and cyc[-1] else None,
                    sim_wall_seconds=s["wall_seconds"], sim_wall_fps=len(s["logits"]) / s["wall_seconds"]
                    if s["wall_seconds"] > 0 else None,
                    frames_done=s["frames_done"], net_id=f"0x{res['net_id']:08x}",
                    extra_output_frames=res["extra_output_frames"], rtl=res["kind"])
        if op == "classify":
            info["cycles_last_per_frame"] = cyc
        return s, info

    def classify(self, frames):
        s, info = self._job("classify", frames)
        return s["logits"], info

    def stream(self, frames):
        s, info = self._job("stream", frames)
        return s["logits"], s["t_done"] - s["t_send"], s["sim_seconds"], info


