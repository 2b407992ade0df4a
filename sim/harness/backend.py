"""The ``rtl-fast`` backend of :class:`zynqflow.host.Accelerator`: the RTL twin on the
free-running Verilator harness (:mod:`zynqflow.sim.harness.rtl_fast`), for thousands of frames.

    zynqflow stream 'frames/*.png' --backend rtl-fast
    Accelerator(export, backend="rtl-fast", workers=2, backpressure=0.2)

Frames run back to back (auto-restart) on one simulator per core; each frame's
status must be 0 and its ``cycles_last`` register must equal the harness's own
count. The figures are simulated time of the accelerator alone at 100 MHz:
``stream`` latency per frame = cycles_last / 100 MHz (first input beat accepted
to last output beat accepted), total seconds = the frames' back-to-back cycles.
No host driver, DMA or PYNQ shim is simulated: the cocotb ``rtl`` backend is the
one that runs the real driver code.
"""

from __future__ import annotations

import os

import numpy as np

from zynqflow.host.accelerator import Backend
from zynqflow.host.stats import MEASURED, cycle_figures
from zynqflow.host.errors import AcceleratorError, BackendError
from zynqflow.host.manifest import Export

from zynqflow.sim.harness.rtl_fast import CLOCK_HZ, FastBuild, RtlFastError, SimSpec, cycle_budget, run_sharded

SHARD_MIN_FRAMES = 64   # fewer frames run in this process (a pool costs more than it saves)
CLOCK_LABEL = "simulated time, RTL at 100 MHz, accelerator only"


class RtlFastBackend(Backend):
    """``rtl-fast``: logits, cycles_last and status from the RTL, through the C++ harness."""

    name = "rtl-fast"

    def __init__(self, export: Export, workers: int | None = None, backpressure: float = 0.0, seed: int = 1,
                 **_ignored):
        super().__init__(export)
        export.require(self.name)
        export.weight_image()                # weights.bin checked against the manifest
        try:
            lib = FastBuild(export.dir).build()
        except RtlFastError as e:
            raise BackendError(f"rtl-fast backend: {e}") from e
        self.spec = SimSpec.for_export(lib, export.dir)
        self.workers, self.backpressure, self.seed = workers, float(backpressure), seed
        self.last = None

    @property
    def clock(self) -> str:
        return CLOCK_LABEL

    @property
    def timing(self) -> str:
        return "accelerator only (simulated; no host driver, DMA or host time)"

    def _run(self, frames: np.ndarray):
        frames = np.ascontiguousarray(frames, dtype=np.uint8)
        n = len(frames)
        workers = self.workers or (os.cpu_count() if n >= SHARD_MIN_FRAMES else 1)
        try:
            res = run_sharded(self.spec, frames, workers=workers, backpressure=self.backpressure, seed=self.seed,
                              frame_budget=cycle_budget(self.export.dir, self.backpressure))
        except RtlFastError as e:
            raise AcceleratorError(f"rtl-fast backend: {e}") from e
        bad = np.flatnonzero(res.status)
        if len(bad):
            raise AcceleratorError(f"rtl-fast backend: {len(bad)} of {n} frames answered with status != 0 "
                                   f"(first: frame {bad[0]}, status 0x{int(res.status[bad[0]]):x})")
        try:
            res.check()
        except RtlFastError as e:
            raise AcceleratorError(f"rtl-fast backend: {e}") from e
        self.last = res
        cyc = res.cycles_last
        last = int(cyc[-1]) if n else None
        dram = {k: int(res.regs[k][-1]) if n and k in res.regs else None for k in ("dram_rd_bytes", "dram_wr_bytes")}
        info = dict(engine="rtl", cycles_last=last, **cycle_figures(last, self.export.cycles_model, "RTL simulation"),
                    dram_rd_bytes_per_frame=dram["dram_rd_bytes"], dram_wr_bytes_per_frame=dram["dram_wr_bytes"],
                    dram_from=MEASURED if dram["dram_rd_bytes"] is not None else None,
                    frame_period_cycles=float(np.median(res.periods)) if len(res.periods) else None,
                    sim_wall_seconds=res.wall_s, sim_wall_fps=n / res.wall_s if res.wall_s > 0 else None,
                    sim_cycles_per_second=res.sim_cycles_per_second, workers=len(res.workers),
                    frames_done=int(sum(int(b) for b in res.frames_done_per_worker.values())),
                    backpressure=self.backpressure, rtl="rtl (free-running Verilator harness)")
        return res, info

    def classify(self, frames):
        res, info = self._run(frames)
        info["cycles_last_per_frame"] = res.cycles_last.astype(int).tolist()
        return res.logits, info

    def stream(self, frames):
        res, info = self._run(frames)
        return res.logits, res.cycles_last.astype(np.float64) / CLOCK_HZ, res.simulated_seconds, info
