"""zq_ram_sdp: simple dual-port RAM, read latency 1 + OUT_REG, read-during-write returns the old word.

Every cycle ``rd_data`` is compared with a model that reads its word at the edge after
``rd_en`` (before that edge's write lands) and, with OUT_REG, registers it once more;
``rd_en`` low holds the last word read. Random traffic with frequent same-address
read/write collisions, and a directed latency probe.
"""

from __future__ import annotations

import cocotb

from zynqflow.sim.rtl.tb.common import TBBase, u


class TB(TBBase):
    def __init__(self, dut, test):
        super().__init__(dut, rst=None, test=test)
        self.width = self.param("DATA_W")
        self.depth = self.param("DEPTH")
        self.oreg = self.param("OUT_REG")
        self.mem: dict[int, int] = {}
        self.q = None           # the RAM's read register (None: unknown)
        self.out = None         # rd_data expected after the next edge
        for n in ("wr_en", "rd_en", "wr_addr", "rd_addr", "wr_data"):
            getattr(dut, n).value = 0

    def edge(self, wr_en, wa, wd, rd_en, ra):
        """The model's state after the edge that samples these inputs."""
        q_old = self.q
        if rd_en:
            self.q = self.mem.get(ra)            # old word: the write of this edge is not seen
        if wr_en:
            self.mem[wa] = wd
        self.out = q_old if self.oreg else self.q

    async def run(self, cycles: int, p_wr: float, p_rd: float, addrs: list[int]):
        d = self.dut
        for _ in range(cycles):
            await self.cycle()
            we, re = self.rng.random() < p_wr, self.rng.random() < p_rd
            wa = self.rng.choice(addrs)
            ra = wa if self.rng.random() < 0.3 else self.rng.choice(addrs)   # collisions
            wd = self.rng.getrandbits(self.width)
            d.wr_en.value, d.wr_addr.value, d.wr_data.value = we, wa, wd
            d.rd_en.value, d.rd_addr.value = re, ra
            await self.settle()
            if self.out is not None:
                self.eq(u(d.rd_data), self.out, "rd_data")
            self.edge(we, wa, wd, re, ra)


@cocotb.test()
async def random_access(dut):
    tb = TB(dut, "random_access")
    await tb.cycle()
    addrs = sorted({0, tb.depth - 1, tb.depth // 2} | {tb.rng.randrange(tb.depth) for _ in range(12)})
    await tb.run(150, 0.9, 0.2, addrs)       # mostly writes: fill the addresses used
    await tb.run(600, 0.5, 0.7, addrs)
    await tb.run(200, 0.0, 0.5, addrs)       # reads only, rd_en gaps hold the output
    tb.done(500)


@cocotb.test()
async def latency(dut):
    """A word written at cycle t can be read from cycle t+1; a read issued at t shows at t+1+OUT_REG."""
    tb = TB(dut, "latency")
    d = dut
    a = tb.depth - 1
    await tb.cycle()
    d.wr_en.value, d.wr_addr.value, d.wr_data.value = 1, a, 0x5A % (1 << tb.width)
    d.rd_en.value, d.rd_addr.value = 0, a
    await tb.cycle()
    d.wr_en.value, d.wr_data.value = 1, 0x3C % (1 << tb.width)     # read and overwrite in the same cycle
    d.rd_en.value = 1
    seen = []
    for _ in range(4):
        await tb.cycle()
        d.wr_en.value = 0
        d.rd_en.value = 0
        await tb.settle()
        seen.append(u(d.rd_data))
    want = 0x5A % (1 << tb.width)
    lat = 1 + tb.oreg
    tb.eq(seen[lat - 1], want, f"rd_data {lat} cycle(s) after the read (old word on a collision)")
    tb.eq(seen[-1], want, "rd_data held while rd_en is low")
    if tb.oreg:
        tb.check(seen[0] != want or want == 0, "OUT_REG=1: the word must not show after one cycle")
    tb.done(2)
