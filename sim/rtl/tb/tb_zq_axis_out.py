"""zq_axis_out: the output frame on AXI4-Stream, one 32-bit beat per class, TLAST on the last.

A logit source with exactly LAT cycles of latency from ``sel`` (a RAM model), a cocotbext-axi
``AxiStreamSink`` with random backpressure. Checked: each frame is N_CLASSES beats (TLAST on
beat N_CLASSES-1 and nowhere else) carrying the logits of classes 0..N_CLASSES-1 (values that
change between frames), or ERR_VALUE (``spec.engine.ERROR_LOGIT``) sign-extended on every beat of
an error frame; TVALID/TDATA/TLAST held under backpressure; ``done`` high exactly in the cycle
of the last beat's handshake; frames back to back (``start`` in the cycle after ``done``) and
``start`` in the same cycle as ``done`` (how zq_top chains error frames).
"""

from __future__ import annotations

import collections

import cocotb
from cocotb.triggers import ReadWrite, with_timeout
from cocotbext.axi import AxiStreamBus, AxiStreamSink

from zynqflow.sim.rtl.tb.common import TBBase, pause_gen, u
from zynqflow.spec.engine import ERROR_LOGIT


class TB(TBBase):
    def __init__(self, dut, test, backpressure: float = 0.4):
        super().__init__(dut, test=test)
        self.ncls = self.param("N_CLASSES")
        self.lat = self.param("LAT")
        self.err_value = self.param("ERR_VALUE")
        self.table = [0] * self.ncls
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis"), self.clk, self.rst)
        self.sink.log.setLevel("WARNING")
        if backpressure:
            self.sink.set_pause_generator(pause_gen(self.rng, backpressure))
        self.sel_hist = collections.deque([0] * 8, maxlen=8)
        self.done_cycles: list[int] = []
        self.last_hs: list[int] = []
        self.hs: list[int] = []
        dut.start.value = 0
        dut.err.value = 0
        dut.logit.value = 0

    async def source(self):
        """logit in cycle t = the table entry of sel in cycle t - LAT (garbage beyond N_CLASSES)."""
        d = self.dut
        while True:
            await self.cycle()
            sel = self.sel_hist[-self.lat]
            d.logit.value = self.table[sel] & 0xFFFFFFFF if sel < self.ncls else self.rng.getrandbits(32)
            await self.settle()
            self.sel_hist.append(u(d.sel))

    async def monitor(self):
        d = self.dut
        held = None
        while True:
            await self.step()
            v, r = u(d.m_axis_tvalid), u(d.m_axis_tready)
            beat = (u(d.m_axis_tdata), u(d.m_axis_tlast))
            if held is not None:
                self.check(v == 1 and beat == held, f"TVALID/TDATA/TLAST not held under backpressure "
                                                    f"(cycle {self.cycles})")
            held = beat if v and not r else None
            if v and r:
                self.hs.append(self.cycles)
            hs_last = v and r and beat[1]
            self.eq(u(d.done), int(bool(hs_last)), f"done at cycle {self.cycles}")
            if hs_last:
                self.last_hs.append(self.cycles)

    async def frame(self, err: bool, wait: bool = True):
        d = self.dut
        self.table = [self.rng.randrange(-(1 << 31), 1 << 31) if self.rng.random() < 0.5
                      else self.rng.randrange(-40000, 40000) for _ in range(self.ncls)]
        table = list(self.table)
        await self.cycle()
        d.start.value, d.err.value = 1, int(err)
        await self.cycle()
        d.start.value, d.err.value = 0, int(not err)   # err only matters with start
        if wait:
            await self.expect(table, err)

    async def expect(self, table, err):
        fr = await with_timeout(self.sink.recv(), 200 * (self.ncls + 10), "ns")
        data = bytes(fr.tdata)
        self.eq(len(data), 4 * self.ncls, "frame length (TLAST on beat N_CLASSES-1)")
        vals = [int.from_bytes(data[4 * i:4 * i + 4], "little", signed=True) for i in range(self.ncls)]
        want = [self.err_value] * self.ncls if err else table
        self.eq(vals, want, "error frame beats" if err else "logits of the frame")

    def start_all(self):
        cocotb.start_soon(self.source())
        cocotb.start_soon(self.monitor())


@cocotb.test()
async def frames(dut):
    tb = TB(dut, "frames")
    tb.eq(tb.err_value, ERROR_LOGIT, "ERR_VALUE parameter of this build")
    await tb.reset()
    tb.start_all()
    for i in range(10):
        await tb.frame(err=(i % 3 == 2))
        for _ in range(tb.rng.randrange(0, 3)):
            await tb.cycle()
    tb.eq(len(tb.last_hs), 10, "done pulses")
    tb.done(100)


@cocotb.test()
async def back_to_back(dut):
    """No backpressure, start in the cycle after done: frames follow each other closely."""
    tb = TB(dut, "back_to_back", backpressure=0.0)
    await tb.reset()
    tb.start_all()
    for i in range(4):
        await tb.frame(err=(i == 2))
    # one beat per cycle within a frame (the reads run ahead through the queue)
    for f in range(4):
        beats = tb.hs[f * tb.ncls:(f + 1) * tb.ncls]
        tb.eq(beats[-1] - beats[0] + 1, tb.ncls, f"cycles of frame {f}'s beats without backpressure")
    gaps = [b - a for a, b in zip(tb.last_hs, tb.last_hs[1:])]
    tb.info(frame_periods=gaps)
    # one beat per cycle once the first logit is read: the frame's beats take N_CLASSES cycles
    tb.check(all(g <= tb.ncls + tb.lat + 6 for g in gaps), f"frame periods {gaps}")
    tb.done(20)


@cocotb.test()
async def start_with_done(dut):
    """As zq_top chains the error frames owed after a long frame: each next ``start`` in the same
    cycle as ``done`` (the last beat's handshake). Every frame comes out whole."""
    tb = TB(dut, "start_with_done", backpressure=0.3)
    await tb.reset()
    tb.start_all()
    d = dut
    n = 5
    tables = []
    await tb.frame(err=False, wait=False)
    tables.append((list(tb.table), False))
    chained = 0
    while chained < n - 1:
        await tb.cycle()
        d.start.value = 0
        await ReadWrite()
        if u(d.done):
            err = chained % 2 == 0
            tb.table = [tb.rng.randrange(-(1 << 31), 1 << 31) for _ in range(tb.ncls)]
            tables.append((list(tb.table), err))
            d.start.value, d.err.value = 1, int(err)
            chained += 1
    await tb.cycle()
    d.start.value = 0
    for table, err in tables:
        await tb.expect(table, err)
    tb.eq(len(tb.last_hs), n, "done pulses")
    tb.done(2 * n)
