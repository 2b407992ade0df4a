"""zq_loop_gen: one layer's loop nest, one MAC step per cycle when data is ready.

The step sequence at S0 is compared with a Python model of the loop nest of the header
(band / group / oy / ox / ky / kx / c; input taps with their bank, row and zero flag, weight-ring
addresses, bias steps, first/last/block-last flags, group, pixel, valid channels), for layers
of both kernel sizes and strides, ring-fed (stem / DDR) and whole-tensor sources, resident and
streamed weights. Around it, models of the DMAs: a weight DMA that loads the ring up to
``w_release`` + 2^WR_W words, a row DMA that fills a ring-fed layer's rows up to
``rows_release`` + 2^src_lg_rows, both at random speed, and an output path that raises
``out_full`` in random bursts. Checked, besides the sequence:

* waits: a block's bias step only once ``w_loaded`` holds the whole block, a band's first step
  only once ``rows_avail`` holds the band's last input row (ring-fed), no step within three
  cycles of ``out_full``; every step's weight word and input row is in its ring when read
  (loaded / written, and not yet overwritten by DMAs that act on a release three cycles
  after it: the releases come neither early nor late; they leave the module REL_DELAY = 4
  cycles after the loop passes them);
* releases: ``rows_release`` = (band+1)*R*s - k/2 (clamped) after each band's last step, 0
  from the layer's start; ``w_release`` = the block's end after each streamed block, the
  layer's end after the last step of a resident layer, 0 after ``frame_start``;
* timing: a stall-free layer issues bands*(1 + groups*(1 + steps per block)) - 1 cycles from
  its first bias step to its last step (one band check per band, one bias step per block, one
  MAC step per cycle), after the same number of set-up cycles for every layer; ``stall_mem``
  counts exactly the cycles without a step while the counters run (what is neither a band
  check, a step nor a stall is the same few set-up cycles in every layer); ``busy`` from the
  cycle after ``start`` until the last step has left S0 (a step alone in the address stages
  after a long wait keeps it high: zq_core's stages see a step from S1 on);
* ``abort`` drops the steps in flight at once; the next layer runs normally.
"""

from __future__ import annotations

import collections
import dataclasses

import cocotb

from zynqflow.sim.rtl.tb.common import TBBase, u
from zynqflow.spec.engine import RTL_PIPE_ADDR as ADDR   # a step reaches S0 ADDR cycles after its issue

DMA_DELAY = 3      # cycles from a release to the first ring write it allows (models; the DMAs take more)
REL_DELAY = 4      # zq_loop_gen passes its releases through REL_DELAY registers


@dataclasses.dataclass
class Layer:
    name: str
    lg_in: int
    lg_out: int
    k3: int
    s2: int
    chunks: int
    groups: int
    co_last: int
    lg_band: int
    ring_fed: int
    src_base: int
    src_lg_rows: int
    w_blk: int = 0
    w_res: int = 0
    w_off: int = 0
    in_rows: int = 0

    def __post_init__(self):
        k = 3 if self.k3 else 1
        self.in_rows = self.in_rows or (1 << self.lg_in)
        self.w_blk = 1 + k * k * self.chunks

    @property
    def k(self):
        return 3 if self.k3 else 1

    @property
    def s(self):
        return 2 if self.s2 else 1

    @property
    def n_bands(self):
        return (1 << self.lg_out) >> self.lg_band

    @property
    def words(self):
        return self.groups * self.w_blk

    def need(self, band: int) -> int:
        """Input rows the ring must hold before band `band` (its last input row, clamped to the map)."""
        R, s, pad = 1 << self.lg_band, self.s, self.k // 2
        last = band * R * s + (R - 1) * s - pad + self.k - 1
        return min(self.in_rows, last + 1)

    def rel(self, band: int) -> int:
        """Input rows released after band `band`: (band+1)*R*s - k/2, clamped at 0 and at the map."""
        R, s, pad = 1 << self.lg_band, self.s, self.k // 2
        return max(0, min(self.in_rows, (band + 1) * R * s - pad))

    def steps(self, n_pe: int, wpg: int, row_w: int, wr_w: int):
        k, s, pad = self.k, self.s, self.k // 2
        out, R = 1 << self.lg_out, 1 << self.lg_band
        lwpg = wpg.bit_length() - 1
        for band in range(self.n_bands):
            for g in range(self.groups):
                blk = self.w_off + g * self.w_blk
                yield dict(kind="bias", g=g, waddr=blk % (1 << wr_w), wimg=blk, band=band, blk_end=blk + self.w_blk)
                for r in range(R):
                    oy = band * R + r
                    for ox in range(out):
                        for ky in range(k):
                            for kx in range(k):
                                for c in range(self.chunks):
                                    iy, ix = oy * s + ky - pad, ox * s + kx - pad
                                    inb = 0 <= iy < self.in_rows and 0 <= ix < (1 << self.lg_in)
                                    row = (self.src_base + ((c >> lwpg) << (self.src_lg_rows + self.lg_in))
                                           + ((iy % (1 << self.src_lg_rows)) << self.lg_in) + ix) % (1 << row_w)
                                    last = ky == k - 1 and kx == k - 1 and c == self.chunks - 1
                                    wimg = blk + 1 + (ky * k + kx) * self.chunks + c
                                    yield dict(kind="mac", bank=c % wpg, row=row if inb else None, zero=int(not inb),
                                               waddr=wimg % (1 << wr_w), wimg=wimg, g=g,
                                               pix=(oy << self.lg_out) | ox, first=int(ky == kx == c == 0),
                                               last=int(last), blk_last=int(last and r == R - 1 and ox == out - 1),
                                               nvalid=self.co_last if g == self.groups - 1 else n_pe,
                                               iy=iy if inb else None, band=band, blk_end=blk + self.w_blk)


class TB(TBBase):
    def __init__(self, dut, test):
        super().__init__(dut, test=test)
        self.n_pe = self.param("N_PE")
        self.wpg = self.param("WPG")
        self.row_w = self.param("ROW_W")
        self.wr_w = self.param("WR_W")
        self.ring = 1 << self.wr_w
        self.hist: dict[int, dict] = {}
        self.layer: Layer | None = None
        self.total_words = 1 << 23
        self.w_loaded = 0
        self.rows_avail = 0
        self.layer_t0 = 0
        self.full = 0
        self.p_w, self.p_row, self.p_full_on, self.p_full_off = 0.5, 0.3, 0.04, 0.3
        self.ideal = False
        self.overheads: list[int] = []
        self.lead: list[int] = []
        self.rel_hist = collections.deque([(0, 0)] * 8, maxlen=8)
        for n in ("frame_start", "start", "abort", "rows_avail", "w_loaded", "out_full"):
            getattr(dut, n).value = 0

    # ---- the environment ------------------------------------------------------------------
    async def env(self):
        d = self.dut
        while True:
            await self.cycle()
            L = self.layer
            if self.ideal:
                self.w_loaded = self.total_words
                self.rows_avail = L.in_rows if L else 0
                self.full = 0
            else:
                # the DMAs see a release some cycles after it (their request/response path is
                # longer still): a step's weight word or input row may be released up to two
                # cycles before the step reaches S0
                w_rel = self.rel_hist[-DMA_DELAY][1]
                lim = min(self.total_words, w_rel + self.ring)
                if self.w_loaded < lim and self.rng.random() < self.p_w:
                    self.w_loaded = min(lim, self.w_loaded + self.rng.randrange(1, 4))
                if L is not None and L.ring_fed:
                    rel = self.rel_hist[-DMA_DELAY][0] if self.cycles - self.layer_t0 > DMA_DELAY + 1 else 0
                    lim = min(L.in_rows, rel + (1 << L.src_lg_rows))
                    if self.rows_avail < lim and self.rng.random() < self.p_row:
                        self.rows_avail += 1
                self.full = int(self.rng.random() < (1 - self.p_full_off if self.full else self.p_full_on))
            self.rel_hist.append((u(d.rows_release), u(d.w_release)))
            d.w_loaded.value = self.w_loaded
            d.rows_avail.value = self.rows_avail if (L is None or L.ring_fed) else self.rng.randrange(0, 2)
            d.out_full.value = self.full

    async def monitor(self):
        d = self.dut
        while True:
            await self.step()
            h = dict(rows_avail=u(d.rows_avail), w_loaded=u(d.w_loaded), out_full=u(d.out_full), busy=u(d.busy),
                     stall=u(d.stall_mem), rows_release=u(d.rows_release), w_release=u(d.w_release),
                     abort=u(d.abort))
            sv, sb = u(d.s_valid), u(d.s_bias)
            self.check(not (sv and sb), f"s_valid and s_bias together at cycle {self.cycles}")
            if sb:
                h["step"] = dict(kind="bias", g=u(d.s_g), waddr=u(d.s_waddr))
            elif sv:
                zero = u(d.s_zero)
                h["step"] = dict(kind="mac", bank=None if zero else u(d.s_bank), row=None if zero else u(d.s_row),
                                 zero=zero, waddr=u(d.s_waddr), g=u(d.s_g), pix=u(d.s_pix), first=u(d.s_first),
                                 last=u(d.s_last), blk_last=u(d.s_blk_last), nvalid=u(d.s_nvalid))
            self.hist[self.cycles] = h

    # ---- layers ----------------------------------------------------------------------------
    async def frame_start(self):
        d = self.dut
        await self.cycle()
        d.frame_start.value = 1
        self.w_loaded = 0
        self.rel_hist.extend([(0, 0)] * self.rel_hist.maxlen)
        await self.cycle()
        d.frame_start.value = 0
        await self.settle()
        self.eq((u(d.w_release), u(d.rows_release), u(d.busy)), (0, 0, 0), "releases and busy after frame_start")

    async def run_layer(self, L: Layer, abort_after: int | None = None, timeout: int = 40000):
        d = self.dut
        w_rel_before = u(d.w_release)
        await self.cycle()
        self.layer = L
        self.rows_avail = 0
        self.layer_t0 = self.cycles   # the row DMA starts with the layer: it sees no older releases
        d.start.value = 1
        for f in ("lg_in", "lg_out", "k3", "s2", "lg_band", "ring_fed", "src_base", "src_lg_rows", "in_rows",
                  "w_off", "w_blk", "w_res", "co_last"):
            getattr(d, f).value = getattr(L, f)
        d.ci_chunks.value, d.co_groups.value = L.chunks, L.groups
        t_s = self.cycles
        await self.cycle()
        d.start.value = 0
        if abort_after is not None:
            for _ in range(abort_after):
                await self.cycle()
            d.abort.value = 1
            t_a = self.cycles
            await self.cycle()
            d.abort.value = 0
            for _ in range(6):
                await self.cycle()
            await self.settle()
            late = [c for c in range(t_a + 1, self.cycles + 1) if "step" in self.hist.get(c, {})]
            self.eq(late, [], "steps after abort")
            self.eq(self.hist[t_a + 1]["busy"], 0, "busy in the cycle after abort")
            return
        t_e = None
        for _ in range(timeout):
            await self.step()
            if self.cycles > t_s + 2 and not u(d.busy):
                t_e = self.cycles
                break
        self.check(t_e is not None, f"layer {L.name}: busy never fell")
        for _ in range(5):
            await self.step()
        self.analyze(L, t_s, t_e, w_rel_before)

    def analyze(self, L: Layer, t_s: int, t_e: int, w_rel_before: int):
        H = self.hist
        cycles = sorted(c for c in H if t_s < c <= self.cycles)
        got = [(c, H[c]["step"]) for c in cycles if "step" in H[c]]
        model = list(L.steps(self.n_pe, self.wpg, self.row_w, self.wr_w))
        self.eq(len(got), len(model), f"layer {L.name}: steps (MAC + bias)")
        keys_mac = ("kind", "bank", "row", "zero", "waddr", "g", "pix", "first", "last", "blk_last", "nvalid")
        band_end: dict[int, int] = {}
        blk_end_t: list[tuple[int, int]] = []
        for i, ((c, st), m) in enumerate(zip(got, model)):
            if m["kind"] == "bias":
                want = {k: m[k] for k in ("kind", "g", "waddr")}
                self.eq(st, want, f"layer {L.name}: step {i} (bias of band {m['band']} group {m['g']})")
                self.check(H[c - ADDR]["w_loaded"] >= m["blk_end"],
                           f"layer {L.name}: bias step of block ending at {m['blk_end']} issued with "
                           f"w_loaded={H[c - ADDR]['w_loaded']}")
                if L.ring_fed and m["g"] == 0:
                    self.check(H[c - ADDR - 1]["rows_avail"] >= L.need(m["band"]),
                               f"layer {L.name}: band {m['band']} started with rows_avail={H[c - ADDR - 1]['rows_avail']} "
                               f"< {L.need(m['band'])}")
            else:
                want = {k: m[k] for k in keys_mac}
                if m["zero"]:
                    want["bank"] = want["row"] = None
                self.eq(st, want, f"layer {L.name}: step {i} (band {m['band']}, pix {m['pix']})")
                self.eq(H[c - ADDR]["out_full"], 0, f"layer {L.name}: step {i} issued during out_full")
                if L.ring_fed and m["iy"] is not None:
                    ra = H[c]["rows_avail"]
                    self.check(m["iy"] < ra and (self.ideal or ra <= m["iy"] + (1 << L.src_lg_rows)),
                               f"layer {L.name}: step {i} reads row {m['iy']} with rows_avail={ra} "
                               f"(ring of {1 << L.src_lg_rows})")
                if m["blk_last"]:
                    blk_end_t.append((c, m["blk_end"]))
                    if m["g"] == L.groups - 1:
                        band_end[m["band"]] = c
            wl = H[c]["w_loaded"]
            self.check(m["wimg"] < wl and (self.ideal or wl <= m["wimg"] + self.ring),
                       f"layer {L.name}: step {i} reads weight word {m['wimg']} with w_loaded={wl} "
                       f"(ring of {self.ring})")
        t_first, t_last = got[0][0], got[-1][0]
        # releases, cycle by cycle: the loop passes a row / word two cycles before its last step
        # reaches S0, the output shows it REL_DELAY cycles later
        lag = REL_DELAY - 2
        for c in range(t_s + 2, t_last + 1):
            done = [b for b, t in band_end.items() if t + lag <= c]
            want = L.rel(max(done)) if done else 0
            self.eq(H[c]["rows_release"], want, f"layer {L.name}: rows_release at cycle {c}")
            if L.w_res:
                want_w = L.w_off + L.words if t_last + lag <= c else w_rel_before
            else:
                ends = [e for t, e in blk_end_t if t + lag <= c]
                want_w = ends[-1] if ends else w_rel_before
            self.eq(H[c]["w_release"], want_w, f"layer {L.name}: w_release at cycle {c}")
        # busy and stall accounting
        self.check(all(H[c]["busy"] for c in range(t_s + 1, t_last + 1)), f"layer {L.name}: busy dropped early")
        self.eq((H[t_last]["busy"], H[t_last + 1]["busy"]), (1, 0), f"layer {L.name}: busy around the last step")
        self.eq(t_e, t_last + 1, f"layer {L.name}: busy falls when the last step has left S0")
        # every cycle of a running layer is a band check, a step, a stall (stall_mem, one cycle
        # later) or one of a fixed number of set-up / wind-down cycles, the same for every layer
        stalls = sum(H[c]["stall"] for c in range(t_s + 2, t_e + 1))
        overhead = (t_e - t_s) - L.n_bands - len(model) - stalls
        self.overheads.append(overhead)
        self.eq(overhead, self.overheads[0], f"layer {L.name}: cycles neither band check, step nor stall_mem "
                                             f"(the same for every layer: stall_mem counts every waiting cycle)")
        self.check(0 < overhead <= 8, f"layer {L.name}: {overhead} set-up cycles")
        n_bias = L.n_bands * L.groups
        self.lead.append(t_first - t_s)
        if self.ideal:
            self.eq(t_first - t_s, self.lead[0], f"layer {L.name}: cycles from start to the first (bias) step "
                                                 "without stalls (the same for every layer)")
            spb = (1 << L.lg_band) * (1 << L.lg_out) * L.k * L.k * L.chunks
            self.eq(t_last - t_first + 1, L.n_bands * (1 + L.groups * (1 + spb)) - 1,
                    f"layer {L.name}: cycles from the first to the last step without stalls")
            self.eq(stalls, 0, f"layer {L.name}: stall_mem without stalls")
        self.info(**{L.name: dict(steps=len(model), cycles=t_e - t_s, stalls=stalls, bias=n_bias)})
        self.last_stalls = stalls

    def start(self):
        cocotb.start_soon(self.env())
        cocotb.start_soon(self.monitor())


def layers(tb) -> list[Layer]:
    n_pe, wpg = tb.n_pe, tb.wpg
    out = [
        Layer("stem_k3s2", lg_in=3, lg_out=2, k3=1, s2=1, chunks=2, groups=2, co_last=n_pe - 3, lg_band=0,
              ring_fed=1, src_base=100, src_lg_rows=2, w_res=1),
        Layer("act_k3s1_streamed", lg_in=2, lg_out=2, k3=1, s2=0, chunks=3, groups=3, co_last=n_pe, lg_band=2,
              ring_fed=0, src_base=0x20, src_lg_rows=2, w_res=0),
        Layer("ddr_k1", lg_in=3, lg_out=3, k3=0, s2=0, chunks=wpg + 1, groups=2, co_last=1, lg_band=1,
              ring_fed=1, src_base=200, src_lg_rows=1, w_res=1),
        Layer("ddr_k3s1_bands", lg_in=3, lg_out=3, k3=1, s2=0, chunks=1, groups=1, co_last=n_pe, lg_band=1,
              ring_fed=1, src_base=300, src_lg_rows=2, w_res=1),
        Layer("ddr_k1s2", lg_in=3, lg_out=2, k3=0, s2=1, chunks=1, groups=2, co_last=n_pe // 2, lg_band=1,
              ring_fed=1, src_base=400, src_lg_rows=2, w_res=1),
    ]
    off = 0
    for L in out:
        L.w_off = off
        off += L.words
        assert not L.w_res or L.words <= tb.ring, (L.name, L.words, tb.ring)
        assert L.w_res or 2 * L.w_blk <= tb.ring
    return out


@cocotb.test()
async def loop_nest_with_waits(dut):
    tb = TB(dut, "loop_nest_with_waits")
    await tb.reset()
    tb.start()
    Ls = layers(tb)
    await tb.frame_start()
    for L in Ls:
        await tb.run_layer(L)
    # a second frame (the weight ring's releases start over) with slow DMAs and no out_full:
    # every layer waits for weights, the ring-fed ones for rows as well
    tb.p_w, tb.p_row, tb.p_full_on = 0.06, 0.04, 0.0
    await tb.frame_start()
    for L in Ls[:3]:
        await tb.run_layer(L)
        if L.ring_fed or L.words > tb.ring:      # (a small layer's weights may already be in the ring)
            tb.check(tb.last_stalls > 0, f"layer {L.name}: no stall with slow DMAs")
    tb.done(3000)


@cocotb.test()
async def stall_free_timing(dut):
    tb = TB(dut, "stall_free_timing")
    tb.ideal = True
    await tb.reset()
    tb.start()
    await tb.frame_start()
    for L in layers(tb)[:3]:
        await tb.run_layer(L)
    tb.done(1000)


@cocotb.test()
async def abort_mid_layer(dut):
    tb = TB(dut, "abort_mid_layer")
    await tb.reset()
    tb.start()
    Ls = layers(tb)
    await tb.frame_start()
    await tb.run_layer(Ls[0], abort_after=150)
    await tb.frame_start()
    await tb.run_layer(Ls[0])
    tb.done(500)
