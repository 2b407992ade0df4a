"""Where Vitis HLS puts the ``s_axilite`` registers of a top function, from what Vitis reads: the
function's argument list and its ``#pragma HLS INTERFACE`` lines, as the C preprocessor leaves them
(UG1399, "S_AXILITE Interface" and "S_AXILITE Control Register Map"). Nothing here comes from
:mod:`zynqflow.spec.engine`; the tests compare the result with it.

The rules, as UG1399 gives them and as the register maps Vitis writes into the generated
``<top>_control_s_axi.v`` (and the driver's ``x<top>_hw.h``) show them:

* 0x00 ``CTRL``, 0x04 ``GIER``, 0x08 ``IP_IER``, 0x0C ``IP_ISR``: the block-level protocol
  (``ap_ctrl_hs`` on ``port=return`` in the same bundle); the arguments start at 0x10;
* an argument with ``offset=<n>`` is placed at ``n``; without one, at the first free word after the
  argument before it (argument order);
* a scalar input of up to 32 bits: its data word, then a reserved word (8 bytes);
* a 64-bit input, or a pointer with ``mode=m_axi ... offset=slave`` (the memory's base address,
  64 bits under Vitis's default ``-m_axi_addr64``): data words 31:0 and 63:32, then a reserved
  word (12 bytes); ``.hwh`` names ``<name>_1`` and ``<name>_2``;
* a scalar output (a non-const reference or pointer; ``ap_vld`` by default): its data word (read
  only), then a control word, bit 0 ``<name>_ap_vld`` (clear on read); ``.hwh`` names ``<name>``
  and ``<name>_ctrl``. How far after it Vitis places an *unpinned* next argument differs between
  releases (+0x08 and +0x10 both appear in generated maps of ap_vld outputs), so an argument that
  follows an output must carry ``offset=`` (``zq_top`` pins every register) -- refused otherwise;
* two arguments' words never overlap (Vitis refuses such offsets); every offset is word-aligned.

The generated maps these rules were checked against (``tests/test_host_hls.py`` rebuilds them from
the functions' argument lists):

==============================================  =======  ==============================================
repository, file                                Vitis    arguments
==============================================  =======  ==============================================
mahyarsamani/sega-fpga, GPNKernelv1/imports/    2022.1   ``GPNControl`` (u32) 0x10, ``FirstMessage``
rtl_kernel_wizard_0_control_s_axi.v                      (64 bits) 0x18/0x1c, ``MemoryOffset0..16`` 0x24
                                                         .. 0xa4, ``TotalEdgeSize`` 0xac
CTSRD-CHERI/cheri-hls, examples/vect_mult/      2023.1   ``size``, ``a``, ``b``, ``c`` (pointers, m_axi)
vect_mult_prj/solution1/.autopilot/db/coregen/           0x10, 0x1c, 0x28, 0x34
vect_mult_control_s_axi.v
soheilbh/fpga-vs-cpu-realtime-vision, hls_syn/  2024.2   ``result`` (8-bit output, ap_vld): data 0x10,
hls_design_output/solution1/impl/ip/hdl/                 control 0x14
verilog/detect_and_recognize_control_s_axi.v
==============================================  =======  ==============================================

:func:`top_from_source` runs the preprocessor on the HLS source (``g++ -E``, the include path the C
simulation uses: the export's ``net_params.h``, ``hls/``, the ``ap_types`` the caller names); the interface pragmas of
``zq_top`` sit outside any ``__SYNTHESIS__`` conditional, so what it sees is what Vitis sees.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from zynqflow.spec.paths import REPO

HLS_DIR = REPO / "hls"
FIRST_ARG_OFFSET = 0x10
BLOCK = (("CTRL", 0x00), ("GIER", 0x04), ("IP_IER", 0x08), ("IP_ISR", 0x0C))


class AxiliteError(ValueError):
    """The interface cannot be laid out the way Vitis would (names the port and the rule)."""


@dataclass(frozen=True)
class Arg:
    """One argument of the top function as Vitis classifies it for ``s_axilite``."""

    name: str
    kind: str                 # "in" (scalar input), "in64" (64-bit input or m_axi base address), "out" (ap_vld)
    bits: int
    offset: int | None        # the pragma's offset=, or None (allocated)


@dataclass(frozen=True)
class Register:
    """One 32-bit register of the map: its ``.hwh`` name, offset, access, the argument it belongs to."""

    name: str
    offset: int
    access: str               # "read-write", "read-only", "write-only"
    arg: str
    description: str
    fields: tuple             # ((field name, bit offset, bit width, access, description), ...)


# ---- the source, as the preprocessor leaves it ---------------------------------------------------
def preprocess(source: Path, include: list[Path], cxx: str | None = None) -> str:
    """``g++ -E`` of ``source`` (the C simulation's flags: C++14, ``-I`` each of ``include``)."""
    cmd = [cxx or os.environ.get("CXX", "g++"), "-E", "-std=c++14", *[f"-I{p}" for p in include], str(source)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise AxiliteError(f"preprocessing {source} failed ({' '.join(cmd)}): {r.stderr.strip()[-2000:]}")
    return r.stdout


def _typedefs(text: str) -> dict[str, str]:
    return {m.group(2): re.sub(r"\s+", " ", m.group(1)).strip()
            for m in re.finditer(r"\btypedef\s+([\w:<>,\s]+?)\s+(\w+)\s*;", text)}


def _bits(typ: str, typedefs: dict[str, str]) -> int:
    t = re.sub(r"\b(const|volatile)\b|[&*]", "", typ).strip()
    for _ in range(4):
        if t in typedefs:
            t = typedefs[t]
    m = re.fullmatch(r"(?:ap_u?int|ap_u?fixed)\s*<\s*(\d+)\b.*>", t)
    if m:
        return int(m.group(1))
    sizes = {"bool": 1, "char": 8, "signed char": 8, "unsigned char": 8, "short": 16, "unsigned short": 16,
             "int": 32, "unsigned": 32, "unsigned int": 32, "float": 32, "long long": 64, "unsigned long long": 64,
             "double": 64, "int8_t": 8, "uint8_t": 8, "int16_t": 16, "uint16_t": 16, "int32_t": 32, "uint32_t": 32,
             "int64_t": 64, "uint64_t": 64}
    if t in sizes:
        return sizes[t]
    raise AxiliteError(f"cannot tell the width of type '{typ}'")


def _definition(text: str, top: str) -> tuple[str, str]:
    """(parameter list, body) of the top function's definition."""
    m = re.search(rf"\bvoid\s+{top}\s*\(([^)]*)\)\s*\{{", text)
    if m is None:
        raise AxiliteError(f"no definition of void {top}(...) in the preprocessed source")
    depth, i = 1, m.end()
    while depth and i < len(text):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return m.group(1), text[m.end():i]


def _pragmas(body: str) -> list[dict]:
    out = []
    for line in re.findall(r"^\s*#\s*pragma\s+HLS\s+INTERFACE\b(.*)$", body, re.M | re.I):
        opts = {}
        for tok in line.split():
            k, _, v = tok.partition("=")
            opts[k.lower()] = v if _ else True
        if "mode" not in opts and line.split():      # the old form: #pragma HLS INTERFACE s_axilite port=...
            opts["mode"] = line.split()[0]
        out.append(opts)
    return out


def arguments(params: str, body: str, typedefs: dict[str, str], bundle: str | None = None) -> list[Arg]:
    """The top's ``s_axilite`` arguments (in argument order), classified by their C types and pragmas."""
    pragmas = _pragmas(body)
    axil = {p["port"]: p for p in pragmas if p.get("mode") == "s_axilite" and p.get("port") != "return"
            and (bundle is None or p.get("bundle", "control") == bundle)}
    maxi = {p["port"]: p for p in pragmas if p.get("mode") == "m_axi"}
    args = []
    for a in re.sub(r"\s+", " ", params).split(","):
        m = re.match(r"(.*?)([A-Za-z_]\w*)\s*$", a.strip())
        if m is None:
            continue
        typ, name = m.group(1).strip(), m.group(2)
        if name not in axil:
            continue
        off = axil[name].get("offset")
        offset = int(off, 0) if isinstance(off, str) else None
        if name in maxi:                              # an m_axi pointer: its base address
            kind, bits = "in64", 64
        elif ("&" in typ or "*" in typ) and not re.match(r"\s*const\b", typ):
            kind, bits = "out", _bits(typ, typedefs)
        else:
            bits = _bits(typ, typedefs)
            kind = "in64" if bits > 32 else "in"
        if bits > 32 and kind == "out":
            raise AxiliteError(f"port {name}: outputs wider than 32 bits are not modelled")
        args.append(Arg(name, kind, bits, offset))
    missing = sorted(set(axil) - {a.name for a in args})
    if missing:
        raise AxiliteError(f"s_axilite pragma for {', '.join(missing)}: no such argument of the top function")
    return args


# ---- the allocation --------------------------------------------------------------------------------
FOOTPRINT = {"in": 8, "in64": 12, "out": 8}


def allocate(args: list[Arg]) -> list[Register]:
    """The register map (module docstring: the rules), in offset order; :class:`AxiliteError` on a
    misaligned offset, an overlap, or an argument without ``offset=`` after an ap_vld output."""
    regs = [Register(n, o, "read-write", "", d, f) for (n, o), (d, f) in zip(BLOCK, _BLOCK_DOC)]
    used: list[tuple[int, int, str]] = [(0, FIRST_ARG_OFFSET, "the block-level registers (0x00-0x0C)")]
    nxt, after_out = FIRST_ARG_OFFSET, None
    for a in args:
        if a.offset is None:
            if after_out is not None:
                raise AxiliteError(f"port {a.name} has no offset= and follows the ap_vld output {after_out}: Vitis "
                                   "releases place it differently (+0x08 or +0x10): pin it with offset=")
            off = nxt
        else:
            off = a.offset
            if off % 4 or off < FIRST_ARG_OFFSET:
                raise AxiliteError(f"port {a.name}: offset 0x{off:x} must be a multiple of 4 at or above 0x10 "
                                   "(0x00-0x0C are the block-level registers)")
        end = off + FOOTPRINT[a.kind]
        for lo, hi, who in used:
            if off < hi and lo < end:
                raise AxiliteError(f"port {a.name} at 0x{off:x}..0x{end - 1:x} overlaps {who} (0x{lo:x}..0x{hi - 1:x})")
        used.append((off, end, f"port {a.name}"))
        nxt = max(nxt, end)
        after_out = a.name if a.kind == "out" else None
        if a.kind == "in64":
            regs += [Register(f"{a.name}_1", off, "write-only", a.name, f"Data signal of {a.name}",
                              ((a.name, 0, 32, "write-only", f"Bit 31 to 0 of {a.name}"),)),
                     Register(f"{a.name}_2", off + 4, "write-only", a.name, f"Data signal of {a.name}",
                              ((a.name, 0, 32, "write-only", f"Bit 63 to 32 of {a.name}"),))]
        elif a.kind == "out":
            regs += [Register(a.name, off, "read-only", a.name, f"Data signal of {a.name}",
                              ((a.name, 0, a.bits, "read-only", f"Bit {a.bits - 1} to 0 of {a.name}"),)),
                     Register(f"{a.name}_ctrl", off + 4, "read-only", a.name, f"Control signal of {a.name}",
                              ((f"{a.name}_ap_vld", 0, 1, "read-only", f"Control signal {a.name}_ap_vld"),))]
        else:
            regs.append(Register(a.name, off, "write-only", a.name, f"Data signal of {a.name}",
                                 ((a.name, 0, a.bits, "write-only", f"Bit {a.bits - 1} to 0 of {a.name}"),)))
    return sorted(regs, key=lambda r: r.offset)


def allocate_source(text: str, top: str) -> list[Register]:
    """:func:`allocate` for the top function ``top`` in ``text`` (preprocessed C++)."""
    params, body = _definition(text, top)
    if not any(p.get("mode") == "ap_ctrl_hs" for p in _pragmas(body)):
        raise AxiliteError(f"{top}: no '#pragma HLS INTERFACE mode=ap_ctrl_hs port=return'")
    return allocate(arguments(params, body, _typedefs(text)))


@functools.lru_cache(maxsize=8)
def _top_cached(export_dir: str, ap_types: str, hls_dir: str, top: str) -> tuple[Register, ...]:
    text = preprocess(Path(hls_dir) / f"{top}.cpp", [Path(export_dir), Path(hls_dir), Path(ap_types)])
    return tuple(allocate_source(text, top))


def top_from_source(export_dir, ap_types, hls_dir: Path = HLS_DIR, top: str = "zq_top") -> list[Register]:
    """The register map Vitis gives ``top`` (``hls/<top>.cpp``) for the export in ``export_dir``
    (``net_params.h``); ``ap_types``: the directory of ``ap_int.h`` / ``hls_stream.h``."""
    return list(_top_cached(str(Path(export_dir).resolve()), str(ap_types), str(Path(hls_dir).resolve()), top))


# UG1399 / the generated component.xml: the block-level registers' descriptions and fields
_BLOCK_DOC = (
    ("Control signals", (("AP_START", 0, 1, "read-write", "Control signal Register for 'ap_start'."),
                         ("AP_DONE", 1, 1, "read-only", "Control signal Register for 'ap_done'."),
                         ("AP_IDLE", 2, 1, "read-only", "Control signal Register for 'ap_idle'."),
                         ("AP_READY", 3, 1, "read-only", "Control signal Register for 'ap_ready'."),
                         ("AUTO_RESTART", 7, 1, "read-write", "Control signal Register for 'auto_restart'."),
                         ("INTERRUPT", 9, 1, "read-only", "Control signal Register for 'interrupt'."))),
    ("Global Interrupt Enable Register",
     (("Enable", 0, 1, "read-write", "Master enable for the device interrupt output to the system interrupt "
                                     "controller: 0 = Disabled, 1 = Enabled"),)),
    ("IP Interrupt Enable Register", (("CHAN0_INT_EN", 0, 1, "read-write", "Enable Channel 0 (ap_done) Interrupt."),
                                      ("CHAN1_INT_EN", 1, 1, "read-write", "Enable Channel 1 (ap_ready) Interrupt."))),
    ("IP Interrupt Status Register", (("CHAN0_INT_ST", 0, 1, "read-write", "Channel 0 (ap_done) Interrupt Status."),
                                      ("CHAN1_INT_ST", 1, 1, "read-write", "Channel 1 (ap_ready) Interrupt Status."))),
)
