"""A small PYNQ look-alike over cocotbext-axi, so that the board driver
(:class:`zynqflow.host.driver.ZqDriver`) runs unchanged against the RTL.

What the driver sees, and what is behind it here:

================================  ==========================================
PYNQ object                       simulation
================================  ==========================================
``pynq.Overlay``                  :class:`SimOverlay` (``ip_dict``, attributes
                                  ``zq_top_0`` and ``axi_dma_0``)
``ip.mmio.read/write``            :class:`SimMMIO`: ``AxiLiteMaster`` on
                                  ``s_axi_control``
``dma.sendchannel`` (MM2S)        :class:`SimDMAChannel`: ``AxiStreamSource``
                                  on ``s_axis_in``, one packet per transfer,
                                  TLAST on its last beat
``dma.recvchannel`` (S2MM)        :class:`SimDMAChannel`: ``AxiStreamSink`` on
                                  ``m_axis_out``; TREADY only while a transfer
                                  is posted; ends at TLAST
``pynq.allocate``                 :class:`SimAllocator` -> :class:`SimBuffer`
                                  (numpy array + a separate "DDR" copy:
                                  ``flush()`` copies to it, ``invalidate()``
                                  from it; the DMA only sees the DDR copy)
``time.monotonic``                :meth:`SimOverlay.now`: simulated seconds
================================  ==========================================

The driver is synchronous: a cocotb test runs it in a thread started with
``cocotb.task.bridge`` (formerly ``cocotb.external``) and every register
access or DMA poll here goes back into the simulation with
``cocotb.task.resume`` (formerly ``cocotb.function``); between two such calls
simulated time stands still. Polling ``idle`` advances the simulation until
the transfer completes or ``poll_cycles`` clock cycles pass, whichever comes
first (a poll loop that sleeps until the DMA interrupt or a timer).

Written for this project (cocotbpynq, GPL-3.0, is not used).
"""

from __future__ import annotations

import random

import numpy as np
from cocotb.task import resume
from cocotb.triggers import ClockCycles, Event, First, Timer
from cocotb.utils import get_sim_time
from cocotbext.axi import (AxiLiteBus, AxiLiteMaster, AxiStreamBus, AxiStreamFrame, AxiStreamSink,
                           AxiStreamSource)

ACCEL_TYPE = "zynqflow.org:hls:zq_top:1.0"
DMA_TYPE = "xilinx.com:ip:axi_dma:7.1"
DMASR_IDLE, DMASR_INTERR = 0x2, 0x10


class SimBuffer(np.ndarray):
    """``pynq.allocate``'s buffer: a numpy array with ``physical_address``,
    ``flush()`` / ``invalidate()`` (CPU cache <-> "DDR" copy) and ``freebuffer()``."""

    def __new__(cls, shape, dtype, address: int):
        obj = np.zeros(shape, dtype).view(cls)
        obj.physical_address = address
        obj.device_address = address
        obj._ddr = np.zeros(obj.nbytes, np.uint8)
        obj._freed = False
        return obj

    def __array_finalize__(self, obj):
        if obj is None:
            return
        # views and slices share nothing with the DMA: only the allocated array is a DMA buffer
        self.physical_address = getattr(obj, "physical_address", None)
        self.device_address = self.physical_address
        self._ddr = None
        self._freed = False

    def _check(self):
        if self._ddr is None:
            raise RuntimeError("not a DMA buffer (a view or slice of one): pass the allocated array")
        if self._freed:
            raise RuntimeError("DMA buffer used after freebuffer()")

    def flush(self):
        """CPU -> memory (what the MM2S DMA reads)."""
        self._check()
        self._ddr[:] = np.frombuffer(np.ascontiguousarray(self).tobytes(), np.uint8)

    def invalidate(self):
        """Memory -> CPU (what the S2MM DMA wrote becomes visible)."""
        self._check()
        np.copyto(self, np.frombuffer(self._ddr.tobytes(), self.dtype).reshape(self.shape))

    def freebuffer(self):
        self._freed = True

    close = freebuffer

    @property
    def cacheable(self) -> bool:
        return True


class SimAllocator:
    """``pynq.allocate(shape, dtype)``: 4 KiB-aligned fake physical addresses."""

    def __init__(self, base: int = 0x1600_0000):
        self.next = base
        self.live: list[SimBuffer] = []

    def __call__(self, shape, dtype=np.uint32, target=None, **kwargs) -> SimBuffer:
        b = SimBuffer(shape, np.dtype(dtype), self.next)
        self.next += (b.nbytes + 0xFFF) & ~0xFFF or 0x1000
        self.live.append(b)
        return b


class _Sim:
    """Runs coroutines in the simulation from the driver's thread; keeps the time."""

    def __init__(self, clk, period_ns: float):
        self.clk = clk
        self.period_ns = period_ns
        self.t_ns = 0.0

    def call(self, afn, *args):
        async def wrapped():
            r = await afn(*args)
            self.t_ns = get_sim_time("ns")
            return r
        return resume(wrapped)()


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


class SimIP:
    """``overlay.zq_top_0``: a DefaultIP with ``mmio``, ``read`` and ``write``."""

    def __init__(self, mmio: SimMMIO):
        self.mmio = mmio

    def read(self, offset: int = 0) -> int:
        return self.mmio.read(offset)

    def write(self, offset: int, value: int) -> None:
        self.mmio.write(offset, value)


class SimDMAChannel:
    """One channel of the AXI DMA in direct register mode (``pynq.lib.dma._SDMAChannel``)."""

    def __init__(self, sim: _Sim, port, tx: bool, max_size: int = (1 << 23) - 1, poll_cycles: int = 256):
        self._sim, self._port, self._tx = sim, port, tx
        self._max_size = max_size
        self.poll_cycles = poll_cycles
        self._running = True
        self._busy = False
        self._error = False
        self._done = Event()
        self._active = None
        self._task = None
        self.transferred = 0
        self.transfers = 0
        self.posted = False          # S2MM: a transfer is waiting for data (TREADY allowed)

    # -- the PYNQ API --
    @property
    def running(self) -> bool:
        return self._running

    @property
    def idle(self) -> bool:
        if not self._busy:
            return True
        return self._sim.call(self._poll)

    @property
    def error(self) -> bool:
        return self._error

    @property
    def status(self) -> str:
        """The DMASR bits this model has (idle, DMAIntErr), for messages."""
        return f"DMASR=0x{(0 if self._busy else DMASR_IDLE) | (DMASR_INTERR if self._error else 0):08x}"

    def start(self):
        self._running = True

    def stop(self):
        self._running = False

    def transfer(self, array, start: int = 0, nbytes: int = 0):
        if not self._running:
            raise RuntimeError("DMA channel not started")
        if self._busy:
            raise RuntimeError("DMA channel not idle")
        if not isinstance(array, SimBuffer) or array._ddr is None:
            raise RuntimeError("DMA transfers need a buffer from allocate()")
        if nbytes == 0:
            nbytes = array.nbytes - start
        if nbytes > self._max_size:
            raise ValueError(f"Transfer size is {nbytes} bytes, which exceeds the maximum DMA buffer size "
                             f"{self._max_size}.")
        if (array.physical_address + start) % 4:
            raise RuntimeError("DMA does not support unaligned transfers; Starting address must be aligned to 4 bytes.")
        self._busy, self._error = True, False
        self._done.clear()
        self.transferred = 0
        self._active = (array, start, nbytes)
        self.transfers += 1
        if self._tx:
            array.flush()                       # as pynq does for MM2S
            data = bytes(array._ddr[start:start + nbytes])
            self._sim.call(self._start, self._mm2s(data))
        else:
            self._sim.call(self._start, self._s2mm(array, start, nbytes))

    def wait(self):
        if not self._running:
            raise RuntimeError("DMA channel not started")
        if self._busy:
            self._sim.call(self._wait_done)
        if self._error:
            raise RuntimeError("DMA Internal Error (packet longer than the transfer?)")
        if not self._tx and self._active is not None:
            self._active[0].invalidate()        # as pynq does for S2MM
        self._active = None

    # -- inside the simulation --
    async def _start(self, coro):
        import cocotb
        self._task = cocotb.start_soon(coro)

    async def _poll(self):
        # one timer instead of ClockCycles (a Python callback per clock edge)
        await First(self._done.wait(), Timer(self.poll_cycles * self._sim.period_ns, "ns"))
        return not self._busy

    async def _wait_done(self):
        await self._done.wait()

    def _finish(self, n: int, error: bool = False):
        self.transferred = n
        self._error = error
        self._busy = False
        self._done.set()

    async def _mm2s(self, data: bytes):
        src: AxiStreamSource = self._port
        await src.send(AxiStreamFrame(data))
        await src.wait()
        self._finish(len(data))

    async def _s2mm(self, array: SimBuffer, start: int, nbytes: int):
        sink: AxiStreamSink = self._port
        self.posted = True
        if getattr(self, "_gen_driven", False) is False:
            sink.pause = False
        frame = await sink.recv()
        self.posted = False
        if getattr(self, "_gen_driven", False) is False:
            sink.pause = True
        data = bytes(frame.tdata)
        n = min(len(data), nbytes)
        array._ddr[start:start + n] = np.frombuffer(data[:n], np.uint8)
        self._finish(n, error=len(data) > nbytes)


class SimDMA:
    """``overlay.axi_dma_0``: ``sendchannel`` and ``recvchannel``."""

    def __init__(self, sendchannel: SimDMAChannel, recvchannel: SimDMAChannel):
        self.sendchannel, self.recvchannel = sendchannel, recvchannel


class SimOverlay:
    """``pynq.Overlay`` look-alike around a ``zq_top`` DUT.

    ``backpressure``: probability per cycle of a gap in the MM2S stream and of
    TREADY low on the S2MM stream while a transfer is posted (0 = none)."""

    def __init__(self, dut, period_ns: float = 10.0, backpressure: float = 0.0, seed: int = 1,
                 poll_cycles: int = 256, accel_name: str = "zq_top_0", dma_name: str = "axi_dma_0"):
        self.dut = dut
        clk, rst = dut.ap_clk, dut.ap_rst_n
        self._sim = _Sim(clk, period_ns)
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axi_control"), clk, rst, reset_active_level=False)
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_in"), clk, rst, reset_active_level=False)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_out"), clk, rst, reset_active_level=False)
        for lg in (self.source.log, self.sink.log, self.axil.write_if.log, self.axil.read_if.log):
            lg.setLevel("WARNING")
        self.sink.pause = True                       # no S2MM transfer posted yet
        self.mmio = SimMMIO(self._sim, self.axil)
        send = SimDMAChannel(self._sim, self.source, tx=True, poll_cycles=poll_cycles)
        recv = SimDMAChannel(self._sim, self.sink, tx=False, poll_cycles=poll_cycles)
        self.dma = SimDMA(send, recv)
        self.allocate = SimAllocator()
        self.ip_dict = {
            accel_name: dict(type=ACCEL_TYPE, phys_addr=0x4000_0000, addr_range=0x80, fullpath=accel_name),
            dma_name: dict(type=DMA_TYPE, phys_addr=0x4040_0000, addr_range=0x10000, fullpath=dma_name),
        }
        setattr(self, accel_name, SimIP(self.mmio))
        setattr(self, dma_name, self.dma)
        if backpressure > 0:
            rng_in, rng_out = random.Random(seed), random.Random(seed + 1)
            p = float(backpressure)
            self.source.set_pause_generator(iter(lambda: rng_in.random() < p, None))
            recv._gen_driven = True
            self.sink.set_pause_generator(iter(lambda: (not recv.posted) or rng_out.random() < p, None))

    def now(self) -> float:
        """Simulated seconds (the driver's clock)."""
        return self._sim.t_ns * 1e-9

    async def reset(self, cycles: int = 8):
        """ap_rst_n low for ``cycles`` (what downloading the bitstream does to the PL)."""
        self.dut.ap_rst_n.value = 0
        await ClockCycles(self.dut.ap_clk, cycles)
        self.dut.ap_rst_n.value = 1
        await ClockCycles(self.dut.ap_clk, 4)
        self._sim.t_ns = get_sim_time("ns")
