"""zq_act_mem: WPG banks of ROWS words; a 3-cycle read with a zero flag, write port A per bank
(always taken), write port B (a row, a word per bank, a bank mask; valid/ready, only in cycles
without an A write).

A model memory per bank, every cycle: ``rd_data`` = the word read three cycles earlier (the
RAM's contents before that cycle's writes), 0 for ``rd_zero`` or ``rd_en`` low; ``b_ready`` =
no A write; A writes land on their banks only, B writes on the banks of its mask only; A and B
in the same cycle on different banks: B waits. Random traffic over rows spread over the whole
depth, and a directed A/B collision.
"""

from __future__ import annotations

import collections

import cocotb

from zynqflow.sim.rtl.tb.common import TBBase, pack, u


class TB(TBBase):
    def __init__(self, dut, test):
        super().__init__(dut, rst=None, test=test)
        self.wpg = self.param("WPG")
        self.rows = self.param("ROWS")
        self.ww = self.param("WORD_W")
        self.row_w = max(1, (self.rows - 1).bit_length())
        self.mem = [dict() for _ in range(self.wpg)]
        self.pipe = collections.deque([None, None, None])   # expected rd_data, 3 cycles
        self.b_pending = None                                # (row, mask, words) offered on port B
        self.n_b = self.n_a = self.n_rd = 0
        for n in ("rd_en", "rd_bank", "rd_row", "rd_zero", "a_en", "a_row", "a_data", "b_valid", "b_row",
                  "b_mask", "b_data"):
            getattr(dut, n).value = 0
        self.row_set = sorted({0, self.rows - 1} | {self.rng.randrange(self.rows) for _ in range(14)})

    def word(self):
        return self.rng.getrandbits(self.ww)

    async def run(self, cycles, p_a=0.3, p_b=0.4, p_rd=0.7, p_zero=0.15):
        d = self.dut
        for _ in range(cycles):
            await self.cycle()
            # port A: some banks
            a_en = [int(self.rng.random() < p_a) for _ in range(self.wpg)] if self.rng.random() < 0.6 else \
                [0] * self.wpg
            a_rows = [self.rng.choice(self.row_set) for _ in range(self.wpg)]
            a_words = [self.word() for _ in range(self.wpg)]
            d.a_en.value = pack(a_en, 1)
            d.a_row.value = pack(a_rows, self.row_w)
            d.a_data.value = pack(a_words, self.ww)
            # port B: an offer stays until it is taken
            if self.b_pending is None and self.rng.random() < p_b:
                mask = [int(self.rng.random() < 0.7) for _ in range(self.wpg)]
                self.b_pending = (self.rng.choice(self.row_set), mask, [self.word() for _ in range(self.wpg)])
            if self.b_pending is not None:
                row, mask, words = self.b_pending
                d.b_valid.value, d.b_row.value = 1, row
                d.b_mask.value, d.b_data.value = pack(mask, 1), pack(words, self.ww)
            else:
                d.b_valid.value = 0
            # read port
            rd_en, zero = int(self.rng.random() < p_rd), int(self.rng.random() < p_zero)
            bank, row = self.rng.randrange(self.wpg), self.rng.choice(self.row_set)
            d.rd_en.value, d.rd_zero.value, d.rd_bank.value, d.rd_row.value = rd_en, zero, bank, row
            await self.settle()
            want = self.pipe.popleft()
            if want is not None:
                self.eq(u(d.rd_data), want, "rd_data (three cycles after the read)")
            self.eq(u(d.b_ready), int(not any(a_en)), "b_ready (no A write this cycle)")
            # this cycle's read sees the memory before this cycle's writes
            if rd_en and not zero:
                self.pipe.append(self.mem[bank].get(row))
                self.n_rd += 1
            else:
                self.pipe.append(0)
            for b in range(self.wpg):
                if a_en[b]:
                    self.mem[b][a_rows[b]] = a_words[b]
            self.n_a += sum(a_en)
            if self.b_pending is not None and not any(a_en):
                row, mask, words = self.b_pending
                for b in range(self.wpg):
                    if mask[b]:
                        self.mem[b][row] = words[b]
                self.b_pending = None
                self.n_b += 1

    async def dump(self):
        """Read every row used and compare (after the random phase)."""
        d = self.dut
        self.b_pending = None
        for b in range(self.wpg):
            for row in self.row_set:
                await self.cycle()
                d.a_en.value = 0
                d.b_valid.value = 0
                d.rd_en.value, d.rd_zero.value, d.rd_bank.value, d.rd_row.value = 1, 0, b, row
                await self.settle()
                want = self.pipe.popleft()
                if want is not None:
                    self.eq(u(d.rd_data), want, "rd_data (dump)")
                self.pipe.append(self.mem[b].get(row))
        for _ in range(3):
            await self.cycle()
            d.rd_en.value = 0
            await self.settle()
            want = self.pipe.popleft()
            if want is not None:
                self.eq(u(d.rd_data), want, "rd_data (dump)")
            self.pipe.append(0)


@cocotb.test()
async def random_traffic(dut):
    tb = TB(dut, "random_traffic")
    await tb.cycle()
    await tb.run(200, p_a=0.5, p_b=0.8, p_rd=0.2)     # fill
    await tb.run(600)
    await tb.dump()
    tb.info(a_writes=tb.n_a, b_writes=tb.n_b, reads=tb.n_rd)
    tb.check(tb.n_b > 50 and tb.n_a > 50, f"too few writes (A {tb.n_a}, B {tb.n_b})")
    tb.done(1000)


@cocotb.test()
async def a_blocks_b(dut):
    """A B offer during A writes (on another bank) waits; it lands in the first cycle without one."""
    tb = TB(dut, "a_blocks_b")
    d = dut
    row = tb.rows - 1
    mask = [1] * tb.wpg
    words = [tb.word() for _ in range(tb.wpg)]
    await tb.cycle()
    d.b_valid.value, d.b_row.value, d.b_mask.value, d.b_data.value = 1, row, pack(mask, 1), pack(words, tb.ww)
    d.a_en.value = 1 << (tb.wpg - 1)                # bank WPG-1 only
    d.a_row.value = 0
    for _ in range(3):
        await tb.settle()
        tb.eq(u(d.b_ready), 0, "b_ready during an A write")
        await tb.cycle()
    d.a_en.value = 0
    await tb.settle()
    tb.eq(u(d.b_ready), 1, "b_ready without an A write")
    await tb.cycle()
    d.b_valid.value = 0
    tb.mem[tb.wpg - 1][0] = None      # the A writes (data not tracked here)
    for b in range(tb.wpg):
        tb.mem[b][row] = words[b]
    tb.row_set = [row]
    await tb.dump()
    tb.done(4 + tb.wpg)
