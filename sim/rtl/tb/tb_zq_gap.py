"""zq_gap: the GAP sums RAM (rows of N_PE 32-bit sums) and the logits.

Rows written with random and extreme sums (-2^31, 2^31-1, rounding ties); every class is read
through ``rd_sel`` one per cycle (in order, random order, repeated) and ``rd_logit`` is checked
exactly two cycles later against ``zynqflow.spec.numerics.gap_shift`` (the shift by GAP_SHIFT
with the rounding term of the mode GAP_ROUND, spec.engine.GAP_ROUNDINGS; none for GAP_SHIFT = 0),
as a 32-bit two's complement value. A second round of writes replaces the sums.
"""

from __future__ import annotations

import collections

import cocotb
import numpy as np

from zynqflow.sim.rtl.tb.common import TBBase, pack, sx, u
from zynqflow.spec.engine import GAP_BITS, GAP_ROUND_HALF_UP, GAP_ROUNDINGS
from zynqflow.spec.numerics import gap_shift

LAT = 2


class TB(TBBase):
    def __init__(self, dut, test):
        super().__init__(dut, rst=None, test=test)
        self.npe = self.param("N_PE")
        self.rows = self.param("GAP_ROWS")
        self.shift = self.param("GAP_SHIFT")
        self.ncls = self.param("N_CLASSES")
        self.mode = next(m.name for m in GAP_ROUNDINGS if m.code == self.param("GAP_ROUND", GAP_ROUND_HALF_UP))
        self.sums = np.zeros(self.rows * self.npe, np.int64)
        self.pipe = collections.deque([None] * LAT)
        for n in ("wr_en", "wr_row", "wr_data", "rd_sel"):
            getattr(dut, n).value = 0

    def values(self) -> list[int]:
        lo, hi = -(1 << (GAP_BITS - 1)), (1 << (GAP_BITS - 1)) - 1
        half = (1 << (self.shift - 1)) if self.shift else 0
        out = []
        for _ in range(self.npe):
            r = self.rng.random()
            if r < 0.3:
                out.append(self.rng.choice([lo, hi, 0, -1, 1, half, -half, hi - half, lo + half, 3 * half, -3 * half,
                                            5 * half, -5 * half, half - 1, -half - 1, half + 1, -half + 1]))
            elif r < 0.6:
                out.append(self.rng.randrange(-4096, 4096))
            else:
                out.append(self.rng.randrange(lo, hi + 1))
        return out

    async def write_all(self):
        d = self.dut
        for row in self.rng.sample(range(self.rows), self.rows):
            vals = self.values()
            await self.cycle()
            d.wr_en.value, d.wr_row.value, d.wr_data.value = 1, row, pack(vals, GAP_BITS)
            self.sums[row * self.npe:(row + 1) * self.npe] = vals
        await self.cycle()
        d.wr_en.value = 0

    async def read(self, classes):
        d = self.dut
        for c in list(classes) + [None] * LAT:
            await self.cycle()
            if c is not None:
                d.rd_sel.value = c
            await self.settle()
            want = self.pipe.popleft()
            self.pipe.append(None if c is None else
                             (c, int(gap_shift(np.int64(self.sums[c]), 1 << self.shift, self.mode))))
            if want is not None:
                self.eq(sx(u(d.rd_logit), 32), want[1], f"logit of class {want[0]} (sum {self.sums[want[0]]})")


@cocotb.test()
async def logits(dut):
    tb = TB(dut, "logits")
    await tb.write_all()
    await tb.read(range(tb.ncls))
    await tb.read([tb.rng.randrange(tb.ncls) for _ in range(3 * tb.ncls)])
    await tb.read([tb.ncls - 1] * 3 + [0] * 3)
    await tb.write_all()
    await tb.read(range(tb.ncls))
    await tb.read(reversed(range(tb.ncls)))
    tb.done(6 * tb.ncls + 6)
