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



@cocotb.test()
async def reset_with_bursts_in_flight(dut):
    """Resets while bursts are in flight. The slave answers the bursts complete before a reset
    (the PS's HP port does not see the PL's reset); the writer drops those late responses and
    counts them against MAX_OUT. Cases: the last W beat of two bursts held back, then handed over
    in the reset's first cycle (its B the cycle after, or held until the bursts of the next epoch
    are complete too), and in the cycle before the reset. After each reset new bursts are all
    written, ``idle`` never rises while one of them is owed its B and rises after the last, and
    the late and new bursts owed never exceed MAX_OUT."""
    tb = TB(dut, "reset_with_bursts_in_flight", stalls=(0.0, 0.0, 0.0), p_in=1.0)
    d, port = tb.dut, tb.ram
    ctl = dict(w_stop=None, arm=None, rst_left=0, rst_at=None, hold_b=False, hold_b_next=False)
    state = dict(late=0, owed=0, in_reset=False, wlast_in_reset=0)

    def hook(now):
        # right after the edge that ended cycle `now` (its values still show); what is driven here
        # holds in cycle now + 1 (the memory drives its READYs after the hooks)
        if ctl["arm"] is not None and port.write.beats >= ctl["w_stop"] and u(d.m_wvalid):
            lead = ctl["arm"]               # the reset: 0 with the held beat's handshake, 1 a cycle later
            ctl["arm"], ctl["w_stop"] = None, None
            ctl["rst_at"], ctl["hold_b"] = now + 1 + lead, ctl["hold_b_next"]
        # the late responses held until bursts of the new epoch are complete at the slave too: all of
        # them, or as many as the writer may owe
        if ctl["hold_b"] and ctl["rst_at"] is None and state["owed"] and len(port.bq) > state["late"] and \
                (not tb.data or state["owed"] + state["late"] >= tb.max_out):
            ctl["hold_b"] = False
        if ctl["rst_at"] is not None and now + 1 >= ctl["rst_at"]:
            if ctl["rst_left"] > 0:
                d.rst.value = 1
                ctl["rst_left"] -= 1
            else:
                d.rst.value = 0
                ctl["rst_at"] = None

    port.ddr.hooks.append(hook)
    port.hold("w", lambda c: ctl["w_stop"] is not None and port.write.beats >= ctl["w_stop"])
    port.hold("b", lambda c: ctl["hold_b"])
    await tb.reset()
    cocotb.start_soon(tb.feed())

    async def watch():
        st = state
        while True:
            await tb.step()
            rst = u(d.rst)
            b_hs = u(d.m_bvalid) and u(d.m_bready)
            if rst:
                st["owed"] = 0
                st["in_reset"] = True
                st["wlast_in_reset"] += u(d.m_wvalid) and u(d.m_wready) and u(d.m_wlast)
                continue
            if st["in_reset"]:                 # the first cycle after a reset: what the slave owes is late
                st["late"], st["in_reset"] = len(port.bq), False
            # idle reflects the responses of the cycles before this one
            owed = st["owed"]
            tb.check(not (u(d.idle) and owed), lambda: f"idle with {owed} bursts owed their B (cycle {tb.cycles})")
            if b_hs:
                if st["late"]:
                    st["late"] -= 1
                else:
                    st["owed"] -= 1
            st["owed"] += u(d.cmd_valid) and u(d.cmd_ready)
            late, owed = st["late"], st["owed"]
            tb.check(owed >= 0, lambda: f"a B response taken for no burst (cycle {tb.cycles})")
            tb.check(late + owed <= tb.max_out, lambda: f"{late} late + {owed} owed responses > MAX_OUT "
                                                        f"(cycle {tb.cycles})")

    cocotb.start_soon(watch())
    for rst_len, lead, hold_b in ((1, 0, False), (1, 0, True), (3, 0, True), (2, 1, False), (2, 1, True)):
        # two bursts; the last W beat of the second held until the reset
        ctl["w_stop"] = port.write.beats + 7
        ctl["arm"], ctl["rst_left"], ctl["hold_b_next"] = lead, rst_len, hold_b
        case = f"reset of {rst_len} cycles, {lead} after the last W beat, late B {'held' if hold_b else 'free'}"
        await tb.issue([(BASE + 0x400 * tb.rng.randrange(8), 4) for _ in range(2)], p_gap=0.0)
        for _ in range(300):
            await tb.step()
            if ctl["arm"] is None and ctl["rst_at"] is None and not u(d.rst):
                break
        tb.check(ctl["arm"] is None, f"{case}: the held last W beat never showed")
        tb.eq(state["wlast_in_reset"], int(lead == 0), f"{case}: last W beats in the reset")
        state["wlast_in_reset"] = 0
        # the next epoch: bursts with their data, all written and answered
        tb.expected.clear()
        new = [(BASE + 0x2000 + 0x100 * i, tb.rng.randrange(1, AXI_BURST_BEATS + 1)) for i in range(tb.max_out + 2)]
        await tb.issue(new, p_gap=0.0)
        for _ in range(5000):
            await tb.step()
            if u(d.idle) and not tb.data and state["owed"] == 0:
                break
        tb.eq(u(d.idle), 1, f"{case}: idle after the new bursts")
        tb.eq(state["owed"], 0, f"{case}: responses owed to the new bursts")
        tb.eq(state["late"], 0, f"{case}: late responses still to come")
        bad = [a for a, v in tb.expected.items() if tb.mem.read(a, 1)[0] != v]
        tb.check(not bad, lambda: f"{case}: {len(bad)} bytes of the new bursts wrong, first 0x{bad[0]:08x}")
    tb.done(100)
