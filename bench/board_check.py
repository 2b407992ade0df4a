"""``make check-board-scripts``: the Vivado scripts of board/ run under the vendor-reference mock
of Vivado (:mod:`zynqflow.sim.world.vivado`, no Vivado here), and what they build checked against
the RTL itself.

    python -m zynqflow.bench.board_check [build/<net>/export]     (default: a seeded zynqnet-tiny export)

It runs ``board/bitstream.sh`` for ``ENGINE=rtl`` and ``ENGINE=hls`` with a ``vivado`` on ``PATH``
that sources the script it is given under the mock (:func:`fake_vivado`): so the scripts run with
the arguments bitstream.sh passes them: ``board/ip/package_rtl_ip.tcl`` (the RTL twin's IP) and
``board/pynq_z2.tcl`` (the block design, with either engine's IP, with and without the PYNQ-Z2
board files). Every problem the mock reports (an unknown command, option, property, CONFIG.*
parameter, pin, bus parameter or logical port; what validate_bd_design finds) is listed with the
script and line, then the checks below; any problem: exit 1.

* :func:`parse_hdl`: a top's real ports (direction, width, constant outputs) and parameters
  (resolved values) from Verilator's ``--json-only`` output of the RTL with the export's
  include files: what Vivado's IP packager would find in the HDL.
* :func:`check_pass_through`: the Verilog wrapper has every port and parameter of ``zq_top``.
* :func:`check_interfaces`: each bus interface of the packaged IP (the mock's
  :class:`IpModel`) maps logical ports that its bus type defines to ports that exist, with
  the direction its mode needs and the width its bus parameters say; every port is in one
  interface at most, and one in none is an input with a driver value or an output the RTL
  ties to a constant; the clock (FREQ_HZ the specification's clock) and the active-low reset
  belong to all of them.
* :func:`check_parameters`: every parameter set on the IP exists on the wrapper with the
  value the HDL resolves from the export, and that value is the export's (manifest, plan).
* :func:`check_registers`: the address block's registers are the engine specification's
  RTL register map, within the control port's address width, as the driver reads them.
* :func:`check_files`: the IP's ``.svh`` headers are include files in every file group.
* :func:`check_block_design`: on the block design the mock built (cells, CONFIG values, nets,
  interface connections, address map): the engine's IP is the engine's, every interface and pin
  of it connected, each master's own address space on the DDR window, the control registers in
  one segment at one base; the PS clock, the HP ports' width, the DMA's mode and length register
  and its stream width those the rest of the project assumes (spec.engine, sim/world/pg021.py).

Each check returns a list of problems (empty: passed), so that a test can assert on the
exact problem a deliberately broken copy has.

The bus rules are AMBA AXI4 / AXI4-Lite / AXI4-Stream (ARM IHI 0022, 0051) as Vivado's
``aximm_rtl``, ``axis_rtl``, ``clock_rtl``, ``reset_rtl`` and ``interrupt_rtl`` abstractions
name the signals (UG1118, "Bus interfaces").
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from zynqflow.sim.world import vivado as V
from zynqflow.sim.world.pg021 import DMA_MAX_LENGTH
from zynqflow.sim.world.vivado import BlockDesign, IpModel, hls_interfaces  # noqa: F401 (hls_interfaces: for the tests)
from zynqflow.spec import engine as E
from zynqflow.spec.paths import REPO


# ---- the HDL, as Verilator reads it ------------------------------------------------------------
@dataclass(frozen=True)
class Port:
    name: str
    direction: str               # "in" / "out"
    width: int
    left: int | None = None      # the declared range ([left:right]); None for a scalar
    right: int | None = None
    const: int | None = None     # an output the RTL ties to a constant


@dataclass
class Hdl:
    top: str
    ports: dict[str, Port] = field(default_factory=dict)
    params: dict[str, tuple[int, int | None]] = field(default_factory=dict)   # value, sized width
    # every module elaborated under the top: its name in the source -> the parameter values of each variant
    modules: dict[str, list[dict[str, int]]] = field(default_factory=dict)


def verilog_literal(text: str) -> tuple[int, int | None]:
    """Verilator's constant (``32'sh10``, ``1370'h3...``) -> (value, width)."""
    m = re.fullmatch(r"(\d+)'(s?)([hbdo])([0-9a-fA-F_]+)", text)
    if not m:
        return int(text), None
    width = int(m[1])
    v = int(m[4].replace("_", ""), {"h": 16, "b": 2, "d": 10, "o": 8}[m[3]])
    if m[2] and v >> (width - 1):
        v -= 1 << width
    return v, width


def parse_hdl(top: str, files: list[Path], include_dirs: list[Path], workdir: Path) -> Hdl:
    """``top``'s ports and parameters after elaboration (``.v`` files read as Verilog-2001)."""
    from zynqflow.sim.harness.rtl_fast import verilator_env

    exe, env = verilator_env()
    workdir.mkdir(parents=True, exist_ok=True)
    cmd = [exe, "--json-only", "-Mdir", str(workdir), "--top-module", top, "+1364-2001ext+v", "-Wno-fatal",
           "-Wno-lint", "-Wno-style", *[f"-I{d}" for d in include_dirs], *map(str, files)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"verilator --json-only {top} failed:\n{p.stdout[-3000:]}{p.stderr[-3000:]}")
    tree = json.loads((workdir / f"V{top}.tree.json").read_text())
    dtypes: dict[str, dict] = {}

    def walk(n):
        if isinstance(n, dict):
            if n.get("type", "").endswith("DTYPE") and "addr" in n:
                dtypes[n["addr"]] = n
            for v in n.values():
                walk(v)
        elif isinstance(n, list):
            for v in n:
                walk(v)

    walk(tree)
    module = next(m for m in tree["modulesp"] if m["name"] == top)
    hdl = Hdl(top)
    for m in tree["modulesp"]:
        hdl.modules.setdefault(m.get("origName", m["name"]), []).append(
            {v["name"]: verilog_literal(v["valuep"][0]["name"])[0] for v in m.get("stmtsp", [])
             if v.get("type") == "VAR" and v.get("isGParam") and v.get("valuep")
             and v["valuep"][0].get("type") == "CONST"})
    for s in module["stmtsp"]:
        if s.get("type") != "VAR":
            continue
        value = s["valuep"][0]["name"] if s.get("valuep") and s["valuep"][0].get("type") == "CONST" else None
        if s.get("isGParam"):
            hdl.params[s["name"]] = verilog_literal(value)
        elif s.get("isPrimaryIO"):
            rng = dtypes.get(s["dtypep"], {}).get("range")
            left, right = (int(x) for x in rng.split(":")) if rng else (None, None)
            width = abs(left - right) + 1 if rng else 1
            const = verilog_literal(value)[0] if s.get("isConst") and value else None
            hdl.ports[s["name"]] = Port(s["name"], {"INPUT": "in", "OUTPUT": "out"}[s["direction"]], width,
                                        left, right, const)
    return hdl


def rtl_files(wrapper: Path | None = None) -> list[Path]:
    from zynqflow.sim.rtl.runner import RTL_DIR, RTL_SOURCES
    return [RTL_DIR / s for s in RTL_SOURCES] + ([wrapper] if wrapper else [])


def mock_hdl_file(hdl: Hdl, path: Path) -> Path:
    """The ports and parameters the mock's ipx::package_project finds (its MOCK_HDL file)."""
    lines = [f"port {p.name} {p.direction} {'{}' if p.left is None else p.left} {'{}' if p.right is None else p.right}"
             for p in hdl.ports.values()]
    lines += [f"param {n}" for n in hdl.params]
    path.write_text("\n".join(lines) + "\n")
    return path


# the wrapper's one difference from zq_top (board/ip/zq_top_ip.v): its control port decodes the
# whole 64 KiB segment the block design gives it, so no register aliases at +0x100
WRAPPER_CTRL = {"C_S_AXI_CONTROL_ADDR_WIDTH": E.CTRL_ADDR_BITS}
WRAPPER_CTRL_PORTS = ("s_axi_control_AWADDR", "s_axi_control_ARADDR")


def check_pass_through(wrapper: Hdl, core: Hdl) -> list[str]:
    """Every port of ``core`` on ``wrapper`` (same direction and width) and no other; every
    parameter of ``core`` on ``wrapper`` with the same resolved value; but the control port's
    address width, which is the segment's (``WRAPPER_CTRL``)."""
    bad = []
    for name, p in core.ports.items():
        w = wrapper.ports.get(name)
        if w is None:
            bad.append(f"port {name} of {core.top} is not on {wrapper.top}")
        elif name in WRAPPER_CTRL_PORTS:
            if (w.direction, w.width) != (p.direction, E.CTRL_ADDR_BITS):
                bad.append(f"port {name}: {w.direction} {w.width} bits on {wrapper.top}, the control segment "
                           f"needs {E.CTRL_ADDR_BITS}")
        elif (w.direction, w.width) != (p.direction, p.width):
            bad.append(f"port {name}: {w.direction} {w.width} bits on {wrapper.top}, {p.direction} {p.width} on "
                       f"{core.top}")
    bad += [f"port {n} of {wrapper.top} is not {core.top}'s" for n in wrapper.ports if n not in core.ports]
    for name, (v, width) in core.params.items():
        if name not in wrapper.params:
            bad.append(f"parameter {name} of {core.top} is not on {wrapper.top}")
        elif name in WRAPPER_CTRL:
            if wrapper.params[name][0] != WRAPPER_CTRL[name]:
                bad.append(f"parameter {name}: {wrapper.params[name][0]} on {wrapper.top}, the control segment "
                           f"needs {WRAPPER_CTRL[name]}")
        elif wrapper.params[name] != (v, width):
            bad.append(f"parameter {name}: {wrapper.params[name]} (value, bits) on {wrapper.top}, {(v, width)} on "
                       f"{core.top}")
    return bad


# ---- bus interfaces ------------------------------------------------------------------------------
AXIMM = "xilinx.com:interface:aximm:1.0"
AXIS = "xilinx.com:interface:axis:1.0"
CLOCK = "xilinx.com:signal:clock:1.0"
RESET = "xilinx.com:signal:reset:1.0"
INTERRUPT = "xilinx.com:signal:interrupt:1.0"
ABSTRACTION = {AXIMM: "xilinx.com:interface:aximm_rtl:1.0", AXIS: "xilinx.com:interface:axis_rtl:1.0",
               CLOCK: "xilinx.com:signal:clock_rtl:1.0", RESET: "xilinx.com:signal:reset_rtl:1.0",
               INTERRUPT: "xilinx.com:signal:interrupt_rtl:1.0"}

# AXI4 signals: the direction seen from the master ("out": master drives it) and the width, a
# number or the bus parameter it equals ("DATA/8": the data width in bytes)
_AXI_CHANNEL = dict(ADDR="ADDR_WIDTH", LEN=8, SIZE=3, BURST=2, LOCK=1, CACHE=4, PROT=3, QOS=4, REGION=4)
AXI4: dict[str, tuple[str, int | str]] = {}
for _ch in ("AW", "AR"):
    AXI4.update({f"{_ch}{k}": ("out", w) for k, w in _AXI_CHANNEL.items()})
    AXI4.update({f"{_ch}ID": ("out", "ID_WIDTH"), f"{_ch}USER": ("out", f"{_ch}USER_WIDTH"), f"{_ch}VALID": ("out", 1),
                 f"{_ch}READY": ("in", 1)})
AXI4.update(WID=("out", "ID_WIDTH"), WDATA=("out", "DATA_WIDTH"), WSTRB=("out", "DATA/8"), WLAST=("out", 1),
            WUSER=("out", "WUSER_WIDTH"), WVALID=("out", 1), WREADY=("in", 1),
            BID=("in", "ID_WIDTH"), BRESP=("in", 2), BUSER=("in", "BUSER_WIDTH"), BVALID=("in", 1), BREADY=("out", 1),
            RID=("in", "ID_WIDTH"), RDATA=("in", "DATA_WIDTH"), RRESP=("in", 2), RLAST=("in", 1),
            RUSER=("in", "RUSER_WIDTH"), RVALID=("in", 1), RREADY=("out", 1))
AXI4_REQUIRED = {"AWADDR", "AWLEN", "AWSIZE", "AWBURST", "AWVALID", "AWREADY", "WDATA", "WSTRB", "WLAST", "WVALID",
                 "WREADY", "BRESP", "BVALID", "BREADY", "ARADDR", "ARLEN", "ARSIZE", "ARBURST", "ARVALID",
                 "ARREADY", "RDATA", "RRESP", "RLAST", "RVALID", "RREADY"}
AXI4LITE = {k: AXI4[k] for k in ("AWADDR", "AWPROT", "AWVALID", "AWREADY", "WDATA", "WSTRB", "WVALID", "WREADY",
                                 "BRESP", "BVALID", "BREADY", "ARADDR", "ARPROT", "ARVALID", "ARREADY", "RDATA",
                                 "RRESP", "RVALID", "RREADY")}
AXI4LITE_REQUIRED = set(AXI4LITE) - {"AWPROT", "ARPROT"}
AXIS_SIGNALS = dict(TDATA=("out", "TDATA_NUM_BYTES*8"), TVALID=("out", 1), TREADY=("in", 1),
                    TKEEP=("out", "TDATA_NUM_BYTES"), TSTRB=("out", "TDATA_NUM_BYTES"), TLAST=("out", 1),
                    TUSER=("out", "TUSER_WIDTH"), TID=("out", "TID_WIDTH"), TDEST=("out", "TDEST_WIDTH"))
SIGNALS = {CLOCK: {"CLK": ("in", 1)}, RESET: {"RST": ("in", 1)}, INTERRUPT: {"INTERRUPT": ("out", 1)}}


def _rules(bus_type: str, protocol: str) -> tuple[dict, set]:
    if bus_type == AXIMM:
        return (AXI4LITE, AXI4LITE_REQUIRED) if protocol == "AXI4LITE" else (AXI4, AXI4_REQUIRED)
    if bus_type == AXIS:
        return AXIS_SIGNALS, {"TDATA", "TVALID"}
    return SIGNALS.get(bus_type, {}), set(SIGNALS.get(bus_type, {}))


def _want_width(rule: int | str, params: dict[str, str]) -> int | None:
    if isinstance(rule, int):
        return rule
    try:
        if rule == "DATA/8":
            return int(params["DATA_WIDTH"]) // 8
        if rule == "TDATA_NUM_BYTES*8":
            return int(params["TDATA_NUM_BYTES"]) * 8
        return int(params[rule])
    except (KeyError, ValueError):
        return None


def check_interfaces(model: IpModel, hdl: Hdl, core: Hdl | None = None) -> list[str]:
    """The packaged IP's bus interfaces against the wrapper's real ports (``hdl``); ``core``
    (zq_top's parse) for the outputs the RTL ties off."""
    bad, owner = [], {}
    buses = model.bus_interfaces()
    if not buses:
        return ["the IP has no bus interfaces"]
    for name, bi in buses.items():
        bus_type, mode = bi.props.get("bus_type_vlnv", ""), bi.props.get("interface_mode", "")
        params, maps = model.bus_parameters(name), model.port_maps(name)
        where = f"bus interface {name} ({bus_type or 'no bus type'}, {mode or 'no mode'})"
        if bus_type not in ABSTRACTION:
            bad.append(f"{where}: unknown bus type")
            continue
        if bi.props.get("abstraction_type_vlnv") != ABSTRACTION[bus_type]:
            bad.append(f"{where}: abstraction {bi.props.get('abstraction_type_vlnv')}, not {ABSTRACTION[bus_type]}")
        if mode not in ("master", "slave"):
            bad.append(f"{where}: interface mode {mode!r}")
            continue
        rules, required = _rules(bus_type, params.get("PROTOCOL", ""))
        for logical in sorted(required - set(maps)):
            bad.append(f"{where}: no port for {logical}")
        for logical, physical in maps.items():
            if logical not in rules:
                bad.append(f"{where}: {logical} is not a signal of this bus")
                continue
            port = hdl.ports.get(physical)
            if port is None:
                bad.append(f"{where}: {logical} -> {physical}: no such port on {hdl.top}")
                continue
            if physical in owner:
                bad.append(f"port {physical} is in {owner[physical]} and {name}")
            owner[physical] = name
            direction, rule = rules[logical]
            if mode == "slave" and bus_type in (AXIMM, AXIS):
                direction = {"in": "out", "out": "in"}[direction]
            if port.direction != direction:
                bad.append(f"{where}: {logical} -> {physical} is an {port.direction}put, the {mode}'s {logical} "
                           f"is an {direction}put")
            want = _want_width(rule, params)
            if want is None:
                bad.append(f"{where}: {logical} -> {physical}: bus parameter {rule} not set")
            elif port.width != want:
                bad.append(f"{where}: {logical} -> {physical} is {port.width} bits, {rule} = {want}")
        if bus_type == AXIMM:
            bad += _check_aximm(model, name, params, maps, hdl, core)
        if bus_type == AXIS:
            for flag, sig in (("HAS_TREADY", "TREADY"), ("HAS_TKEEP", "TKEEP"), ("HAS_TSTRB", "TSTRB"),
                              ("HAS_TLAST", "TLAST")):
                if params.get(flag, "1" if sig in maps else "0") != ("1" if sig in maps else "0"):
                    bad.append(f"{where}: {flag}={params.get(flag)} but {sig} is {'' if sig in maps else 'not '}mapped")
    for p, port in hdl.ports.items():
        if p in owner:
            continue
        obj = model.objects.get(f"core|port:{p}")
        if port.direction == "in" and (obj is None or not obj.props.get("driver_value")):
            bad.append(f"port {p} is in no bus interface and has no driver value (Vivado would tie it to 0)")
        elif port.direction == "out" and (core is None or core.ports.get(p, Port("", "", 0)).const is None):
            bad.append(f"port {p} is in no bus interface and is not a constant of the RTL")
    bad += _check_clock_reset(model, buses)
    return bad


def _check_aximm(model: IpModel, name: str, params: dict, maps: dict, hdl: Hdl, core: Hdl | None) -> list[str]:
    bad, mode = [], model.bus_interfaces()[name].props.get("interface_mode")
    protocol = params.get("PROTOCOL")
    if protocol not in ("AXI4", "AXI4LITE"):
        return [f"bus interface {name}: PROTOCOL {protocol!r} (AXI4 or AXI4LITE)"]
    if protocol == "AXI4" and "AWLEN" in maps and hdl.ports.get(maps["AWLEN"], Port("", "", 8)).width != 8:
        bad.append(f"bus interface {name}: AXI4 with a {hdl.ports[maps['AWLEN']].width}-bit AWLEN (AXI3 has 4)")
    if protocol == "AXI4" and params.get("MAX_BURST_LENGTH") != str(E.AXI_BURST_BEATS):
        bad.append(f"bus interface {name}: MAX_BURST_LENGTH {params.get('MAX_BURST_LENGTH')}, the engine's bursts "
                   f"are at most {E.AXI_BURST_BEATS} beats (spec.engine.AXI_BURST_BEATS)")
    data = int(params.get("DATA_WIDTH", 0) or 0)
    want_data = E.AXI_DATA_BITS if protocol == "AXI4" else 32
    if data != want_data:
        bad.append(f"bus interface {name}: DATA_WIDTH {data}, the specification's {want_data}")
    want_addr = E.AXI_ADDR_BITS if protocol == "AXI4" else E.CTRL_ADDR_BITS
    if params.get("ADDR_WIDTH") != str(want_addr):
        bad.append(f"bus interface {name}: ADDR_WIDTH {params.get('ADDR_WIDTH')}, the specification's {want_addr}")
    if protocol == "AXI4" and core is not None:
        # the bursts the RTL keeps in flight (zq_axi_rd / zq_axi_wr MAX_OUT) within what the interface declares
        for mod, key in (("zq_axi_rd", "NUM_READ_OUTSTANDING"), ("zq_axi_wr", "NUM_WRITE_OUTSTANDING")):
            most = max((v.get("MAX_OUT", 0) for v in core.modules.get(mod, [])), default=0)
            if not most or int(params.get(key, 0) or 0) < most:
                bad.append(f"bus interface {name}: {key} {params.get(key)}, {mod} keeps up to {most or '?'} "
                           f"bursts in flight")
    if params.get("READ_WRITE_MODE") == "READ_ONLY" and core is not None:
        for sig in ("AWVALID", "WVALID"):
            port = core.ports.get(maps.get(sig, ""))
            if port is None or port.const != 0:
                bad.append(f"bus interface {name}: READ_ONLY, but {core.top} does not tie {maps.get(sig)} to 0")
    if mode == "master":
        space = model.bus_interfaces()[name].props.get("master_address_space_ref")
        spaces = model.children("core", "address_space")
        if space not in spaces:
            bad.append(f"bus interface {name}: master_address_space_ref {space!r} names no address space "
                       f"(there are {sorted(spaces)})")
        else:
            rng = spaces[space].props.get("range", "")
            if size_bytes(rng) != 1 << int(params.get("ADDR_WIDTH", 0) or 0):
                bad.append(f"address space {space}: range {rng}, the {params.get('ADDR_WIDTH')}-bit addresses reach "
                           f"{1 << int(params.get('ADDR_WIDTH', 0) or 0)} bytes")
            if spaces[space].props.get("width") != str(data):
                bad.append(f"address space {space}: width {spaces[space].props.get('width')}, data {data} bits")
    else:
        mm = model.bus_interfaces()[name].props.get("slave_memory_map_ref")
        if mm not in model.children("core", "memory_map"):
            bad.append(f"bus interface {name}: slave_memory_map_ref {mm!r} names no memory map")
    return bad


def _check_clock_reset(model: IpModel, buses: dict) -> list[str]:
    bad = []
    data = {n for n, b in buses.items() if b.props.get("bus_type_vlnv") in (AXIMM, AXIS)}
    clocks = [n for n, b in buses.items() if b.props.get("bus_type_vlnv") == CLOCK]
    resets = [n for n, b in buses.items() if b.props.get("bus_type_vlnv") == RESET]
    if len(clocks) != 1 or len(resets) != 1:
        return [f"one clock and one reset interface expected, found clocks {clocks}, resets {resets}"]
    p = model.bus_parameters(clocks[0])
    assoc = set(filter(None, p.get("ASSOCIATED_BUSIF", "").split(":")))
    if assoc != data:
        bad.append(f"clock {clocks[0]}: ASSOCIATED_BUSIF {sorted(assoc)}, the AXI interfaces are {sorted(data)}")
    if p.get("FREQ_HZ") != str(E.CLOCK_MHZ * 1_000_000):
        bad.append(f"clock {clocks[0]}: FREQ_HZ {p.get('FREQ_HZ')!r}, the engine's clock is {E.CLOCK_MHZ} MHz "
                   "(spec.engine.CLOCK_MHZ, FCLK_CLK0)")
    rst_port = model.port_maps(resets[0]).get("RST")
    if p.get("ASSOCIATED_RESET") != rst_port:
        bad.append(f"clock {clocks[0]}: ASSOCIATED_RESET {p.get('ASSOCIATED_RESET')!r}, the reset port is {rst_port}")
    if model.bus_parameters(resets[0]).get("POLARITY") != "ACTIVE_LOW":
        bad.append(f"reset {resets[0]}: POLARITY {model.bus_parameters(resets[0]).get('POLARITY')!r}, ap_rst_n is "
                   "active low")
    for n, b in buses.items():
        if b.props.get("bus_type_vlnv") == INTERRUPT and model.bus_parameters(n).get("SENSITIVITY") != "LEVEL_HIGH":
            bad.append(f"interrupt {n}: SENSITIVITY {model.bus_parameters(n).get('SENSITIVITY')!r}, the engine's "
                       "interrupt is a level (GIE and an ISR bit)")
    return bad


def size_bytes(text: str) -> int:
    """Vivado's range notation (``4G``, ``64K``, ``0x1000``, ``512M``) -> bytes."""
    m = re.fullmatch(r"(\d+)([KMGTPE]?)", text.strip())
    if m:
        return int(m[1]) << (10 * " KMGTPE".index(m[2] or " "))
    return int(text, 0)


# ---- parameters -----------------------------------------------------------------------------
def ip_value(fmt: str, text: str, length: str | None) -> tuple[int, int | None]:
    """An ipx parameter value (long; bitString "0x..." or quoted binary) -> (value, bit length)."""
    text = text.strip().strip('"')
    if fmt == "bitString":
        v = int(text, 16) if text.lower().startswith("0x") else int(text, 2)
        return v, int(length) if length else None
    return int(text, 0), None


def export_values(export_dir: Path) -> dict[str, int]:
    """The parameters the export's manifest and plan fix (the rest follow from rtl_params.svh)."""
    from zynqflow.export.exporter import load_plan

    man = json.loads((export_dir / "manifest.json").read_text())
    plan = load_plan(export_dir)
    table = 0
    for i, row in enumerate(plan.rows):
        table |= row << (i * E.ROW_BITS)
    eng, mem = man["engine"], man["memory"]
    return dict(N_PE=eng["n_pe"], N_CI=eng["n_ci"], N_LAYERS=len(man["layers"]), NET_ID=man["network_id_int"],
                BUILD_PARAMS=eng["build_params"], ENGINE_INFO=eng["engine_info_rtl"], CACHE=int(eng["weight_cache"]),
                ACT_ROWS=eng["act_rows"], WBUF_DEPTH=eng["wbuf_depth"], IMAGE_BYTES=mem["weight_image_bytes"],
                SCRATCH_BYTES=mem["scratch_bytes"], N_WORDS=mem["weight_words"], HDR_BYTES=mem["header_bytes"],
                N_CLASSES=man["output"]["classes"], LAYER_TABLE=table,
                C_S_AXI_CONTROL_ADDR_WIDTH=E.CTRL_ADDR_BITS, C_S_AXI_CONTROL_DATA_WIDTH=32)


def check_parameters(model: IpModel, wrapper: Hdl, export_dir: Path) -> list[str]:
    """Every parameter set on the IP (user and HDL) is the wrapper's, with the value the wrapper
    resolves from the export's files and the export's own value; none of the wrapper's is left
    unset; the user parameters are read-only."""
    bad = []
    user, hdl = model.children("core", "user_parameter"), model.children("core", "hdl_parameter")
    want = export_values(export_dir)
    for kind, objs in (("user", user), ("hdl", hdl)):
        for name, o in objs.items():
            if "value" not in o.props:
                bad.append(f"{kind} parameter {name} of the wrapper was not set")
                continue
            if name not in wrapper.params:
                bad.append(f"{kind} parameter {name} is not a parameter of {wrapper.top}")
                continue
            v, length = ip_value(o.props.get("value_format", "long"), o.props["value"],
                                 o.props.get("value_bit_string_length"))
            hv, hwidth = wrapper.params[name]
            if v != hv:
                bad.append(f"{kind} parameter {name} = {v:#x} on the IP, {hv:#x} in {wrapper.top} with the export's "
                           "rtl_params.svh")
            if hwidth is not None and length is not None and length != hwidth:
                bad.append(f"{kind} parameter {name}: {length}-bit string on the IP, {hwidth} bits in the HDL")
            if name in want and v != want[name]:
                bad.append(f"{kind} parameter {name} = {v:#x}, the export's is {want[name]:#x}")
        bad += [f"parameter {n} of {wrapper.top} is not set on the IP ({kind})" for n in wrapper.params
                if n not in objs]
    bad += [f"user parameter {n} is editable (the IP is one network's)" for n, o in user.items()
            if o.props.get("enablement_value") != "false"]
    return bad


# ---- registers ------------------------------------------------------------------------------
def check_registers(model: IpModel, hdl: Hdl) -> list[str]:
    """The address block is the RTL twin's register map of the engine specification, reachable
    with the control port's real address width, in the form pynq reads from the .hwh; the
    driver's own checks accept it and pick the RTL register map."""
    try:        # the driver's register checks (host/registers.py once the driver is split, issue 19)
        from zynqflow.host.registers import RegMap, check_register_offsets, engine_from_hwh
    except ImportError:
        from zynqflow.host.driver import RegMap, check_register_offsets, engine_from_hwh

    regs = model.registers()
    want = E.offsets("rtl")
    bad = [f"register {n} of the specification (0x{o:02x}) is not in the IP" for n, o in want.items() if n not in regs]
    bad += [f"register {n} is not in the specification's RTL map" for n in regs if n not in want]
    blocks = {(r["memory_map"], r["block"]) for r in regs.values()}
    if blocks != {("s_axi_control", "Reg")}:
        bad.append(f"registers in memory map / address blocks {sorted(blocks)}, expected s_axi_control / Reg")
    addr_port = model.port_maps("s_axi_control").get("AWADDR")
    reach = 1 << hdl.ports[addr_port].width if addr_port in hdl.ports else 0
    blk = next(iter(model.children("core|memory_map:s_axi_control", "address_block").values()), None)
    rng = size_bytes(blk.props.get("range", "0")) if blk else 0
    if blk is None or blk.props.get("usage") != "register":
        bad.append("address block Reg of s_axi_control: usage must be 'register' (pynq reads registers only from one)")
    used: dict[int, str] = {}
    for name, r in regs.items():
        off = r["address_offset"]
        if name in want and off != want[name]:
            bad.append(f"register {name} at 0x{off:02x}, the specification's at 0x{want[name]:02x}")
        if off % 4 or off + 4 > min(reach, rng):
            bad.append(f"register {name} at 0x{off:02x}: outside the {reach} bytes the {addr_port} reaches or the "
                       f"block's {rng}")
        if off in used:
            bad.append(f"registers {used[off]} and {name} both at 0x{off:02x}")
        used[off] = name
        if r["size"] != 32 or r["access"] not in ("read-only", "write-only", "read-write") or not r["description"]:
            bad.append(f"register {name}: size {r['size']}, access {r['access']!r}, description {r['description']!r} "
                       "(pynq reads SIZE, ACCESS and DESCRIPTION of every register)")
        for fname, f in r["fields"].items():
            if not 0 <= f["bit_offset"] < 32 or f["bit_width"] < 1 or f["access"] is None or f["description"] is None:
                bad.append(f"register {name} field {fname}: {f}")
    for reg, bits in (("AP_CTRL", E.AP_CTRL_BITS), ("ISR", E.ISR_BITS)):
        got = {n: f["bit_offset"] for n, f in regs.get(reg, {}).get("fields", {}).items()}
        if got != {b.name: b.bit for b in bits}:
            bad.append(f"register {reg} fields {got}, the specification's {({b.name: b.bit for b in bits})}")
    hwh = {n: dict(address_offset=r["address_offset"]) for n, r in regs.items()}
    try:
        compared = check_register_offsets(dict(RegMap("rtl").offsets), hwh)
        if set(compared) != set(RegMap("rtl").offsets):
            bad.append(f"the driver finds only {sorted(compared)} in the register names")
    except Exception as e:  # noqa: BLE001 -- the driver's own error, as a problem
        bad.append(f"the driver refuses the register map: {e}")
    if engine_from_hwh(hwh) != "rtl":
        bad.append("the driver would not pick the RTL register map from these registers")
    return bad




# ---- the IP's files ---------------------------------------------------------------------------
FILE_GROUPS = ("xilinx_anylanguagesynthesis", "xilinx_anylanguagebehavioralsimulation")


def check_files(model: IpModel) -> list[str]:
    """Both file groups hold the IP's sources, and every ``.svh`` header in them is an include file
    (``is_include``: IP-XACT's isIncludeFile in component.xml), every other file not: a header that
    is not one is compiled as a unit of its own by the IP's synthesis and simulation."""
    bad = []
    groups = model.files()
    bad += [f"file group {g} missing (the IP has {sorted(groups)})" for g in FILE_GROUPS if g not in groups]
    for g, files in sorted(groups.items()):
        if not files:
            bad.append(f"file group {g} holds no files")
        for name, f in sorted(files.items()):
            include = f.props.get("is_include", "false").lower() in ("true", "1")
            if name.endswith(".svh") and not include:
                bad.append(f"file {name} in {g}: a header, not marked an include file (is_include false)")
            elif not name.endswith((".svh", ".vh")) and include:
                bad.append(f"file {name} in {g}: marked an include file, but not a header")
    return bad


# ---- the block design --------------------------------------------------------------------------
def engine_pins(entry: dict) -> tuple[dict[str, str], list[str], list[str], dict[str, str]]:
    """A catalog entry's (:mod:`sim.world.vivado`) interfaces {name: mode}, its clock, reset and
    interrupt pins, its address spaces, its slave segments {segment: interface}."""
    intf = {n: p["mode"] for p in entry["intf_pins"] for n in p["names"]}
    pins = [n for p in entry["pins"] if p.get("bus") in ("clock", "reset", "interrupt") for n in p["names"]]
    spaces = [n for p in entry["addr_spaces"] for n in p["names"]]
    segs = {n: (p["intf"] or [""])[0] for p in entry["segments"] for n in p["names"]}
    return intf, pins, spaces, segs


def check_block_design(bd: BlockDesign, entry: dict, vlnv: str, regmap_bytes: int, ctrl_decode_bytes: int | None = None,
                       cell: str = "zq_top_0") -> list[str]:
    """The block design the mock built (its cells, CONFIG values, nets, interface connections and
    address map) against the engine's IP (``entry``, its catalog entry; ``vlnv``) and the rest of
    the project:

    * the engine's cell is that IP; every interface of it connected, its clock on FCLK_CLK0 (the
      PS clock at spec.engine.CLOCK_MHZ), its reset and interrupt connected;
    * each address space of the engine maps the DDR window (0, spec.engine.DDR_WINDOW_BYTES) of
      one HP port's DDR segment, by the script's own assign_bd_address (not left to the
      automatic one); that HP port enabled and as wide as the engine's masters (AXI_DATA_BITS);
    * the control registers (``regmap_bytes``) in one segment of ps7/Data, aligned; when the
      port decodes ``ctrl_decode_bytes``, the segment is exactly that (no register aliases in it);
    * the AXI DMA in simple mode, its length register as wide as sim/world/pg021.py models
      (DMA_MAX_LENGTH), its streams spec.engine.STREAM_BITS wide."""
    bad = []
    if bd.cells.get(cell) != vlnv:
        return [f"cell {cell} is {bd.cells.get(cell)!r}, not the engine's IP {vlnv}"]
    intf, pins, spaces, segs = engine_pins(entry)
    bad += [f"interface {cell}/{n} of the engine is not connected" for n in intf if f"{cell}/{n}" not in bd.intf]
    bad += [f"pin {cell}/{n} of the engine is not connected" for n in pins if not bd.connected(f"{cell}/{n}")]
    ps7 = next((c for c, v in bd.cells.items() if v.startswith("xilinx.com:ip:processing_system7:")), None)
    if ps7 is None:
        return bad + ["no processing_system7 in the block design"]
    ps_cfg = dict(V.reference().ips[bd.cells[ps7]]["defaults"], **bd.config.get(ps7, {}))
    clocks = [n for p in entry["pins"] if p.get("clock") for n in p["names"]]
    for clk in clocks:
        if f"{ps7}/FCLK_CLK0" not in bd.connected(f"{cell}/{clk}"):
            bad.append(f"{cell}/{clk} is not on {ps7}/FCLK_CLK0 (it is on {bd.connected(f'{cell}/{clk}')})")
    if ps_cfg.get("PCW_FPGA0_PERIPHERAL_FREQMHZ") != str(E.CLOCK_MHZ):
        bad.append(f"{ps7}: PCW_FPGA0_PERIPHERAL_FREQMHZ {ps_cfg.get('PCW_FPGA0_PERIPHERAL_FREQMHZ')}, the engine's "
                   f"clock is {E.CLOCK_MHZ} MHz (spec.engine.CLOCK_MHZ)")
    for s in spaces:
        maps = {seg: v for (sp, seg), v in bd.addr.items() if sp == f"{cell}/{s}"}
        if not maps:
            bad.append(f"address space {cell}/{s} is not mapped")
        for seg, (off, rng) in sorted(maps.items()):
            m = re.fullmatch(rf"{ps7}/S_AXI_(HP\d)/HP\d_DDR_LOWOCM", seg)
            if m is None or (off, rng) != (0, E.DDR_WINDOW_BYTES):
                bad.append(f"address space {cell}/{s}: {seg} at {off:#x}, {rng} bytes; the engine's DDR window is an "
                           f"HP port's DDR at 0, {E.DDR_WINDOW_BYTES} bytes")
            if (f"{cell}/{s}", seg) in bd.auto:
                bad.append(f"address space {cell}/{s}: {seg} mapped by the automatic assign_bd_address, not by the "
                           "script (its name for the space is not the engine's)")
            if m:
                hp = m[1]
                if ps_cfg.get(f"PCW_USE_S_AXI_{hp}") != "1" or \
                        ps_cfg.get(f"PCW_S_AXI_{hp}_DATA_WIDTH") != str(E.AXI_DATA_BITS):
                    bad.append(f"{ps7}/S_AXI_{hp}: PCW_USE_S_AXI_{hp} {ps_cfg.get(f'PCW_USE_S_AXI_{hp}')}, "
                               f"PCW_S_AXI_{hp}_DATA_WIDTH {ps_cfg.get(f'PCW_S_AXI_{hp}_DATA_WIDTH')}: the engine's "
                               f"masters are {E.AXI_DATA_BITS}-bit")
    ctrl = {seg: v for (sp, seg), v in bd.addr.items() if sp == f"{ps7}/Data" and seg.startswith(f"{cell}/")}
    if len(ctrl) != 1:
        bad.append(f"{cell}'s control registers: {len(ctrl)} segments in {ps7}/Data ({sorted(ctrl)})")
    for seg, (base, rng) in ctrl.items():
        on = segs.get(seg[len(cell) + 1:])
        if on is None or intf.get(on) != "slave":
            bad.append(f"{cell}'s control segment {seg} is no slave segment of the engine")
        if rng < regmap_bytes or base % rng:
            bad.append(f"{cell}'s control segment at {base:#x}, {rng} bytes: the register map needs {regmap_bytes}, "
                       "aligned")
        if ctrl_decode_bytes is not None and rng != ctrl_decode_bytes:
            bad.append(f"{cell}'s control segment is {rng} bytes, the port decodes {ctrl_decode_bytes}: the registers "
                       "would alias inside it")
    sg_bits = DMA_MAX_LENGTH.bit_length()
    for dma in [c for c, v in bd.cells.items() if v.startswith("xilinx.com:ip:axi_dma:")]:
        cfg = dict(V.reference().ips[bd.cells[dma]]["defaults"], **bd.config.get(dma, {}))
        want = {"C_INCLUDE_SG": "0", "C_SG_LENGTH_WIDTH": str(sg_bits),
                "C_M_AXIS_MM2S_TDATA_WIDTH": str(E.STREAM_BITS), "C_S_AXIS_S2MM_TDATA_WIDTH": str(E.STREAM_BITS)}
        bad += [f"{dma}: CONFIG.{k} {cfg.get(k)!r}, the project's {v} (simple mode, sim/world/pg021.py "
                f"DMA_MAX_LENGTH, spec.engine.STREAM_BITS)" for k, v in want.items() if cfg.get(k) != v]
    return bad


# ---- make check-board-scripts ------------------------------------------------------------------
FAKE_VIVADO = """#!/bin/sh
# stands in for Vivado: the script given with -source runs under the vendor-reference mock
# (zynqflow.sim.world.vivado); written by zynqflow.bench.board_check
exec {python} -m zynqflow.bench.board_check --as-vivado "$@"
"""
MOCK_VERSION = "Vivado mock (zynqflow sim/world/vivado_mock.tcl: the vendor's reference, not Vivado)"
PYNQ_Z2_BOARD = "tul.com.tw:pynq-z2:part0:1.0"


def as_vivado(argv: list[str]) -> int:
    """``vivado -mode batch ... -source <script> -tclargs <args>`` under the mock. The state
    (ZQ_MOCK_STATE): ``hdl.txt`` (the wrapper's ports, for ipx::package_project), the packaging
    run's log (the RTL twin's catalog entry for the block design), one directory per run
    (ZQ_MOCK_TAG), whose problems are appended to ``problems.txt``."""
    if "-version" in argv:
        print(MOCK_VERSION)
        return 0
    script = Path(argv[argv.index("-source") + 1])
    args = argv[argv.index("-tclargs") + 1:] if "-tclargs" in argv else []
    state = Path(os.environ["ZQ_MOCK_STATE"])
    run_dir = state / os.environ.get("ZQ_MOCK_TAG", "run") / script.stem
    env = {k: os.environ[k] for k in ("MOCK_BOARD", "MOCK_WNS", "MOCK_WHS", "MOCK_UTIL") if k in os.environ}
    env["root"] = Path(os.environ.get("ZQ_MOCK_ROOT", REPO))
    if script.name == "package_rtl_ip.tcl":
        r = V.run_mock(run_dir, script, args, MOCK_HDL=str(state / "hdl.txt"), **env)
        (state / "package.log").write_text(r.log)
    else:
        engine = args[4] if len(args) > 4 else "rtl"
        if engine == "rtl":
            ips = V.engine_entry("rtl", IpModel((state / "package.log").read_text()), _hdl_ports(state / "hdl.txt"))
        else:
            ips = V.engine_entry("hls")
        r = V.run_mock(run_dir, script, args, extra_ips=ips, MOCK_IPDEF=next(iter(ips)), **env)
    with open(state / "problems.txt", "a") as f:
        f.writelines(f"{p}\n" for p in r.problems)
    sys.stdout.write(r.proc.stdout)
    sys.stderr.write(r.proc.stderr)
    return r.returncode


def _hdl_ports(hdl_file: Path) -> dict[str, str]:
    return {f[1]: f[2] for f in (l.split() for l in hdl_file.read_text().splitlines()) if f and f[0] == "port"}


@dataclass
class BoardCheck:
    """What :func:`check_board_scripts` found: the mock's problems (``script:line: message``) and
    the checks' (``check: message``), each run's log."""

    problems: list[str] = field(default_factory=list)
    logs: dict[str, str] = field(default_factory=dict)


def check_board_scripts(export_dir: Path, workdir: Path, hdl: tuple[Hdl, Hdl] | None = None,
                        repo: Path = REPO) -> BoardCheck:
    """``board/bitstream.sh`` of ``repo`` for ``export_dir`` with the mock for Vivado:
    ENGINE=rtl (package_rtl_ip.tcl, then pynq_z2.tcl with the RTL twin's IP), ENGINE=hls
    (pynq_z2.tcl with the Vitis HLS IP), and ENGINE=hls with the PYNQ-Z2 board files installed
    (the board preset's path); then the checks above on what they built. ``hdl``: the parse of
    zq_top and of the wrapper (Verilator), when the caller has it."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = BoardCheck()
    wrapper_v = repo / "board" / "ip" / "zq_top_ip.v"
    if hdl is None:
        hdl = (parse_hdl("zq_top", rtl_files(), [REPO / "rtl", export_dir], workdir / "hdl-core"),
               parse_hdl("zq_top_ip", rtl_files(wrapper_v), [REPO / "rtl", export_dir], workdir / "hdl-wrapper"))
    core, wrapper = hdl
    state = workdir / "state"
    state.mkdir(exist_ok=True)
    (state / "problems.txt").write_text("")
    mock_hdl_file(wrapper, state / "hdl.txt")
    bindir = workdir / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / "vivado").write_text(FAKE_VIVADO.format(python=sys.executable))
    (bindir / "vivado").chmod(0o755)
    # the Vitis HLS IP bitstream.sh looks for (its catalog entry comes from hls/'s pragmas)
    hls_ip = workdir / "hls" / "zq_hls" / "solution1" / "impl" / "ip" / "component.xml"
    hls_ip.parent.mkdir(parents=True, exist_ok=True)
    hls_ip.write_text("<!-- stands for the Vitis HLS export of hls/ -->\n")
    runs = [("rtl", "rtl", {}), ("hls", "hls", {}), ("hls-board", "hls", {"MOCK_BOARD": PYNQ_Z2_BOARD})]
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MOCK_", "ZQ_MOCK_"))}
    net = json.loads((export_dir / "manifest.json").read_text())["network"]
    for tag, engine, extra in runs:
        env = dict(base, PATH=f"{bindir}:{os.environ['PATH']}", EXPORT=str(export_dir), HLS_DIR=str(workdir / "hls"),
                   RTL_IP_DIR=str(workdir / tag / "rtl_ip"), OUT=str(workdir / tag / "vivado"),
                   BITSTREAMS=str(workdir / tag / "bitstreams"), ENGINE=engine, ZQ_MOCK_STATE=str(state),
                   ZQ_MOCK_TAG=tag, ZQ_MOCK_ROOT=str(repo), **extra)
        r = subprocess.run(["bash", str(repo / "board" / "bitstream.sh"), net], capture_output=True, text=True,
                           env=env, timeout=300)
        if r.returncode != 0:
            said = [l for l in r.stderr.splitlines() if l.startswith("bitstream.sh:")] or r.stderr.splitlines()[-1:]
            out.problems.append(f"board/bitstream.sh (ENGINE={engine}{', board files' if extra else ''}): exit "
                                f"{r.returncode}: {' '.join(said)}")
        for log in sorted((state / tag).glob("*/vivado_mock.log")):
            out.logs[f"{tag}/{log.parent.name}"] = log.read_text()
    out.problems += [p for p in (state / "problems.txt").read_text().splitlines() if p]
    package_log = out.logs.get("rtl/package_rtl_ip", "")
    if not package_log:
        out.problems.append("check: board/ip/package_rtl_ip.tcl did not run")
        return out
    model = IpModel(package_log)
    for name, bad in (("pass-through", check_pass_through(wrapper, core)),
                      ("interfaces", check_interfaces(model, wrapper, core)),
                      ("parameters", check_parameters(model, wrapper, export_dir)),
                      ("registers", check_registers(model, wrapper)),
                      ("files", check_files(model))):
        out.problems += [f"check {name}: {b}" for b in bad]
    rtl_entry = V.rtl_ip_entry(model, {p.name: p.direction for p in wrapper.ports.values()})
    for tag, engine, _ in runs:
        log = out.logs.get(f"{tag}/pynq_z2")
        if log is None:
            out.problems.append(f"check block design ({tag}): board/pynq_z2.tcl did not run")
            continue
        entry, vlnv = (rtl_entry, V.RTL_VLNV) if engine == "rtl" else (V.hls_ip_entry(), V.HLS_VLNV)
        regs = E.REGMAP_RTL if engine == "rtl" else E.REGMAP_HLS
        bad = check_block_design(BlockDesign.from_log(log), entry, vlnv, max(r.offset + r.footprint for r in regs),
                                 E.CTRL_SEGMENT_BYTES if engine == "rtl" else None)
        out.problems += [f"check block design ({tag}): {b}" for b in bad]
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--as-vivado"]:
        return as_vivado(argv[1:])
    import argparse
    import tempfile

    ap = argparse.ArgumentParser(prog="python -m zynqflow.bench.board_check", description=__doc__.split("\n\n")[0])
    ap.add_argument("export", nargs="?", type=Path, help="an export directory (default: a seeded zynqnet-tiny export)")
    ap.add_argument("--workdir", type=Path, help="where the runs go (default: a temporary directory)")
    a = ap.parse_args(argv)
    if a.export is None:
        from zynqflow.export import fixtures

        a.export = fixtures.random_export("zynqnet-tiny", seed=0, vectors=16)
    with tempfile.TemporaryDirectory(prefix="board_check-") as tmp:
        # absolute: bitstream.sh runs Vivado from its output directory (make passes build/<net>/export)
        res = check_board_scripts(Path(a.export).resolve(), a.workdir or Path(tmp))
    for p in res.problems:
        print(p)
    runs = ", ".join(sorted(res.logs))
    if res.problems:
        print(f"check-board-scripts: {len(res.problems)} problem(s) (runs: {runs})", file=sys.stderr)
        return 1
    print(f"check-board-scripts: no problems (runs: {runs}; the Vivado mock, not Vivado)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
