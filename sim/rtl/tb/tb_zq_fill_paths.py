"""zq_fill_paths: a DDR tensor's rows into an activation-RAM ring over one or two activation paths.

Two zq_fill_dma behind their masters ``m0_*`` (path 1, m_axi_act) and ``m1_*`` (path 2,
m_axi_act2), each with the project's DDR model (random AR/R stalls) over one memory; port B
with random ``b_ready``; ``release_rows`` from tb_zq_fill_dma's model of the MAC loop. Layers of
several map sizes, channel groups and rings, each with the ``paths`` mask PATH_1, PATH_2 or both.
Checked:

* one path: its master reads every row exactly as zq_fill_dma's plan, the other reads nothing;
  both: m0 reads the even rows, m1 the odd rows, each in zq_fill_dma's order and cut;
* row y is requested only once y < release + 2^lg_rows, and no unit overwrites a ring slot
  whose row was not released;
* every port-B unit is the tensor's unit at ring + (cg << (lg_rows + lg_w)) + ((y mod 2^lg_rows)
  << lg_w) + x; each path's units in order; held while ``b_ready`` is low; with both paths the
  two masters stream at once (R beats in the same cycle);
* ``rows_avail`` = the rows from row 0 written in full, every cycle (one path: as of the cycle
  before; both: of two cycles before, the registered minimum), never a row not yet written;
  ``busy`` until the last unit is written; ``bytes_read`` (registered); no read error.
"""

from __future__ import annotations

import collections

import cocotb

from zynqflow.sim.rtl.tb.common import AxiMasterChecker, memory, u
from zynqflow.sim.rtl.tb.tb_zq_fill_dma import LINE, Layer, RingFillTB
from zynqflow.sim.rtl.tb.tb_zq_fill_dma import layers as dma_layers
from zynqflow.spec import engine as E


class TB(RingFillTB):
    def __init__(self, dut, test, stalls: float = 0.25, p_ready: float = 0.8):
        super().__init__(dut, test, p_ready)
        self.paths_built = self.param("PATHS")
        self.ram = [memory(self, f"m{k}", gaps=dict(ar=stalls, r=stalls), read_latency=16, max_reads=16)
                    for k in range(2)]
        self.axi = [AxiMasterChecker(self, f"m{k}", 8, read=True, max_rd=self.max_out, page=LINE) for k in range(2)]
        self.paths = E.PATH_1
        self.done_rows: set = set()
        self.rows_hist = collections.deque([0] * 3, maxlen=3)     # rows from 0 written in full, by cycle
        self.next_unit = {}            # path -> index of its next unit
        self.units_left = {}           # y -> units of row y not yet written
        self.n_units = 0
        self.ar_rise: list = [[], []]
        self.both_r = 0
        for n in ("start", "abort", "release_rows", "b_ready", "paths"):
            getattr(dut, n).value = 0

    def path_of_row(self, y: int) -> int:
        if self.paths == E.PATH_BOTH:
            return y & 1
        return 1 if self.paths == E.PATH_2 else 0

    async def run_layer(self, layer: Layer, paths: int):
        self.paths = paths
        await super().run_layer(layer, paths=paths)

    def new_layer(self) -> None:
        self.ar0 = [len(a.ar) for a in self.axi]
        self.ar_rise = [[], []]

    def layer_started(self, layer: Layer) -> None:
        self.units = {k: [x for x in layer.units() if self.path_of_row(x[2]) == k] for k in range(2)}
        self.next_unit = {0: 0, 1: 0}
        self.units_left = collections.Counter(x[2] for x in layer.units())
        self.done_rows = set()
        self.rows_hist.extend([0, 0, 0])
        self.n_units = 0

    def rows_in(self) -> int:
        n = 0
        while n in self.done_rows:
            n += 1
        return n

    async def monitor(self):
        d = self.dut
        arv_prev = [0, 0]
        held = None
        while True:
            await self.step()
            c = self.cycles
            L = self.layer
            rel = u(d.release_rows)
            lag = 2 if self.paths == E.PATH_BOTH else 1
            if L is not None:
                self.eq(u(d.rows_avail), self.rows_hist[-lag], f"rows_avail at cycle {c} (paths={self.paths})")
            for k in range(2):
                arv = u(getattr(d, f"m{k}_arvalid"))
                if arv and not arv_prev[k]:
                    self.ar_rise[k].append((c, self.rel_hist[-1]))
                arv_prev[k] = arv
            if u(d.m0_rvalid) and u(d.m0_rready) and u(d.m1_rvalid) and u(d.m1_rready):
                self.both_r += 1
            unit, taken, held = self.port_b(c, held)
            if taken and L is not None:
                # the unit is the next one of the path whose row it belongs to
                cands = [k for k in range(2) if self.next_unit[k] < len(self.units[k])
                         and self.units[k][self.next_unit[k]][:2] == unit]
                self.check(len(cands) >= 1, lambda: f"port-B unit (row {unit[0]:#x}) at cycle {c} is no path's next")
                k = cands[0]
                want = self.units[k][self.next_unit[k]]
                self.next_unit[k] += 1
                self.n_units += 1
                self.check_slot(L, want[2], rel)
                self.units_left[want[2]] -= 1
                if self.units_left[want[2]] == 0:
                    self.done_rows.add(want[2])
            for a in self.axi:
                a.sample(c)
            self.rows_hist.append(self.rows_in())
            self.rel_hist.append(rel)

    async def finish_layer(self, timeout=40000):
        d = self.dut
        L = self.layer
        n = len(L.units())
        for _ in range(timeout):
            await self.step()
            if self.n_units >= n and not u(d.busy):
                break
        self.eq(self.n_units, n, "units written")
        self.eq(u(d.busy), 0, "busy after the last unit")
        for _ in range(3):
            await self.step()
        self.eq(u(d.rows_avail), L.w, "rows_avail at the end")
        self.eq(u(d.bytes_read), 8 * (len(self.axi[0].r) + len(self.axi[1].r)), "bytes_read at the end")
        plan = L.bursts()
        for k in range(2):
            want = [(a, nb) for a, nb, y in plan if self.path_of_row(y) == k]
            got = [(a, nb) for _, a, nb in self.axi[k].ar[self.ar0[k]:]]
            self.eq(got, want, f"paths={self.paths}: AR bursts on m{k}")
            rows = [y for _, _, y in plan if self.path_of_row(y) == k]
            for (cyc, rel), y in zip(self.ar_rise[k], rows):
                self.check_request(L, y, rel, cyc, f" on m{k}")


def layers(tb):
    """tb_zq_fill_dma's layers, the third of two rows (one on each path)."""
    return dma_layers(tb, small_lg=1, small_top=7)


@cocotb.test()
async def rows_over_paths(dut):
    tb = TB(dut, "rows_over_paths")
    await tb.reset()
    tb.start()
    modes = (E.PATH_BOTH, E.PATH_1, E.PATH_2) if tb.paths_built == 2 else (E.PATH_1,)
    for paths in modes:
        for L in layers(tb):
            await tb.run_layer(L, paths)
            await tb.finish_layer()
            for _ in range(tb.rng.randrange(1, 6)):
                await tb.cycle()
    if tb.paths_built == 2:
        tb.check(tb.both_r > 100, f"both masters took R beats in the same cycle only {tb.both_r} times")
    tb.info(both_r=tb.both_r, cycles=tb.cycles)
    tb.done(2000)


@cocotb.test()
async def abort_then_next_layer(dut):
    """An abort while both paths read: no new request on either master, the bursts in flight
    drain, ``busy`` falls; the next layer (both paths again) is exact."""
    tb = TB(dut, "abort_then_next_layer")
    await tb.reset()
    tb.start()
    both = E.PATH_BOTH if tb.paths_built == 2 else E.PATH_1
    L0, L1 = layers(tb)[:2]
    await tb.abort_midway(L0, both)
    pending = [u(dut.m0_arvalid), u(dut.m1_arvalid)]
    n_ar = [len(a.ar) for a in tb.axi]
    tb.layer = None                      # rows_avail is not checked across the abort
    await tb.wait_busy_falls(3000)
    for k in range(2):
        tb.check(len(tb.axi[k].ar) - n_ar[k] <= pending[k], f"a new request on m{k} after the abort")
        tb.eq(tb.axi[k].rd_out, 0, f"bursts in flight on m{k} drained")
    await tb.cycle()
    dut.abort.value = 0
    await tb.run_layer(L1, both)
    await tb.finish_layer()
    tb.done(200)
