"""The cycle model of the engine: one frame, layer by layer, from the hardware plan.

An event model at the granularity the RTL twin makes its decisions: per band
(is the input ring far enough?), per (band, channel group) block (are its
weights in the ring?), per block of results bound for DDR (can the write port
drain them?), and per row of the DMAs that feed the rings. Every transfer uses
a memory model of the specification (``spec.engine.MemoryModel``, a preset of
``MEMORY_PRESETS`` by name or a model; ``ideal`` by default): read and write
latency, and the rate at which each port moves beats (:func:`port_rates`: the
per-port token bucket, refresh, random gaps and stalls of ``stress`` on
average). The budget every master shares (both ports and the charged streams)
is applied per layer: a layer whose traffic would exceed it is slowed until it
does not (a fixed point over a few passes). So the model tells compute-bound
layers from the ones bound by DDR reads, DDR writes, the weight stream, the
input stream or the shared DDR budget (``bound``: compute, ddr read, ddr write,
weights, input stream, ddr shared).

    from zynqflow.spec.cycles import predict
    p = predict(plan)                          # plan: zynqflow.export.plan.HwPlan
    p = predict(plan, memory="pynq-z2")        # or memory=memory_preset("pynq-z2", cpu_share=0.25)
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
    (5), the write-back (1), the busy flag's register and the four T_DRAIN cycles.
    A stall-free layer takes ``layer_pre + layer_post`` plus, per band, one
    G_BAND cycle and, per (band, group) block, one G_BLK cycle (the bias step)
    and its MAC steps.
    ``result_latency``: MAC-step issue to the result's entry in the output FIFO.
    ``out_fifo_ahead``: output units the MAC array may run ahead of the write
    port: the FIFO's ``DEPTH - MARGIN`` threshold (39 units) plus results in
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
    layer_post: int = 23
    result_latency: int = 20
    out_fifo_ahead: int = 40
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


# ---- the memory's rates -----------------------------------------------------------------------
def _bucket_rate(rate: float, depth: float, peak: float, M: E.MemoryModel, shared: bool = False) -> float:
    """Bytes per cycle a token bucket of ``rate`` and ``depth`` lets through a channel that could move
    ``peak`` bytes per cycle, under continuous demand, with the memory's blocked cycles: refresh
    (``refresh_cycles`` of every ``refresh_interval``) and, for a port's own bucket, its random
    stalls (1..stall_max cycles, starting with probability stall_prob per free cycle). While the
    channel is blocked the bucket fills up to its depth; what would overflow is lost."""
    lost = 0.0          # bucket bytes lost per cycle
    blocked = 0.0       # fraction of the cycles blocked
    if M.refresh_interval > 0 and M.refresh_cycles > 0:
        blocked += M.refresh_cycles / M.refresh_interval
        lost += max(0.0, rate * M.refresh_cycles - depth) / M.refresh_interval
    if not shared and M.stall_prob > 0 and M.stall_max > 0:
        mean = (M.stall_max + 1) / 2.0
        starts = M.stall_prob * (1.0 - blocked) / (1.0 + M.stall_prob * mean)   # stalls per cycle
        over = sum(max(0.0, rate * n - depth) for n in range(1, M.stall_max + 1)) / M.stall_max
        blocked += starts * mean
        lost += starts * over
    return max(0.0, min(peak * (1.0 - blocked), rate - lost))


def port_rates(memory: E.MemoryModel) -> dict:
    """What each direction of a port moves on average under continuous demand, and the shared budget:
    ``read_beats`` / ``write_beats`` per cycle (the port's bucket through refresh, random gaps and
    stalls, and the outstanding limit: ``max_reads`` 16-beat bursts per read round trip),
    ``shared_bytes`` per cycle (0: no shared limit) after the CPU's share and refresh."""
    M = memory
    beat = float(M.beat_bytes)
    rd = _bucket_rate(M.port_bytes_per_cycle, M.shared_bucket_bytes, beat * (1.0 - M.gap_r), M)
    wr = _bucket_rate(M.port_bytes_per_cycle, M.shared_bucket_bytes, beat * (1.0 - M.gap_w), M)
    # the outstanding limit: max_reads bursts of AXI_BURST_BEATS per round trip (AR .. last beat),
    # in the cycles that are not refresh
    b = E.AXI_BURST_BEATS
    free = 1.0 - (M.refresh_cycles / M.refresh_interval if M.refresh_interval else 0.0)
    rd = min(rd, beat * M.max_reads * b / (M.read_latency + b + 1) * free)
    wr = min(wr, beat * M.max_writes * b / (M.write_latency + b + 1) * free)
    shared = 0.0
    if M.shared_bytes_per_cycle > 0:
        shared = _bucket_rate((1.0 - M.cpu_share) * M.shared_bytes_per_cycle, M.shared_bucket_bytes, 4 * beat, M,
                              shared=True)
    return dict(read_beats=rd / beat, write_beats=wr / beat, shared_bytes=shared)


def memory_of(memory) -> E.MemoryModel:
    """A MemoryModel from a preset name or a model (None: ``ideal``)."""
    if memory is None:
        return E.MEMORY_MODEL
    if isinstance(memory, str):
        return E.memory_preset(memory)
    return memory


def scale_memory(memory, clock_mhz: float) -> E.MemoryModel:
    """``memory`` (described at 100 MHz) as an engine clocked at ``clock_mhz`` sees it: the DDR keeps
    its nanoseconds and bytes per second, so latencies and refresh grow with the clock (rounded up)
    and the shared budget per cycle shrinks; a port still moves up to a beat per fabric cycle."""
    import math
    from dataclasses import replace

    M = memory_of(memory)
    f = clock_mhz / 100.0
    if f == 1.0:
        return M
    up = lambda v: int(math.ceil(v * f))  # noqa: E731
    return replace(M, read_latency=up(M.read_latency), write_latency=up(M.write_latency),
                   refresh_interval=up(M.refresh_interval), refresh_cycles=up(M.refresh_cycles),
                   shared_bytes_per_cycle=M.shared_bytes_per_cycle / f,
                   port_bytes_per_cycle=min(M.port_bytes_per_cycle, float(M.beat_bytes)) / f
                   if M.port_bytes_per_cycle < M.beat_bytes else M.port_bytes_per_cycle,
                   stall_max=up(M.stall_max))


BOUND_PRESETS = ("ideal", "pynq-z2")


def bound_table(plan, memories=BOUND_PRESETS, cached: bool = True) -> tuple[list[dict], str]:
    """What bounds each layer under each memory (preset names or models): rows
    ``{name, cycles: {memory: c}, bound: {memory: b}}`` and the table as text (make export, make report)."""
    names = [m if isinstance(m, str) else "custom" for m in memories]
    preds = [predict(plan, memory=m, cached=cached) for m in memories]
    rows = []
    for i, l in enumerate(plan.layers):
        rows.append(dict(name=l.name, mac_cycles=l.mac_cycles,
                         cycles={n: p["layers"][i]["cycles"] for n, p in zip(names, preds)},
                         bound={n: p["layers"][i]["bound"] for n, p in zip(names, preds)}))
    w = max([len(r["name"]) for r in rows] + [5])
    head = f"{'layer':<{w}}  {'MAC cycles':>10}" + "".join(f"  {n + ' cycles':>16}  {'bound':<12}" for n in names)
    lines = [f"cycle model of the RTL twin, {plan.engine.n_pe} x {plan.engine.n_ci} engine (spec.cycles; "
             "a model, not a measurement): what bounds each layer under each memory preset", head,
             "-" * len(head)]
    for r in rows:
        lines.append(f"{r['name']:<{w}}  {r['mac_cycles']:>10}" + "".join(
            f"  {r['cycles'][n]:>16}  {r['bound'][n]:<12}" for n in names).rstrip())
    lines.append("-" * len(head))
    lines.append(f"{'frame':<{w}}  {sum(r['mac_cycles'] for r in rows):>10}" + "".join(
        f"  {p['frame']['cycles']:>16}  {p['frame']['fps_at_100mhz']:.1f} fps".ljust(32) for p in preds).rstrip())
    return rows, "\n".join(lines)


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
    """A DMA that fills a ring of ``ring`` slots item by item (rows or words), with ``latency``
    cycles from request to first beat, its beats at ``chan.cpb(t)`` cycles each (1: one beat per
    cycle; the memory's rate at the time); an item may be requested once the consumer has
    released the item that slot held (``release``). Item i is ring row ``phase + step * i`` (one
    of two DMAs that read alternate rows: ``step`` 2)."""

    def __init__(self, t0: float, beats: list[int], ring: int | None, release: _Released, latency: int,
                 extra: int, chan: "_Channel | None" = None, step: int = 1, phase: int = 0):
        self.beats, self.ring, self.release, self.latency, self.extra = beats, ring, release, latency, extra
        self.chan = chan or _Channel(1.0, None)
        self.step, self.phase = step, phase
        self.done: list[float] = []
        self.t0 = t0

    def ready(self, n: int) -> float:
        """Time at which the first ``n`` items are in the ring."""
        while len(self.done) < n:
            i = len(self.done)
            row = self.phase + self.step * i
            prev = self.done[-1] if self.done else self.t0
            req = self.t0 if self.ring is None else max(self.t0, self.release.when(row + 1 - self.ring))
            start = max(prev, req + self.latency)
            self.done.append(self.chan.move(start, self.beats[i]))
        return self.done[n - 1] + self.extra if n > 0 else float("-inf")


class _RowPair:
    """Two DMAs on two activation paths (zq_fill_paths): even rows on one, odd rows on the other;
    the first ``n`` rows are in the ring when both halves are, a cycle later (the registered count)."""

    def __init__(self, even: _Stream, odd: _Stream):
        self.even, self.odd = even, odd

    def ready(self, n: int) -> float:
        if n <= 0:
            return float("-inf")
        return max(self.even.ready((n + 1) // 2), self.odd.ready(n // 2)) + 1


class _Timeline:
    """The windows in which the model shares the DDR budget: each layer's time, from its row
    fetch, cut into windows of :data:`SHARED_WINDOW` cycles (the last one shorter). A window is
    named by (layer, k), so that a later pass finds the factors of a layer's windows at the same
    place in the layer even when the layers before it got faster or slower (a window of absolute
    time would fall on another layer). Layer -1 is the time before the first layer's fetch."""

    def __init__(self):
        self.starts: list[float] = []     # each layer's fetch, in order, as the pass reaches it

    def start_layer(self, t: float) -> None:
        self.starts.append(t)

    def key(self, t: float) -> tuple[int, int]:
        i = bisect.bisect_right(self.starts, t) - 1
        return (i, int((t - self.starts[i]) // SHARED_WINDOW)) if i >= 0 else (-1, 0)

    def window(self, key: tuple[int, int]) -> tuple[float, float]:
        """The window's [start, end) in this pass."""
        i, k = key
        first = self.starts[0] if self.starts else 0.0
        if i < 0:
            return first - SHARED_WINDOW, first
        t0 = self.starts[i] + k * SHARED_WINDOW
        nxt = self.starts[i + 1] if i + 1 < len(self.starts) else float("inf")
        return t0, min(t0 + SHARED_WINDOW, nxt)

    def split(self, t0: float, t1: float):
        """[t0, t1) cut at the window boundaries: (key, start, end) pieces."""
        s = t0
        while s < t1:
            key = self.key(s)
            cut = min(t1, self.window(key)[1])
            if cut <= s:            # (a window of zero length: a layer's fetch at this very time)
                cut = min(t1, s + 1e-9)
            yield key, s, cut
            s = cut


class _Channel:
    """One direction of a port in the model: ``beats_per_cycle`` alone, slowed by ``slow`` (the
    shared budget's factor per window of the previous pass, by :class:`_Timeline` key), its busy
    intervals recorded."""

    def __init__(self, beats_per_cycle: float, slow: dict | None = None, timeline: _Timeline | None = None):
        self.cpb0 = 1.0 / beats_per_cycle
        self.slow, self.timeline = slow, timeline
        self.busy: list[tuple[float, float, float]] = []     # (start, end, slowdown used)

    def move(self, start: float, beats: int) -> float:
        """A transfer of ``beats`` starting at ``start``: the time its last beat is done (in each
        window at that window's factor)."""
        if not self.slow:
            end = start + beats * self.cpb0
            self.busy.append((start, end, 1.0))
            return end
        t, left = start, float(beats)
        while True:
            key = self.timeline.key(t)
            f = self.slow.get(key, 1.0)
            w_end = self.timeline.window(key)[1]
            end = t + left * self.cpb0 * f
            if end <= w_end or w_end <= t:
                self.busy.append((t, end, f))
                return end
            self.busy.append((t, w_end, f))
            left -= (w_end - t) / (self.cpb0 * f)
            t = w_end


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


SHARED_WINDOW = 512    # cycles: the windows (of a layer's time) in which the model shares the DDR budget


def predict(plan, memory: E.MemoryModel | str | None = None, timing: RtlTiming = RTL_TIMING,
            cached: bool = True, clock_mhz: float = 100.0, passes: int = 8) -> dict:
    """The frame and every layer under ``memory`` (a MemoryModel or a preset's name; default ``ideal``).

    The shared budget: after a pass, in every window (a layer's time in pieces of ``SHARED_WINDOW``
    cycles, :class:`_Timeline`) the channels busy at the same moment (the weight reads, the tensor
    reads and writes of both activation paths) share what the budget leaves after the charged
    streams, max-min fairly (:func:`_share`: the memory's arbitration, a beat for every ready
    channel while the budget is positive), and the next pass slows each channel's transfers in
    that window by its factor. The passes stop when no factor changes by more than 0.5 %, or
    after ``passes``."""
    M = memory_of(memory)
    rates = port_rates(M)
    return share_passes(lambda slow: _one_pass(plan, M, timing, cached, clock_mhz, rates, slow), M, passes)


def share_passes(walk, memory: E.MemoryModel, passes: int = 8) -> dict:
    """Run a frame's event model ``walk`` in passes until the shared DDR budget converges, and
    return its last result (the loop of :func:`predict`, which ``spec.cycles_hls.predict_hls``
    shares). ``walk(slow)`` runs one pass, with ``slow`` (None in the first) the factor per channel
    and window (:class:`_Timeline` key) by which the budget slows each channel, and returns
    ``(result, chans, stream, tl)``: ``result["layers"]`` the layer dicts, ``chans`` the
    :class:`_Channel` by name ("weights", "act read", "act2 read", "act write", "wts write"),
    ``stream`` the charged streams' bytes per window, ``tl`` the pass's :class:`_Timeline`.
    After a pass :func:`_share` gives the next pass's factors; the passes stop when no channel is
    slowed, when no factor changes by more than 0.5 %, or after ``passes``. A DDR-bound layer whose
    channels the budget slowed by more than 2 % on average is then bound by it ("ddr shared")."""
    M = memory
    budget = port_rates(M)["shared_bytes"]
    slow: dict[str, dict] | None = None
    res = None
    for k in range(max(1, passes)):
        res, chans, stream, tl = walk(slow)
        if not budget or k == passes - 1:
            break
        nxt = _share(chans, stream, tl, budget, M.beat_bytes)
        if not any(f > 1.0 for v in nxt.values() for f in v.values()) and not slow:
            break
        if slow and all(abs(nxt[c].get(w, 1.0) / slow[c].get(w, 1.0) - 1.0) <= 0.005
                        for c in nxt for w in set(nxt[c]) | set(slow[c])):
            break
        slow = nxt
    if slow:   # a DDR-bound layer whose channel the shared budget slowed: bound by the shared budget
        chan = {"ddr read": ("act read", "act2 read"), "ddr write": ("act write", "wts write"),
                "weights": ("weights",)}
        for i, l in enumerate(res["layers"]):
            for c in chan.get(l["bound"], ()):
                f = [v for (li, _), v in slow[c].items() if li == i]
                if f and sum(f) / len(f) > 1.02:
                    l["bound"] = "ddr shared"
    return res


def _share(chans: dict, stream: dict, tl: _Timeline, budget: float, beat: int) -> dict[str, dict]:
    """Per channel and window (a :class:`_Timeline` key), the factor by which the shared budget
    slows it in the next pass (1: not at all). Within a window, at every moment the channels
    busy in this pass (each moving, or wanting to move, a beat a cycle at its own rate) share
    what the window's budget leaves after the charged streams, max-min fairly (water filling:
    the memory's arbitration, a beat for every ready channel while the budget is positive);
    a channel's factor is its rate alone over its share, averaged over the time it is busy there.
    So channels that overlap share, and a channel that runs alone in a window is not slowed."""
    pieces: dict = {}                                   # key -> [(start, end, channel)]
    rate = {}
    for name, c in chans.items():
        rate[name] = beat / c.cpb0                      # bytes per cycle when alone
        for s0, e0, _ in c.busy:
            if e0 > s0:
                for key, a, b in tl.split(s0, e0):
                    pieces.setdefault(key, []).append((a, b, name))
    out = {name: {} for name in chans}
    for key, ps in pieces.items():
        t0, t1 = tl.window(key)
        length = max(1.0, min(t1, t0 + SHARED_WINDOW) - t0)
        cap = max(budget - stream.get(key, 0.0) / length, 1e-9)
        if sum(rate[n] for n in {n for _, _, n in ps}) <= cap:
            continue                                    # even all at once they fit
        events = sorted([(a, 1, n) for a, _, n in ps] + [(b, -1, n) for _, b, n in ps])
        active: dict[str, int] = {}
        busy = dict.fromkeys(rate, 0.0)
        slow_t = dict.fromkeys(rate, 0.0)
        prev = events[0][0]
        for t, d, n in events:
            if t > prev and active:
                dt = t - prev
                want = sorted((rate[k], k) for k in active)
                left, shares = cap, {}
                for i, (r, k) in enumerate(want):       # water filling
                    sh = min(r, left / (len(want) - i))
                    shares[k] = sh
                    left -= sh
                for k, sh in shares.items():
                    busy[k] += dt
                    slow_t[k] += dt * rate[k] / max(sh, 1e-9)
            prev = t
            active[n] = active.get(n, 0) + d
            if active[n] == 0:
                del active[n]
        for k in rate:
            if busy[k] > 0 and slow_t[k] > busy[k] * 1.0005:
                out[k][key] = slow_t[k] / busy[k]
    return out


def _one_pass(plan, M: E.MemoryModel, T: RtlTiming, cached: bool, clock_mhz: float, rates: dict,
              slow: dict | None):
    eng = plan.engine
    n_pe, n_ci = eng.n_pe, eng.n_ci
    bpu = n_pe // 8                        # 64-bit beats per N_PE-byte unit (results, DDR tensors)
    bpw = n_pe * n_ci // 8                 # beats per weight word
    L = plan.layers
    slow = slow or {}
    tl = _Timeline()
    ch_w = _Channel(rates["read_beats"], slow.get("weights"), tl)      # m_axi_wts reads
    # the activation paths (spec.engine PATH_1, PATH_2): ring fills and DDR-tensor writes
    ch_r = {E.PATH_1: _Channel(rates["read_beats"], slow.get("act read"), tl),       # m_axi_act reads
            E.PATH_2: _Channel(rates["read_beats"], slow.get("act2 read"), tl)}      # m_axi_act2 reads
    ch_o = {E.PATH_1: _Channel(rates["write_beats"], slow.get("act write"), tl),     # m_axi_act writes
            E.PATH_2: _Channel(rates["write_beats"], slow.get("wts write"), tl)}     # m_axi_wts writes

    # ---- the weight stream (zq_wdma): header, then the words in consumption order -------------
    w_release = _Released(0.0)
    hdr_beats = plan.header_bytes // 8
    if plan.weight_cache and cached:
        weights = None                     # the image stays on chip from the previous frame
    else:
        t_hdr = ch_w.move(T.dma_start + M.read_latency, hdr_beats) + 2        # header checked
        ring = None if plan.weight_cache else plan.wring_words
        weights = _Stream(t_hdr, [bpw] * plan.image_words, ring, w_release, M.read_latency + T.dma_start, 2,
                          ch_w)

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
        tl.start_layer(t_fetch)
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
            paths = row.get("src_path") or E.PATH_1
            n_paths = 2 if paths == E.PATH_BOTH else 1
            # the activation RAM's port B takes a unit (bpu beats) a cycle, less the cycles the
            # results take (one write per output pixel and group, while the loop runs): a path
            # gets its share of it, and beyond that its beats take longer
            spp_ = l.k * l.k * l.ci_chunks
            a_writes = l.mac_cycles / spp_ if l.dst_kind == E.DST_ACT else 0.0
            read_est = l.in_size * l.in_size * cg * bpu / n_paths / rates["read_beats"]
            port_b = bpu / n_paths * (1.0 - a_writes / max(l.mac_cycles + read_est, 1.0))
            row_beats = l.in_size * cg * bpu * max(1.0, rates["read_beats"] / port_b)
            if paths == E.PATH_BOTH:         # even rows on path 1, odd rows on path 2
                fill = _RowPair(*(_Stream(t_start + T.dma_start, [row_beats] * ((l.in_size + 1 - ph) // 2),
                                          l.ring_rows, fill_release, M.read_latency + T.dma_start, T.row_written,
                                          ch_r[p], step=2, phase=ph) for ph, p in ((0, E.PATH_1), (1, E.PATH_2))))
            else:
                fill = _Stream(t_start + T.dma_start, [row_beats] * l.in_size, l.ring_rows, fill_release,
                               M.read_latency + T.dma_start, T.row_written, ch_r[paths])
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
                    # out_fifo_ahead units ahead of it (with both paths: alternate 128-byte lines
                    # on each port, each with its own FIFO)
                    first = t_run + spp + T.result_latency + T.burst_start
                    start = max(w_free, first)
                    paths = row.get("dst_path") or E.PATH_1
                    beats = band_px * bpu
                    if paths == E.PATH_BOTH:
                        half = beats // 2
                        w_free = max(ch_o[E.PATH_1].move(start, beats - half), ch_o[E.PATH_2].move(start, half))
                        ahead = 2 * T.out_fifo_ahead
                    else:
                        w_free = ch_o[paths].move(start, beats)
                        ahead = T.out_fifo_ahead
                    cpb = (w_free - start) / beats
                    lim = w_free - ahead * bpu * cpb - T.result_latency
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
        bound = dict(input_rows="input stream" if l.src_kind == E.SRC_STEM else "ddr read", ddr_write="ddr write",
                     ddr_write_wait="ddr write").get(bound, bound)
        out.append(dict(name=l.name, cycles=int(round(cyc)), mac_cycles=l.mac_cycles, issue_cycles=mac,
                        stall_cycles={k: int(round(v)) for k, v in stalls.items()}, bound=bound,
                        macs=l.macs, start_cycle=int(round(t_fetch))))
    n_cls = plan.gap["classes"] if "classes" in plan.gap else plan.cfg.num_classes
    # the frame: the input must be all taken before the logits go out
    t_in = stem_ready(st["size"]) if L else 0.0
    t_in = max(t_in, st["in_bytes"] / 4.0)
    t_end = max(t, t_in) + T.frame_tail + n_cls
    cycles = int(round(t_end))
    macs = sum(l.macs for l in L)
    period = cycles + T.restart
    # the charged streams per window: the input frame as the stem takes it, the logits at the end
    stream: dict = {}
    if M.charge_streams:
        row_bytes = st["in_size"] * st["in_ch"]
        for k, t1 in enumerate(raw_done):
            t0 = raw_done[k - 1] if k else t1 - raw_row
            _spread(stream, tl, t0, t1, row_bytes)
        _spread(stream, tl, t_end - n_cls, t_end, 4 * n_cls)
    res = dict(
        label="cycle model of the RTL twin (zynqflow.spec.cycles): an event model over the plan, not a measurement",
        memory=asdict(M), memory_rates=rates, cached_weights=bool(plan.weight_cache and cached), layers=out,
        frame=dict(cycles=cycles, period_cycles=period, clock_mhz=clock_mhz,
                   fps=clock_mhz * 1e6 / period, fps_at_100mhz=100e6 / period,
                   utilization=macs / (n_pe * n_ci * cycles) if cycles else 0.0,
                   mac_cycles=sum(l.mac_cycles for l in L), dram_rd_bytes=int(rd_bytes),
                   dram_wr_bytes=int(wr_bytes)))
    return res, {"weights": ch_w, "act read": ch_r[E.PATH_1], "act2 read": ch_r[E.PATH_2],
                 "act write": ch_o[E.PATH_1], "wts write": ch_o[E.PATH_2]}, stream, tl


def _spread(acc: dict, tl: _Timeline, t0: float, t1: float, amount: float) -> None:
    """Add ``amount`` spread evenly over [t0, t1) to the per-window dict ``acc`` (:class:`_Timeline` keys)."""
    t0 = max(0.0, t0)
    if t1 <= t0:
        t1 = t0 + 1e-9
    per = amount / (t1 - t0)
    for key, a, b in tl.split(t0, t1):
        acc[key] = acc.get(key, 0.0) + per * (b - a)
