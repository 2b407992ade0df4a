"""``Accelerator``: one front end, four backends.

    from zynqflow.host import Accelerator
    acc = Accelerator("build/zynqnet-mini/export", backend="csim")
    res = acc.classify(["shoe.png", "shirt.jpg"])      # files, arrays or uint8 frames
    res.labels, res.logits, res.names, res.topk(3)
    rep = acc.stream(frames)                           # pipelined; rep.fps, rep.latency_ms()

=========  =====================================================================
backend    what computes the logits                       clock of the figures
=========  =====================================================================
golden     numpy golden model (``integers.npz``)          host CPU wall time
csim       C simulation of the HLS engine (g++ ctypes)     host CPU wall time
rtl        the board driver + PYNQ shim + Verilator RTL    simulated time at FCLK0
           (DDR model behind the engine's AXI4 masters)    (100 MHz): accelerator
                                                           only, no host time
pynq       the board driver + ``pynq.Overlay`` on a board  board wall time, host
                                                           work included
auto       ``pynq`` on a PYNQ board with a bitstream, else ``csim`` (``golden``
           without a C++ compiler, hls4ml or ``net_params.h``)
=========  =====================================================================

All four return the same integer logits for the same frames (the tests check
it); ``rtl`` and ``pynq`` run the same driver (:mod:`zynqflow.host.driver`).
For those two, ``Results.info`` also has the host's own per-frame work
(``host_seconds_per_frame``, ``host_copy_seconds_per_frame``,
``host_dma_seconds_per_frame`` (pynq's ``transfer``/``wait``: DMA registers,
cache flush/invalidate), ``host_driver_seconds_per_frame``), measured with
``time.perf_counter`` without the time spent waiting for the hardware or in
the simulator, and ``throughput`` (:func:`zynqflow.host.driver.throughput`):
frames/s and DMA MB/s, accelerator only and including the host. Cycles per
frame (``cycles_per_frame``, ``cycles_from``) are measured where the engine
counts them (the RTL twin's ``cycles_last``, with ``dram_rd_bytes_per_frame``
and ``dram_wr_bytes_per_frame``), else modelled (the manifest's
``cycles_model``: the HLS engine has no cycle counter), and say which.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field

import numpy as np

from .errors import BackendError, ExportFilesError
from .manifest import DEFAULT_EXPORT, Export
from .preprocess import frames_for
from .stats import MEASURED, MODELLED, RunStats, cycle_figures, driver_info, percentiles, throughput  # noqa: F401

BACKENDS = ("golden", "csim", "rtl", "pynq", "rtl-fast")
CLOCKS = {
    "golden": "host CPU wall time",
    "csim": "host CPU wall time",
    "rtl": "simulated time, RTL simulation at 100 MHz: accelerator only (host time not included)",
    "rtl-fast": "simulated time, RTL at 100 MHz, accelerator only",
    "pynq": "board wall time (host work included)",
}
# what fps and latency cover, per backend (Results.timing, summary()["timing"])
TIMING = {
    "golden": "host CPU (the host computes everything)",
    "csim": "host CPU (the host computes everything)",
    "rtl": "accelerator only (simulated; host time not included, see host_seconds_per_frame)",
    "pynq": "including host (board wall time)",
}


# ---- results -----------------------------------------------------------------------
@dataclass
class Results:
    """Logits of N frames (int64, the output fixed-point format) and what follows from them."""

    backend: str
    logits: np.ndarray
    class_names: list[str]
    out_frac: int = 0
    sources: list[str] | None = None
    seconds: float | None = None            # stream: first transfer to last result
    latency_s: np.ndarray | None = None     # stream: per frame
    clock: str = ""
    info: dict = field(default_factory=dict)
    timing: str = ""                        # what fps / latency cover (TIMING)
    bytes_per_frame: int = 0                # input bytes (DMA bandwidth)

    def __len__(self) -> int:
        return len(self.logits)

    @property
    def labels(self) -> np.ndarray:
        return self.logits.argmax(axis=1) if len(self.logits) else np.zeros(0, np.int64)

    @property
    def names(self) -> list[str]:
        return [self.class_names[i] for i in self.labels]

    @property
    def scores(self) -> np.ndarray:
        """Logits as real numbers (integer / 2^frac)."""
        return self.logits.astype(np.float64) / float(1 << self.out_frac) if self.out_frac >= 0 else \
            self.logits.astype(np.float64) * float(1 << -self.out_frac)

    @property
    def probabilities(self) -> np.ndarray:
        s = self.scores
        if not len(s):
            return s
        e = np.exp(s - s.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    def topk(self, k: int = 3) -> list[list[dict]]:
        """Per frame, the k best classes: {'class', 'name', 'logit', 'score', 'p'} (ties: lower index first)."""
        k = max(1, min(int(k), len(self.class_names)))
        probs, scores = self.probabilities, self.scores
        out = []
        for i, row in enumerate(self.logits):
            order = np.lexsort((np.arange(len(row)), -row))[:k]
            out.append([dict(**{"class": int(c)}, name=self.class_names[c], logit=int(row[c]),
                             score=float(scores[i, c]), p=float(probs[i, c])) for c in order])
        return out

    @property
    def fps(self) -> float | None:
        if self.seconds is None:
            return None
        return len(self.logits) / self.seconds if self.seconds > 0 else float("inf")

    def latency_ms(self) -> dict[str, float]:
        return percentiles(self.latency_s if self.latency_s is not None else [])

    def throughput(self) -> dict:
        """Frames/s and DMA bandwidth, accelerator only and including the host
        (:func:`zynqflow.host.driver.throughput`); for golden/csim the host does it all."""
        if "throughput" in self.info:
            return dict(self.info["throughput"])
        n = len(self.logits)
        t = throughput(n, self.seconds or 0.0, 0.0, self.bytes_per_frame, self.logits.shape[1] * 4 if n else 0,
                       float("nan"), None, simulated=False)
        t["including_host_from"] = self.clock
        t["accelerator_only_from"] = "no accelerator: the host computes"
        return t

    def summary(self) -> dict:
        """Stable keys: backend, frames, clock, timing; with a stream: seconds, fps,
        latency_ms; rtl/pynq: host_*_seconds_per_frame, throughput, ... (the backend's info)."""
        d = dict(backend=self.backend, frames=len(self.logits), clock=self.clock, timing=self.timing)
        if self.seconds is not None:
            d.update(seconds=self.seconds, fps=self.fps, latency_ms=self.latency_ms())
        d.update(self.info)
        return d


# ---- backends ----------------------------------------------------------------------
class Backend:
    name = ""

    def __init__(self, export: Export):
        self.export = export

    @property
    def clock(self) -> str:
        return CLOCKS[self.name]

    @property
    def timing(self) -> str:
        return TIMING.get(self.name, self.clock)

    def classify(self, frames: np.ndarray) -> tuple[np.ndarray, dict]:
        raise NotImplementedError

    def stream(self, frames: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, dict]:
        """-> logits, per-frame latency (s), total seconds, info."""
        raise NotImplementedError

    def close(self) -> None:
        pass


class _CpuBackend(Backend):
    """golden and csim: a function of a batch of frames; stream = one frame at a time."""

    def _run(self, frames: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def classify(self, frames):
        return self._run(frames), {}

    def stream(self, frames):
        n = len(frames)
        logits = np.zeros((n, self.export.num_classes), np.int64)
        lat = np.zeros(n)
        t0 = time.perf_counter()
        for i in range(n):
            t = time.perf_counter()
            logits[i] = self._run(frames[i:i + 1])[0]
            lat[i] = time.perf_counter() - t
        return logits, lat, time.perf_counter() - t0, {}


class GoldenBackend(_CpuBackend):
    name = "golden"

    def __init__(self, export: Export):
        super().__init__(export)
        from zynqflow.spec.golden import golden_logits

        self.qnet = export.qnet()
        self._golden = golden_logits

    def _run(self, frames):
        return self._golden(self.qnet, frames).astype(np.int64)


def have_cxx() -> bool:
    """The C simulation can run here: its backend is installed, and there are a C++ compiler
    and the ap_types headers (hls4ml's, or $ZQ_AP_TYPES)."""
    import importlib.util
    import os
    from importlib.metadata import entry_points

    if not any(ep.name == "csim" for ep in entry_points(group="zynqflow.backends")):
        return False
    if shutil.which(os.environ.get("CXX", "g++")) is None:
        return False
    return bool(os.environ.get("ZQ_AP_TYPES")) or importlib.util.find_spec("hls4ml") is not None


def resolve_backend(name: str | None, export: Export | None = None, bit=None) -> str:
    """``auto``/None -> pynq (on a board with a bitstream), else csim (else golden)."""
    key = (name or "auto").lower()
    if key == "auto":
        from .board import on_board

        if on_board() and export is not None:
            try:
                export.find_bitstream(bit)
                return "pynq"
            except Exception:  # noqa: BLE001
                pass
        if export is None:
            return "csim" if have_cxx() else "golden"
        for cand in ("csim", "golden"):     # csim needs g++, hls4ml's ap_types and net_params.h
            if cand == "csim" and not have_cxx():
                continue
            try:
                export.require(cand)
                return cand
            except ExportFilesError:
                pass
        raise ExportFilesError(f"{export.dir}: neither net_params.h (csim) nor integers.npz (golden), and no "
                               "board with a bitstream: nothing can run this export here")
    if key not in BACKENDS:
        raise BackendError(f"unknown backend '{name}': choose one of {', '.join(BACKENDS)} (or auto)")
    return key


def _pynq_backend(export: Export, **options):
    """The ``pynq`` backend is the board driver itself, from :func:`zynqflow.host.board.open_driver`
    (the one way to get one; ``overlay=``: a loaded ``pynq.Overlay``, else the bitstream is loaded)."""
    from .board import open_driver

    return open_driver(export, **options)


BUILTIN = {"golden": GoldenBackend, "pynq": _pynq_backend}


def backend_class(name: str) -> type:
    """The class of a backend: built in (golden, pynq), or registered under the entry-point
    group ``zynqflow.backends`` by an installed extra (csim, rtl: ``zynqflow.sim.backends``)."""
    if name in BUILTIN:
        return BUILTIN[name]
    from importlib.metadata import entry_points

    eps = [ep for ep in entry_points(group="zynqflow.backends") if ep.name == name]
    if not eps:
        if name in BACKENDS:
            raise BackendError(f"the {name} backend is not installed here: it comes with the simulation extra "
                               "(pip install 'zynqflow[sim]', or make setup in a checkout)")
        raise BackendError(f"unknown backend '{name}': choose one of {', '.join(BACKENDS)} (or auto)")
    try:
        return eps[0].load()
    except ImportError as e:
        raise BackendError(f"the {name} backend cannot be loaded ({e}): install the simulation extra "
                           "(pip install 'zynqflow[sim]')") from e


def make_backend(name: str, export: Export, **opts):
    if name not in BACKENDS:
        raise BackendError(f"unknown backend '{name}': choose one of {', '.join(BACKENDS)} (or auto)")
    return backend_class(name)(export, **opts)


# ---- front end ---------------------------------------------------------------------
class Accelerator:
    """Classify images or frames with one backend. ``export``: an export directory or its
    ``manifest.json``. Backend options (``bit=``, ``timeout_s=``, ``backpressure=``, ...)
    go to the backend."""

    def __init__(self, export=DEFAULT_EXPORT, backend: str = "auto", **opts):
        self.export = export if isinstance(export, Export) else Export(export)
        self.backend_name = resolve_backend(backend, self.export, opts.get("bit"))
        self.backend = make_backend(self.backend_name, self.export, **opts)

    @property
    def clock(self) -> str:
        return getattr(self.backend, "clock", None) or CLOCKS[self.backend_name]

    @property
    def timing(self) -> str:
        return getattr(self.backend, "timing", None) or TIMING.get(self.backend_name, self.clock)

    def _driver_results(self, st: RunStats, stream: bool) -> dict:
        """``Results.info`` of a board-driver run (:func:`~zynqflow.host.stats.driver_info`)."""
        d = self.backend
        info = driver_info(dict(cycles_last=st.cycles_last, dram_rd_bytes=st.dram_rd_bytes,
                                dram_wr_bytes=st.dram_wr_bytes, dram_stall_cycles=st.dram_stall_cycles,
                                engine=st.engine, host=st.host, frames_done=st.frames_done,
                                recoveries=st.recoveries, mm2s_transfers=st.mm2s_transfers,
                                s2mm_transfers=st.s2mm_transfers, logits=st.logits,
                                seconds=st.seconds if stream else None),
                           d.fclk_hz, d.in_bytes, d.classes * 4, simulated=d.simulated,
                           model=self.export.cycles_model_for(st.engine))
        info["net_id"] = f"0x{d.hw_id:08x}"
        info["ddr"] = {k: f"0x{v:08x}" for k, v in d.bases.items()}
        if not stream:
            info["cycles_last_per_frame"] = st.cycles_last
        return info

    def _classify(self, frames):
        out = self.backend.classify(frames)
        if isinstance(out, RunStats):            # the board driver: the pynq backend
            return out.logits, self._driver_results(out, stream=False)
        return out

    def _stream(self, frames):
        out = self.backend.stream(frames)
        if isinstance(out, RunStats):
            return out.logits, out.latency_s, out.seconds, self._driver_results(out, stream=True)
        return out

    @property
    def class_names(self) -> list[str]:
        return self.export.class_names

    def preprocess(self, items, invert: bool = False, recipe: str | None = "auto") -> np.ndarray:
        """Files / images / arrays -> uint8 N x H x W x C by the manifest's recipe, as the CLI
        does (``recipe``: auto, or a recipe name; see :mod:`zynqflow.host.preprocess`)."""
        return frames_for(self.export, items, invert, recipe)

    @staticmethod
    def _sources(items) -> list[str] | None:
        from pathlib import Path

        if isinstance(items, (str, Path)):
            return [str(items)]
        if isinstance(items, (list, tuple)) and all(isinstance(x, (str, Path)) for x in items):
            return [str(x) for x in items]
        return None

    def _results(self, logits, sources, **kw) -> Results:
        return Results(self.backend_name, np.asarray(logits, np.int64), self.class_names, self.export.out_frac,
                       sources, clock=self.clock, timing=self.timing,
                       bytes_per_frame=self.export.bytes_per_frame, **kw)

    def classify(self, items, invert: bool = False, recipe: str | None = "auto") -> Results:
        frames = self.preprocess(items, invert, recipe)
        logits, info = self._classify(frames)
        return self._results(logits, self._sources(items), info=info)

    def stream(self, items, invert: bool = False, recipe: str | None = "auto") -> Results:
        """Frames back to back (pipelined on rtl/pynq); the result has fps and latency percentiles."""
        frames = self.preprocess(items, invert, recipe)
        logits, lat, seconds, info = self._stream(frames)
        if len(logits) != len(frames):
            raise BackendError(f"{self.backend_name}: {len(logits)} results for {len(frames)} frames")
        return self._results(logits, self._sources(items), seconds=seconds, latency_s=np.asarray(lat), info=info)

    def benchmark(self, frames) -> dict:
        """Throughput test (FINN's ``throughput_test``): stream ``frames`` (uint8 N x H x W x C)
        and return frames/s and DMA MB/s accelerator only and including the host, the host's
        per-frame work, latency percentiles and what each figure measures."""
        res = self.stream(np.asarray(frames))
        t = res.throughput()
        t.update(backend=self.backend_name, clock=res.clock, timing=res.timing, latency_ms=res.latency_ms(),
                 **{k: v for k, v in res.info.items() if k.startswith("host_")})
        return t

    def close(self) -> None:
        self.backend.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
