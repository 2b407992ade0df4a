"""zq_axi_wr: AXI4 burst writer (AW and W channels apart, W_QUEUE bursts queued, MAX_OUT awaiting B).

The memory is the project's DDR model (``sim/world/ddr.py``: SLVERR injection, protocol
checks) with random AW/W/B stalls; commands and the data stream come with random gaps.
Checked every cycle against a model of the header's rules:

* AW: ``awaddr``/``awlen`` of each command, in order; at most MAX_OUT bursts awaiting B, and
  MAX_OUT is reached (B stalls); ``cmd_ready`` = no AW pending, fewer than MAX_OUT commands owed
  their B and room in the W queue (bursts taken whose W has not started, W_QUEUE deep);
* W: beats without waiting for the AW handshake (AXI A3.3.1), back to back (``m_wvalid`` =
  ``in_valid`` whenever a burst is loaded; the next queued burst is loaded with the last beat of
  the one before), ``m_wdata`` = ``in_data``, ``m_wlast`` on each burst's last beat, ``in_ready`` =
  a loaded burst and ``m_wready``; the memory holds every byte written; a slave that holds
  AWREADY until it sees WVALID gets every burst;
* ``err`` pulses in the cycle after each SLVERR response, ``idle`` = every command answered,
  ``w_busy`` = a burst with beats left (queued, loaded or on AW).
"""

from __future__ import annotations

import collections

import cocotb
from cocotbext.axi.sparse_memory import SparseMemory

from zynqflow.sim.rtl.tb.common import AxiMasterChecker, TBBase, memory, u
from zynqflow.spec.engine import AXI_BURST_BEATS

BASE = 0x3000_0000
SPAN = 0x4000


class TB(TBBase):
    def __init__(self, dut, test, stalls=(0.2, 0.3, 0.85), p_in: float = 0.7, **mem):
        super().__init__(dut, test=test)
        self.dw = self.param("DATA_W")
        self.nb = self.dw // 8
        self.max_out = self.param("MAX_OUT")
        self.wq_depth = self.param("W_QUEUE")
        self.mem = SparseMemory(1 << 32)
        # the slave takes AW requests ahead of their data and owes many B responses
        self.ram = memory(self, beat_bytes=self.nb, gaps=dict(zip(("aw", "w", "b"), stalls)), write_latency=1,
                          max_writes=32, **mem)
        self.axi = AxiMasterChecker(self, "m", self.nb, read=False, write=True, max_wr=self.max_out)
        self.p_in = p_in
        self.data: collections.deque = collections.deque()   # the in_* stream still to send
        self.expected: dict[int, int] = {}                    # byte address -> value
        self.err_addrs: list[tuple[int, int]] = []
        self.n_cmd = 0
        self.cmd_cycles: list[int] = []
        # the W side, as the header describes it
        self.wq: collections.deque = collections.deque()     # beats of bursts AW'd, W not started
        self.w_left = 0                                      # beats left of the loaded burst
        self.wq_max = 0
        self.err_next = 0
        self.errs = 0
        dut.cmd_valid.value = 0
        dut.in_valid.value = 0

    def command(self):
        beats = self.rng.choice([1, 2, AXI_BURST_BEATS] + list(range(1, AXI_BURST_BEATS + 1)))
        while True:
            addr = BASE + self.rng.randrange(0, SPAN - beats * self.nb) // self.nb * self.nb
            if addr // 4096 == (addr + beats * self.nb - 1) // 4096:
                return addr, beats

    async def monitor(self):
        d = self.dut
        while True:
            await self.step()
            c = self.cycles
            awv = u(d.m_awvalid)
            owed = self.n_cmd - len(self.axi.b)          # commands taken whose B has not come
            self.eq(u(d.cmd_ready), int(not awv and owed < self.max_out and len(self.wq) < self.wq_depth),
                    f"cmd_ready at cycle {c} (awvalid={awv}, owed={owed}, queued={len(self.wq)})")
            active = self.w_left > 0
            iv, wr = u(d.in_valid), u(d.m_wready)
            self.eq(u(d.m_wvalid), int(active and iv), f"m_wvalid at cycle {c} (loaded={active}, in_valid={iv})")
            self.eq(u(d.in_ready), int(active and wr), f"in_ready at cycle {c}")
            if active and iv:
                self.eq(u(d.m_wdata), u(d.in_data), "m_wdata = in_data")
                self.eq(u(d.m_wlast), int(self.w_left == 1), "m_wlast")
            self.eq(u(d.err), self.err_next, f"err at cycle {c}")
            self.eq(u(d.idle), int(self.n_cmd == len(self.axi.b)), f"idle at cycle {c}")
            self.eq(u(d.w_busy), int(active or bool(self.wq) or bool(awv)), f"w_busy at cycle {c}")
            # the handshakes of this cycle
            w_hs = active and iv and wr
            load = bool(self.wq) and (not active or (self.w_left == 1 and w_hs))
            if w_hs:
                self.w_left -= 1
            if load:
                self.w_left = self.wq.popleft()
            bv, br = u(d.m_bvalid), u(d.m_bready)
            self.err_next = int(bool(bv and br and (u(d.m_bresp) >> 1) & 1))
            self.errs += self.err_next
            self.axi.sample(c)
            if u(d.cmd_valid) and u(d.cmd_ready):
                self.n_cmd += 1
                self.cmd_cycles.append(c)
                self.wq.append(u(d.cmd_beats))
                self.wq_max = max(self.wq_max, len(self.wq))

    async def feed(self):
        """The in_* stream: random gaps, but VALID and the data held until READY (a FIFO's output)."""
        d = self.dut
        offered = False
        while True:
            await self.cycle()
            if not offered and self.data and self.rng.random() < self.p_in:
                offered = True
                d.in_data.value = self.data[0]
            d.in_valid.value = int(offered)
            await self.settle()
            if offered and u(d.in_ready):
                self.data.popleft()
                offered = False

    async def issue(self, cmds, p_gap=0.2):
        d = self.dut
        for addr, beats in cmds:
            for n in range(beats):
                w = self.rng.getrandbits(self.dw)
                self.data.append(w)
                for k in range(self.nb):
                    self.expected[addr + n * self.nb + k] = (w >> (8 * k)) & 0xFF
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

    async def finish(self, cmds, timeout=30000):
        for _ in range(timeout):
            await self.step()
            if u(self.dut.idle) and not self.data and self.n_cmd == len(cmds):
                break
        self.eq(u(self.dut.idle), 1, "idle at the end")
        self.eq([(a, n) for _, a, n in self.axi.aw], list(cmds), "AW bursts (address, beats) in command order")
        self.eq(len(self.axi.b), len(cmds), "B responses")
        bad = [a for a, v in self.expected.items()
               if not any(lo <= a < hi for lo, hi in self.err_addrs) and self.mem.read(a, 1)[0] != v]
        self.check(not bad, lambda: f"{len(bad)} bytes wrong in memory, first at 0x{bad[0]:08x}")
        img = self.axi.write_image()
        self.eq(img, self.expected, "bytes on the W channel")

    def start(self):
        cocotb.start_soon(self.monitor())
        cocotb.start_soon(self.feed())


@cocotb.test()
async def random_traffic(dut):
    tb = TB(dut, "random_traffic")
    await tb.reset()
    tb.start()
    cmds = [tb.command() for _ in range(40)]
    await tb.issue(cmds)
    await tb.finish(cmds)
    tb.eq(tb.axi.wr_out_max, tb.max_out, "most bursts awaiting B (B stalls: the limit is reached)")
    tb.info(wr_out_max=tb.axi.wr_out_max, w_queue_max=tb.wq_max, cycles=tb.cycles)
    tb.done(2000)


@cocotb.test()
async def queue_fills(dut):
    """W stalled most of the time, B free: AW runs ahead until the W queue is full."""
    tb = TB(dut, "queue_fills", stalls=(0.0, 0.85, 0.0), p_in=1.0)
    await tb.reset()
    tb.start()
    cmds = [(BASE + 0x100 * i, 4) for i in range(12)]
    await tb.issue(cmds, p_gap=0.0)
    await tb.finish(cmds)
    # (one of the MAX_OUT bursts owed is the one being written)
    tb.eq(tb.wq_max, min(tb.wq_depth, tb.max_out - 1), "W queue occupancy reached")
    tb.done(200)


@cocotb.test()
async def back_to_back(dut):
    """No stalls, data always there: the W beats of consecutive bursts leave without a gap."""
    tb = TB(dut, "back_to_back", stalls=(0.0, 0.0, 0.0), p_in=1.0)
    await tb.reset()
    tb.start()
    cmds = [(BASE + 0x200 * i, tb.rng.randrange(4, AXI_BURST_BEATS + 1)) for i in range(10)]
    await tb.issue(cmds, p_gap=0.0)
    await tb.finish(cmds)
    w = [c for c, *_ in tb.axi.w]
    tb.eq(w[-1] - w[0] + 1, len(w), "W beats of all bursts in consecutive cycles")
    aw = [c for c, *_ in tb.axi.aw]
    tb.eq(w[0] - tb.cmd_cycles[0], 2, "first W beat two cycles after its command (queue, load)")
    tb.eq(aw[0] - tb.cmd_cycles[0], 1, "first AW handshake the cycle after its command")
    tb.done(200)


@cocotb.test()
async def slave_waits_for_wvalid(dut):
    """A slave that holds AWREADY until it has a W beat of the burst (A3.3.1 allows it): every
    burst is written (the writer does not wait for AWREADY before WVALID)."""
    tb = TB(dut, "slave_waits_for_wvalid", stalls=(0.2, 0.3, 0.3), aw_waits_for_w=True)
    await tb.reset()
    tb.start()
    cmds = [tb.command() for _ in range(16)]
    await tb.issue(cmds)
    await tb.finish(cmds)
    first_w, n = [], 0
    for _, _, beats in tb.axi.aw:
        first_w.append(tb.axi.w[n][0])
        n += beats
    early = sum(w < a for w, (a, *_) in zip(first_w, tb.axi.aw))
    tb.check(early == len(cmds), f"only {early} of {len(cmds)} bursts had a W beat before their AW handshake")
    tb.done(200)


@cocotb.test()
async def write_errors(dut):
    """SLVERR responses: one err pulse per failed burst, the cycle after its B; the rest is written."""
    tb = TB(dut, "write_errors")
    lo, hi = BASE + 0x1000, BASE + 0x1000 + 8 * tb.nb
    tb.ram.fail_writes(lo, hi)
    tb.err_addrs.append((lo, hi))
    await tb.reset()
    tb.start()
    cmds = [(BASE + 0x1000, 4), (BASE + 0x800, 16), (BASE + 0x1000 + 4 * tb.nb, 2), (BASE + 0x1000 + 8 * tb.nb, 4)]
    cmds += [tb.command() for _ in range(8)]
    await tb.issue(cmds)
    await tb.finish(cmds)
    n_bad = sum(1 for a, n in cmds if any(lo <= a + i * tb.nb < hi for i in range(n)))
    tb.eq(tb.errs, n_bad, "err pulses (bursts with SLVERR)")
    tb.eq(sum(1 for _, r in tb.axi.b if r & 2), n_bad, "SLVERR responses seen")
    tb.done(100)
