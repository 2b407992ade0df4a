"""The engine specification: the one hardware contract.

Everything that the HLS engine (``hls/``), its RTL twin (``rtl/``), the
exporter and the host driver must agree on is written here once and
generated into C++ (``hls/zq_spec.h``) and SystemVerilog (``rtl/zq_spec.svh``)
by :mod:`zynqflow.spec.gen`; Python code imports this module. Nothing else
restates these values.

Contents:

* the **layer-table row**: fields, widths, signedness, packing (:data:`ROW`);
* **memory kinds** of a layer's source and destination;
* the **status register** bits, the **error logit**, ``build_params`` and
  ``engine_info`` packing;
* the **register map** of the AXI4-Lite control port, with the registers
  both engines have and the ones only the RTL twin has (:data:`REGISTERS`);
* the **weight image** header in DDR (:data:`HEADER`);
* the **timing constants** of the RTL twin and of the HLS engine used by the
  cycle model (:mod:`zynqflow.spec.cycles`), each derived in its docstring.

The engine itself is described in docs/ARCHITECTURE.md ("The engine"):
a layer-sequential N_PE x N_CI MAC array; weights stream from DDR through an
on-chip ring (or stay cached when the whole image fits); activations live in
an on-chip activation RAM or, when they do not fit, in DDR, read back
through row rings with halo rows and written through a FIFO.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SPEC_VERSION = 3

# ---------------------------------------------------------------------------
# Data widths of the datapath (the numeric contract is docs/fixed-point.md)
LANE_BITS = 8          # an activation lane in memory (any tensor of <= 8 bits, signed or not)
W_BITS_MAX = 8         # weights: signed, at most 8 bits (two share a DSP48E1, see docs)
ACC_BITS = 32          # accumulators (numerics.ACC_BITS)
BIAS_BITS = 32
OUT_BITS_MAX = 16      # the logits; error frames use the int16 minimum
GAP_BITS = 32          # global-average-pool sums
AXI_DATA_BITS = 64     # the AXI4 masters (a Zynq-7000 HP port in 64-bit mode)
AXI_ADDR_BITS = 32
AXI_BURST_BEATS = 16   # the longest burst issued (AXI3 HP ports take at most 16)
STREAM_BITS = 32       # s_axis_in / m_axis_out TDATA
PIXELS_PER_BEAT = STREAM_BITS // 8
AXI_LINE_BYTES = AXI_BURST_BEATS * AXI_DATA_BITS // 8   # 128: the DMAs' bursts never cross a line (so never 4 KiB)

# ---------------------------------------------------------------------------
# The RTL twin's compute pipeline (rtl/zq_loop_gen.sv -> rtl/zq_core.sv): the register stages
# a MAC step passes from its issue to the write-back of its result. The modules take their
# latencies from here (zq_core checks the sum at elaboration), zq_out_dma its FIFO margin,
# zq_top its drain, the cycle model (spec/cycles.py) a layer's fill.
RTL_PIPE_ADDR = 3        # zq_loop_gen: L1 (taps, bounds), L2 (row terms), S0 (the step)
RTL_PIPE_READ = 3        # activation RAM and weight-ring read: S0 -> S3
RTL_PIPE_MAC = 8         # zq_mac_array: S3 -> S11
RTL_PIPE_REQUANT = 5     # zq_requant: S11 -> S16
RTL_PIPE_WRITEBACK = 1   # S17: the write-back registers (activation RAM, output FIFO, GAP sums)
RTL_PIPE_DEPTH = RTL_PIPE_ADDR + RTL_PIPE_READ + RTL_PIPE_MAC + RTL_PIPE_REQUANT + RTL_PIPE_WRITEBACK
# zq_mac_array's lanes: a DSP48E1 pair has its product (P) 4 cycles after its operands, and so has
# an exact LUT multiplier (zq_lut_mul: operand registers, then three adder stages); both are split
# or registered into the products at 5, summed at 6 and 7, accumulated at 8 (RTL_PIPE_MAC).
RTL_LUT_MUL_LAT = 4
# zq_out_dma's data FIFO (N_PE-byte result units) asks the loop to stop (`full`, registered)
# while fewer than RTL_OUT_FIFO_MARGIN units are free: the steps issued until the loop sees it
# still deliver up to RTL_PIPE_DEPTH + 1 units; the rest is slack.
RTL_OUT_FIFO_UNITS = 64
RTL_OUT_FIFO_MARGIN = RTL_PIPE_DEPTH + 1 + 4
# zq_top waits RTL_LAYER_DRAIN cycles after zq_core's busy falls (the last result in the
# write-back registers) before it fetches the next layer's row (at least the write-back).
RTL_LAYER_DRAIN = 4

# ---------------------------------------------------------------------------
# The HLS engine's core loop (hls/zq_core.h CORE): one free-running loop at II=1 that declares its
# RAMs free of inter-iteration dependences (DEPENDENCE inter false), which the guards make true.
# HLS_CORE_DEPTH is its stated pipeline depth (iterations from a step's issue to its last store),
# estimated for Vitis HLS 2023.2 at 10 ns on the xc7z020-1: the input address 2 (coordinates and
# bounds, the row), the activation- and weight-RAM reads 2 (latency=2), the DSP48E1 4 (A/D, AD, M,
# P), the adder tree over N_CI lanes 2, the accumulator 1, the requantization 3, the store (result
# or ring unit, one per bank) 1. Any store lands at most HLS_CORE_DEPTH - 1 iterations after any
# read of the same iteration, or the reverse; the guards take twice that, plus one:
#   AVAIL_GUARD:   a ring row or weight word is read HLS_GUARD iterations after its last store issued;
#   RELEASE_GUARD: a released weight-RAM slot is stored to HLS_GUARD iterations after its release
#   (a ring row's slot needs no guard: its store is the result's, after the reads by construction).
# The pipeline-hazard C simulation (sim/csim: hazard modes) defers every store by each D up to
# 2 * HLS_CORE_DEPTH, and every read likewise, bit-exact; `make hls` fails when the csynth report
# gives CORE an II other than 1 or a depth beyond 2 * HLS_CORE_DEPTH (bench/csynth_check.py).
HLS_CORE_DEPTH = 15
HLS_GUARD = 2 * HLS_CORE_DEPTH + 1

ERROR_LOGIT = -32768   # every beat of an error frame (int16 minimum, sign-extended to 32 bits)

# ---------------------------------------------------------------------------
# Where a layer reads and writes
SRC_STEM = 0   # the stem ring: the input frame as it streams in (im2col'ed when the stem is)
SRC_ACT = 1    # a whole tensor in the on-chip activation RAM
SRC_DDR = 2    # a tensor in DDR, read row by row into a ring in the activation RAM
DST_ACT = 0    # a tensor in the on-chip activation RAM
DST_DDR = 1    # a tensor in DDR, written through the output FIFO
DST_GAP = 2    # the global-average-pool sums (the final conv)
SRC_KINDS = {"stem": SRC_STEM, "act": SRC_ACT, "ddr": SRC_DDR}
# The two activation paths between the engine and the DDR tensors (row fields src_path, dst_path:
# a mask). Path 1 reads and writes through m_axi_act (HP2); path 2 reads through m_axi_act2 (HP3)
# and writes through the write channels of m_axi_wts (HP0, whose reads carry the weights). Every
# port moves up to a beat a cycle in each direction; the DDR's shared budget is the same for all.
PATH_1 = 1
PATH_2 = 2
PATH_BOTH = PATH_1 | PATH_2
DST_KINDS = {"act": DST_ACT, "ddr": DST_DDR, "gap": DST_GAP}


# ---------------------------------------------------------------------------
# The global average pool's rounding: logit = (sum + bias) >> k over 2^k pixels (arithmetic
# shift; k = 0: the sum itself), one mode per network (NetConfig.gap_round), built into the
# engine as the constant GAP_ROUND beside GAP_SHIFT. The bias term of each mode, with
# h = 2^(k-1), neg = the sum's sign bit, odd = bit k of the sum (docs/fixed-point.md):
@dataclass(frozen=True)
class GapRounding:
    name: str
    code: int
    bias: str          # the rounding term added before the shift
    doc: str


GAP_ROUNDINGS: tuple[GapRounding, ...] = (
    GapRounding("half_up", 0, "h", "ties toward +inf (the project's own networks; numerics.round_shift)"),
    GapRounding("floor", 1, "0", "toward -inf, no rounding term (QONNX/Brevitas FLOOR: TruncAvgPool2d with a "
                                 "floor trunc_quant)"),
    GapRounding("half_even", 2, "h - 1 + odd", "ties to even (QONNX ROUND/HALF_EVEN, Brevitas ROUND = torch.round: "
                                               "TruncAvgPool2d's default RoundTo8bit)"),
    GapRounding("half_away", 3, "h - neg", "ties away from zero (QONNX HALF_UP)"),
)
GAP_ROUND = {m.name: m for m in GAP_ROUNDINGS}
GAP_ROUND_HALF_UP, GAP_ROUND_FLOOR, GAP_ROUND_HALF_EVEN, GAP_ROUND_HALF_AWAY = (m.code for m in GAP_ROUNDINGS)
DEFAULT_GAP_ROUND = "half_up"


def gap_round_code(name: str) -> int:
    """The engine's code of a GAP rounding mode; a clear error naming the known ones."""
    if name not in GAP_ROUND:
        raise ValueError(f"unknown global-average-pool rounding {name!r} (known: {', '.join(GAP_ROUND)})")
    return GAP_ROUND[name].code


@dataclass(frozen=True)
class Field:
    """One field of the layer-table row. Rows are packed LSB first in :data:`ROW` order."""

    name: str
    bits: int
    doc: str
    signed: bool = False

    @property
    def max_value(self) -> int:
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1

    @property
    def min_value(self) -> int:
        return -(1 << (self.bits - 1)) if self.signed else 0


# The layer-table row. Geometry is in log2 where sizes are powers of two (design rule), so the
# engines address with shifts and masks only.
ROW: tuple[Field, ...] = (
    # geometry
    Field("lg_in", 5, "log2 of the input map size (H = W)"),
    Field("lg_out", 5, "log2 of the output map size"),
    Field("k3", 1, "kernel 3x3 (else 1x1); padding k//2"),
    Field("s2", 1, "stride 2 (else 1)"),
    Field("ci_chunks", 10, "input words of N_CI channels per pixel read by the MAC loop"),
    Field("co_groups", 10, "output-channel groups of N_PE"),
    Field("co_last", 7, "valid output channels in the last group (1..N_PE, N_PE <= 64)"),
    Field("lg_band", 5, "log2 of the output rows per band (the MAC loop's outermost unit)"),
    # requantization (docs/fixed-point.md)
    Field("shift", 7, "requantization shift s = F_in + F_w - F_out (s > 0 rounds, s <= 0 shifts left)",
          signed=True),
    Field("relu", 1, "ReLU before saturation"),
    Field("out_lo", 18, "saturation minimum of the output format", signed=True),
    Field("out_hi", 18, "saturation maximum of the output format", signed=True),
    # source
    Field("src_kind", 2, "SRC_STEM, SRC_ACT or SRC_DDR"),
    Field("src_signed", 1, "the source tensor holds signed lanes (sign-extend on read)"),
    Field("src_base", 20, "activation-RAM row of the source region (channel word 0, ring slot 0)"),
    Field("src_lg_rows", 5, "log2 of the rows the source region holds (= lg_in for a whole tensor)"),
    Field("src_cgrps", 8, "SRC_DDR: channel groups of N_PE in the DDR tensor"),
    Field("src_ddr", 32, "SRC_DDR: byte offset of the tensor in the activation scratch area"),
    # destination
    Field("dst_kind", 2, "DST_ACT, DST_DDR or DST_GAP"),
    Field("dst_base", 20, "DST_ACT: activation-RAM row of the destination tensor (channel word 0)"),
    Field("dst_cw0", 10, "DST_ACT: first channel word written (concatenation offset / N_CI)"),
    Field("dst_cg0", 8, "DST_DDR / DST_GAP: first channel group written (offset / N_PE)"),
    Field("dst_cgrps", 8, "DST_DDR: channel groups of N_PE in the DDR tensor"),
    Field("dst_ddr", 32, "DST_DDR: byte offset of the tensor in the activation scratch area"),
    # weights
    Field("w_off", 24, "weight-image word of this layer's group 0 block (the bias word)"),
    Field("w_blk", 12, "words per group block: 1 bias word + k*k*ci_chunks weight words"),
    Field("w_res", 1, "resident: the layer's blocks stay in the ring until its last band"),
    Field("rd_wait", 1, "wait for every DDR write of earlier layers before reading (SRC_DDR)"),
    # the activation paths (PATH_*): which AXI4 masters carry a DDR tensor's reads and writes
    Field("src_path", 2, "SRC_DDR: the read paths, a mask of PATH_1 (m_axi_act) and PATH_2 (m_axi_act2); "
                         "both: even input rows on path 1, odd rows on path 2"),
    Field("dst_path", 2, "DST_DDR: the write paths, a mask of PATH_1 (m_axi_act) and PATH_2 (m_axi_wts's "
                         "write channel); both: even 128-byte lines on path 1, odd lines on path 2"),
)


def _layout(fields: tuple[Field, ...]) -> dict[str, tuple[int, Field]]:
    out, pos = {}, 0
    for f in fields:
        out[f.name] = (pos, f)
        pos += f.bits
    return out


ROW_LAYOUT = _layout(ROW)
ROW_BITS = sum(f.bits for f in ROW)


def pack_row(values: dict[str, int], where: str = "layer") -> int:
    """One layer-table row as an integer (field ``ROW[0]`` in the least significant bits).
    Every field must be given and fit its width; the error names the field."""
    word = 0
    missing = [f.name for f in ROW if f.name not in values]
    extra = sorted(set(values) - set(ROW_LAYOUT))
    if missing or extra:
        raise ValueError(f"{where}: layer row fields missing {missing} / unknown {extra}")
    for name, (pos, f) in ROW_LAYOUT.items():
        v = int(values[name])
        if not f.min_value <= v <= f.max_value:
            raise ValueError(f"{where}: row field {name}={v} does not fit {'signed ' if f.signed else ''}"
                             f"{f.bits} bits ({f.min_value}..{f.max_value})")
        word |= (v & ((1 << f.bits) - 1)) << pos
    return word


def unpack_row(word: int) -> dict[str, int]:
    out = {}
    for name, (pos, f) in ROW_LAYOUT.items():
        v = (word >> pos) & ((1 << f.bits) - 1)
        if f.signed and v >> (f.bits - 1):
            v -= 1 << f.bits
        out[name] = v
    return out


# ---------------------------------------------------------------------------
# Status register (both engines): what went wrong with the last frame, and a count.
@dataclass(frozen=True)
class Bit:
    name: str
    bit: int
    doc: str

    @property
    def mask(self) -> int:
        return 1 << self.bit


STATUS_BITS: tuple[Bit, ...] = (
    Bit("short_frame", 0, "TLAST came before the frame's last beat"),
    Bit("long_frame", 1, "no TLAST on the frame's last beat; beats were dropped up to the next TLAST"),
    Bit("axi_read_error", 2, "an AXI4 read returned SLVERR or DECERR (weights or activations)"),
    Bit("axi_write_error", 3, "an AXI4 write returned SLVERR or DECERR (activations)"),
    Bit("address_range", 4, "the weights or scratch base address is misaligned, or the image or scratch "
                            "area would run past the end of the addressable DDR window"),
    Bit("weight_image", 5, "the weight image header is not this engine's (magic, spec version, network ID "
                           "or size differ)"),
)
STATUS = {b.name: b for b in STATUS_BITS}
STATUS_FLAGS_MASK = sum(b.mask for b in STATUS_BITS)
STATUS_ERRCNT_SHIFT = 16   # bits 31:16: error frames since reset, saturating at 0xFFFF
STATUS_ERRCNT_MAX = 0xFFFF


def decode_status(value: int) -> dict:
    value &= 0xFFFFFFFF
    return dict(flags=[b.name for b in STATUS_BITS if value & b.mask],
                error_frames=value >> STATUS_ERRCNT_SHIFT, ok=(value & STATUS_FLAGS_MASK) == 0)


# ---------------------------------------------------------------------------
# build_params and engine_info (read-only registers, constants of one engine build)
def build_params(n_pe: int, n_ci: int, w_bits: int, a_bits: int) -> int:
    """N_PE | N_CI << 8 | W_BITS << 16 | A_BITS << 24."""
    for v, n in ((n_pe, "n_pe"), (n_ci, "n_ci"), (w_bits, "w_bits"), (a_bits, "a_bits")):
        if not 0 < v < 256:
            raise ValueError(f"build_params: {n}={v} does not fit 8 bits")
    return n_pe | n_ci << 8 | w_bits << 16 | a_bits << 24


def decode_build_params(value: int) -> dict:
    return dict(n_pe=value & 0xFF, n_ci=value >> 8 & 0xFF, w_bits=value >> 16 & 0xFF, a_bits=value >> 24 & 0xFF)


ENGINE_INFO_BITS: tuple[Bit, ...] = (
    Bit("rtl_twin", 8, "the RTL twin: measures cycles (cycles_last, layer_cycles, dram_* registers)"),
    Bit("weight_cache", 9, "the whole weight image fits on chip: it is read once, then kept while every "
                           "frame's header check passes (a reset or a failed check drops it)"),
    Bit("ddr_tensors", 10, "some activations live in DDR (the scratch area is used)"),
)
ENGINE_INFO = {b.name: b for b in ENGINE_INFO_BITS}


def engine_info(rtl_twin: bool, weight_cache: bool, ddr_tensors: bool) -> int:
    """SPEC_VERSION in bits 7:0, feature bits above."""
    v = SPEC_VERSION
    for flag, name in ((rtl_twin, "rtl_twin"), (weight_cache, "weight_cache"), (ddr_tensors, "ddr_tensors")):
        if flag:
            v |= ENGINE_INFO[name].mask
    return v


def decode_engine_info(value: int) -> dict:
    return dict(spec_version=value & 0xFF, **{b.name: bool(value & b.mask) for b in ENGINE_INFO_BITS})


# ---------------------------------------------------------------------------
# Register map of s_axi_control.
#
# Both engines place every register at the offset given here. The HLS engine
# says so with `offset=` on each s_axilite pragma (hls/zq_spec.h generates the
# pragma lines), the RTL twin decodes these offsets (rtl/zq_spec.svh). The
# layout follows the rules of Vitis HLS 2023.2 for ap_ctrl_hs, so that
# Vitis's own placement, had we not fixed it, would be the same:
#   0x00 AP_CTRL, 0x04 GIE, 0x08 IER, 0x0C ISR (toggle on write, 2022.2 and later);
#   an input scalar of <= 32 bits takes 8 bytes (data, reserved);
#   a 64-bit input (an m_axi offset) takes 12 bytes (data low, data high, reserved);
#   an output scalar with ap_vld takes 16 bytes (data, control word with bit 0 ap_vld, 2 unused);
#   arguments follow one another without alignment gaps, in declaration order.
# Registers the HLS engine cannot have (it cannot count clock cycles) are
# RTL-only and live above the last shared register, where Vitis places nothing.
@dataclass(frozen=True)
class Register:
    name: str
    offset: int
    kind: str          # "ctrl" (block control), "in32", "in64", "out" (with ap_vld control word)
    doc: str
    engines: tuple[str, ...] = ("hls", "rtl")
    bits: tuple[Bit, ...] = ()
    access: str = ""

    @property
    def footprint(self) -> int:
        return {"ctrl": 4, "in32": 8, "in64": 12, "out": 16}[self.kind]

    @property
    def ctrl_offset(self) -> int | None:
        """Offset of the ap_vld control word of an output register."""
        return self.offset + 4 if self.kind == "out" else None


AP_CTRL_BITS: tuple[Bit, ...] = (
    Bit("ap_start", 0, "R/W/COH: write 1 to start a frame; cleared on ap_ready unless auto_restart is set"),
    Bit("ap_done", 1, "R/COR: a frame ended (its last output beat was accepted); with auto_restart set, only "
                      "when auto_restart is cleared and the engine goes idle (Vitis 2023.2)"),
    Bit("ap_idle", 2, "R: no frame in progress"),
    Bit("ap_ready", 3, "R/COR: ready for the next ap_start (same cycle as ap_done); masked while auto_restart"),
    Bit("auto_restart", 7, "R/W: take frames back to back"),
    Bit("interrupt", 9, "R: the interrupt output (GIE and any ISR bit)"),
)
ISR_BITS: tuple[Bit, ...] = (
    Bit("ap_done", 0, "set on every frame end when IER bit 0 is set (also under auto_restart); TOW"),
    Bit("ap_ready", 1, "set on ap_ready when IER bit 1 is set; TOW"),
)

_SHARED = ("hls", "rtl")
_RTL = ("rtl",)
REGISTERS: tuple[Register, ...] = (
    Register("AP_CTRL", 0x00, "ctrl", "block control (ap_ctrl_hs)", bits=AP_CTRL_BITS, access="RW"),
    Register("GIE", 0x04, "ctrl", "bit 0: global interrupt enable", access="RW"),
    Register("IER", 0x08, "ctrl", "bit 0: ap_done interrupt enable, bit 1: ap_ready interrupt enable", access="RW"),
    Register("ISR", 0x0C, "ctrl", "interrupt status, toggle on write", bits=ISR_BITS, access="TOW"),
    Register("wts", 0x10, "in64", "DDR address of the weight image (m_axi_wts); 4 KiB aligned. Its header "
             "is read and checked at every frame", access="RW"),
    Register("act", 0x1C, "in64", "DDR address of the activation scratch area (m_axi_act); 4 KiB aligned",
             access="RW"),
    Register("status", 0x28, "out", "last frame: error flags (STATUS_BITS) in 15:0, error frames since reset "
             "(saturating) in 31:16; 0 for a good frame after reset", access="R"),
    Register("frames_done", 0x38, "out", "frames answered since reset (error frames included)", access="R"),
    Register("net_id", 0x48, "out", "network ID compiled into the engine (manifest network_id_int); written at "
             "the start of every frame", access="R"),
    Register("build_params", 0x58, "out", "N_PE | N_CI << 8 | W_BITS << 16 | A_BITS << 24; written at the start "
             "of every frame", access="R"),
    Register("engine_info", 0x68, "out", "SPEC_VERSION in 7:0, ENGINE_INFO_BITS above; written at the start of "
             "every frame", access="R"),
    # RTL twin only: measured figures (the HLS engine has no clock to count)
    Register("cycles_last", 0x80, "out", "clock cycles of the last frame, from its first input beat accepted "
             "to its last output beat accepted, both included (measured)", engines=_RTL, access="R"),
    Register("dram_stall_cycles", 0x90, "out", "cycles of the last frame in which the MAC array issued no step "
             "because weights, input rows or output FIFO space were not ready (measured)", engines=_RTL, access="R"),
    Register("dram_rd_bytes", 0xA0, "out", "bytes read over both AXI4 masters in the last frame (measured)",
             engines=_RTL, access="R"),
    Register("dram_wr_bytes", 0xB0, "out", "bytes written over m_axi_act in the last frame (measured)",
             engines=_RTL, access="R"),
    Register("layer_sel", 0xC0, "in32", "profiling: the layer layer_cycles and layer_stalls report",
             engines=_RTL, access="RW"),
    Register("layer_cycles", 0xC8, "out", "profiling: cycles of layer layer_sel in the last computed frame "
             "(from its start to the next layer's start; measured); 0 if layer_sel >= N_LAYERS",
             engines=_RTL, access="R"),
    Register("layer_stalls", 0xD8, "out", "profiling: stall cycles (as dram_stall_cycles) of layer layer_sel",
             engines=_RTL, access="R"),
)
REG = {r.name: r for r in REGISTERS}
REGMAP_HLS = tuple(r for r in REGISTERS if "hls" in r.engines)
REGMAP_RTL = tuple(r for r in REGISTERS if "rtl" in r.engines)


def reg_addr_bits(engine: str) -> int:
    """Address width of the control port (what Vitis would choose: the smallest that holds the map)."""
    regs = REGMAP_HLS if engine == "hls" else REGMAP_RTL
    end = max(r.offset + r.footprint for r in regs)
    return max(4, (end - 1).bit_length())


def offsets(engine: str = "rtl") -> dict[str, int]:
    """{register name: offset}, plus ``<name>_ctrl`` for the ap_vld words of outputs."""
    regs = REGMAP_HLS if engine == "hls" else REGMAP_RTL
    out = {}
    for r in regs:
        out[r.name] = r.offset
        if r.kind == "out":
            out[f"{r.name}_ctrl"] = r.ctrl_offset
        if r.kind == "in64":
            out[f"{r.name}_hi"] = r.offset + 4
    return out


def ap_ctrl_mask(*names: str) -> int:
    by = {b.name: b for b in AP_CTRL_BITS}
    return sum(by[n].mask for n in names)


# ---------------------------------------------------------------------------
# The weight image in DDR (at the `wts` address): a header, then one block
# per (layer, output-channel group) in consumption order. A block is a bias
# word (N_PE int32, lane pe at bytes 4*pe..4*pe+3, the rest zero) and then
# k*k*ci_chunks weight words; word (tap, chunk) holds [N_PE][N_CI] int8,
# lane (pe, ci) at byte pe*N_CI + ci. A word is N_PE*N_CI bytes.
HEADER_MAGIC = 0x3157515A   # "ZQW1" little endian
HEADER: tuple[Field, ...] = (
    Field("magic", 32, "HEADER_MAGIC"),
    Field("spec_version", 32, "SPEC_VERSION"),
    Field("net_id", 32, "network ID (must equal the engine's NET_ID)"),
    Field("word_bytes", 32, "bytes per weight word (N_PE * N_CI)"),
    Field("n_words", 32, "weight words after the header"),
    Field("header_bytes", 32, "bytes of the header (the first word starts here)"),
)


def header_bytes(word_bytes: int) -> int:
    """The header is padded to one weight word, at least 256 bytes, so that every word and every
    16-beat burst is aligned and no burst crosses a 4 KiB boundary."""
    return max(256, word_bytes)


# The DDR window an address may fall in (PYNQ-Z2: 512 MiB of DDR3 at 0).
DDR_WINDOW_BYTES = 1 << 29
ADDR_ALIGN = 4096

# The clock the engine is built for (the HLS flow's 10 ns target; FCLK_CLK0 on the board, and the
# FREQ_HZ of the RTL twin's IP), and the control registers' segment in the processor's address
# map: 64 KiB, the range the block design gives it (Vitis names it address block "Reg"). The RTL
# twin's IP decodes every address bit of that segment (CTRL_ADDR_BITS), so that no register
# appears again at +0x100 (a read there would clear ap_done).
CLOCK_MHZ = 100
CTRL_SEGMENT_BYTES = 1 << 16
CTRL_ADDR_BITS = (CTRL_SEGMENT_BYTES - 1).bit_length()


# ---------------------------------------------------------------------------
# The DDR memory model (the cocotb ``Ddr`` and the harness's C++ ``AxiMem``
# implement it alike; the cycle model predicts under it). Named presets:
# ``ideal`` (every port moves a beat per cycle whatever the others do),
# ``pynq-z2`` (the board: one 16-bit DDR3 controller shared by all masters,
# refresh) and ``stress`` (legal but hostile slave behaviour on every channel).
@dataclass(frozen=True)
class MemoryModel:
    """The DDR as the engine's AXI4 masters (and the DMA's streams) see it.

    **Per port** (each of ``m_axi_wts`` and ``m_axi_act``): ``read_latency`` cycles
    from an AR handshake to the first R beat of its burst; at most ``max_reads``
    read bursts outstanding (AR handshake .. last R beat), ``max_writes`` write
    bursts (AW handshake .. B taken); B ``write_latency`` cycles after a burst's
    last W beat. Each direction of a port moves at most ``port_bytes_per_cycle``
    on average: a token bucket per port and direction. 8 B/cycle (one 64-bit beat
    a cycle) is no limit.

    **Shared** (one budget for every master: both engine ports, both directions,
    and the DMA's stream traffic): ``shared_bytes_per_cycle`` (0: no shared limit),
    a token bucket. Where no DMA is simulated and ``charge_streams`` is set, each
    accepted ``s_axis_in`` and ``m_axis_out`` byte is charged to it (the DMA reads
    the frame from DDR and writes the logits back); where a DMA is simulated, its
    DDR beats are charged. ``cpu_share`` of the refill goes to the CPU: the masters
    get ``(1 - cpu_share) * shared_bytes_per_cycle``.

    **Token buckets, exactly** (so that every implementation agrees without an
    arbitration order): every bucket starts full and holds at most
    ``shared_bucket_bytes`` (one 16-beat burst). A beat may move on a channel
    (RVALID shown for a new beat, WREADY high) in a cycle only if its port-direction
    bucket and the shared bucket are both positive (> 0) at the start of that cycle.
    Every beat that moves takes ``beat_bytes`` from both, and every charged stream
    byte takes one byte from the shared bucket; a bucket may go negative (several
    masters can move a beat in one cycle), and the debt is paid by later refills.
    At the end of each cycle each bucket gains its rate, capped at its depth.

    **Refresh**: every port stalls in the cycles where ``cycle % refresh_interval <
    refresh_cycles`` (``refresh_interval`` 0: never), counting the memory's own
    clock cycles since it was created (a DUT reset does not restart it): no new R
    beat is shown and WREADY is low.

    **Stress** (random, so implementations agree on the kind only): ``gap_x`` is the
    probability per cycle that the channel's READY (AR, AW, W) is low, or that a new
    VALID (R, B) is held back (a shown beat stays); ``stall_prob`` the probability per
    cycle (when not stalled) that a port stalls for a uniform 1..``stall_max`` cycles:
    ARREADY, AWREADY and WREADY low, no new R or B beat. ``aw_waits_for_w``: AWREADY only
    while the slave holds an accepted W beat not yet matched to an AW (A3.3.1 allows a
    slave to wait for WVALID). The slave accepts up to twice ``max_reads`` / ``max_writes``
    bursts; a master with more than ``max_reads`` / ``max_writes`` outstanding is a
    protocol error (the engine's limit is 8 of each per port).

    **Reset** (``keep_reads_on_reset``, every preset): the PS HP port does not see the PL's
    reset. The read bursts in flight are answered during and after a DUT reset, as are
    the B responses of write bursts whose AW and last W beat had both arrived; a write
    burst still missing its AW or beats is dropped. The RTL twin counts on it (it drops
    those late responses and waits for them). False drops every transaction in flight,
    as the simulators did before (not an AXI slave's behaviour: for old comparisons only).

    Sources (docs/ARCHITECTURE.md, "The memory model"): UG585 (Zynq-7000 TRM):
    HP ports 64-bit AXI3, 16-beat bursts, read/write acceptance 8/32, the DDR
    controller ~75 % efficient on mixed traffic; the PYNQ-Z2 reference manual:
    16-bit DDR3 at 1 050 MT/s (2.1 GB/s peak); JEDEC DDR3: tREFI 7.8 us, tRFC
    260 ns (4 Gb devices). The read latency (32 cycles at 100 MHz, 320 ns) is an
    assumption above a DDR3-1066 row miss plus the PS interconnect; UG585 gives
    no first-word latency."""

    read_latency: int = 32
    write_latency: int = 16
    max_reads: int = 8
    max_writes: int = 8
    beat_bytes: int = AXI_DATA_BITS // 8
    port_bytes_per_cycle: float = AXI_DATA_BITS / 8
    shared_bytes_per_cycle: float = 0.0
    shared_bucket_bytes: int = AXI_BURST_BEATS * AXI_DATA_BITS // 8
    charge_streams: bool = False
    cpu_share: float = 0.0
    refresh_interval: int = 0
    refresh_cycles: int = 0
    gap_ar: float = 0.0
    gap_r: float = 0.0
    gap_aw: float = 0.0
    gap_w: float = 0.0
    gap_b: float = 0.0
    stall_prob: float = 0.0
    stall_max: int = 0
    aw_waits_for_w: bool = False
    keep_reads_on_reset: bool = True
    seed: int = 1


MEMORY_PRESETS: dict[str, MemoryModel] = {
    "ideal": MemoryModel(),
    # 16-bit DDR3-1050: 2.1 GB/s = 21 B per 100 MHz cycle, at 75 % efficiency on mixed
    # traffic 15.75 B/cycle for every master together; refresh 26 of every 780 cycles.
    "pynq-z2": MemoryModel(shared_bytes_per_cycle=15.75, charge_streams=True,
                           refresh_interval=780, refresh_cycles=26),
    "stress": MemoryModel(read_latency=48, write_latency=24, port_bytes_per_cycle=3.0,
                          shared_bytes_per_cycle=5.0, charge_streams=True,
                          refresh_interval=780, refresh_cycles=26,
                          gap_ar=0.3, gap_r=0.3, gap_aw=0.3, gap_w=0.3, gap_b=0.3,
                          stall_prob=0.002, stall_max=400, aw_waits_for_w=True),
}

MEMORY_MODEL = MEMORY_PRESETS["ideal"]


def memory_preset(name: str = "ideal", **overrides) -> MemoryModel:
    """A named preset, with any field overridden (``memory_preset("pynq-z2", cpu_share=0.25)``)."""
    from dataclasses import fields, replace
    if name not in MEMORY_PRESETS:
        raise ValueError(f"unknown memory preset {name!r} (known: {', '.join(MEMORY_PRESETS)})")
    known = {f.name for f in fields(MemoryModel)}
    bad = sorted(set(overrides) - known)
    if bad:
        raise ValueError(f"memory preset {name!r}: unknown field(s) {', '.join(bad)} (known: {', '.join(sorted(known))})")
    return replace(MEMORY_PRESETS[name], **overrides)
