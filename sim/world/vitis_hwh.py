"""A ``.hwh`` as Vivado writes one for our block design, readable by pynq's own parser, and read back
as pynq 3.x reads it.

:func:`write_hwh` writes what ``pynqmetadata``'s ``HwhFrontend`` (pynq 3.x's ``.hwh`` parser:
``pynq.Overlay`` -> ``RuntimeMetadataParser(Metadata(input=hwh))``) needs to build ``ip_dict``,
``interrupt_controllers`` and ``interrupt_pins``, in the layout of a Vivado-written handoff (the
PYNQ resizer overlay's, ``pynqmetadata/tests/hwhs/resizer.hwh``, Vivado 2019.2, is the reference):

* ``EDKSYSTEM`` (``VIVADOVERSION``, ``TIMESTAMP``: when the block design was generated) and
  ``SYSTEMINFO`` (``NAME`` the block design, ``DEVICE``, ``PACKAGE``), an ``EXTERNALPORTS`` element;
* one ``MODULE`` per cell, with ``PARAMETERS``, scalar ``PORTS`` (``CONNECTIONS`` to the ports they
  are wired to) and ``BUSINTERFACES`` (``aximm`` master / slave);
* the Zynq PS (``processing_system7``): its FCLK0 parameters, ``M_AXI_GP0`` and, in its
  ``MEMORYMAP``, one ``MEMRANGE`` per register block it reaches (``MASTERBUSINTERFACE``,
  ``SLAVEBUSINTERFACE``, base and high address): where pynq finds ``phys_addr`` and ``addr_range``;
* the accelerator's ``ADDRESSBLOCK`` (``USAGE="register"``) with one ``REGISTER`` per register
  (``PROPERTY`` ``DESCRIPTION``, ``ADDRESS_OFFSET``, ``SIZE``, ``ACCESS``, ``IS_ENABLED``, and
  ``FIELDS``): pynq's ``ip_dict[ip]["registers"]``;
* the interrupt path of ``board/pynq_z2.tcl``: ``zq_top_0/interrupt`` and the DMA's
  ``mm2s_introut`` / ``s2mm_introut`` into an ``xlconcat`` (``In0``..``In2``), its ``dout`` into an
  ``axi_intc``, whose ``irq`` goes to the PS's ``IRQ_F2P``.

:func:`hls_control_registers` lays the HLS engine's registers out from ``zq_top``'s argument list
and interface pragmas (:mod:`zynqflow.sim.world.vitis_axilite`, UG1399's rules); :func:`read_hwh`
is the part of pynq's parser the simulations use (``type``, ``phys_addr``, ``addr_range``,
``parameters``, ``registers``, ``interrupts``), checked against pynq's own in the tests.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

ACCEL_VLNV = "zynqflow.org:hls:zq_top:1.0"
PS7_VLNV = "xilinx.com:ip:processing_system7:5.5"
DMA_VLNV = "xilinx.com:ip:axi_dma:7.1"
INTC_VLNV = "xilinx.com:ip:axi_intc:4.1"
CONCAT_VLNV = "xilinx.com:ip:xlconcat:2.1"
AXIMM = "xilinx.com:interface:aximm:1.0"
BD_NAME = "zq_pynq_z2"                         # the block design of board/pynq_z2.tcl
VIVADO_VERSION = "2023.2"
ACCEL_BASE, DMA_BASE, INTC_BASE = 0x4000_0000, 0x4040_0000, 0x4180_0000


def hls_control_registers(export_dir, ap_types, hls_dir=None) -> list[dict]:
    """The ``s_axilite`` registers Vitis generates for ``zq_top`` (built for the export in
    ``export_dir``; ``ap_types``: the ap_types headers' directory), from its argument list and
    interface pragmas (:mod:`~zynqflow.sim.world.vitis_axilite`), as :func:`write_hwh` takes them:
    [{"name", "offset", "access", "description", "fields"}]."""
    from zynqflow.sim.world import vitis_axilite as V

    regs = V.top_from_source(export_dir, ap_types, **({"hls_dir": Path(hls_dir)} if hls_dir else {}))
    return [dict(name=r.name, offset=r.offset, access=r.access, description=r.description, fields=list(r.fields))
            for r in regs]


def registers_from_offsets(offsets: dict[str, int]) -> list[dict]:
    """The same description for a register list given as name -> offset (the RTL twin's IP)."""
    return [dict(name=n, offset=int(o), access="read-write", description=n, fields=[(n, 0, 32, "read-write", n)])
            for n, o in sorted(offsets.items(), key=lambda kv: kv[1])]


def _prop(parent, name, value):
    ET.SubElement(parent, "PROPERTY", NAME=name, VALUE=str(value))


def _module(mods, inst, vlnv, modtype, **attrs):
    m = ET.SubElement(mods, "MODULE", FULLNAME=f"/{inst}", INSTANCE=inst, MODTYPE=modtype, VLNV=vlnv, **attrs)
    return m, ET.SubElement(m, "PARAMETERS"), ET.SubElement(m, "PORTS"), ET.SubElement(m, "BUSINTERFACES")


def _port(ports, name, direction, to=(), left=None):
    p = ET.SubElement(ports, "PORT", DIR=direction, NAME=name, SIGIS="INTERRUPT" if "intr" in name or name in (
        "interrupt", "irq", "IRQ_F2P") else "undef", **({"LEFT": str(left), "RIGHT": "0"} if left is not None else {}))
    if to:
        cons = ET.SubElement(p, "CONNECTIONS")
        for inst, port in to:
            ET.SubElement(cons, "CONNECTION", INSTANCE=inst, PORT=port)
    return p


def _bus(bifs, name, kind):
    ET.SubElement(bifs, "BUSINTERFACE", BUSNAME=f"bus_{name}", DATAWIDTH="32", NAME=name, TYPE=kind, VLNV=AXIMM)


def write_hwh(path, registers: list[dict], *, fclk_mhz: float = 100.0, accel: str = "zq_top_0",
              dma: str | None = "axi_dma_0", accel_vlnv: str = ACCEL_VLNV, reg_range: int = 0x10000,
              timestamp: str = "Mon Nov 27 10:12:33 2023", vivado_version: str = VIVADO_VERSION,
              bd_name: str = BD_NAME, interrupts: bool = True) -> Path:
    """A ``.hwh`` of the block design with the accelerator's ``registers`` (module docstring)."""
    root = ET.Element("EDKSYSTEM", EDWVERSION="1.2", TIMESTAMP=timestamp, VIVADOVERSION=vivado_version)
    ET.SubElement(root, "SYSTEMINFO", ARCH="zynq", DEVICE="7z020", NAME=bd_name, PACKAGE="clg400", SPEEDGRADE="-1")
    ET.SubElement(root, "EXTERNALPORTS")
    mods = ET.SubElement(root, "MODULES")
    irq = interrupts and dma is not None
    ps, pars, ports, bifs = _module(mods, "processing_system7_0", PS7_VLNV, "processing_system7", IS_PL="FALSE")
    divisor = round(1000 / fclk_mhz)
    clocks = [(f"PCW_FPGA_FCLK{i}_ENABLE", str(int(i == 0))) for i in range(4)] + \
        [(f"PCW_FCLK{i}_PERIPHERAL_DIVISOR{j}", str(divisor if (i, j) == (0, 0) else 1)) for i in range(4) for j in (0, 1)]
    for k, v in [("PCW_FPGA0_PERIPHERAL_FREQMHZ", f"{fclk_mhz:g}"),
                 ("PCW_ACT_FPGA0_PERIPHERAL_FREQMHZ", f"{fclk_mhz:.6f}")] + clocks:
        ET.SubElement(pars, "PARAMETER", NAME=k, VALUE=v)
    if irq:
        _port(ports, "IRQ_F2P", "I", [("axi_intc_0", "irq")], left=0)
    _bus(bifs, "M_AXI_GP0", "MASTER")
    mm = ET.SubElement(ps, "MEMORYMAP")
    blocks = [(accel, ACCEL_BASE, "s_axi_control", reg_range)] + ([(dma, DMA_BASE, "S_AXI_LITE", 0x10000)] if dma else [])
    if irq:
        blocks.append(("axi_intc_0", INTC_BASE, "s_axi", 0x10000))
    for inst, base, bus, size in blocks:
        ET.SubElement(mm, "MEMRANGE", ADDRESSBLOCK="Reg", BASENAME="C_BASEADDR", BASEVALUE=f"0x{base:08X}",
                      HIGHNAME="C_HIGHADDR", HIGHVALUE=f"0x{base + size - 1:08X}", INSTANCE=inst, IS_DATA="TRUE",
                      IS_INSTRUCTION="TRUE", MASTERBUSINTERFACE="M_AXI_GP0", MEMTYPE="REGISTER", SLAVEBUSINTERFACE=bus)
    acc, _, ports, bifs = _module(mods, accel, accel_vlnv, "zq_top")
    if irq:
        _port(ports, "interrupt", "O", [("irq_concat", "In0")])
    _bus(bifs, "s_axi_control", "SLAVE")
    block = ET.SubElement(ET.SubElement(acc, "ADDRESSBLOCKS"), "ADDRESSBLOCK", ACCESS="read-write",
                          INTERFACE="s_axi_control", NAME="Reg", RANGE=str(reg_range), USAGE="register")
    regs_el = ET.SubElement(block, "REGISTERS")
    for r in registers:
        re_ = ET.SubElement(regs_el, "REGISTER", NAME=r["name"])
        _prop(re_, "DESCRIPTION", r["description"])
        _prop(re_, "ADDRESS_OFFSET", f"0x{int(r['offset']):x}")
        _prop(re_, "SIZE", 32)
        _prop(re_, "ACCESS", r["access"])
        _prop(re_, "IS_ENABLED", "true")
        _prop(re_, "RESET_VALUE", "0x0")
        fl = ET.SubElement(re_, "FIELDS")
        for fname, bit, width, facc, fdoc in r["fields"]:
            f = ET.SubElement(fl, "FIELD", NAME=fname)
            _prop(f, "DESCRIPTION", fdoc)
            _prop(f, "ADDRESS_OFFSET", 0)
            _prop(f, "ACCESS", facc)
            _prop(f, "BIT_OFFSET", bit)
            _prop(f, "BIT_WIDTH", width)
    if dma:
        _, pars, ports, bifs = _module(mods, dma, DMA_VLNV, "axi_dma")
        for k, v in (("C_INCLUDE_SG", "0"), ("C_SG_LENGTH_WIDTH", "23"), ("C_INCLUDE_MM2S", "1"),
                     ("C_INCLUDE_S2MM", "1")):
            ET.SubElement(pars, "PARAMETER", NAME=k, VALUE=v)
        if irq:
            _port(ports, "mm2s_introut", "O", [("irq_concat", "In1")])
            _port(ports, "s2mm_introut", "O", [("irq_concat", "In2")])
        _bus(bifs, "S_AXI_LITE", "SLAVE")
    if irq:
        _, pars, ports, _ = _module(mods, "irq_concat", CONCAT_VLNV, "xlconcat")
        ET.SubElement(pars, "PARAMETER", NAME="NUM_PORTS", VALUE="3")
        for i, (inst, port) in enumerate(((accel, "interrupt"), (dma, "mm2s_introut"), (dma, "s2mm_introut"))):
            _port(ports, f"In{i}", "I", [(inst, port)], left=0)
        _port(ports, "dout", "O", [("axi_intc_0", "intr")], left=2)
        _, pars, ports, bifs = _module(mods, "axi_intc_0", INTC_VLNV, "axi_intc")
        ET.SubElement(pars, "PARAMETER", NAME="C_NUM_INTR_INPUTS", VALUE="3")
        _port(ports, "intr", "I", [("irq_concat", "dout")], left=2)
        _port(ports, "irq", "O", [("processing_system7_0", "IRQ_F2P")])
        _bus(bifs, "s_axi", "SLAVE")
    path = Path(path)
    ET.ElementTree(root).write(path, encoding="UTF-8", xml_declaration=True)
    return path


def _int(v: str) -> int:
    return int(v, 0) if isinstance(v, str) else int(v)


def read_hwh(path) -> dict:
    """``ip_dict`` as pynq 3.x's parser builds it (the parts the simulations read): per IP the PS
    reaches, ``type`` (VLNV), ``fullpath``, ``phys_addr``/``addr_range`` (from the PS's memory map),
    ``parameters``, ``registers`` and ``interrupts`` (pin -> {"controller", "index"}: the position of
    the pin on the concat in front of the ``axi_intc``); and the PS itself (its parameters)."""
    root = ET.parse(path).getroot()
    mods = {m.get("INSTANCE"): m for m in root.iter("MODULE")}
    ranges = {m.get("INSTANCE"): m for m in root.iter("MEMRANGE") if m.get("MEMTYPE") == "REGISTER"}
    irq_index = {}
    for m in mods.values():
        if m.get("MODTYPE") == "xlconcat":
            for p in m.iter("PORT"):
                if p.get("NAME", "").startswith("In"):
                    for c in p.iter("CONNECTION"):
                        irq_index[(c.get("INSTANCE"), c.get("PORT"))] = int(p.get("NAME")[2:])
    intc = next((n for n, m in mods.items() if m.get("MODTYPE") == "axi_intc"), None)
    out = {}
    for inst, mod in mods.items():
        r = ranges.get(inst)
        if r is None and mod.get("MODTYPE") != "processing_system7":
            continue
        name = mod.get("FULLNAME", "").lstrip("/")
        d = dict(type=mod.get("VLNV"), fullpath=name, gpio={},
                 parameters={p.get("NAME"): p.get("VALUE") for p in mod.findall("./PARAMETERS/*[@NAME][@VALUE]")},
                 interrupts={pin: dict(controller=intc, index=i) for (i_inst, pin), i in irq_index.items()
                             if i_inst == inst})
        if r is not None:
            d["phys_addr"] = _int(r.get("BASEVALUE"))
            d["addr_range"] = _int(r.get("HIGHVALUE")) - d["phys_addr"] + 1
        regs = mod.findall(".//REGISTERS/*[@NAME]")
        if regs:
            d["registers"] = {
                j.get("NAME"): dict(
                    address_offset=_int(j.find('./PROPERTY/[@NAME="ADDRESS_OFFSET"]').get("VALUE")),
                    size=_int(j.find('./PROPERTY/[@NAME="SIZE"]').get("VALUE")),
                    access=j.find('./PROPERTY/[@NAME="ACCESS"]').get("VALUE"),
                    description=j.find('./PROPERTY/[@NAME="DESCRIPTION"]').get("VALUE"),
                    fields={k.get("NAME"): dict(
                        bit_offset=_int(k.find('./PROPERTY/[@NAME="BIT_OFFSET"]').get("VALUE")),
                        bit_width=_int(k.find('./PROPERTY/[@NAME="BIT_WIDTH"]').get("VALUE")),
                        access=k.find('./PROPERTY/[@NAME="ACCESS"]').get("VALUE"),
                        description=k.find('./PROPERTY/[@NAME="DESCRIPTION"]').get("VALUE"))
                        for k in j.findall("./FIELDS/FIELD/[@NAME]")})
                for j in regs}
        out[name] = d
    return out


def pynq_ip_dict(path) -> tuple[dict, dict]:
    """(``ip_dict``, ``interrupt_pins``) as pynq itself builds them from ``path`` (needs pynq)."""
    from pynq.metadata.runtime_metadata_parser import RuntimeMetadataParser
    from pynqmetadata.frontends import Metadata

    p = RuntimeMetadataParser(Metadata(input=str(path)))
    return p.ip_dict, p.interrupt_pins


def write_bitfile(path, design: str = f"{BD_NAME}_wrapper", part: str = "7z020clg400", date: str = "2023/11/27",
                  time: str = "11:41:05", version: str = VIVADO_VERSION, payload: bytes = b"\xff" * 64) -> Path:
    """A ``.bit`` with the header Vivado's ``write_bitstream`` puts in front of the configuration data,
    in the layout pynq's ``parse_bit_header`` (``pynq/pl_server/embedded_device.py``) reads: a
    2-byte length and that many bytes of preamble, two bytes (1), then fields 'a' (design and
    options, ``;``-separated, ``Version=`` last), 'b' (part), 'c' (date), 'd' (time), each with a
    2-byte big-endian length and a NUL-terminated string, then 'e' with a 4-byte length and the data."""
    import struct

    def field(key: str, text: str) -> bytes:
        b = text.encode("ascii") + b"\0"
        return key.encode() + struct.pack(">H", len(b)) + b

    pre = bytes([0x0F, 0xF0, 0x0F, 0xF0, 0x0F, 0xF0, 0x0F, 0xF0, 0x00])
    data = (struct.pack(">H", len(pre)) + pre + struct.pack(">H", 1)
            + field("a", f"{design};COMPRESS=TRUE;UserID=0XFFFFFFFF;Version={version}") + field("b", part)
            + field("c", date) + field("d", time) + b"e" + struct.pack(">I", len(payload)) + payload)
    path = Path(path)
    path.write_bytes(data)
    return path
