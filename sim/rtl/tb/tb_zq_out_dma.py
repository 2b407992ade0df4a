"""zq_out_dma: N_PE-byte result units -> AXI4 write bursts (data FIFO, command FIFO, zq_axi_wr).

The producer is a model of the MAC pipeline: it issues a unit when ``full`` is low and the
unit arrives a fixed number of cycles later (results in flight, fewer than MARGIN), as runs of
contiguous units (a band's rows of one channel group: ``in_left`` counts down to 1) at
N_PE-aligned addresses anywhere in a page. The memory is cocotbext-axi's ``AxiRamWrite``
(``sim/world/ddr.py``) with random AW/W/B stalls. Checked:

* the AW bursts are exactly those of the header's rule (a burst opens at a unit, takes as many
  units as fit 16 beats, ends before the next 128-byte boundary, stays in its run), in order:
  <= 16 beats, never across 128 bytes (so never across 4 KiB);
* every byte written is the unit's byte (W beats = the unit's 64-bit words, little endian);
* at most MAX_OUT bursts awaiting B (reached with B stalls); AXI VALID/payload rules;
* ``full`` = (units in the FIFO one cycle earlier) >= DEPTH - MARGIN, every cycle;
* ``idle`` = every unit written and every burst answered, every cycle; ``bytes_written``;
* ``err`` one pulse per burst answered SLVERR;
* ``abort``: no new burst after it (the AW already offered completes), issued bursts are
  written out with their data, the rest is dropped, ``idle`` follows; the next runs are exact.
"""

from __future__ import annotations

import collections

import cocotb
from cocotbext.axi.sparse_memory import SparseMemory

from zynqflow.sim.rtl.tb.common import AxiMasterChecker, TBBase, memory, u
from zynqflow.spec.engine import AXI_BURST_BEATS

BASE = 0x1800_0000
LINE = 128                      # bursts end at 128-byte boundaries (16 beats of 8 bytes)


def burst_plan(runs, npe: int) -> list[tuple[int, int]]:
    """(address, beats) of every burst the header's rule forms from these runs."""
    bpu = npe // 8
    upb = AXI_BURST_BEATS // bpu
    out = []
    for start, n in runs:
        i = 0
        while i < n:
            a = start + i * npe
            k = min(n - i, (LINE - a % LINE) // npe, upb)
            out.append((a, k * bpu))
            i += k
    return out


class ResultsTB(TBBase):
    """What this bench and tb_zq_out_paths's share: the DUT's parameters (those it lacks from
    ``DEFAULTS``), the DDR image, the model of the MAC pipeline (``producer``: a unit issued with
    probability ``p_issue`` while ``full`` is low arrives PIPE cycles later) and the runs of units
    it issues (their lengths from ``RUN_SIZES``)."""

    RUN_SIZES = (1, 2, 3, 4, 8, 16, 21, 32)
    DEFAULTS: dict = {}

    def __init__(self, dut, test, p_issue: float):
        super().__init__(dut, test=test)
        self.npe = self.param("N_PE")
        self.depth = self.param("DEPTH", self.DEFAULTS.get("DEPTH"))
        self.margin = self.param("MARGIN", self.DEFAULTS.get("MARGIN"))
        self.max_out = self.param("MAX_OUT")
        self.bpu = self.npe // 8
        self.delay = self.param("PIPE", self.DEFAULTS.get("PIPE"))   # the producer's pipeline: issue to the FIFO
        self.mem = SparseMemory(1 << 32)
        self.p_issue = p_issue
        self.units: collections.deque = collections.deque()    # (addr, left, data) still to issue
        self.line = collections.deque([None] * self.delay)     # the producer's pipeline
        self.expected: dict[int, int] = {}
        dut.in_valid.value = 0
        dut.abort.value = 0

    def add_runs(self, runs):
        for start, n in runs:
            for i in range(n):
                data = self.rng.getrandbits(self.npe * 8)
                a = start + i * self.npe
                self.units.append((a, n - i, data))
                for k in range(self.npe):
                    self.expected[a + k] = (data >> (8 * k)) & 0xFF

    def random_runs(self, n_runs: int, page: int):
        runs = []
        base = BASE + page * 0x1000
        off = 0
        for _ in range(n_runs):
            off += self.rng.randrange(0, 4) * self.npe
            n = self.rng.choice(self.RUN_SIZES)
            if off + n * self.npe > 0x1000:
                break
            runs.append((base + off, n))
            off += n * self.npe
        return runs

    async def producer(self):
        d = self.dut
        while True:
            await self.cycle()
            out = self.line.popleft()
            if out is not None:
                a, left, data = out
                d.in_valid.value, d.in_addr.value, d.in_left.value, d.in_data.value = 1, a, left, data
            else:
                d.in_valid.value = 0
            await self.settle()
            issue = (not u(d.full)) and self.units and self.rng.random() < self.p_issue
            self.line.append(self.units.popleft() if issue else None)

    async def wait_idle(self, timeout=40000):
        """Until every unit is issued and through the pipeline and the DUT is idle (checked)."""
        for _ in range(timeout):
            await self.step()
            if not self.units and all(x is None for x in self.line) and u(self.dut.idle):
                return
        self.check(False, "never idle")

    def start(self):
        cocotb.start_soon(self.producer())
        cocotb.start_soon(self.monitor())


class TB(ResultsTB):
    def __init__(self, dut, test, stalls=(0.2, 0.3, 0.8), p_issue: float = 0.8):
        super().__init__(dut, test, p_issue)
        self.ram = memory(self, gaps=dict(zip(("aw", "w", "b"), stalls)), write_latency=1, max_writes=32)
        self.axi = AxiMasterChecker(self, "m", 8, read=False, write=True, max_wr=self.max_out, page=LINE)
        self.pushes = 0
        self.fifo_max = 0
        self.check_full = True
        self.check_idle = True
        self.err_next = 0
        self.errs = 0
        self.abort_cycle = None
        self.awvalid_at_abort = 0

    async def monitor(self):
        d = self.dut
        count_prev = 0
        while True:
            await self.step()
            c = self.cycles
            pops = len(self.axi.w) // self.bpu
            count = self.pushes - pops
            if self.check_full:
                self.check(count <= self.depth, f"{count} units in a FIFO of {self.depth}")
            self.fifo_max = max(self.fifo_max, count)
            if self.check_full:
                self.eq(u(d.full), int(count_prev >= self.depth - self.margin),
                        f"full at cycle {c} (units one cycle earlier: {count_prev})")
            count_prev = count
            if self.check_idle:
                self.eq(u(d.idle), int(count == 0 and len(self.axi.b) == len(self.axi.aw)), f"idle at cycle {c}")
            self.eq(u(d.err), self.err_next, f"err at cycle {c}")
            self.eq(u(d.bytes_written), 8 * len(self.axi.w), f"bytes_written at cycle {c}")
            if self.abort_cycle is None and u(d.abort):
                self.abort_cycle = c
                self.awvalid_at_abort = u(d.m_awvalid)
            if u(d.in_valid) and not u(d.abort):
                self.pushes += 1
            self.err_next = int(bool(u(d.m_bvalid) and u(d.m_bready) and (u(d.m_bresp) >> 1) & 1))
            self.errs += self.err_next
            self.axi.sample(c)


@cocotb.test()
async def runs_to_bursts(dut):
    tb = TB(dut, "runs_to_bursts", stalls=(0.2, 0.3, 0.9))
    await tb.reset()
    tb.start()
    runs = tb.random_runs(30, 0) + tb.random_runs(30, 1) + [(BASE + 0x2FF0 // tb.npe * tb.npe, 1)]
    tb.add_runs(runs)
    await tb.wait_idle()
    tb.eq([(a, n) for _, a, n in tb.axi.aw], burst_plan(runs, tb.npe), "AW bursts (address, beats)")
    tb.eq(tb.axi.write_image(), tb.expected, "bytes written")
    tb.eq(tb.axi.wr_out_max, tb.max_out, "most bursts awaiting B (B stalls)")
    tb.check(tb.fifo_max >= tb.depth - tb.margin, f"the FIFO never reached the full threshold ({tb.fifo_max})")
    tb.info(bursts=len(tb.axi.aw), fifo_max=tb.fifo_max, cycles=tb.cycles)
    tb.done(2000)


@cocotb.test()
async def write_errors(dut):
    tb = TB(dut, "write_errors")
    lo, hi = BASE + 0x200, BASE + 0x280
    tb.ram.fail_writes(lo, hi)
    await tb.reset()
    tb.start()
    runs = [(BASE + 0x1C0, 24), (BASE + 0x400, 8)]
    tb.add_runs(runs)
    await tb.wait_idle()
    plan = burst_plan(runs, tb.npe)
    n_bad = sum(1 for a, n in plan if any(lo <= a + 8 * i < hi for i in range(n)))
    tb.eq(tb.errs, n_bad, "err pulses (bursts answered SLVERR)")
    tb.check(n_bad > 0, "no burst hit the failing range")
    tb.done(100)


@cocotb.test()
async def abort_then_resume(dut):
    tb = TB(dut, "abort_then_resume", stalls=(0.3, 0.5, 0.5))
    tb.check_idle = False
    tb.check_full = False
    await tb.reset()
    tb.start()
    runs = tb.random_runs(40, 0)
    tb.add_runs(runs)
    for _ in range(60 + tb.rng.randrange(40)):
        await tb.cycle()
    dut.abort.value = 1
    for _ in range(4000):
        await tb.step()
        if u(dut.idle) and not tb.axi.w_beats_left:
            break
    tb.eq(u(dut.idle), 1, "idle while abort is held")
    tb.pushes = len(tb.axi.w) // tb.bpu          # the FIFO was flushed
    n_aw = len(tb.axi.aw)
    for _ in range(10):
        await tb.cycle()
    await tb.cycle()
    dut.abort.value = 0
    late = [a for a in tb.axi.aw if a[0] > tb.abort_cycle]
    tb.check(len(late) <= tb.awvalid_at_abort,
             f"{len(late)} AW handshakes after abort (AW offered at the abort: {tb.awvalid_at_abort})")
    tb.eq(len(tb.axi.aw), n_aw, "no AW while abort is held")
    tb.eq(len(tb.axi.b), len(tb.axi.aw), "every issued burst answered")
    # what was written is the data of the issued bursts
    img = tb.axi.write_image()
    tb.eq({a: tb.expected[a] for a in img}, img, "bytes of the bursts issued before the abort")
    tb.eq([(a, n) for _, a, n in tb.axi.aw], burst_plan(runs, tb.npe)[:len(tb.axi.aw)],
          "bursts issued before the abort (a prefix of the plan)")
    # the producer lost what was in flight; start over with new runs in another page
    tb.units.clear()
    tb.line = collections.deque([None] * tb.delay)
    await tb.cycle()
    tb.check_full = tb.check_idle = True
    tb.expected = {}
    n0 = len(tb.axi.aw)
    w0 = len(tb.axi.w)
    runs2 = tb.random_runs(20, 2)
    tb.add_runs(runs2)
    await tb.wait_idle()
    tb.eq([(a, n) for _, a, n in tb.axi.aw[n0:]], burst_plan(runs2, tb.npe), "AW bursts after the abort")
    got = {}
    i = w0
    for _, a, n in tb.axi.aw[n0:]:
        for k in range(n):
            for b in range(8):
                got[a + 8 * k + b] = (tb.axi.w[i][1] >> (8 * b)) & 0xFF
            i += 1
    tb.eq(got, tb.expected, "bytes written after the abort (nothing stale)")
    tb.done(200)
