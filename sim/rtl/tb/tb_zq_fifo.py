"""zq_fifo: first-word fall-through FIFO with a registered occupancy count.

Against a Python deque, every cycle: ``out_valid`` = not empty, ``in_ready`` = not full
(independent of ``out_ready``), ``count`` = words held, ``out_data`` = the oldest word
(valid in the cycle after its push: fall-through); random valid/ready; fill to full and
drain; a reset in the middle empties it.
"""

from __future__ import annotations

import collections

import cocotb

from zynqflow.sim.rtl.tb.common import TBBase, u


class TB(TBBase):
    def __init__(self, dut, test):
        super().__init__(dut, test=test)
        self.width = self.param("DATA_W")
        self.depth = self.param("DEPTH")
        self.q: collections.deque = collections.deque()
        dut.in_valid.value = 0
        dut.out_ready.value = 0
        dut.in_data.value = 0

    async def run(self, cycles: int, p_in: float, p_out: float, expect_full: bool = False):
        d = self.dut
        saw_full = saw_empty_pop = False
        for _ in range(cycles):
            await self.cycle()
            iv = self.rng.random() < p_in
            data = self.rng.getrandbits(self.width)
            d.in_valid.value = iv
            d.in_data.value = data
            d.out_ready.value = self.rng.random() < p_out
            await self.settle()
            n = len(self.q)
            self.eq(u(d.count), n, "count")
            self.eq(u(d.out_valid), int(n > 0), f"out_valid with {n} words")
            self.eq(u(d.in_ready), int(n < self.depth), f"in_ready with {n} words")
            saw_full |= n == self.depth
            if u(d.out_valid) and u(d.out_ready):
                self.eq(u(d.out_data), self.q[0], "out_data (oldest word)")
                self.q.popleft()
            if u(d.in_valid) and u(d.in_ready):
                self.q.append(data)
                saw_empty_pop |= n == 0
        if expect_full:
            self.check(saw_full, "the FIFO never filled up")


@cocotb.test()
async def random_traffic(dut):
    tb = TB(dut, "random_traffic")
    await tb.reset()
    await tb.run(300, 0.5, 0.5)
    await tb.run(150, 0.9, 0.3, expect_full=True)     # runs full: in_ready low
    await tb.run(150, 0.2, 0.9)                       # drains
    tb.done(1000)


@cocotb.test()
async def fall_through_and_reset(dut):
    tb = TB(dut, "fall_through_and_reset")
    d = dut
    await tb.reset()
    # one word into an empty FIFO is at the output in the next cycle
    await tb.cycle()
    d.in_valid.value = 1
    d.in_data.value = word = tb.rng.getrandbits(tb.width)
    await tb.cycle()
    d.in_valid.value = 0
    await tb.settle()
    tb.eq(u(d.out_valid), 1, "out_valid one cycle after a push")
    tb.eq(u(d.out_data), word, "out_data one cycle after a push")
    tb.eq(u(d.count), 1, "count after a push")
    # fill exactly: in_ready drops at DEPTH words, even with out_ready high
    await tb.cycle()
    d.in_valid.value = 1
    for i in range(tb.depth - 1):
        d.in_data.value = i
        await tb.cycle()
    d.in_valid.value = 0
    d.out_ready.value = 1
    await tb.settle()
    tb.eq(u(d.count), tb.depth, "count when full")
    tb.eq(u(d.in_ready), 0, "in_ready when full (out_ready high)")
    # reset in the middle: empty
    await tb.cycle()
    d.out_ready.value = 0
    d.rst.value = 1
    await tb.cycle()
    d.rst.value = 0
    await tb.settle()
    tb.eq(u(d.count), 0, "count after reset")
    tb.eq(u(d.out_valid), 0, "out_valid after reset")
    tb.eq(u(d.in_ready), 1, "in_ready after reset")
    tb.q.clear()
    await tb.run(100, 0.5, 0.5)
    tb.done(300)
