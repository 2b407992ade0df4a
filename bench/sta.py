"""Register-to-register paths of a Yosys ``synth_xilinx`` netlist, with a routing estimate.

    python -m zynqflow.bench.sta build/zynqnet-mini/export-synth_yosys/netlist.json [--out timing.json]

Static timing over the cells of the netlist Yosys writes (``write_json`` after ``synth_xilinx
-family xc7``), with the 7-series -1 speed grade's data-sheet figures (:data:`DS187_MINUS1`)
for the cells and an estimate for the routing: a net of fanout ``f`` costs
``0.35 ns + 1.45 ns * log2(f) / 10`` (0.35 ns at one load, 1.8 ns at 1 024, and on from
there), a dedicated connection nothing (a carry chain, a DSP cascade, and the slice's own
wires from a LUT into its MUXF7 or CARRY4 ``S`` input and from a MUXF7 into the MUXF8).

A path starts at a clock-to-out (a flip-flop's Q, a block RAM's DO, a registered DSP48E1's
P, a LUT RAM or shift register's output after a write) and ends at a setup (a flip-flop's
D, CE or set/reset; a block RAM's address, data, enable or write-enable inputs; a DSP48E1
input up to its first register; a LUT RAM or shift register's write inputs). The I/O ports
are not endpoints (their timing is the system's). The fanout of a net is the cell inputs and
output ports it drives, clock pins aside.

What this is not: Vivado. No placement, no clock skew or jitter, no hold; the net delay is
a function of the fanout alone. Hence the limit the tests hold the paths to,
:data:`LIMIT_NS` = 8.5 ns of the 10 ns period: the rest is the margin for what the estimate
does not see. Every figure is labelled an estimate where it is written.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

LIMIT_NS = 8.5          # the worst estimated path the tests accept (10 ns period at 100 MHz)
CLOCKS_MHZ = (100.0, 150.0)
TOP_PATHS = 20


@dataclass(frozen=True)
class DelayModel:
    """Cell delays in ns. Each field's comment names the data-sheet symbol it stands for."""

    source: str
    # CLB (DS187 "CLB Switching Characteristics")
    t_cko: float          # TCKO: clock to AQ-DQ (flip-flop Q)
    t_ilo: float          # TILO: An-Dn LUT address to A (one LUT)
    t_ilo_2: float        # TILO_2: LUT address to AMUX/CMUX (LUT + MUXF7)
    t_ilo_3: float        # TILO_3: LUT address to BMUX_A (LUT + MUXF7 + MUXF8)
    t_opcy: float         # TOPCYA-D: An-Dn input to COUT (LUT + CARRY4)
    t_byp: float          # TBYP: CIN input to COUT (one CARRY4 of a chain)
    t_cin_o: float        # TCINA-D: CIN input to AMUX-DMUX (a sum out of the chain)
    t_dick: float         # TDICK: AX-DX input to CLK (flip-flop D setup)
    t_ceck: float         # TCECK_CLB: CE input to CLK
    t_srck: float         # TSRCK: SR input to CLK
    # CLB distributed RAM and shift registers (SLICEM)
    t_shcko: float        # TSHCKO: clock to A-B outputs (LUT RAM / SRL output after a write)
    t_lram_setup: float   # TDS_LRAM: DI input to CLK (used for every write input: data, address, WE)
    # Block RAM (DS187 "Block RAM and FIFO Switching Characteristics")
    t_rcko_do: float      # TRCKO_DO: clock to DOUT without output register
    t_rcko_do_reg: float  # TRCKO_DO_REG: clock to DOUT with output register
    t_rcck_addr: float    # TRCCK_ADDRA: ADDR inputs
    t_rdck_di: float      # TRDCK_DI_WF_NC: data inputs (used for WE, EN, RST, REGCE too)
    # DSP48E1 (DS187 "DSP48E1 Switching Characteristics")
    t_dsp_cko_p_preg: float    # TDSPCKO_P_PREG: clock (PREG) to P
    t_dsp_cko_p_mreg: float    # TDSPCKO_P_MREG: clock (MREG) to P, PREG unused
    t_dsp_dck_in_reg: float    # TDSPDCK_{A,B,C,D}_{AREG,BREG,CREG,DREG}: input to its register
    t_dsp_dck_ad_adreg: float  # TDSPDCK_{A,D}_ADREG: through the pre-adder to ADREG
    t_dsp_dck_ab_mreg: float   # TDSPDCK_{A,B}_MREG_MULT: through the multiplier to MREG
    t_dsp_dck_ab_preg: float   # TDSPDCK_{A,B}_PREG_MULT: through the multiplier and ALU to PREG
    t_dsp_dck_c_preg: float    # TDSPDCK_{C,PCIN}_PREG: through the ALU to PREG
    t_dsp_dck_ctrl: float      # TDSPDCK_{CE,RST,OPMODE,ALUMODE,INMODE,CARRYIN}: control inputs
    # routing estimate (the rule, not a data-sheet figure)
    net_ns_fanout1: float = 0.35
    net_ns_fanout1024: float = 1.80

    def net_ns(self, fanout: int) -> float:
        """The routed delay of a net of ``fanout`` loads: log2-linear from 1 to 1 024 loads, and on."""
        return self.net_ns_fanout1 + (self.net_ns_fanout1024 - self.net_ns_fanout1) * math.log2(max(1, fanout)) / 10.0


# The Zynq-7000 -1 speed grade at VCCINT 1.0 V (the PYNQ-Z2's xc7z020-1), per DS187 "Zynq-7000 SoC
# (Z-7007S, Z-7012S, Z-7014S, Z-7010, Z-7015, and Z-7020): DC and AC Switching Characteristics",
# the -1 column of its CLB, CLB distributed RAM, block RAM and DSP48E1 tables (the Z-7010/7015/7020
# fabric is the Artix-7 one). The block RAM figures were checked here against DS189 v1.10 Table 30
# (Spartan-7, the same 28 nm fabric, the same -1 figures); no copy of DS187 itself was at hand to
# check the others against, so they are as entered. The net delays are the estimate's rule, not
# data-sheet figures.
DS187_MINUS1 = DelayModel(
    source="AMD/Xilinx DS187 (Zynq-7000 Z-7010/Z-7015/Z-7020 DC and AC switching characteristics), speed grade -1, "
           "VCCINT 1.0 V: CLB, CLB distributed RAM, block RAM and DSP48E1 switching characteristics (block RAM "
           "figures checked against DS189 v1.10 Table 30, the same 7-series fabric; the other figures as entered, "
           "not checked against the document here). Net delays: the estimate's rule, not data-sheet figures.",
    t_cko=0.53, t_ilo=0.13, t_ilo_2=0.37, t_ilo_3=0.47, t_opcy=0.65, t_byp=0.11, t_cin_o=0.32,
    t_dick=0.09, t_ceck=0.21, t_srck=0.53,
    t_shcko=1.32, t_lram_setup=0.99,
    t_rcko_do=2.46, t_rcko_do_reg=0.89, t_rcck_addr=0.57, t_rdck_di=0.74,
    t_dsp_cko_p_preg=0.64, t_dsp_cko_p_mreg=2.24, t_dsp_dck_in_reg=0.40, t_dsp_dck_ad_adreg=2.06,
    t_dsp_dck_ab_mreg=3.76, t_dsp_dck_ab_preg=5.60, t_dsp_dck_c_preg=1.88, t_dsp_dck_ctrl=0.66,
)

# figures quoted per cell kind in timing.json (what a reader checks against the data sheet)
_QUOTED = {
    "FD* clock to Q (TCKO)": "t_cko", "LUT (TILO)": "t_ilo", "LUT + MUXF7 (TILO_2)": "t_ilo_2",
    "LUT + MUXF7 + MUXF8 (TILO_3)": "t_ilo_3", "LUT + CARRY4 to COUT (TOPCY)": "t_opcy",
    "CARRY4 CIN to COUT (TBYP)": "t_byp", "CARRY4 CIN to sum (TCINA-D)": "t_cin_o",
    "FD* D setup (TDICK)": "t_dick", "FD* CE setup (TCECK_CLB)": "t_ceck", "FD* S/R setup (TSRCK)": "t_srck",
    "LUT RAM / SRL clock to out (TSHCKO)": "t_shcko", "LUT RAM / SRL write setup (TDS_LRAM)": "t_lram_setup",
    "RAMB clock to DO, no output register (TRCKO_DO)": "t_rcko_do",
    "RAMB clock to DO, output register (TRCKO_DO_REG)": "t_rcko_do_reg",
    "RAMB address setup (TRCCK_ADDRA)": "t_rcck_addr", "RAMB data/enable setup (TRDCK_DI_WF_NC)": "t_rdck_di",
    "DSP48E1 clock (PREG) to P (TDSPCKO_P_PREG)": "t_dsp_cko_p_preg",
    "DSP48E1 clock (MREG) to P (TDSPCKO_P_MREG)": "t_dsp_cko_p_mreg",
    "DSP48E1 input to its input register (TDSPDCK_x_xREG)": "t_dsp_dck_in_reg",
    "DSP48E1 A/D to ADREG (TDSPDCK_{A,D}_ADREG)": "t_dsp_dck_ad_adreg",
    "DSP48E1 A/B to MREG (TDSPDCK_{A,B}_MREG_MULT)": "t_dsp_dck_ab_mreg",
    "DSP48E1 A/B to PREG (TDSPDCK_{A,B}_PREG_MULT)": "t_dsp_dck_ab_preg",
    "DSP48E1 C/PCIN to PREG (TDSPDCK_{C,PCIN}_PREG)": "t_dsp_dck_c_preg",
    "DSP48E1 control inputs (TDSPDCK_{CE,RST,OPMODE,...})": "t_dsp_dck_ctrl",
}

_FF_TYPES = {"FDRE", "FDSE", "FDCE", "FDPE", "FDRE_1", "FDSE_1", "FDCE_1", "FDPE_1", "FDRSE", "FDCPE"}
_LUT_RAM_READ = {"RAM32M": "t_ilo", "RAM64M": "t_ilo", "RAM32M16": "t_ilo", "RAM64M8": "t_ilo",
                 "RAM32X1D": "t_ilo", "RAM64X1D": "t_ilo", "RAM32X1S": "t_ilo", "RAM64X1S": "t_ilo",
                 "RAM16X1D": "t_ilo", "RAM16X1S": "t_ilo", "RAM128X1D": "t_ilo_2", "RAM128X1S": "t_ilo_2",
                 "RAM256X1S": "t_ilo_3", "RAM256X1D": "t_ilo_3"}
_LUT_RAM_READ_PINS = re.compile(r"^(ADDR[A-D]|DPRA\d*|DPRA|A\d*|A)$")   # the read addresses (A*: also a write addr)
_PASS_TYPES = {"IBUF", "IBUFG", "OBUF", "BUFG", "BUFGCTRL", "BUFHCE", "VCC", "GND"}
_CLOCK_PINS = {"C", "CLK", "WCLK", "CLKARDCLK", "CLKBWRCLK", "CLKA", "CLKB"}


def _int(v) -> int:
    """A Yosys JSON parameter: a binary string (any width, 'x' bits as 0) or an int."""
    if isinstance(v, int):
        return v
    s = str(v).strip()
    if s and set(s) <= set("01xz"):
        return int(s.replace("x", "0").replace("z", "0"), 2)
    try:
        return int(s)
    except ValueError:
        return 0


@dataclass
class _Arc:            # a combinational arc into an output pin bit
    src: int           # the input net bit
    delay: float       # the cell's delay for this arc
    pin: str           # the input pin, for the report


@dataclass
class _Sink:
    cell: int
    pin: str
    dedicated: bool


@dataclass
class _End:
    net: int
    cell: int
    pin: str
    setup: float
    kind: str          # D, CE, SR, RAMB, DSP, LUTRAM


@dataclass
class Netlist:
    """The flat top module of a Yosys JSON netlist, as the analysis needs it."""

    cells: list[dict]
    names: list[str]                 # cell names
    net_name: dict[int, str]         # net bit -> its name (a public one where there is one)
    ports: dict = field(default_factory=dict)
    top: str = ""

    @classmethod
    def load(cls, path_or_dict, top: str | None = None) -> "Netlist":
        data = path_or_dict if isinstance(path_or_dict, dict) else json.loads(Path(path_or_dict).read_text())
        mods = data["modules"]
        if top is None:
            tops = [n for n, m in mods.items() if _int(m.get("attributes", {}).get("top", 0))]
            if len(tops) != 1:
                raise ValueError(f"netlist: {len(tops)} top modules ({', '.join(tops) or 'none'}); name one")
            top = tops[0]
        m = mods[top]
        names, cells = list(m["cells"].keys()), list(m["cells"].values())
        # the name of each net bit: a public name if there is one (the shortest), else a hidden one
        best: dict[int, tuple] = {}
        for n, w in m["netnames"].items():
            bits = w["bits"]
            hidden = bool(w.get("hide_name"))
            off = _int(w.get("attributes", {}).get("offset", 0)) if "offset" in w.get("attributes", {}) else 0
            for i, b in enumerate(bits):
                if not isinstance(b, int):
                    continue
                label = f"{n}[{i + off}]" if len(bits) > 1 else n
                key = (hidden, n.count("$"), len(label))
                if b not in best or key < best[b][0]:
                    best[b] = (key, label)
        return cls(cells=cells, names=names, net_name={b: v[1] for b, v in best.items()}, ports=m.get("ports", {}),
                   top=top)


def _src(cell: dict) -> str:
    """The RTL source of a cell (its last ``src`` entry outside Yosys's own library), or ''."""
    parts = [p for p in str(cell.get("attributes", {}).get("src", "")).split("|") if p and "share/yosys" not in p]
    parts = [p for p in parts if not re.search(r":0\.0-0\.0$", p)]
    return parts[-1] if parts else ""


def _bits(cell: dict, port: str) -> list:
    return cell["connections"].get(port, [])


class Analysis:
    """Arrival times over the netlist, and the endpoints with their worst paths."""

    def __init__(self, nl: Netlist, model: DelayModel = DS187_MINUS1):
        self.nl, self.m = nl, model
        self.unknown: dict[str, int] = defaultdict(int)
        self._build()
        self._propagate()

    # ---- the timing graph --------------------------------------------------------------
    def _build(self) -> None:
        nl = self.nl
        self.driver: dict[int, tuple[int, str]] = {}       # net -> (cell, pin) driving it
        self.sinks: dict[int, list[_Sink]] = defaultdict(list)
        self.start: dict[int, float] = {}                   # net -> clock-to-out of its driver
        self.arcs: dict[int, list[_Arc]] = defaultdict(list)
        self.ends: list[_End] = []
        self.port_loads: dict[int, int] = defaultdict(int)
        for p in nl.ports.values():
            if p.get("direction") in ("output", "inout"):
                for b in p["bits"]:
                    if isinstance(b, int):
                        self.port_loads[b] += 1
        types = [c["type"] for c in nl.cells]
        for ci, c in enumerate(nl.cells):
            for pin, d in c.get("port_directions", {}).items():
                if d == "output":
                    for b in _bits(c, pin):
                        if isinstance(b, int):
                            self.driver[b] = (ci, pin)
        for ci, c in enumerate(nl.cells):
            t, dirs = c["type"], c.get("port_directions", {})
            for pin, d in dirs.items():
                if d != "input" or pin in _CLOCK_PINS:
                    continue
                for b in _bits(c, pin):
                    if isinstance(b, int):
                        self.sinks[b].append(_Sink(ci, pin, self._dedicated(b, t, pin, types)))
            getattr(self, "_cell_" + self._kind(t))(ci, c)

    def _dedicated(self, net: int, t: str, pin: str, types: list[str]) -> bool:
        """A connection that does not use the general routing."""
        drv = self.driver.get(net)
        dt = types[drv[0]] if drv else ""
        if t == "CARRY4" and pin == "CI":
            return dt == "CARRY4"
        if t == "CARRY4" and pin == "S":
            return dt.startswith("LUT")
        if t == "MUXF7" and pin in ("I0", "I1"):
            return dt.startswith("LUT")
        if t == "MUXF8" and pin in ("I0", "I1"):
            return dt == "MUXF7"
        if t.startswith("DSP48") and pin in ("PCIN", "ACIN", "BCIN", "CARRYCASCIN", "MULTSIGNIN"):
            return True
        return False

    @staticmethod
    def _kind(t: str) -> str:
        if t in _FF_TYPES:
            return "ff"
        if re.fullmatch(r"LUT[1-6]|INV|LUT6_2", t):
            return "lut"
        if t in ("MUXF7", "MUXF8", "CARRY4"):
            return t.lower()
        if t.startswith("RAMB"):
            return "ramb"
        if t.startswith("DSP48"):
            return "dsp"
        if t in _LUT_RAM_READ:
            return "lutram"
        if t in ("SRL16E", "SRLC32E", "SRLC16E"):
            return "srl"
        if t in _PASS_TYPES:
            return "pass"
        return "unknown"

    def _outs(self, c: dict, pins=None) -> list[int]:
        dirs = c.get("port_directions", {})
        return [b for p, d in dirs.items() if d == "output" and (pins is None or p in pins)
                for b in _bits(c, p) if isinstance(b, int)]

    def _ins(self, c: dict, pins=None) -> list[tuple[str, int]]:
        dirs = c.get("port_directions", {})
        return [(p, b) for p, d in dirs.items() if d == "input" and p not in _CLOCK_PINS and
                (pins is None or p in pins) for b in _bits(c, p) if isinstance(b, int)]

    def _comb(self, c: dict, delay: float, ins=None, outs=None) -> None:
        srcs = self._ins(c, ins)
        for o in self._outs(c, outs):
            self.arcs[o].extend(_Arc(b, delay, p) for p, b in srcs)

    def _cell_lut(self, ci: int, c: dict) -> None:
        self._comb(c, self.m.t_ilo)

    def _cell_muxf7(self, ci: int, c: dict) -> None:
        self._comb(c, self.m.t_ilo_2 - self.m.t_ilo)

    def _cell_muxf8(self, ci: int, c: dict) -> None:
        self._comb(c, self.m.t_ilo_3 - self.m.t_ilo_2)

    def _cell_carry4(self, ci: int, c: dict) -> None:
        m = self.m
        s_co = m.t_opcy - m.t_ilo             # the CARRY4's part of TOPCY (the LUT is counted apart)
        co, o = _bits(c, "CO"), _bits(c, "O")
        s, di = _bits(c, "S"), _bits(c, "DI")
        ci_b, cyinit = _bits(c, "CI"), _bits(c, "CYINIT")
        for k in range(4):
            for outs, from_ci in ((co, m.t_byp), (o, m.t_cin_o)):
                if k >= len(outs) or not isinstance(outs[k], int):
                    continue
                arcs = self.arcs[outs[k]]
                for j in range(k + 1):
                    for pin, bl in (("S", s), ("DI", di)):
                        if j < len(bl) and isinstance(bl[j], int):
                            arcs.append(_Arc(bl[j], s_co, pin))
                for pin, bl, d in (("CI", ci_b, from_ci), ("CYINIT", cyinit, s_co)):
                    if bl and isinstance(bl[0], int):
                        arcs.append(_Arc(bl[0], d, pin))

    def _cell_ff(self, ci: int, c: dict) -> None:
        m = self.m
        for q in self._outs(c, ("Q",)):
            self.start[q] = m.t_cko
        for pin, b in self._ins(c):
            setup, kind = ((m.t_dick, "D") if pin == "D" else (m.t_ceck, "CE") if pin == "CE" else (m.t_srck, "SR"))
            self.ends.append(_End(b, ci, pin, setup, kind))

    def _cell_ramb(self, ci: int, c: dict) -> None:
        m = self.m
        p = c.get("parameters", {})
        for port in ("DOADO", "DOPADOP", "DOBDO", "DOPBDOP", "DOA", "DOB", "DOPA", "DOPB", "DO", "DOP"):
            reg = _int(p.get("DOA_REG" if "A" in port[2:] or port.startswith("DOA") else "DOB_REG", 0))
            for b in self._outs(c, (port,)):
                self.start[b] = m.t_rcko_do_reg if reg else m.t_rcko_do
        for pin, b in self._ins(c):
            setup = m.t_rcck_addr if pin.startswith("ADDR") else m.t_rdck_di
            self.ends.append(_End(b, ci, pin, setup, "RAMB"))

    def _cell_lutram(self, ci: int, c: dict) -> None:
        m = self.m
        read = getattr(m, _LUT_RAM_READ[c["type"]])
        outs = self._outs(c)
        for o in outs:
            self.start[o] = m.t_shcko
        reads = [p for p in c.get("port_directions", {}) if _LUT_RAM_READ_PINS.match(p)]
        self._comb(c, read, ins=reads)
        for pin, b in self._ins(c):
            if pin.startswith("ADDR") and pin != "ADDRD" and c["type"].startswith("RAM") and c["type"].endswith("M"):
                continue     # RAM32M/64M: ADDRA-C read only; ADDRD is the write address
            if pin.startswith("DPRA"):
                continue
            self.ends.append(_End(b, ci, pin, m.t_lram_setup, "LUTRAM"))

    def _cell_srl(self, ci: int, c: dict) -> None:
        m = self.m
        for o in self._outs(c):
            self.start[o] = m.t_shcko
        self._comb(c, m.t_ilo, ins=[p for p in c.get("port_directions", {}) if re.fullmatch(r"A\d?", p)])
        for pin, b in self._ins(c, ("D", "CE")):
            self.ends.append(_End(b, ci, pin, m.t_lram_setup, "LUTRAM"))

    def _cell_dsp(self, ci: int, c: dict) -> None:
        m, p = self.m, c.get("parameters", {})
        reg = {k: _int(p.get(k, 1)) for k in ("AREG", "BREG", "CREG", "DREG", "ADREG", "MREG", "PREG",
                                               "OPMODEREG", "ALUMODEREG", "INMODEREG", "CARRYINREG")}
        use_mult = str(p.get("USE_MULT", "MULTIPLY")).upper() != "NONE"
        use_d = str(p.get("USE_DPORT", "FALSE")).upper() == "TRUE"

        def through(group: str) -> tuple[str, float]:
            """Where a data input's path ends: ('reg', setup) or ('comb', delay to P)."""
            if reg.get(group + "REG", 0):
                return "reg", m.t_dsp_dck_in_reg
            if group in ("A", "D") and use_d and reg["ADREG"]:
                return "reg", m.t_dsp_dck_ad_adreg
            if group in ("A", "B", "D") and use_mult:
                if reg["MREG"]:
                    return "reg", m.t_dsp_dck_ab_mreg
                return ("reg", m.t_dsp_dck_ab_preg) if reg["PREG"] else ("comb", m.t_dsp_dck_ab_preg)
            return ("reg", m.t_dsp_dck_c_preg) if reg["PREG"] else ("comb", m.t_dsp_dck_c_preg)

        outs = ("P", "PCOUT", "CARRYOUT", "CARRYCASCOUT", "MULTSIGNOUT", "OVERFLOW", "PATTERNDETECT",
                "PATTERNBDETECT", "UNDERFLOW")
        if reg["PREG"]:
            for o in self._outs(c, outs):
                self.start[o] = m.t_dsp_cko_p_preg
        elif reg["MREG"] and use_mult:
            for o in self._outs(c, outs):
                self.start[o] = m.t_dsp_cko_p_mreg
        for o in self._outs(c, ("ACOUT", "BCOUT")):
            self.start[o] = m.t_dsp_cko_p_preg
        groups = {"A": "A", "ACIN": "A", "B": "B", "BCIN": "B", "C": "C", "D": "D", "PCIN": "C"}
        for pin, b in self._ins(c):
            if pin in groups:
                how, d = through(groups[pin])
                if how == "reg":
                    self.ends.append(_End(b, ci, pin, d, "DSP"))
                else:
                    for o in self._outs(c, ("P", "PCOUT")):
                        self.arcs[o].append(_Arc(b, d, pin))
            elif pin.startswith(("CE", "RST")) or pin in ("OPMODE", "ALUMODE", "INMODE", "CARRYIN", "CARRYINSEL",
                                                          "CARRYCASCIN", "MULTSIGNIN"):
                if reg["PREG"] or reg["MREG"] or pin.startswith(("CE", "RST")):
                    self.ends.append(_End(b, ci, pin, m.t_dsp_dck_ctrl, "DSP"))
                else:
                    for o in self._outs(c, ("P", "PCOUT")):
                        self.arcs[o].append(_Arc(b, m.t_dsp_dck_c_preg, pin))

    def _cell_pass(self, ci: int, c: dict) -> None:
        pass        # I/O and clock buffers, constants: not part of a register-to-register path

    def _cell_unknown(self, ci: int, c: dict) -> None:
        self.unknown[c["type"]] += 1
        self._comb(c, self.m.t_ilo)

    # ---- arrival times -------------------------------------------------------------------
    def fanout(self, net: int) -> int:
        return len(self.sinks.get(net, ())) + self.port_loads.get(net, 0)

    def net_delay(self, net: int, sink_dedicated: bool) -> float:
        return 0.0 if sink_dedicated else self.m.net_ns(self.fanout(net))

    def _propagate(self) -> None:
        """Arrival time at each net (its driver's output), by Kahn's order over the combinational arcs."""
        ded: dict[tuple[int, int, str], bool] = {}
        for net, sl in self.sinks.items():
            for s in sl:
                ded[(net, s.cell, s.pin)] = s.dedicated
        self._ded = ded
        arcs = self.arcs
        indeg = {o: sum(1 for a in al if a.src in arcs) for o, al in arcs.items()}
        users: dict[int, list[int]] = defaultdict(list)
        for o, al in arcs.items():
            for a in al:
                if a.src in arcs:
                    users[a.src].append(o)
        at: dict[int, float] = dict(self.start)
        back: dict[int, tuple] = {}
        ready = [o for o, n in indeg.items() if n == 0]
        done = 0
        while ready:
            o = ready.pop()
            done += 1
            cell = self.driver[o][0] if o in self.driver else -1
            best, arg = at.get(o, -math.inf), None
            for a in arcs[o]:
                t = at.get(a.src, -math.inf)
                if t == -math.inf:
                    continue
                t += self.net_delay(a.src, ded.get((a.src, cell, a.pin), False)) + a.delay
                if t > best:
                    best, arg = t, a
            if best > -math.inf:
                at[o] = best
                if arg is not None:
                    back[o] = (arg, cell)
            for u in users.get(o, ()):
                indeg[u] -= 1
                if indeg[u] == 0:
                    ready.append(u)
        self.loops = len(arcs) - done           # nets on a combinational loop (none expected)
        self.at, self.back = at, back

    # ---- paths ---------------------------------------------------------------------------------
    def endpoint_arrivals(self) -> list[tuple[float, _End]]:
        out = []
        for e in self.ends:
            t = self.at.get(e.net, -math.inf)
            if t == -math.inf:
                continue
            out.append((t + self.net_delay(e.net, self._ded.get((e.net, e.cell, e.pin), False)) + e.setup, e))
        out.sort(key=lambda x: -x[0])
        return out

    def _register(self, cell: int) -> str:
        """A register's name: its output net's name (flip-flops), else the cell's; where Yosys left only
        an internal name, the RTL line the cell comes from."""
        c = self.nl.cells[cell]
        name = self.nl.names[cell]
        if c["type"] in _FF_TYPES:
            q = self._outs(c, ("Q",))
            if q:
                name = self.nl.net_name.get(q[0], name)
                for s in self.sinks.get(q[0], ()) if name.startswith("$") else ():
                    if self.nl.cells[s.cell]["type"] == "OBUF":      # a register on an output port: its name
                        name = self.nl.net_name.get(self._outs(self.nl.cells[s.cell])[0], name)
        if not name.startswith("$"):
            return name
        if _src(c):
            return f"{_src(c)} ({c['type']})"
        # a cell of Yosys's own library (a shift register): a public name of a net it drives or reads
        for b in self._outs(c) + [b for _, b in self._ins(c)]:
            n = self.nl.net_name.get(b, "$")
            if not n.startswith("$"):
                return f"{n} ({c['type']})"
        return name

    def trace(self, end: _End, total: float) -> dict:
        """The worst path into ``end``: its cells, nets, delays."""
        m, nl = self.m, self.nl
        steps = []
        net = end.net
        sink_cell, sink_pin = end.cell, end.pin
        while True:
            fo = self.fanout(net)
            nd = self.net_delay(net, self._ded.get((net, sink_cell, sink_pin), False))
            drv = self.driver.get(net)
            b = self.back.get(net)
            if b is None:   # the start point
                steps.append(dict(net=nl.net_name.get(net, str(net)), fanout=fo, net_ns=round(nd, 3),
                                  cell=nl.cells[drv[0]]["type"] if drv else "?", pin=drv[1] if drv else "?",
                                  cell_ns=round(self.start.get(net, 0.0), 3), start=True))
                start_cell = drv[0] if drv else -1
                break
            arc, cell = b
            steps.append(dict(net=nl.net_name.get(net, str(net)), fanout=fo, net_ns=round(nd, 3),
                              cell=nl.cells[cell]["type"], pin=f"{arc.pin}->{self.driver[net][1]}",
                              cell_ns=round(arc.delay, 3), src=_src(nl.cells[cell])))
            sink_cell, sink_pin = cell, arc.pin
            net = arc.src
        steps.reverse()
        comb = steps[1:]
        kinds: dict[str, int] = defaultdict(int)
        for s in comb:
            kinds[s["cell"]] += 1
        chains, prev_carry = 0, False
        for s in comb:
            is_carry = s["cell"] == "CARRY4"
            if is_carry and not (prev_carry and s["pin"].startswith("CI->")):
                chains += 1
            prev_carry = is_carry
        logic = sum(s["cell_ns"] for s in steps) + end.setup
        routed = sum(s["net_ns"] for s in steps)
        sc = nl.cells[start_cell] if start_cell >= 0 else {}
        return dict(
            start=self._register(start_cell) if start_cell >= 0 else "?", start_cell=sc.get("type", "?"),
            start_src=_src(sc) if sc else "",
            end=self._register(end.cell), end_cell=nl.cells[end.cell]["type"], end_pin=end.pin, end_kind=end.kind,
            end_src=_src(nl.cells[end.cell]),
            estimate_ns=round(total, 3), logic_ns=round(logic, 3), net_ns=round(routed, 3),
            setup_ns=end.setup, logic_levels=len(comb), cells=dict(sorted(kinds.items())),
            carry4=kinds.get("CARRY4", 0), carry_chains=chains,
            max_fanout=max((s["fanout"] for s in steps), default=0),
            slack_ns={f"{f:g}MHz": round(1000.0 / f - total, 3) for f in CLOCKS_MHZ},
            path=steps,
        )

    def worst_paths(self, n: int = TOP_PATHS, key=lambda p: (_base(p["start"]), _base(p["end"]), p["end_pin"])
                    ) -> list[dict]:
        """The ``n`` worst paths, one per ``key`` (by default: per start register, end register and end pin, the
        bit indices dropped, so that a wide register does not fill the list with copies of one path)."""
        seen, out = set(), []
        for total, e in self.endpoint_arrivals():
            p = self.trace(e, total)
            k = key(p)
            if k in seen:
                continue
            seen.add(k)
            out.append(p)
            if len(out) >= n:
                break
        return out


def _base(name: str) -> str:
    return re.sub(r"\[\d+\]|(\.\d+)+$", "", name)


def report(netlist, model: DelayModel = DS187_MINUS1, n: int = TOP_PATHS, limit_ns: float = LIMIT_NS,
           top: str | None = None) -> dict:
    """timing.json's content for a netlist (a path or Yosys's parsed JSON)."""
    nl = netlist if isinstance(netlist, Netlist) else Netlist.load(netlist, top)
    a = Analysis(nl, model)
    paths = a.worst_paths(n)
    per_start = a.worst_paths(n, key=lambda p: _base(p["start"]))
    worst = paths[0] if paths else None
    ends = a.endpoint_arrivals()
    return dict(
        label="estimate: static timing over the Yosys synth_xilinx netlist with data-sheet cell delays and a "
              "fanout-based routing estimate; not a Vivado result (no placement, clock skew or jitter)",
        method=dict(
            cells=model.source,
            nets=f"{model.net_ns_fanout1} ns at fanout 1, + {model.net_ns_fanout1024 - model.net_ns_fanout1:.2f} ns "
                 "* log2(fanout) / 10 (1.8 ns at 1 024 loads, growing on); 0 on dedicated connections (CARRY4 "
                 "chain, DSP48E1 cascade, LUT into its slice's MUXF7 or CARRY4 S, MUXF7 into MUXF8)",
            paths="register to register (I/O ports excluded); the worst path per (start register, end register, "
                  "end pin), bit indices dropped; estimate = logic (clock-to-out + cells + setup) + nets",
            figures_ns={k: getattr(model, f) for k, f in _QUOTED.items()},
        ),
        limit_ns=limit_ns,
        clocks_mhz=list(CLOCKS_MHZ),
        worst_ns=worst["estimate_ns"] if worst else 0.0,
        worst_logic_ns=max((p["logic_ns"] for p in paths), default=0.0),
        within_limit=bool(worst is None or worst["estimate_ns"] <= limit_ns),
        slack_ns={f"{f:g}MHz": round(1000.0 / f - (worst["estimate_ns"] if worst else 0.0), 3) for f in CLOCKS_MHZ},
        endpoints=len(ends),
        endpoints_over_limit=sum(1 for t, _ in ends if t > limit_ns),
        unknown_cells=dict(a.unknown),
        combinational_loops=a.loops,
        paths=paths,
        worst_per_start=[summary_line(p) for p in per_start],
    )


def summary_line(p: dict) -> str:
    return (f"{p['estimate_ns']:.2f} ns est. ({p['logic_ns']:.2f} logic, {p['logic_levels']} levels, "
            f"max fanout {p['max_fanout']}): {p['start']} -> {p['end']} ({p['end_cell']}.{p['end_pin']})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("netlist", help="Yosys write_json netlist (after synth_xilinx)")
    ap.add_argument("--out", default=None, help="timing.json to write")
    ap.add_argument("--paths", type=int, default=TOP_PATHS)
    a = ap.parse_args(argv)
    try:
        r = report(Path(a.netlist), n=a.paths)
    except (OSError, ValueError, KeyError) as e:
        print(f"sta: {a.netlist}: {e}", file=sys.stderr)
        return 2
    if a.out:
        Path(a.out).write_text(json.dumps(r, indent=1) + "\n")
    for p in r["paths"]:
        print(summary_line(p))
    return 0 if r["within_limit"] else 1


if __name__ == "__main__":
    sys.exit(main())
