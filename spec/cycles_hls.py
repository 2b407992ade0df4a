"""The cycle model of the HLS engine (``hls/``): one frame, from the hardware plan.

The HLS engine runs its phases one after the other (``hls/engine.h``; it does
not overlap DMA with compute the way the RTL twin does), so its frame time is a
sum over the pipelined loops it enters, each costing its trip count at II=1
plus its pipeline depth and the loop's entry and exit, and for the loops on an
``m_axi`` port the DDR latency of the memory model (``spec.engine.MEMORY_MODEL``),
plus the few cycles of control between them. This module walks the schedule
exactly as the code is written:

* per frame: the weight-image header (3 beats), the whole image when the cache
  is empty (``cached=False``: the first frame after a reset or a failed header),
  the layers, the rest of the input stream, the logits (one beat per class);
* per layer and band of output rows: the ring fill (the stem: for each new stem
  row the raw frame rows it still needs from the stream, the column scan, the
  unit writes when a pixel is more than one unit; a DDR tensor: one burst per
  input row and channel group);
* per output-channel group: the weight load when the block is not in the ring
  (as many words as the ring may hold), the bias; per pass of output rows: the
  MAC loop (trip count = the pass's MAC steps) and, for a DDR destination, the
  burst write of the pass.

    from zynqflow.spec.cycles_hls import predict_hls
    p = predict_hls(plan)                     # plan: zynqflow.export.plan.HwPlan (plan_layout is enough)
    p["frame"]["cycles"], p["frame"]["fps"], p["layers"][i]["cycles"], p["layers"][i]["bound"]

:func:`loop_counts` gives the entries and iterations of every loop per layer,
which the C simulation counts when built with ``-DZQ_COUNT_ITERATIONS``
(``zynqflow.sim.csim.CSim.loop_counts``); the tests check them equal. The cycle
constants (:class:`HlsTiming`) are estimates: Vitis HLS is not run here, so no
scheduled latency backs them. ``frame["cycles"]`` is ap_start to ap_done with
the input beats there when the engine reads them and the logits taken at once;
``frame["period_cycles"]`` adds the restart.

It uses only the plan (``plan.layers``, ``plan.engine``, ``plan.stem``, ...), so
it runs on plans that were never exported; it imports neither torch nor export/.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from . import engine as E

# The pipelined loops of hls/engine.h, in the order of its enum Phase.
PHASES = ("header", "wload", "raw", "scan", "stem_write", "fill", "mac", "ddr_write", "rest", "drain", "out")
HEADER_BEATS = 3            # header_ok reads the HEADER fields' three 64-bit beats


@dataclass(frozen=True)
class HlsTiming:
    """Cycle constants of the HLS engine, each derived from the loop and control
    structure of ``hls/engine.h`` / ``hls/zq_top.cpp``. The pipeline depths and
    control cycles are *estimates* of what Vitis HLS 2023.2 schedules for the
    xc7z020-1 at 10 ns (Vitis is not run here; the csynth report, when there is
    one, is what to calibrate them against). The trip counts themselves are not
    estimates: they are the code's, and the C simulation checks them.

    A pipelined loop of ``n`` iterations at II=1 and depth ``d`` costs
    ``loop_entry + n + d - 1``; a loop that exits before its first iteration
    (``REST`` of a frame read in full) costs ``loop_entry + 1``.

    ``loop_entry``: the FSM state that starts a pipelined loop (trip count and
    induction variables) and the exit state after its last iteration drains.
    ``maxi_read``: what Vitis's ``m_axi`` adapter adds to a read burst beyond the
    memory's own latency: the read request through the adapter's request FIFO and
    AR register slice (2) and the R beats through its read-data FIFO and register
    slice into the loop (2). The memory's latency is ``MemoryModel.read_latency``.
    ``maxi_write``: likewise for a write burst: AW/W through the adapter's FIFOs
    (2), the B response back to the loop's final write-response wait (2); Vitis
    waits for the responses before the loop's region ends, so each write loop
    also pays ``MemoryModel.write_latency``.
    ``depth_read``: HEADER / WLOAD / FILL: the bus read (1), the beat's bytes
    into the unit or weight register (1), the BRAM write (1).
    ``depth_write``: DDR_WRITE: the output-buffer BRAM read (1, plus 1 for its
    output register), the bus write (1).
    ``depth_raw``: RAW: the stream read (1), the insertion into the byte buffer
    at a variable byte offset (1), the raw-ring BRAM write (1).
    ``depth_scan``: SCAN: the column's address and window-row selects (1), the
    raw-ring BRAM read (1), the window shift and lane assembly (1), the
    activation-RAM write (1).
    ``depth_stem_write``: STEM_WRITE: the row-buffer read (1), the address add (1),
    the activation-RAM write (1).
    ``depth_mac``: MAC: the input address arithmetic (2: coordinates and bounds,
    then the row address), the activation and weight BRAM reads (2: the RAM and
    the bank multiplexer), the DSP48E1 (4: A/D input registers, pre-adder AD, M,
    P), the adder tree over the N_CI lanes (2), the accumulator (1), the
    requantization (3: rounding add, variable shift, ReLU and clamp), the
    activation-RAM or output-buffer write (1): 15.
    ``depth_out``: OUT: the GAP-sum read (1), the rounding shift (1), the stream
    register (1).
    ``depth_rest``: REST / DRAIN: the stream read and the framing check (2).
    ``frame_start``: ap_start to the header request: the idle-to-run transition
    and the register writes of net_id, build_params, engine_info and the input
    state's initialization (2).
    ``header_check``: the six header comparisons and the branch (1).
    ``layer_setup``: a layer's table row from its ROM (2) and the derived
    constants (kernel, padding, pass size, rounding; 2).
    ``band_setup``: a band's ring arithmetic (new rows, last row needed) and the
    fill decision (2).
    ``stem_row_setup``: a stem row's first raw row (a multiply by S), the raw rows
    still needed, the K row selects and the window clear (2).
    ``fill_setup``: a DDR fill burst's address (the shifts and adds of one
    (row, channel group)) (1).
    ``group_setup``: an output-channel group's weight check (1), the bias word
    from the weight RAM (2: BRAM read and register), the GAP store and the ring
    release at its end (1): 4.
    ``pass_setup``: a pass's trip count (a multiply by k*k*chunks) and the
    destination rows of the WPG banks (3).
    ``frame_end``: the status and frames_done writes and ap_done (2).
    ``restart``: ap_done to the next frame's ap_start with auto-restart (2).
    """

    loop_entry: int = 2
    maxi_read: int = 4
    maxi_write: int = 4
    depth_read: int = 3
    depth_write: int = 3
    depth_raw: int = 3
    depth_scan: int = 4
    depth_stem_write: int = 3
    depth_mac: int = 15
    depth_out: int = 3
    depth_rest: int = 2
    frame_start: int = 2
    header_check: int = 1
    layer_setup: int = 4
    band_setup: int = 2
    stem_row_setup: int = 2
    fill_setup: int = 1
    group_setup: int = 4
    pass_setup: int = 3
    frame_end: int = 2
    restart: int = 2


HLS_TIMING = HlsTiming()

LABEL = "modelled (HLS engine schedule estimate; not Vitis-scheduled, not measured)"


class _Layer:
    """What one layer's walk found: its loops (phase, iterations), its control steps."""

    def __init__(self, name: str):
        self.name = name
        self.loops: list[tuple[str, int]] = []
        self.bands = self.groups = self.passes = self.stem_rows = 0


def _lg(n: int) -> int:
    return int(n).bit_length() - 1


def _raw_iters_to(p: int, in_ch: int) -> int:
    """RAW-loop iterations for the frame's first p pixels (hls/engine.h raw_iters_to)."""
    return p if in_ch <= 4 else (p * in_ch + 3) // 4


def _walk(plan, cached: bool) -> tuple[list[tuple[str, int]], list[_Layer], list[tuple[str, int]]]:
    """The loops the HLS engine enters for one good frame: (frame loops before the layers,
    the layers, frame loops after them). Raises RuntimeError where the engine would report a
    ring deadlock (a plan the RTL twin could not run either)."""
    eng, L, st = plan.engine, plan.layers, plan.stem
    n_pe, n_ci, wpg = eng.n_pe, eng.n_ci, eng.wpg
    bpw = n_pe * n_ci // 8                      # 64-bit beats per weight word
    bpu = max(1, n_pe // 8)                     # beats per N_PE-byte DDR unit
    wring, image_words = plan.wring_words, plan.image_words
    ddr_dst = [l for l in L if l.dst_kind == E.DST_DDR]
    lg_obuf = max(8, max(_lg(l.out_size) for l in ddr_dst)) if ddr_dst else 0

    head: list[tuple[str, int]] = [("header", HEADER_BEATS)]
    ws_loaded = 0
    if plan.weight_cache:
        if not cached:
            head.append(("wload", image_words * bpw))
        ws_loaded = image_words
    ws_released = 0

    # the stem
    s_k, s_s, s_pad = st["k"], st["s"], st["pad"]
    in_size, in_ch = st["in_size"], st["in_ch"]
    ncol = (st["size"] - 1) * s_s + s_k
    units = -(-st["in_words"] // wpg)
    raw_avail = 0

    layers: list[_Layer] = []
    for l in L:
        lw = _Layer(l.name)
        k, s, pad = l.k, l.stride, l.k // 2
        lg_out, lg_band = _lg(l.out_size), _lg(l.band_rows)
        lg_pass = min(lg_band, max(0, lg_obuf - lg_out)) if l.dst_kind == E.DST_DDR else lg_band
        n_passes = 1 << (lg_band - lg_pass)
        pass_px = 1 << (lg_pass + lg_out)
        R, in_h = l.band_rows, l.in_size
        ring_fed = l.src_kind != E.SRC_ACT
        loaded = released = 0
        for band in range(l.n_bands):
            lw.bands += 1
            oyb = band * R
            if ring_fed:
                new_loaded = min(in_h, released + l.ring_rows)
                last_row = min(in_h - 1, (oyb + R - 1) * s - pad + k - 1)
                if last_row >= new_loaded:
                    raise RuntimeError(f"layer '{l.name}': input row {last_row} needed beyond the ring "
                                       f"({new_loaded} rows loaded): the plan deadlocks")
                if new_loaded > loaded:
                    if l.src_kind == E.SRC_STEM:
                        for ys in range(loaded, new_loaded):
                            lw.stem_rows += 1
                            last_raw = min(in_size - 1, ys * s_s - s_pad + s_k - 1)
                            if raw_avail <= last_raw:
                                lw.loops.append(("raw", _raw_iters_to((last_raw + 1) * in_size, in_ch)
                                                 - _raw_iters_to(raw_avail * in_size, in_ch)))
                                raw_avail = last_raw + 1
                            lw.loops.append(("scan", ncol))
                            if units > 1:
                                lw.loops.append(("stem_write", st["size"] * units))
                    else:
                        for _ in range(loaded, new_loaded):
                            for _ in range(l.row["src_cgrps"]):
                                lw.loops.append(("fill", l.in_size * bpu))
                    loaded = new_loaded
            start = l.w_off
            for _ in range(l.co_groups):
                lw.groups += 1
                need = start + l.w_blk
                if need > ws_loaded:
                    target = min(image_words, ws_released + wring)
                    if need > target:
                        raise RuntimeError(f"layer '{l.name}': weight word {need} needed beyond the ring "
                                           f"({target} words may be loaded): the plan deadlocks")
                    lw.loops.append(("wload", (target - ws_loaded) * bpw))
                    ws_loaded = target
                for _ in range(n_passes):
                    lw.passes += 1
                    lw.loops.append(("mac", pass_px * k * k * l.ci_chunks))
                    if l.dst_kind == E.DST_DDR:
                        lw.loops.append(("ddr_write", pass_px * bpu))
                if not l.resident:
                    ws_released = start + l.w_blk
                start += l.w_blk
            released = min(in_h, max(0, (band + 1) * R * s - pad))
        if l.resident:
            ws_released = l.w_off + l.co_groups * l.w_blk
        layers.append(lw)
    n_cls = plan.gap["classes"] if "classes" in plan.gap else plan.cfg.num_classes
    tail = [("rest", 0), ("out", n_cls)]
    return head, layers, tail


def _counts(loops: list[tuple[str, int]]) -> dict:
    c = {ph: [0, 0] for ph in PHASES}
    for ph, n in loops:
        c[ph][0] += n
        c[ph][1] += 1
    return {ph: (v[0], v[1]) for ph, v in c.items()}


def loop_counts(plan, cached: bool = True) -> dict:
    """Entries and iterations of every pipelined loop of the HLS engine for one good frame:
    ``{"layers": [{phase: (iterations, entries)}, ...], "frame": {phase: (iterations, entries)}}``
    (the structure of ``zynqflow.sim.csim.CSim.loop_counts``; ``cached=False``: the first frame
    of a weight-cache build, which loads the image)."""
    head, layers, tail = _walk(plan, cached)
    return dict(layers=[_counts(lw.loops) for lw in layers], frame=_counts(head + tail))


def predict_hls(plan, memory: E.MemoryModel = E.MEMORY_MODEL, clock_mhz: float = 100.0,
                timing: HlsTiming = HLS_TIMING, cached: bool = True) -> dict:
    """The HLS engine's frame for ``plan``: the structure of ``zynqflow.spec.cycles.predict``
    (``layers``: name, cycles, mac_cycles, bound, macs, phase_cycles, loops; ``frame``: cycles,
    period_cycles, clock_mhz, fps, fps_at_100mhz, utilization, mac_cycles, dram_rd_bytes,
    dram_wr_bytes; ``label``)."""
    T, M = timing, memory
    depth = dict(header=T.depth_read, wload=T.depth_read, fill=T.depth_read, raw=T.depth_raw, scan=T.depth_scan,
                 stem_write=T.depth_stem_write, mac=T.depth_mac, ddr_write=T.depth_write, rest=T.depth_rest,
                 drain=T.depth_rest, out=T.depth_out)
    beat = M.beat_bytes

    def cost(ph: str, n: int) -> int:
        c = T.loop_entry + (n + depth[ph] - 1 if n > 0 else 1)
        if ph in ("header", "wload", "fill"):
            c += M.read_latency + T.maxi_read
        elif ph == "ddr_write":
            c += T.maxi_write + M.write_latency
        return c

    head, walked, tail = _walk(plan, cached)
    rd = sum(n for ph, n in head if ph in ("header", "wload")) * beat
    wr = 0
    t = T.frame_start + sum(cost(ph, n) for ph, n in head) + T.header_check
    category = dict(raw="input stream", scan="input stream", stem_write="input stream", fill="ddr read",
                    wload="weights", mac="compute", ddr_write="ddr write")
    out = []
    for l, lw in zip(plan.layers, walked):
        phase = {ph: 0 for ph in PHASES}
        for ph, n in lw.loops:
            phase[ph] += cost(ph, n)
            if ph in ("wload", "fill"):
                rd += n * beat
            elif ph == "ddr_write":
                wr += n * beat
        control = (T.layer_setup + lw.bands * T.band_setup + lw.stem_rows * T.stem_row_setup
                   + sum(1 for ph, _ in lw.loops if ph == "fill") * T.fill_setup
                   + lw.groups * T.group_setup + lw.passes * T.pass_setup)
        cyc = control + sum(phase.values())
        by_cat: dict[str, int] = {}
        for ph, c in phase.items():
            if ph in category:
                by_cat[category[ph]] = by_cat.get(category[ph], 0) + c
        bound = max(by_cat, key=by_cat.get)
        mac_iters = sum(n for ph, n in lw.loops if ph == "mac")
        out.append(dict(name=l.name, cycles=int(cyc), mac_cycles=int(mac_iters), bound=bound, macs=l.macs,
                        phase_cycles={**{ph: int(c) for ph, c in phase.items() if c}, "control": int(control)},
                        loops={ph: v for ph, v in _counts(lw.loops).items() if v[1]}))
        t += cyc
    t += sum(cost(ph, n) for ph, n in tail) + T.frame_end
    cycles = int(t)
    period = cycles + T.restart
    macs = sum(l.macs for l in plan.layers)
    eng = plan.engine
    return dict(
        label=LABEL, memory=asdict(memory), timing=asdict(timing),
        cached_weights=bool(plan.weight_cache and cached), layers=out,
        frame=dict(cycles=cycles, period_cycles=period, clock_mhz=clock_mhz,
                   fps=clock_mhz * 1e6 / period, fps_at_100mhz=100e6 / period,
                   utilization=macs / (eng.n_pe * eng.n_ci * cycles) if cycles else 0.0,
                   mac_cycles=sum(x["mac_cycles"] for x in out), dram_rd_bytes=int(rd),
                   dram_wr_bytes=int(wr)))

# hls/zq_count.h's enum Counter, in order
COUNTERS = ("header", "wload", "raw", "scan", "stem_write", "rest", "drain", "out", "fill", "core", "bias", "mac",
            "wait_rows", "wait_weights", "tail", "w_beats", "units", "port_busy", "results", "ddr_write", "logits",
            "span")
