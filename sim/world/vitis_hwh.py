"""A ``.hwh`` as Vivado writes one for our block design, and read back as pynq 3.x reads it.

:func:`hls_control_registers` lays out the ``s_axilite`` control registers of the HLS top function
the way Vitis HLS does (UG1399, "S_AXILITE Control Register Map"), from what Vitis reads: the
``#pragma HLS INTERFACE`` lines and the signature of ``zq_top`` in ``hls/``, not from
:mod:`zynqflow.spec.engine`:

* ``CTRL`` (0x00: AP_START 0, AP_DONE 1, AP_IDLE 2, AP_READY 3, AUTO_RESTART 7, INTERRUPT 9),
  ``GIER`` (0x04), ``IP_IER`` (0x08: CHAN0_INT_EN ap_done, CHAN1_INT_EN ap_ready), ``IP_ISR`` (0x0C,
  toggle on write);
* a pointer argument with ``offset=slave`` (an ``m_axi`` base address, 64 bits): ``<name>_1`` (bits
  31:0) and ``<name>_2`` (63:32);
* a scalar output (a non-const reference): ``<name>`` (read-only data) and ``<name>_ctrl`` (bit 0
  ``<name>_ap_vld``, clear on read);
* each at the ``offset=`` its pragma gives.

:func:`write_hwh` writes the ``component.xml``-style register description into the accelerator's
``<MODULE>`` (``ADDRESSBLOCKS/ADDRESSBLOCK/REGISTERS/REGISTER`` with ``PROPERTY`` and ``FIELDS``), the
Zynq PS with its FCLK0 parameters, the AXI DMA; :func:`read_hwh` parses it as pynq's
``HWH`` parser does (``ip_dict[name]["registers"]``: ``address_offset``, ``size``, ``access``,
``description``, ``fields``).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from zynqflow.spec.paths import REPO

HLS_DIR = REPO / "hls"
ACCEL_VLNV = "zynqflow.org:hls:zq_top:1.0"
PS7_VLNV = "xilinx.com:ip:processing_system7:5.5"
DMA_VLNV = "xilinx.com:ip:axi_dma:7.1"

# UG1399: the block-level registers of ap_ctrl_hs with s_axilite (Vitis 2022.2 and later: ISR toggle on write)
CTRL_FIELDS = (("AP_START", 0, "read-write", "Control signal Register for 'ap_start'."),
               ("AP_DONE", 1, "read-only", "Control signal Register for 'ap_done'. Clear on read."),
               ("AP_IDLE", 2, "read-only", "Control signal Register for 'ap_idle'."),
               ("AP_READY", 3, "read-only", "Control signal Register for 'ap_ready'. Clear on read."),
               ("AUTO_RESTART", 7, "read-write", "Control signal Register for 'auto_restart'."),
               ("INTERRUPT", 9, "read-only", "Control signal Register for 'interrupt'."))
BLOCK_REGISTERS = (
    ("CTRL", 0x00, "read-write", "Control signals", CTRL_FIELDS),
    ("GIER", 0x04, "read-write", "Global Interrupt Enable Register",
     (("Enable", 0, "read-write", "Master enable for the device interrupt output to the system interrupt controller"),)),
    ("IP_IER", 0x08, "read-write", "IP Interrupt Enable Register",
     (("CHAN0_INT_EN", 0, "read-write", "Enable Channel 0 (ap_done) Interrupt"),
      ("CHAN1_INT_EN", 1, "read-write", "Enable Channel 1 (ap_ready) Interrupt"))),
    ("IP_ISR", 0x0C, "read-write", "IP Interrupt Status Register",
     (("CHAN0_INT_ST", 0, "read-write", "Channel 0 (ap_done) Interrupt Status. Toggle on write."),
      ("CHAN1_INT_ST", 1, "read-write", "Channel 1 (ap_ready) Interrupt Status. Toggle on write."))),
)


def _hls_text(hls_dir: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in sorted(hls_dir.rglob("*")) if p.suffix in (".h", ".cpp"))


def top_signature(hls_dir: Path = HLS_DIR, top: str = "zq_top") -> list[tuple[str, str]]:
    """The arguments of the top function's declaration: [(type, name), ...]."""
    m = re.search(rf"\bvoid\s+{top}\s*\(([^)]*)\)\s*;", _hls_text(hls_dir))
    if m is None:
        raise ValueError(f"no declaration of {top}(...) in {hls_dir}")
    args = []
    for a in re.sub(r"\s+", " ", m.group(1)).split(","):
        a = a.strip()
        mm = re.match(r"(.*?)([A-Za-z_]\w*)$", a)
        args.append((mm.group(1).strip(), mm.group(2)))
    return args


def hls_control_registers(hls_dir: Path = HLS_DIR, top: str = "zq_top") -> list[dict]:
    """The ``s_axilite`` registers Vitis generates for ``top`` (module docstring), in offset order:
    [{"name", "offset", "access", "description", "fields": [(name, bit, width, access, doc)]}]."""
    text = _hls_text(hls_dir)
    axilite = {m.group(1): int(m.group(2), 0)
               for m in re.finditer(r"mode=s_axilite\s+port=(\w+)\s+offset=(0x[0-9A-Fa-f]+|\d+)", text)}
    maxi = set(re.findall(r"mode=m_axi\s+port=(\w+)", text))
    regs = [dict(name=n, offset=o, access=acc, description=d,
                 fields=[(f, b, 1, fa, fd) for f, b, fa, fd in fl]) for n, o, acc, d, fl in BLOCK_REGISTERS]
    for typ, name in top_signature(hls_dir, top):
        if name not in axilite:
            continue
        off = axilite[name]
        if name in maxi or "*" in typ:          # an m_axi base address: 64 bits in two words
            regs.append(dict(name=f"{name}_1", offset=off, access="write-only", description=f"Data signal of {name}",
                             fields=[(name, 0, 32, "write-only", f"Bit 31 to 0 of {name}")]))
            regs.append(dict(name=f"{name}_2", offset=off + 4, access="write-only",
                             description=f"Data signal of {name}",
                             fields=[(name, 0, 32, "write-only", f"Bit 63 to 32 of {name}")]))
        elif "&" in typ and not typ.startswith("const"):   # a scalar output with ap_vld
            regs.append(dict(name=name, offset=off, access="read-only", description=f"Data signal of {name}",
                             fields=[(name, 0, 32, "read-only", f"Bit 31 to 0 of {name}")]))
            regs.append(dict(name=f"{name}_ctrl", offset=off + 4, access="read-only",
                             description=f"Control signal of {name}",
                             fields=[(f"{name}_ap_vld", 0, 1, "read-only", f"Control signal {name}_ap_vld")]))
        else:                                               # a scalar input
            regs.append(dict(name=name, offset=off, access="write-only", description=f"Data signal of {name}",
                             fields=[(name, 0, 32, "write-only", f"Bit 31 to 0 of {name}")]))
    return sorted(regs, key=lambda r: r["offset"])


def registers_from_offsets(offsets: dict[str, int]) -> list[dict]:
    """The same description for a register list given as name -> offset (the RTL twin's IP)."""
    return [dict(name=n, offset=int(o), access="read-write", description=n, fields=[(n, 0, 32, "read-write", n)])
            for n, o in sorted(offsets.items(), key=lambda kv: kv[1])]


def _prop(parent, name, value):
    ET.SubElement(parent, "PROPERTY", NAME=name, VALUE=str(value))


def write_hwh(path, registers: list[dict], *, fclk_mhz: float = 100.0, accel: str = "zq_top_0",
              dma: str | None = "axi_dma_0", accel_vlnv: str = ACCEL_VLNV, reg_range: int = 0x10000) -> Path:
    """A ``.hwh`` for the block design with the accelerator's ``registers``."""
    root = ET.Element("EDKSYSTEM", EDWVERSION="1.2", VIVADOVERSION="2023.2")
    ET.SubElement(root, "SYSTEMINFO", ARCH="zynq", DEVICE="7z020", NAME="zq_pynq_z2", PACKAGE="clg400",
                  SPEEDGRADE="-1")
    mods = ET.SubElement(root, "MODULES")
    ps = ET.SubElement(mods, "MODULE", FULLNAME="/processing_system7_0", INSTANCE="processing_system7_0",
                       MODTYPE="processing_system7", VLNV=PS7_VLNV)
    pars = ET.SubElement(ps, "PARAMETERS")
    for k, v in (("PCW_FPGA0_PERIPHERAL_FREQMHZ", f"{fclk_mhz:g}"), ("PCW_ACT_FPGA0_PERIPHERAL_FREQMHZ", f"{fclk_mhz:.6f}")):
        ET.SubElement(pars, "PARAMETER", NAME=k, VALUE=v)
    mm = ET.SubElement(ps, "MEMORYMAP")
    ips = [(accel, 0x4000_0000, "s_axi_control")] + ([(dma, 0x4040_0000, "S_AXI_LITE")] if dma else [])
    for inst, base, bus in ips:
        ET.SubElement(mm, "MEMRANGE", ADDRESSBLOCK="Reg", BASEVALUE=f"0x{base:08X}",
                      HIGHVALUE=f"0x{base + reg_range - 1:08X}", INSTANCE=inst, MASTERBUSINTERFACE="M_AXI_GP0",
                      MEMTYPE="REGISTER", SLAVEBUSINTERFACE=bus)
    acc = ET.SubElement(mods, "MODULE", FULLNAME=f"/{accel}", INSTANCE=accel, MODTYPE="zq_top", VLNV=accel_vlnv)
    block = ET.SubElement(ET.SubElement(acc, "ADDRESSBLOCKS"), "ADDRESSBLOCK", ACCESS="read-write",
                          INTERFACE="s_axi_control", NAME="Reg", RANGE=str(reg_range), USAGE="register")
    regs_el = ET.SubElement(block, "REGISTERS")
    for r in registers:
        re_ = ET.SubElement(regs_el, "REGISTER", NAME=r["name"])
        _prop(re_, "DESCRIPTION", r["description"])
        _prop(re_, "ADDRESS_OFFSET", r["offset"])
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
        d = ET.SubElement(mods, "MODULE", FULLNAME=f"/{dma}", INSTANCE=dma, MODTYPE="axi_dma", VLNV=DMA_VLNV)
        pars = ET.SubElement(d, "PARAMETERS")
        for k, v in (("C_INCLUDE_SG", "0"), ("C_SG_LENGTH_WIDTH", "23"), ("C_INCLUDE_MM2S", "1"),
                     ("C_INCLUDE_S2MM", "1")):
            ET.SubElement(pars, "PARAMETER", NAME=k, VALUE=v)
    path = Path(path)
    ET.ElementTree(root).write(path, encoding="UTF-8", xml_declaration=True)
    return path


def _int(v: str) -> int:
    return int(v, 0) if isinstance(v, str) else int(v)


def read_hwh(path) -> dict:
    """``ip_dict`` as pynq 3.x's HWH parser builds it (the parts the driver reads): per module
    ``type`` (VLNV), ``fullpath``, ``phys_addr``/``addr_range`` (from the PS's memory map),
    ``parameters`` and ``registers``."""
    root = ET.parse(path).getroot()
    ranges = {m.get("INSTANCE"): m for m in root.iter("MEMRANGE")}
    out = {}
    for mod in root.iter("MODULE"):
        name = mod.get("FULLNAME", "").lstrip("/")
        d = dict(type=mod.get("VLNV"), fullpath=name, interrupts={}, gpio={},
                 parameters={p.get("NAME"): p.get("VALUE") for p in mod.findall("./PARAMETERS/*[@NAME][@VALUE]")})
        r = ranges.get(mod.get("INSTANCE"))
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
                        access=k.find('./PROPERTY/[@NAME="ACCESS"]').get("VALUE"))
                        for k in j.findall("./FIELDS/FIELD/[@NAME]")})
                for j in regs}
        out[name] = d
    return out
