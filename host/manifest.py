"""What the host reads from an export directory and from ``rtl/regmap.json``.

An export directory (``make export`` -> ``build/<net>/export/``) holds
``manifest.json`` (network name and ID, input shape and colour, classes and
their names, the engine's layer table) and the files the backends need:

=========  ===========================================================
backend    files besides manifest.json
=========  ===========================================================
golden     ``integers.npz`` (numpy golden model)
csim       ``net_params.h`` (compiled into the C simulation)
rtl        ``net_params.h``, ``weights.mem``, ``biases.mem``, ``layers.mem``,
           ``integers.npz``, and ``rtl/regmap.json`` from the repository
pynq       the ``.bit`` and ``.hwh`` built from this export, and ``regmap.json``
=========  ===========================================================

The register map is looked up in this order: an explicit path, ``$ZQ_REGMAP``,
``regmap.json`` beside the manifest (``board/deploy.sh`` copies it there), then
``rtl/regmap.json`` of the repository this package lives in.

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

from .errors import ExportFilesError

from zynqflow.spec.paths import REPO  # noqa: E402
DEFAULT_EXPORT = REPO / "build" / "zynqnet-mini" / "export"     # in a checkout; see default_export()
DEPLOY_CONFIG = "zynqflow.json"                                 # written by board/deploy.sh beside lib/
BOARD_NAME = "pynq-z2"
FORMAT_VERSION = 1

# files each backend needs (manifest "files" keys), and how to make them
BACKEND_FILES = {
    "golden": ("integers",),
    "csim": ("hls_header",),
    "rtl": ("hls_header", "weights_mem", "biases_mem", "layers_mem", "integers"),
    "rtl-fast": ("hls_header", "weights_mem", "biases_mem", "layers_mem"),
    "pynq": (),
}
_REQUIRED_KEYS = ("network", "network_id", "network_id_int", "input", "output", "class_names")
# the registers the driver uses; their offsets come from the JSON file only
REQUIRED_REGS = ("AP_CTRL", "GIE", "IER", "ISR", "status", "cycles_last", "frames_done", "net_id",
                 "build_params")


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
        fv = self.manifest.get("format_version", FORMAT_VERSION)
        if fv != FORMAT_VERSION:
            raise ExportFilesError(f"{self.manifest_path}: format_version {fv}, this host reads {FORMAT_VERSION}")
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
        """Estimated clock cycles of one frame (input beats + im2col + layers + GAP read-out),
        used for default timeouts; the engine's cycles_last register has the real figure."""
        m = self.manifest
        layers = sum(int(l.get("hw_cycles", 0)) + 16 for l in m.get("layers", []))
        buf0 = int((m.get("buffers_words") or [0])[0])
        return self.bytes_per_frame // 4 + buf0 + max(layers, int(m.get("cycles_mac_array", 0))) + self.num_classes

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


# ---- register map ---------------------------------------------------------------
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
                "PYNQ image set it (/etc/profile.d) but ssh commands, cron and systemd do not. Run the wrapper "
                "~/zynqflow/zynqflow (it sets XILINX_XRT=/usr and passes it through sudo), or "
                "export XILINX_XRT=/usr and run with sudo -E")
    return f"{message} ({hint})" if message else hint


class RegMap:
    """``rtl/regmap.json``: register offsets by name and the AP_CTRL bits."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            raw = json.loads(self.path.read_text())
            regs = raw["registers"]
            self.offsets = {r["name"]: int(r["offset"]) for r in regs}
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise ExportFilesError(f"{self.path}: not a register map ({e})") from e
        missing = [r for r in REQUIRED_REGS if r not in self.offsets]
        if missing:
            raise ExportFilesError(f"{self.path}: registers {', '.join(missing)} missing")
        ctrl = next(r for r in regs if r["name"] == "AP_CTRL")
        self.ctrl_bits = {b["name"]: int(b["bit"]) for b in ctrl.get("bits", [])}
        for b in ("ap_start", "ap_done", "ap_idle", "ap_ready", "auto_restart"):
            if b not in self.ctrl_bits:
                raise ExportFilesError(f"{self.path}: AP_CTRL bit '{b}' missing")
        self.block = raw.get("block", "zq_top")

    def __getitem__(self, name: str) -> int:
        return self.offsets[name]

    def mask(self, *bits: str) -> int:
        v = 0
        for b in bits:
            v |= 1 << self.ctrl_bits[b]
        return v

    def decode_ctrl(self, value: int) -> str:
        on = [n for n, b in sorted(self.ctrl_bits.items(), key=lambda kv: kv[1]) if value >> b & 1]
        return f"0x{value:08x} ({' '.join(on) if on else 'no bits set'})"


def find_regmap(export: Export | None = None, explicit=None) -> RegMap:
    cands = []
    if explicit:
        cands.append(Path(explicit))
    elif os.environ.get("ZQ_REGMAP"):
        cands.append(Path(os.environ["ZQ_REGMAP"]))
    else:
        if export is not None:
            cands.append(export.dir / "regmap.json")
        cands.append(REPO / "rtl" / "regmap.json")
    for c in cands:
        if c.is_file():
            return RegMap(c)
    raise ExportFilesError(f"no register map: looked for {', '.join(map(str, cands))} (copy rtl/regmap.json "
                           "beside the manifest; board/deploy.sh does)")
