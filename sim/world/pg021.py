"""The AXI DMA's registers (PG021, direct register mode), as the hardware behaves: the part both
simulated DMAs share (the cocotb one in :mod:`zynqflow.sim.world.pynq_shim`, which moves the RTL's
streams, and the event-driven one in :mod:`zynqflow.sim.csim.hls_host`, which feeds the HLS C-sim).
They add the data movers: :meth:`Pg021Channel._launch` starts one, which ends it with
:meth:`Pg021Channel._complete` or :meth:`Pg021Channel._error`.

Each channel has DMACR (+0x00), DMASR (+0x04), the address (+0x18/+0x1C) and LENGTH (+0x28),
MM2S at 0x00 and S2MM at 0x30; writing LENGTH while running starts a transfer. DMASR: bit 0
Halted (after reset, and until RS is set), bit 1 Idle (set when a transfer completes; 0 after RS
is set until the first one does), bits 4/5/6 DMAIntErr/DMASlvErr/DMADecErr, bit 12 IOC_Irq, bit 14
Err_Irq (write 1 to clear). An error clears RS and halts the channel with the error bits set;
setting RS again does not restart it: only a soft reset (DMACR bit 2, either channel: both are
reset; the bit reads 1 until the reset is done) clears errors. The interrupt output is IOC_Irq
with IOC_IrqEn (DMACR bit 12) or Err_Irq with Err_IrqEn (bit 14).

Faults (``faults``, one dict each): ``{"channel": "mm2s"|"s2mm", "transfer": k, "kind":
"internal"|"slave"|"decode"|"stall"|"sigint", "beats": b}`` for the k-th transfer of that channel;
``wts_addr``/``weight_header`` tampering on S2MM (the cocotb shim's).
"""

from __future__ import annotations

DMA_MAX_LENGTH = (1 << 23) - 1      # c_sg_length_width 23 (board/pynq_z2.tcl)
DMACR, DMASR, ADDR, ADDR_MSB, LENGTH = 0x00, 0x04, 0x18, 0x1C, 0x28
S2MM_BASE = 0x30
CR_RS, CR_RESET, CR_IOC_IRQ_EN, CR_ERR_IRQ_EN = 0x1, 0x4, 0x1000, 0x4000
SR_HALTED, SR_IDLE, SR_INT_ERR, SR_SLV_ERR, SR_DEC_ERR = 0x1, 0x2, 0x10, 0x20, 0x40
SR_IOC_IRQ, SR_DLY_IRQ, SR_ERR_IRQ = 0x1000, 0x2000, 0x4000
SR_ERRORS = SR_INT_ERR | SR_SLV_ERR | SR_DEC_ERR
CR_RESET_VALUE, SR_RESET_VALUE = 0x0001_0000, 0x0001_0001     # IRQThreshold 1; halted
FAULT_KINDS = {"internal": SR_INT_ERR, "slave": SR_SLV_ERR, "decode": SR_DEC_ERR, "stall": 0}
TAMPER_KINDS = ("wts_addr", "weight_header")     # S2MM only: the engine's registers / DDR between frames


class Pg021Channel:
    """One channel's registers; ``dma``: its :class:`Pg021Dma`."""

    def __init__(self, dma: "Pg021Dma", name: str):
        self.dma, self.name = dma, name
        self.tx = name == "mm2s"
        self.transfers = 0         # transfers started (LENGTH writes while running)
        self.errors = 0            # transfers ended by an error
        self.ignored_writes = 0    # LENGTH written while halted or busy (a driver bug on a board)
        self.t_error_ns = None     # time of the last error
        self.reset_registers()

    def reset_registers(self):
        self.cr, self.sr, self.addr, self.length, self.busy = CR_RESET_VALUE, SR_RESET_VALUE, 0, 0, False

    @property
    def irq(self) -> bool:
        """The channel's interrupt output (mm2s_introut / s2mm_introut): IOC_Irq with IOC_IrqEn,
        Err_Irq with Err_IrqEn (pynq's start() enables only IOC_IrqEn)."""
        return bool((self.sr & SR_IOC_IRQ and self.cr & CR_IOC_IRQ_EN) or
                    (self.sr & SR_ERR_IRQ and self.cr & CR_ERR_IRQ_EN))

    # hooks for the data mover's world
    def _changed(self) -> None:
        """Completion, error or reset (wake pollers; the interrupt line may have risen)."""

    def _launch(self, fault: dict | None) -> None:
        raise NotImplementedError

    def read(self, off: int) -> int:
        if off == DMACR:
            return self.cr | (CR_RESET if self.dma.resetting else 0)
        return {DMASR: self.sr, ADDR: self.addr & 0xFFFFFFFF, ADDR_MSB: self.addr >> 32,
                LENGTH: self.length}.get(off, 0)

    def write(self, off: int, v: int) -> None:
        if off == DMACR:
            if v & CR_RESET:
                self.dma.soft_reset()
                return
            self.cr = v & ~CR_RESET
            self._changed()
            if v & CR_RS:
                if not self.sr & SR_ERRORS:          # errors are cleared by a reset only
                    self.sr &= ~SR_HALTED
            elif not self.busy:
                self.sr |= SR_HALTED
        elif off == DMASR:
            self.sr &= ~(v & (SR_IOC_IRQ | SR_DLY_IRQ | SR_ERR_IRQ))       # write 1 to clear
        elif off == ADDR:
            self.addr = (self.addr & ~0xFFFFFFFF) | v
        elif off == ADDR_MSB:
            self.addr = (self.addr & 0xFFFFFFFF) | (v << 32)
        elif off == LENGTH:
            if self.sr & SR_HALTED or self.dma.resetting or self.busy:
                self.ignored_writes += 1
                return
            self.length = v & DMA_MAX_LENGTH
            self._start()

    def _start(self):
        fault = self.dma.faults.get((self.name, self.transfers))
        if (self.name, self.transfers) in self.dma.sigint:
            self.dma.pending_sigint = True
        self.transfers += 1
        self.busy = True
        self.sr &= ~SR_IDLE
        self._launch(fault)

    def _complete(self, nbytes: int):
        if not self.tx:
            self.length = nbytes                     # S2MM LENGTH reads back the bytes received
        self.busy = False
        self.sr |= SR_IDLE | SR_IOC_IRQ
        self._changed()

    def _error(self, bits: int):
        self.errors += 1
        self.busy = False
        self.cr &= ~CR_RS
        self.sr = (self.sr | bits | SR_ERR_IRQ | SR_HALTED) & ~SR_IDLE
        self.t_error_ns = self.dma.now_ns()
        self._changed()


class Pg021Dma:
    """The two channels, the faults, and the soft reset's bookkeeping (its timing is the data
    movers' world's). ``allocator``: where buffers live (``lookup``, ``mem``)."""

    channel_class = Pg021Channel

    def __init__(self, allocator, faults=(), allow_tamper: bool = True):
        self.allocator = allocator
        self.sigint: set[tuple[str, int]] = set()   # (channel, transfer): Ctrl-C right after its LENGTH write
        self.pending_sigint = False
        self.stray_writes: list[dict] = []          # S2MM writes into a buffer freed while the transfer was posted
        self.mid_packet: list[int] = []             # S2MM errors that halted the channel mid-packet: beats taken
        self.faults: dict = {}
        for f in faults or ():
            kind, ch = f.get("kind"), f.get("channel")
            if kind == "sigint" and ch in ("mm2s", "s2mm"):
                self.sigint.add((ch, int(f["transfer"])))
                continue
            ok = (kind in FAULT_KINDS and ch in ("mm2s", "s2mm")) or (
                allow_tamper and kind in TAMPER_KINDS and ch == "s2mm")
            if not ok:
                raise ValueError(f"DMA fault {f}: channel mm2s|s2mm, kind {'|'.join(FAULT_KINDS)} or sigint"
                                 + (f"; or channel s2mm, kind {'|'.join(TAMPER_KINDS)}" if allow_tamper else ""))
            self.faults[(ch, int(f["transfer"]))] = dict(f)
        self.resetting = False
        self.resets = 0

    def now_ns(self) -> float:
        raise NotImplementedError

    def soft_reset(self) -> None:
        raise NotImplementedError

    def _channel(self, offset: int):
        return (self.mm2s, offset) if offset < S2MM_BASE else (self.s2mm, offset - S2MM_BASE)

    def written(self, ch: Pg021Channel, nbytes: int) -> None:
        """S2MM data is about to be written at ``ch.addr``: a buffer freed meanwhile is a stray write."""
        if self.allocator.lookup(ch.addr, nbytes) is None:
            self.stray_writes.append(dict(address=ch.addr, bytes=nbytes, t_ns=self.now_ns()))

    def set_error_state(self, channel: str = "s2mm", bits: int = SR_SLV_ERR):
        """Leave a channel halted with an error, as a process that died after a DMA error
        leaves the board when the next one does not reload the bitstream."""
        ch = getattr(self, channel)
        ch.cr &= ~CR_RS
        ch.sr = (ch.sr | bits | SR_ERR_IRQ | SR_HALTED) & ~SR_IDLE
