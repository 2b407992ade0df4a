"""Vivado's Tcl commands under ``tclsh``, as UG835 (the Vivado Tcl Command Reference) and the IPs'
product guides describe them (no Vivado here).

The reference is data, each entry citing its source (``sim/world/vivado_ref/``):

* ``commands.toml``: every command the board scripts use, with its options and arguments, from
  UG835 (the Tcl Command Reference); the IP packager's ``ipx::`` commands (not in UG835) from the
  Tcl Vivado itself generates and Xilinx's packaging scripts;
* ``ips.toml``: each Xilinx IP of the block design (processing_system7, axi_dma, smartconnect,
  axi_interconnect, axi_intc, proc_sys_reset, xlconcat): its VLNV, CONFIG.* parameters (with the
  values the product guide enumerates), pins and interface pins (with the parameter that enables
  each), address spaces and segments, from PG082, PG021, PG247, PG059, PG099, PG164, UG994 and
  the ``write_bd_tcl`` output of PYNQ's own PYNQ-Z2 design;
* ``objects.toml``: the properties of the project's objects (UG912) and of the IP packager's
  (``ipx::``) objects, the bus definitions (logical ports, bus parameters and their enumerations),
  the device families and life cycles ``supported_families`` takes (UG1118).

:func:`run_mock` sources a script with those commands defined (``vivado_mock.tcl``): an unknown
command, option, property, parameter, pin, bus parameter or logical port is a :class:`Problem`
naming the script's file and line; ``validate_bd_design`` adds Vivado's own validation (clock and
reset inputs left open, FREQ_HZ against the clock's source, AXI4-Stream signals a master does not
drive, reachable segments left unmapped). The engine's IP joins the catalog as the IP it is:
:func:`rtl_ip_entry` from what ``board/ip/package_rtl_ip.tcl`` built (:class:`IpModel`),
:func:`hls_ip_entry` from ``hls/``'s INTERFACE pragmas as Vitis HLS names them (UG1399).
"""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from zynqflow.spec.paths import REPO

REF_DIR = Path(__file__).with_name("vivado_ref")
MOCK_TCL = Path(__file__).with_name("vivado_mock.tcl")
HLS_DIR = REPO / "hls"
RTL_VLNV = "zynqflow.org:rtl:zq_top:1.0"
HLS_VLNV = "zynqflow.org:hls:zq_top:1.0"


# ---- the reference ------------------------------------------------------------------------------
def expand(pattern: str) -> list[str]:
    """Shell brace expansion: ``a{b,c}`` -> ab ac; ``{0..3}`` and ``{00..15}`` (zero-padded) ranges."""
    m = re.search(r"\{([^{}]*)\}", pattern)
    if m is None:
        return [pattern]
    body = m[1]
    r = re.fullmatch(r"(\d+)\.\.(\d+)", body)
    if r:
        width = len(r[1]) if r[1].startswith("0") and len(r[1]) > 1 else 0
        alts = [str(i).zfill(width) for i in range(int(r[1]), int(r[2]) + 1)]
    else:
        alts = body.split(",")
    return [x for a in alts for x in expand(pattern[:m.start()] + a + pattern[m.end():])]


def _load(name: str) -> dict:
    with open(REF_DIR / name, "rb") as f:
        return tomllib.load(f)


@dataclass
class Reference:
    """The vendor reference, patterns expanded."""

    commands: dict
    ips: dict
    classes: dict
    ipx: dict
    buses: dict
    families: list[str]
    life_cycles: list[str]
    parts: list[str]
    rules: list[str]
    sources: dict[str, dict[str, str]]        # file -> {key: citation}


def _item(spec: dict, n: str | None = None) -> dict:
    """One pin / interface pin / address space / segment entry of an IP, normalized."""
    sub = (lambda s: s.replace("{n}", n)) if n is not None else (lambda s: s)
    when = [sub(w) for k in ("when", "when2") if (w := spec.get(k))]
    return dict(names=[sub(x) for x in spec["names"]], count=spec.get("count", ""), when=when,
                dir=spec.get("dir", ""), clock=int(spec.get("clock", False)), reset=int(spec.get("reset", False)),
                required=int(spec.get("required", False)), mode=spec.get("mode", ""), bus=spec.get("bus", ""),
                protocol=spec.get("protocol", ""), tdata_bytes=str(spec.get("tdata_bytes", "")),
                has={k: str(v) for k, v in spec.get("has", {}).items()}, driven=dict.fromkeys(spec.get("driven", []), 1),
                freq_mhz=sub(spec.get("freq_mhz", "")), freq_hz=str(spec.get("freq_hz", "")),
                intf=[sub(x) for x in spec.get("intf", [])], offset=spec.get("offset", ""), range=spec.get("range", ""),
                src=spec.get("src", ""))


def _items(specs: list[dict]) -> list[dict]:
    out = []
    for spec in specs:
        if "for" in spec:
            var, values = spec["for"].split(" in ")
            assert var.strip() == "n", spec
            out += [_item(spec, v.strip()) for v in values.split(",")]
        else:
            out.append(_item(spec))
    return out


def _ip(vlnv: str, d: dict) -> dict:
    values = {}
    for pat, vals in d.get("values", {}).items():
        for name in expand(pat):
            values[name.upper()] = [str(v) for v in vals]
    return dict(src=d["src"], config=[c.upper() for pat in d.get("config", []) for c in expand(pat)], values=values,
                defaults={k.upper(): str(v) for k, v in d.get("defaults", {}).items()},
                passthrough=int(d.get("passthrough", False)),
                **{k: _items(d.get(k, [])) for k in ("pins", "intf_pins", "addr_spaces", "segments")})


@lru_cache(maxsize=1)
def reference() -> Reference:
    c, i, o = _load("commands.toml"), _load("ips.toml"), _load("objects.toml")
    commands = {name: dict(src=s["src"], flags=s.get("flags", []), options=s.get("options", []), args=s["args"],
                           named=s.get("named", []), values=s.get("values", {}),
                           **({"args_with_dict": s["args_with_dict"]} if "args_with_dict" in s else {}))
                for name, s in c["command"].items()}
    classes = {k: dict(src=v["src"], props=[p.upper() for p in v["props"]],
                       values={kk.upper(): vv for kk, vv in v.get("values", {}).items()}) for k, v in o["class"].items()}
    ipx = {k: dict(src=v["src"], props=[p.lower() for p in v["props"]], values=v.get("values", {}))
           for k, v in o["ipx"].items()}
    buses = {k: dict(src=v["src"], vlnv=v["vlnv"], abstraction=v["abstraction"], ports=v["ports"],
                     params=[p.upper() for p in v["params"]], values={kk.upper(): vv for kk, vv in v.get("values", {}).items()})
             for k, v in o["bus"].items()}
    return Reference(commands=commands, ips={v: _ip(v, d) for v, d in i["ip"].items()}, classes=classes, ipx=ipx,
                     buses=buses, families=o["families"]["names"], life_cycles=o["families"]["life_cycles"],
                     parts=c["parts"]["names"], rules=c["rules"]["names"],
                     sources={"commands.toml": c["sources"], "ips.toml": i["sources"], "objects.toml": o["sources"]})


# ---- Python -> Tcl --------------------------------------------------------------------------------
def tcl(value) -> str:
    """A Tcl literal: dicts as dicts, lists as lists, the rest as words."""
    if isinstance(value, dict):
        return "{" + " ".join(f"{tcl(str(k))} {tcl(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "{" + " ".join(tcl(v) for v in value) + "}"
    if isinstance(value, bool):
        return "1" if value else "0"
    s = str(value)
    if s and re.fullmatch(r"[A-Za-z0-9_.:/%=<>+*,|@-]+", s):
        return s
    return "{" + s.replace("\\", "\\\\").replace("{", "\\{").replace("}", "\\}") + "}"


def preamble(extra_ips: dict[str, dict] | None = None) -> str:
    ref = reference()
    ips = dict(ref.ips, **(extra_ips or {}))
    buses_by_vlnv = {b["vlnv"]: k for k, b in ref.buses.items()}
    buses_by_abs = {b["abstraction"]: k for k, b in ref.buses.items()}
    lines = [
        f"set ::CMD {tcl(ref.commands)}", f"set ::IP {tcl(ips)}", f"set ::CLASS {tcl(ref.classes)}",
        f"set ::IPX {tcl(ref.ipx)}", f"set ::BUS {tcl(ref.buses)}", f"set ::BUS_BY_VLNV {tcl(buses_by_vlnv)}",
        f"set ::BUS_BY_ABS {tcl(buses_by_abs)}", f"set ::FAMILIES {tcl(ref.families)}",
        f"set ::LIFECYCLES {tcl(ref.life_cycles)}", f"set ::PARTS {tcl(ref.parts)}", f"set ::RULES {tcl(ref.rules)}",
        "set ::REFSRC {families {src {objects.toml [families]: Vivado-written component.xml families; UG1118 life cycles}}}",
    ]
    return "\n".join(lines) + "\n"


# ---- running a script -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Problem:
    where: str          # <script>:<line>, and " (called at <script>:<line>)" inside a script's proc
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


@dataclass
class BlockDesign:
    """The block design the script built: cells (VLNV), their CONFIG values, nets, interface
    connections, external interface pins, address assignments {(space, segment): (offset, range)}."""

    cells: dict[str, str] = field(default_factory=dict)
    config: dict[str, dict[str, str]] = field(default_factory=dict)
    nets: list[list[str]] = field(default_factory=list)
    intf: dict[str, str] = field(default_factory=dict)
    external: list[str] = field(default_factory=list)
    addr: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    auto: set[tuple[str, str]] = field(default_factory=set)
    file_props: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def from_log(cls, log: str) -> "BlockDesign":
        bd = cls()
        for line in log.splitlines():
            f = line.split("\t")
            if f[0] == "CELL":
                bd.cells[f[1]] = f[2]
                bd.config.setdefault(f[1], {})
            elif f[0] == "CFG":
                bd.config.setdefault(f[1], {})[f[2]] = f[3]
            elif f[0] == "NET":
                bd.nets.append(f[1:])
            elif f[0] == "INTF":
                bd.intf[f[1]] = f[2]
                bd.intf[f[2]] = f[1]
            elif f[0] == "EXT":
                bd.external.append(f[1])
            elif f[0] == "ADDR":
                bd.addr[(f[1], f[2])] = (int(f[3], 16), int(f[4]))
            elif f[0] == "AUTO":
                bd.auto.add((f[1], f[2]))
            elif f[0] == "FILEPROP":
                bd.file_props.setdefault(f[1], {})[f[2]] = f[3]
        return bd

    def connected(self, pin: str) -> list[str]:
        """The other pins on ``pin``'s net."""
        return next(([p for p in n if p != pin] for n in self.nets if pin in n), [])


@dataclass
class MockRun:
    proc: subprocess.CompletedProcess
    log: str
    problems: list[Problem]
    bd: BlockDesign

    @property
    def returncode(self) -> int:
        return self.proc.returncode


def problems_of(log: str) -> list[Problem]:
    return [Problem(*line.split("\t")[1:3]) for line in log.splitlines() if line.startswith("PROBLEM\t")]


def run_mock(workdir: Path, script: Path, args: list[str], *, extra_ips: dict[str, dict] | None = None,
             root: Path | None = None, **mock_env: str) -> MockRun:
    """``script`` under tclsh with Vivado's commands of the reference, ``argv`` = ``args``.
    ``extra_ips``: catalog entries of other IPs (the engine's: :func:`rtl_ip_entry`,
    :func:`hls_ip_entry`). ``root``: problems name files relative to it (default: the directory above
    the script's that holds ``board/``: the repository, or a copy of it). ``mock_env``: MOCK_HDL (the top's ports for ipx::package_project),
    MOCK_IPDEF, MOCK_BOARD, MOCK_WNS/WHS, MOCK_UTIL, MOCK_RUN_DIR (the implementation run's
    directory; default: the project's, as Vivado's). What Vivado would write (component.xml at
    ipx::save_core, the .hwh at generate_target, the run's .bit, the reports) the mock writes as
    placeholders."""
    workdir.mkdir(parents=True, exist_ok=True)
    mock = workdir / "vivado_mock.tcl"
    mock.write_text(preamble(extra_ips) + MOCK_TCL.read_text())
    log = workdir / "vivado_mock.log"
    script = Path(script).resolve()
    if root is None:     # the checkout (or a copy of it) the script is in: the one holding board/
        root = next((d for d in script.parents if (d / "board").is_dir()), script.parent)
    env = dict(os.environ, MOCK_LOG=str(log), MOCK_SCRIPT=str(script),
               MOCK_ROOT=str(Path(root).resolve()), MOCK_ARGS=" ".join("{" + a + "}" for a in args), **mock_env)
    proc = subprocess.run(["tclsh", str(mock)], capture_output=True, text=True, env=env, timeout=120, cwd=workdir)
    text = log.read_text() if log.exists() else ""
    return MockRun(proc, text, problems_of(text), BlockDesign.from_log(text))


# ---- the IP packager's result ---------------------------------------------------------------------
@dataclass
class IpObject:
    """One ipx object (``core|bus_interface:m_axi_wts``) and the properties set on it."""

    handle: str
    props: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.handle.rsplit(":", 1)[-1]


class IpModel:
    """The IP the packaging script built under the mock: live objects by handle, children by kind."""

    def __init__(self, log: str):
        self.objects: dict[str, IpObject] = {}
        for line in log.splitlines():
            f = line.split("\t")
            if f[0] == "ADD":
                self.objects[f[1]] = IpObject(f[1])
            elif f[0] == "REMOVE":
                for h in [h for h in self.objects if h == f[1] or h.startswith(f[1] + "|")]:
                    del self.objects[h]
            elif f[0] == "SET" and f[1] in self.objects:
                self.objects[f[1]].props[f[2]] = f[3]

    def children(self, parent: str, kind: str) -> dict[str, IpObject]:
        pre = f"{parent}|{kind}:"
        return {o.name: o for h, o in self.objects.items() if h.startswith(pre) and "|" not in h[len(pre):]}

    def core(self) -> IpObject:
        return self.objects["core"]

    def bus_interfaces(self) -> dict[str, IpObject]:
        return self.children("core", "bus_interface")

    def port_maps(self, bus: str) -> dict[str, str]:
        """{logical: physical} of a bus interface."""
        return {n: o.props.get("physical_name", "") for n, o in
                self.children(f"core|bus_interface:{bus}", "port_map").items()}

    def bus_parameters(self, bus: str) -> dict[str, str]:
        return {n: o.props.get("value", "") for n, o in self.children(f"core|bus_interface:{bus}", "bus_parameter").items()}

    def files(self) -> dict[str, dict[str, IpObject]]:
        """{file group: {file name: object}}."""
        return {g: self.children(o.handle, "file") for g, o in self.children("core", "file_group").items()}

    def registers(self) -> dict[str, dict]:
        """The registers of the memory maps in pynq's ``ip_dict`` form (what the .hwh carries)."""
        out = {}
        for mm in self.children("core", "memory_map").values():
            for ab in self.children(mm.handle, "address_block").values():
                for name, reg in self.children(ab.handle, "register").items():
                    fields = {fn: dict(bit_offset=int(f.props.get("bit_offset", -1)),
                                       bit_width=int(f.props.get("bit_width", 0)),
                                       access=f.props.get("access"), description=f.props.get("description"))
                              for fn, f in self.children(reg.handle, "field").items()}
                    out[name] = dict(address_offset=int(reg.props.get("address_offset", "-1"), 0),
                                     size=int(reg.props.get("size", 0)), access=reg.props.get("access"),
                                     description=reg.props.get("description"), fields=fields,
                                     block=ab.name, memory_map=mm.name)
        return out


# ---- the engine's IP in the catalog ---------------------------------------------------------------
def _entry(src: str, pins: list[dict], intf_pins: list[dict], spaces: list[dict], segments: list[dict],
           config: list[str] = ()) -> dict:
    return dict(src=src, config=[c.upper() for c in config], values={}, defaults={}, passthrough=0,
                pins=[_item(p) for p in pins], intf_pins=[_item(p) for p in intf_pins],
                addr_spaces=[_item(p) for p in spaces], segments=[_item(p) for p in segments])


def rtl_ip_entry(model: IpModel, hdl_ports: dict[str, str]) -> dict:
    """The catalog entry of the RTL twin's IP as ``package_rtl_ip.tcl`` built it (``model``):
    each AXI bus interface an interface pin, each clock / reset / interrupt interface and each
    port in no interface a pin (``hdl_ports``: port -> "in"/"out"), the address spaces of the
    masters and the slave segments ``<interface>/<address block>`` of the memory maps."""
    buses = {b["vlnv"]: k for k, b in reference().buses.items()}
    pins, intf, spaces, segs, owned = [], [], [], [], set()
    for name, bi in model.bus_interfaces().items():
        bus = buses.get(bi.props.get("bus_type_vlnv", ""), "other")
        params, maps = model.bus_parameters(name), model.port_maps(name)
        owned |= set(maps.values())
        mode = bi.props.get("interface_mode", "")
        if bus in ("clock", "reset", "interrupt"):
            pins.append(dict(names=[name], dir="O" if mode == "master" else "I", clock=bus == "clock",
                             reset=bus == "reset", bus=bus, freq_hz=params.get("FREQ_HZ", "")))
            continue
        spec = dict(names=[name], mode=mode, bus=bus, protocol=params.get("PROTOCOL", ""))
        if bus == "axis":
            driven = [sig for sig, phys in maps.items()
                      if model.objects.get(f"core|port:{phys}", IpObject("")).props.get("driver_value", "") != ""]
            spec.update(tdata_bytes=params.get("TDATA_NUM_BYTES", ""), driven=driven,
                        has={s: params.get(f"HAS_{s}", "1" if s in maps else "0") for s in ("TKEEP", "TSTRB", "TLAST")})
        intf.append(spec)
        if bi.props.get("master_address_space_ref"):
            spaces.append(dict(names=[bi.props["master_address_space_ref"]], intf=[name]))
        if bi.props.get("slave_memory_map_ref"):
            mm = f"core|memory_map:{bi.props['slave_memory_map_ref']}"
            segs += [dict(names=[f"{name}/{blk}"], intf=[name]) for blk in model.children(mm, "address_block")]
    pins += [dict(names=[p], dir="O" if d == "out" else "I") for p, d in hdl_ports.items() if p not in owned]
    user = list(model.children("core", "user_parameter"))
    return _entry("board/ip/package_rtl_ip.tcl as run under the mock (its bus interfaces, memory map, address spaces)",
                  pins, intf, spaces, segs, config=user)


def hls_interfaces(hls_dir: Path = HLS_DIR) -> dict[str, str]:
    """The Vitis HLS IP's interfaces, named from the HLS source's INTERFACE pragmas as UG1399 says
    Vitis names them: ``m_axi`` bundle B -> bus interface ``m_axi_B`` with address space
    ``Data_m_axi_B``; ``s_axilite`` bundle B -> ``s_axi_B``; ``axis`` port P -> ``P``.
    {bus interface: its address space ("" for slaves and streams)}."""
    out = {}
    for f in sorted(hls_dir.rglob("*")):
        if f.suffix not in (".h", ".hpp", ".cpp") or not f.is_file():
            continue
        text = f.read_text(errors="replace")
        for m in re.finditer(r"mode=m_axi\s+port=\w+\s+bundle=(\w+)", text):
            out[f"m_axi_{m[1]}"] = f"Data_m_axi_{m[1]}"
        for m in re.finditer(r"mode=s_axilite\s+port=\w+(?:\s+offset=\w+)?\s+bundle=(\w+)", text):
            out[f"s_axi_{m[1]}"] = ""
        for m in re.finditer(r"mode=axis\s+port=(\w+)", text):
            out[m[1]] = ""
    return out


def hls_ip_entry(hls_dir: Path = HLS_DIR) -> dict:
    """The catalog entry of the Vitis HLS IP, as Vitis builds it from ``hls/`` (UG1399): ``ap_clk``,
    ``ap_rst_n``, ``interrupt``; ``s_axi_<bundle>`` (AXI4-Lite, segment ``s_axi_<bundle>/Reg``),
    ``m_axi_<bundle>`` (AXI4, space ``Data_m_axi_<bundle>``); each ``axis`` port a stream of
    ``ap_axiu<W,0,0,0>`` beats: TDATA, TKEEP, TSTRB, TLAST, a slave's TKEEP and TSTRB inputs tied
    high when undriven (the tie-offs of Vivado HLS's IP export, run_ippack.tcl)."""
    text = "\n".join(p.read_text(errors="replace") for p in sorted(hls_dir.rglob("*")) if p.suffix in (".h", ".cpp"))
    widths = [int(w) for w in re.findall(r"ap_axiu<\s*(\d+)\s*,", text)] or [32]
    intf, spaces, segs = [], [], []
    for name, space in hls_interfaces(hls_dir).items():
        if name.startswith("m_axi_"):
            intf.append(dict(names=[name], mode="master", bus="aximm", protocol="AXI4"))
            spaces.append(dict(names=[space], intf=[name]))
        elif name.startswith("s_axi_"):
            intf.append(dict(names=[name], mode="slave", bus="aximm", protocol="AXI4LITE"))
            segs.append(dict(names=[f"{name}/Reg"], intf=[name]))
        else:
            slave = name.startswith("s_")
            intf.append(dict(names=[name], mode="slave" if slave else "master", bus="axis",
                             tdata_bytes=str(max(widths) // 8), has=dict(TKEEP="1", TSTRB="1", TLAST="1"),
                             driven=["TKEEP", "TSTRB"] if slave else []))
    pins = [dict(names=["ap_clk"], dir="I", clock=True, bus="clock"),
            dict(names=["ap_rst_n"], dir="I", reset=True, bus="reset"),
            dict(names=["interrupt"], dir="O", bus="interrupt")]
    return _entry("UG1399 interface naming from hls/'s INTERFACE pragmas; Vivado HLS run_ippack.tcl tie-offs",
                  pins, intf, spaces, segs)


def engine_entry(engine: str, model: IpModel | None = None, hdl_ports: dict[str, str] | None = None) -> dict[str, dict]:
    """{VLNV: catalog entry} of the engine's IP: ``rtl`` needs the packaged ``model``."""
    if engine == "rtl":
        if model is None:
            raise ValueError("the RTL twin's IP entry comes from its packaging: pass the IpModel")
        return {RTL_VLNV: rtl_ip_entry(model, hdl_ports or {})}
    return {HLS_VLNV: hls_ip_entry()}
