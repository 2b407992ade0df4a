"""zq_axi_rd: AXI4 burst reader (one INCR burst per command, MAX_OUT outstanding, register slice).

The memory is the project's DDR port model (``sim/world/ddr.py``: cocotbext-axi
``AxiRamRead`` with a first-beat latency and overlapping bursts) on a cocotbext-axi
``SparseMemory``, with random AR/R stalls and random ``out_ready``. Checked:

* each command becomes one AR with ``araddr`` = ``cmd_addr`` and ``arlen`` = beats-1, in order;
* never more than MAX_OUT bursts outstanding, and MAX_OUT is reached (long read latency);
* ``cmd_ready`` = no AR pending and fewer than MAX_OUT outstanding, every cycle;
* the ``out_*`` beats: the memory's words in command order, ``out_last`` on each burst's
  last beat, ``out_err`` exactly on SLVERR and DECERR beats (injected), held while ``out_ready``
  is low;
* ``idle`` = nothing outstanding and no AR pending, every cycle.
"""

from __future__ import annotations

import collections

import cocotb
from cocotbext.axi.sparse_memory import SparseMemory

from zynqflow.sim.world.ddr import DECERR, SLVERR
from zynqflow.sim.rtl.tb.common import AxiMasterChecker, TBBase, memory, u
from zynqflow.spec.engine import AXI_BURST_BEATS

BASE = 0x2000_0000
SPAN = 0x4000


class TB(TBBase):
    def __init__(self, dut, test, latency: int = 24, stalls: float = 0.25):
        super().__init__(dut, test=test)
        self.dw = self.param("DATA_W")
        self.nb = self.dw // 8
        self.max_out = self.param("MAX_OUT")
        self.mem = SparseMemory(1 << 32)
        self.image = bytes(self.rng.getrandbits(8) for _ in range(SPAN))
        self.mem.write(BASE, self.image)
        self.ram = memory(self, beat_bytes=self.nb, gaps=dict(ar=stalls, r=stalls), read_latency=latency,
                          max_reads=4 * self.max_out)
        self.axi = AxiMasterChecker(self, "m", self.nb, read=True, max_rd=self.max_out)
        self.cmds: list[tuple[int, int]] = []
        self.exp: collections.deque = collections.deque()     # expected out beats (data, last, err)
        self.got = 0
        self.out_cycles: list[int] = []
        self.p_out = 0.7
        self.fail_ranges: list[tuple[int, int]] = []
        dut.cmd_valid.value = 0
        dut.out_ready.value = 0

    def fail_reads(self, lo, hi, decerr: bool = False):
        self.ram.fail_reads(lo, hi, DECERR if decerr else SLVERR)
        self.fail_ranges.append((lo, hi))

    def command(self) -> tuple[int, int]:
        beats = self.rng.choice([1, 2, 3, AXI_BURST_BEATS, AXI_BURST_BEATS] + list(range(1, AXI_BURST_BEATS + 1)))
        while True:
            addr = BASE + self.rng.randrange(0, SPAN - beats * self.nb) // self.nb * self.nb
            if addr // 4096 == (addr + beats * self.nb - 1) // 4096:   # the caller keeps bursts in a page
                return addr, beats

    def expect(self, addr, beats):
        for n in range(beats):
            a = addr + n * self.nb
            data = int.from_bytes(self.image[a - BASE:a - BASE + self.nb], "little")
            err = any(lo <= a < hi for lo, hi in self.fail_ranges)
            self.exp.append((data, int(n == beats - 1), int(err)))

    async def monitor(self):
        d = self.dut
        held = None
        out_in_flight_ar = False
        while True:
            await self.step()
            cyc = self.cycles
            # rules that hold in every cycle (state before this cycle's handshakes)
            arv = u(d.m_arvalid)
            self.eq(u(d.cmd_ready), int(not arv and self.axi.rd_out < self.max_out),
                    f"cmd_ready at cycle {cyc} (arvalid={arv}, outstanding={self.axi.rd_out})")
            self.eq(u(d.idle), int(self.axi.rd_out == 0 and not arv), f"idle at cycle {cyc}")
            ov, ordy = u(d.out_valid), u(d.out_ready)
            beat = (u(d.out_data), u(d.out_last), u(d.out_err))
            if held is not None:
                self.check(ov == 1 and beat == held, lambda: f"out beat not held while out_ready low (cycle {cyc})")
            held = beat if (ov and not ordy) else None
            if ov and ordy:
                self.check(len(self.exp) > 0, f"unexpected out beat at cycle {cyc}")
                want = self.exp.popleft()
                if want[2]:
                    self.eq(beat[1:], want[1:], f"out_last/out_err of beat {self.got} (SLVERR)")
                else:
                    self.eq(beat, want, f"out beat {self.got} (data, last, err)")
                self.got += 1
                self.out_cycles.append(cyc)
            if u(d.cmd_valid) and u(d.cmd_ready):
                self.cmds.append((u(d.cmd_addr), u(d.cmd_beats)))
                self.expect(*self.cmds[-1])
            self.axi.sample(cyc)

    async def outready(self):
        while True:
            await self.cycle()
            self.dut.out_ready.value = self.rng.random() < self.p_out

    async def issue(self, cmds, p_gap: float = 0.2):
        d = self.dut
        for addr, beats in cmds:
            await self.cycle()
            while self.rng.random() < p_gap:
                d.cmd_valid.value = 0
                await self.cycle()
            d.cmd_valid.value, d.cmd_addr.value, d.cmd_beats.value = 1, addr, beats
            await self.settle()
            while not u(d.cmd_ready):
                await self.step()
        await self.cycle()
        d.cmd_valid.value = 0

    async def finish(self, timeout: int = 20000):
        for _ in range(timeout):
            await self.step()
            if not self.exp and u(self.dut.idle) and len(self.cmds) == len(self.axi.ar):
                break
        self.check(not self.exp, lambda: f"{len(self.exp)} out beats missing")
        self.eq([(a, n) for _, a, n in self.axi.ar], self.cmds, "AR bursts (address, beats) in command order")
        self.eq(self.axi.r_bursts_done, len(self.cmds), "read bursts completed")

    def start(self):
        cocotb.start_soon(self.monitor())
        cocotb.start_soon(self.outready())


@cocotb.test()
async def bursts_in_order(dut):
    tb = TB(dut, "bursts_in_order")
    await tb.reset()
    tb.start()
    cmds = [tb.command() for _ in range(48)]
    await tb.issue(cmds)
    await tb.finish()
    tb.eq(tb.axi.rd_out_max, tb.max_out, "most read bursts outstanding (long latency: the limit is reached)")
    tb.info(max_outstanding=tb.axi.rd_out_max, cycles=tb.cycles)
    tb.done(400)


@cocotb.test()
async def back_to_back_no_stalls(dut):
    """No stalls, latency 4: one command every other cycle (AR register), responses at full rate."""
    tb = TB(dut, "back_to_back_no_stalls", latency=4, stalls=0.0)
    tb.p_out = 1.0
    await tb.reset()
    tb.start()
    cmds = [(BASE + 128 * i, 128 // tb.nb if tb.nb >= 8 else AXI_BURST_BEATS) for i in range(12)]
    await tb.issue(cmds, p_gap=0.0)
    await tb.finish()
    ar = [c for c, _, _ in tb.axi.ar]
    rlast = [c for c, _, last, _ in tb.axi.r if last]
    m = tb.max_out
    # the first MAX_OUT commands: an AR every other cycle (one registered request at a time)
    tb.eq([b - a for a, b in zip(ar[:m], ar[1:m])], [2] * (min(m, len(ar)) - 1), "AR spacing up to MAX_OUT")
    # then each AR two cycles after the last beat that frees a slot (outstanding count, command, AR)
    tb.eq([ar[k] - rlast[k - m] for k in range(m, len(ar))], [2] * (len(ar) - m),
          "AR after a burst completes (cycles from its last R beat)")
    # register slice: every R beat is on out_* in the next cycle (out_ready high), rready never low
    tb.eq([c + 1 for c, *_ in tb.axi.r], tb.out_cycles, "out beat one cycle after each R beat")
    tb.done(100)


@cocotb.test()
async def read_errors(dut):
    """SLVERR and DECERR on some beats: out_err on exactly those beats, the rest of the data intact."""
    tb = TB(dut, "read_errors")
    tb.fail_reads(BASE + 0x1000, BASE + 0x1000 + 40 * tb.nb)
    tb.fail_reads(BASE + 0x2FF0, BASE + 0x3008, decerr=True)
    await tb.reset()
    tb.start()
    cmds = [(BASE + 0x1000 - 4 * tb.nb, 4), (BASE + 0x1000, 16), (BASE + 0x1000 + 32 * tb.nb, 16),
            (BASE + 0x3000 - 4 * tb.nb, 4), (BASE + 0x3000, 3)] + [tb.command() for _ in range(12)]
    await tb.issue(cmds)
    await tb.finish()
    resp = [r for *_, r in tb.axi.r]
    tb.check(resp.count(int(SLVERR)) >= 24 and resp.count(int(DECERR)) >= 2,
             f"error responses seen: {sorted(set(resp))}")
    tb.done(100)
