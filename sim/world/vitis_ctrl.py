"""The ``s_axilite`` control block Vitis HLS generates for an ``ap_ctrl_hs`` top function
(UG1399, "S_AXILITE Control Register Map" and the interface's handshake), as a register model:
the registers come from the ``.hwh`` (:func:`zynqflow.sim.world.vitis_hwh.read_hwh`), their behaviour
from UG1399, nothing from :mod:`zynqflow.spec.engine`.

``CTRL`` (0x00):
  bit 0 ``ap_start``  R/W/COH: a write of 1 sets it (a write of 0 does not clear it); it clears when
                      the block asserts ``ap_ready``, unless ``auto_restart`` is set;
  bit 1 ``ap_done``   R/COR: set when a call ends, cleared by reading CTRL;
  bit 2 ``ap_idle``   R: no call in progress;
  bit 3 ``ap_ready``  R/COR: the block can take new inputs (a non-pipelined top: with ``ap_done``);
  bit 7 ``auto_restart`` R/W: start the next call as soon as one ends;
  bit 9 ``interrupt`` R: the interrupt output.
``GIER`` (0x04) bit 0: the interrupt output enabled. ``IP_IER`` (0x08): bit 0 ap_done, bit 1 ap_ready.
``IP_ISR`` (0x0C): bit 0 ap_done, bit 1 ap_ready, set when the event happens and enabled in IP_IER;
toggle on write (writing 1 flips the bit). Arguments: a 64-bit input as ``<name>_1`` (low) /
``<name>_2`` (high), read by the block when a call starts; a scalar output as ``<name>`` (its last
value) and ``<name>_ctrl`` bit 0 ``ap_vld`` (set when the output is written, cleared on read).
Registers that do not exist read 0 and ignore writes.
"""

from __future__ import annotations

AP_START, AP_DONE, AP_IDLE, AP_READY, AUTO_RESTART, INTERRUPT = 0x1, 0x2, 0x4, 0x8, 0x80, 0x200


class VitisControl:
    """The control block of one HLS top function. ``registers``: ``ip_dict[ip]["registers"]`` as pynq
    reads it from the ``.hwh`` (name -> {"address_offset", "access", ...})."""

    def __init__(self, registers: dict):
        self.by_offset = {int(r["address_offset"]): n for n, r in registers.items()}
        names = set(registers)
        self.inputs64 = sorted({n[:-2] for n in names if n.endswith("_1") and f"{n[:-2]}_2" in names})
        self.outputs = sorted(n[:-5] for n in names if n.endswith("_ctrl") and n[:-5] in names)
        self.reset()

    def reset(self) -> None:
        """ap_rst_n: every register to 0, the block idle."""
        self.ap_start = self.ap_done = self.ap_ready = self.auto_restart = False
        self.running = False
        self.gie = self.ier = self.isr = 0
        self.args = {n: 0 for n in self.inputs64}
        self.out = {n: 0 for n in self.outputs}
        self.vld = {n: False for n in self.outputs}
        self.reads = self.writes = 0

    @property
    def interrupt(self) -> bool:
        return bool(self.gie & 1 and self.isr)

    @property
    def idle(self) -> bool:
        return not self.running

    def ctrl(self) -> int:
        return (AP_START * self.ap_start | AP_DONE * self.ap_done | AP_IDLE * (not self.running)
                | AP_READY * self.ap_ready | AUTO_RESTART * self.auto_restart | INTERRUPT * self.interrupt)

    # ---- the bus -----------------------------------------------------------------------
    def read(self, offset: int) -> int:
        self.reads += 1
        name = self.by_offset.get(offset)
        if name == "CTRL":
            v = self.ctrl()
            self.ap_done = self.ap_ready = False              # clear on read
            return v
        if name == "GIER":
            return self.gie
        if name == "IP_IER":
            return self.ier
        if name == "IP_ISR":
            return self.isr
        if name is None:
            return 0
        for a in self.inputs64:
            if name == f"{a}_1":
                return self.args[a] & 0xFFFFFFFF
            if name == f"{a}_2":
                return self.args[a] >> 32
        if name in self.out:
            return self.out[name]
        if name.endswith("_ctrl") and name[:-5] in self.vld:
            v = int(self.vld[name[:-5]])
            self.vld[name[:-5]] = False                       # ap_vld: clear on read
            return v
        return 0

    def write(self, offset: int, value: int) -> None:
        self.writes += 1
        value &= 0xFFFFFFFF
        name = self.by_offset.get(offset)
        if name == "CTRL":
            if value & AP_START:
                self.ap_start = True
            self.auto_restart = bool(value & AUTO_RESTART)
        elif name == "GIER":
            self.gie = value & 1
        elif name == "IP_IER":
            self.ier = value & 3
        elif name == "IP_ISR":
            self.isr ^= value & 3                             # toggle on write
        elif name is not None:
            for a in self.inputs64:
                if name == f"{a}_1":
                    self.args[a] = (self.args[a] & ~0xFFFFFFFF) | value
                elif name == f"{a}_2":
                    self.args[a] = (self.args[a] & 0xFFFFFFFF) | value << 32

    # ---- the handshake with the block -------------------------------------------------------
    def take_start(self) -> dict | None:
        """The block starts a call when ap_start is set and it is idle: returns the inputs it
        reads (the 64-bit arguments), else None."""
        if self.running or not self.ap_start:
            return None
        self.running = True
        return dict(self.args)

    def finish(self, outputs: dict) -> None:
        """The call ended: its outputs written (ap_vld), ap_done and ap_ready (ISR where enabled);
        ap_start clears on ap_ready unless auto_restart."""
        for n, v in outputs.items():
            if n in self.out:
                self.out[n], self.vld[n] = int(v) & 0xFFFFFFFF, True
        self.running = False
        self.ap_done = self.ap_ready = True
        self.isr |= self.ier & 3
        self.ap_start = self.auto_restart
