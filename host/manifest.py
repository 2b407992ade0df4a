"""What the host reads from an export directory.

An export directory (``make export`` -> ``build/<net>/export/``) holds
``manifest.json`` (format 2: network name and ID, input shape and colour,
classes and their names, the engine it was planned for, its memory and its
cycle model) and the files the backends need:

=========  ===========================================================
backend    files besides manifest.json
=========  ===========================================================
golden     ``integers.npz`` (numpy golden model)
csim       ``net_params.h`` (compiled into the C simulation)
rtl        ``rtl_params.svh`` (built into the RTL twin), ``weights.bin``
           (the weight image the driver loads into DDR), ``integers.npz``
rtl-fast   ``rtl_params.svh``, ``weights.bin``
pynq       ``weights.bin``, and the ``.bit`` and ``.hwh`` built from this export
=========  ===========================================================

The register map is not a file: the driver takes offsets and bits from the
engine specification, :mod:`zynqflow.spec.engine` (deployed with the host
package). ``weights.bin`` is checked against the manifest before anything
touches a board (:meth:`Export.weight_image`).

The export used when none is given (:func:`default_export`; the CLI's
``--export``) does not depend on the current directory: ``$ZYNQFLOW_EXPORT``;
else the ``"export"`` of the user config file ``$ZYNQFLOW_CONFIG`` or
``${XDG_CONFIG_HOME:-~/.config}/zynqflow/config.json``; else the one installed
by ``board/deploy.sh`` (``zynqflow.json`` in the deploy directory, beside
``lib/zynqflow/``); else ``build/zynqnet-mini/export`` of the checkout this
package lives in. A relative ``"export"`` is relative to its config file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from zynqflow.spec import engine as E
from zynqflow.spec.paths import REPO

from .errors import ExportFilesError, WeightImageError
DEFAULT_EXPORT = REPO / "build" / "zynqnet-mini" / "export"     # in a checkout; see default_export()
DEPLOY_CONFIG = "zynqflow.json"                                 # written by board/deploy.sh beside lib/
BOARD_NAME = "pynq-z2"
FORMAT_VERSION = 2          # the manifest format this host reads (export/exporter.py writes it)

# files each backend needs (manifest "files" keys), and how to make them
BACKEND_FILES = {
    "golden": ("integers",),
    "csim": ("hls_header", "weights"),
    "rtl": ("rtl_params", "weights", "integers"),
    "rtl-fast": ("rtl_params", "weights"),
    "pynq": ("weights",),
}
_REQUIRED_KEYS = ("network", "network_id", "network_id_int", "input", "output", "class_names", "engine",
                  "memory")


class Export:
    """An export directory (or its ``manifest.json``), checked on load."""

    def __init__(self, path):
        p = Path(path)
        if p.is_dir():
            self.dir, self.manifest_path = p, p / "manifest.json"
        elif p.suffix == ".json":
            self.dir, self.manifest_path = p.parent, p
        else:
            self.dir, self.manifest_path = p, p / "manifest.json"
        if not self.manifest_path.is_file():
            where = "exists but has no manifest" if self.dir.is_dir() else "does not exist"
            raise ExportFilesError(f"{self.manifest_path}: no such manifest (export directory {self.dir} {where}); "
                                   "export the network first: make export (python -m zynqflow.export.exporter "
                                   "--ckpt CHECKPOINT --out DIR), or pass --export DIR")
        try:
            self.manifest = json.loads(self.manifest_path.read_text())
        except (OSError, ValueError) as e:
            raise ExportFilesError(f"{self.manifest_path}: cannot read the manifest ({e})") from e
        missing = [k for k in _REQUIRED_KEYS if k not in self.manifest]
        if missing:
            raise ExportFilesError(f"{self.manifest_path}: not a zynqflow manifest (missing {', '.join(missing)})")
        fv = self.manifest.get("format_version", 1)
        if fv != FORMAT_VERSION:
            raise ExportFilesError(f"{self.manifest_path}: format_version {fv}, this host reads {FORMAT_VERSION} "
                                   "(the DDR-streaming engine: weights.bin, memory, cycles_model); re-export the "
                                   "network with this checkout (make export)")
        sv = self.manifest.get("spec_version")
        if sv != E.SPEC_VERSION:
            raise ExportFilesError(f"{self.manifest_path}: exported for engine specification version {sv}, this "
                                   f"host implements version {E.SPEC_VERSION} (zynqflow.spec.engine); re-export the "
                                   "network with this checkout (make export)")
        self.dir = self.dir.resolve()
        self.manifest_path = self.manifest_path.resolve()
        m = self.manifest
        self.network: str = m["network"]
        self.network_id: int = int(m["network_id_int"]) & 0xFFFFFFFF
        self.input_shape: tuple[int, int, int] = tuple(int(v) for v in m["input"]["shape"])
        self.color: str = m["input"].get("color", "gray" if self.input_shape[2] == 1 else "rgb")
        self.bytes_per_frame: int = int(m["input"].get("bytes_per_frame", int(np.prod(self.input_shape))))
        self.num_classes: int = int(m["output"]["classes"])
        self.class_names: list[str] = list(m["class_names"]) or [f"class{i}" for i in range(self.num_classes)]
        self.out_frac: int = int(m["output"].get("format", {}).get("frac", 0))
        self.dataset: str = m.get("dataset", "")
        if self.bytes_per_frame % 4:
            raise ExportFilesError(f"{self.manifest_path}: {self.bytes_per_frame} bytes per frame is not a whole "
                                   "number of 32-bit stream beats")
        if len(self.class_names) != self.num_classes:
            raise ExportFilesError(f"{self.manifest_path}: {len(self.class_names)} class names for "
                                   f"{self.num_classes} classes")
        try:
            mem, eng = m["memory"], m["engine"]
            self.weight_image_bytes: int = int(mem["weight_image_bytes"])
            self.scratch_bytes: int = int(mem["scratch_bytes"])
            self.header_bytes: int = int(mem["header_bytes"])
            self.weight_words: int = int(mem["weight_words"])
            self.word_bytes: int = int(eng["word_bytes"])
            self.build_params: int = int(eng["build_params"])
            self.engine_info: dict[str, int] = dict(hls=int(eng["engine_info_hls"]), rtl=int(eng["engine_info_rtl"]))
        except (KeyError, TypeError, ValueError) as e:
            raise ExportFilesError(f"{self.manifest_path}: engine/memory section incomplete ({type(e).__name__}: "
                                   f"{e}); re-export the network (make export)") from e
        self._weights: bytes | None = None

    def __repr__(self) -> str:
        return f"Export({str(self.dir)!r}, {self.network}, 0x{self.network_id:08x})"

    # ---- files ------------------------------------------------------------
    def file(self, key: str) -> Path:
        name = self.manifest.get("files", {}).get(key)
        if not name:
            raise ExportFilesError(f"{self.manifest_path}: the manifest names no '{key}' file")
        return self.dir / name

    def require(self, backend: str) -> None:
        """Raise :class:`ExportFilesError` naming every file ``backend`` needs that is missing."""
        missing = []
        for key in BACKEND_FILES.get(backend, ()):
            try:
                f = self.file(key)
            except ExportFilesError:
                missing.append(f"'{key}' (not in the manifest)")
                continue
            if not f.is_file():
                missing.append(str(f))
        if missing:
            raise ExportFilesError(f"the {backend} backend needs {', '.join(missing)}: missing from the export "
                                   f"{self.dir} (re-run the exporter: make export)")

    def qnet(self):
        """The integers for the golden model (``integers.npz``)."""
        self.require("golden")
        from zynqflow.spec.qnet import QNet

        q = QNet.load_npz(self.file("integers"))
        if q.network_id() != self.network_id:
            raise ExportFilesError(f"{self.file('integers')} has network ID 0x{q.network_id():08x}, "
                                   f"{self.manifest_path} says 0x{self.network_id:08x}: the export is inconsistent")
        return q

    def vectors(self) -> tuple[np.ndarray, np.ndarray]:
        """The export's test vectors: uint8 frames N x H x W x C and int64 logits N x classes."""
        fi, fo = self.dir / "vectors_in.bin", self.dir / "vectors_out.bin"
        if not fi.is_file() or not fo.is_file():
            raise ExportFilesError(f"{self.dir}: no vectors_in.bin / vectors_out.bin")
        frames = np.fromfile(fi, np.uint8)
        logits = np.fromfile(fo, "<i4").astype(np.int64)
        n = frames.size // self.bytes_per_frame
        if frames.size != n * self.bytes_per_frame or logits.size != n * self.num_classes:
            raise ExportFilesError(f"{fi}, {fo}: sizes do not match {self.bytes_per_frame}-byte frames and "
                                   f"{self.num_classes} logits")
        return frames.reshape((n,) + self.input_shape), logits.reshape(n, self.num_classes)

    # ---- hardware ---------------------------------------------------------
    def frame_cycles(self) -> int:
        """Clock cycles of one frame by the manifest's cycle model (``cycles_model``, the event
        model of the RTL twin, spec.cycles: first input beat to last output beat), used for
        default timeouts and, on the HLS engine, which cannot count cycles, for the figures
        (labelled modelled). The RTL twin's ``cycles_last`` register has the measured figure."""
        cm = self.manifest.get("cycles_model") or {}
        if cm.get("cycles"):
            return int(cm["cycles"])
        layers = sum(int(l.get("cycles_model", 0)) for l in self.manifest.get("layers", []))
        return self.bytes_per_frame // 4 + max(layers, int(self.manifest.get("cycles_mac_array", 0))) + \
            self.num_classes

    @property
    def cycles_model(self) -> dict:
        """The manifest's cycle model of one frame (``cycles``, ``period_cycles``, ``fps_at_100mhz``,
        ``dram_rd_bytes``, ``dram_wr_bytes``, ...): a model, not a measurement."""
        return dict(self.manifest.get("cycles_model") or {})

    def cycles_model_for(self, engine: str) -> dict:
        """The cycle model of the engine the bitstream holds: ``cycles_model_hls`` (the HLS
        engine's overlapped schedule, spec.cycles_hls) for ``"hls"`` when the manifest has it,
        else ``cycles_model`` (the RTL twin's). Models, not measurements."""
        if engine == "hls" and self.manifest.get("cycles_model_hls"):
            return dict(self.manifest["cycles_model_hls"])
        return self.cycles_model

    def weight_image(self) -> bytes:
        """``weights.bin``, checked against the manifest and this host's engine specification
        (header magic, spec version, network ID, word size, word count, header size, file size):
        :class:`WeightImageError` names the file and the field. Read once."""
        if self._weights is None:
            self._weights = check_weight_image(self.file("weights"), self)
        return self._weights

    def bitstream_candidates(self, board: str = BOARD_NAME) -> list[Path]:
        name = f"{self.network}_{board}.bit"
        return [self.dir / name, REPO / "bitstreams" / name]

    def find_bitstream(self, bit=None, board: str = BOARD_NAME) -> tuple[Path, Path]:
        """The ``.bit`` (explicit, beside the manifest, or in ``bitstreams/``) and its ``.hwh``."""
        cands = [Path(bit)] if bit else self.bitstream_candidates(board)
        for b in cands:
            if b.is_file():
                hwh = b.with_suffix(".hwh")
                if not hwh.is_file():
                    raise ExportFilesError(f"{b}: found, but not its hardware handoff {hwh} (pynq.Overlay "
                                           "needs both; copy the .hwh written by board/bitstream.sh)")
                return b.resolve(), hwh.resolve()
        raise ExportFilesError(f"no bitstream for {self.network}: looked for {', '.join(map(str, cands))} "
                               "(build one with board/bitstream.sh, copy it with board/deploy.sh)")


# ---- the weight image --------------------------------------------------------------
HEADER_FIELD_BYTES = 4           # every field of spec.engine.HEADER is a little-endian 32-bit word


def read_weight_header(data: bytes) -> dict[str, int]:
    """The fields of a weight image header (:data:`zynqflow.spec.engine.HEADER`)."""
    out = {}
    for i, f in enumerate(E.HEADER):
        out[f.name] = int.from_bytes(data[i * HEADER_FIELD_BYTES:(i + 1) * HEADER_FIELD_BYTES], "little")
    return out


def check_weight_image(path: Path, export: "Export") -> bytes:
    """Read ``path`` and check its header against ``export``'s manifest; returns the image."""
    path = Path(path)
    man = export.manifest_path
    if not path.is_file():
        raise WeightImageError(f"{path}: no weight image (the engine reads its weights from DDR; re-run the "
                               "exporter: make export)")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise WeightImageError(f"{path}: cannot read the weight image ({e})") from e
    need = len(E.HEADER) * HEADER_FIELD_BYTES
    if len(data) < need:
        raise WeightImageError(f"{path}: {len(data)} bytes, shorter than the {need}-byte weight image header: "
                               "not a zynqflow weight image (re-run the exporter: make export)")
    h = read_weight_header(data)
    if h["magic"] != E.HEADER_MAGIC:
        raise WeightImageError(f"{path}: header field magic is 0x{h['magic']:08x}, a zynqflow weight image has "
                               f"0x{E.HEADER_MAGIC:08x} ('ZQW1'): not a weight image, or a corrupt one (re-run the "
                               "exporter: make export)")
    want = dict(spec_version=(E.SPEC_VERSION, "this host's engine specification (zynqflow.spec.engine)"),
                net_id=(export.network_id, f"{man} (network_id_int)"),
                word_bytes=(export.word_bytes, f"{man} (engine.word_bytes = N_PE x N_CI)"),
                n_words=(export.weight_words, f"{man} (memory.weight_words)"),
                header_bytes=(export.header_bytes, f"{man} (memory.header_bytes)"))
    for name, (v, where) in want.items():
        if h[name] != v:
            fmt = (lambda x: f"0x{x:08x}") if name == "net_id" else str
            raise WeightImageError(f"{path}: header field {name} is {fmt(h[name])}, {where} says {fmt(v)}: the "
                                   "weight image and the manifest come from different exports (copy both from "
                                   "one export directory, or re-run the exporter)")
    size = h["header_bytes"] + h["n_words"] * h["word_bytes"]
    if len(data) != size or size != export.weight_image_bytes:
        raise WeightImageError(f"{path}: {len(data)} bytes, its header says {size} ({h['header_bytes']} + "
                               f"{h['n_words']} words x {h['word_bytes']} bytes) and {man} "
                               f"{export.weight_image_bytes} (memory.weight_image_bytes): truncated or corrupt "
                               "(re-run the exporter: make export)")
    return data


# ---- the default export ----------------------------------------------------------------
def user_config_path() -> Path:
    """``$ZYNQFLOW_CONFIG``, else ``${XDG_CONFIG_HOME:-~/.config}/zynqflow/config.json``."""
    if os.environ.get("ZYNQFLOW_CONFIG"):
        return Path(os.environ["ZYNQFLOW_CONFIG"]).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path("~/.config").expanduser())
    return Path(base) / "zynqflow" / "config.json"


def deploy_config_path() -> Path | None:
    """``<DEST>/zynqflow.json`` when this package is the copy that ``board/deploy.sh``
    installed (``<DEST>/lib/zynqflow/host``), else None."""
    return REPO.parent.parent / DEPLOY_CONFIG if REPO.parent.name == "lib" else None


def _export_from_config(path: Path) -> Path | None:
    if not path.is_file():
        return None
    try:
        cfg = json.loads(path.read_text())
        export = cfg["export"]
        if not isinstance(export, str) or not export:
            raise TypeError(f"'export' is {export!r}, not a path")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ExportFilesError(f"{path}: not a zynqflow config ({type(e).__name__}: {e}); it holds "
                               '{"export": "<export directory or manifest.json>"}') from e
    p = Path(export).expanduser()
    return p if p.is_absolute() else path.parent / p


def default_export() -> tuple[Path, str]:
    """The export to use when none is given, and where that choice came from (see the
    module docstring). Raises :class:`ExportFilesError` listing the places looked at."""
    if os.environ.get("ZYNQFLOW_EXPORT"):
        return Path(os.environ["ZYNQFLOW_EXPORT"]).expanduser(), "$ZYNQFLOW_EXPORT"
    looked = ["$ZYNQFLOW_EXPORT (not set)"]
    for cfg in (user_config_path(), deploy_config_path()):
        if cfg is None:
            continue
        p = _export_from_config(cfg)
        if p is not None:
            return p, str(cfg)
        looked.append(f"{cfg} (no such file)")
    if (DEFAULT_EXPORT / "manifest.json").is_file():
        return DEFAULT_EXPORT, "the checkout"
    looked.append(f"{DEFAULT_EXPORT} (no manifest.json)")
    raise ExportFilesError("no export given and none found: looked at " + ", ".join(looked) + ". Export the "
                           "network (make export), deploy it (board/deploy.sh), or pass --export DIR")


def xrt_hint(message: str = "") -> str:
    """What to tell a user whose ``pynq`` found no device (pynq's ``RuntimeError('No Devices
    Found')``): pynq registers the Zynq only when ``XILINX_XRT`` is set. ``message``: the
    error text, returned with the hint appended (or the hint alone)."""
    xrt = os.environ.get("XILINX_XRT")
    if xrt:
        hint = (f"XILINX_XRT={xrt} is set; check that this is a PYNQ image (/sys/class/fpga_manager/fpga0) and "
                "that the command runs as root (sudo -E)")
    else:
        hint = ("XILINX_XRT is not set: pynq registers the Zynq device only when it is, and login shells of the "
                "PYNQ image set it (/etc/profile.d) but ssh commands, cron and systemd do not. Run the command "
                "board/deploy.sh installs (/usr/local/bin/zynqflow, also ~/zynqflow/zynqflow: it sets "
                "XILINX_XRT=/usr as root), or in your own Python: export XILINX_XRT=/usr and run it as root")
    return f"{message} ({hint})" if message else hint
