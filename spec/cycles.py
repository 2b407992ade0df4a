"""The cycle model of the engine: one frame, layer by layer, from the hardware plan.

An event model at the granularity the RTL twin makes its decisions: per band
(is the input ring far enough?), per (band, channel group) block (are its
weights in the ring?), per block of results bound for DDR (can the write port
drain them?), and per row of the DMAs that feed the rings. Every transfer uses
the memory model of the specification (``spec.engine.MEMORY_MODEL``: read and
write latency, one 64-bit beat per cycle and port, bursts outstanding), so the
model tells compute-bound layers from the ones bound by DDR reads, DDR writes,
the weight stream or the input stream.

    from zynqflow.spec.cycles import predict
    p = predict(plan)                          # plan: zynqflow.export.plan.HwPlan
    p["frame"]["cycles"], p["frame"]["fps_at_100mhz"], p["layers"][i]["cycles"], p["layers"][i]["bound"]

``layers[i]["cycles"]`` is what the RTL twin's ``layer_cycles`` register counts
(layer i's row fetch to the next layer's); ``frame["cycles"]`` is what its
``cycles_last`` counts (first input beat accepted to last logit accepted), with
the input streamed and the logits taken at one beat per cycle.
``frame["period_cycles"]`` adds the restart between frames (auto-restart).
``cached=True`` (default) describes the frames after the first when the whole
weight image fits the on-chip ring (the engine keeps it across frames); the
first frame after a reset or a new weights address reads it (``cached=False``).

Constants are those of :class:`RtlTiming` (each counted from the RTL); the
tests check the model against the RTL twin layer by layer (within 3 %).
It needs only the plan (``plan.layers``, ``plan.engine``, ``plan.stem``, ...),
so it runs on plans that were never exported (the co-design search).
"""

from __future__ import annotations

import bisect
from dataclasses import asdict, dataclass

from . import engine as E


@dataclass(frozen=True)
class RtlTiming:
    """Cycle constants of ``rtl/``, each counted from the logic it describes.

    ``layer_pre``: cycles of a layer before its loop generator looks at its first
    band: row fetch (T_FETCH), decode (T_DECODE), the write-wait check (T_WAITWR),
    the start pulse, the loop generator latching the constants (G_IDLE) and
    forming its per-layer terms (G_PREP).
    ``layer_post``: cycles after the last MAC step issues: G_END (1), the address
    pipeline (3), activation/weight reads (3), the MAC array (8), the requantizer
    (4), the write-back (1), the busy flag's register and the four T_DRAIN cycles.
    A stall-free layer takes ``layer_pre + layer_post`` plus, per band, one
    G_BAND cycle and, per (band, group) block, one G_BLK cycle (the bias step)
    and its MAC steps.
    ``result_latency``: MAC-step issue to the result's entry in the output FIFO.
    ``out_fifo_ahead``: output units the MAC array may run ahead of the write
    port: the FIFO's ``DEPTH - MARGIN`` threshold (40 units) plus results in
    flight when the registered ``full`` stops the loop.
    ``burst_start``: the last unit of a burst in the FIFO to its first W beat
    (command FIFO, AW issue, W queue).
    ``dma_start``: a DMA's request to the AR handshake (command register).
    ``row_written``: last R beat of a ring row to ``rows_avail`` (register slice,
    unit assembly, port B write).
    ``stem_row``: cycles of the stem's window builder per stem row beyond its
    column scan: B_WAIT -> B_SCAN (1), the last column through the window stage
    (1), the queue (1), the port B write (1), B_END's update of ``rows_avail`` (1).
    ``raw_row``: the last pixel of a raw input row to ``raw_avail`` (pixel
    register, count register).
    ``release_delay``: the loop generator passes its releases of ring rows and
    weight words through this many registers (zq_loop_gen REL_DELAY), so that the
    steps still in its address pipeline are done with them.
    ``frame_head``: the first input beat accepted to the first layer's row fetch
    is *before* it (negative: the layer table is read while the beat arrives).
    ``frame_tail``: the last layer's end to the last logit beat, beyond one beat
    per class: T_INPUT, the output start, the GAP RAM read and the output register.
    ``restart``: ap_done to the next frame's first beat with auto-restart (AP_CTRL
    ap_start again, T_CHECK, the stem ready).
    """

    layer_pre: int = 6
    layer_post: int = 22
    result_latency: int = 19
    out_fifo_ahead: int = 41
    burst_start: int = 4
    dma_start: int = 2
    row_written: int = 4
    stem_row: int = 5
    raw_row: int = 2
    release_delay: int = 4
    frame_head: int = -1
    frame_tail: int = 6
    restart: int = 2

    @property
    def layer_overhead(self) -> int:
        return self.layer_pre + self.layer_post


RTL_TIMING = RtlTiming()


# ---- time series of a released count ------------------------------------------------
class _Released:
    """A count that only grows (rows or words a consumer has released), with the time of each step."""

    def __init__(self, start: float = 0.0):
        self.t = [start]
        self.v = [0]

    def set(self, t: float, value: int) -> None:
        if value > self.v[-1]:
            self.t.append(max(t, self.t[-1]))
            self.v.append(value)

    def when(self, value: int) -> float:
        """The time the count reached ``value`` (it must have)."""
        if value <= 0:
            return float("-inf")
        k = bisect.bisect_left(self.v, value)
        if k >= len(self.v):
            raise RuntimeError(f"cycle model: waits for a release of {value} that never comes "
                               f"(released {self.v[-1]}): the plan deadlocks")
        return self.t[k]


class _Stream:
    """A DMA that fills a ring of ``ring`` slots item by item (rows or words) at one beat per
    cycle, with ``latency`` cycles from request to first beat; an item may be requested once
    the consumer has released the item that slot held (``release``)."""

    def __init__(self, t0: float, beats: list[int], ring: int | None, release: _Released, latency: int,
                 extra: int):
        self.beats, self.ring, self.release, self.latency, self.extra = beats, ring, release, latency, extra
        self.done: list[float] = []
        self.t0 = t0

    def ready(self, n: int) -> float:
        """Time at which the first ``n`` items are in the ring."""
        while len(self.done) < n:
            i = len(self.done)
            prev = self.done[-1] if self.done else self.t0
            req = self.t0 if self.ring is None else max(self.t0, self.release.when(i + 1 - self.ring))
            self.done.append(max(prev, req + self.latency) + self.beats[i])
        return self.done[n - 1] + self.extra if n > 0 else float("-inf")


# ---- the model ----------------------------------------------------------------------------
def _need_rows(l, band: int) -> int:
    """Input rows the loop generator waits for before band ``band`` (zq_loop_gen need_rows)."""
    in_rows = l.in_size
    last = (band * l.band_rows + l.band_rows - 1) * l.stride + (l.k - 1) - l.k // 2
    return min(in_rows, last + 1)


def _released_rows(l, band: int) -> int:
    """Input rows released after band ``band`` (zq_loop_gen rows_release)."""
    nxt = (band + 1) * l.band_rows * l.stride
    return min(l.in_size, max(0, nxt - l.k // 2))


def predict(plan, memory: E.MemoryModel = E.MEMORY_MODEL, timing: RtlTiming = RTL_TIMING,
            cached: bool = True, clock_mhz: float = 100.0) -> dict:
    T, M, eng = timing, memory, plan.engine
    n_pe, n_ci = eng.n_pe, eng.n_ci
    bpu = n_pe // 8                        # 64-bit beats per N_PE-byte unit (results, DDR tensors)
    bpw = n_pe * n_ci // 8                 # beats per weight word
    L = plan.layers

    # ---- the weight stream (zq_wdma): header, then the words in consumption order -------------
    w_release = _Released(0.0)
    hdr_beats = plan.header_bytes // 8
    if plan.weight_cache and cached:
        weights = None                     # the image stays on chip from the previous frame
    else:
        t_hdr = T.dma_start + M.read_latency + hdr_beats + 2        # header checked
        ring = None if plan.weight_cache else plan.wring_words
        weights = _Stream(t_hdr, [bpw] * plan.image_words, ring, w_release, M.read_latency + T.dma_start, 2)

    # ---- the stem (zq_stem): raw rows from the stream, stem rows from the window builder -----
    st = plan.stem
    in_px_cycles = max(1.0, st["in_ch"] / 4.0)            # one pixel per cycle, or the stream's 4 bytes
    raw_row = st["in_size"] * in_px_cycles
    units = -(-st["in_words"] // eng.wpg)
    ncol = (st["size"] - 1) * st["s"] + st["k"]
    scan = max(ncol, st["size"] * units if st["s"] == 1 else ncol)
    l0 = L[0]
    stem_release = _Released(0.0)          # first layer's releases of stem rows
    stem_done: list[float] = []
    raw_done: list[float] = []
    raw_release = _Released(0.0)

    def raw_ready(r: int) -> float:        # time raw row r (0-based) is in the raw ring
        while len(raw_done) <= r:
            i = len(raw_done)
            prev = raw_done[-1] if raw_done else 0.0
            room = raw_release.when(i + 2 - st["raw_rows"])   # zq_stem keeps one slot spare
            raw_done.append(max(prev, room) + raw_row)
        return raw_done[r]

    def stem_ready(n: int) -> float:       # time the first n stem rows are in the first layer's ring
        while len(stem_done) < n:
            ys = len(stem_done)
            last_raw = min(st["in_size"] - 1, ys * st["s"] - st["pad"] + st["k"] - 1)
            prev = stem_done[-1] if stem_done else 0.0
            slot = stem_release.when(ys + 1 - l0.ring_rows)
            t = max(prev, raw_ready(last_raw) + T.raw_row, slot) + scan + T.stem_row
            stem_done.append(t)
            raw_release.set(t, max(0, (ys + 1) * st["s"] - st["pad"]))
        return stem_done[n - 1] if n > 0 else float("-inf")

    # ---- layers -----------------------------------------------------------------------------------
    t = float(T.frame_head)
    w_free = float("-inf")                 # the write port has written every queued beat by then
    w_last_b = float("-inf")               # ... and had every write response
    out: list[dict] = []
    rd_bytes = plan.header_bytes if weights is None else plan.image_bytes   # a cached frame checks the header
    wr_bytes = 0
    for li, l in enumerate(L):
        row = l.row
        t_fetch = t
        t = t_fetch + T.layer_pre
        wait_wr = 0.0
        if row.get("rd_wait"):
            t_idle = w_last_b + 1
            if t_idle > t:
                wait_wr = t_idle - t
                t = t_idle
        t_start = t
        # the layer's input ring
        fill = None
        if l.src_kind == E.SRC_DDR:
            cg = row["src_cgrps"]
            fill_release = _Released(t_start)
            fill = _Stream(t_start + T.dma_start, [l.in_size * cg * bpu] * l.in_size, l.ring_rows, fill_release,
                           M.read_latency + T.dma_start, T.row_written)
            rd_bytes += l.in_size * l.in_size * cg * n_pe
        spp = l.k * l.k * l.ci_chunks     # MAC steps per output pixel
        band_px = l.band_rows * l.out_size
        steps = band_px * spp
        stall_rows = stall_w = stall_out = 0.0
        blk0 = l.w_off
        for b in range(l.n_bands):
            # G_BAND: the ring holds the band's rows
            if l.src_kind == E.SRC_STEM:
                tr = stem_ready(_need_rows(l, b))
            elif fill is not None:
                tr = fill.ready(_need_rows(l, b))
            else:
                tr = float("-inf")
            if tr > t:
                stall_rows += tr - t
                t = tr
            t += 1
            for g in range(l.co_groups):
                blk_end = blk0 + (g + 1) * l.w_blk
                if weights is not None:
                    tw = weights.ready(blk_end)
                    if tw > t:
                        stall_w += tw - t
                        t = tw
                t += 1                      # G_BLK: the bias step
                t_run = t
                t += steps
                if l.dst_kind == E.DST_DDR:
                    # the write port drains band_px units of bpu beats; the loop runs at most
                    # out_fifo_ahead units ahead of it
                    first = t_run + spp + T.result_latency + T.burst_start
                    w_free = max(w_free, first) + band_px * bpu
                    lim = w_free - T.out_fifo_ahead * bpu - T.result_latency
                    if lim > t:
                        stall_out += lim - t
                        t = lim
                    w_last_b = w_free + M.write_latency + 1
                    wr_bytes += band_px * n_pe
                if not l.resident:
                    w_release.set(t + T.release_delay, blk_end)
            rel = _released_rows(l, b)
            if l.src_kind == E.SRC_STEM:
                stem_release.set(t + T.release_delay, rel)
            elif fill is not None:
                fill_release.set(t + T.release_delay, rel)
        if l.resident:
            w_release.set(t + T.release_delay, blk0 + l.co_groups * l.w_blk)
        t += T.layer_post
        mac = l.mac_cycles + l.n_bands * (1 + l.co_groups)
        stalls = dict(input_rows=stall_rows, weights=stall_w, ddr_write=stall_out, ddr_write_wait=wait_wr)
        cyc = t - t_fetch
        bound = max(stalls, key=stalls.get) if max(stalls.values()) > 0.02 * cyc else "compute"
        if bound == "input_rows":
            bound = "input stream" if l.src_kind == E.SRC_STEM else "ddr read"
        out.append(dict(name=l.name, cycles=int(round(cyc)), mac_cycles=l.mac_cycles, issue_cycles=mac,
                        stall_cycles={k: int(round(v)) for k, v in stalls.items()}, bound=bound,
                        macs=l.macs))
    n_cls = plan.gap["classes"] if "classes" in plan.gap else plan.cfg.num_classes
    # the frame: the input must be all taken before the logits go out
    t_in = stem_ready(st["size"]) if L else 0.0
    t_in = max(t_in, st["in_bytes"] / 4.0)
    t_end = max(t, t_in) + T.frame_tail + n_cls
    cycles = int(round(t_end))
    macs = sum(l.macs for l in L)
    period = cycles + T.restart
    return dict(
        label="cycle model of the RTL twin (zynqflow.spec.cycles): an event model over the plan, not a measurement",
        memory=asdict(memory), cached_weights=bool(plan.weight_cache and cached), layers=out,
        frame=dict(cycles=cycles, period_cycles=period, clock_mhz=clock_mhz,
                   fps=clock_mhz * 1e6 / period, fps_at_100mhz=100e6 / period,
                   utilization=macs / (n_pe * n_ci * cycles) if cycles else 0.0,
                   mac_cycles=sum(l.mac_cycles for l in L), dram_rd_bytes=int(rd_bytes),
                   dram_wr_bytes=int(wr_bytes)))
