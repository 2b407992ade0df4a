"""``ZqOverlay``: the accelerator as a PYNQ overlay class, as FINN's
``FINNExampleOverlay`` and hls4ml's ``NeuralNetworkOverlay`` offer theirs.

On a PYNQ-Z2 (after ``board/deploy.sh``)::

    from zynqflow.host.overlay import ZqOverlay
    ol = ZqOverlay("zynqnet-mini_pynq-z2.bit")        # a pynq.Overlay: loads the bitstream
    res = ol.classify(["shirt.png"]); res.topk(3)     # Results (zynqflow.host.accelerator)
    rep = ol.stream(frames); rep.fps, rep.latency_ms()
    ol.benchmark(frames)                              # frames/s and DMA MB/s (throughput test)
    ol.zq_top_0, ol.axi_dma_0, ol.ip_dict             # everything pynq.Overlay has

The manifest and the weight image (``weights.bin``) are found beside the
bitstream, as ``board/deploy.sh`` installs them (``<dest>/<net>/``); ``export=``
names another export directory. The register map is the engine specification's
(``zynqflow.spec.engine``, deployed with the host package). ``fclk_mhz=`` sets the PL clock (checked against
the bitstream's timing record), ``download=False`` keeps a loaded bitstream.

The same notebook or script runs anywhere: with ``ZYNQFLOW_BACKEND=rtl``
(or ``backend="rtl"``; also ``csim``, ``golden``), ``ZqOverlay(...)`` is a
stand-in with the same methods that runs the board driver against the RTL
simulation (no bitstream needed: the export is found beside the named
bitstream if it exists, else from ``$ZYNQFLOW_EXPORT``, else
``build/<net>/export`` in the checkout). Its figures say what they measure
(``Results.clock``, ``Results.timing``: simulated, accelerator only).

This module imports without pynq: the ``pynq.Overlay`` subclass is built the
first time a board overlay is made (:func:`board_overlay_class`).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .accelerator import Accelerator, Results
from .errors import BackendError, ExportFilesError
from .manifest import BOARD_NAME, Export

from zynqflow.spec.paths import REPO  # noqa: E402

BACKEND_ENV = "ZYNQFLOW_BACKEND"
DEFAULT_BITFILE = f"zynqnet-mini_{BOARD_NAME}.bit"
DEPLOY_DEST = Path("/home/xilinx/zynqflow")           # board/deploy.sh's default DEST


def network_of(bitfile) -> str:
    """``zynqnet-mini_pynq-z2.bit`` -> ``zynqnet-mini``."""
    name = Path(str(bitfile)).name
    suffix = f"_{BOARD_NAME}.bit"
    return name[: -len(suffix)] if name.endswith(suffix) else Path(name).stem


def find_bitfile(bitfile) -> Path | None:
    """The bitstream: as given (absolute, or relative to the current directory), else beside
    ``$ZYNQFLOW_EXPORT``, in the deploy directory (``/home/xilinx/zynqflow/<net>/``) or in
    ``bitstreams/`` of the checkout. None if it is nowhere."""
    p = Path(str(bitfile)).expanduser()
    cands = [p]
    if not p.is_absolute():
        net = network_of(p)
        if os.environ.get("ZYNQFLOW_EXPORT"):
            cands.append(Path(os.environ["ZYNQFLOW_EXPORT"]).expanduser() / p.name)
        cands += [DEPLOY_DEST / net / p.name, REPO / "bitstreams" / p.name]
    return next((c.resolve() for c in cands if c.is_file()), None)


def find_export(bitfile, export=None) -> Export:
    """The export a bitstream was built from: ``export`` if given; else the manifest beside the
    bitstream; else ``$ZYNQFLOW_EXPORT`` if it is the same network; else ``build/<net>/export``."""
    if export is not None:
        return export if isinstance(export, Export) else Export(export)
    net = network_of(bitfile)
    bit = find_bitfile(bitfile)
    looked = []
    if bit is not None:
        looked.append(bit.parent / "manifest.json")
        if looked[-1].is_file():
            return Export(bit.parent)
    env = os.environ.get("ZYNQFLOW_EXPORT")
    if env:
        ex = Export(Path(env).expanduser())
        if ex.network == net:
            return ex
        looked.append(f"$ZYNQFLOW_EXPORT={env} (network {ex.network}, not {net})")
    cand = REPO / "build" / net / "export"
    if (cand / "manifest.json").is_file():
        return Export(cand)
    looked.append(cand / "manifest.json")
    raise ExportFilesError(f"no manifest for {Path(str(bitfile)).name}: looked at {', '.join(map(str, looked))}; "
                           "pass export=<export directory> or set ZYNQFLOW_EXPORT")


class ZqOverlay:
    """``ZqOverlay(bitfile, export=None, backend=None, **options)``.

    ``backend``: ``pynq`` (default: ``$ZYNQFLOW_BACKEND`` or ``pynq``) loads the bitstream and
    is a ``pynq.Overlay``; ``rtl``, ``csim``, ``golden`` give a stand-in with the same
    methods. ``options`` go to the backend (pynq: ``download``, ``fclk_mhz``, ``timeout_s``,
    ``retries``; rtl: ``fclk_mhz``, ``backpressure``, ``timeout_s``, ...)."""

    def __new__(cls, bitfile=DEFAULT_BITFILE, *args, backend: str | None = None, **kwargs):
        if cls is ZqOverlay:
            name = (backend or os.environ.get(BACKEND_ENV) or "pynq").strip().lower()
            cls = board_overlay_class() if name == "pynq" else SimulatedZqOverlay
        return object.__new__(cls)

    accelerator: Accelerator

    # ---- what a user calls ----------------------------------------------------
    @property
    def export(self) -> Export:
        return self.accelerator.export

    @property
    def class_names(self) -> list[str]:
        return self.accelerator.class_names

    @property
    def backend(self) -> str:
        return self.accelerator.backend_name

    def preprocess(self, items, invert: bool = False, recipe: str | None = "auto") -> np.ndarray:
        """Image files / Pillow images / arrays -> uint8 N x H x W x C frames (the manifest's
        recipe unless ``recipe`` names another)."""
        return self.accelerator.preprocess(items, invert, recipe)

    def classify(self, items, invert: bool = False, recipe: str | None = "auto") -> Results:
        """Classify images or frames, one ``ap_start`` each: ``.labels``, ``.names``, ``.topk(k)``."""
        return self.accelerator.classify(items, invert, recipe)

    def stream(self, items, invert: bool = False, recipe: str | None = "auto") -> Results:
        """Frames back to back: logits in order, ``.fps``, ``.latency_ms()``, ``.throughput()``."""
        return self.accelerator.stream(items, invert, recipe)

    def benchmark(self, frames=None, n: int = 64) -> dict:
        """Throughput test: frames/s and DMA MB/s, accelerator only and including the host.
        ``frames``: uint8 frames, default the export's test vectors repeated to ``n``."""
        if frames is None:
            vec, _ = self.export.vectors()
            frames = vec[np.arange(n) % len(vec)]
        return self.accelerator.benchmark(frames)

    def close(self) -> None:
        self.accelerator.close()

    def __repr__(self) -> str:
        ex = self.export
        return (f"<{type(self).__name__} {ex.network} (0x{ex.network_id:08x}) on {self.backend}: "
                f"{self.accelerator.clock}>")


class SimulatedZqOverlay(ZqOverlay):
    """The stand-in: the same methods on the ``rtl`` (board driver + RTL simulation),
    ``csim`` or ``golden`` backend. No bitstream is loaded (none is needed)."""

    def __init__(self, bitfile=DEFAULT_BITFILE, export=None, backend: str | None = None, **options):
        name = (backend or os.environ.get(BACKEND_ENV) or "rtl").strip().lower()
        if name == "pynq":
            raise BackendError("SimulatedZqOverlay runs the rtl, csim or golden backend; ZqOverlay(...) with "
                               "backend='pynq' loads the bitstream")
        bit = find_bitfile(bitfile)
        self.bitfile_name = str(bit) if bit is not None else str(bitfile)
        self.accelerator = Accelerator(find_export(bitfile, export), name, **options)


class _BoardInit:
    """``__init__`` of the board overlay: ``pynq.Overlay.__init__``, then the driver on it."""

    def __init__(self, bitfile=DEFAULT_BITFILE, export=None, backend: str | None = None, download: bool = True,
                 fclk_mhz: float | None = None, timeout_s: float | None = None, retries: int | None = None,
                 **overlay_kw):
        bit = find_bitfile(bitfile)
        if bit is None:
            raise ExportFilesError(f"no bitstream {bitfile} (looked as given, beside $ZYNQFLOW_EXPORT, in "
                                   f"{DEPLOY_DEST}/{network_of(bitfile)}/ and {REPO / 'bitstreams'}); "
                                   "copy it with board/deploy.sh")
        ex = find_export(bit, export)
        ex.weight_image()                    # a wrong weights.bin fails before the bitstream is loaded
        try:
            super().__init__(str(bit), download=download, **overlay_kw)
        except Exception as e:  # noqa: BLE001 - pynq's errors name no file
            raise BackendError(f"pynq.Overlay({bit}) failed: {type(e).__name__}: {e}") from e
        self.accelerator = Accelerator(ex, "pynq", overlay=self, fclk_mhz=fclk_mhz, timeout_s=timeout_s,
                                       retries=retries)


_BOARD_CLASS = None


def board_overlay_class() -> type:
    """``ZqBoardOverlay(_BoardInit, ZqOverlay, pynq.Overlay)``, built on first use (imports pynq)."""
    global _BOARD_CLASS
    if _BOARD_CLASS is None:
        try:
            import pynq
        except Exception as e:  # noqa: BLE001
            raise BackendError(f"ZqOverlay on a board needs pynq ({e}); elsewhere set {BACKEND_ENV}=rtl "
                               "(or csim, golden) or pass backend='rtl'") from e
        _BOARD_CLASS = type("ZqBoardOverlay", (_BoardInit, ZqOverlay, pynq.Overlay),
                            {"__doc__": ZqOverlay.__doc__, "__module__": __name__})
    return _BOARD_CLASS
