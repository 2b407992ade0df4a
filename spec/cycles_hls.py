"""The cycle model of the HLS engine (``hls/``): one frame of its overlapped schedule, from the plan.

The HLS engine is a DATAFLOW design (``hls/zq_frame.h``): per frame a weight reader, the stem
and the output process run beside a sequence of layer regions, each of which runs a DDR fill
reader, the core and a DDR writer side by side. The core (``hls/zq_core.h``) is one free-running
II=1 loop per layer that owns the activation RAM and the weight RAM and takes, in any cycle, a
weight beat, a ring unit and one MAC-array step, with the RTL twin's ring flow control. So the
model is an event model like :mod:`zynqflow.spec.cycles` (the RTL twin's), at the granularity at
which the core decides:

* per word of the weight image: the reader streams the words at the memory's rate, at most
  ``W_FIFO`` beats ahead of the core, which takes a beat per cycle into a free ring slot (a slot
  frees ``release_guard`` cycles after its word's release); a word is usable ``avail_guard``
  cycles after its last beat;
* per row of a ring (the stem's or a DDR tensor's): the stem builds its rows from the input
  stream (raw rows, then the column scan), the fill reader reads them at the memory's rate, each
  at most a FIFO ahead of the core, which takes a unit per cycle into a free slot; with both
  activation paths (the row field ``src_path``) two fill readers, even rows and odd rows, each at
  its port's rate through its own FIFO, and a band's rows are in when both halves are;
* per band and block of the core: a band waits for its input rows, a block for its words, then
  one bias step and the block's MAC steps; results bound for DDR go through ``OUT_FIFO`` to the
  writer (a beat per cycle at the memory's rate): the core stalls when it is full; with both
  paths (``dst_path``, runs of two lines or more) alternate 128-byte lines go to two writers, each
  with its FIFO and its port;
* per layer region: its start, the core's pipeline drain, the writer's last write response.

Every transfer uses the memory model of the specification (``spec.engine.MemoryModel``, a preset
by name or a model) as the RTL twin's model reads it: the read and write latency, each port's
rate (``spec.cycles.port_rates``: its token bucket, refresh, gaps and stalls, the outstanding
limit), and the shared DDR budget, shared as ``spec.cycles.predict`` shares it: each channel
(the weight reads, both paths' reads and writes) moves its beats through a ``spec.cycles._Channel``,
and after a pass the channels busy in the same window of a layer's time share what the budget
leaves after the charged streams (``spec.cycles._share``), which slows them in the next pass
(the same passes as ``spec.cycles.predict``'s: ``spec.cycles.share_passes``).

    from zynqflow.spec.cycles_hls import predict_hls
    p = predict_hls(plan)                          # plan: zynqflow.export.plan.HwPlan
    p = predict_hls(plan, memory="pynq-z2")
    p["frame"]["cycles"], p["frame"]["fps"], p["layers"][i]["cycles"], p["layers"][i]["bound"]

The constants (:class:`HlsTiming`) of Vitis's schedule are estimates (Vitis is not run here).
:data:`CSIM` is the timing of the C simulation's lockstep mode (``zynqflow.sim.csim.runner``, mode
``lockstep``: one loop iteration per process and cycle, FIFOs of one cycle's latency, no pipeline
depths), in which the C simulation counts each layer region's cycles and each process's
iterations and stalls; ``predict_hls(plan, memory="csim", timing=CSIM)`` predicts those, and the
tests check the model against them (:func:`csim_counts` gives the work counts, which are exact).

It uses only the plan, so it runs on plans that were never exported (the co-design search); it
imports neither torch nor export/.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import asdict, dataclass

from . import engine as E
from .cycles import (_Channel, _need_rows, _Released, _released_rows, _spread, _Timeline, port_rates,
                     share_passes)
from .cycles import memory_of as _rtl_memory_of

# hls/zq_count.h's enum Counter, in order (sim/csim/runner.py reads the C simulation's counts by these)
COUNTERS = ("header", "wload", "raw", "scan", "stem_write", "rest", "drain", "out", "fill", "core", "bias", "mac",
            "wait_rows", "wait_weights", "tail", "w_beats", "units", "port_busy", "results", "ddr_write", "logits",
            "span")

# hls/zq_types.h: stream depths and the core's guards
W_FIFO = 64            # weight beats
STEM_FIFO = 32         # stem units
FILL_FIFO = 32         # DDR ring units
OUT_FIFO = 64          # result units bound for DDR
AVAIL_GUARD = E.HLS_GUARD     # iterations from a ring row's or weight word's last store to its first read
RELEASE_GUARD = E.HLS_GUARD   # iterations from a weight-RAM slot's release to its first store
ROW_RELEASE_GUARD = 1         # iterations from a ring row's release to its first store
HEADER_BEATS = 3       # zq_weights.h header_ok: the HEADER fields' three 64-bit beats

LABEL = "modelled (HLS engine, overlapped dataflow schedule; Vitis pipeline depths estimated, not measured)"


@dataclass(frozen=True)
class HlsTiming:
    """Cycle constants of the HLS engine's schedule. The structure (what overlaps what, trip
    counts, FIFO depths, guards) is the code's and the C simulation checks it; the constants below
    are *estimates* of what Vitis HLS 2023.2 schedules for the xc7z020-1 at 10 ns (Vitis is not
    run here; the csynth report is what to calibrate them against: hls/README.md).

    ``frame_start``: ap_start to the header request (the idle-to-run transition, the writes of
    net_id, build_params, engine_info).
    ``header_check``: the six header comparisons and the branch into the dataflow region.
    ``maxi_read``: what Vitis's ``m_axi`` adapter adds to the memory's read latency (request FIFO
    and AR register slice 2, read-data FIFO and register slice 2).
    ``maxi_write``: likewise for a write's response (AW/W FIFOs 2, B back to the process 2);
    a DDR writer waits for its last response before its layer region ends.
    ``depth_read``: the header loop's depth (bus read, register, compare input).
    ``region_start``: a DATAFLOW region's start (ap_start of its processes, their first loop's
    entry); the layer region is started once per layer, the frame's once per frame.
    ``region_end``: the last process's ap_done to the region's (and the next layer's start).
    ``depth_core``: the core loop's pipeline depth, drained when a layer's loop exits: the stated
    depth of spec ``HLS_CORE_DEPTH`` (its derivation there: the input address 2, the RAM reads 2,
    the DSP48E1 4, the adder tree 2, the accumulator 1, the requantization 3, the store 1: 15), from
    which the guards derive; also how long after a step its result reaches the DDR writer's FIFO.
    ``depth_io``: the stem's, readers' and writer's loops (stream or bus, assembly, write).
    ``restart``: ap_done to the next frame's ap_start with auto-restart.
    ``fifo_latency``: a FIFO item written in one cycle is readable in the next (Vitis's FIFOs
    and the C simulation's lockstep alike).
    ``io_exit``: the DDR writer's last beat to its loop's end (its pipeline; in the C simulation
    the cycle after the last iteration).
    """

    frame_start: int = 2
    header_check: int = 1
    maxi_read: int = 4
    maxi_write: int = 4
    depth_read: int = 3
    region_start: int = 3
    region_end: int = 1
    depth_core: int = E.HLS_CORE_DEPTH
    depth_io: int = 3
    restart: int = 2
    fifo_latency: int = 1
    io_exit: int = 3


HLS_TIMING = HlsTiming()
# The C simulation's lockstep mode: one iteration per process and cycle, no pipeline depths, no
# bus; the header check runs outside the dataflow region (not counted in its cycles); a region's
# processes start in the cycle their parent starts them, and the parent goes on in the cycle
# after the last one ended.
CSIM = HlsTiming(frame_start=0, header_check=0, maxi_read=0, maxi_write=0, depth_read=0, region_start=0,
                 region_end=0, depth_core=0, depth_io=0, restart=0, fifo_latency=1, io_exit=1)
# The memory of the C simulation: its DDR is an array (no latency, a beat per cycle and port).
MEMORY_CSIM = E.MemoryModel(read_latency=0, write_latency=0)


def memory_of(memory) -> E.MemoryModel:
    """A MemoryModel from a preset name (``"csim"``: the C simulation's array; the others:
    ``spec.engine.MEMORY_PRESETS``) or a model (None: ``ideal``)."""
    return MEMORY_CSIM if isinstance(memory, str) and memory == "csim" else _rtl_memory_of(memory)


def _lg(n: int) -> int:
    return int(n).bit_length() - 1


def _raw_iters_to(p: int, in_ch: int) -> int:
    """RAW steps for the frame's first p pixels (hls/zq_stem.h raw_iters_to)."""
    return p if in_ch <= 4 else (p * in_ch + 3) // 4


def _last_raw(st: dict, ys: int) -> int:
    """The last raw row stem row ys needs (hls/zq_stem.h stem_last_raw)."""
    return min(st["in_size"] - 1, ys * st["s"] - st["pad"] + st["k"] - 1)


def _stem_scan_iters(st: dict) -> list[int]:
    """Iterations of each stem row's SCAN loop: its columns, or the RAW steps of the raw rows the next
    stem row needs, whichever is more (hls/zq_stem.h scan_row)."""
    ncol = (st["size"] - 1) * st["s"] + st["k"]
    out, avail = [], _last_raw(st, 0) + 1
    for ys in range(st["size"]):
        to = _last_raw(st, ys + 1) + 1 if ys + 1 < st["size"] else avail
        fill = (_raw_iters_to(to * st["in_size"], st["in_ch"]) - _raw_iters_to(avail * st["in_size"], st["in_ch"])
                if to > avail else 0)
        out.append(max(ncol, fill))
        avail = max(avail, to)
    return out


def _guarded(t: float, guard: int, core_starts: list[float]) -> float:
    """When the core sees an event of its iteration ``t`` (a ring row's or weight word's last store, a
    slot's release) through a guard's delay line of ``guard`` iterations: ``t + guard``, or the first
    iteration of the next layer's core loop if that comes first (its delay lines start from the
    counters as they are: a layer's loop has drained before the next one starts)."""
    k = bisect.bisect_right(core_starts, t)
    return min(t + guard, core_starts[k]) if k < len(core_starts) else t + guard


class _PortBusy:
    """The iterations in which a layer's core cannot take a ring unit: a MAC step that writes its
    pixel's result to the activation RAM takes the RAM's store port (the last step of every ``spp``
    of a run of MAC steps into DST_ACT; hls/zq_core.h, the RTL's port-B rule)."""

    def __init__(self):
        self.runs: list[tuple[float, float, int]] = []     # MAC runs [start, end) of spp steps a pixel

    def add(self, start: float, end: float, spp: int) -> None:
        self.runs.append((start, end, spp))

    def _blocked(self, a: float, b: float) -> int:
        n = 0
        for s, e, spp in self.runs:
            first = s + spp - 1                            # the run's first result
            lo, hi = max(a, s), min(b, e)
            if hi > lo:
                n += max(0, math.ceil((hi - first) / spp)) - max(0, math.ceil((lo - first) / spp))
        return n

    def advance(self, t: float, n: int) -> float:
        """The end of the iterations that take ``n`` units from iteration ``t`` on."""
        end = t + n
        while self.runs:
            e2 = t + n + self._blocked(t, end)
            if e2 == end:
                break
            end = e2
        return end


class _Feed:
    """Items (weight words, ring rows) of ``units`` subunits each (beats, ring units) that a
    producer streams through a FIFO of ``fifo`` subunits into a ring of the core's RAM. The
    producer makes a subunit every ``c_p`` cycles from ``t0``, never more than ``fifo`` subunits
    ahead of the core; the core takes a subunit per cycle, item i once its slot is free
    (its release, in iteration ``release.when(row + 1 - ring)`` for its row ``phase + step * i``,
    through ``guard`` iterations; no ring: always); an item is usable ``AVAIL_GUARD`` iterations
    after its last subunit's (:meth:`ready`). ``core_starts``: the first iteration of each layer's
    core loop so far (:func:`_guarded`)."""

    def __init__(self, t0: float, units: int, c_p: float, fifo: int, ring: int | None, release: _Released,
                 T: HlsTiming, core_starts: list[float], guard: int, port: _PortBusy | None = None,
                 step: int = 1, phase: int = 0, chan: _Channel | None = None, beats: int = 1):
        self.t0, self.units, self.c_p, self.fifo, self.ring, self.release, self.T = t0, units, c_p, fifo, ring, \
            release, T
        self.core_starts, self.guard, self.port = core_starts, guard, port
        self.chan, self.beats = chan, beats           # the producer's port (beats per subunit), or c_p alone
        self.step, self.phase = step, phase
        self.done: list[float] = []
        self.p_end = t0                                   # the producer's time

    def _slot(self, i: int) -> float:
        if self.ring is None:
            return float("-inf")
        return _guarded(self.release.when(self.phase + self.step * i + 1 - self.ring), self.guard, self.core_starts)

    def ready(self, n: int) -> float:
        """Time the first ``n`` items are usable by the MAC array."""
        U, cp, lat = self.units, self.c_p, self.T.fifo_latency
        while len(self.done) < n:
            i = len(self.done)
            prev = self.done[-1] if self.done else float("-inf")
            slot = self._slot(i)
            p_start = max(self.p_end, slot - self.fifo * cp)     # at most a FIFO ahead of the ring's slot
            p_done = self.chan.move(p_start, U * self.beats) if self.chan else p_start + U * cp
            take0 = max(prev, slot, p_start + cp + lat - 1)      # the core takes the first subunit
            done = max(take0 + U, p_done + lat)
            if self.port is not None:                     # units wait out the results' stores
                done = max(self.port.advance(take0, U), self.port.advance(p_done + lat - 1, 1))
            self.done.append(done)
            self.p_end = max(p_done, done - self.fifo - lat)
        return _guarded(self.done[n - 1] - 1, AVAIL_GUARD, self.core_starts) if n > 0 else float("-inf")

    def last(self) -> float:
        return self.done[-1] if self.done else float("-inf")


class _FeedPair:
    """A ring filled over both activation paths (hls/zq_ddr.h, zq_core.h): even rows from one
    :class:`_Feed`, odd rows from the other; the first ``n`` rows are in when both halves are."""

    def __init__(self, even: _Feed, odd: _Feed):
        self.even, self.odd = even, odd

    def ready(self, n: int) -> float:
        if n <= 0:
            return float("-inf")
        return max(self.even.ready((n + 1) // 2), self.odd.ready(n // 2))

    def last(self) -> float:
        return max(self.even.last(), self.odd.last())


def fill_split(plan, l) -> bool:
    """Does layer ``l`` read its DDR input over both activation paths (hls/zq_ddr.h fill_split)?"""
    return plan.act_paths == 2 and l.src_kind == E.SRC_DDR and l.row.get("src_path") == E.PATH_BOTH


def write_split(plan, l) -> bool:
    """Does layer ``l`` write its results over both paths, by 128-byte line (hls/zq_ddr.h write_split:
    runs of a band of one group of two lines or more)?"""
    bpu = max(1, plan.engine.n_pe // 8)
    return (plan.act_paths == 2 and l.dst_kind == E.DST_DDR and l.row.get("dst_path") == E.PATH_BOTH
            and l.band_rows * l.out_size * bpu > E.AXI_BURST_BEATS)


def _walk(plan, M: E.MemoryModel, T: HlsTiming, cached: bool, clock_mhz: float, slow: dict | None):
    """The frame's event model (slow: per channel and window, the shared budget's factor of the
    previous pass, as ``spec.cycles._one_pass`` takes it)."""
    eng, L, st = plan.engine, plan.layers, plan.stem
    n_pe = eng.n_pe
    bpw, bpu = n_pe * eng.n_ci // 8, max(1, n_pe // 8)
    rates = port_rates(M)
    slow = slow or {}
    tl = _Timeline()
    ch_w = _Channel(rates["read_beats"], slow.get("weights"), tl)                      # m_axi wts reads
    ch_r = {E.PATH_1: _Channel(rates["read_beats"], slow.get("act read"), tl),          # m_axi act reads
            E.PATH_2: _Channel(rates["read_beats"], slow.get("act2 read"), tl)}         # m_axi act2 reads
    ch_o = {E.PATH_1: _Channel(rates["write_beats"], slow.get("act write"), tl),        # m_axi act writes
            E.PATH_2: _Channel(rates["write_beats"], slow.get("wts write"), tl)}        # m_axi wts writes
    n_cls = plan.gap["classes"] if "classes" in plan.gap else plan.cfg.num_classes

    # ---- before the dataflow region: the header, every frame ------------------------------------
    t_hdr = T.frame_start + (M.read_latency + T.maxi_read if T.maxi_read or M.read_latency else 0)
    t_hdr += HEADER_BEATS + T.depth_read + T.header_check
    if T is CSIM or T == CSIM:
        t_hdr = 0                                       # the C simulation counts the region only
    t0 = t_hdr + T.region_start

    # ---- the weight reader: the words at the port's rate, W_FIFO beats ahead ----------------------
    w_release = _Released(t0)
    core_starts: list[float] = []                          # each layer's first core-loop iteration
    lat_r = M.read_latency + T.maxi_read
    if plan.weight_cache and cached:
        weights = None
    else:
        rate_w = rates["read_beats"]
        weights = _Feed(t0 + lat_r + T.depth_io, bpw, 1.0 / rate_w, W_FIFO,
                        None if plan.weight_cache else plan.wring_words, w_release, T, core_starts, RELEASE_GUARD,
                        chan=ch_w, beats=1)
    rd_bytes = HEADER_BEATS * 8 + (plan.image_words * eng.word_bytes if weights else 0)
    wr_bytes = 0

    # ---- the stem process: the first row's raw rows, then each row's scan beside the next one's raw rows
    in_size, in_ch, s_k, s_s, s_pad = st["in_size"], st["in_ch"], st["k"], st["s"], st["pad"]
    ncol = (st["size"] - 1) * s_s + s_k
    units = -(-st["in_words"] // eng.wpg)
    stem_rel = _Released(t0)
    stem_done: list[float] = []
    scan_iters = _stem_scan_iters(st)
    stem_t = [t0 + _raw_iters_to((_last_raw(st, 0) + 1) * in_size, in_ch)]   # the stem process's time
    l0 = L[0]
    stem_port = _PortBusy()

    def stem_ready(n: int) -> float:
        while len(stem_done) < n:
            ys = len(stem_done)
            t = stem_t[0]
            slot = _guarded(stem_rel.when(ys + 1 - l0.ring_rows), ROW_RELEASE_GUARD, core_starts)
            prev = stem_done[-1] if stem_done else float("-inf")
            n_units = st["size"] * units
            if units == 1:                                 # units leave the scan, one per S columns
                first = t + (s_k - 1) + T.fifo_latency
                last = t + (s_k - 1) + (st["size"] - 1) * s_s + T.fifo_latency
                loop = scan_iters[ys]
            else:                                          # then a unit per cycle from the row buffer
                first = t + scan_iters[ys] + T.fifo_latency
                last = first + n_units - 1
                loop = scan_iters[ys] + n_units
            begin = max(first, slot, prev)
            done = max(stem_port.advance(begin, n_units), stem_port.advance(last, 1))
            # the scan (or the row buffer) blocks while STEM_FIFO units wait for the ring
            stem_t[0] = max(t + loop, done - STEM_FIFO)
            stem_done.append(done)
        return _guarded(stem_done[n - 1] - 1, AVAIL_GUARD, core_starts) if n > 0 else float("-inf")

    # ---- the layer regions ------------------------------------------------------------------------
    t = t0
    out = []
    for li, l in enumerate(L):
        row = l.row
        t_start = t
        tl.start_layer(t_start)
        tc = t + T.region_start if li else t               # the first region starts with the frame's
        core_starts.append(tc)
        spp = l.k * l.k * l.ci_chunks
        band_px = l.band_rows * l.out_size
        fill = None
        reader_end = tc
        port = stem_port if li == 0 else _PortBusy()
        if l.src_kind == E.SRC_DDR:
            cg = row["src_cgrps"]
            row_beats = l.in_size * cg * bpu
            rate_f = rates["read_beats"]
            f_release = _Released(tc)
            if fill_split(plan, l):            # even rows on path 1, odd rows on path 2
                fill = _FeedPair(*(_Feed(tc + lat_r + T.depth_io, l.in_size * cg, bpu / rate_f, FILL_FIFO, l.ring_rows,
                                         f_release, T, core_starts, ROW_RELEASE_GUARD, port, step=2, phase=ph,
                                         chan=ch_r[p], beats=bpu)
                                   for ph, p in ((0, E.PATH_1), (1, E.PATH_2))))
            else:
                path = E.PATH_2 if plan.act_paths == 2 and row.get("src_path") == E.PATH_2 else E.PATH_1
                fill = _Feed(tc + lat_r + T.depth_io, l.in_size * cg, bpu / rate_f, FILL_FIFO, l.ring_rows, f_release,
                             T, core_starts, ROW_RELEASE_GUARD, port, chan=ch_r[path], beats=bpu)
            rd_bytes += l.in_size * l.in_size * cg * n_pe
        stall_rows = stall_w = stall_out = 0.0
        w_free = float("-inf")                             # the DDR writer has written every queued unit
        n_wr = 2 if write_split(plan, l) else 1            # writers (paths), each with its port and FIFO
        out_fifo = OUT_FIFO * n_wr
        w_path = E.PATH_2 if plan.act_paths == 2 and row.get("dst_path") == E.PATH_2 else E.PATH_1
        blk0 = l.w_off
        for b in range(l.n_bands):
            if l.src_kind == E.SRC_STEM:
                tr = stem_ready(_need_rows(l, b))
            elif fill is not None:
                tr = fill.ready(_need_rows(l, b))
            else:
                tr = float("-inf")
            for g in range(l.co_groups):
                blk_end = blk0 + (g + 1) * l.w_blk
                tw = weights.ready(blk_end) if weights is not None else float("-inf")
                if max(tr, tw) > tc:                       # the block's bias step waits
                    if tr >= tw:
                        stall_rows += tr - tc
                    else:
                        stall_w += tw - tc
                    tc = max(tr, tw)
                tc += 1                                    # the bias step
                t_run = tc
                tc += band_px * spp
                if l.dst_kind == E.DST_ACT and l.src_kind != E.SRC_ACT:
                    port.add(t_run, tc, spp)
                if l.dst_kind == E.DST_DDR:
                    first = t_run + spp + T.depth_core + T.fifo_latency
                    start = max(w_free, first)
                    beats = band_px * bpu
                    if n_wr == 2:                          # alternate lines on the two paths' writers
                        moved = max(ch_o[E.PATH_1].move(start, beats - beats // 2),
                                    ch_o[E.PATH_2].move(start, beats // 2))
                    else:
                        moved = ch_o[w_path].move(start, beats)
                    c_unit = (moved - start) / band_px     # the writers' cycles per unit
                    t_last = t_run + band_px * spp + T.depth_core
                    if n_wr == 2:                          # the last line's writer: its units, a line's beats
                        cu1 = bpu / rates["write_beats"]
                        upl = E.AXI_BURST_BEATS // bpu
                        tail = max(t_last + cu1, t_last - (upl - 1) * spp + upl * cu1)
                    else:
                        tail = t_last + c_unit
                    w_free = max(moved, tail)
                    lim = w_free - out_fifo * c_unit - T.depth_core
                    if lim > tc:
                        stall_out += lim - tc
                        tc = lim
                    wr_bytes += band_px * n_pe
                if not l.resident:                         # released in the block's last step
                    w_release.set(tc - 1, blk_end)
            rel = _released_rows(l, b)
            if l.src_kind == E.SRC_STEM:
                stem_rel.set(tc - 1, rel)
            elif fill is not None:
                f_release.set(tc - 1, rel)
        if l.resident:
            w_release.set(tc - 1, blk0 + l.co_groups * l.w_blk)
        # the core's loop ends when every ring unit is in (its tail: the loop exits in the iteration after
        # the last unit's, on registered flags), then drains its pipeline
        if l.src_kind == E.SRC_STEM:
            stem_ready(st["size"])
            tc = max(tc, stem_done[-1] + 1)
        elif fill is not None:
            fill.ready(l.in_size)
            tc = max(tc, fill.last() + 1)
            reader_end = fill.last()
        core_end = tc + T.depth_core
        if li == len(L) - 1:
            core_end += n_cls                              # the logits
        writer_end = w_free + M.write_latency + T.maxi_write + T.io_exit if l.dst_kind == E.DST_DDR else tc
        end = max(core_end, writer_end, reader_end) + T.region_end
        cyc = end - t_start
        stalls = dict(input_rows=stall_rows, weights=stall_w, ddr_write=stall_out)
        bound = max(stalls, key=stalls.get) if max(stalls.values()) > 0.02 * cyc else "compute"
        bound = dict(input_rows="input stream" if l.src_kind == E.SRC_STEM else "ddr read",
                     ddr_write="ddr write").get(bound, bound)
        traffic = l.co_groups * l.w_blk * eng.word_bytes if weights else 0
        traffic += (l.in_size * l.in_size * row["src_cgrps"] * n_pe if fill else 0)
        traffic += (l.co_groups * l.out_size ** 2 * n_pe if l.dst_kind == E.DST_DDR else 0)
        if li == 0:
            traffic += st["in_bytes"] if M.charge_streams else 0
        out.append(dict(name=l.name, cycles=int(round(end)) - int(round(t_start)), start_cycle=int(round(t_start)),
                        mac_cycles=l.mac_cycles, issue_cycles=l.mac_cycles + l.n_bands * l.co_groups,
                        stall_cycles={k: int(round(v)) for k, v in stalls.items()}, bound=bound, macs=l.macs,
                        dram_bytes=int(traffic)))
        t = end
    # the frame: the output process sends the logits as the core makes them; the stem has taken
    # the whole input before (every stem row was needed); the weight reader ended before the last
    # layer's last block
    t_end = t + (1 if T == CSIM else T.depth_io)
    cycles = int(round(t_end))
    # the charged streams per window (as spec.cycles): the input frame as the stem takes it, the logits
    stream: dict = {}
    if M.charge_streams and stem_done:
        per_row = st["in_bytes"] / len(stem_done)
        for k, t1 in enumerate(stem_done):
            _spread(stream, tl, stem_done[k - 1] if k else t0, t1, per_row)
        _spread(stream, tl, t_end - n_cls, t_end, 4 * n_cls)
    macs = sum(l.macs for l in L)
    period = cycles + T.restart
    frame = dict(cycles=cycles, period_cycles=period, clock_mhz=clock_mhz, fps=clock_mhz * 1e6 / period,
                 fps_at_100mhz=100e6 / period, utilization=macs / (eng.n_pe * eng.n_ci * cycles) if cycles else 0.0,
                 mac_cycles=sum(l.mac_cycles for l in L), dram_rd_bytes=int(rd_bytes), dram_wr_bytes=int(wr_bytes),
                 header_cycles=int(t_hdr))
    chans = {"weights": ch_w, "act read": ch_r[E.PATH_1], "act2 read": ch_r[E.PATH_2],
             "act write": ch_o[E.PATH_1], "wts write": ch_o[E.PATH_2]}
    return out, frame, rates, chans, stream, tl


def predict_hls(plan, memory: E.MemoryModel | str | None = None, clock_mhz: float = 100.0,
                timing: HlsTiming = HLS_TIMING, cached: bool = True, passes: int = 8) -> dict:
    """The HLS engine's frame for ``plan`` under ``memory`` (a MemoryModel, a preset's name, or
    ``"csim"``; default ``ideal``): the structure of ``zynqflow.spec.cycles.predict`` (``layers``:
    name, cycles, start_cycle, mac_cycles, issue_cycles, stall_cycles, bound, macs, dram_bytes;
    ``frame``: cycles, period_cycles, clock_mhz, fps, fps_at_100mhz, utilization, mac_cycles,
    dram_rd_bytes, dram_wr_bytes, header_cycles; ``label``). ``cached=False``: the first frame of a
    weight-cache build (it streams the image).

    The shared DDR budget (``shared_bytes`` per cycle of :func:`port_rates`): as
    ``spec.cycles.predict`` shares it (the same loop: ``spec.cycles.share_passes``), in passes (at
    most ``passes``) until no channel's factor in any window changes by more than 0.5 %; a DDR-bound
    layer whose channels it slowed by more than 2 % on average is bound by it (``bound`` "ddr shared")."""
    M = memory_of(memory)

    def walk(slow):
        layers, frame, rates, chans, stream, tl = _walk(plan, M, timing, cached, clock_mhz, slow)
        return dict(layers=layers, frame=frame, memory_rates=rates), chans, stream, tl

    res = share_passes(walk, M, passes)
    return dict(label=LABEL, memory=asdict(M), memory_rates=res["memory_rates"], timing=asdict(timing),
                cached_weights=bool(plan.weight_cache and cached), layers=res["layers"], frame=res["frame"])


def csim_counts(plan, cached: bool = True) -> dict:
    """The work of one good frame as the C simulation counts it (``CSim.loop_counts``, built with
    ``count=True``): per layer the core's bias and MAC steps, output pixels, ring units taken, the
    fill reader's and DDR writer's beats (with their bursts as entries); per frame the header
    beats, the weight reader's beats, the stem's loops (RAW, SCAN, STEM_WRITE iterations and
    entries), the output beats and the logits. These do not depend on timing: exact."""
    eng, L, st = plan.engine, plan.layers, plan.stem
    bpw, bpu = eng.n_pe * eng.n_ci // 8, max(1, eng.n_pe // 8)
    n_cls = plan.gap["classes"] if "classes" in plan.gap else plan.cfg.num_classes
    layers = []
    for li, l in enumerate(L):
        c = {}
        c["bias"] = (l.n_bands * l.co_groups, 0)
        c["mac"] = (l.mac_cycles, 0)
        c["results"] = (l.co_groups * l.out_size ** 2, 0)
        if l.src_kind == E.SRC_DDR:
            run = l.in_size * bpu
            bl = min(16, run)
            beats = l.in_size * l.row["src_cgrps"] * run
            c["fill"] = (beats, 2 if fill_split(plan, l) and l.in_size >= 2 else 1)
            c["units"] = (beats // bpu, 0)
        elif l.src_kind == E.SRC_STEM:
            c["units"] = (st["size"] * st["size"] * -(-st["in_words"] // eng.wpg), 0)
        if l.dst_kind == E.DST_DDR:
            c["ddr_write"] = (l.co_groups * l.out_size ** 2 * bpu, 2 if write_split(plan, l) else 1)
        if li == len(L) - 1:
            c["logits"] = (n_cls, 0)
        layers.append(c)
    frame = {"header": (HEADER_BEATS, 1), "out": (n_cls, 1), "rest": (0, 1)}
    if not (plan.weight_cache and cached):
        frame["wload"] = (plan.image_words * bpw, 1)
    # the stem: the first stem row's raw rows, then a scan per stem row (beside the next one's raw
    # rows), the row buffer when a pixel is more than one unit
    frame["raw"] = (_raw_iters_to((_last_raw(st, 0) + 1) * st["in_size"], st["in_ch"]), 1)
    frame["scan"] = (sum(_stem_scan_iters(st)), st["size"])
    units = -(-st["in_words"] // eng.wpg)
    if units > 1:
        frame["stem_write"] = (st["size"] * st["size"] * units, st["size"])
    return dict(layers=layers, frame=frame)


def hls_vs_rtl(plan, memory=None, clock_mhz: float = 100.0) -> dict:
    """Per layer the HLS model beside the RTL twin's model (``zynqflow.spec.cycles.predict``) under
    the same memory: ``layers`` [name, hls, rtl, ratio], ``worst_ratio`` (the largest |hls/rtl - 1|),
    and both frames' fps."""
    from .cycles import predict

    h = predict_hls(plan, memory=memory, clock_mhz=clock_mhz)
    try:
        r = predict(plan, memory=memory_of(memory), clock_mhz=clock_mhz)
    except TypeError:            # a spec.cycles without preset names
        r = predict(plan, memory=memory_of(memory))
    rows = [dict(name=a["name"], hls=a["cycles"], rtl=b["cycles"], ratio=a["cycles"] / b["cycles"])
            for a, b in zip(h["layers"], r["layers"])]
    return dict(layers=rows, worst_ratio=max(abs(x["ratio"] - 1) for x in rows),
                hls_fps=h["frame"]["fps"], rtl_fps=r["frame"]["fps"], hls_cycles=h["frame"]["cycles"],
                rtl_cycles=r["frame"]["cycles"], label=h["label"])


__all__ = ["COUNTERS", "CSIM", "HLS_TIMING", "HlsTiming", "LABEL", "MEMORY_CSIM", "csim_counts", "fill_split",
           "hls_vs_rtl", "memory_of", "port_rates", "predict_hls", "write_split"]
