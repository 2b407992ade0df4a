"""zq_stem: s_axis_in -> raw rows -> im2col windows -> the first layer's ring (activation RAM port B).

Frames come from a cocotbext-axi ``AxiStreamSource`` with random gaps; port B takes units with
random ``b_ready``; ``release_rows`` comes from a model of the first layer (it releases stem rows
some time after they are written, keeping a halo). The expected units are an independent numpy
im2col of the frame (``sliding_window_view`` of the zero-padded HWC image: lane
j = (ky*K + kx)*IN_CH + c, zero beyond K*K*IN_CH), cut into IN_WORDS words of N_CI lanes and
units of WPG words. Checked:

* every unit in order: row ring + ((unit << lg_rows) + (ys mod 2^lg_rows)) << lg_size) + ox,
  bank mask (words < IN_WORDS) and data, held while ``b_ready`` is low; a stem row's units only
  once its ring slot is released (ys < release + 2^lg_rows);
* ``rows_avail`` never ahead of the rows written, SIZE at the end; ``first_beat`` one pulse
  after the first beat; ``in_done`` after the TLAST beat, ``s_tready`` low then;
* short frame (TLAST early): ``err_short``; long frame (no TLAST on beat IN_BEATS-1): ``err_long``
  from that beat on, every beat taken and dropped up to the next TLAST, ``drain_frames`` = whole
  frames of beats dropped (a frame whose TLAST is missing running into the next one: 1);
* ``abort``: no unit after it, the stream still taken up to its TLAST; the next frame is exact;
* rings of 2 rows (the stem waits for releases) and of the whole map.
"""

from __future__ import annotations

import cocotb
import numpy as np
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSource

from zynqflow.sim.rtl.tb.common import TBBase, pause_gen, u
from zynqflow.spec.engine import PIXELS_PER_BEAT


def im2col_units(frame: np.ndarray, p: dict, ring: int, lg_rows: int, row_w: int):
    """(row, mask, data) of every port-B unit of a frame, in order (numpy im2col)."""
    K, S, C = p["K"], p["S"], p["IN_CH"]
    size, n_ci, wpg, in_words = p["SIZE"], p["N_CI"], p["WPG"], p["IN_WORDS"]
    pad = K // 2
    img = frame.reshape(p["IN_SIZE"], p["IN_SIZE"], C)
    padded = np.pad(img, ((pad, pad + S), (pad, pad + S), (0, 0)))
    win = np.lib.stride_tricks.sliding_window_view(padded, (K, K, C))[::S, ::S][:size, :size, 0]  # ys, ox, K, K, C
    lanes = np.zeros((size, size, in_words * n_ci), np.uint8)
    lanes[:, :, :K * K * C] = win.reshape(size, size, K * K * C)
    units = -(-in_words // wpg)
    lg_size = size.bit_length() - 1
    out = []
    for ys in range(size):
        for ox in range(size):
            for un in range(units):
                row = (ring + ((((un << lg_rows) + (ys % (1 << lg_rows))) << lg_size) + ox)) % (1 << row_w)
                mask, data = 0, 0
                for b in range(wpg):
                    w = un * wpg + b
                    if w < in_words:
                        mask |= 1 << b
                        word = int.from_bytes(lanes[ys, ox, w * n_ci:(w + 1) * n_ci].tobytes(), "little")
                        data |= word << (b * n_ci * 8)
                out.append((row, mask, data, ys))
    return out


class TB(TBBase):
    def __init__(self, dut, test, gaps: float = 0.3, p_ready: float = 0.7):
        super().__init__(dut, test=test)
        self.in_size = self.param("IN_SIZE")
        self.in_ch = self.param("IN_CH")
        self.size = self.param("SIZE")
        self.row_w = self.param("ROW_W")
        self.in_bytes = self.in_size * self.in_size * self.in_ch
        self.in_beats = self.in_bytes // PIXELS_PER_BEAT
        self.src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s"), self.clk, self.rst)
        self.src.log.setLevel("WARNING")
        if gaps:
            self.src.set_pause_generator(pause_gen(self.rng, gaps))
        self.p_ready = p_ready
        self.ring, self.lg_rows, self.halo, self.p_release = 0, 1, 1, 0.3
        self.release = 0
        self.rel_hist = [0] * 8
        self.units: list = []            # (cycle, row, mask, data)
        self.beats: list = []            # (cycle, tlast)
        self.first_beats: list[int] = []
        self.t_start = 1 << 30
        self.units_per_row = self.size * -(-self.param("IN_WORDS") // self.param("WPG"))
        self.abort_cycle = None
        for n in ("start", "abort", "ring", "lg_rows", "release_rows", "b_ready"):
            getattr(dut, n).value = 0

    async def consumer(self):
        d = self.dut
        while True:
            await self.cycle()
            d.b_ready.value = int(self.rng.random() < self.p_ready)
            if self.rng.random() < self.p_release:
                target = max(0, u(d.rows_avail) - self.halo)
                if self.release < target:
                    self.release += 1
            d.release_rows.value = self.release

    async def monitor(self):
        d = self.dut
        held = None
        ra_prev = 0
        while True:
            await self.step()
            c = self.cycles
            if c > self.t_start and self.abort_cycle is None:
                ra = u(d.rows_avail)
                rows_written = len(self.units) // self.units_per_row
                self.check(ra_prev <= ra <= rows_written,
                           f"rows_avail={ra} at cycle {c} (before: {ra_prev}) with {rows_written} stem rows written")
                ra_prev = ra
            else:
                ra_prev = 0
            rel = u(d.release_rows)
            self.rel_hist.append(rel)
            bv, br = u(d.b_valid), u(d.b_ready)
            unit = (u(d.b_row), u(d.b_mask), u(d.b_data))
            if held is not None and self.abort_cycle is None:
                self.check(bv == 1 and unit == held, f"port-B unit not held while b_ready is low (cycle {c})")
            held = unit if bv and not br else None
            if bv and br:
                self.units.append((c,) + unit + (self.rel_hist[-4],))
            if u(d.s_tvalid) and u(d.s_tready):
                self.beats.append((c, u(d.s_tlast)))
            if u(d.first_beat):
                self.first_beats.append(c)

    async def start_frame(self, ring: int, lg_rows: int):
        d = self.dut
        await self.cycle()
        self.ring, self.lg_rows = ring, lg_rows
        self.release = 0
        d.release_rows.value = 0
        d.ring.value, d.lg_rows.value = ring, lg_rows
        d.start.value = 1
        self.units, self.beats, self.first_beats = [], [], []
        self.abort_cycle = None
        self.t_start = 1 << 30
        await self.cycle()
        d.start.value = 0
        self.t_start = self.cycles

    def frame(self) -> np.ndarray:
        f = np.frombuffer(bytes(self.rng.getrandbits(8) for _ in range(self.in_bytes)), np.uint8).copy()
        f[: min(16, len(f))] = [0, 255, 1, 254, 128, 127, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11][: min(16, len(f))]
        return f

    async def wait(self, cond, timeout=30000, what=""):
        for _ in range(timeout):
            await self.step()
            if cond():
                return
        self.check(False, f"timeout waiting for {what}")

    async def good_frame(self, ring: int, lg_rows: int, halo: int = 1, p_release: float = 0.3):
        d = self.dut
        self.halo, self.p_release = halo, p_release
        await self.start_frame(ring, lg_rows)
        f = self.frame()
        await self.src.send(AxiStreamFrame(f.tobytes()))
        want = im2col_units(f, self.p, ring, lg_rows, self.row_w)
        await self.wait(lambda: len(self.units) >= len(want) and u(d.in_done), what="the frame's units")
        for _ in range(12):
            await self.step()
        self.eq(len(self.units), len(want), "units written")
        for i, ((c, row, mask, data, rel), (wr, wm, wd, ys)) in enumerate(zip(self.units, want)):
            self.eq((row, mask, data), (wr, wm, wd), f"unit {i} (stem row {ys}) (row, mask, data)")
            self.check(ys < rel + (1 << lg_rows), f"unit {i} of stem row {ys} written with release_rows={rel} "
                                                  f"(ring of {1 << lg_rows})")
        self.eq(u(d.rows_avail), self.size, "rows_avail at the end of the frame")
        self.eq((u(d.err_short), u(d.err_long), u(d.drain_frames)), (0, 0, 0), "error flags of a good frame")
        self.eq(len(self.beats), self.in_beats, "beats taken")
        self.eq(self.first_beats, [self.beats[0][0] + 1], "first_beat: one pulse, the cycle after the first beat")
        self.eq(u(d.in_done), 1, "in_done after the frame")
        self.eq(u(d.s_tready), 0, "s_tready after the frame's TLAST")
        return want

    async def abort(self):
        d = self.dut
        await self.cycle()
        d.abort.value = 1
        await self.cycle()
        d.abort.value = 0
        self.abort_cycle = self.cycles - 1

    def start(self):
        cocotb.start_soon(self.consumer())
        cocotb.start_soon(self.monitor())


@cocotb.test()
async def good_frames(dut):
    tb = TB(dut, "good_frames")
    await tb.reset()
    tb.start()
    lg_size = tb.size.bit_length() - 1
    await tb.good_frame(ring=0x10, lg_rows=1, halo=1, p_release=0.1)           # a ring of two rows: waits
    await tb.good_frame(ring=0x40, lg_rows=lg_size, halo=0, p_release=0.5)     # the whole map
    tb.p_ready = 1.0
    await tb.good_frame(ring=3, lg_rows=2, halo=2, p_release=0.2)
    tb.info(cycles=tb.cycles)
    tb.done(100)


async def _error_frame(tb, data: bytes, what: str):
    d = tb.dut
    await tb.start_frame(ring=0x20, lg_rows=1)
    tb.halo, tb.p_release = 0, 0.5
    await tb.src.send(AxiStreamFrame(data))
    await tb.wait(lambda: u(d.in_done), what=f"in_done of a {what}")
    await tb.step()
    tb.eq(len(tb.beats), -(-len(data) // 4), f"beats taken ({what}, up to its TLAST)")
    tb.eq(tb.beats[-1][1], 1, "the last beat taken carries TLAST")
    tb.eq(u(d.s_tready), 0, f"s_tready after the TLAST of a {what}")


@cocotb.test()
async def short_and_long_frames(dut):
    tb = TB(dut, "short_and_long_frames")
    await tb.reset()
    tb.start()
    d = dut
    nb = tb.in_beats
    # short: TLAST on beat nb/2
    await _error_frame(tb, bytes(tb.rng.getrandbits(8) for _ in range(4 * (nb // 2))), "short frame")
    tb.eq((u(d.err_short), u(d.err_long), u(d.drain_frames)), (1, 0, 0), "flags of a short frame")
    await tb.abort()
    await tb.good_frame(ring=0, lg_rows=1)
    # long: two frames and 5 beats more before TLAST
    await _error_frame(tb, bytes(tb.rng.getrandbits(8) for _ in range(4 * (3 * nb + 5))), "long frame")
    tb.eq((u(d.err_short), u(d.err_long), u(d.drain_frames)), (0, 1, 2), "flags of a long frame (2 frames dropped)")
    await tb.abort()
    # a frame without TLAST running into the next frame (which has its TLAST): one more answer owed
    await _error_frame(tb, bytes(tb.rng.getrandbits(8) for _ in range(4 * 2 * nb)), "missing TLAST")
    tb.eq((u(d.err_short), u(d.err_long), u(d.drain_frames)), (0, 1, 1), "flags of a frame whose TLAST is missing")
    await tb.abort()
    # exactly one frame of beats too many, and a single extra beat
    await _error_frame(tb, bytes(4 * (nb + 1)), "frame one beat long")
    tb.eq((u(d.err_long), u(d.drain_frames)), (1, 0), "flags of a frame one beat too long")
    await tb.abort()
    await tb.good_frame(ring=0, lg_rows=1)
    tb.done(50)


@cocotb.test()
async def err_long_timing(dut):
    """err_long rises in the cycle after beat IN_BEATS-1 is taken without TLAST."""
    tb = TB(dut, "err_long_timing", gaps=0.0)
    await tb.reset()
    tb.start()
    d = dut
    await tb.start_frame(ring=0, lg_rows=1)
    await tb.src.send(AxiStreamFrame(bytes(4 * (tb.in_beats + 3))))
    await tb.wait(lambda: len(tb.beats) >= tb.in_beats, what="the frame's beats")
    t_last = tb.beats[tb.in_beats - 1][0]
    while tb.cycles < t_last + 1:
        await tb.step()
    tb.eq(u(d.err_long), 1, "err_long in the cycle after beat IN_BEATS-1")
    await tb.wait(lambda: u(d.in_done), what="in_done")
    await tb.abort()
    tb.done(2)


@cocotb.test()
async def abort_mid_frame(dut):
    tb = TB(dut, "abort_mid_frame")
    await tb.reset()
    tb.start()
    d = dut
    await tb.start_frame(ring=0x10, lg_rows=2)
    await tb.src.send(AxiStreamFrame(tb.frame().tobytes()))
    await tb.wait(lambda: len(tb.beats) >= tb.in_beats // 2, what="half the frame")
    await tb.abort()
    await tb.wait(lambda: u(d.in_done), what="in_done after abort")
    await tb.step()
    late = [c for c, *_ in tb.units if c > tb.abort_cycle]
    tb.eq(late, [], "units written after abort")
    tb.eq(len(tb.beats), tb.in_beats, "beats taken after abort (up to TLAST)")
    tb.eq(u(d.b_valid), 0, "b_valid after abort")
    await tb.good_frame(ring=0x10, lg_rows=2)
    tb.done(10)
