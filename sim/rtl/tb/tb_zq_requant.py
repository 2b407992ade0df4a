"""zq_requant: round-shift, ReLU and saturation of N_PE accumulators, five register stages.

Against ``zynqflow.spec.numerics.requantize`` (rounding right shift s > 0, left shift s <= 0,
ReLU, clamp to the output format): every valid input's N_PE outputs exactly five cycles later
(``in_valid`` marks the results; the cycles between them carry other accumulator values, which
the stages must not load over a result in flight),
for layer constants (rnd, shr, sh, relu, lo, hi) held per layer, over s = -31..31 (every
shift), signed and unsigned output formats of several widths, with and without ReLU,
accumulators at the extremes (-2^31, 2^31-1, the rounding ties +/-2^(s-1)) and, for s <= 0,
|acc << -s| < 2^31 (the bound the exporter proves).
"""

from __future__ import annotations

import collections

import cocotb
import numpy as np

from zynqflow.sim.rtl.tb.common import TBBase, pack, sx, u
from zynqflow.spec.engine import ACC_BITS, RTL_PIPE_REQUANT
from zynqflow.spec.numerics import QFormat, requantize

LAT = RTL_PIPE_REQUANT  # acc -> y (spec: the RTL's pipeline)


class TB(TBBase):
    def __init__(self, dut, test):
        super().__init__(dut, rst=None, test=test)
        self.npe = self.param("N_PE")
        self.out_w = self.param("OUT_W")
        self.pipe = collections.deque([None] * LAT)
        self.n = 0
        for n in ("in_valid", "acc", "rnd", "shr", "sh", "relu", "lo", "hi"):
            getattr(dut, n).value = 0

    def accs(self, s: int) -> list[int]:
        lim = 1 << (ACC_BITS - 1)
        if s <= 0:
            lim = 1 << (ACC_BITS - 1 + s)     # |acc << -s| < 2^31
        vals = [self.rng.randrange(-lim, lim) for _ in range(self.npe)]
        special = [-lim, lim - 1, 0, -1, 1]
        if s > 0:
            half = 1 << (s - 1)
            special += [half, -half, half - 1, -half - 1, 3 * half, -3 * half]
        for i in range(self.npe):
            if self.rng.random() < 0.3:
                vals[i] = max(-lim, min(lim - 1, self.rng.choice(special)))
        return vals

    async def layer(self, s: int, relu: bool, fmt: QFormat, n: int):
        d = self.dut
        # constants change only with the pipeline empty (they are held while a layer runs)
        await self.flush()
        for i in range(n):
            while i and self.rng.random() < 0.4:   # a partial sum between results: not loaded
                await self.cycle()
                d.in_valid.value = 0
                d.acc.value = pack(self.accs(s), ACC_BITS)
                await self.settle()
                self.compare(None, "")
            acc = self.accs(s)
            await self.cycle()
            d.in_valid.value = 1
            if i == 0:
                d.rnd.value = (1 << (s - 1)) if s > 0 else 0
                d.shr.value = int(s > 0)
                d.sh.value = abs(s)
                d.relu.value = int(relu)
                d.lo.value = fmt.lo
                d.hi.value = fmt.hi
            d.acc.value = pack(acc, ACC_BITS)
            want = requantize(np.array(acc, np.int64), s, relu, fmt).tolist()
            await self.settle()
            self.compare(want, f"s={s} relu={int(relu)} {fmt}")

    def compare(self, nxt, what):
        want = self.pipe.popleft()
        self.pipe.append((nxt, what) if nxt is not None else None)
        if want is not None:
            y = u(self.dut.y)
            got = [sx(y >> (self.out_w * p), self.out_w) for p in range(self.npe)]
            self.eq(got, want[0], f"y ({want[1]})")
            self.n += 1

    async def flush(self):
        for _ in range(LAT):
            await self.cycle()
            self.dut.in_valid.value = 0
            await self.settle()
            self.compare(None, "")

    def formats(self):
        out = []
        for bits in (4, 8, 12, 16):
            if bits < self.out_w:
                out += [QFormat(bits, True, 0), QFormat(bits, False, 0)]
        return out


@cocotb.test()
async def every_shift(dut):
    tb = TB(dut, "every_shift")
    fmts = tb.formats()
    for s in range(-31, 32):
        fmt = tb.rng.choice(fmts)
        await tb.layer(s, relu=tb.rng.random() < 0.5, fmt=fmt, n=3)
    await tb.flush()
    tb.done(63 * 3)


@cocotb.test()
async def formats_and_relu(dut):
    tb = TB(dut, "formats_and_relu")
    for fmt in tb.formats():
        for relu in (False, True):
            for s in (1, 7, 12, 0, -2):
                await tb.layer(s, relu, fmt, n=8)
    await tb.flush()
    tb.info(vectors=tb.n)
    tb.done(100)
