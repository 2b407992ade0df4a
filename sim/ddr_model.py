"""A DDR memory behind the engine's AXI4 masters, for cocotb testbenches.

cocotbext-axi's ``AxiRam`` answers one burst at a time and has no latency.
:class:`DdrPort` keeps its memory and its channel models but replaces the
read process with the HP-port model of :data:`zynqflow.spec.engine.MEMORY_MODEL`:
every read burst's first beat comes ``read_latency`` cycles after its address
was accepted, bursts overlap (at most ``max_reads`` outstanding), then one
beat per cycle. Writes are cocotbext-axi's (one beat per cycle, the response
after the last beat). Both ports of the engine (``m_axi_wts``, ``m_axi_act``)
share one :class:`cocotbext.axi.SparseMemory`, as both HP ports reach one DDR.

Fault injection: :meth:`DdrPort.fail_reads` / :meth:`fail_writes` make an
address range answer SLVERR (cocotbext-axi's behaviour when ``_read`` /
``_write`` raises); random ``ready``/``valid`` stalls on every channel come
from :meth:`set_stalls`.
"""

from __future__ import annotations

import collections
import logging
import random

import cocotb
from cocotb.triggers import ClockCycles, Event, RisingEdge
from cocotbext.axi import AxiBus, AxiRamRead, AxiRamWrite
from cocotbext.axi.sparse_memory import SparseMemory
from cocotbext.axi.constants import AxiResp

from zynqflow.spec.engine import MEMORY_MODEL, MemoryModel


class _Read(AxiRamRead):
    def __init__(self, *args, model: MemoryModel, **kw):
        super().__init__(*args, **kw)
        self.model = model
        self.fail: list[tuple[int, int]] = []
        self.ar_channel.queue_occupancy_limit = 2
        self.bursts = 0
        self.bytes = 0
        self._collector = None

    def _handle_reset(self, state):
        # cocotb kills the read process on reset; its address collector must go too
        if state and self._collector is not None:
            self._collector.kill()
            self._collector = None
        super()._handle_reset(state)

    async def _read(self, address, length):
        if any(lo <= address < hi for lo, hi in self.fail):
            raise IOError(f"injected read error at 0x{address:08x}")
        self.bytes += length
        return await super()._read(address, length)

    async def _process_read(self):
        pending: collections.deque = collections.deque()
        wake = Event()
        clk = self.clock

        async def collect():
            cycle = 0
            while True:
                while len(pending) >= self.model.max_reads:
                    await RisingEdge(clk)
                ar = await self.ar_channel.recv()
                self.bursts += 1
                pending.append((ar, cocotb.utils.get_sim_time("step")))
                wake.set()

        if self._collector is not None:
            self._collector.kill()
        self._collector = collector = cocotb.start_soon(collect())
        try:
            while True:
                while not pending:
                    wake.clear()
                    await wake.wait()
                ar, t_ar = pending[0]
                # first beat read_latency cycles after the address handshake
                period = self._period
                now = cocotb.utils.get_sim_time("step")
                wait = self.model.read_latency - int((now - t_ar) // period) if period else 0
                if wait > 0:
                    await ClockCycles(clk, wait)
                addr = int(ar.araddr)
                length = int(getattr(ar, "arlen", 0)) + 1
                size = int(getattr(ar, "arsize", self.max_burst_size))
                nb = 2 ** size
                assert 0x1000 - (addr & 0xFFF) >= nb * length, f"read burst at 0x{addr:08x} crosses 4 KiB"
                for n in range(length):
                    r = self.r_channel._transaction_obj()
                    r.rid = int(getattr(ar, "arid", 0))
                    r.rlast = n == length - 1
                    r.rresp = AxiResp.OKAY
                    word = ((addr + n * nb) // self.byte_lanes) * self.byte_lanes
                    try:
                        data = await self._read(word, self.byte_lanes)
                    except Exception:  # noqa: BLE001 - cocotbext-axi's convention: SLVERR
                        data = bytes(self.byte_lanes)
                        r.rresp = AxiResp.SLVERR
                    r.rdata = int.from_bytes(data, "little")
                    await self.r_channel.send(r)
                pending.popleft()
        finally:
            collector.kill()


class _Write(AxiRamWrite):
    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.fail: list[tuple[int, int]] = []
        self.bytes = 0

    async def _write(self, address, data):
        if any(lo <= address < hi for lo, hi in self.fail):
            raise IOError(f"injected write error at 0x{address:08x}")
        self.bytes += len(data)
        await super()._write(address, data)


class DdrPort:
    """One AXI4 master port of the DUT (prefix e.g. ``m_axi_wts``) on a shared memory."""

    def __init__(self, dut, prefix: str, clock, reset, mem: SparseMemory, period_steps: int,
                 model: MemoryModel = MEMORY_MODEL):
        bus = AxiBus.from_prefix(dut, prefix)
        for ch in ("ar", "r", "aw", "w", "b"):       # their start-up banners are noise in test logs
            logging.getLogger(f"cocotb.{dut._name}.{prefix}").setLevel(logging.WARNING)
        self.read = _Read(bus.read, clock, reset, reset_active_level=False, mem=mem, model=model)
        self.read._period = period_steps
        self.write = _Write(bus.write, clock, reset, reset_active_level=False, mem=mem)
        for lg in (self.read.log, self.write.log):
            lg.setLevel("WARNING")

    def fail_reads(self, lo: int, hi: int) -> None:
        self.read.fail.append((lo, hi))

    def fail_writes(self, lo: int, hi: int) -> None:
        self.write.fail.append((lo, hi))

    def clear_faults(self) -> None:
        self.read.fail.clear()
        self.write.fail.clear()

    def set_stalls(self, p: float, seed: int) -> None:
        """Random stalls with probability p per cycle on every channel (AR/R/AW/W/B)."""
        chans = [self.read.ar_channel, self.read.r_channel, self.write.aw_channel, self.write.w_channel,
                 self.write.b_channel]
        for i, ch in enumerate(chans):
            rng = random.Random(seed * 31 + i)
            if p > 0:
                ch.set_pause_generator(iter(lambda r=rng: r.random() < p, None))
            else:
                ch.clear_pause_generator()


class Ddr:
    """The DDR both masters see: one sparse memory, two ports."""

    def __init__(self, dut, clock, reset, period_steps: int, model: MemoryModel = MEMORY_MODEL,
                 size: int = 1 << 32):
        self.mem = SparseMemory(size)
        self.wts = DdrPort(dut, "m_axi_wts", clock, reset, self.mem, period_steps, model)
        self.act = DdrPort(dut, "m_axi_act", clock, reset, self.mem, period_steps, model)

    def load(self, address: int, data: bytes) -> None:
        self.mem.write(address, data)

    def read(self, address: int, length: int) -> bytes:
        return self.mem.read(address, length)
