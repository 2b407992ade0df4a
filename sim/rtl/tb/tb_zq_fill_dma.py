"""zq_fill_dma: a DDR tensor [cg][y][x][N_PE bytes] read row by row into an activation-RAM ring.

The DDR is the project's read-port model (``sim/world/ddr.py``: cocotbext-axi ``AxiRamRead``
with first-beat latency and overlapping bursts) with random AR/R stalls; port B of the
activation RAM takes units with random ``b_ready``; ``release_rows`` comes from a model of the
MAC loop (it releases rows some time after they arrive, keeping a halo). Layers of several map
sizes, channel groups, ring sizes and tensor alignments. Checked:

* the AR bursts are exactly the plan of the header: rows in order, each row's channel groups
  in order, each (row, group) run of W*N_PE bytes cut at 128-byte boundaries (<= 16 beats,
  never across 4 KiB); at most MAX_OUT outstanding;
* row y is requested only once y < release + 2^lg_rows (at the request), and no unit is
  written into a ring slot whose row was not released;
* the port-B units: row ring + (cg << (lg_rows + lg_w)) + ((y mod 2^lg_rows) << lg_w) + x
  and the tensor's N_PE bytes, in order, held while ``b_ready`` is low;
* ``rows_avail`` = rows whose last unit was written, every cycle; ``busy`` until the last
  unit is written, low the cycle after; ``bytes_read``; ``err`` per SLVERR beat;
* ``abort``: no new request, the bursts in flight drain, ``busy`` falls; the next layer is exact.
"""

from __future__ import annotations

import collections

import cocotb
from cocotbext.axi.sparse_memory import SparseMemory

from zynqflow.sim.rtl.tb.common import AxiMasterChecker, TBBase, memory, u

BASE = 0x1800_0000
LINE = 128


class Layer:
    def __init__(self, tb, base: int, lg_w: int, cgrps: int, lg_rows: int, ring: int, halo: int):
        self.base, self.lg_w, self.cgrps, self.lg_rows, self.ring, self.halo = base, lg_w, cgrps, lg_rows, ring, halo
        self.w = 1 << lg_w
        self.npe = tb.npe
        self.data = {}      # (cg, y, x) -> unit int
        img = bytearray()
        for cg in range(cgrps):
            for y in range(self.w):
                for x in range(self.w):
                    unit = bytes(tb.rng.getrandbits(8) for _ in range(self.npe))
                    self.data[(cg, y, x)] = int.from_bytes(unit, "little")
                    img += unit
        tb.mem.write(base, bytes(img))
        self.row_mask = (1 << tb.row_w) - 1

    def addr(self, cg, y, byte=0):
        return self.base + (cg * self.w + y) * self.w * self.npe + byte

    def bursts(self):
        out = []
        run = self.w * self.npe
        for y in range(self.w):
            for cg in range(self.cgrps):
                b = 0
                while b < run:
                    a = self.addr(cg, y, b)
                    n = min(run - b, LINE - a % LINE)
                    out.append((a, n // 8, y))
                    b += n
        return out

    def units(self):
        if getattr(self, "_units", None) is None:
            self._units = self._make_units()
        return self._units

    def _make_units(self):
        out = []
        for y in range(self.w):
            for cg in range(self.cgrps):
                for x in range(self.w):
                    row = (self.ring + (cg << (self.lg_rows + self.lg_w)) + ((y % (1 << self.lg_rows)) << self.lg_w)
                           + x) & self.row_mask
                    out.append((row, self.data[(cg, y, x)], y, x == self.w - 1 and cg == self.cgrps - 1))
        return out


class RingFillTB(TBBase):
    """What this bench and tb_zq_fill_paths's share: the DUT's parameters, the DDR image, a layer's
    start, the model of the MAC loop (``b_ready``, and ``release_rows`` behind the rows in by the
    layer's halo), and the checks of port B and of the ring slots. A bench says what rows are in
    (:meth:`rows_in`) and keeps its own counts at a layer's start (:meth:`new_layer`,
    :meth:`layer_started`)."""

    def __init__(self, dut, test, p_ready: float):
        super().__init__(dut, test=test)
        self.npe = self.param("N_PE")
        self.row_w = self.param("ROW_W")
        self.max_out = self.param("MAX_OUT")
        self.mem = SparseMemory(1 << 32)
        self.p_ready = p_ready
        self.layer: Layer | None = None
        self.release = 0
        self.rel_hist = collections.deque([0] * 4, maxlen=4)

    def rows_in(self) -> int:
        """Rows from row 0 written in full."""
        raise NotImplementedError

    def new_layer(self) -> None:
        """The cycle ``start`` is driven (before the DMA samples it)."""

    def layer_started(self, layer: Layer) -> None:
        """The cycle the DMA sampled ``start``."""

    async def run_layer(self, layer: Layer, **inputs):
        """Start ``layer``: a cycle of ``start`` with the layer's registers (and ``inputs``, more of the
        DUT's inputs by name)."""
        d = self.dut
        self.layer = None
        self.release = 0
        await self.cycle()
        d.start.value = 1
        for name, v in inputs.items():
            getattr(d, name).value = v
        d.base.value, d.lg_w.value, d.cgrps.value = layer.base, layer.lg_w, layer.cgrps
        d.ring.value, d.lg_rows.value = layer.ring, layer.lg_rows
        d.release_rows.value = 0
        self.new_layer()
        await self.cycle()            # start sampled: the DMA's counters start over
        d.start.value = 0
        self.layer = layer
        self.layer_started(layer)

    async def consumer(self):
        """release_rows: rows the MAC loop no longer needs (behind the rows in by the layer's halo)."""
        d = self.dut
        while True:
            await self.cycle()
            d.b_ready.value = int(self.rng.random() < self.p_ready)
            L = self.layer
            if L is not None and self.rng.random() < 0.3:
                target = max(0, min(L.w, self.rows_in() - L.halo))
                if self.release < target:
                    self.release += 1
            d.release_rows.value = self.release

    def port_b(self, c: int, held):
        """Port B in cycle ``c``: ``(unit, taken, held)``, the unit (row, data) it offers, whether
        ``b_ready`` takes it, and the unit the next cycle must offer again (checked: a unit offered
        while ``b_ready`` is low is held)."""
        d = self.dut
        bv, br = u(d.b_valid), u(d.b_ready)
        unit = (u(d.b_row), u(d.b_data))
        if held is not None:
            self.check(bv == 1 and unit == held, f"port-B unit not held while b_ready is low (cycle {c})")
        return unit, bool(bv and br), (unit if bv and not br else None)

    def check_slot(self, L: Layer, y: int, rel: int) -> None:
        """A unit of row ``y`` is written with ``release_rows`` = ``rel``: the slot it overwrites held row
        y - 2^lg_rows, released?"""
        self.check(y < rel + (1 << L.lg_rows),
                   f"unit of row {y} written with release_rows={rel} (ring of {1 << L.lg_rows})")

    def check_request(self, L: Layer, y: int, rel: int, cyc: int, where: str = "") -> None:
        """The request for row ``y`` came once y < release + 2^lg_rows (``rel``: release_rows one cycle
        before arvalid rose)."""
        self.check(y < rel + (1 << L.lg_rows),
                   f"row {y} requested{where} at cycle {cyc} with release_rows={rel} (ring of {1 << L.lg_rows})")

    async def abort_midway(self, layer: Layer, *args) -> None:
        """Start ``layer`` (``args``: the rest of the bench's :meth:`run_layer`'s) and raise ``abort``
        40 to 69 cycles later; returns in that cycle's read-only phase."""
        await self.run_layer(layer, *args)
        for _ in range(40 + self.rng.randrange(30)):
            await self.step()
        await self.cycle()
        self.dut.abort.value = 1
        await self.settle()

    async def wait_busy_falls(self, timeout: int) -> None:
        """Until ``busy`` falls (after an abort), at most ``timeout`` cycles (checked)."""
        for _ in range(timeout):
            await self.step()
            if not u(self.dut.busy):
                break
        self.eq(u(self.dut.busy), 0, "busy falls after an abort")

    def start(self):
        cocotb.start_soon(self.consumer())
        cocotb.start_soon(self.monitor())


class TB(RingFillTB):
    def __init__(self, dut, test, stalls: float = 0.25, p_ready: float = 0.7):
        super().__init__(dut, test, p_ready)
        self.ram = memory(self, gaps=dict(ar=stalls, r=stalls), read_latency=16, max_reads=16)
        self.axi = AxiMasterChecker(self, "m", 8, read=True, max_rd=self.max_out, page=LINE)
        self.b_units: list = []
        self.rows_done = 0
        self.ar_rise: list[tuple[int, int]] = []     # (cycle, release one cycle earlier) of each new AR
        self.err_beats = 0
        self.errs = 0
        self.check_rows = True
        self.last_b = None
        self.busy_hist: dict[int, int] = {}
        self.slack_min = 1 << 20
        for n in ("start", "abort", "release_rows", "b_ready", "step2", "phase"):
            getattr(dut, n).value = 0
        dut.en.value = 1          # one DMA reading every row (zq_fill_paths's two-path modes: tb_zq_fill_paths)

    def rows_in(self) -> int:
        return self.rows_done

    def new_layer(self) -> None:
        self.ar0 = len(self.axi.ar)
        self.ar_rise = []

    def layer_started(self, layer: Layer) -> None:
        self.start_cycle = self.cycles
        self.rows_done = 0
        self.b_units = []

    async def monitor(self):
        d = self.dut
        arv_prev = 0
        held = None
        while True:
            await self.step()
            c = self.cycles
            L = self.layer
            rel = u(d.release_rows)
            if self.check_rows:
                self.eq(u(d.rows_avail), self.rows_done, f"rows_avail at cycle {c}")
            # beats are counted as they leave the reader's register slice (at most one beat behind R)
            nr = len(self.axi.r)
            self.check(8 * (nr - 1) <= u(d.bytes_read) <= 8 * nr,
                       lambda: f"bytes_read at cycle {c}: {u(d.bytes_read)} with {nr} R beats")
            self.errs += u(d.err)
            arv = u(d.m_arvalid)
            if arv and not arv_prev:
                self.ar_rise.append((c, self.rel_hist[-1]))
            arv_prev = arv
            unit, taken, held = self.port_b(c, held)
            if taken and L is not None:
                i = len(self.b_units)
                want = L.units()[i] if i < len(L.units()) else None
                self.check(want is not None, f"port-B unit {i} beyond the layer's {len(L.units())}")
                self.eq(unit, want[:2], f"port-B unit {i} (row, data) of row y={want[2]}")
                self.check_slot(L, want[2], rel)
                self.b_units.append(c)
                self.last_b = c
                if want[3]:
                    self.rows_done += 1
            if u(d.m_rvalid) and u(d.m_rready) and (u(d.m_rresp) >> 1) & 1:
                self.err_beats += 1
            self.axi.sample(c)
            self.rel_hist.append(rel)
            self.busy_hist[c] = u(d.busy)

    async def finish_layer(self, timeout=30000):
        d = self.dut
        L = self.layer
        n = len(L.units())
        for _ in range(timeout):
            await self.step()
            if len(self.b_units) >= n:
                break
        self.eq(len(self.b_units), n, "units written")
        for _ in range(2):
            await self.step()
        last = self.b_units[-1]
        self.eq(self.busy_hist.get(last), 1, "busy in the cycle of the last unit's write")
        self.eq(self.busy_hist.get(last + 1), 0, "busy the cycle after the last unit's write")
        self.check(all(self.busy_hist.get(c) == 1 for c in range(self.start_cycle + 1, last + 1)),
                   "busy low before the layer's last unit")
        self.eq(u(d.rows_avail), L.w, "rows_avail at the end")
        self.eq(u(d.bytes_read), 8 * len(self.axi.r), "bytes_read at the end")
        plan = L.bursts()
        got = [(a, nb) for _, a, nb in self.axi.ar[self.ar0:]]
        self.eq(got, [(a, nb) for a, nb, _ in plan], "AR bursts (address, beats)")
        # each request for row y came once y < release + 2^lg_rows (release one cycle before arvalid rose)
        for (cyc, rel), (_, _, y) in zip(self.ar_rise, plan):
            self.check_request(L, y, rel, cyc)
            if y < L.w - 1:
                self.slack_min = min(self.slack_min, rel + (1 << L.lg_rows) - y)
        self.eq(len(self.ar_rise), len(plan), "AR requests seen rising")


def layers(tb, small_lg: int = 0, small_top: int = 3):
    """The tests' layers (both benches'); the third: a map of 2^small_lg rows (and columns) in a ring
    of as many rows, ``small_top`` rows below the top of the RAM (its groups wrap around)."""
    npe = tb.npe
    return [
        Layer(tb, BASE, lg_w=3, cgrps=3, lg_rows=2, ring=0x40, halo=2),
        Layer(tb, BASE + 0x3000 + 0x40, lg_w=4, cgrps=2, lg_rows=3, ring=0x10, halo=1),   # runs cut at lines
        Layer(tb, BASE + 0x8000 + 3 * npe, lg_w=small_lg, cgrps=5, lg_rows=small_lg, ring=(1 << tb.row_w) - small_top,
              halo=0),
        Layer(tb, BASE + 0xA000, lg_w=2, cgrps=1, lg_rows=2, ring=0, halo=3),          # the ring holds the map
    ]


@cocotb.test()
async def layers_in_rings(dut):
    tb = TB(dut, "layers_in_rings")
    await tb.reset()
    tb.start()
    for L in layers(tb):
        await tb.run_layer(L)
        await tb.finish_layer()
        for _ in range(tb.rng.randrange(1, 6)):
            await tb.cycle()
    tb.eq(tb.errs, 0, "no read errors")
    tb.check(tb.axi.rd_out_max >= min(tb.max_out, 2), f"at most {tb.axi.rd_out_max} bursts outstanding")
    tb.eq(tb.slack_min, 1, "a request waited for its ring slot (least slack y < release + 2^lg_rows)")
    tb.info(rd_out_max=tb.axi.rd_out_max, cycles=tb.cycles)
    tb.done(2000)


@cocotb.test()
async def read_errors(dut):
    tb = TB(dut, "read_errors")
    await tb.reset()
    tb.start()
    L = layers(tb)[0]
    lo = L.addr(1, 2)
    tb.ram.fail_reads(lo, lo + 24)
    for a in range(lo, lo + 24):       # SLVERR beats read as zeros
        off = a - L.base
        unit, byte = divmod(off, tb.npe)
        cg, rest = divmod(unit, L.w * L.w)
        y, x = divmod(rest, L.w)
        L.data[(cg, y, x)] &= ~(0xFF << (8 * byte))
    await tb.run_layer(L)
    await tb.finish_layer()
    tb.eq(tb.err_beats, 3, "SLVERR beats")
    tb.eq(tb.errs, 3, "err pulses (one per SLVERR beat)")
    tb.done(100)


@cocotb.test()
async def abort_then_next_layer(dut):
    tb = TB(dut, "abort_then_next_layer")
    await tb.reset()
    tb.start()
    L0, L1 = layers(tb)[:2]
    await tb.abort_midway(L0)
    aw_pending = u(dut.m_arvalid)
    n_ar = len(tb.axi.ar)
    tb.check_rows = False
    await tb.wait_busy_falls(2000)
    tb.check(len(tb.axi.ar) - n_ar <= aw_pending, "a new request after the abort")
    tb.eq(tb.axi.rd_out, 0, "bursts in flight drained")
    await tb.cycle()
    dut.abort.value = 0
    await tb.run_layer(L1)
    tb.check_rows = True
    await tb.finish_layer()
    tb.done(200)
