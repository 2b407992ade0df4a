"""The real board: ``pynq.Overlay`` + ``pynq.allocate`` behind :class:`~zynqflow.host.driver.ZqDriver`.

On a PYNQ-Z2 (PYNQ image 3.x with pynq 3/4) after ``board/deploy.sh``::

    from zynqflow.host import Accelerator
    acc = Accelerator("/home/xilinx/zynqflow/zynqnet-mini", backend="pynq")

loads ``<net>_pynq-z2.bit`` (and its ``.hwh``) found beside the manifest or in
``bitstreams/``, checks the network ID and runs frames through the AXI DMA.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from .errors import BackendError
from .manifest import Export, find_regmap


def on_board() -> bool:
    """True on a Zynq running a PYNQ image (an FPGA manager and pynq importable)."""
    if os.environ.get("ZQ_NO_BOARD"):
        return False
    if not (Path("/sys/class/fpga_manager/fpga0").exists() or Path("/dev/xdevcfg").exists()):
        return False
    try:
        import pynq  # noqa: F401
    except Exception:  # noqa: BLE001
        return False
    return True


def open_board(export: Export, bit=None, regmap=None, timeout_s: float | None = None, download: bool = True,
               **driver_kw):
    """Program the bitstream and return a :class:`ZqDriver` on it."""
    from .driver import ZqDriver

    bit_path, hwh = export.find_bitstream(bit)
    rm = find_regmap(export, regmap)
    try:
        import pynq
    except Exception as e:  # noqa: BLE001
        raise BackendError(f"the pynq backend needs the pynq package on a PYNQ board ({e})") from e
    if not on_board():
        raise BackendError("the pynq backend runs on a PYNQ board (no FPGA manager here); use --backend csim, "
                           "golden or rtl on this machine")
    try:
        ol = pynq.Overlay(str(bit_path), download=download)
    except Exception as e:  # noqa: BLE001
        raise BackendError(f"pynq.Overlay({bit_path}) failed: {type(e).__name__}: {e}") from e
    return ZqDriver(ol, pynq.allocate, export, rm, clock=time.monotonic, timeout_s=timeout_s,
                    source=f"bitstream {bit_path}", **driver_kw)
