"""zq_axil_regs: the AXI4-Lite control slave, ap_ctrl_hs as Vitis HLS 2023.2 generates it.

A cocotbext-axi ``AxiLiteMaster`` on ``s_axi_*`` and a model of the core on the block-level
handshake (frames of random length; ``ap_idle`` low while a frame runs or ``ap_start`` is high,
``ap_done`` and ``ap_ready`` together in a frame's last cycle). Offsets and bits come from
``zynqflow.spec.engine`` (``offsets("rtl")``, ``AP_CTRL_BITS``, ``ISR_BITS``, ``REGISTERS``).
Checked:

* AP_CTRL: ap_start set by a write of bit 0 (not with byte 0 unstrobed), not cleared by a
  write of 0, cleared on ap_ready; ap_done and ap_ready sticky and cleared by a read; ap_idle
  the registered core idle; auto_restart: ap_start stays up and frames run back to back,
  ap_ready masked, ap_done set only once auto_restart is cleared and the core goes idle;
* GIE/IER read back (1 and 2 bits); ISR bit 0 on every ap_done (also under auto_restart) and bit 1
  on ap_ready when enabled, toggle on write (a 1 sets a clear bit); ``interrupt`` (port and
  AP_CTRL bit 9) = GIE and any ISR bit;
* ``wts`` / ``act`` 64-bit registers (both halves, byte strobes), ``layer_sel`` (RTL only);
* every output register of the RTL map: data latched on its ap_vld, the control word's bit 0
  set by ap_vld and cleared by reading it (not by reading the data), data kept otherwise;
* unmapped and reserved words read 0 and ignore writes; every response OKAY.
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import ReadWrite
from cocotbext.axi import AxiLiteBus, AxiLiteMaster
from cocotbext.axi.constants import AxiResp

from zynqflow.sim.rtl.tb.common import TBBase, u
from zynqflow.spec import engine as E

BIT = {b.name: b.mask for b in E.AP_CTRL_BITS}
ISR = {b.name: b.mask for b in E.ISR_BITS}
OUTS = [r for r in E.REGMAP_RTL if r.kind == "out"]


class TB(TBBase):
    def __init__(self, dut, test):
        super().__init__(dut, test=test)
        self.addr_w = self.param("ADDR_W")
        self.reg = E.offsets("rtl")
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axi"), self.clk, self.rst)
        self.axil.write_if.log.setLevel("WARNING")
        self.axil.read_if.log.setLevel("WARNING")
        self.frames_started = 0
        self.frames_done = 0
        self.frame_len = (6, 16)
        self.wts_pulses = 0
        self.has_wts_written = hasattr(dut, "wts_written")    # older revisions: a pulse per wts write
        for r in OUTS:
            getattr(dut, r.name).value = 0
            getattr(dut, f"{r.name}_vld").value = 0
        dut.ap_done.value = 0
        dut.ap_ready.value = 0
        dut.ap_idle.value = 1

    # ---- the core on ap_ctrl_hs -----------------------------------------------------------
    async def core(self):
        d = self.dut
        left = None          # None: idle; else cycles to the frame's last cycle
        while True:
            await self.cycle()
            await ReadWrite()
            start = u(d.ap_start)
            last = left == 0
            d.ap_done.value = int(last)
            d.ap_ready.value = int(last)
            d.ap_idle.value = int(left is None and not start)
            await self.settle()
            if self.has_wts_written and u(d.wts_written):
                self.wts_pulses += 1
            if left is None:
                if start:
                    left = self.rng.randrange(*self.frame_len)
                    self.frames_started += 1
            elif last:
                self.frames_done += 1
                left = None
            else:
                left -= 1

    # ---- register access ------------------------------------------------------------------
    async def rd(self, addr: int) -> int:
        r = await self.axil.read(addr, 4)
        self.eq(r.resp, AxiResp.OKAY, f"read response at 0x{addr:x}")
        return int.from_bytes(r.data, "little")

    async def wr(self, addr: int, value: int):
        r = await self.axil.write(addr, (value & 0xFFFFFFFF).to_bytes(4, "little"))
        self.eq(r.resp, AxiResp.OKAY, f"write response at 0x{addr:x}")

    async def wr_bytes(self, addr: int, data: bytes):
        r = await self.axil.write(addr, data)
        self.eq(r.resp, AxiResp.OKAY, f"write response at 0x{addr:x}")

    async def ctrl(self) -> dict[str, int]:
        v = await self.rd(self.reg["AP_CTRL"])
        return {n: int(bool(v & m)) for n, m in BIT.items()} | {"raw": v}

    async def wait_frames(self, n: int, timeout: int = 2000):
        for _ in range(timeout):
            if self.frames_done >= n:
                return
            await self.cycle()
        self.check(False, f"core finished {self.frames_done} frames, expected {n}")

    async def idle_cycles(self, n: int):
        for _ in range(n):
            await self.cycle()

    def start_core(self):
        cocotb.start_soon(self.core())


@cocotb.test()
async def ap_ctrl_single(dut):
    tb = TB(dut, "ap_ctrl_single")
    R = tb.reg
    await tb.reset()
    tb.start_core()
    await tb.idle_cycles(3)
    c = await tb.ctrl()
    tb.eq(c["raw"], BIT["ap_idle"], "AP_CTRL after reset (only ap_idle)")
    await tb.wr(R["IER"], 0xFFFFFFFF)
    tb.eq(await tb.rd(R["IER"]), 3, "IER (2 bits)")
    await tb.wr(R["GIE"], 0xFFFFFFFF)
    tb.eq(await tb.rd(R["GIE"]), 1, "GIE (1 bit)")
    # a write with byte 0 not strobed does not start
    await tb.wr_bytes(R["AP_CTRL"] + 1, b"\xff")
    await tb.idle_cycles(3)
    tb.eq(u(dut.ap_start), 0, "ap_start after a write without byte 0")
    tb.eq(tb.frames_started, 0, "frames started")
    # start a long frame; writing 0 while it runs does not clear ap_start
    tb.frame_len = (40, 41)
    await tb.wr(R["AP_CTRL"], BIT["ap_start"])
    tb.eq(u(dut.ap_start), 1, "ap_start after the write")
    await tb.idle_cycles(2)
    c = await tb.ctrl()
    tb.eq((c["ap_start"], c["ap_idle"], c["ap_done"], c["ap_ready"]), (1, 0, 0, 0), "AP_CTRL while running")
    await tb.wr(R["AP_CTRL"], 0)
    tb.eq(u(dut.ap_start), 1, "ap_start after writing 0 (not cleared)")
    await tb.wait_frames(1)
    await tb.idle_cycles(2)
    tb.eq(u(dut.ap_start), 0, "ap_start cleared on ap_ready")
    tb.eq(tb.frames_started, 1, "one frame per ap_start")
    tb.eq(await tb.rd(R["ISR"]), ISR["ap_done"] | ISR["ap_ready"], "ISR after a frame (both enabled)")
    tb.eq(u(dut.interrupt), 1, "interrupt with GIE and ISR")
    # the addresses AP_CTRL would alias at with only the register map's bits decoded (+0x100, and
    # the top of a wider port): they read 0 and leave ap_done / ap_ready set (a read of AP_CTRL clears them)
    space = 1 << tb.addr_w
    aliases = [R["AP_CTRL"] + 0x100, space - 0x100 + R["AP_CTRL"]] if space > 0x100 else []
    for o in aliases:
        tb.eq(await tb.rd(o), 0, f"AP_CTRL's alias 0x{o:x} (decoded: reads 0)")
    c = await tb.ctrl()
    tb.eq((c["ap_start"], c["ap_done"], c["ap_idle"], c["ap_ready"], c["interrupt"], c["auto_restart"]),
          (0, 1, 1, 1, 1, 0), "AP_CTRL after the frame" + (" and reads of its aliases" if aliases else ""))
    c = await tb.ctrl()
    tb.eq((c["ap_done"], c["ap_ready"], c["ap_idle"]), (0, 0, 1), "AP_CTRL read again (done/ready clear on read)")
    # ISR toggles on write
    await tb.wr(R["ISR"], ISR["ap_done"])
    tb.eq(await tb.rd(R["ISR"]), ISR["ap_ready"], "ISR after toggling bit 0")
    tb.eq(u(dut.interrupt), 1, "interrupt with ISR bit 1")
    await tb.wr(R["ISR"], ISR["ap_ready"])
    tb.eq(await tb.rd(R["ISR"]), 0, "ISR after toggling bit 1")
    tb.eq(u(dut.interrupt), 0, "interrupt with ISR clear")
    tb.eq((await tb.ctrl())["interrupt"], 0, "AP_CTRL interrupt bit with ISR clear")
    await tb.wr(R["ISR"], ISR["ap_done"])
    tb.eq(await tb.rd(R["ISR"]), ISR["ap_done"], "ISR toggled from 0 (a write of 1 sets a clear bit)")
    tb.eq(u(dut.interrupt), 1, "interrupt after setting ISR by toggle")
    await tb.wr(R["GIE"], 0)
    await tb.idle_cycles(2)
    tb.eq(u(dut.interrupt), 0, "interrupt with GIE = 0")
    tb.eq((await tb.ctrl())["interrupt"], 0, "AP_CTRL interrupt bit with GIE = 0")
    await tb.wr(R["ISR"], ISR["ap_done"])
    # only ap_ready enabled: a frame sets ISR bit 1 only
    await tb.wr(R["IER"], ISR["ap_ready"])
    tb.frame_len = (6, 12)
    await tb.wr(R["AP_CTRL"], BIT["ap_start"])
    await tb.wait_frames(2)
    await tb.idle_cycles(2)
    tb.eq(await tb.rd(R["ISR"]), ISR["ap_ready"], "ISR with only IER bit 1")
    await tb.wr(R["ISR"], ISR["ap_ready"])
    await tb.wr(R["IER"], 0)
    await tb.wr(R["AP_CTRL"], BIT["ap_start"])
    await tb.wait_frames(3)
    await tb.idle_cycles(2)
    tb.eq(await tb.rd(R["ISR"]), 0, "ISR with IER = 0")
    tb.eq(tb.frames_started, 3, "frames started")
    tb.done(30)


@cocotb.test()
async def auto_restart(dut):
    tb = TB(dut, "auto_restart")
    R = tb.reg
    await tb.reset()
    tb.start_core()
    await tb.wr(R["IER"], ISR["ap_done"])
    await tb.wr(R["GIE"], 1)
    await tb.rd(R["AP_CTRL"])
    tb.frame_len = (60, 80)      # long enough for the register accesses between two frame ends
    await tb.wr(R["AP_CTRL"], BIT["ap_start"] | BIT["auto_restart"])
    for n in (1, 2, 3):
        await tb.wait_frames(n)
        await tb.idle_cycles(2)
        tb.eq(u(dut.ap_start), 1, f"ap_start stays up under auto_restart (frame {n})")
        c = await tb.ctrl()
        tb.eq((c["ap_start"], c["auto_restart"], c["ap_done"], c["ap_ready"], c["ap_idle"]), (1, 1, 0, 0, 0),
              f"AP_CTRL under auto_restart after frame {n} (done only when auto_restart is cleared, ready masked)")
        tb.eq(await tb.rd(R["ISR"]), ISR["ap_done"], f"ISR bit 0 set by frame {n} under auto_restart")
        await tb.wr(R["ISR"], ISR["ap_done"])
        await tb.idle_cycles(1)
        tb.eq(u(dut.interrupt), 0, "interrupt after the ISR toggle")
    tb.eq(tb.frames_started, tb.frames_done + 1, "frames back to back (the next one already started)")
    # clear auto_restart: the frame that runs ends, ap_start drops, the core goes idle, ap_done once
    await tb.wr(R["AP_CTRL"], 0)
    tb.eq(u(dut.ap_start), 1, "ap_start after clearing auto_restart (until the frame's ap_ready)")
    n = tb.frames_started
    await tb.wait_frames(n)
    await tb.idle_cycles(4)
    tb.eq(tb.frames_started, n, "no frame after auto_restart was cleared")
    tb.eq(u(dut.ap_start), 0, "ap_start after the last frame")
    c = await tb.ctrl()
    tb.eq((c["ap_start"], c["auto_restart"], c["ap_done"], c["ap_ready"], c["ap_idle"]), (0, 0, 1, 1, 1),
          "AP_CTRL after the last frame")
    c = await tb.ctrl()
    tb.eq((c["ap_done"], c["ap_ready"]), (0, 0), "ap_done / ap_ready cleared by the read")
    await tb.idle_cycles(5)
    tb.eq((await tb.ctrl())["ap_done"], 0, "ap_done set once")
    tb.done(20)


@cocotb.test()
async def inputs_and_map(dut):
    tb = TB(dut, "inputs_and_map")
    R = tb.reg
    await tb.reset()
    tb.start_core()
    w, a, ls = 0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210, 0xA5A5_0003
    await tb.wr(R["wts"], w & 0xFFFFFFFF)
    await tb.wr(R["wts_hi"], w >> 32)
    await tb.wr(R["act"], a & 0xFFFFFFFF)
    await tb.wr(R["act_hi"], a >> 32)
    await tb.wr(R["layer_sel"], ls)
    await tb.idle_cycles(2)
    if tb.has_wts_written:
        tb.eq(tb.wts_pulses, 2, "wts_written pulses (one per write of a wts half, none for act)")
    tb.eq((u(dut.wts), u(dut.act), u(dut.layer_sel)), (w, a, ls), "wts / act / layer_sel outputs")
    tb.eq([await tb.rd(R[n]) for n in ("wts", "wts_hi", "act", "act_hi", "layer_sel")],
          [w & 0xFFFFFFFF, w >> 32, a & 0xFFFFFFFF, a >> 32, ls], "wts / act / layer_sel read back")
    # byte strobes: one byte of wts_hi, two of act
    await tb.wr_bytes(R["wts_hi"] + 2, b"\x5a")
    await tb.wr_bytes(R["act"] + 1, b"\x11\x22")
    w2 = (w & ~(0xFF << 48)) | (0x5A << 48)
    a2 = (a & ~(0xFFFF << 8)) | (0x2211 << 8)
    await tb.idle_cycles(2)
    tb.eq((u(dut.wts), u(dut.act)), (w2, a2), "wts / act after byte writes")
    if tb.has_wts_written:
        tb.eq(tb.wts_pulses, 3, "wts_written pulses after a byte write of wts_hi")
    # unmapped and reserved words: read 0, writes change nothing
    mapped = set()
    for r in E.REGMAP_RTL:
        mapped |= {r.offset} | ({r.offset + 4} if r.kind in ("in64", "out") else set())
    before = {o: await tb.rd(o) for o in sorted(mapped) if o != R["AP_CTRL"]}
    space = 1 << tb.addr_w
    holes = [o for o in range(0, min(space, 0x100), 4) if o not in mapped]
    holes += [o for o in range(0x100, space, 4)][:: max(1, (space - 0x100) // 64)] if space > 0x100 else []
    holes += [space - 0x100 + R["wts"]] if space > 0x100 else []     # would alias wts with fewer decoded bits
    for o in holes:
        await tb.wr(o, 0xFFFFFFFF)
    for o in holes:
        tb.eq(await tb.rd(o), 0, f"unmapped word 0x{o:x}")
    after = {o: await tb.rd(o) for o in before}
    tb.eq(after, before, "mapped registers after writes to unmapped words")
    tb.eq(u(dut.ap_start), 0, "ap_start after writes to unmapped words")
    tb.info(holes=len(holes))
    tb.done(20)


@cocotb.test()
async def output_registers(dut):
    tb = TB(dut, "output_registers")
    R = tb.reg
    d = dut
    await tb.reset()
    tb.start_core()
    vals = {r.name: tb.rng.getrandbits(32) for r in OUTS}

    async def pulse(names, values):
        await tb.cycle()
        for n in names:
            getattr(d, n).value = values[n]
            getattr(d, f"{n}_vld").value = 1
        await tb.cycle()
        for n in names:
            getattr(d, f"{n}_vld").value = 0
            getattr(d, n).value = tb.rng.getrandbits(32)    # data without ap_vld is not taken

    # before any ap_vld: data 0, control 0
    for r in OUTS:
        tb.eq((await tb.rd(R[r.name]), await tb.rd(R[f"{r.name}_ctrl"])), (0, 0), f"{r.name} after reset")
    await pulse([r.name for r in OUTS], vals)
    await tb.idle_cycles(3)
    for r in OUTS:
        tb.eq(await tb.rd(R[r.name]), vals[r.name], f"{r.name} data latched on ap_vld")
        tb.eq(await tb.rd(R[r.name]), vals[r.name], f"{r.name} data read twice")
    for i, r in enumerate(OUTS):
        tb.eq(await tb.rd(R[f"{r.name}_ctrl"]), 1, f"{r.name}_ctrl ap_vld after the data reads")
        tb.eq(await tb.rd(R[f"{r.name}_ctrl"]), 0, f"{r.name}_ctrl cleared by the read")
        tb.eq(await tb.rd(R[r.name]), vals[r.name], f"{r.name} data kept after the control read")
    # one register at a time
    for r in OUTS:
        v2 = {r.name: tb.rng.getrandbits(32)}
        await pulse([r.name], v2)
        tb.eq(await tb.rd(R[f"{r.name}_ctrl"]), 1, f"{r.name}_ctrl set by its own ap_vld")
        tb.eq(await tb.rd(R[r.name]), v2[r.name], f"{r.name} new data")
        others = [o for o in OUTS if o is not r]
        o = tb.rng.choice(others)
        tb.eq(await tb.rd(R[f"{o.name}_ctrl"]), 0, f"{o.name}_ctrl not set by {r.name}'s ap_vld")
    tb.done(5 * len(OUTS))
