"""zq_out_paths: DDR-tensor results over one or two activation paths (two zq_out_dma, two masters).

The producer is tb_zq_out_dma's model of the MAC pipeline (units issued while ``full`` is low,
arriving RTL_PIPE_DEPTH cycles later, in runs of contiguous units); the layer's ``paths`` mask is
PATH_1, PATH_2 or both; each master ``m0_*`` (path 1, m_axi_act) and ``m1_*`` (path 2, m_axi_wts's
write channels) has the project's DDR model with random AW/W/B stalls, over one memory. Checked:

* path 1 alone: every burst on m0, exactly zq_out_dma's burst plan; path 2 alone: on m1;
  both: the bursts of even 128-byte lines on m0, of odd lines on m1, each port's in order;
  nothing on the other master;
* every byte written is the unit's byte; AXI VALID/payload/WLAST rules and at most MAX_OUT
  bursts awaiting B per master;
* ``full`` = either DMA's FIFO at its threshold (units one cycle earlier); ``idle`` = both DMAs
  idle (every unit written, every burst answered: a layer that reads DDR waits for both
  write-response streams); ``bytes_written`` = both masters' W beats (registered);
* with both paths a write-bound stream moves on both masters at once (beats in the same cycle).
"""

from __future__ import annotations

import cocotb

from zynqflow.sim.rtl.tb.common import AxiMasterChecker, memory, u
from zynqflow.sim.rtl.tb.tb_zq_out_dma import BASE, LINE, ResultsTB, burst_plan
from zynqflow.spec import engine as E


class TB(ResultsTB):
    RUN_SIZES = (1, 2, 5, 8, 16, 21, 32, 64)
    # zq_out_paths's DMAs: the engine's FIFO and the MAC pipeline's depth
    DEFAULTS = dict(DEPTH=E.RTL_OUT_FIFO_UNITS, MARGIN=E.RTL_OUT_FIFO_MARGIN, PIPE=E.RTL_PIPE_DEPTH)

    def __init__(self, dut, test, stalls=(0.2, 0.3, 0.6)):
        super().__init__(dut, test, p_issue=0.9)
        self.paths_built = self.param("PATHS")
        self.ram = [memory(self, f"m{k}", gaps=dict(zip(("aw", "w", "b"), stalls)), write_latency=1, max_writes=32)
                    for k in range(2)]
        self.axi = [AxiMasterChecker(self, f"m{k}", 8, read=False, write=True, max_wr=self.max_out, page=LINE)
                    for k in range(2)]
        self.pushes = [0, 0]
        self.paths = E.PATH_1
        self.both_busy = 0
        dut.paths.value = E.PATH_1

    def port_of(self, addr: int) -> int:
        if self.paths == E.PATH_BOTH:
            return (addr // LINE) & 1
        return 1 if self.paths == E.PATH_2 else 0

    async def monitor(self):
        d = self.dut
        prev = [0, 0]
        while True:
            await self.step()
            c = self.cycles
            count = [self.pushes[k] - len(self.axi[k].w) // self.bpu for k in range(2)]
            self.eq(u(d.full), int(any(p >= self.depth - self.margin for p in prev)),
                    f"full at cycle {c} (units per FIFO one cycle earlier: {prev})")
            prev = count
            idle = all(count[k] == 0 and len(self.axi[k].b) == len(self.axi[k].aw) for k in range(2))
            self.eq(u(d.idle), int(idle), f"idle at cycle {c}")
            if u(d.in_valid) and not u(d.abort):
                self.pushes[self.port_of(u(d.in_addr))] += 1
            if u(d.m0_wvalid) and u(d.m0_wready) and u(d.m1_wvalid) and u(d.m1_wready):
                self.both_busy += 1
            self.nw = len(self.axi[0].w) + len(self.axi[1].w)
            for a in self.axi:
                a.sample(c)

    async def run(self, paths: int, runs):
        await self.cycle()
        self.dut.paths.value = paths
        self.paths = paths
        self.add_runs(runs)
        await self.wait_idle(60000)
        await self.step()
        self.eq(u(self.dut.bytes_written), 8 * (len(self.axi[0].w) + len(self.axi[1].w)), "bytes_written")


@cocotb.test()
async def paths_split_lines(dut):
    tb = TB(dut, "paths_split_lines")
    await tb.reset()
    tb.start()
    modes = [E.PATH_1, E.PATH_2, E.PATH_BOTH] if tb.paths_built == 2 else [E.PATH_1]
    for page, paths in enumerate(modes):
        runs = tb.random_runs(30, page)
        aw0 = [len(a.aw) for a in tb.axi]
        await tb.run(paths, runs)
        plan = burst_plan(runs, tb.npe)
        for k in range(2):
            want = [(a, n) for a, n in plan if tb.port_of(a) == k]
            tb.eq([(a, n) for _, a, n in tb.axi[k].aw[aw0[k]:]], want, f"paths={paths}: AW bursts on m{k}")
    image = tb.axi[0].write_image() | tb.axi[1].write_image()
    tb.eq(image, tb.expected, "bytes written")
    if tb.paths_built == 2:
        tb.check(tb.both_busy > 50, f"both masters wrote in the same cycle only {tb.both_busy} times")
        tb.check(max(a.wr_out_max for a in tb.axi) >= min(2, tb.max_out), "bursts awaiting B")
    tb.info(both_busy=tb.both_busy, cycles=tb.cycles)
    tb.done(2000)


@cocotb.test()
async def write_errors_on_both_paths(dut):
    """SLVERR on a line of each path: ``err`` rises for them (never without a burst answered
    SLVERR on either master the cycle before), the layer still ends idle."""
    tb = TB(dut, "write_errors_on_both_paths")
    lo, hi = BASE + 0x100, BASE + 0x200          # lines 2 and 3: one on each path with both
    for r in tb.ram:
        r.fail_writes(lo, hi)
    await tb.reset()
    tb.start()
    errs = bad = 0
    paths = E.PATH_BOTH if tb.paths_built == 2 else E.PATH_1

    async def watch():
        nonlocal errs, bad
        prev = 0
        while True:
            await tb.step()
            if u(dut.err):
                errs += 1
                tb.check(prev, f"err at cycle {tb.cycles} without a SLVERR response the cycle before")
            prev = int(any(u(getattr(dut, f"m{k}_bvalid")) and u(getattr(dut, f"m{k}_bready"))
                           and (u(getattr(dut, f"m{k}_bresp")) >> 1) & 1 for k in range(2)))
            bad += prev
    cocotb.start_soon(watch())
    await tb.run(paths, [(BASE + 0xC0, 40)])
    tb.check(errs >= 1 and bad >= 2, f"err pulses {errs}, SLVERR responses {bad}")
    if tb.paths_built == 2:
        tb.check(all(any((b[1] >> 1) & 1 for b in a.b) for a in tb.axi), "a SLVERR answer on each master")
    tb.done(50)
