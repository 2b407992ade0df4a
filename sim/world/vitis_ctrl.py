"""The ``s_axilite`` control block Vitis HLS generates for an ``ap_ctrl_hs`` top function (UG1399,
"S_AXILITE Control Register Map"), as a register model of **both generations** of it, built from the generated Verilog
(``<top>_control_s_axi.v``), not from :mod:`zynqflow.spec.engine`; the registers (names, offsets)
come from the ``.hwh`` (:func:`zynqflow.sim.world.vitis_hwh.read_hwh`).

The generated blocks this follows (the ``always`` blocks of ``int_ap_start``, ``int_task_ap_done``,
``int_ap_ready``, ``auto_restart_status``, ``int_isr`` and their ``assign`` lines):

==========  ======================================================================================
2022.1      mahyarsamani/sega-fpga, ``GPNKernelv1/imports/rtl_kernel_wizard_0_control_s_axi.v``
            ("Vitis HLS ... v2022.1"): ``IP_ISR`` **clear on read**, writes to it ignored
2023.2 on   soheilbh/fpga-vs-cpu-realtime-vision, ``hls_syn/hls_design_output/solution1/impl/ip/
            hdl/verilog/detect_and_recognize_control_s_axi.v`` ("v2024.2"); the same logic in
            CTSRD-CHERI/cheri-hls, ``examples/vect_mult/vect_mult_prj/solution1/.autopilot/db/
            coregen/vect_mult_control_s_axi.v`` ("v2023.1"): ``IP_ISR`` **toggle on write**
==========  ======================================================================================

What both generations do (identical lines in all three files):

``CTRL`` (0x00) bit 0 ``ap_start``: a write with bit 0 set sets it (a 0 does not clear it); at
``ap_ready`` it takes ``auto_restart``'s value (``int_ap_start <= int_auto_restart``: cleared on
the handshake unless auto_restart). Bit 7 ``auto_restart``: every write to CTRL sets it to bit 7.
Bit 2 ``ap_idle``: the block's (registered). Bit 1 ``ap_done``: ``int_task_ap_done``, clear on
read, set by ``task_ap_done = (ap_done && !auto_restart_status) || auto_restart_done``, where
``auto_restart_status`` is set while ``auto_restart`` is, and cleared once the block is idle with
``auto_restart`` clear, and ``auto_restart_done = auto_restart_status && (ap_idle && !int_ap_idle)``
(ap_idle rising): **under auto_restart a call's end sets no ap_done**; one ap_done comes when the
block goes idle after ``auto_restart`` was cleared. Bit 3 ``ap_ready``: ``int_ap_ready``, clear on
read, set by ``task_ap_ready = ap_ready && !int_auto_restart``: none under auto_restart either.
Bit 9 ``interrupt``: ``GIER & |IP_ISR``.

``GIER`` (0x04) bit 0; ``IP_IER`` (0x08) bit 0 ap_done, bit 1 ap_ready; ``IP_ISR`` (0x0C) bit 0 set
by the block's **own** ``ap_done`` when enabled (``int_ier[0] & ap_done``: every call, also under
auto_restart), bit 1 by ``ap_ready``; cleared by reading it (2022.1) or by writing a 1 to the bit
(2023.2 on: toggle on write; a write in 2022.1 changes nothing).

Arguments: a 64-bit input as ``<name>_1`` (low) / ``<name>_2`` (high), read by the block when a
call starts; a scalar output as ``<name>`` (its last value) and ``<name>_ctrl`` bit 0 ``ap_vld``
(set when the output is written, cleared on read). Registers that do not exist read 0 and ignore
writes. The block is non-pipelined: ``ap_ready`` comes with ``ap_done`` at the end of a call.
"""

from __future__ import annotations

AP_START, AP_DONE, AP_IDLE, AP_READY, AUTO_RESTART, INTERRUPT = 0x1, 0x2, 0x4, 0x8, 0x80, 0x200
GENERATIONS = ("2022.1", "2023.2")      # ISR clear on read / toggle on write


class VitisControl:
    """The control block of one HLS top function. ``registers``: ``ip_dict[ip]["registers"]`` as pynq
    reads it from the ``.hwh`` (name -> {"address_offset", "access", ...}); ``generation``: the Vitis
    release whose generated block this behaves as (:data:`GENERATIONS`)."""

    def __init__(self, registers: dict, generation: str = "2023.2"):
        if generation not in GENERATIONS:
            raise ValueError(f"generation {generation!r}: one of {', '.join(GENERATIONS)}")
        self.generation = generation
        self.isr_clear_on_read = generation == "2022.1"
        self.by_offset = {int(r["address_offset"]): n for n, r in registers.items()}
        names = set(registers)
        self.inputs64 = sorted({n[:-2] for n in names if n.endswith("_1") and f"{n[:-2]}_2" in names})
        self.outputs = sorted(n[:-5] for n in names if n.endswith("_ctrl") and n[:-5] in names)
        self.reset()

    def reset(self) -> None:
        """ap_rst_n: every register to 0, the block idle."""
        self.ap_start = self.auto_restart = self.auto_restart_status = False
        self.task_ap_done = self.ap_ready = False
        self.running = False
        self.gie = self.ier = self.isr = 0
        self.args = {n: 0 for n in self.inputs64}
        self.out = {n: 0 for n in self.outputs}
        self.vld = {n: False for n in self.outputs}
        self.reads = self.writes = 0
        self.calls = self.done_events = 0     # calls started; ap_done events CTRL reported

    @property
    def interrupt(self) -> bool:
        return bool(self.gie & 1 and self.isr)

    @property
    def idle(self) -> bool:
        """``ap_idle`` (the Vitis FSM: in its first state with ap_start low)."""
        return not self.running and not self.ap_start

    def _status_tick(self) -> None:
        """``auto_restart_status``: set while auto_restart is, cleared once idle without it."""
        if self.auto_restart:
            self.auto_restart_status = True
        elif self.idle:
            self.auto_restart_status = False

    def ctrl(self) -> int:
        return (AP_START * self.ap_start | AP_DONE * self.task_ap_done | AP_IDLE * self.idle
                | AP_READY * self.ap_ready | AUTO_RESTART * self.auto_restart | INTERRUPT * self.interrupt)

    # ---- the bus -----------------------------------------------------------------------
    def read(self, offset: int) -> int:
        self.reads += 1
        name = self.by_offset.get(offset)
        if name == "CTRL":
            v = self.ctrl()
            self.task_ap_done = self.ap_ready = False         # clear on read
            return v
        if name == "GIER":
            return self.gie
        if name == "IP_IER":
            return self.ier
        if name == "IP_ISR":
            v = self.isr
            if self.isr_clear_on_read:
                self.isr = 0
            return v
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
            self._status_tick()
        elif name == "GIER":
            self.gie = value & 1
        elif name == "IP_IER":
            self.ier = value & 3
        elif name == "IP_ISR":
            if not self.isr_clear_on_read:
                self.isr ^= value & 3                         # toggle on write (2023.2 on)
        elif name is not None:
            for a in self.inputs64:
                if name == f"{a}_1":
                    self.args[a] = (self.args[a] & ~0xFFFFFFFF) | value
                elif name == f"{a}_2":
                    self.args[a] = (self.args[a] & 0xFFFFFFFF) | value << 32

    # ---- the handshake with the block -------------------------------------------------------
    def take_start(self) -> dict | None:
        """The block starts a call when ap_start is set and it is not in one: returns the inputs it
        reads (the 64-bit arguments), else None."""
        if self.running or not self.ap_start:
            return None
        self.running = True
        self.calls += 1
        self._status_tick()
        return dict(self.args)

    def finish(self, outputs: dict) -> None:
        """The call ended: its outputs written (ap_vld), ``ap_done`` and ``ap_ready`` pulse (module
        docstring: what CTRL and IP_ISR make of them); ap_start takes auto_restart's value."""
        for n, v in outputs.items():
            if n in self.out:
                self.out[n], self.vld[n] = int(v) & 0xFFFFFFFF, True
        self.running = False
        self.isr |= self.ier & 3                              # ISR: the block's own ap_done / ap_ready
        if not self.auto_restart:
            self.ap_ready = True                              # task_ap_ready
        status = self.auto_restart_status
        self.ap_start = self.auto_restart                     # clear on handshake / auto restart
        if not status:
            self._done()                                      # ap_done && !auto_restart_status
        elif self.idle:
            self._done()                                      # auto_restart_done: ap_idle rises
        self._status_tick()

    def _done(self) -> None:
        self.task_ap_done = True
        self.done_events += 1
