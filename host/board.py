"""The real board: ``pynq.Overlay`` + ``pynq.allocate`` behind :class:`~zynqflow.host.driver.ZqDriver`,
and :func:`open_driver`, the one way to get a driver (on the board and in the simulations).

On a PYNQ-Z2 (PYNQ image 3.x with pynq 3/4) after ``board/deploy.sh``::

    from zynqflow.host import Accelerator
    acc = Accelerator("/home/xilinx/zynqflow/zynqnet-mini", backend="pynq")
    # or the driver itself:
    from zynqflow.host.board import open_driver
    drv = open_driver(Export("/home/xilinx/zynqflow/zynqnet-mini"))

checks ``weights.bin`` against the manifest (before the board is touched),
loads ``<net>_pynq-z2.bit`` (and its ``.hwh``) found beside the manifest or in
``bitstreams/``, reads (or sets, ``fclk_mhz=``) the PL clock FCLK0, compares
the register offsets of the engine specification with the ``.hwh``, loads
the weight image into a DDR buffer (``pynq.allocate``) and points the engine
at it, checks the network ID and the engine build, and runs frames through
the AXI DMA (:class:`~zynqflow.host.driver.ZqDriver` has the whole sequence).

The clock: ``pynq.ps.Clocks.fclk0_mhz`` is read after the bitstream is loaded
(``pynq.Overlay`` sets it from the ``.hwh``; ``Clocks.get_pl_clk()`` returns
None in pynq 3.0.1/3.1.2, the property works). A clock the user asks for is
refused when it is above what the implemented design met: ``fclk0_mhz`` and
``wns_ns`` of the bitstream's ``.json`` (``board/bitstream.sh`` writes it),
at most ``1000 / (1000 / fclk0_mhz - wns_ns)`` MHz; without that record, at
most the design's own clock: the ``.hwh``'s ``PCW_FPGA0_PERIPHERAL_FREQMHZ``
of the Zynq PS (pynq 3.x's ``clock_dict`` has only ``enable``, ``divisor0``
and ``divisor1``: no frequency), else the clock read when the bitstream was
loaded. A clock is never accepted unchecked.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .config import DriverConfig
from .driver import ZqDriver
from .errors import BackendError, ClockError
from .manifest import Export


FPGA_MANAGERS = ("/sys/class/fpga_manager/fpga0", "/dev/xdevcfg")


def on_board() -> bool:
    """True on a Zynq running a PYNQ image (an FPGA manager, and pynq installed). pynq is found,
    not imported: importing it takes seconds on the A9, and that happens later, under a progress
    line (:func:`load_overlay`)."""
    if os.environ.get("ZQ_NO_BOARD"):
        return False
    if not any(Path(p).exists() for p in FPGA_MANAGERS):
        return False
    import importlib.util

    try:
        return importlib.util.find_spec("pynq") is not None
    except (ImportError, ValueError):
        return False


# ---- the PL clock -----------------------------------------------------------------
def timing_record(timing) -> tuple[dict | None, str]:
    """The timing a bitstream was implemented with: a dict, or the path of the ``.json``
    ``board/bitstream.sh`` writes beside it (``fclk0_mhz``, ``wns_ns``). (record, where from);
    (None, where looked) when there is none or it has no usable numbers."""
    if timing is None:
        return None, "no timing record given"
    if isinstance(timing, dict):
        rec, where = timing, "the timing record"
    else:
        p = Path(timing)
        if not p.is_file():
            return None, f"{p} (missing)"
        try:
            rec, where = json.loads(p.read_text()), str(p)
        except (OSError, ValueError) as e:
            raise ClockError(f"{p}: cannot read the bitstream's timing record ({e})") from e
    try:
        fclk, wns = float(rec["fclk0_mhz"]), float(rec["wns_ns"])
    except (KeyError, TypeError, ValueError):
        return None, f"{where} (no numeric fclk0_mhz and wns_ns)"
    return dict(fclk0_mhz=fclk, wns_ns=wns), where


def max_fclk_mhz(fclk0_mhz: float, wns_ns: float) -> float:
    """The fastest clock the implemented design meets: its clock period less the worst slack."""
    period = 1e3 / fclk0_mhz - wns_ns
    return float("inf") if period <= 0 else 1e3 / period


def _read_fclk(clocks) -> float | None:
    try:
        v = clocks.fclk0_mhz
    except Exception:  # noqa: BLE001
        return None
    return float(v) if v else None


def fclk_limit(timing=None, design_mhz: float | None = None) -> tuple[float | None, str]:
    """The fastest FCLK0 the design may run at, and why: from the timing record (see
    :func:`timing_record`), else the design's own clock (``design_mhz``, from the ``.hwh``);
    (None, what was missing) when neither is known."""
    rec, where = timing_record(timing)
    if rec is not None:
        limit = max_fclk_mhz(rec["fclk0_mhz"], rec["wns_ns"])
        return limit, (f"{where}: implemented at {rec['fclk0_mhz']:g} MHz with a worst setup slack of "
                       f"{rec['wns_ns']:g} ns, it meets at most {limit:.2f} MHz")
    if design_mhz:
        return float(design_mhz), f"no timing record ({where}): at most the design's own {float(design_mhz):g} MHz"
    return None, f"no timing record ({where})"


def hwh_design_mhz(hwh) -> float | None:
    """FCLK0 as the ``.hwh`` file states it (the Zynq PS's ``PCW_ACT_FPGA0_PERIPHERAL_FREQMHZ``,
    else ``PCW_FPGA0_PERIPHERAL_FREQMHZ``), read before pynq parses it; None if it has neither."""
    try:
        text = Path(hwh).read_text(errors="replace")
    except OSError:
        return None
    for key in ("PCW_ACT_FPGA0_PERIPHERAL_FREQMHZ", "PCW_FPGA0_PERIPHERAL_FREQMHZ"):
        m = re.search(rf'NAME="{key}"\s+VALUE="([0-9.]+)"', text)
        if m:
            return float(m.group(1))
    return None


def check_fclk_before_download(requested_mhz: float, bit) -> None:
    """``--fclk-mhz`` against the bitstream's timing record (or its ``.hwh``'s clock) before the PL
    is programmed: a clock that would be refused afterwards, or that nothing can check, is refused
    now (:class:`ClockError`)."""
    bit = Path(bit)
    limit, why = fclk_limit(bit.with_suffix(".json"), hwh_design_mhz(bit.with_suffix(".hwh")))
    if limit is None:
        raise ClockError(f"fclk0 {requested_mhz:g} MHz refused before loading {bit.name}: {why} and no design "
                         "clock in its .hwh, so no clock can be checked; copy the timing record board/bitstream.sh "
                         "wrote beside the bitstream")
    if requested_mhz > limit * (1 + 1e-9):
        raise ClockError(f"fclk0 {requested_mhz:g} MHz refused before loading {bit.name}: {why}")


def configure_fclk(clocks, requested_mhz: float | None = None, *, timing=None, design_mhz: float | None = None) -> dict:
    """Read FCLK0 through ``clocks`` (``pynq.ps.Clocks``, or the simulation's) and, with
    ``requested_mhz``, set it first. Refuses (:class:`ClockError`, naming both numbers) a
    clock above what the design met (``timing``: see :func:`timing_record`) or, without a
    timing record, above ``design_mhz`` (the clock in the ``.hwh``). The Zynq's divisors may
    give a clock other than the one asked for: the clock read back is checked too (and the
    previous one restored if it is above the limit).
    Returns {"fclk_mhz": the clock now, "requested_mhz", "limit_mhz", "limit_from"}."""
    limit, why = fclk_limit(timing, design_mhz)
    before = _read_fclk(clocks)
    if limit is None:
        if before is None:
            raise ClockError(f"{why}, no design clock and fclk0 unreadable: a clock cannot be checked; pass the "
                             "bitstream's timing record")
        limit = before
        why = f"{why} and no design clock in the .hwh: at most the clock loaded now ({before:g} MHz)"
    if requested_mhz is not None:
        req = float(requested_mhz)
        if not req > 0:
            raise ClockError(f"fclk0 {requested_mhz} MHz: the clock must be positive")
        if limit is not None and req > limit * (1 + 1e-9):
            raise ClockError(f"fclk0 {req:g} MHz refused: {why}")
        try:
            clocks.fclk0_mhz = req
        except Exception as e:  # noqa: BLE001
            raise ClockError(f"setting fclk0 to {req:g} MHz failed: {type(e).__name__}: {e}") from e
    actual = _read_fclk(clocks)
    if actual is None:
        raise ClockError("cannot read fclk0 (pynq.ps.Clocks.fclk0_mhz); pass the clock explicitly")
    if limit is not None and actual > limit * (1 + 1e-9):
        if requested_mhz is not None and before:
            try:
                clocks.fclk0_mhz = before
            except Exception:  # noqa: BLE001
                pass
        asked = f" (asked for {float(requested_mhz):g} MHz)" if requested_mhz is not None else ""
        raise ClockError(f"fclk0 is {actual:g} MHz{asked}, above the limit: {why}; choose a lower clock")
    return dict(fclk_mhz=actual, requested_mhz=requested_mhz, limit_mhz=limit, limit_from=why)


# ---- opening the board --------------------------------------------------------------
def design_fclk_mhz(ol) -> float | None:
    """FCLK0 of the design as the ``.hwh`` gives it: the Zynq PS's ``PCW_FPGA0_PERIPHERAL_FREQMHZ``
    (``ip_dict``'s processing_system7 parameters; pynq 3.x's ``clock_dict`` holds only ``enable``,
    ``divisor0``, ``divisor1``); a ``frequency`` in ``clock_dict`` (older pynq) otherwise; None."""
    def attr(name):
        try:                    # pynq's Overlay.__getattr__ raises RuntimeError when another bitstream is loaded
            return getattr(ol, name, None)
        except RuntimeError:
            return None

    for d in (attr("ip_dict") or {}).values():
        if "processing_system7" in str(d.get("type", "")):
            params = d.get("parameters") or {}
            for key in ("PCW_ACT_FPGA0_PERIPHERAL_FREQMHZ", "PCW_FPGA0_PERIPHERAL_FREQMHZ"):
                try:
                    return float(params[key])
                except (KeyError, TypeError, ValueError):
                    pass
    freq = ((attr("clock_dict") or {}).get(0) or {}).get("frequency")
    return float(freq) if freq else None


def loaded_bitstream() -> str | None:
    """The bitstream pynq says the PL holds now (``pynq.PL.bitfile_name``), if it can tell."""
    try:
        from pynq import PL

        name = PL.bitfile_name
    except Exception:  # noqa: BLE001 - pynq without the attribute, or no global state yet
        return None
    return str(name) if name else None


def load_overlay(bit_path, download: bool = True, progress: bool = False):
    """``pynq.Overlay(bit)`` with the failures named. With ``download=False`` the PL must already
    hold this bitstream (after a reboot it holds the base overlay): said so, not pynq's
    ``RuntimeError("Overlay not currently loaded")`` at the first register access."""
    from .progress import step

    try:
        with step("importing pynq", progress):
            import pynq
    except Exception as e:  # noqa: BLE001
        raise BackendError(f"the pynq backend needs the pynq package on a PYNQ board ({e})") from e
    if not on_board():
        raise BackendError("the pynq backend runs on a PYNQ board (no FPGA manager here); use --backend csim, "
                           "golden or rtl on this machine")
    if not download:
        held = loaded_bitstream()
        if held is not None and Path(held).name != Path(bit_path).name:
            raise BackendError(f"--no-download: the PL holds {held}, not {bit_path}: load it (drop --no-download, "
                               "or download=True); nothing was written")
    try:
        with step(f"{'loading' if download else 'opening the loaded'} bitstream {Path(bit_path).name} and "
                  "parsing its .hwh (pynq.Overlay)", progress):
            return pynq.Overlay(str(bit_path), download=download)
    except Exception as e:  # noqa: BLE001
        raise BackendError(f"pynq.Overlay({bit_path}) failed: {type(e).__name__}: {e}") from e


@dataclass
class Platform:
    """What a driver needs beside the overlay: pynq's on the board (:func:`pynq_platform`), a
    simulation's elsewhere (``zynqflow.sim``). ``allocate``: ``pynq.allocate``; ``clocks``:
    ``pynq.ps.Clocks``; ``raw_mmio(ip)``: an MMIO over an IP without its pynq driver (a DMA or engine
    an earlier process left running is brought back before anything is allocated; None: not
    done); ``clock``: seconds (``time.monotonic``, or simulated time); ``timing``: the bitstream's
    timing record (see :func:`timing_record`); ``outside_clock``: wall time spent outside the host
    (a simulator); ``source``: what holds the engine, for messages; ``simulated``: ``clock`` is
    simulated time."""

    allocate: Callable
    clocks: Any
    raw_mmio: Callable[[str], Any] | None = None
    clock: Callable[[], float] = time.monotonic
    timing: Any = None
    outside_clock: Callable[[], float] | None = None
    source: str = ""
    simulated: bool = False


def pynq_platform(ol, bit_path) -> Platform:
    """pynq's objects for an overlay loaded from ``bit_path``: ``pynq.allocate``, ``pynq.ps.Clocks``,
    ``pynq.MMIO`` over the IPs' address ranges, ``time.monotonic``; the timing record is the
    ``.json`` beside the bitstream."""
    import pynq
    from pynq.ps import Clocks

    def raw_mmio(name):
        d = ol.ip_dict[name]
        return pynq.MMIO(d["phys_addr"], d["addr_range"])

    return Platform(allocate=pynq.allocate, clocks=Clocks, raw_mmio=raw_mmio, clock=time.monotonic,
                    timing=Path(bit_path).with_suffix(".json"), source=f"bitstream {bit_path}")


def open_driver(export: Export, overlay=None, *, platform: Platform | None = None, bit=None, download: bool = True,
                fclk_mhz: float | None = None, progress: bool = False, config: DriverConfig | None = None,
                **options) -> ZqDriver:
    """**The** way to get a :class:`~zynqflow.host.driver.ZqDriver`, on the board and in the simulations.

    Without ``overlay`` (the board): ``weights.bin`` is checked against the manifest (a wrong one fails
    before the board is touched), the bitstream (``bit``, else the one beside the manifest or in
    ``bitstreams/``) is loaded with ``pynq.Overlay`` (``download=False``: the PL must already hold
    it). With ``overlay`` (a loaded ``pynq.Overlay``, ``ZqOverlay``, or a simulation's look-alike),
    that one. ``platform``: the objects beside the overlay (default pynq's, :func:`pynq_platform`).
    Then the PL clock is read (and set, ``fclk_mhz``), checked against the bitstream's timing record
    or the design's own clock (:func:`configure_fclk`), and the driver opened (its docstring has
    the sequence). ``config``: a :class:`DriverConfig`, or its fields as ``options`` (``timeout_s``,
    ``retries``, ``recover``, ...)."""
    from .progress import step

    if overlay is None:
        bit_path, _ = export.find_bitstream(bit)
        export.weight_image()
        overlay = load_overlay(bit_path, download, progress)
    else:
        bit_path = getattr(overlay, "bitfile_name", None) or bit or "overlay"
    if platform is None:
        platform = pynq_platform(overlay, bit_path)
    clk = configure_fclk(platform.clocks, fclk_mhz, timing=platform.timing, design_mhz=design_fclk_mhz(overlay))
    cfg = (config or DriverConfig()).but(**{"source": platform.source or None, "simulated": platform.simulated or None,
                                            **options, "fclk_hz": clk["fclk_mhz"] * 1e6})
    with step("opening the accelerator: registers checked, the weight image into DDR", progress):
        drv = ZqDriver(overlay, platform.allocate, export, cfg, clock=platform.clock, raw_mmio=platform.raw_mmio,
                       outside_clock=platform.outside_clock)
    drv.clock_info = clk
    return drv
