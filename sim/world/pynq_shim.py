"""Follows the pynq 3.x sources (``pynq.Overlay``, ``pynq.MMIO``, ``pynq.lib.dma``, ``pynq.allocate``).
A small PYNQ look-alike over cocotbext-axi, so that the board driver
(:class:`zynqflow.host.driver.ZqDriver`) runs unchanged against the RTL, and
meets the hardware's unkind behaviour here rather than first on a board.

What the driver sees, and what is behind it here:

================================  ==========================================
PYNQ object                       simulation
================================  ==========================================
``pynq.Overlay``                  :class:`SimOverlay` (``ip_dict`` with the
                                  accelerator's ``registers`` as pynq reads
                                  them from a Vitis HLS ``.hwh``, attributes
                                  ``zq_top_0`` and ``axi_dma_0``,
                                  ``clock_dict`` as pynq 3.x builds it:
                                  ``enable``/``divisor0``/``divisor1``, the
                                  clock in the PS7's ``.hwh`` parameters)
``ip.mmio.read/write``            :class:`SimMMIO`: ``AxiLiteMaster`` on
                                  ``s_axi_control``
``overlay.axi_dma_0``             :class:`SimDMA`: **pynq's own**
                                  ``pynq.lib.dma._SDMAChannel``
                                  (``pynq_dma=True``) or
                                  :class:`SimDMAChannel` (its port: the same
                                  register accesses, checks and messages)
                                  on :class:`SimAxiDma`, a register model
                                  of the AXI DMA (PG021, direct register
                                  mode)
``AXI DMA MM2S / S2MM``           ``AxiStreamSource`` on ``s_axis_in`` (one
                                  packet per transfer, TLAST on its last
                                  beat) / ``AxiStreamSink`` on ``m_axis_out``
                                  (TREADY only while a transfer is posted)
``pynq.allocate``                 :class:`SimAllocator` -> :class:`SimBuffer`:
                                  a numpy array (the CPU's view, "cache")
                                  whose ``physical_address`` lies in the
                                  simulated DDR (:class:`zynqflow.sim.
                                  ddr.Ddr`, one sparse memory);
                                  ``flush()`` copies the array into it,
                                  ``invalidate()`` copies it back. The AXI
                                  DMA and the engine's AXI4 masters
                                  (``m_axi_wts``, ``m_axi_act``) only see
                                  the DDR: a buffer not flushed is not
                                  there, as on the board
``pynq.Interrupt``                :class:`SimInterrupt`: the DUT's
                                  ``interrupt`` pin, the DMA's
                                  ``mm2s_introut`` / ``s2mm_introut``
``pynq.ps.Clocks``                :class:`SimClocks`: ``fclk0_mhz`` reads and
                                  sets the simulation clock (Zynq divisors)
``time.monotonic``                :meth:`SimOverlay.now`: simulated seconds
================================  ==========================================

The DMA model follows PG021 as pynq 3.x drives it. Each channel has DMACR
(+0x00), DMASR (+0x04), the address (+0x18/+0x1C) and LENGTH (+0x28), MM2S
at 0x00 and S2MM at 0x30; writing LENGTH starts a transfer. DMASR: bit 0
Halted (after reset, and until RS is set), bit 1 Idle (set when a transfer
completes; 0 after RS is set until the first one does, which is why pynq
lets the first ``transfer()`` through), bits 4/5/6 DMAIntErr/DMASlvErr/
DMADecErr, bit 12 IOC_Irq, bit 14 Err_Irq (write 1 to clear). On an error
the channel clears RS and halts with the error bits set; setting RS again
does not restart it: only a soft reset (DMACR bit 2, either channel: both
are reset; the bit reads 1 until the reset is done) clears errors. So, as on
the board, after an error every ``transfer()`` raises pynq's
``RuntimeError("DMA channel not started")``, and after a timeout the channel
stays busy and ``transfer()`` raises "DMA channel not idle". A soft reset
also drops whatever the two stream interfaces were in the middle of.

Fault injection (``faults``): ``{"channel": "mm2s"|"s2mm", "transfer": k,
"kind": "internal"|"slave"|"decode"|"stall", "beats": b}``, for the k-th
transfer (0-based, counting every transfer of that channel since the
simulation started). ``internal``/``slave``/``decode`` end the transfer with
that error (S2MM: the engine's packet is taken from the stream but not
written to memory; MM2S: after ``b`` beats, default 0, have gone out, so
the engine holds part of a frame); ``stall`` leaves the transfer busy for
ever (S2MM: TREADY never rises, the engine's output waits; MM2S: after
``b`` beats). An S2MM fault with ``beats`` halts the channel mid-packet: it takes ``b`` beats of
the engine's output, then TREADY drops and the engine keeps the rest of its frame (as
PG021's S2MM stops on a write error). ``"kind": "sigint"`` raises ``KeyboardInterrupt`` in the
driver right after that transfer was started (the user pressing Ctrl-C mid-stream). Faults and
``backpressure`` do not combine.

A soft reset takes ``reset_cycles`` (16), plus ``busy_reset_cycles`` (600) when a channel
was mid-transfer: the driver must wait for DMACR.Reset to clear. ``allocate()`` hands freed
addresses out again, as the CMA allocator does. ``charge(nbytes)``: the DDR model's shared
bandwidth budget, awaited once per DMA packet (None: the DMA's traffic is free).

Tampering (another agent on the board, between two frames): on an S2MM
transfer, once its data is in memory and before the channel reports it done
(the engine is idle then in ``classify``), ``"kind": "wts_addr", "value": v``
writes ``v`` into the engine's ``wts`` register, and ``"kind":
"weight_header"`` flips a byte of the network ID in the weight image's header
in DDR (at the address ``wts`` holds) and writes ``wts`` again (the same
address). The engine, which checks the header at every frame, answers the next
frame with status ``address_range`` / ``weight_image``.

The driver is synchronous: a cocotb test runs it in a thread started with
``cocotb.task.bridge`` and every register access here goes back into the
simulation with ``cocotb.task.resume``; between two such calls simulated
time stands still. A DMASR read of a busy channel lets the simulation run
until the transfer ends or ``poll_cycles`` clock cycles pass (a poll loop
that sleeps); other DMA register accesses take ``REG_CYCLES``. The wall time
spent inside the simulator is counted (:meth:`SimOverlay.sim_wall_seconds`)
so that the driver can leave it out of the host time it reports.

Written for this project (cocotbpynq, GPL-3.0, is not used).
"""

from __future__ import annotations

import asyncio
import inspect
import random
import time

import cocotb
import numpy as np
from cocotb.task import resume
from cocotb.triggers import ClockCycles, Event, First, RisingEdge, Timer
from cocotb.utils import get_sim_time
from cocotb.utils import get_sim_steps
from cocotbext.axi import (AxiLiteBus, AxiLiteMaster, AxiStreamBus, AxiStreamFrame, AxiStreamSink,
                           AxiStreamSource)
from cocotbext.axi.sparse_memory import SparseMemory

from zynqflow.spec import engine as E

from zynqflow.sim.world.pg021 import (ADDR, ADDR_MSB, CR_IOC_IRQ_EN, CR_RS, DMA_MAX_LENGTH, DMACR, DMASR,  # noqa: F401
                    FAULT_KINDS, LENGTH, S2MM_BASE, SR_DEC_ERR, SR_ERRORS, SR_HALTED, SR_IDLE, SR_INT_ERR,
                    SR_IOC_IRQ, SR_SLV_ERR, Pg021Channel, Pg021Dma)

ACCEL_TYPE = "zynqflow.org:hls:zq_top:1.0"
DMA_TYPE = "xilinx.com:ip:axi_dma:7.1"
INTC_TYPE = "xilinx.com:ip:axi_intc:4.1"
PS7_TYPE = "xilinx.com:ip:processing_system7:5.5"
REG_CYCLES = 2                      # clock cycles of a DMA register access (GP0 round trip, roughly)
IRQ_WAIT_CYCLES = 20000             # a SimInterrupt.wait() gives up after this many cycles (board: 1 s)
ALLOC_BASE = 0x1600_0000            # where SimAllocator places buffers (inside the engine's 512 MiB window)

# how Vitis HLS names the block-level registers of an s_axilite bundle in the .hwh
VITIS_CONTROL_NAMES = {"AP_CTRL": "CTRL", "GIE": "GIER", "IER": "IP_IER", "ISR": "IP_ISR"}


class SimBuffer(np.ndarray):
    """``pynq.allocate``'s buffer: a numpy array (what the CPU sees) with ``physical_address``
    in the simulated DDR ``memory``; ``flush()`` copies the array to DDR, ``invalidate()``
    copies DDR into the array, ``freebuffer()``. ``forget_flush``: ``flush()`` does nothing
    (a driver that forgot it, as a test of the driver)."""

    def __new__(cls, shape, dtype, address: int, memory, forget_flush: bool = False):
        obj = np.zeros(shape, dtype).view(cls)
        obj.physical_address = address
        obj.device_address = address
        obj._mem = memory
        obj._forget_flush = forget_flush
        obj._freed = False
        return obj

    def __array_finalize__(self, obj):
        if obj is None:
            return
        # views and slices share nothing with the DMA: only the allocated array is a DMA buffer
        self.physical_address = getattr(obj, "physical_address", None)
        self.device_address = self.physical_address
        self._mem = None
        self._forget_flush = False
        self._freed = False

    def _check(self):
        if self._mem is None:
            raise RuntimeError("not a DMA buffer (a view or slice of one): pass the allocated array")
        if self._freed:
            raise RuntimeError("DMA buffer used after freebuffer()")

    def flush(self):
        """CPU -> DDR (what the MM2S DMA and the engine read)."""
        self._check()
        if not self._forget_flush:
            self._mem.write(self.physical_address, np.ascontiguousarray(self).tobytes())

    def invalidate(self):
        """DDR -> CPU (what the S2MM DMA or the engine wrote becomes visible)."""
        self._check()
        data = self._mem.read(self.physical_address, self.nbytes)
        np.copyto(self, np.frombuffer(data, self.dtype).reshape(self.shape))

    def freebuffer(self):
        if not self._freed and getattr(self, "_on_free", None) is not None:
            self._on_free(self)
        self._freed = True

    close = freebuffer

    @property
    def cacheable(self) -> bool:
        return True


class SimAllocator:
    """``pynq.allocate(shape, dtype)``: buffers in ``memory`` (the simulated DDR; a private
    sparse memory if none is given) from ``base`` up, each starting on an ``align`` boundary
    (pynq's CMA buffers are page aligned). Freed buffers' addresses are handed out again (first
    fit, as the CMA allocator does): a DMA transfer left posted on a freed buffer writes into
    whatever the next ``allocate()`` returned there. ``forget_flush_bytes``: buffers of exactly
    that size ignore ``flush()`` (a driver that forgot to flush them)."""

    def __init__(self, memory=None, base: int = ALLOC_BASE, align: int = 0x1000,
                 forget_flush_bytes: int | None = None, reuse: bool = True):
        self.mem = memory if memory is not None else SparseMemory(1 << 32)
        self.base = self.next = base
        self.align = align
        self.forget_flush_bytes = forget_flush_bytes
        self.reuse = reuse
        self.live: list[SimBuffer] = []
        self.log: list[tuple[str, int, int]] = []      # ("alloc" | "free", address, bytes)

    def _span(self, nbytes: int) -> int:
        return -(-max(nbytes, 1) // self.align) * self.align

    def _place(self, nbytes: int) -> int:
        span = self._span(nbytes)
        if self.reuse:
            taken = sorted((b.physical_address, b.physical_address + self._span(b.nbytes))
                           for b in self.live if not b._freed)
            at = self.base
            for lo, hi in taken:
                if at + span <= lo:
                    return at
                at = max(at, hi)
            self.next = max(self.next, at + span)
            return at
        at = self.next
        self.next += span
        return at

    def __call__(self, shape, dtype=np.uint32, target=None, **kwargs) -> SimBuffer:
        dt = np.dtype(dtype)
        nbytes = int(np.prod(shape)) * dt.itemsize
        b = SimBuffer(shape, dt, self._place(nbytes), self.mem, forget_flush=nbytes == self.forget_flush_bytes)
        b._on_free = self._freed
        self.live = [x for x in self.live if not x._freed]
        self.live.append(b)
        self.log.append(("alloc", b.physical_address, b.nbytes))
        return b

    def _freed(self, b) -> None:
        self.log.append(("free", b.physical_address, b.nbytes))

    def lookup(self, address: int, nbytes: int):
        """The live buffer holding [address, address + nbytes), and the offset in it; None if none
        does (the DMA would read or write memory nobody allocated: a decode error here)."""
        for b in self.live:
            off = address - b.physical_address
            if not b._freed and 0 <= off and off + nbytes <= b.nbytes:
                return b, off
        return None


class _Sim:
    """Runs coroutines in the simulation from the driver's thread; keeps the time and
    the wall time spent in the simulator."""

    def __init__(self, clk, period_ns: float):
        self.clk = clk
        self.period_ns = period_ns
        self.t_ns = 0.0
        self.wall = 0.0
        self.calls = 0

    def call(self, afn, *args):
        async def wrapped():
            r = await afn(*args)
            self.t_ns = get_sim_time("ns")
            return r
        t = time.perf_counter()
        try:
            return resume(wrapped)()
        finally:
            self.wall += time.perf_counter() - t
            self.calls += 1

    async def cycles(self, n: float):
        """``n`` clock periods (one timer, not a callback per clock edge)."""
        await Timer(max(1.0, n) * self.period_ns, "ns")


class SimMMIO:
    """``pynq.MMIO`` over an AXI4-Lite master."""

    def __init__(self, sim: _Sim, master: AxiLiteMaster, base: int = 0):
        self._sim, self._m, self.base_addr = sim, master, base
        self.reads = 0
        self.writes = 0

    def read(self, offset: int = 0, length: int = 4) -> int:
        if length != 4:
            raise ValueError("only 32-bit reads")
        self.reads += 1
        return self._sim.call(self._m.read_dword, offset)

    def write(self, offset: int, value: int) -> None:
        self.writes += 1
        self._sim.call(self._m.write_dword, offset, int(value) & 0xFFFFFFFF)


class SimInterrupt:
    """``pynq.interrupt.Interrupt``: ``await wait()`` returns once the line is high (level
    sensitive, as behind an axi_intc), and only then: a channel whose error does not raise its
    line (pynq enables only IOC_IrqEn) is not noticed here. On the board the caller's
    ``asyncio.wait_for`` gives up after its timeout (up to 1 s); here the simulation runs until the
    line rises or for at most ``IRQ_WAIT_CYCLES`` (counted in ``timeouts``: a wait the board would
    have sat through)."""

    def __init__(self, sim: _Sim, name: str, level, edge):
        self._sim, self.name = sim, name
        self._level, self._edge = level, edge      # () -> bool ; () -> trigger
        self.waits = 0
        self.fired = 0
        self.timeouts = 0

    async def wait(self):
        self.waits += 1
        if self._sim.call(self._until_high):
            self.fired += 1
        else:
            self.timeouts += 1
        await asyncio.sleep(0)                     # let the driver's event loop run

    async def _until_high(self) -> bool:
        end = get_sim_time("ns") + IRQ_WAIT_CYCLES * self._sim.period_ns
        while not self._level():
            left = end - get_sim_time("ns")
            if left <= 0:
                return False
            await First(self._edge(), Timer(left, "ns"))
        return True


# ---- the AXI DMA ---------------------------------------------------------------------
class _DmaChannel(Pg021Channel):
    """One channel of :class:`SimAxiDma`: PG021's registers and a data mover in the simulation."""

    def __init__(self, dma: "SimAxiDma", name: str, port):
        self.port = port
        self.posted = False        # S2MM: a transfer is waiting for data (TREADY allowed)
        self.changed = Event()     # completion, error or reset: wakes pollers
        self.irq_event = Event()   # the interrupt line went high
        self.task = None
        super().__init__(dma, name)

    def irq_edge(self):
        """A trigger for the next rise of the interrupt line."""
        self.irq_event.clear()
        return self.irq_event.wait()

    def _changed(self):
        self.changed.set()
        if self.irq:
            self.irq_event.set()

    def _launch(self, fault):
        self.changed.clear()
        self.task = cocotb.start_soon(self._mm2s(fault) if self.tx else self._s2mm(fault))

    async def _beats(self, n: int):
        """Until ``n`` beats of the MM2S stream have been accepted by the engine."""
        valid, ready, clk = self.dma.in_valid, self.dma.in_ready, self.dma.sim.clk
        seen = 0
        while seen < n:
            await RisingEdge(clk)
            try:
                seen += int(valid.value) & int(ready.value)
            except ValueError:
                pass

    def _memory(self) -> bool:
        """The programmed address and length fall in an allocated buffer; else a decode error
        (the DMA would read or write memory nobody allocated) and False."""
        if self.dma.allocator.lookup(self.addr, self.length) is None:
            self._error(SR_DEC_ERR)
            return False
        return True

    async def _mm2s(self, fault):
        if not self._memory():
            return
        data = self.dma.allocator.mem.read(self.addr, self.length)
        src: AxiStreamSource = self.port
        if fault is not None:
            beats = int(fault.get("beats") or 0)
            if beats:
                await src.send(AxiStreamFrame(data))
                await self._beats(beats)
                src.pause = True                     # the rest of the frame never goes out
            if fault["kind"] == "stall":
                await Event().wait()                 # busy until a soft reset cancels this task
            self._error(FAULT_KINDS[fault["kind"]])
            return
        await self.dma.charged(len(data))            # the DDR's shared bandwidth budget
        await src.send(AxiStreamFrame(data))
        await src.wait()
        self._complete(len(data))

    async def _out_beats(self, n: int):
        """Until ``n`` beats of the engine's output stream have been accepted."""
        sig = self.dma.out_valid, self.dma.out_ready
        clk, seen = self.dma.sim.clk, 0
        while seen < n:
            await RisingEdge(clk)
            try:
                seen += int(sig[0].value) & int(sig[1].value)
            except ValueError:
                pass

    async def _s2mm(self, fault):
        if not self._memory():
            return
        if fault is not None and fault["kind"] == "stall":
            await Event().wait()                     # TREADY never rises
        sink: AxiStreamSink = self.port
        beats = int((fault or {}).get("beats") or 0)
        if fault is not None and fault["kind"] in FAULT_KINDS and beats and self.dma.out_valid is not None:
            # the write of beat `beats` fails: the DMA halts mid-packet, TREADY drops, the engine
            # keeps the rest of its output frame (PG021: the channel stops; only a reset clears it)
            self.posted = True
            if not self.dma.gen_driven:
                sink.pause = False
            await self._out_beats(beats)
            sink.pause = True
            self.posted = False
            self.dma.mid_packet.append(beats)
            self._error(FAULT_KINDS[fault["kind"]])
            return
        self.posted = True
        if not self.dma.gen_driven:
            sink.pause = False
        frame = await sink.recv()
        self.posted = False
        if not self.dma.gen_driven:
            sink.pause = True
        data = bytes(frame.tdata)
        if fault is not None and fault["kind"] in FAULT_KINDS:     # the write to memory failed
            self._error(FAULT_KINDS[fault["kind"]])
            return
        n = min(len(data), self.length)
        await self.dma.charged(n)                    # the DDR's shared bandwidth budget
        self.dma.written(self, n)                    # into a buffer freed while posted: recorded
        self.dma.allocator.mem.write(self.addr, data[:n])
        if len(data) > self.length:                  # the packet is longer than LENGTH
            self._error(SR_INT_ERR)
            return
        if fault is not None:                        # another agent, between two frames
            await self.dma.tamper(fault)
        self._complete(n)


class SimAxiDma(Pg021Dma):
    """The AXI DMA (PG021, direct register mode: :class:`zynqflow.sim.world.pg021.Pg021Dma`) with two data
    movers on the RTL's streams. ``read``/``write`` run in the simulation (``SimDmaMMIO`` calls them
    from the driver)."""

    def __init__(self, sim: _Sim, source: AxiStreamSource, sink: AxiStreamSink, allocator: SimAllocator,
                 in_valid, in_ready, faults=(), poll_cycles: int = 256, reset_cycles: int = 16,
                 gen_driven: bool = False, tamper=None, out_valid=None, out_ready=None,
                 busy_reset_cycles: int = 600, charge=None):
        super().__init__(allocator, faults)
        self.sim, self.source, self.sink = sim, source, sink
        self.in_valid, self.in_ready = in_valid, in_ready
        self.out_valid, self.out_ready = out_valid, out_ready
        # PG021: a soft reset ends gracefully, finishing what the data movers have in flight: it
        # takes reset_cycles, plus busy_reset_cycles when a channel was mid-transfer
        self.poll_cycles, self.reset_cycles, self.busy_reset_cycles = poll_cycles, reset_cycles, busy_reset_cycles
        # charge(nbytes): the DDR model's shared bandwidth budget (sync or awaitable), one call per packet
        self.charge = charge
        self.gen_driven = gen_driven
        self.tamper = tamper                 # async (fault) -> None: SimOverlay's, for TAMPER_KINDS
        if self.faults and gen_driven:
            raise ValueError("DMA faults and backpressure do not combine (both drive the stream pause)")
        self.mm2s = _DmaChannel(self, "mm2s", source)
        self.s2mm = _DmaChannel(self, "s2mm", sink)

    def now_ns(self) -> float:
        return get_sim_time("ns")

    async def charged(self, nbytes: int) -> None:
        """One DMA packet's bytes on the DDR's shared bandwidth budget (``charge``, sync or async)."""
        if self.charge is not None:
            r = self.charge(nbytes)
            if inspect.isawaitable(r):
                await r

    async def read(self, offset: int) -> int:
        ch, off = self._channel(offset)
        if off == DMASR and ch.busy and not self.resetting:
            # a poll of a busy channel: run until it changes or poll_cycles pass
            await First(ch.changed.wait(), Timer(self.poll_cycles * self.sim.period_ns, "ns"))
        else:
            await self.sim.cycles(REG_CYCLES)
        return ch.read(off)

    async def write(self, offset: int, value: int) -> None:
        await self.sim.cycles(REG_CYCLES)
        ch, off = self._channel(offset)
        ch.write(off, int(value) & 0xFFFFFFFF)

    def soft_reset(self):
        if not self.resetting:
            self.resetting = True
            self.resets += 1
            cocotb.start_soon(self._reset())

    async def _reset(self):
        busy = any(ch.busy for ch in (self.mm2s, self.s2mm))
        for ch in (self.mm2s, self.s2mm):
            if ch.task is not None and not ch.task.done():
                ch.task.cancel()
            ch.task = None
        for bfm in (self.source, self.sink):         # drop what the stream ports were in the middle of
            bfm.assert_reset(True)
            bfm.clear()
        await ClockCycles(self.sim.clk, self.reset_cycles + (self.busy_reset_cycles if busy else 0))
        for bfm in (self.source, self.sink):
            bfm.assert_reset(False)
        if not self.gen_driven:
            self.source.pause = False
            self.sink.pause = True
        for ch in (self.mm2s, self.s2mm):
            ch.reset_registers()
            ch.posted = False
            ch.changed.set()
        self.resetting = False

    def pl_reset(self):
        """The PL reset (``axi_resetn``, with the engine's ``ap_rst_n``): transfers dropped, both
        channels halted with their reset values, as after loading the bitstream."""
        for ch in (self.mm2s, self.s2mm):
            if ch.task is not None and not ch.task.done():
                ch.task.cancel()
            ch.task = None
            ch.reset_registers()
            ch.posted = False
            ch.changed.set()
        if not self.gen_driven:
            self.sink.pause = True


class SimDmaMMIO:
    """``pynq.MMIO`` of the AXI DMA's register space (what pynq's DMA driver holds as ``mmio``)."""

    def __init__(self, sim: _Sim, model: SimAxiDma):
        self._sim, self.model = sim, model
        self.reads = 0
        self.writes = 0

    def read(self, offset: int = 0, length: int = 4) -> int:
        self.reads += 1
        return self._sim.call(self.model.read, offset)

    def write(self, offset: int, value: int) -> None:
        self.writes += 1
        self._sim.call(self.model.write, offset, value)
        if self.model.pending_sigint:               # fault "sigint": the user pressed Ctrl-C here
            self.model.pending_sigint = False
            raise KeyboardInterrupt("injected Ctrl-C (DMA fault 'sigint')")


class SimDMAChannel:
    """pynq 3.x ``pynq.lib.dma._SDMAChannel`` (direct register mode), for machines without
    pynq: the same register accesses, checks and messages. With pynq installed the shim
    uses pynq's own class instead."""

    def __init__(self, mmio, max_size: int, width: int, tx_rx: int, dre: bool, interrupt=None):
        self._mmio, self._interrupt, self._max_size = mmio, interrupt, max_size
        self._align, self._dre = width, dre
        self._tx = tx_rx == 1
        self._offset = 0 if self._tx else S2MM_BASE
        self._active_buffer = None
        self._first_transfer = True
        self.transferred = 0
        self.start()

    def _sr(self) -> int:
        return self._mmio.read(self._offset + DMASR)

    @property
    def running(self) -> bool:
        return self._sr() & SR_HALTED == 0

    @property
    def idle(self) -> bool:
        return self._sr() & SR_IDLE == SR_IDLE

    @property
    def error(self) -> bool:
        return self._sr() & SR_ERRORS != 0

    def start(self):
        self._mmio.write(self._offset + DMACR, CR_RS | (CR_IOC_IRQ_EN if self._interrupt else 0))
        while not self.running:
            pass
        self._first_transfer = True

    def stop(self):
        self._mmio.write(self._offset + DMACR, 0)
        while self.running:
            pass

    def _clear_interrupt(self):
        self._mmio.write(self._offset + DMASR, SR_IOC_IRQ)

    def transfer(self, array, start: int = 0, nbytes: int = 0):
        if not self.running:
            raise RuntimeError("DMA channel not started")
        if not self.idle and not self._first_transfer:
            raise RuntimeError("DMA channel not idle")
        if nbytes == 0:
            nbytes = array.nbytes - start
        if nbytes > self._max_size:
            raise ValueError(f"Transfer size is {nbytes} bytes, which exceeds the maximum DMA buffer size "
                             f"{self._max_size}.")
        if not self._dre and (array.physical_address + start) % self._align:
            raise RuntimeError("DMA does not support unaligned transfers; Starting address must be aligned "
                               f"to {self._align} bytes.")
        if self._tx:
            array.flush()
        self.transferred = 0
        addr = array.physical_address + start
        self._mmio.write(self._offset + ADDR, addr & 0xFFFFFFFF)
        self._mmio.write(self._offset + ADDR_MSB, (addr >> 32) & 0xFFFFFFFF)
        self._mmio.write(self._offset + LENGTH, nbytes)
        self._active_buffer = array
        self._first_transfer = False

    def _finish(self):
        if not self._tx:
            self._active_buffer.invalidate()
        self.transferred = self._mmio.read(self._offset + LENGTH)
        self._active_buffer = None

    def wait(self):
        if not self.running:
            raise RuntimeError("DMA channel not started")
        while True:
            sr = self._sr()
            if sr & SR_ERRORS:
                if sr & SR_INT_ERR:
                    raise RuntimeError("DMA Internal Error (transfer length 0?)")
                if sr & SR_SLV_ERR:
                    raise RuntimeError("DMA Slave Error (cannot access memory map interface)")
                raise RuntimeError("DMA Decode Error (invalid address)")
            if sr & SR_IDLE:
                break
        self._finish()

    async def wait_async(self):
        if not self.running:
            raise RuntimeError("DMA channel not started")
        while not self.idle:
            await self._interrupt.wait()
        self._clear_interrupt()
        self._finish()


def _pynq_channel_class():
    """pynq's own simple-mode DMA channel driver, if pynq imports here."""
    try:
        from pynq.lib.dma import _SDMAChannel
    except Exception:  # noqa: BLE001 - pynq absent or unusable: the shim's port of it
        return None
    return _SDMAChannel


class SimDMA:
    """``overlay.axi_dma_0`` (``pynq.lib.dma.DMA``): ``sendchannel``/``recvchannel`` built as
    pynq builds them (max length 2^23-1, 4-byte beats, no DRE, the channel's interrupt when
    wired), on the register model. Constructed from the driver's thread: the channels'
    constructors already access the registers (``start()``)."""

    def __init__(self, sim: _Sim, model: SimAxiDma, use_pynq: bool = False, interrupts: bool = True):
        self.mmio = SimDmaMMIO(sim, model)
        self.model = model
        cls = (_pynq_channel_class() if use_pynq else None) or SimDMAChannel
        self.channel_class = f"{cls.__module__}.{cls.__qualname__}"
        self.mm2s_introut = self.s2mm_introut = None
        if interrupts:
            for ch in (model.mm2s, model.s2mm):
                setattr(self, f"{ch.name}_introut",
                        SimInterrupt(sim, f"axi_dma_0/{ch.name}_introut", lambda c=ch: c.irq,
                                     lambda c=ch: c.irq_edge()))
        self.sendchannel = cls(self.mmio, DMA_MAX_LENGTH, 4, 1, False, self.mm2s_introut)
        self.recvchannel = cls(self.mmio, DMA_MAX_LENGTH, 4, 0, False, self.s2mm_introut)
        self.buffer_max_size = DMA_MAX_LENGTH


class SimIP:
    """``overlay.zq_top_0``: a DefaultIP with ``mmio``, ``read``, ``write`` and, when wired,
    ``interrupt``."""

    def __init__(self, mmio: SimMMIO, interrupt: SimInterrupt | None = None):
        self.mmio = mmio
        if interrupt is not None:
            self.interrupt = interrupt

    def read(self, offset: int = 0) -> int:
        return self.mmio.read(offset)

    def write(self, offset: int, value: int) -> None:
        self.mmio.write(offset, value)


def zynq_fclk(requested_mhz: float, source_mhz: float = 1000.0) -> tuple[float, int]:
    """What a Zynq-7000 FCLK gives for a request: the IO PLL (1000 MHz on the PYNQ-Z2)
    divided by two 6-bit divisors, the closest product (as pynq's Clocks setter picks).
    Returns (MHz, divisor product); with a 1000 MHz source the period is that many ns."""
    div = min((d0 * d1 for d0 in range(1, 64) for d1 in range(1, 64)),
              key=lambda d: (abs(source_mhz / d - requested_mhz), d))
    return round(source_mhz / div, 6), div


class SimClocks:
    """``pynq.ps.Clocks``: ``fclk0_mhz`` is the simulation clock's frequency; setting it
    restarts the clock at the closest frequency the Zynq divisors give (``on_change(period_ns)``
    is told, e.g. the DDR model's latency in cycles)."""

    def __init__(self, sim: _Sim, clock, on_change=None):
        self._sim, self._clock, self._on_change = sim, clock, on_change

    @property
    def fclk0_mhz(self) -> float:
        return round(1e3 / self._sim.period_ns, 6)

    @fclk0_mhz.setter
    def fclk0_mhz(self, mhz: float) -> None:
        if self._clock is None:
            raise RuntimeError("this simulation's clock cannot be changed")
        _, div = zynq_fclk(float(mhz))
        self._sim.call(self._restart, div)           # 1000 MHz / div: a period of div ns

    async def _restart(self, period_ns: int):
        from cocotb.clock import Clock

        await RisingEdge(self._sim.clk)
        old = self._clock
        old.stop()
        self._clock = Clock(old.signal, period_ns, unit="ns", impl=old.impl)
        self._clock.start(start_high=False)
        self._sim.period_ns = float(period_ns)
        if self._on_change is not None:
            self._on_change(float(period_ns))
        await RisingEdge(self._sim.clk)


def hwh_register_name(name: str) -> str:
    """How Vitis HLS names register ``name`` of :func:`zynqflow.spec.engine.offsets` in the ``.hwh``:
    CTRL, GIER, IP_IER, IP_ISR; a 64-bit argument ``wts`` as ``wts_1`` (low word) and its
    ``wts_hi`` as ``wts_2``; the others (``status``, ``status_ctrl``, ...) as they are."""
    if name in VITIS_CONTROL_NAMES:
        return VITIS_CONTROL_NAMES[name]
    if name in E.REG and E.REG[name].kind == "in64":
        return f"{name}_1"
    if name.endswith("_hi") and name[:-3] in E.REG and E.REG[name[:-3]].kind == "in64":
        return f"{name[:-3]}_2"
    return name


def vitis_hwh_registers(offsets: dict[str, int]) -> dict:
    """``ip_dict[...]["registers"]`` as pynq reads it from the ``.hwh`` of a Vitis HLS IP with
    these registers (:func:`hwh_register_name`)."""
    return {hwh_register_name(n): dict(address_offset=int(o), size=32, access="read-write", description=n,
                                       fields={})
            for n, o in offsets.items()}


class SimOverlay:
    """``pynq.Overlay`` look-alike around a ``zq_top`` DUT, with the DDR behind it: the engine's
    AXI4 masters ``m_axi_wts`` / ``m_axi_act`` on :class:`zynqflow.sim.world.ddr.Ddr` (the
    HP-port latency model), the AXI DMA and ``allocate`` on the same memory.

    ``engine``: ``"rtl"`` (the RTL twin) or ``"hls"`` (the Vitis export): which registers the
    ``.hwh`` would list. ``alloc``: :class:`SimAllocator` options (``base``, ``align``,
    ``forget_flush_bytes``).

    ``backpressure``: probability per cycle of a gap in the MM2S stream and of TREADY low
    on the S2MM stream while a transfer is posted (0 = none). ``faults``: DMA faults (module
    docstring). ``registers``: the accelerator's ``ip_dict`` registers (dict as pynq reads a
    ``.hwh``; None: none, as an overlay without register information). ``interrupts``: the
    accelerator's and the DMA's interrupt lines are wired (through an axi_intc on the board).
    ``clock``: the cocotb ``Clock`` driving ``ap_clk`` (lets ``clocks.fclk0_mhz`` set it).
    ``pynq_dma``: use pynq's own DMA channel driver (if pynq imports; importing it in a
    simulator process takes seconds), else the shim's port of it.
    ``memory``: the DDR's memory preset (spec.engine.MEMORY_PRESETS, or a MemoryModel; default
    ``$ZQ_MEMORY`` with ``$ZQ_MEMORY_OVERRIDES``, else ``ideal``). With a shared budget the DMA's
    DDR bytes (each packet it reads for MM2S or writes for S2MM, at its stream's rate) draw on it too."""

    def __init__(self, dut, period_ns: float = 10.0, backpressure: float = 0.0, seed: int = 1,
                 poll_cycles: int = 256, accel_name: str = "zq_top_0", dma_name: str = "axi_dma_0",
                 faults=(), registers: dict | None = None, interrupts: bool = True, clock=None,
                 pynq_dma: bool = False, engine: str = "rtl", alloc: dict | None = None, dma: dict | None = None,
                 omit_ips=(), memory=None):
        import json
        import os

        from zynqflow.sim.world.ddr import Ddr

        self.dut = dut
        clk, rst = dut.ap_clk, dut.ap_rst_n
        self._sim = _Sim(clk, period_ns)
        self.engine = engine
        overrides = json.loads(os.environ.get("ZQ_MEMORY_OVERRIDES", "{}")) if memory is None else {}
        self.ddr = Ddr(dut, clk, rst, get_sim_steps(period_ns, "ns"), model=memory or os.environ.get("ZQ_MEMORY", "ideal"),
                       **overrides)
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axi_control"), clk, rst, reset_active_level=False)
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_in"), clk, rst, reset_active_level=False)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_out"), clk, rst, reset_active_level=False)
        for lg in (self.source.log, self.sink.log, self.axil.write_if.log, self.axil.read_if.log):
            lg.setLevel("WARNING")
        self.sink.pause = True                       # no S2MM transfer posted yet
        self.mmio = SimMMIO(self._sim, self.axil)
        self.allocate = SimAllocator(self.ddr.mem, **(alloc or {}))
        self.dma_model = SimAxiDma(self._sim, self.source, self.sink, self.allocate, dut.s_axis_in_TVALID,
                                   dut.s_axis_in_TREADY, faults=faults, poll_cycles=poll_cycles,
                                   gen_driven=backpressure > 0, tamper=self._tamper, out_valid=dut.m_axis_out_TVALID,
                                   out_ready=dut.m_axis_out_TREADY, charge=getattr(self.ddr, "charge", None),
                                   **(dma or {}))
        self.tampered: list[dict] = []
        self._dma = None
        self._dma_name, self.use_pynq_dma, self._interrupts = dma_name, pynq_dma, interrupts
        self.clocks = SimClocks(self._sim, clock, on_change=self._period_changed)
        # pynq 3.x: clock_dict has the PS's divisors only (no frequency); the clock is in the .hwh's PS7
        # parameters (PCW_FPGA0_PERIPHERAL_FREQMHZ), which pynq's ip_dict carries
        _, div = zynq_fclk(1e3 / period_ns)
        d0 = next(d for d in range(1, 64) if div % d == 0 and div // d < 64)
        self.clock_dict = {i: {"enable": int(i == 0), "divisor0": d0 if i == 0 else 10,
                               "divisor1": div // d0 if i == 0 else 1} for i in range(4)}
        accel_irq = None
        if interrupts:
            accel_irq = SimInterrupt(self._sim, f"{accel_name}/interrupt", lambda: _high(dut.interrupt),
                                     lambda: RisingEdge(dut.interrupt))
        self.accel_irq = accel_irq
        acc = dict(type=ACCEL_TYPE, phys_addr=0x4000_0000, addr_range=1 << E.reg_addr_bits(engine),
                   fullpath=accel_name,
                   parameters={}, interrupts={"interrupt": {"controller": "axi_intc_0", "index": 0}}
                   if interrupts else {})
        if registers is not None:
            acc["registers"] = registers
        self.ip_dict = {
            accel_name: acc,
            dma_name: dict(type=DMA_TYPE, phys_addr=0x4040_0000, addr_range=0x10000, fullpath=dma_name,
                           parameters=dict(c_include_sg="0", c_sg_length_width="23", c_include_mm2s="1",
                                           c_include_s2mm="1", c_m_axi_mm2s_data_width="32",
                                           c_m_axi_s2mm_data_width="32"),
                           interrupts={p: {"controller": "axi_intc_0", "index": i}
                                       for i, p in ((1, "mm2s_introut"), (2, "s2mm_introut"))} if interrupts else {}),
        }
        # the Zynq PS as the .hwh describes it (the design's FCLK0, as bitstream.sh set it: 100 MHz)
        self.ip_dict["processing_system7_0"] = dict(type=PS7_TYPE, phys_addr=0, addr_range=0,
                                                    fullpath="processing_system7_0",
                                                    parameters=dict(PCW_FPGA0_PERIPHERAL_FREQMHZ="100",
                                                                    PCW_ACT_FPGA0_PERIPHERAL_FREQMHZ="100.000000"))
        if interrupts:
            self.ip_dict["axi_intc_0"] = dict(type=INTC_TYPE, phys_addr=0x4180_0000, addr_range=0x10000,
                                              fullpath="axi_intc_0", parameters={})
        for name in omit_ips:            # a design that lacks an IP (doctor's tests)
            self.ip_dict.pop(name, None)
        self.interrupt_controllers = {"axi_intc_0": {"parent": "", "index": 0}} if interrupts else {}
        self.interrupt_pins = ({f"{accel_name}/interrupt": {"controller": "axi_intc_0", "index": 0},
                                f"{dma_name}/mm2s_introut": {"controller": "axi_intc_0", "index": 1},
                                f"{dma_name}/s2mm_introut": {"controller": "axi_intc_0", "index": 2}}
                               if interrupts else {})
        setattr(self, accel_name, SimIP(self.mmio, accel_irq))
        if backpressure > 0:
            rng_in, rng_out = random.Random(seed), random.Random(seed + 1)
            p = float(backpressure)
            s2mm = self.dma_model.s2mm
            self.source.set_pause_generator(iter(lambda: rng_in.random() < p, None))
            self.sink.set_pause_generator(iter(lambda: (not s2mm.posted) or rng_out.random() < p, None))

    def __getattr__(self, name):
        # the DMA driver is built on first access, as pynq's overlay builds its drivers
        if name != "_dma_name" and name == self.__dict__.get("_dma_name"):
            if self._dma is None:
                self._dma = SimDMA(self._sim, self.dma_model, self.use_pynq_dma, self._interrupts)
            return self._dma
        raise AttributeError(name)

    def new_process(self) -> None:
        """Another process opens the loaded bitstream: pynq builds its IP drivers anew (the DMA
        channels' constructors start them); the hardware keeps its state."""
        self._dma = None

    @property
    def dma(self) -> SimDMA | None:
        """The DMA driver if the driver has opened it."""
        return self._dma

    def _period_changed(self, period_ns: float) -> None:
        for port in self.ddr.ports:                    # the DDR latency is counted in clock periods
            port.read._period = get_sim_steps(period_ns, "ns")

    async def _tamper(self, fault: dict) -> None:
        """Another agent between two frames (module docstring: Tampering)."""
        off = E.offsets(self.engine)
        if fault["kind"] == "wts_addr":
            await self.axil.write_dword(off["wts"], int(fault["value"]) & 0xFFFFFFFF)
        else:
            wts = int(await self.axil.read_dword(off["wts"])) | int(await self.axil.read_dword(off["wts_hi"])) << 32
            at = wts + 4 * [f.name for f in E.HEADER].index("net_id")
            self.ddr.mem.write(at, bytes([self.ddr.mem.read(at, 1)[0] ^ 0xFF]))
            await self.axil.write_dword(off["wts"], wts & 0xFFFFFFFF)    # as a stray writer would
        self.tampered.append(dict(fault, t_ns=get_sim_time("ns")))

    def raw_mmio(self, name: str):
        """An MMIO over an IP's register space without building its driver (``pynq.MMIO``)."""
        if name == self._dma_name:
            return SimDmaMMIO(self._sim, self.dma_model)
        return self.mmio

    def platform(self, source: str = "the RTL simulation", raw_mmio: bool = True, timing=None):
        """The objects beside this overlay (:class:`zynqflow.host.board.Platform`) for
        :func:`zynqflow.host.board.open_driver`: ``allocate``, the clock, simulated time, the
        simulator's wall time left out of the host's; ``raw_mmio=False``: no recovery of a DMA or
        engine left running on open."""
        from zynqflow.host.board import Platform

        return Platform(allocate=self.allocate, clocks=self.clocks, raw_mmio=self.raw_mmio if raw_mmio else None,
                        clock=self.now, timing=timing, outside_clock=self.sim_wall_seconds, source=source,
                        simulated=True)

    def now(self) -> float:
        """Simulated seconds (the driver's clock)."""
        return self._sim.t_ns * 1e-9

    def sim_wall_seconds(self) -> float:
        """Wall time spent inside the simulator so far (the driver leaves it out of host time)."""
        return self._sim.wall

    async def reset(self, cycles: int = 8):
        """ap_rst_n low for ``cycles`` (what downloading the bitstream does to the PL): the engine
        and the AXI DMA reset; the DDR keeps its contents."""
        self.dut.ap_rst_n.value = 0
        self.dma_model.pl_reset()
        await ClockCycles(self.dut.ap_clk, cycles)
        self.dut.ap_rst_n.value = 1
        await ClockCycles(self.dut.ap_clk, 4)
        self._sim.t_ns = get_sim_time("ns")


def _high(sig) -> bool:
    try:
        return bool(int(sig.value))
    except ValueError:
        return False
