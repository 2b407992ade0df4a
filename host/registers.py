"""The engine's register file: the map (from the engine specification), its two variants, the
check against the bitstream's ``.hwh``, and reading / writing through ``ip.mmio``.

Names, offsets and bits come from :mod:`zynqflow.spec.engine` only (:class:`RegMap`). The HLS
engine (the Vitis export, the bitstream's engine today) has the registers both engines have; the
RTL twin also counts cycles and DRAM bytes (``cycles_last``, ``dram_*``, ``layer_*``). The
``.hwh`` says which variant a bitstream holds (:func:`engine_from_hwh`), ``engine_info`` bit
``rtl_twin`` confirms it at the first frame.

Vitis names registers its own way in the ``.hwh`` (UG1399, the ``component.xml`` register
description pynq reads into ``ip_dict[ip]["registers"]``): the block registers ``CTRL``, ``GIER``,
``IP_IER``, ``IP_ISR``; a 64-bit argument ``wts`` as ``wts_1`` (low word) and ``wts_2`` (high word);
an output's ``ap_vld`` word as ``<name>_ctrl``. :func:`check_register_offsets` matches both spellings.
"""

from __future__ import annotations

from zynqflow.spec import engine as E

from .errors import RegisterMapMismatch

# how Vitis HLS names a register in the .hwh
HWH_ALIASES = {"AP_CTRL": ("CTRL",), "GIE": ("GIER",), "IER": ("IP_IER",), "ISR": ("IP_ISR",)}
RTL_ONLY = tuple(r.name for r in E.REGISTERS if "hls" not in r.engines)
ISR_AP_DONE = {b.name: b for b in E.ISR_BITS}["ap_done"].mask   # IER/ISR bit 0: ap_done
# registers every engine has, read by RegisterFile.snapshot(); the RTL twin's measured figures on top
SHARED_REGS = ("AP_CTRL", "status", "frames_done", "net_id", "build_params", "engine_info", "wts", "act")
MEASURED_REGS = ("cycles_last", "dram_stall_cycles", "dram_rd_bytes", "dram_wr_bytes")


class RegMap:
    """The register map of one engine variant, from the engine specification
    (:func:`zynqflow.spec.engine.offsets`): ``engine`` ``"hls"`` (the registers both engines
    have) or ``"rtl"`` (the RTL twin: also ``cycles_last``, ``dram_*``, ``layer_*``).
    ``offsets`` by name (64-bit registers as ``<name>`` and ``<name>_hi``, ap_vld words as
    ``<name>_ctrl``); AP_CTRL bits by name (:meth:`mask`)."""

    def __init__(self, engine: str = "hls"):
        if engine not in ("hls", "rtl"):
            raise ValueError(f"engine {engine!r}: 'hls' (the Vitis HLS engine) or 'rtl' (the RTL twin)")
        self.engine = engine
        self.offsets = E.offsets(engine)
        self.source = f"zynqflow.spec.engine (spec version {E.SPEC_VERSION}, {engine} register map)"

    def __getitem__(self, name: str) -> int:
        return self.offsets[name]

    def __contains__(self, name: str) -> bool:
        return name in self.offsets

    @staticmethod
    def mask(*bits: str) -> int:
        return E.ap_ctrl_mask(*bits)

    @staticmethod
    def decode_ctrl(value: int) -> str:
        on = [b.name for b in E.AP_CTRL_BITS if value & b.mask]
        return f"0x{value:08x} ({' '.join(on) if on else 'no bits set'})"

    def __repr__(self) -> str:
        return f"RegMap({self.engine!r})"


def decode_status(value: int) -> str:
    """``status`` as text: the flags set (spec names) and the error-frame count."""
    d = E.decode_status(value)
    parts = list(d["flags"]) or ["ok"]
    if d["error_frames"]:
        parts.append(f"{d['error_frames']} error frames")
    return f"0x{value & 0xFFFFFFFF:08x} ({', '.join(parts)})"


def engine_from_hwh(hwh_registers: dict | None) -> str | None:
    """The engine variant the ``.hwh``'s register list describes: ``"rtl"`` when it lists a
    register only the RTL twin has, ``"hls"`` otherwise; None without register information."""
    if not hwh_registers:
        return None
    names = {str(k).lower() for k in hwh_registers}
    return "rtl" if any(n.lower() in names for n in RTL_ONLY) else "hls"


def hwh_names(name: str) -> tuple[str, ...]:
    """The names register ``name`` of the map may have in a ``.hwh`` (ours, then Vitis's)."""
    if name.endswith("_hi") and name[:-3] in E.REG and E.REG[name[:-3]].kind == "in64":
        return (name, f"{name[:-3]}_2")
    return (name, *HWH_ALIASES.get(name, ()), f"{name}_1")


def check_register_offsets(offsets: dict[str, int], hwh_registers: dict | None, *, ip: str = "the accelerator",
                           regmap_source: str = "the engine specification",
                           hwh_source: str = "the .hwh") -> dict[str, int]:
    """Compare the driver's registers (name -> byte offset, :class:`RegMap`) with those pynq
    read from the ``.hwh`` (``overlay.ip_dict[ip]["registers"]``: name -> {"address_offset", ...}),
    matched by name (case-insensitive, :func:`hwh_names`); registers the ``.hwh`` does not list
    are not compared. Returns the compared names -> offset; {} when the overlay has no register
    information. Raises :class:`RegisterMapMismatch` naming each register and both offsets."""
    if not hwh_registers:
        return {}
    by_lower = {str(k).lower(): k for k in hwh_registers}
    compared, bad = {}, []
    for name, off in offsets.items():
        key = next((by_lower[c.lower()] for c in hwh_names(name) if c.lower() in by_lower), None)
        if key is None:
            continue
        hw = int(hwh_registers[key]["address_offset"])
        compared[name] = hw
        if hw != int(off):
            bad.append(f"{name} at 0x{int(off):02x} in {regmap_source} but '{key}' at 0x{hw:02x} in {hwh_source}")
    if bad:
        raise RegisterMapMismatch(f"register offsets of {ip} differ: {'; '.join(bad)}. The bitstream and this "
                                  "host's engine specification come from different engine versions: rebuild the "
                                  "bitstream, or deploy the host package of the checkout it was built with. No "
                                  "register was written.")
    if not compared:
        raise RegisterMapMismatch(f"none of the registers of {regmap_source} ({', '.join(sorted(offsets))}) is in "
                                  f"{hwh_source} for {ip} (it lists {', '.join(sorted(map(str, hwh_registers)))}): "
                                  "is this the zynqflow engine?")
    return compared


class RegisterFile:
    """The engine's registers through ``mmio`` (``ip.mmio``: ``read(offset)``, ``write(offset,
    value)``), by name in the map ``regmap`` (which the driver may switch once ``engine_info``
    says which engine it is)."""

    def __init__(self, mmio, regmap: RegMap):
        self.mmio, self.map = mmio, regmap

    @property
    def engine(self) -> str:
        return self.map.engine

    def read(self, name: str) -> int:
        return int(self.mmio.read(self.map[name])) & 0xFFFFFFFF

    def write(self, name: str, value: int) -> None:
        self.mmio.write(self.map[name], int(value) & 0xFFFFFFFF)

    def read_optional(self, name: str) -> int | None:
        """A register some engines do not have (the HLS engine cannot count cycles): None then."""
        return self.read(name) if name in self.map else None

    def read64(self, name: str) -> int:
        return self.read(name) | self.read(f"{name}_hi") << 32

    def write64(self, name: str, value: int) -> None:
        """A 64-bit argument (Vitis: ``<name>_1``, ``<name>_2``): low word first."""
        self.write(name, value & 0xFFFFFFFF)
        self.write(f"{name}_hi", value >> 32)

    def snapshot(self) -> dict:
        """AP_CTRL (reading it clears ap_done/ap_ready), status, frames_done, net_id,
        build_params, engine_info, wts, act; the RTL twin's cycles_last, dram_stall_cycles,
        dram_rd_bytes, dram_wr_bytes (None on the HLS engine)."""
        regs = {n: self.read(n) for n in SHARED_REGS}
        regs.update({n: self.read_optional(n) for n in MEASURED_REGS})
        return regs

    def describe(self, regs: dict | None = None) -> str:
        try:
            r = regs or self.snapshot()
        except Exception as e:  # noqa: BLE001 - the registers may be unreachable too
            return f"registers unreadable ({type(e).__name__}: {e})"
        return (f"status={decode_status(r['status'])}, AP_CTRL={self.map.decode_ctrl(r['AP_CTRL'])}, "
                f"frames_done={r['frames_done']}"
                + (f", cycles_last={r['cycles_last']}" if r.get("cycles_last") is not None else ""))

    def idle(self) -> bool:
        return bool(self.read("AP_CTRL") & self.map.mask("ap_idle"))
