"""zq_maxi_echo as the broken master: each fault of its FAULT register breaks one AXI rule, and
the project's DDR model (``sim/world/ddr.py``) must report exactly that rule, with the cycle,
the port and the channel. The fault-free echo (AW and W offered together) must pass every check
and work against a slave that holds AWREADY until it sees WVALID; the old writer's order (fault
14: W after the AW handshake) must deadlock against that slave.

Channels that a fault breaks while VALID waits are held (READY low) for the first cycles they
are offered; the slave accepts 16 bursts per direction, so the 9th outstanding burst of faults
12 and 13 is the master's error. The result (``ZQ_RESULT``) lists, per fault, the messages.
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import with_timeout
from cocotb.utils import get_sim_steps
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from zynqflow.sim.world.ddr import Ddr
from zynqflow.sim.rtl.tb.common import CLK_NS, TBBase
from zynqflow.spec import engine as E

WTS, ACT = 0x0001_0000, 0x0004_0000
IN_BYTES, N_CLASSES = 256, 10          # rtl_params.svh of the module build (sim/rtl/modules.py)
# fault -> (port, channel, words of the expected message); the order of the echo's FAULT codes
FAULTS = {
    1: ("m_axi_wts", "AR", "17 beats, more than 16"),
    2: ("m_axi_act", "AW", "crosses a 4 KiB boundary"),
    3: ("m_axi_wts", "AR", "ARSIZE 2"),
    4: ("m_axi_act", "AW", "AWBURST 0"),
    5: ("m_axi_act", "W", "WLAST missing on beat 16 of 16"),
    6: ("m_axi_act2", "AR", "ARVALID withdrawn before ARREADY"),
    7: ("m_axi_act", "AW", "AWVALID withdrawn before AWREADY"),
    8: ("m_axi_act", "W", "WVALID withdrawn before WREADY"),
    9: ("m_axi_act2", "AR", "payload changed while ARVALID waited"),
    10: ("m_axi_act", "AW", "payload changed while AWVALID waited"),
    11: ("m_axi_act", "W", "payload changed while WVALID waited"),
    12: ("m_axi_wts", "AR", "9 read bursts outstanding, more than 8"),
    13: ("m_axi_act", "AW", "9 write bursts outstanding, more than 8"),
}
W_AFTER_AW = 14
HELD = {6: "ar", 7: "aw", 8: "w", 9: "ar", 10: "aw", 11: "w"}   # the channel that must make VALID wait


class TB(TBBase):
    def __init__(self, dut, test):
        super().__init__(dut, clk="ap_clk", rst="ap_rst_n", rst_active=0, test=test)
        self.ddr = Ddr(dut, self.clk, self.rst, get_sim_steps(CLK_NS, "ns"), model="ideal", size=1 << 24,
                       prefixes=("m_axi_wts", "m_axi_act", "m_axi_act2"))
        self.src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_in"), self.clk, self.rst,
                                   reset_active_level=False)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_out"), self.clk, self.rst,
                                  reset_active_level=False)
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axi_control"), self.clk, self.rst,
                                  reset_active_level=False)
        for lg in (self.src.log, self.sink.log, self.axil.write_if.log, self.axil.read_if.log):
            lg.setLevel("WARNING")
        self.reg = E.offsets("rtl")
        self.wts = bytes((i * 7 + 3) & 0xFF for i in range(256))
        self.ddr.load(WTS, self.wts)

    def hold_first_wait(self, port, ch: str, cycles: int = 4):
        """Hold ``ch`` (READY low) until it has been offered for ``cycles`` cycles."""
        seen = {"t": None}
        valid = {"ar": lambda: port.s_arv, "aw": lambda: port.s_awv, "w": lambda: port.s_wv}[ch]

        def pred(c):
            if seen["t"] is None and valid():
                seen["t"] = c
            return seen["t"] is None or c < seen["t"] + cycles
        return port.hold(ch, pred)

    async def frame(self, fault: int, timeout: int = 3000):
        """Reset, set up and run one frame under ``fault``; returns the output words (None: no answer)."""
        for p in self.ddr.ports:
            for ch in ("ar", "aw", "w"):
                p.release(ch)
        await self.reset()
        self.ddr.errors.clear()
        self.ddr.n_errors = 0
        if fault in HELD:
            self.hold_first_wait(self.ddr.act2 if HELD[fault] == "ar" else self.ddr.act, HELD[fault])
        for name, v in (("wts", WTS), ("act", ACT), ("layer_sel", fault)):
            await self.axil.write_dword(self.reg[name], v)
        self.eq(int(await self.axil.read_dword(self.reg["layer_sel"])), fault, "the FAULT register reads back")
        await self.axil.write_dword(self.reg["AP_CTRL"], E.ap_ctrl_mask("ap_start"))
        data = bytes((i * 13 + fault) & 0xFF for i in range(IN_BYTES))
        await self.src.send(AxiStreamFrame(data))
        try:
            fr = await with_timeout(self.sink.recv(), timeout * 10, "ns")
        except cocotb.triggers.SimTimeoutError:
            self.src.clear()
            return None, data
        return [int.from_bytes(bytes(fr.tdata)[4 * i:4 * i + 4], "little") for i in range(N_CLASSES)], data

    def expected(self, data: bytes) -> list[int]:
        return [(int.from_bytes(data[4 * i:4 * i + 4], "little") + int.from_bytes(self.wts[4 * i:4 * i + 4], "little"))
                & 0xFFFFFFFF for i in range(N_CLASSES)]


@cocotb.test()
async def checkers_fire(dut):
    tb = TB(dut, "checkers_fire")
    found = {}
    out, data = await tb.frame(0)
    tb.eq(tb.ddr.errors, [], "protocol errors of the correct echo")
    tb.eq(out, tb.expected(data), "the correct echo's answer")
    for fault, (port, ch, words) in FAULTS.items():
        out, _ = await tb.frame(fault)
        msgs = list(tb.ddr.errors)
        found[fault] = msgs
        tb.check(out is not None, f"fault {fault}: the frame did not end")
        tb.check(any(f"{port} {ch}: " in m and words in m and m.startswith("cycle ") for m in msgs),
                 f"fault {fault}: no '{port} {ch}: ... {words}' among the memory's messages {msgs}")
        tb.check(all(f"{port} {ch}: " in m for m in msgs), f"fault {fault}: messages of other checks: {msgs}")
    tb.info(messages=found)
    tb.done(len(FAULTS) * 2)


@cocotb.test()
async def slave_waits_for_wvalid(dut):
    tb = TB(dut, "slave_waits_for_wvalid")
    tb.ddr.set(aw_waits_for_w=True)
    out, data = await tb.frame(0)
    tb.eq(out, tb.expected(data), "the echo (AW and W together) against a slave that waits for WVALID")
    tb.eq(tb.ddr.errors, [], "protocol errors")
    bursts = tb.ddr.act.write.bursts
    out, _ = await tb.frame(W_AFTER_AW, timeout=2000)
    tb.check(out is None, "a master whose W waits for the AW handshake did not deadlock against that slave")
    tb.eq(tb.ddr.act.write.bursts - bursts, 0, "AW handshakes of the deadlocked frame")
    tb.ddr.set(aw_waits_for_w=False)
    out, data = await tb.frame(W_AFTER_AW)
    tb.eq(out, tb.expected(data), "W after AW against a slave that does not wait")
    tb.done(4)
