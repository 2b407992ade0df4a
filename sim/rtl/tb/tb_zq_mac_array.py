"""zq_mac_array: N_PE x N_CI MACs, two 8-bit products per DSP48E1 (WP486 packing), bias steps in order.

Against numpy dot products: every MAC step's accumulators, eight cycles after its inputs
(``out_valid`` exactly then and only then; ``out_acc`` held otherwise), with

* the DSP packing corners: w_hi (channel pe + N_PE/2) = -128 with negative w_lo (the wrap the
  ``wrap`` flag corrects), both -128, +127/-128 extremes, zero;
* unsigned lanes (0..255) and signed lanes (-128..127), switched between layers;
* bias steps interleaved with MAC steps: a pixel's ``in_first`` step starts from the latest bias
  step issued before it, even while the next block's bias is already in flight (back to back,
  no idle cycles), bits of ``wgt`` above the N_PE biases ignored;
* accumulation across steps of a pixel with 32-bit wrap-around, and a reset that drops the
  steps in flight.
"""

from __future__ import annotations


import cocotb
import numpy as np

from zynqflow.sim.rtl.tb.common import TBBase, pack, sx, u
from zynqflow.spec.engine import ACC_BITS, BIAS_BITS, LANE_BITS, RTL_PIPE_MAC, W_BITS_MAX

LAT = RTL_PIPE_MAC      # in_valid -> out_valid (spec: the RTL's pipeline)


def wrap32(v: np.ndarray) -> np.ndarray:
    return ((v.astype(np.int64) + (1 << (ACC_BITS - 1))) % (1 << ACC_BITS)) - (1 << (ACC_BITS - 1))


class TB(TBBase):
    def __init__(self, dut, test):
        super().__init__(dut, test=test)
        self.npe = self.param("N_PE")
        self.nci = self.param("N_CI")
        self.half = self.npe // 2
        self.nrng = np.random.default_rng(self.rng.getrandbits(32))
        self.acc = np.zeros(self.npe, np.int64)
        self.bias = None                      # latest bias step issued
        self.expect: dict[int, np.ndarray] = {}
        self.n_mac = self.n_bias = self.n_wrap = 0
        self.first_seen = False
        for n in ("in_valid", "in_first", "in_bias", "act_signed", "act", "wgt"):
            getattr(dut, n).value = 0

    # ---- stimulus ---------------------------------------------------------------------------
    def weights(self) -> np.ndarray:
        w = self.nrng.integers(-128, 128, (self.npe, self.nci))
        mode = self.rng.random()
        if mode < 0.35:     # the wrap corner: w_hi = -128 with w_lo < 0 on many lanes
            m = self.nrng.random((self.half, self.nci)) < 0.6
            w[self.half:][m] = -128
            w[:self.half][m] = -self.nrng.integers(1, 129, m.sum())
        elif mode < 0.55:   # extremes
            w = self.nrng.choice(np.array([-128, -127, -1, 0, 1, 127]), (self.npe, self.nci))
        self.n_wrap += int(((w[self.half:] == -128) & (w[:self.half] < 0)).sum())
        return w

    def acts(self, signed: bool) -> np.ndarray:
        lo, hi = (-128, 128) if signed else (0, 256)
        a = self.nrng.integers(lo, hi, self.nci)
        if self.rng.random() < 0.3:
            a = self.nrng.choice(np.array([lo, hi - 1, 0, -1 if signed else 1]), self.nci)
        return a

    # ---- driving ----------------------------------------------------------------------------
    async def drive_step(self, kind: str, signed: bool = False, first: bool = False):
        """One cycle: 'idle', 'bias' or 'mac'. Checks the outputs of this cycle."""
        d = self.dut
        await self.cycle()
        d.in_valid.value = int(kind == "mac")
        d.in_bias.value = int(kind == "bias")
        d.in_first.value = int(first)
        d.act_signed.value = int(signed)
        wbits = self.npe * self.nci * W_BITS_MAX
        if kind == "bias":
            b = self.nrng.integers(-(1 << 20), 1 << 20, self.npe)
            if self.rng.random() < 0.2:
                b[: self.npe // 2] = self.nrng.choice(np.array([-(1 << (BIAS_BITS - 1)), (1 << (BIAS_BITS - 1)) - 1]),
                                                      self.npe // 2)
            low = pack(b, BIAS_BITS)
            garbage = self.rng.getrandbits(wbits - self.npe * BIAS_BITS) if wbits > self.npe * BIAS_BITS else 0
            d.wgt.value = low | (garbage << (self.npe * BIAS_BITS))
            d.act.value = self.rng.getrandbits(self.nci * LANE_BITS)
            self.bias = b
            self.n_bias += 1
        elif kind == "mac":
            w, a = self.weights(), self.acts(signed)
            d.wgt.value = pack(w.reshape(-1), W_BITS_MAX)
            d.act.value = pack(a, LANE_BITS)
            dot = w @ a
            if first:
                self.acc = wrap32(self.bias + dot)
                self.first_seen = True
            else:
                self.acc = wrap32(self.acc + dot)
            if self.first_seen:
                self.expect[self.cycles + LAT] = self.acc.copy()
            self.n_mac += 1
        else:
            d.wgt.value = self.rng.getrandbits(wbits)
            d.act.value = self.rng.getrandbits(self.nci * LANE_BITS)
        await self.settle()
        self.check_outputs()

    def check_outputs(self):
        d = self.dut
        c = self.cycles
        want = self.expect.pop(c, None)
        self.eq(u(d.out_valid), int(want is not None), f"out_valid at cycle {c}")
        got = np.array([sx(v, ACC_BITS) for v in
                        [(u(d.out_acc) >> (ACC_BITS * j)) & ((1 << ACC_BITS) - 1) for j in range(self.npe)]])
        if want is not None:
            bad = np.nonzero(got != want)[0]
            self.check(len(bad) == 0, lambda: f"out_acc at cycle {c}: PE {bad.tolist()} got "
                                              f"{got[bad].tolist()} expected {want[bad].tolist()}")
            self.held = got
        elif getattr(self, "held", None) is not None:
            self.check(np.array_equal(got, self.held), f"out_acc changed without out_valid at cycle {c}")

    async def drain(self):
        for _ in range(LAT + 2):
            await self.drive_step("idle")
        self.check(not self.expect, f"{len(self.expect)} results never came out")

    async def layer(self, signed: bool, blocks: int, gaps: float):
        """Blocks of pixels: a bias step, then pixels of 1..5 MAC steps, the next block's bias
        step right behind (or after random idle cycles)."""
        for _ in range(blocks):
            await self.drive_step("bias")
            for _ in range(self.rng.randrange(1, 4)):
                for i in range(self.rng.randrange(1, 6)):
                    await self.drive_step("mac", signed, first=(i == 0))
                    while self.rng.random() < gaps:
                        await self.drive_step("idle")


@cocotb.test()
async def packed_dsp_corners(dut):
    tb = TB(dut, "packed_dsp_corners")
    await tb.reset()
    await tb.layer(signed=False, blocks=12, gaps=0.0)
    await tb.layer(signed=True, blocks=12, gaps=0.0)
    await tb.layer(signed=False, blocks=10, gaps=0.3)
    await tb.layer(signed=True, blocks=10, gaps=0.3)
    await tb.drain()
    tb.info(mac_steps=tb.n_mac, bias_steps=tb.n_bias, wrap_pairs=tb.n_wrap)
    tb.check(tb.n_wrap > 100, f"only {tb.n_wrap} (w_hi=-128, w_lo<0) pairs exercised")
    tb.done(300)


@cocotb.test()
async def bias_back_to_back(dut):
    """Blocks of one single-step pixel each: a bias step every other cycle, several in flight."""
    tb = TB(dut, "bias_back_to_back")
    await tb.reset()
    for _ in range(40):
        await tb.drive_step("bias")
        await tb.drive_step("mac", signed=tb.rng.random() < 0.5, first=True)
    # several bias steps queued before the pixels that use the last one
    for _ in range(3):
        await tb.drive_step("bias")
    for i in range(6):
        await tb.drive_step("mac", True, first=(i % 3 == 0))
    await tb.drain()
    tb.done(100)


@cocotb.test()
async def reset_drops_steps(dut):
    tb = TB(dut, "reset_drops_steps")
    await tb.reset()
    await tb.drive_step("bias")
    for i in range(5):
        await tb.drive_step("mac", False, first=(i == 0))
    # reset while those five are in flight: no out_valid for them
    await tb.cycle()
    dut.rst.value = 1
    dut.in_valid.value = 0
    dut.in_bias.value = 0
    await tb.cycle()
    dut.rst.value = 0
    tb.expect.clear()
    tb.held = None
    for _ in range(LAT + 2):
        await tb.drive_step("idle")
    await tb.layer(signed=True, blocks=3, gaps=0.2)
    await tb.drain()
    tb.done(20)
