"""The board driver against the HLS engine: the C-simulated engine (:mod:`zynqflow.sim.csim.runner`)
behind the control block Vitis generates for it (:class:`zynqflow.sim.world.vitis_ctrl.VitisControl`,
UG1399 ``ap_ctrl_hs``), an AXI DMA (:class:`zynqflow.sim.world.pg021.Pg021Dma`) and ``allocate()``
buffers in the engine's DDR, in one event-driven simulation (plain Python, no cocotb):

==============================  ===========================================================
PYNQ object                     here
==============================  ===========================================================
``pynq.Overlay``                :class:`HlsOverlay`: ``ip_dict`` read from a ``.hwh`` written as
                                Vitis/Vivado write one (:mod:`zynqflow.sim.world.vitis_hwh`: the
                                registers laid out from the HLS source's pragmas)
``ip.mmio``                     the control block: every access takes ``REG_CYCLES``
``overlay.axi_dma_0``           the shim's port of pynq's channel driver on the PG021 model
``pynq.allocate``               buffers in the C-sim library's DDR (the weight image, the
                                scratch area) or beside it (frames)
``time.monotonic``              :meth:`HlsOverlay.now`: simulated seconds
==============================  ===========================================================

The engine: a call starts when the control block's ``ap_start`` is set (it reads ``wts`` /
``act`` then); it takes the input stream's beats up to a TLAST (at one beat per cycle, only
while a call runs: the HLS top reads its stream inside the call), computes for the cycle
model's frame time (:meth:`Export.frame_cycles`, a model), puts its output frame on the stream,
and ends the call when the last beat is taken (outputs, ``ap_done``, ``ap_ready``). The C-sim
engine computes every frame bit for bit (``CSim.send_raw``: a one-beat frame is answered with
an error frame, a frame cut short by a DMA error is finished by the next TLAST).
"""

from __future__ import annotations

import numpy as np

from zynqflow.host.manifest import Export

from zynqflow.sim.world.pg021 import FAULT_KINDS, SR_INT_ERR, Pg021Channel, Pg021Dma
from zynqflow.sim.world.vitis_ctrl import VitisControl
from zynqflow.sim.world.vitis_hwh import hls_control_registers, read_hwh, write_hwh

REG_CYCLES = 2                  # an AXI4-Lite access through GP0, roughly
DMA_REG_CYCLES = 2
POLL_CYCLES = 256               # a DMASR poll of a busy channel lets this much time pass (as the shim)
IRQ_WAIT_CYCLES = 20000         # an interrupt wait gives up after this many cycles (as the shim's; board: 1 s)
RESET_CYCLES, BUSY_RESET_CYCLES = 16, 600
OUT_NAMES = ("status", "frames_done", "net_id", "build_params", "engine_info")


class CsimMemory:
    """The C-sim library's DDR (``[0, ddr_bytes)``, where the engine reads and writes) and a sparse
    memory above it (frame buffers only the DMA touches)."""

    def __init__(self, csim):
        from cocotbext.axi.sparse_memory import SparseMemory

        self.csim, self.limit, self.other = csim, csim.ddr_bytes, SparseMemory(1 << 32)

    def write(self, addr: int, data: bytes) -> None:
        n = max(0, min(len(data), self.limit - addr))
        if n:
            self.csim.ddr_write(addr, data[:n])
        if n < len(data):
            self.other.write(addr + n, bytes(data[n:]))

    def read(self, addr: int, length: int) -> bytes:
        n = max(0, min(length, self.limit - addr))
        return (self.csim.ddr_read(addr, n) if n else b"") + (self.other.read(addr + n, length - n)
                                                              if n < length else b"")


class _Channel(Pg021Channel):
    def __init__(self, dma, name):
        self.job = None                        # (fault, bytes moved so far)
        super().__init__(dma, name)

    def _launch(self, fault):
        self.job = dict(fault=fault, t=self.dma.dev.t)


class HlsDma(Pg021Dma):
    def __init__(self, dev, allocator, faults=()):
        super().__init__(allocator, faults, allow_tamper=False)
        self.dev = dev
        self.mm2s, self.s2mm = _Channel(self, "mm2s"), _Channel(self, "s2mm")
        self.reset_done_t = None

    def now_ns(self) -> float:
        return self.dev.t * self.dev.period_ns

    def soft_reset(self) -> None:
        if self.resetting:
            return
        busy = any(c.busy for c in (self.mm2s, self.s2mm))
        self.resetting, self.resets = True, self.resets + 1
        self.reset_done_t = self.dev.t + RESET_CYCLES + (BUSY_RESET_CYCLES if busy else 0)
        for c in (self.mm2s, self.s2mm):
            c.job = None


class HlsDevice:
    """The engine, its control block and the DMA, advanced in clock cycles (``t``)."""

    def __init__(self, export: Export, csim, registers: dict, faults=(), period_ns: float = 10.0,
                 generation: str = "2023.2", host_cycles: int = 0, out_fifo_frames: int = 0):
        from zynqflow.sim.world.pynq_shim import SimAllocator

        self.export, self.csim, self.period_ns = export, csim, period_ns
        self.t = 0
        self.host_cycles = int(host_cycles)
        self.out_fifo_frames = int(out_fifo_frames)  # an AXI4-Stream FIFO between m_axis_out and the S2MM
        self.out_fifo: list[list[int]] = []          # output frames in it, not yet taken by the S2MM
        self.ctrl = VitisControl(registers, generation)
        self.allocate = SimAllocator(CsimMemory(csim), base=csim.default_bases["wts"])
        self.dma = HlsDma(self, self.allocate, faults)
        self.frame_cycles = export.frame_cycles()
        self.in_words: list[tuple[int, bool]] = []   # the engine's input stream (words, TLAST)
        self.in_taken = 0                            # words of the current MM2S transfer taken
        self.out_words: list[int] = []               # the current output frame, not yet taken
        self.out_ready_t = None                      # when the output frame is on the stream
        self.outputs: dict = {}
        self.calls = 0

    # ---- time ---------------------------------------------------------------------------
    def advance(self, cycles: int) -> None:
        end = self.t + cycles
        while True:
            t = self._next_event()
            if t is None or t > end:
                break
            self.t = max(self.t, t)
            self._event()
        self.t = end

    def _next_event(self):
        cands = []
        d = self.dma
        if d.resetting:
            cands.append(d.reset_done_t)
        if self.ctrl.ap_start and not self.ctrl.running:
            cands.append(self.t)
        mm = d.mm2s
        if mm.busy and mm.job is not None and self.ctrl.running and self.out_ready_t is None:
            f = mm.job["fault"]
            if not (f and f["kind"] == "stall" and self.in_taken >= int(f.get("beats") or 0)):
                cands.append(max(self.t, mm.job["t"]) + 1)
        if self.out_ready_t is None and self.ctrl.running and any(last for _, last in self.in_words):
            cands.append(self.t)
        s2 = d.s2mm
        posted = s2.busy and s2.job is not None and not (s2.job["fault"] and s2.job["fault"]["kind"] == "stall")
        if self.out_fifo and posted:                                       # the FIFO's first frame out
            cands.append(max(self.t, s2.job["t"]) + 1)
        elif self.out_ready_t is not None and posted:                      # the engine's output, straight
            cands.append(max(self.t, self.out_ready_t, s2.job["t"]) + 1)
        if self.out_ready_t is not None and len(self.out_fifo) < self.out_fifo_frames and not (
                posted and not self.out_fifo):                             # the engine's output into the FIFO
            cands.append(max(self.t, self.out_ready_t) + 1)
        return min(cands) if cands else None

    def _event(self) -> None:
        d, ctrl = self.dma, self.ctrl
        if d.resetting and self.t >= d.reset_done_t:
            d.resetting = False
            for c in (d.mm2s, d.s2mm):
                c.reset_registers()
                c._changed()
            self.in_taken = 0
            return
        args = ctrl.take_start()
        if args is not None:                   # a call starts: the block reads its arguments
            self.calls += 1
            try:
                self.csim.set_bases(wts=args.get("wts", 0), act=args.get("act", 0))
                self.bases_ok = True
            except Exception:  # noqa: BLE001 - an address outside the simulated DDR
                self.bases_ok = False
            return
        mm = d.mm2s
        if mm.busy and mm.job is not None and ctrl.running and self.out_ready_t is None:
            self._mm2s_step(mm)
            return
        if self.out_ready_t is None and ctrl.running and any(last for _, last in self.in_words):
            self._compute()
            return
        s2 = d.s2mm
        posted = s2.busy and s2.job is not None
        if self.out_fifo and posted:
            self._s2mm_from_fifo(s2)
        elif self.out_ready_t is not None and posted:
            self._s2mm(s2)
        elif self.out_ready_t is not None and len(self.out_fifo) < self.out_fifo_frames and self.t >= self.out_ready_t:
            self.out_fifo.append(self.out_words)                           # the call ends: its output is out
            self.t += len(self.out_words)
            self._frame_done()

    # ---- the data movers and the engine ------------------------------------------------------
    def _mm2s_step(self, ch) -> None:
        """The MM2S transfer's beats into the engine, one per cycle (here: the rest at once, the time
        it takes counted), the last with TLAST; a fault ends it after ``beats``."""
        f = ch.job["fault"]
        n = ch.length // 4
        data = self.allocate.mem.read(ch.addr, ch.length)
        if self.allocate.lookup(ch.addr, ch.length) is None:
            ch._error(FAULT_KINDS["decode"])
            return
        stop = int(f.get("beats") or 0) if f else n
        words = np.frombuffer(data[: 4 * n], "<u4")
        take = words[self.in_taken:stop]
        self.in_words += [(int(w), self.in_taken + i == n - 1) for i, w in enumerate(take)]
        self.t += len(take)
        self.in_taken += len(take)
        if f is None:
            self.in_taken = 0
            ch._complete(ch.length)
        elif f["kind"] != "stall":
            self.in_taken = 0
            ch._error(FAULT_KINDS[f["kind"]])

    def _compute(self) -> None:
        k = next(i for i, (_, last) in enumerate(self.in_words) if last)
        frame, self.in_words = self.in_words[: k + 1], self.in_words[k + 1:]
        beats = np.array([w for w, _ in frame], np.uint32)
        last = np.array([lst for _, lst in frame], np.uint8)
        words = self.csim.send_raw(beats, last)
        regs = self.csim.registers()
        self.outputs = {n: regs[n] for n in OUT_NAMES}
        self.out_words = [int(w) & 0xFFFFFFFF for w in words[: self.export.num_classes]]
        self.out_ready_t = self.t + max(1, self.frame_cycles - len(frame))

    def _s2mm(self, ch) -> None:
        f = ch.job["fault"]
        nbytes = 4 * len(self.out_words)
        if f and f["kind"] in FAULT_KINDS and f.get("beats"):      # halted mid-packet: the rest stays
            b = int(f["beats"])
            self.dma.mid_packet.append(b)
            self.out_words = self.out_words[b:]
            self.t += b
            ch._error(FAULT_KINDS[f["kind"]])
            return
        if f and f["kind"] in FAULT_KINDS:                          # the packet taken, the write failed
            self.t += len(self.out_words)
            self._frame_done()
            ch._error(FAULT_KINDS[f["kind"]])
            return
        n = min(nbytes, ch.length)
        data = np.array(self.out_words, "<u4").tobytes()[:n]
        self.dma.written(ch, n)
        self.allocate.mem.write(ch.addr, data)
        self.t += len(self.out_words)
        self._frame_done()
        if nbytes > ch.length:
            ch._error(SR_INT_ERR)
        else:
            ch._complete(n)

    def _s2mm_from_fifo(self, ch) -> None:
        """The S2MM takes the FIFO's first frame (a fault-free transfer; faults act on the engine's own)."""
        words = self.out_fifo.pop(0)
        n = min(4 * len(words), ch.length)
        self.dma.written(ch, n)
        self.allocate.mem.write(ch.addr, np.array(words, "<u4").tobytes()[:n])
        self.t += len(words)
        ch._complete(n)

    def _frame_done(self) -> None:
        self.out_words, self.out_ready_t = [], None
        self.ctrl.finish(self.outputs)

    def pl_reset(self) -> None:
        """ap_rst_n (reloading the bitstream): the engine, its registers and the DMA reset; DDR kept."""
        self.csim.reset()
        self.ctrl.reset()
        for c in (self.dma.mm2s, self.dma.s2mm):
            c.reset_registers()
            c.job = None
        self.dma.resetting = False
        self.in_words, self.out_words, self.out_ready_t, self.in_taken = [], [], None, 0
        self.out_fifo = []


class _Mmio:
    """``pynq.MMIO`` of the engine's control block."""

    def __init__(self, dev: HlsDevice):
        self.dev = dev

    def read(self, offset: int = 0, length: int = 4) -> int:
        self.dev.advance(REG_CYCLES + self.dev.host_cycles)
        return self.dev.ctrl.read(offset)

    def write(self, offset: int, value: int) -> None:
        self.dev.advance(REG_CYCLES + self.dev.host_cycles)
        self.dev.ctrl.write(offset, value)


class _DmaMmio:
    """``pynq.MMIO`` of the AXI DMA: a DMASR poll of a busy channel lets time pass (a poll loop)."""

    def __init__(self, dev: HlsDevice):
        self.dev = dev

    def read(self, offset: int = 0, length: int = 4) -> int:
        ch, off = self.dev.dma._channel(offset)
        self.dev.advance((POLL_CYCLES if off == 0x04 and ch.busy else DMA_REG_CYCLES) + self.dev.host_cycles)
        return ch.read(off)

    def write(self, offset: int, value: int) -> None:
        self.dev.advance(DMA_REG_CYCLES + self.dev.host_cycles)
        ch, off = self.dev.dma._channel(offset)
        ch.write(off, int(value) & 0xFFFFFFFF)
        if self.dev.dma.pending_sigint:
            self.dev.dma.pending_sigint = False
            raise KeyboardInterrupt("injected Ctrl-C (DMA fault 'sigint')")


class _Dma:
    """``overlay.axi_dma_0``: pynq's channel driver (the shim's port of it) on the model, with the
    channels' interrupt lines when wired."""

    def __init__(self, dev: HlsDevice, interrupts: bool = True):
        from zynqflow.sim.world.pynq_shim import DMA_MAX_LENGTH, SimDMAChannel

        self.mmio = _DmaMmio(dev)
        irq = {c.name: HlsInterrupt(dev, lambda c=c: c.irq) if interrupts else None for c in (dev.dma.mm2s, dev.dma.s2mm)}
        self.sendchannel = SimDMAChannel(self.mmio, DMA_MAX_LENGTH, 4, 1, False, irq["mm2s"])
        self.recvchannel = SimDMAChannel(self.mmio, DMA_MAX_LENGTH, 4, 0, False, irq["s2mm"])


class _Clocks:
    def __init__(self, period_ns: float):
        self.fclk0_mhz = 1e3 / period_ns


class HlsInterrupt:
    """``pynq.interrupt.Interrupt`` on a line of the model (level sensitive, behind the axi_intc):
    ``await wait()`` runs the simulation until the line is high, or for at most
    ``IRQ_WAIT_CYCLES`` (counted in ``timeouts``: a wait the board's ``asyncio.wait_for`` gives up)."""

    def __init__(self, dev: "HlsDevice", level):
        self.dev, self._level = dev, level
        self.waits = self.fired = self.timeouts = 0

    async def wait(self):
        import asyncio

        self.waits += 1
        end = self.dev.t + IRQ_WAIT_CYCLES
        while not self._level() and self.dev.t < end:
            self.dev.advance(min(POLL_CYCLES, end - self.dev.t))
        if self._level():
            self.fired += 1
        else:
            self.timeouts += 1
        await asyncio.sleep(0)


class HlsOverlay:
    """``pynq.Overlay`` look-alike for the HLS engine (module docstring). ``hwh``: where to write the
    design's ``.hwh`` (read back into ``ip_dict`` as pynq does; pynq's own parser reads it too);
    ``faults``: DMA faults; ``generation``: the Vitis release whose control block the engine has
    (:data:`zynqflow.sim.world.vitis_ctrl.GENERATIONS`); ``interrupts``: the engine's and the DMA
    channels' interrupt lines wired (through the axi_intc, as ``board/pynq_z2.tcl`` does);
    ``host_cycles``: a slow host: every register access of the driver takes this many cycles
    (a Cortex-A9 late by a frame, preempted, or flushing caches); ``out_fifo_frames``: an
    AXI4-Stream FIFO of that many output frames between the engine's ``m_axis_out`` and the S2MM
    (as a user's block design may put there): the engine ends a call without an S2MM transfer posted."""

    def __init__(self, export: Export, hwh, faults=(), period_ns: float = 10.0, csim=None,
                 generation: str = "2023.2", interrupts: bool = True, host_cycles: int = 0,
                 out_fifo_frames: int = 0):
        from zynqflow.sim.csim.runner import CSim, ap_types_dir

        self.export = export
        self.csim = csim or CSim(export.dir)
        # the bitstream's design is the C-sim engine's network (which may differ from the driver's export)
        self.hwh = write_hwh(hwh, hls_control_registers(self.csim.export_dir, ap_types_dir()), interrupts=interrupts)
        self.ip_dict = read_hwh(self.hwh)
        self.clock_dict = {0: {"enable": 1, "divisor0": 10, "divisor1": 1}}
        self.device = HlsDevice(export, self.csim, self.ip_dict["zq_top_0"]["registers"], faults, period_ns,
                                generation=generation, host_cycles=host_cycles, out_fifo_frames=out_fifo_frames)
        self.clocks = _Clocks(period_ns)
        self.zq_top_0 = type("HlsIP", (), {})()
        self.zq_top_0.mmio = _Mmio(self.device)
        self._interrupts = interrupts
        if interrupts:
            self.zq_top_0.interrupt = HlsInterrupt(self.device, lambda: self.device.ctrl.interrupt)
        self._dma = None

    def __getattr__(self, name):
        if name == "axi_dma_0":           # built on first access, as pynq builds its drivers
            if self.__dict__.get("_dma") is None:
                self._dma = _Dma(self.device, self._interrupts)
            return self._dma
        raise AttributeError(name)

    def new_process(self) -> None:
        self._dma = None

    @property
    def allocate(self):
        return self.device.allocate

    def raw_mmio(self, name: str):
        return _DmaMmio(self.device) if name == "axi_dma_0" else self.zq_top_0.mmio

    def now(self) -> float:
        return self.device.t * self.device.period_ns * 1e-9

    def platform(self, raw_mmio: bool = True):
        """The objects beside this overlay (:class:`zynqflow.host.board.Platform`) for
        :func:`zynqflow.host.board.open_driver`."""
        from zynqflow.host.board import Platform

        return Platform(allocate=self.allocate, clocks=self.clocks, raw_mmio=self.raw_mmio if raw_mmio else None,
                        clock=self.now, source=f"HLS C-sim of {self.export.network} behind the Vitis control block",
                        simulated=True)


def open_hls(export: Export, hwh, faults=(), generation: str = "2023.2", interrupts: bool = True,
             host_cycles: int = 0, out_fifo_frames: int = 0, **driver_options):
    """:func:`zynqflow.host.board.open_driver` on an :class:`HlsOverlay`: (overlay, driver)."""
    from zynqflow.host.board import open_driver

    ol = HlsOverlay(export, hwh, faults, generation=generation, interrupts=interrupts, host_cycles=host_cycles,
                    out_fifo_frames=out_fifo_frames)
    drv = open_driver(export, ol, platform=ol.platform(), **{"min_timeout_s": 0.0, **driver_options})
    return ol, drv
