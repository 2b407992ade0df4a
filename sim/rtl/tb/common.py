"""What every module testbench shares: parameters, clock and reset, value checks, the result file.

A testbench is one ``tb_<module>.py`` with a ``TB`` class (derived from :class:`TBBase`)
and ``@cocotb.test()`` coroutines, in the manner of verilog-axis. Inputs are driven right
after a rising edge; outputs are sampled in the read-only phase of the same cycle
(:meth:`TBBase.cycle`), so a valid/ready pair seen there is a handshake at the next edge.

Environment (set by :mod:`zynqflow.sim.rtl.modules`):

``ZQ_PARAMS``  JSON of the module's parameters (the values the build was made with)
``ZQ_RESULT``  JSON file: the number of checks per test and the first failures
``ZQ_SEED``    seed of the random stimuli (default 1)
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

CLK_NS = 10

_RESULT: dict = {"checks": {}, "errors": [], "info": {}}


def params() -> dict:
    return json.loads(os.environ.get("ZQ_PARAMS", "{}"))


def seed() -> int:
    return int(os.environ.get("ZQ_SEED", "1"))


def _write_result() -> None:
    out = os.environ.get("ZQ_RESULT")
    if out:
        Path(out).write_text(json.dumps(_RESULT, indent=1, default=str))


def sx(v: int, bits: int) -> int:
    """Two's complement value of the low ``bits`` of v."""
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def pack(values, bits: int) -> int:
    """Lane 0 in the least significant bits."""
    out = 0
    for i, v in enumerate(values):
        out |= (int(v) & ((1 << bits) - 1)) << (i * bits)
    return out


def unpack(word: int, n: int, bits: int, signed: bool = False) -> list[int]:
    m = (1 << bits) - 1
    vals = [(int(word) >> (i * bits)) & m for i in range(n)]
    return [sx(v, bits) for v in vals] if signed else vals


class TBBase:
    """Clock, reset, parameters, random numbers and counted checks."""

    def __init__(self, dut, clk: str = "clk", rst: str | None = "rst", rst_active: int = 1, test: str = ""):
        self.dut = dut
        self.p = params()
        self.clk = getattr(dut, clk)
        self.rst = getattr(dut, rst) if rst else None
        self.rst_active = rst_active
        self.test = test or "test"
        self.rng = random.Random(seed() * 1000003 + sum(map(ord, self.test)))
        self.n_checks = 0
        self.cycles = 0
        Clock(self.clk, CLK_NS, unit="ns").start()
        cocotb.start_soon(self._count())

    async def _count(self):
        """``self.cycles``: rising edges since the test began (read it after an edge)."""
        while True:
            await RisingEdge(self.clk)
            self.cycles += 1

    def param(self, name: str, default=None) -> int:
        v = self.p.get(name, default)
        if v is None:
            raise KeyError(f"parameter {name} not given")
        return int(v)

    # ---- time ----------------------------------------------------------------------
    async def cycle(self):
        """Next cycle: after the rising edge (drive inputs now), then call :meth:`settle`."""
        await RisingEdge(self.clk)

    async def settle(self):
        await ReadOnly()

    async def step(self):
        """One whole cycle, ending in the read-only phase (values of the new cycle, settled)."""
        await RisingEdge(self.clk)
        await ReadOnly()

    async def reset(self, cycles: int = 4):
        if self.rst is not None:
            await RisingEdge(self.clk)
            self.rst.value = self.rst_active
            await ClockCycles(self.clk, cycles)
            self.rst.value = 1 - self.rst_active
        await RisingEdge(self.clk)

    # ---- checks --------------------------------------------------------------------
    def check(self, cond, msg) -> None:
        self.n_checks += 1
        if not cond:
            text = msg() if callable(msg) else str(msg)
            text = f"[{self.test}] {text}"
            if len(_RESULT["errors"]) < 20:
                _RESULT["errors"].append(text)
            _write_result()
            raise AssertionError(text)

    def eq(self, got, want, what) -> None:
        self.check(got == want, lambda: f"{what}: got {got!r}, expected {want!r}")

    def info(self, **kw) -> None:
        _RESULT["info"].setdefault(self.test, {}).update(kw)

    def done(self, min_checks: int = 1) -> None:
        """End of a test: record how many values it compared (a test that compares nothing fails)."""
        self.check(self.n_checks >= min_checks, f"only {self.n_checks} checks (expected >= {min_checks})")
        _RESULT["checks"][self.test] = self.n_checks
        _write_result()


def u(sig) -> int:
    """Unsigned value of a signal."""
    return int(sig.value)


def s(sig) -> int:
    """Signed value of a signal."""
    return sig.value.to_signed()


def pause_gen(rng: random.Random, p: float):
    """An endless pause generator for cocotbext-axi (True = stall this cycle)."""
    return iter(lambda: rng.random() < p, None)


# ---- the DDR model behind a module's AXI4 master port ---------------------------------------
def memory(tb, prefix: str = "m", beat_bytes: int = 8, gaps: dict | None = None, **model):
    """The project's DDR model (``sim/world/ddr.py``: latencies, outstanding limits, protocol
    checks) on ``tb.mem``, behind the module's master port ``<prefix>_ar*`` ...; ``gaps``: random
    stall probability per channel (``{"ar": 0.25, "r": 0.25}``), seeded from the testbench's
    random numbers; ``model``: MemoryModel fields. Returns its :class:`DdrPort`."""
    from cocotb.utils import get_sim_steps

    from zynqflow.sim.world.ddr import Ddr
    from zynqflow.spec.engine import MemoryModel

    mm = MemoryModel(beat_bytes=beat_bytes, seed=tb.rng.getrandbits(24), **model)
    ddr = Ddr(tb.dut, tb.clk, tb.rst, get_sim_steps(CLK_NS, "ns"), model=mm, prefixes=(prefix,),
              reset_active_level=bool(tb.rst_active), mem=tb.mem, fatal=True)
    port = ddr.ports[0]
    for ch, p in (gaps or {}).items():
        port.set_gap(ch, p)
    return port


# ---- AXI4 master rules, checked cycle by cycle ---------------------------------------------
class AxiMasterChecker:
    """Watches a module's AXI4 master port (``<prefix>_ar*``/``_r*`` and/or ``_aw*``/``_w*``/``_b*``).

    Call :meth:`sample` once per cycle in the read-only phase. It checks the rules the
    engine's masters promise: bursts of 1..16 beats that stay inside one ``page`` (4 KiB, or
    a 128-byte line where a module promises that), beat-aligned addresses, VALID held and the
    payload stable until READY, WLAST on each burst's last beat (W beats may come before
    their burst's AW: AXI A3.3.1), and at most ``max_rd`` / ``max_wr`` bursts outstanding (AR
    handshake to last R beat; AW handshake to B). It records every burst and beat.
    """

    def __init__(self, tb, prefix: str, beat_bytes: int = 8, read: bool = True, write: bool = False,
                 max_rd: int | None = None, max_wr: int | None = None, page: int = 4096):
        self.tb, self.d, self.p = tb, tb.dut, prefix
        self.beat = beat_bytes
        self.read, self.write = read, write
        self.max_rd, self.max_wr, self.page = max_rd, max_wr, page
        self.ar: list[tuple[int, int, int]] = []        # (cycle, addr, beats)
        self.r: list[tuple[int, int, int, int]] = []    # (cycle, data, last, resp)
        self.aw: list[tuple[int, int, int]] = []
        self.w: list[tuple[int, int, int]] = []         # (cycle, data, last)
        self.b: list[tuple[int, int]] = []              # (cycle, resp)
        self.rd_out = self.wr_out = 0                   # bursts outstanding (before this cycle's handshakes)
        self.rd_out_max = self.wr_out_max = 0
        self.r_bursts_done = 0
        self.w_beats_left: list[int] = []               # per AW'd burst not fully written
        self.w_early: list[int] = []                    # WLAST of W beats ahead of their burst's AW
        self.w_bursts_done = 0
        self._hold: dict[str, tuple] = {}

    def sig(self, name):
        return getattr(self.d, f"{self.p}_{name}")

    def _stable(self, ch: str, valid: int, ready: int, payload: tuple, cycle: int) -> None:
        prev = self._hold.pop(ch, None)
        if prev is not None:
            self.tb.check(valid == 1, lambda: f"{self.p}_{ch}valid dropped at cycle {cycle} before its handshake")
            self.tb.check(payload == prev, lambda: f"{self.p}_{ch} payload changed while waiting for ready "
                                                   f"at cycle {cycle}: {prev} -> {payload}")
        if valid and not ready:
            self._hold[ch] = payload

    def _burst(self, kind: str, addr: int, beats: int, cycle: int) -> None:
        self.tb.check(1 <= beats <= 16, lambda: f"{kind} burst of {beats} beats at 0x{addr:08x} (cycle {cycle})")
        self.tb.check(addr % self.beat == 0, lambda: f"{kind} address 0x{addr:08x} not beat-aligned")
        self.tb.check(addr // self.page == (addr + beats * self.beat - 1) // self.page,
                      lambda: f"{kind} burst 0x{addr:08x}+{beats}x{self.beat}B crosses a {self.page}-byte boundary")

    def sample(self, cycle: int) -> None:
        u_ = u
        if self.read:
            av, ar_ = u_(self.sig("arvalid")), u_(self.sig("arready"))
            addr, ln = u_(self.sig("araddr")), u_(self.sig("arlen"))
            self._stable("ar", av, ar_, (addr, ln), cycle)
            if self.max_rd is not None:
                self.tb.check(self.rd_out <= self.max_rd,
                              lambda: f"{self.rd_out} read bursts outstanding > {self.max_rd} (cycle {cycle})")
            self.rd_out_max = max(self.rd_out_max, self.rd_out)
            if av and ar_:
                self._burst("read", addr, ln + 1, cycle)
                self.ar.append((cycle, addr, ln + 1))
                self.rd_out += 1
            rv, rr = u_(self.sig("rvalid")), u_(self.sig("rready"))
            if rv and rr:
                last = u_(self.sig("rlast"))
                self.r.append((cycle, u_(self.sig("rdata")), last, u_(self.sig("rresp"))))
                if last:
                    self.rd_out -= 1
                    self.r_bursts_done += 1
        if self.write:
            av, ar_ = u_(self.sig("awvalid")), u_(self.sig("awready"))
            addr, ln = u_(self.sig("awaddr")), u_(self.sig("awlen"))
            self._stable("aw", av, ar_, (addr, ln), cycle)
            wv, wr = u_(self.sig("wvalid")), u_(self.sig("wready"))
            wd, wl = u_(self.sig("wdata")), u_(self.sig("wlast"))
            self._stable("w", wv, wr, (wd, wl), cycle)
            if self.max_wr is not None:
                self.tb.check(self.wr_out <= self.max_wr,
                              lambda: f"{self.wr_out} write bursts awaiting B > {self.max_wr} (cycle {cycle})")
            self.wr_out_max = max(self.wr_out_max, self.wr_out)
            if wv and wr:
                self.w.append((cycle, wd, wl))
                self.w_early.append(wl)
            if av and ar_:
                self._burst("write", addr, ln + 1, cycle)
                self.aw.append((cycle, addr, ln + 1))
                self.w_beats_left.append(ln + 1)
                self.wr_out += 1
            while self.w_early and self.w_beats_left:    # W beats meet their bursts, in order
                wl = self.w_early.pop(0)
                left = self.w_beats_left[0] - 1
                self.tb.check(wl == int(left == 0),
                              lambda: f"WLAST={wl} with {left} beats of the burst left (cycle {cycle})")
                if left == 0:
                    self.w_beats_left.pop(0)
                    self.w_bursts_done += 1
                else:
                    self.w_beats_left[0] = left
            if u_(self.sig("bvalid")) and u_(self.sig("bready")):
                self.b.append((cycle, u_(self.sig("bresp"))))
                self.wr_out -= 1
                self.tb.check(self.wr_out >= 0, lambda: f"B response without a burst (cycle {cycle})")

    def write_image(self) -> dict[int, int]:
        """{byte address: value} of every W beat, burst by burst (all strobes set)."""
        out, i = {}, 0
        for _, addr, beats in self.aw:
            for n in range(beats):
                if i >= len(self.w):
                    return out
                data = self.w[i][1]
                for k in range(self.beat):
                    out[addr + n * self.beat + k] = (data >> (8 * k)) & 0xFF
                i += 1
        return out
