"""The hardware plan: a network laid out for one engine build.

:func:`plan_layout` works from the topology alone (what the co-design search
and the cycle and resource models need); :func:`plan_hardware` adds the
integers and builds the weight image. The plan decides, per the engine
specification (:mod:`zynqflow.spec.engine`):

* the **stem**: the first layer reads the input frame as it streams in;
  when its input has fewer channels than N_CI, the stem writes the im2col
  of the frame (k*k*C_in channels per output pixel) and the first layer runs
  as a 1x1 convolution on it;
* **where each tensor lives**: in the on-chip activation RAM when it fits,
  else in DDR. Tensors are moved to DDR, largest first, while the peak of
  the live on-chip regions exceeds the budget. A layer that reads a DDR
  tensor (or the stem) works in bands of output rows through a ring of input
  rows, so its weights must stay in the weight ring for the whole layer;
* **bands and rings**: one output row per band for ring-fed layers, the whole
  map otherwise; a ring holds the k rows of a band plus the s rows of the next;
* **addresses**: activation-RAM regions (tensors and rings) by first fit over
  their lifetimes; DDR tensors at 4 KiB-aligned offsets of the scratch area;
* **the weight ring**: the whole weight image when it fits the cache budget
  (read once per weights address), else a ring that holds the largest
  resident layer plus one block, or two blocks of a streamed layer;
* **the activation paths**: each DDR tensor's writes and reads go over path 1 (m_axi_act),
  path 2 (m_axi_act2 reads, m_axi_wts writes) or both (lines or rows alternate);
* **the layer table**: one packed row per layer (:data:`zynqflow.spec.engine.ROW`).

Every refusal is an :class:`ExportError` naming the layer or tensor and the
limit it breaks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from zynqflow.spec import engine as E
from zynqflow.spec.qnet import QNet
from zynqflow.spec.topology import INPUT, NetConfig


class ExportError(ValueError):
    """The network cannot be exported for this engine; names the layer (or file) and why."""

    def __init__(self, where: str, reason: str):
        self.where, self.reason = where, reason
        super().__init__(f"{where}: {reason}")


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _lg(n: int) -> int:
    return int(n).bit_length() - 1


def _pow2_ceil(n: int) -> int:
    return 1 << max(0, (int(n) - 1).bit_length())


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class EngineParams:
    """Build parameters of the engine a network is laid out for.

    ``act_kb``: the largest on-chip activation RAM the plan may ask for (KiB);
    ``wcache_kb``: the largest weight image kept whole on chip (KiB);
    ``wring_words``: the weight ring when the image does not fit (0 = smallest
    that works, at least 512 words); ``band_rows``: output rows per band of a
    ring-fed layer; ``dsp_pairs``: MAC lane pairs packed two to a DSP48E1, the
    other pairs are two exact LUT multipliers each (None: as many as the part's
    DSP48E1 allow after the rest of the design, :data:`DSP48E1_BUDGET`);
    ``act_paths``: activation paths between the engine and its DDR tensors (1:
    m_axi_act; 2: also m_axi_act2 for reads and m_axi_wts's write channel)."""

    n_pe: int = 16
    n_ci: int = 8
    act_kb: int = 320
    wcache_kb: int = 288
    wring_words: int = 0
    band_rows: int = 1
    dsp_pairs: int | None = None
    act_paths: int = 2

    def check(self) -> None:
        for v, n in ((self.n_pe, "n_pe"), (self.n_ci, "n_ci"), (self.band_rows, "band_rows")):
            if not _pow2(v):
                raise ExportError("engine", f"{n}={v} must be a power of two")
        if self.n_pe % self.n_ci:
            raise ExportError("engine", f"n_pe={self.n_pe} must be a multiple of n_ci={self.n_ci}")
        if self.n_ci < 4:
            raise ExportError("engine", f"n_ci={self.n_ci} < 4: a weight word must hold the N_PE 32-bit biases")
        if self.n_pe < 8:
            raise ExportError("engine", f"n_pe={self.n_pe} < 8: a result unit of N_PE bytes must fill a 64-bit "
                                        "DDR beat (and two output channels share a DSP48E1)")
        if self.word_bytes != 64 and self.word_bytes % 128:
            raise ExportError("engine", f"n_pe x n_ci = {self.word_bytes}: a weight word must be 64 bytes or a "
                                        "multiple of 128 (whole 16-beat bursts)")
        if self.n_pe > 64 or self.n_ci > 64:
            raise ExportError("engine", f"n_pe={self.n_pe}, n_ci={self.n_ci}: at most 64 each")
        if self.wring_words and not _pow2(self.wring_words):
            raise ExportError("engine", f"wring_words={self.wring_words} must be a power of two")
        if self.dsp_pairs is not None and not 0 <= self.dsp_pairs <= self.lane_pairs:
            raise ExportError("engine", f"dsp_pairs={self.dsp_pairs}: 0..{self.lane_pairs} (the lane pairs of "
                                        f"{self.n_pe} x {self.n_ci})")
        if self.act_paths not in (1, 2):
            raise ExportError("engine", f"act_paths={self.act_paths}: 1 or 2")

    @property
    def lanes(self) -> int:
        """MAC lanes: N_PE x N_CI."""
        return self.n_pe * self.n_ci

    @property
    def lane_pairs(self) -> int:
        """Lane pairs (output channels pe and pe + N_PE/2 of one input lane): one DSP48E1 each, or two
        LUT multipliers."""
        return self.lanes // 2

    @property
    def dsp48e1(self) -> int:
        """Lane pairs on DSP48E1 (``dsp_pairs``, or as many as :data:`DSP48E1_BUDGET` allows)."""
        return min(self.lane_pairs, DSP48E1_BUDGET) if self.dsp_pairs is None else self.dsp_pairs

    @property
    def lut_lanes(self) -> int:
        """MAC lanes on exact LUT multipliers (zq_lut_mul)."""
        return 2 * (self.lane_pairs - self.dsp48e1)

    @property
    def wpg(self) -> int:
        return self.n_pe // self.n_ci

    @property
    def word_bytes(self) -> int:
        """Bytes of a weight word: N_PE x N_CI int8."""
        return self.n_pe * self.n_ci

    @property
    def act_word_bytes(self) -> int:
        return self.n_ci * E.LANE_BITS // 8


# DSP48E1 of the xc7z020 (PYNQ-Z2) that the MAC array may take: the part's 220, less what the rest
# of the design uses: none (the engine outside the MAC array has no multiplier; the block design's
# AXI DMA, interconnect and interrupt controller use no DSP48E1).
DSP48E1_BUDGET = 220


def default_engine(cfg: NetConfig) -> EngineParams:
    """The engine an export uses when none is given. ImageNet-class networks (over 100 M MACs per
    frame): 32 x 16 MAC lanes, 220 lane pairs on DSP48E1 and 72 lanes on LUT multipliers, both
    activation paths, 192 KiB of activation RAM (the full ZynqNet: ~81 fps at 100 MHz under the
    pynq-z2 memory, 106 BRAM36 with its 512-word weight ring; 288 KiB would keep f4 and f5 on chip
    for 1 fps more and 133 BRAM36); ``EngineParams(16, 16, act_paths=1)`` is the engine before
    (128 DSP48E1, one path, 320 KiB: 46 fps). The small ones keep 16 x 8 (64 DSP48E1;
    zynqnet-mini: ~1 630 fps), whose narrow layers would leave half of a 16-lane reduction idle.
    The co-design search picks engines per design instead (zynqflow.dse)."""
    macs = sum(o * o * l.k * l.k * l.cin * l.cout for l, o in
               ((l, cfg.tensor_shapes()[l.dst][0]) for l in cfg.conv_layers))
    return EngineParams(32, 16, act_kb=192) if macs > 100_000_000 else EngineParams(16, 8)


def engine_from_args(cfg: NetConfig, n_pe: int | None = None, n_ci: int | None = None, **given) -> EngineParams:
    """The engine of a command line: the network's default engine, or ``EngineParams(n_pe, n_ci)``
    when they are given; then each option in ``given`` that is not None."""
    from dataclasses import replace

    base = default_engine(cfg) if n_pe is None else EngineParams(n_pe, n_ci)
    return replace(base, **{k: v for k, v in given.items() if v is not None})


@dataclass
class Tensor:
    """A tensor of the network and where the plan puts it."""

    name: str
    size: int                      # H = W
    channels: int
    first_write: int               # layer index
    last_write: int
    readers: list[int] = field(default_factory=list)
    signed: bool = False
    place: str = "act"             # "act", "ddr", "gap", "input"
    act_base: int = 0              # activation-RAM row (per bank)
    ddr_off: int = 0               # byte offset in the scratch area
    wr_path: int = 0               # DDR tensors: the activation paths of its writes / reads (E.PATH_*)
    rd_path: int = 0

    @property
    def last_use(self) -> int:
        return max(self.readers) if self.readers else self.last_write


@dataclass
class Region:
    """An activation-RAM region alive over layers [start, end] (inclusive)."""

    what: str
    rows: int                      # rows per bank
    start: int
    end: int
    base: int = 0


@dataclass
class PlanLayer:
    """One conv layer as the engine runs it."""

    index: int
    name: str
    src: str
    dst: str
    k: int                         # as run (1 for the im2col'ed stem)
    stride: int
    in_size: int
    out_size: int
    cin: int                       # channels the MAC loop reads (k*k*C_in for the im2col'ed stem)
    cout: int
    ci_chunks: int
    co_groups: int
    relu: bool
    src_kind: int
    dst_kind: int
    band_rows: int
    ring_rows: int                 # ring-fed layers: rows of the input ring; else in_size
    w_blk: int
    w_off: int = 0
    resident: bool = False
    macs: int = 0                  # the network's MACs of this layer (padding taps included)
    row: dict = field(default_factory=dict)

    @property
    def n_bands(self) -> int:
        return self.out_size // self.band_rows

    @property
    def mac_cycles(self) -> int:
        """MAC-array steps: groups x output pixels x taps x input words."""
        return self.co_groups * self.out_size ** 2 * self.k ** 2 * self.ci_chunks

    @property
    def weight_words(self) -> int:
        return self.co_groups * self.w_blk


@dataclass
class HwPlan:
    """Everything an engine build and its host need for one network."""

    cfg: NetConfig
    engine: EngineParams
    layers: list[PlanLayer]
    tensors: dict[str, Tensor]
    regions: list[Region]
    act_rows: int                  # rows per bank of the activation RAM
    wring_words: int
    weight_cache: bool
    image_words: int               # weight words after the header
    scratch_bytes: int             # DDR activation scratch area
    stem: dict                     # stem geometry (see plan_layout)
    gap: dict                      # GAP_CH, GAP_ROWS, GAP_SHIFT, the rounding (NetConfig.gap_round)
    rows: list[int] = field(default_factory=list)      # packed layer-table rows
    weight_image: bytes | None = None                  # plan_hardware only
    net_id: int = 0

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def header_bytes(self) -> int:
        return E.header_bytes(self.engine.word_bytes)

    @property
    def image_bytes(self) -> int:
        return self.header_bytes + self.image_words * self.engine.word_bytes

    @property
    def wbuf_depth(self) -> int:
        """Words of the weight-ring RAM: the image when it is cached whole, else the ring."""
        return self.image_words if self.weight_cache else self.wring_words

    @property
    def act_paths(self) -> int:
        """Activation paths the layer table uses (2 when any row uses path 2): the RTL builds that many."""
        used = 0
        for l in self.layers:
            used |= l.row.get("src_path", 0) | l.row.get("dst_path", 0)
        return 2 if used & E.PATH_2 else 1

    @property
    def ddr_tensors(self) -> bool:
        return any(t.place == "ddr" for t in self.tensors.values())

    @property
    def mac_cycles(self) -> int:
        return sum(l.mac_cycles for l in self.layers)

    @property
    def macs(self) -> int:
        return sum(l.macs for l in self.layers)

    def act_bytes(self) -> int:
        """On-chip activation RAM in bytes (all banks)."""
        return self.act_rows * self.engine.wpg * self.engine.act_word_bytes

    def wring_bytes(self) -> int:
        return self.wring_words * self.engine.word_bytes


# ---------------------------------------------------------------------------
def _engine_checks(cfg: NetConfig, engine: EngineParams) -> None:
    if cfg.weight_bits > E.W_BITS_MAX:
        raise ExportError(cfg.name, f"weight_bits={cfg.weight_bits}: the engine takes at most {E.W_BITS_MAX}-bit "
                                    "weights (two share one DSP48E1 multiplier)")
    if cfg.act_bits > E.LANE_BITS:
        raise ExportError(cfg.name, f"act_bits={cfg.act_bits}: activations are stored in {E.LANE_BITS}-bit lanes")
    if cfg.out_bits > E.OUT_BITS_MAX:
        raise ExportError(cfg.name, f"out_bits={cfg.out_bits}: logits are at most {E.OUT_BITS_MAX} bits")
    first = cfg.conv_layers[0]
    for l in cfg.conv_layers[1:]:
        if l.src == INPUT:
            raise ExportError(f"layer '{l.name}'", "only the first layer may read the input frame")
    if first.src != INPUT:
        raise ExportError(f"layer '{first.name}'", "the first layer must read the input frame")
    if (cfg.input_size ** 2 * cfg.in_channels) % E.PIXELS_PER_BEAT:
        raise ExportError("input", f"{cfg.input_size}x{cfg.input_size}x{cfg.in_channels} bytes are not a whole "
                                   f"number of {E.STREAM_BITS}-bit stream beats")


def _tensors(cfg: NetConfig) -> dict[str, Tensor]:
    shapes = cfg.tensor_shapes()
    ts: dict[str, Tensor] = {}
    for i, l in enumerate(cfg.conv_layers):
        size, ch = shapes[l.dst]
        t = ts.get(l.dst)
        if t is None:
            ts[l.dst] = Tensor(l.dst, size, ch, i, i, signed=not l.relu)
        else:
            t.last_write = i
        if l.src != INPUT:
            ts[l.src].readers.append(i)
    ts[cfg.output_tensor].place = "gap"
    return ts


def plan_layout(cfg: NetConfig, engine: EngineParams = EngineParams()) -> HwPlan:
    """Lay a topology out for the engine (no integers needed): stem, placements,
    bands, rings, addresses, weight ring, and the layer-table rows without the
    quantization fields (``plan_hardware`` fills those)."""
    engine.check()
    _engine_checks(cfg, engine)
    P, C, WPG = engine.n_pe, engine.n_ci, engine.wpg
    convs = cfg.conv_layers
    tensors = _tensors(cfg)
    out_t = cfg.output_tensor

    # ---- stem -------------------------------------------------------------
    first = convs[0]
    in_size, in_ch = cfg.input_size, cfg.in_channels
    im2col = first.k > 1 and in_ch < C
    s_k, s_s = (first.k, first.stride) if im2col else (1, 1)
    s_size = (in_size + s_s - 1) // s_s
    s_ch = s_k * s_k * in_ch
    in_words = _ceil(s_ch, C)
    stem = dict(im2col=int(im2col), in_size=in_size, in_ch=in_ch, k=s_k, s=s_s, pad=s_k // 2,
                size=s_size, ch=s_ch, in_words=in_words,
                in_bytes=in_size * in_size * in_ch, raw_rows=_pow2_ceil(s_k + s_s + 1))

    # ---- layers as the engine runs them -------------------------------------
    shapes = cfg.tensor_shapes()
    layers: list[PlanLayer] = []
    for i, l in enumerate(convs):
        where = f"layer '{l.name}'"
        is_stem = i == 0
        k, s, isz, cin = (1, 1, s_size, s_ch) if (is_stem and im2col) else (l.k, l.stride, shapes[l.src][0], l.cin)
        osz = shapes[l.dst][0]
        chunks = in_words if is_stem else _ceil(cin, C)
        dst_kind = E.DST_GAP if l.dst == out_t else E.DST_ACT
        layers.append(PlanLayer(
            index=i, name=l.name, src=l.src, dst=l.dst, k=k, stride=s, in_size=isz, out_size=osz, cin=cin,
            cout=l.cout, ci_chunks=chunks, co_groups=_ceil(l.cout, P), relu=l.relu,
            src_kind=E.SRC_STEM if is_stem else E.SRC_ACT, dst_kind=dst_kind, band_rows=osz, ring_rows=isz,
            w_blk=1 + k * k * chunks, macs=osz * osz * l.k * l.k * l.cin * l.cout))
        # concatenation offsets must be whole words on chip, whole groups in DDR / GAP
        if dst_kind == E.DST_GAP and l.dst_offset % P:
            raise ExportError(where, f"writes the logits from channel {l.dst_offset}: head parts must start at "
                                     f"multiples of N_PE={P}")
        if dst_kind == E.DST_ACT:
            dt = tensors[l.dst]
            if l.dst_offset % C or (l.dst_offset + l.cout < dt.channels and l.cout % C):
                raise ExportError(where, f"concatenation offset {l.dst_offset} / width {l.cout} not a multiple of "
                                         f"N_CI={C}: the engine writes whole channel words")

    # ---- weight ring (what stays resident is decided with the placement) ----
    total_words = sum(l.weight_words for l in layers)
    word_bytes = engine.word_bytes
    cache = total_words * word_bytes <= engine.wcache_kb * 1024
    max_blk = max(l.w_blk for l in layers)
    if cache:
        wring = _pow2_ceil(total_words)
    else:
        wring = engine.wring_words or max(512, _pow2_ceil(2 * max_blk))

    def can_band(li: int) -> bool:
        """Layer li may run in bands (ring-fed): all its blocks fit the ring with one more block."""
        l = layers[li]
        return cache or l.weight_words + max_blk <= wring

    # stem layer: always ring-fed
    if not can_band(0):
        raise ExportError(f"layer '{layers[0].name}'", f"the stem layer's {layers[0].weight_words} weight words do "
                                                       f"not fit the weight ring of {wring} words")

    # ---- placement: move tensors to DDR while the on-chip peak is too high ---
    budget_rows = engine.act_kb * 1024 // (WPG * engine.act_word_bytes)

    def ddr_ok(t: Tensor) -> bool:
        writers = [l for l in convs if l.dst == t.name]
        if any(w.dst_offset % P for w in writers) or any(w.cout % P for w in writers[:-1]):
            return False
        return all(can_band(r) for r in t.readers)

    def ring_rows(l: PlanLayer, band: int) -> int:
        need = (band - 1) * l.stride + l.k + band * l.stride
        return min(_pow2_ceil(need), l.in_size) if l.src_kind != E.SRC_STEM else _pow2_ceil(need)

    def regions() -> list[Region]:
        out: list[Region] = []
        for t in tensors.values():
            if t.place == "act":
                out.append(Region(f"tensor '{t.name}'", _ceil(_ceil(t.channels, C), WPG) * t.size * t.size,
                                  t.first_write, t.last_use))
        for l in layers:
            if l.src_kind == E.SRC_STEM:
                out.append(Region(f"stem ring of '{l.name}'", _ceil(in_words, WPG) * l.ring_rows * l.in_size,
                                  0, 0))
            elif l.src_kind == E.SRC_DDR:
                cg = _ceil(tensors[l.src].channels, P)
                out.append(Region(f"input ring of '{l.name}'", cg * l.ring_rows * l.in_size, l.index, l.index))
        return out

    def configure() -> None:
        for l in layers:
            if l.index == 0:
                l.src_kind, l.band_rows = E.SRC_STEM, min(engine.band_rows, l.out_size)
            elif tensors[l.src].place == "ddr":
                l.src_kind, l.band_rows = E.SRC_DDR, min(engine.band_rows, l.out_size)
            else:
                l.src_kind, l.band_rows = E.SRC_ACT, l.out_size
            l.ring_rows = ring_rows(l, l.band_rows) if l.src_kind != E.SRC_ACT else l.in_size
            if l.dst != out_t:
                l.dst_kind = E.DST_DDR if tensors[l.dst].place == "ddr" else E.DST_ACT
            l.resident = l.n_bands > 1

    def peak(regs: list[Region]) -> tuple[int, int]:
        best, at = 0, 0
        for i in range(len(layers)):
            live = sum(r.rows for r in regs if r.start <= i <= r.end)
            if live > best:
                best, at = live, i
        return best, at

    configure()
    while True:
        regs = regions()
        need, at = peak(regs)
        if need <= budget_rows:
            break
        live = [t for t in tensors.values() if t.place == "act" and t.first_write <= at <= t.last_use and ddr_ok(t)]
        if not live:
            kb = need * WPG * engine.act_word_bytes / 1024
            raise ExportError(f"layer '{layers[at].name}'",
                              f"needs {kb:.0f} KiB of on-chip activations (tensors and rings live there: "
                              f"{', '.join(r.what for r in regs if r.start <= at <= r.end)}), the budget is "
                              f"{engine.act_kb} KiB, and none of them can move to DDR (their readers' weights do "
                              f"not fit the {wring}-word weight ring, or a writer's channel offset is not a "
                              f"multiple of N_PE={P}); raise act_kb or wcache_kb/wring_words")
        max(live, key=lambda t: t.size * t.size * t.channels).place = "ddr"
        configure()
    for l in layers:
        if l.dst_kind == E.DST_GAP and l.src_kind != E.SRC_ACT:
            raise ExportError(f"layer '{l.name}'", "the final conv must read an on-chip tensor (it writes the "
                                                   "global-average-pool sums in one pass per channel group)")

    # weight ring for streamed layers: two blocks of the largest streamed layer
    if not cache:
        need_w = max([l.weight_words + max_blk for l in layers if l.resident] + [2 * max_blk])
        if not engine.wring_words:
            wring = max(wring, _pow2_ceil(need_w))
        for l in layers:
            if l.resident and l.weight_words > wring:
                raise ExportError(f"layer '{l.name}'", f"runs in bands and keeps its {l.weight_words} weight words "
                                                       f"resident, the weight ring holds {wring}")
            if l.w_blk > wring:
                raise ExportError(f"layer '{l.name}'", f"a weight block of {l.w_blk} words exceeds the {wring}-word "
                                                       "weight ring")

    # ---- addresses ----------------------------------------------------------
    regs = regions()
    placed: list[Region] = []
    for r in sorted(regs, key=lambda r: (-r.rows, r.start)):   # largest first, lowest free address
        base = 0
        for o in sorted((o for o in placed if not (o.end < r.start or o.start > r.end)), key=lambda o: o.base):
            if base + r.rows <= o.base:
                break
            base = max(base, o.base + o.rows)
        r.base = base
        placed.append(r)
    act_rows = max([r.base + r.rows for r in placed] + [1])
    by_what = {r.what: r for r in placed}
    for t in tensors.values():
        if t.place == "act":
            t.act_base = by_what[f"tensor '{t.name}'"].base
    scratch = 0
    for t in tensors.values():
        if t.place == "ddr":
            t.ddr_off = scratch
            scratch += _ceil(_ceil(t.channels, P) * t.size * t.size * P, E.ADDR_ALIGN) * E.ADDR_ALIGN
            t.wr_path, t.rd_path = tensor_paths(engine, t, [layers[r] for r in t.readers])

    # ---- weight offsets and rows --------------------------------------------
    off = 0
    for l in layers:
        l.w_off = off
        off += l.weight_words
    gap_t = tensors[out_t]
    gap = dict(ch=_ceil(gap_t.channels, P) * P, rows=_ceil(gap_t.channels, P), shift=_lg(gap_t.size ** 2),
               classes=cfg.num_classes, round=cfg.gap_round)
    plan = HwPlan(cfg=cfg, engine=engine, layers=layers, tensors=tensors, regions=placed, act_rows=act_rows,
                  wring_words=wring, weight_cache=cache, image_words=total_words, scratch_bytes=scratch,
                  stem=stem, gap=gap)
    for l in layers:
        l.row = _row_geometry(plan, l, convs[l.index])
    check_overlaps(plan)
    return plan


def tensor_paths(engine: EngineParams, t: Tensor, readers: list[PlanLayer]) -> tuple[int, int]:
    """The activation paths of a DDR tensor's writes and reads (masks of ``E.PATH_1``, ``E.PATH_2``).
    With two paths the writes go over both (even 128-byte lines on path 1, odd ones on path 2:
    16 bytes a cycle for a write-bound layer), and so do the reads when each reader's ring holds
    two rows or more (even input rows on path 1, odd rows on path 2) and a result unit is at least
    two beats (N_PE >= 16: the two paths share the activation RAM's port B cycle by cycle, so
    one-beat units would gain nothing); else everything goes over path 1."""
    if engine.act_paths < 2:
        return E.PATH_1, E.PATH_1
    two_rows = all(l.ring_rows >= 2 and l.in_size >= 2 for l in readers)
    return E.PATH_BOTH, E.PATH_BOTH if two_rows and engine.n_pe >= 16 else E.PATH_1


def row_regions(row: dict, engine: EngineParams, in_words: int) -> dict:
    """What a layer-table row reads and writes: ``src_act`` / ``dst_act`` (activation-RAM rows per
    bank, [first, end)) and ``src_ddr`` / ``dst_ddr`` (scratch-area bytes, [first, end)), None where
    the layer has no such region. The same arithmetic as ``layer_table_error()`` in hls/zq_top.cpp."""
    P, C, WPG = engine.n_pe, engine.n_ci, engine.wpg
    src_words = (in_words if row["src_kind"] == E.SRC_STEM else
                 row["ci_chunks"] if row["src_kind"] == E.SRC_ACT else row["src_cgrps"] * WPG)
    out = dict(src_act=(row["src_base"], row["src_base"] + (_ceil(src_words, WPG) << (row["src_lg_rows"] + row["lg_in"]))),
               dst_act=None, src_ddr=None, dst_ddr=None)
    if row["dst_kind"] == E.DST_ACT:
        last_cw = row["dst_cw0"] + (row["co_groups"] - 1) * WPG + _ceil(row["co_last"], C) - 1
        out["dst_act"] = (row["dst_base"] + ((row["dst_cw0"] // WPG) << (2 * row["lg_out"])),
                          row["dst_base"] + ((last_cw // WPG + 1) << (2 * row["lg_out"])))
    if row["src_kind"] == E.SRC_DDR:
        out["src_ddr"] = (row["src_ddr"], row["src_ddr"] + (row["src_cgrps"] << (2 * row["lg_in"])) * P)
    if row["dst_kind"] == E.DST_DDR:
        out["dst_ddr"] = (row["dst_ddr"] + (row["dst_cg0"] << (2 * row["lg_out"])) * P,
                          row["dst_ddr"] + ((row["dst_cg0"] + row["co_groups"]) << (2 * row["lg_out"])) * P)
    return out


def check_overlaps(plan: HwPlan) -> None:
    """Refuse a plan in which a layer reads a region it writes: both engines read and write their
    activation RAM in one pipeline whose memory is declared free of dependences (the HLS core's
    DEPENDENCE pragma, the RTL's write-back beside its reads), and a DDR tensor read and written by
    one layer would be overwritten before it is read. ExportError names the layer and both regions."""
    for l in plan.layers:
        reg = row_regions(l.row, plan.engine, plan.stem["in_words"])
        for what, src, dst, unit in (("activation-RAM rows", reg["src_act"], reg["dst_act"], "row"),
                                     ("scratch-area bytes", reg["src_ddr"], reg["dst_ddr"], "byte")):
            if src and dst and src[0] < dst[1] and dst[0] < src[1]:
                raise ExportError(f"layer '{l.name}'",
                                  f"reads {what} {src[0]}..{src[1] - 1} and writes {dst[0]}..{dst[1] - 1}: a layer "
                                  f"must never read the region it writes (overlap from {unit} "
                                  f"{max(src[0], dst[0])})")


def _row_geometry(plan: HwPlan, l: PlanLayer, spec) -> dict:
    """The layer-table fields that follow from the layout (quantization fields are zero)."""
    P, C = plan.engine.n_pe, plan.engine.n_ci
    t_src = plan.tensors.get(l.src)
    t_dst = plan.tensors[l.dst]
    row = dict.fromkeys((f.name for f in E.ROW), 0)
    row.update(lg_in=_lg(l.in_size), lg_out=_lg(l.out_size), k3=int(l.k == 3), s2=int(l.stride == 2),
               ci_chunks=l.ci_chunks, co_groups=l.co_groups, co_last=l.cout - (l.co_groups - 1) * P,
               lg_band=_lg(l.band_rows), relu=int(l.relu), src_kind=l.src_kind,
               src_signed=int(bool(t_src and t_src.signed)), src_lg_rows=_lg(l.ring_rows),
               dst_kind=l.dst_kind, w_off=l.w_off, w_blk=l.w_blk, w_res=int(l.resident),
               rd_wait=int(l.src_kind == E.SRC_DDR))
    if l.src_kind == E.SRC_STEM:
        row["src_base"] = next(r.base for r in plan.regions if r.what.startswith("stem ring"))
    elif l.src_kind == E.SRC_DDR:
        row["src_base"] = next(r.base for r in plan.regions if r.what == f"input ring of '{l.name}'")
        row["src_cgrps"] = _ceil(t_src.channels, P)
        row["src_ddr"] = t_src.ddr_off
        row["src_path"] = t_src.rd_path
    else:
        row["src_base"] = t_src.act_base
    if l.dst_kind == E.DST_ACT:
        row["dst_base"] = t_dst.act_base
        row["dst_cw0"] = spec.dst_offset // C
    elif l.dst_kind == E.DST_DDR:
        row["dst_cg0"] = spec.dst_offset // P
        row["dst_cgrps"] = _ceil(t_dst.channels, P)
        row["dst_ddr"] = t_dst.ddr_off
        row["dst_path"] = t_dst.wr_path
    else:
        row["dst_cg0"] = spec.dst_offset // P
    return row


# ---------------------------------------------------------------------------
def plan_hardware(qnet: QNet, engine: EngineParams = EngineParams()) -> HwPlan:
    """:func:`plan_layout` plus the quantization fields of every row and the weight image."""
    plan = plan_layout(qnet.cfg, engine)
    P, C = engine.n_pe, engine.n_ci
    words: list[np.ndarray] = []
    for l, q in zip(plan.layers, qnet.layers):
        where = f"layer '{l.name}'"
        if not -31 <= q.shift <= 31:
            raise ExportError(where, f"requantization shift {q.shift} is outside -31..31")
        l.row.update(shift=q.shift, out_lo=q.out_format.lo, out_hi=q.out_format.hi)
        w = q.w
        if l.index == 0 and plan.stem["im2col"]:
            w = w.reshape(q.cout, 1, 1, q.k * q.k * q.cin)
        groups, chunks, k = l.co_groups, l.ci_chunks, l.k
        wp = np.zeros((groups * P, k, k, chunks * C), np.int64)
        wp[: q.cout, :, :, : w.shape[3]] = w
        # word (g, tap, chunk) = [pe][ci] = w[g*P + pe, ky, kx, chunk*C + ci]
        wwords = wp.reshape(groups, P, k * k, chunks, C).transpose(0, 2, 3, 1, 4).reshape(groups, k * k * chunks, P * C)
        bias = np.zeros((groups, P), np.int64)
        bias.reshape(-1)[: q.cout] = q.b
        for g in range(groups):
            bw = np.zeros(P * C, np.uint8)
            bw[: 4 * P] = np.frombuffer(bias[g].astype("<i4").tobytes(), np.uint8)
            words.append(bw)
            words.append(wwords[g].astype(np.int8).view(np.uint8).reshape(-1, P * C))
    for l in plan.layers:
        try:
            l.row_packed = E.pack_row(l.row, f"layer '{l.name}'")
        except ValueError as e:    # a field the row cannot hold (e.g. a weight block over 4095 words)
            raise ExportError(f"layer '{l.name}'", str(e).split(": ", 1)[-1]) from None
    plan.rows = [l.row_packed for l in plan.layers]
    plan.net_id = qnet.network_id()
    body = np.concatenate([w.reshape(-1) for w in words]) if words else np.zeros(0, np.uint8)
    if body.size != plan.image_words * engine.word_bytes:
        raise ExportError(qnet.name, f"weight image has {body.size} bytes, the plan expects "
                                     f"{plan.image_words * engine.word_bytes}")
    plan.weight_image = weight_header(plan) + body.tobytes()
    return plan


def weight_header(plan: HwPlan) -> bytes:
    """The weight image header (spec.engine.HEADER), padded to ``plan.header_bytes``."""
    vals = dict(magic=E.HEADER_MAGIC, spec_version=E.SPEC_VERSION, net_id=plan.net_id,
                word_bytes=plan.engine.word_bytes, n_words=plan.image_words, header_bytes=plan.header_bytes)
    raw = b"".join(int(vals[f.name]).to_bytes(f.bits // 8, "little") for f in E.HEADER)
    return raw + bytes(plan.header_bytes - len(raw))
