"""zq_lut_mul: the exact LUT multiplier of the MAC lanes that do not fit the DSP48E1, exhaustively.

Every signed 8-bit weight against every 9-bit activation (an unsigned 0..255 or signed
-128..127 lane widened by its sign flag: the zq_mac_array range is -128..255, and the bench
covers all of -256..255): 256 x 512 = 131 072 products, one pair a cycle back to back, each
compared with w * x exactly ``RTL_LUT_MUL_LAT`` cycles after its operands (the DSP pair's
latency); then random pairs with idle gaps (the output follows its operands whatever came
before). As exhaustive as the packed-DSP check (hls/tb/tb_packed_dsp.cpp) for the DSP pairs.
"""

from __future__ import annotations

import cocotb

from zynqflow.sim.rtl.tb.common import TBBase, sx, u
from zynqflow.spec.engine import RTL_LUT_MUL_LAT

LAT = RTL_LUT_MUL_LAT


class TB(TBBase):
    def __init__(self, dut, test):
        super().__init__(dut, rst=None, test=test)
        self.pipe: list = [None] * LAT
        self.n = 0
        self.corners = set()
        dut.w.value = 0
        dut.x.value = 0

    async def apply(self, w: int | None, x: int | None):
        """One cycle: operands (w, x) in (None: any value, not checked); check the product of the pair
        given LAT cycles ago."""
        d = self.dut
        await self.cycle()
        if w is None:
            d.w.value = self.rng.getrandbits(8)
            d.x.value = self.rng.getrandbits(9)
        else:
            d.w.value = w & 0xFF
            d.x.value = x & 0x1FF
        await self.settle()
        want = self.pipe.pop(0)
        self.pipe.append(None if w is None else (w, x))
        if want is not None:
            ww, xx = want
            got = sx(u(d.p), 17)
            self.check(got == ww * xx, lambda: f"p = {got} for w={ww} x={xx}, expected {ww * xx}")
            self.n += 1
            if ww in (-128, 127) and xx in (-256, 255, -128):
                self.corners.add((ww, xx))

    async def drain(self):
        for _ in range(LAT):
            await self.apply(None, None)


@cocotb.test()
async def exhaustive(dut):
    tb = TB(dut, "exhaustive")
    await tb.cycle()
    for w in range(-128, 128):
        for x in range(-256, 256):
            await tb.apply(w, x)
    await tb.drain()
    tb.eq(tb.n, 256 * 512, "products checked")
    tb.eq(len(tb.corners), 6, "extreme pairs seen")
    tb.info(products=tb.n)
    tb.done(256 * 512)


@cocotb.test()
async def random_with_gaps(dut):
    tb = TB(dut, "random_with_gaps")
    await tb.cycle()
    for _ in range(3000):
        if tb.rng.random() < 0.3:
            await tb.apply(None, None)
        else:
            await tb.apply(tb.rng.randrange(-128, 128), tb.rng.randrange(-256, 256))
    await tb.drain()
    tb.done(1500)
