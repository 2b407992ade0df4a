"""The AXI DMA's two channels (PG021, simple mode): MM2S feeds ``s_axis_in``, S2MM takes
``m_axis_out``. pynq's own channel driver (``dma.sendchannel`` / ``dma.recvchannel``:
``transfer``, ``wait``, ``idle``, ``error``, ``running``, ``start``) does the transfers; this module
adds what pynq has no API for, with the registers written directly (the channel's ``_mmio`` and
``_offset``, PG021 direct register mode):

* errors: pynq's ``RuntimeError`` / ``ValueError`` become :class:`DmaError` with ``DMASR`` decoded;
* waits with deadlines, polled or on the channel's interrupt (:meth:`DmaChannels.wait`);
* error interrupts: pynq enables only the completion interrupt (``IOC_IrqEn``); a halted channel
  would then raise no interrupt and an asyncio wait would see the error only at its timeout.
  :meth:`DmaChannels.enable_error_interrupts` sets ``Err_IrqEn`` (DMACR bit 14) too;
* the soft reset (DMACR bit 2, either channel resets both; it reads 1 until the DMA has finished,
  which takes as long as the DMA needs to end what is in flight), waited for with a deadline;
* a DMA an earlier process left halted with an error or mid-transfer (:func:`reset_left_over`).
"""

from __future__ import annotations

import asyncio

from .errors import AcceleratorTimeout, DmaError, HostError

# PG021 direct register mode, relative to a channel's offset (MM2S 0x00, S2MM 0x30)
DMACR, DMASR, DMA_LENGTH = 0x00, 0x04, 0x28
S2MM_OFFSET = 0x30
DMACR_RS, DMACR_RESET, DMACR_IOC_IRQ_EN, DMACR_ERR_IRQ_EN = 0x1, 0x4, 0x1000, 0x4000
DMASR_HALTED, DMASR_IDLE, DMASR_ERRORS, DMASR_IOC, DMASR_ERR_IRQ = 0x1, 0x2, 0x70, 0x1000, 0x4000
DMASR_BITS = ((0, "Halted"), (1, "Idle"), (4, "DMAIntErr"), (5, "DMASlvErr"), (6, "DMADecErr"),
              (12, "IOC_Irq"), (14, "Err_Irq"))


def decode_dmasr(v: int) -> str:
    on = [n for b, n in DMASR_BITS if v >> b & 1]
    return f"DMASR=0x{v:08x} ({' '.join(on) if on else 'running, busy'})"


def at_frame(frame: int) -> str:
    return f" of frame {frame}" if frame >= 0 else ""


def soft_reset(m, off: int, now, timeout_s: float, idle_hook=None, source: str = "") -> int:
    """PG021 soft reset through MMIO ``m`` (DMACR bit 2 of either channel resets both), then wait
    until the bit reads 0 again (the DMA ends what it has in flight first). Returns the polls."""
    m.write(off + DMACR, DMACR_RESET)
    deadline = now() + timeout_s
    polls = 0
    while (v := int(m.read(off + DMACR))) & DMACR_RESET:
        polls += 1
        if now() > deadline:
            raise DmaError(f"the AXI DMA soft reset did not complete within {timeout_s:.3g} s (DMACR=0x{v:08x}); "
                           f"reload the bitstream ({source})")
        if idle_hook is not None:
            idle_hook()
    return polls


def reset_left_over(m, now, timeout_s: float, source: str = "") -> dict | None:
    """A DMA an earlier process left halted with an error (it stays so until a reset, and pynq's
    ``start()`` would wait for it for ever) or in the middle of a transfer (running, not idle: its
    S2MM would still write into memory that process freed): soft-reset it through ``m`` (an MMIO
    of the DMA without pynq's driver). Returns the DMASRs found when it did."""
    srs = [int(m.read(off + DMASR)) & 0xFFFFFFFF for off in (0x00, S2MM_OFFSET)]
    if any(sr & DMASR_ERRORS or not sr & DMASR_HALTED and not sr & DMASR_IDLE for sr in srs):
        soft_reset(m, 0, now, timeout_s, source=source)
        return dict(dmasr_mm2s=srs[0], dmasr_s2mm=srs[1])
    return None


class DmaChannels:
    """pynq's two channels of the AXI DMA (``dma``: ``overlay.axi_dma_0``), with the transfers
    counted, errors decoded, waits with deadlines and the soft reset.

    ``now``: the driver clock; ``timeout_s``: a wait's deadline; ``host_time``: a
    :class:`~zynqflow.host.stats.HostTime` (its ``part("wait")`` / ``part("dma")``);
    ``describe()``: the accelerator's registers as text, for the messages."""

    def __init__(self, dma, now, timeout_s: float, host_time, describe, source: str = "", idle_hook=None):
        self.send, self.recv = dma.sendchannel, dma.recvchannel
        self.now, self.timeout_s, self._tm, self._describe = now, timeout_s, host_time, describe
        self.source, self.idle_hook = source, idle_hook
        self.mm2s_transfers = self.s2mm_transfers = 0
        self.error_irqs = False
        self._in_flight: set[str] = set()     # channels with a transfer started and not waited for

    # ---- status -----------------------------------------------------------------
    @staticmethod
    def dmasr(ch) -> int | None:
        m, off = getattr(ch, "_mmio", None), getattr(ch, "_offset", None)
        if m is None or off is None:
            return None
        try:
            return int(m.read(off + DMASR)) & 0xFFFFFFFF
        except Exception:  # noqa: BLE001
            return None

    def status(self, ch) -> str:
        v = self.dmasr(ch)
        if v is not None:
            return decode_dmasr(v)
        st = getattr(ch, "status", None)
        return f"DMA {st}" if st else ""

    @property
    def has_interrupts(self) -> bool:
        return getattr(self.send, "_interrupt", None) is not None and getattr(self.recv, "_interrupt", None) is not None

    def posted(self) -> bool:
        """A transfer was started and not seen complete (nor dropped by a reset): the DMA may still
        read or write its buffer."""
        return bool(self._in_flight)

    # ---- calls into pynq: its errors become host errors --------------------------------
    def call(self, fn, ch, what: str, frame: int, *args):
        try:
            return fn(*args)
        except HostError:
            raise
        except (RuntimeError, ValueError) as e:
            sr = self.dmasr(ch)
            raise DmaError(f"AXI DMA {what}{at_frame(frame)}: pynq: {e} ({decode_dmasr(sr) if sr is not None else 'DMASR unreadable'}"
                           f"); accelerator {self._describe()}", sr) from e

    def transfer(self, ch, buf, what: str, frame: int) -> None:
        with self._tm.part("dma"):                    # pynq: register writes, and flush() for MM2S
            self.call(ch.transfer, ch, what, frame, buf)
        self._in_flight.add("mm2s" if ch is self.send else "s2mm")
        if ch is self.send:
            self.mm2s_transfers += 1
        else:
            self.s2mm_transfers += 1

    # ---- interrupts and waiting ---------------------------------------------------------
    def enable_error_interrupts(self) -> None:
        """DMACR Err_IrqEn on both channels (pynq's ``start()`` enables only IOC_IrqEn): a channel
        that halts with an error raises its interrupt, and an asyncio wait wakes at once."""
        for ch in (self.send, self.recv):
            m, off = getattr(ch, "_mmio", None), getattr(ch, "_offset", None)
            if m is None or off is None or getattr(ch, "_interrupt", None) is None:
                continue
            m.write(off + DMACR, int(m.read(off + DMACR)) | DMACR_ERR_IRQ_EN)
            self.error_irqs = True

    def _error(self, ch, what: str, frame: int) -> DmaError:
        sr = self.dmasr(ch)
        st = decode_dmasr(sr) if sr is not None else self.status(ch)
        return DmaError(f"AXI DMA {what} error{at_frame(frame).replace(' of ', ' at ')} ({st}); "
                        f"accelerator {self._describe()}", sr)

    async def sleep(self, irq, deadline: float, aio: bool) -> None:
        """Between two polls: the interrupt (asyncio), a yield (asyncio without one), or the idle hook."""
        if irq is not None:
            try:
                await asyncio.wait_for(irq.wait(), timeout=max(1e-3, min(1.0, deadline - self.now())))
            except asyncio.TimeoutError:
                pass
        elif aio:
            await asyncio.sleep(0)
        elif self.idle_hook is not None:
            self.idle_hook()

    async def wait(self, ch, what: str, frame: int, aio: bool = False, irq_on: bool = False,
                   quiet_s: float | None = None) -> bool:
        """Until ``ch``'s transfer completes, then pynq's ``wait()`` (S2MM: invalidate; ``transferred``).
        DMA error bits -> :class:`DmaError`; past the deadline -> :class:`AcceleratorTimeout`, or
        False with ``quiet_s`` (recovery: nothing came)."""
        irq = getattr(ch, "_interrupt", None) if aio and irq_on else None
        limit = self.timeout_s if quiet_s is None else quiet_s
        with self._tm.part("wait"):
            deadline = self.now() + limit
            while not ch.idle:
                if getattr(ch, "error", False):
                    raise self._error(ch, what, frame)
                if self.now() > deadline:
                    if quiet_s is not None:
                        return False
                    dma = self.status(ch)
                    raise AcceleratorTimeout(
                        f"timeout: the DMA {what} transfer{at_frame(frame)} did not complete within "
                        f"{limit:.3g} s ({self.source}); accelerator {self._describe()}"
                        f"{'; ' + dma if dma else ''}")
                await self.sleep(irq, deadline, aio)
        with self._tm.part("dma"):
            self.call(ch.wait, ch, what, frame)
            self._in_flight.discard("mm2s" if ch is self.send else "s2mm")
            if irq is not None:                       # the IOC interrupt is level: clear it
                ch._mmio.write(ch._offset + DMASR, DMASR_IOC)
        return True

    # ---- recovery --------------------------------------------------------------------
    def start(self) -> None:
        """Start both channels (pynq's ``start()``: RS, and IOC_IrqEn with an interrupt); pynq builds a
        DMA driver once per overlay, so after a reset behind its back its channels must be restarted."""
        for ch, name in ((self.send, "MM2S"), (self.recv, "S2MM")):
            self.call(ch.start, ch, f"{name} start", -1)
        if self.error_irqs:
            self.enable_error_interrupts()

    def reset(self) -> None:
        """Soft-reset the AXI DMA (both channels; what was in flight is dropped) and start both
        channels again (pynq has no API for it)."""
        m, off = getattr(self.send, "_mmio", None), getattr(self.send, "_offset", None)
        if m is None or off is None:
            raise DmaError("cannot reset the AXI DMA: its channels expose no registers (_mmio, _offset)")
        with self._tm.part("dma"):
            soft_reset(m, off, self.now, self.timeout_s, self.idle_hook, self.source)
            self._in_flight.clear()
            self.start()
