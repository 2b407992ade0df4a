"""The real board: ``pynq.Overlay`` + ``pynq.allocate`` behind :class:`~zynqflow.host.driver.ZqDriver`.

On a PYNQ-Z2 (PYNQ image 3.x with pynq 3/4) after ``board/deploy.sh``::

    from zynqflow.host import Accelerator
    acc = Accelerator("/home/xilinx/zynqflow/zynqnet-mini", backend="pynq")

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
from pathlib import Path

from .errors import AcceleratorError, BackendError, ClockError
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


# ---- the overlay's IPs -----------------------------------------------------------------
def find_ips(overlay, accel: str | None = None, dma: str | None = None) -> tuple[str, str]:
    """Names of the engine and of the AXI DMA in ``overlay.ip_dict``."""
    ips = getattr(overlay, "ip_dict", {}) or {}

    def pick(explicit, key, what):
        if explicit:
            if explicit not in ips:
                raise AcceleratorError(f"no IP '{explicit}' in the overlay (IPs: {', '.join(sorted(ips)) or 'none'})")
            return explicit
        hits = [n for n, d in ips.items() if f":{key}:" in str(d.get("type", "")) or n.split("/")[-1].startswith(key)]
        if len(hits) != 1:
            found = "none" if not hits else ", ".join(hits)
            raise AcceleratorError(f"expected one {what} ({key}) in the overlay, found {found} "
                                   f"(IPs: {', '.join(sorted(ips)) or 'none'}); name it explicitly")
        return hits[0]

    return pick(accel, "zq_top", "accelerator"), pick(dma, "axi_dma", "AXI DMA")


def ip_driver(overlay, name: str, source: str):
    """``getattr(overlay, name)`` (``a/b`` for hierarchies): pynq builds the IP's driver. pynq's
    ``RuntimeError("Overlay not currently loaded")`` (another bitstream in the PL, e.g. after
    ``--no-download``) becomes a :class:`BackendError` that says so."""
    obj = overlay
    try:
        for part in name.split("/"):
            obj = getattr(obj, part)
    except RuntimeError as e:
        raise BackendError(f"{source}: pynq cannot reach {name} ({e}): the PL holds another bitstream (the base "
                           "overlay after a reboot?). Load this one: drop --no-download (download=True)") from e
    return obj


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


def open_driver(ol, export: Export, *, allocate, clocks, raw_mmio=None, clock=time.monotonic,
                timing=None, fclk_mhz: float | None = None, config=None, outside_clock=None, **options):
    """The open sequence, the same on the board and in the simulations: read (and set,
    ``fclk_mhz``) the PL clock, checked against ``timing`` or the design's own clock
    (:func:`configure_fclk`, :func:`design_fclk_mhz`), then a :class:`ZqDriver` on the overlay.
    ``config``: a :class:`~zynqflow.host.driver.DriverConfig` (or its fields as ``options``)."""
    from .driver import DriverConfig, ZqDriver

    clk = configure_fclk(clocks, fclk_mhz, timing=timing, design_mhz=design_fclk_mhz(ol))
    cfg = (config or DriverConfig()).but(**options, fclk_hz=clk["fclk_mhz"] * 1e6)
    drv = ZqDriver(ol, allocate, export, cfg, clock=clock, raw_mmio=raw_mmio, outside_clock=outside_clock)
    drv.clock_info = clk
    return drv


def driver_on_overlay(ol, export: Export, bit_path, timeout_s: float | None = None,
                      fclk_mhz: float | None = None, **driver_kw):
    """:func:`open_driver` on a loaded ``pynq.Overlay`` (or a subclass of it) with pynq's
    ``Clocks``, ``allocate`` and ``MMIO``; the timing record is the ``.json`` beside the bitstream."""
    import pynq
    from pynq.ps import Clocks

    def raw_mmio(name):
        d = ol.ip_dict[name]
        return pynq.MMIO(d["phys_addr"], d["addr_range"])

    return open_driver(ol, export, allocate=pynq.allocate, clocks=Clocks, raw_mmio=raw_mmio, clock=time.monotonic,
                       timing=Path(bit_path).with_suffix(".json"), fclk_mhz=fclk_mhz, source=f"bitstream {bit_path}",
                       timeout_s=timeout_s, **driver_kw)


def open_board(export: Export, bit=None, timeout_s: float | None = None, download: bool = True,
               fclk_mhz: float | None = None, progress: bool = False, **driver_kw):
    """Program the bitstream (unless ``download=False``) and return a :class:`ZqDriver` on it.
    ``weights.bin`` is checked against the manifest first: a wrong one fails before the board
    is touched."""
    bit_path, _ = export.find_bitstream(bit)
    export.weight_image()
    from .progress import step

    ol = load_overlay(bit_path, download, progress)
    with step("opening the accelerator: registers checked, the weight image into DDR", progress):
        return driver_on_overlay(ol, export, bit_path, timeout_s, fclk_mhz, **driver_kw)


def open_on_overlay(export: Export, overlay, bit=None, timeout_s: float | None = None,
                    fclk_mhz: float | None = None, download: bool = True, progress: bool = False, **driver_kw):
    """:func:`driver_on_overlay` for an overlay already loaded (``ZqOverlay``, a ``pynq.Overlay``)."""
    name = getattr(overlay, "bitfile_name", None) or bit or "overlay"
    return driver_on_overlay(overlay, export, name, timeout_s, fclk_mhz, **driver_kw)
