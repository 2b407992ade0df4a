"""Statistics of a run: what a call measured (:class:`RunStats`), the host's own time per frame
(:class:`HostTime`), frames/s and DMA bandwidth (:func:`throughput`), latency percentiles, and the
labels every figure carries: cycles are *measured* by the RTL twin (``cycles_last``, the DRAM
counters) or *modelled* (the manifest's ``cycles_model_hls``: the HLS engine has no cycle counter);
times are the driver clock's (board: wall time, host work included; simulation: simulated time,
accelerator and DMA only)."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from .registers import MEASURED_REGS

MEASURED = "measured (RTL twin)"
MODELLED = "modelled (manifest cycles_model_hls; the HLS engine has no cycle counter)"


@dataclass
class RunStats:
    """What one :meth:`ZqDriver.classify` / :meth:`ZqDriver.stream` call measured
    (times in the driver clock's seconds: wall time on the board, simulated
    time in the RTL simulation; ``host``: the host's own work, see the module docstring)."""

    mode: str
    logits: np.ndarray                 # int64 N x classes, in input order
    t_send: np.ndarray                 # clock when each frame's MM2S transfer was started
    t_done: np.ndarray                 # clock when each frame's S2MM transfer was seen complete
    seconds: float                     # first transfer to last result
    cycles_last: list = field(default_factory=list)  # per frame (classify) or the last (stream); None: HLS engine
    dram_rd_bytes: list = field(default_factory=list)      # as cycles_last (RTL twin: measured; else None)
    dram_wr_bytes: list = field(default_factory=list)
    dram_stall_cycles: list = field(default_factory=list)
    engine: str = ""                   # "rtl" (the RTL twin, measures) or "hls"
    frames_done: int = 0               # how far the frames_done register advanced (recoveries included)
    registers: dict = field(default_factory=dict)           # after the run
    host: dict = field(default_factory=dict)                # host_*_seconds_per_frame
    recoveries: list = field(default_factory=list)          # one dict per recovery during the call
    mm2s_transfers: int = 0            # transfers the driver started (re-sends, probes, drains included)
    s2mm_transfers: int = 0
    interrupts: bool = False           # waits used the interrupts

    @property
    def latency_s(self) -> np.ndarray:
        return self.t_done - self.t_send

    @property
    def fps(self) -> float:
        return len(self.logits) / self.seconds if self.seconds > 0 else float("nan")


class FrameResults:
    """Results of a call in progress: ``next`` is the first frame without a result."""

    def __init__(self, n: int, classes: int):
        self.logits = np.zeros((n, classes), np.int64)
        self.t_send, self.t_done = np.zeros(n), np.zeros(n)
        self.measured: dict[str, list] = {k: [] for k in MEASURED_REGS if k != "cycles_last"}
        self.cycles: list = []
        self.next = 0


class HostTime:
    """The driver's own time (``time.perf_counter``), by part: wall time minus the time
    ``outside()`` counts (a simulator), each part exclusive of the parts nested in it."""

    PARTS = ("wait", "copy", "dma", "recovery")

    def __init__(self, outside=None):
        self.outside = outside or (lambda: 0.0)
        self.begin()

    def _own(self) -> float:
        return time.perf_counter() - self.outside()

    def begin(self) -> None:
        self.t0 = self._own()
        self.acc = dict.fromkeys(self.PARTS, 0.0)
        self._stack: list[float] = []          # per open part: time of the parts nested in it
        self._in_recovery = False

    @contextmanager
    def part(self, key: str):
        if self._in_recovery:                  # everything in a recovery counts as recovery
            yield
            return
        t = self._own()
        self._stack.append(0.0)
        self._in_recovery = key == "recovery"
        try:
            yield
        finally:
            self._in_recovery = False
            dt = self._own() - t
            nested = self._stack.pop()
            self.acc[key] += dt - nested
            if self._stack:
                self._stack[-1] += dt

    def per_frame(self, n: int) -> dict:
        total = self._own() - self.t0
        host = total - self.acc["wait"] - self.acc["recovery"]
        f = (lambda v: v / n) if n else (lambda v: float("nan"))
        return dict(host_seconds_per_frame=f(host), host_copy_seconds_per_frame=f(self.acc["copy"]),
                    host_dma_seconds_per_frame=f(self.acc["dma"]),
                    host_driver_seconds_per_frame=f(host - self.acc["copy"] - self.acc["dma"]),
                    host_wait_seconds=self.acc["wait"], host_recovery_seconds=self.acc["recovery"])


def throughput(frames: int, seconds: float, host_s_per_frame: float, bytes_in: int, bytes_out: int,
               fclk_hz: float, cycles_last: int | None, simulated: bool, modelled_cycles: int | None = None) -> dict:
    """Frames/s and DMA bandwidth (MB/s, 10^6 bytes) of a stream, accelerator only and
    including the host's per-frame work.

    Simulated (``seconds`` is simulated time, which holds no host time): accelerator only =
    frames / simulated seconds; including host = an estimate, simulated seconds plus
    ``frames`` x the host time measured on this machine (not the board's CPU), no overlap.
    On the board (``seconds`` is wall time, host work included): including host = measured;
    accelerator only = ``fclk / cycles_last`` (the engine from a frame's first input beat to its
    last output beat, frames back to back, the DMA keeping up; measured by the RTL twin), or,
    on the HLS engine, which has no cycle counter, ``fclk / modelled_cycles`` (the manifest's
    cycle model: labelled modelled)."""
    n = int(frames)
    host = float(host_s_per_frame or 0.0)
    acc_fps = inc_fps = float("nan")
    if simulated:
        if seconds > 0:
            acc_fps = n / seconds
            inc_fps = n / (seconds + n * host)
        acc_src = "simulated time (RTL + DMA model, host time not included)"
        inc_src = ("estimate: simulated accelerator time + host time per frame measured on this machine "
                   "(not the board's CPU), no overlap")
    else:
        if seconds > 0:
            inc_fps = n / seconds
        if cycles_last:
            acc_fps = fclk_hz / cycles_last
            acc_src = f"fclk / cycles_last (the engine alone, frames back to back; {MEASURED})"
        else:
            if modelled_cycles:
                acc_fps = fclk_hz / modelled_cycles
            acc_src = f"fclk / cycles per frame of the cycle model (the engine alone; {MODELLED})"
        inc_src = "board wall time (host work included)"
    mb = 1e-6
    return dict(frames=n, bytes_in_per_frame=int(bytes_in), bytes_out_per_frame=int(bytes_out),
                fclk_mhz=fclk_hz / 1e6, cycles_last=cycles_last,
                fps_accelerator_only=acc_fps, input_MBps_accelerator_only=acc_fps * bytes_in * mb,
                output_MBps_accelerator_only=acc_fps * bytes_out * mb,
                fps_including_host=inc_fps, input_MBps_including_host=inc_fps * bytes_in * mb,
                output_MBps_including_host=inc_fps * bytes_out * mb,
                host_seconds_per_frame=host, accelerator_only_from=acc_src, including_host_from=inc_src)


def percentiles(lat_s, q=(50, 90, 99)) -> dict[str, float]:
    """Latency percentiles in milliseconds: {'p50': .., 'p90': .., 'p99': ..}."""
    a = np.asarray(lat_s, dtype=np.float64)
    if a.size == 0:
        return {f"p{p}": float("nan") for p in q}
    return {f"p{p}": float(np.percentile(a, p) * 1e3) for p in q}


def cycle_figures(cycles_last, model: dict | None, where: str) -> dict:
    """Cycles and frames/s at 100 MHz of one frame: measured when ``cycles_last`` is given (the
    RTL twin), else from the manifest's cycle model ``model`` and labelled modelled. ``where``:
    what ran ("RTL simulation", "board")."""
    model = model or {}
    if cycles_last:
        cyc, src = int(cycles_last), f"{MEASURED}, {where}"
    else:
        cyc, src = (int(model["cycles"]) if model.get("cycles") else None), MODELLED
    return dict(cycles_per_frame=cyc, cycles_from=src, fps_at_100MHz=(100e6 / cyc) if cyc else None,
                fps_at_100MHz_from=src,
                fps_at_100MHz_from_cycles_last=(100e6 / int(cycles_last)) if cycles_last else None)


def driver_info(steps: dict, fclk_hz: float, bytes_in: int, bytes_out: int, simulated: bool,
                model: dict | None = None) -> dict:
    """``Results.info`` of a driver run (rtl, pynq), from a RunStats-like dict: cycles (measured
    or, with ``model``, the manifest's cycle model, labelled), DRAM bytes per frame where the
    engine measures them, the host's per-frame work, recoveries, throughput and DMA bandwidth."""
    cyc = list(steps.get("cycles_last") or [])
    last = cyc[-1] if cyc else None

    def last_of(key):
        v = list(steps.get(key) or [])
        return v[-1] if v else None

    host = dict(steps.get("host") or {})
    info = dict(engine=steps.get("engine"), cycles_last=last, fclk_mhz=fclk_hz / 1e6,
                fps_from_cycles_last=(fclk_hz / last) if last else None,
                **cycle_figures(last, model, "RTL simulation" if simulated else "board"),
                dram_rd_bytes_per_frame=last_of("dram_rd_bytes"), dram_wr_bytes_per_frame=last_of("dram_wr_bytes"),
                dram_stall_cycles=last_of("dram_stall_cycles"),
                frames_done=steps.get("frames_done"), recoveries=list(steps.get("recoveries") or []),
                mm2s_transfers=steps.get("mm2s_transfers"), s2mm_transfers=steps.get("s2mm_transfers"))
    info["dram_from"] = MEASURED if info["dram_rd_bytes_per_frame"] is not None else None
    info.update({k: v for k, v in host.items() if k.endswith("_per_frame")})
    if steps.get("seconds") is not None:
        info["throughput"] = throughput(len(steps["logits"]), steps["seconds"], host.get("host_seconds_per_frame", 0.0),
                                        bytes_in, bytes_out, fclk_hz, last, simulated,
                                        modelled_cycles=(model or {}).get("period_cycles") or (model or {}).get("cycles"))
    return info
