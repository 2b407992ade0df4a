"""cocotb testbench of ``zq_top`` (rtl/ or the Vitis HLS export).

Run through :mod:`zynqflow.sim.rtl.runner` (pytest: ``tests/test_rtl_zq_top.py``).
The DDR behind both AXI4 masters is :class:`zynqflow.sim.world.ddr.Ddr`
(cocotbext-axi memory, the HP-port latency model of ``spec.engine.MEMORY_MODEL``);
the weight image (``weights.bin``) is loaded at ``WTS_BASE`` and the registers
``wts`` / ``act`` point the engine at it and at the scratch area. Register
offsets come from :mod:`zynqflow.spec.engine`. Configuration by environment:

``ZQ_EXPORT``   export directory (manifest.json, integers.npz, weights.bin, vectors)
``ZQ_RTL``      ``rtl`` or ``hls`` (HLS: no measured-cycle registers)
``ZQ_RESULT``   JSON file this testbench writes its measurements to
``ZQ_FRAMES``   number of frames (run_frames)
``ZQ_SOURCE``   ``vectors``, ``random:<seed>`` or a ``.npz`` with ``frames`` (and ``labels``)
``ZQ_MODE``     ``auto`` (auto_restart, back to back) or ``single`` (one ap_start per frame)
``ZQ_BACKPRESSURE``  1: random gaps and stalls on both streams and on every AXI4 channel
``ZQ_MEMORY``   the DDR's memory preset (``ideal``, ``pynq-z2``, ``stress``; spec.engine.MEMORY_PRESETS)
``ZQ_MEMORY_OVERRIDES``  JSON of MemoryModel fields changed from the preset (``{"seed": 3}``)
``ZQ_FRAME_BUDGET``  cycles a frame may take from its start before the test fails as a hang,
                naming the layer the engine is in and the cycle (0: none)
``ZQ_TARGET_LAYER``  ``busy_hole``: the layer whose last step the memory isolates

Logits are compared with ``zynqflow.spec.golden.golden_logits`` bit for bit.
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, RisingEdge
from cocotb.utils import get_sim_steps, get_sim_time
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from zynqflow.sim.world.ddr import Ddr, signal_reader
from zynqflow.spec import engine as E
from zynqflow.spec.golden import golden_logits
from zynqflow.spec.qnet import QNet

CLK_NS = 10
WTS_BASE = 0x1000_0000
ACT_BASE = 0x1800_0000
TIMEOUT_MS = float(os.environ.get("ZQ_TIMEOUT_MS", "200"))   # simulated time limit per test
ERR = np.int64(E.ERROR_LOGIT)


def _env(name, default=None):
    return os.environ.get(name, default)


class Export:
    """What the testbench needs from an export directory."""

    def __init__(self, path: str):
        self.path = Path(path)
        self.man = json.loads((self.path / "manifest.json").read_text())
        self.qnet = QNet.load_npz(self.path / "integers.npz")
        self.shape = tuple(self.man["input"]["shape"])
        self.classes = self.man["output"]["classes"]
        self.in_bytes = int(np.prod(self.shape))
        self.vectors = np.fromfile(self.path / "vectors_in.bin", np.uint8).reshape((-1,) + self.shape)
        self.weights = (self.path / "weights.bin").read_bytes()

    def frames(self, n: int, source: str):
        if source == "vectors" and len(self.vectors):
            return self.vectors[np.arange(n) % len(self.vectors)], None
        if source.startswith("random") or source == "vectors":
            seed = int(source.split(":")[1]) if ":" in source else 1
            return np.random.default_rng(seed).integers(0, 256, (n,) + self.shape, dtype=np.uint8), None
        z = np.load(source)
        return z["frames"][:n], (z["labels"][:n] if "labels" in z else None)

    def golden(self, frames):
        return golden_logits(self.qnet, frames)


class TB:
    def __init__(self, dut):
        self.dut = dut
        self.kind = _env("ZQ_RTL", "rtl")
        self.ex = Export(_env("ZQ_EXPORT"))
        self.reg = E.offsets("rtl" if self.kind == "rtl" else "hls")
        cocotb.start_soon(Clock(dut.ap_clk, CLK_NS, unit="ns").start())
        clk, rst = dut.ap_clk, dut.ap_rst_n
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_in"), clk, rst, reset_active_level=False)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_out"), clk, rst, reset_active_level=False)
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axi_control"), clk, rst, reset_active_level=False)
        overrides = json.loads(_env("ZQ_MEMORY_OVERRIDES", "{}"))
        self.ddr = Ddr(dut, clk, rst, get_sim_steps(CLK_NS, "ns"), model=_env("ZQ_MEMORY", "ideal"), fatal=True,
                       **overrides)
        if self.ddr.model.charge_streams:      # no DMA here: the streams' bytes stand for its DDR traffic
            for s_ in ("s_axis_in", "m_axis_out"):
                self.ddr.charge_stream(getattr(dut, f"{s_}_TVALID"), getattr(dut, f"{s_}_TREADY"), E.STREAM_BITS // 8)
        self.budget = int(_env("ZQ_FRAME_BUDGET", "0"))
        self.ddr.load(WTS_BASE, self.ex.weights)
        for lg in (self.source.log, self.sink.log, self.axil.write_if.log, self.axil.read_if.log):
            lg.setLevel("WARNING")
        self.result: dict = {}
        self.cycle = 0
        self.hs_in_first: list[int] = []
        self.hs_out_last: list[int] = []

    # ---- basics -------------------------------------------------------------
    async def reset(self, cycles: int = 8):
        self.dut.ap_rst_n.value = 0
        await ClockCycles(self.dut.ap_clk, cycles)
        self.dut.ap_rst_n.value = 1
        await ClockCycles(self.dut.ap_clk, 4)

    async def rd(self, name: str) -> int:
        return int(await self.axil.read_dword(self.reg[name]))

    async def wr(self, name: str, value: int):
        await self.axil.write_dword(self.reg[name], value & 0xFFFFFFFF)

    async def set_bases(self, wts: int = WTS_BASE, act: int = ACT_BASE):
        await self.wr("wts", wts)
        await self.wr("wts_hi", wts >> 32)
        await self.wr("act", act)
        await self.wr("act_hi", act >> 32)

    async def start(self, auto_restart: bool = False):
        await self.wr("AP_CTRL", E.ap_ctrl_mask("ap_start", "auto_restart") if auto_restart
                      else E.ap_ctrl_mask("ap_start"))

    def frame_bytes(self, frame: np.ndarray) -> bytes:
        return np.ascontiguousarray(frame, np.uint8).tobytes()

    async def send(self, data: bytes):
        await self.source.send(AxiStreamFrame(data))

    async def recv_logits(self, timeout_cycles: int | None = None) -> np.ndarray:
        timeout_cycles = timeout_cycles or self.budget or None
        if timeout_cycles is None:
            fr = await self.sink.recv()
        else:
            try:
                fr = await cocotb.triggers.with_timeout(self.sink.recv(), timeout_cycles * CLK_NS, "ns")
            except cocotb.triggers.SimTimeoutError:
                self.fail(f"hang: no output frame within {timeout_cycles} cycles: {self.where()}")
        return np.frombuffer(bytes(fr.tdata), "<i4").astype(np.int64)

    TOP_STATES = ("T_IDLE", "T_CHECK", "T_FETCH", "T_DECODE", "T_WAITWR", "T_RUN", "T_DRAIN", "T_INPUT", "T_OUT",
                  "T_ABORT")

    def where(self) -> str:
        """The layer the engine is in, its control state, the memory's cycle and what is in flight."""
        st = self.state()
        layers = self.ex.man["layers"]
        li, top = st.get("li"), st.get("state")
        name = layers[li]["name"] if isinstance(li, int) and li < len(layers) else "?"
        top_name = self.TOP_STATES[top] if isinstance(top, int) and top < len(self.TOP_STATES) else top
        mem = "; ".join(f"{p.prefix}: {p.reads_outstanding} reads, {p.writes_outstanding} writes in flight"
                        for p in self.ddr.ports)
        return f"layer {li} '{name}', {top_name}, at cycle {self.ddr.cycle} ({mem}); engine: {st}"

    DEBUG_SIGNALS = ("state", "li", "abort", "err_flags", "u_core.busy", "u_core.u_loop.state", "u_fill.busy",
                     "u_fill.u_fill0.active", "u_wdma.busy", "u_wdma.active", "out_idle", "u_out.u_out0.f_count",
                     "stem_in_done",
                     "u_stem.istate", "u_stem.bstate", "u_axis_out.active")

    def state(self) -> dict:
        """Internal signals of the RTL twin, for failure messages (needs public signals)."""
        out = {}
        for n in self.DEBUG_SIGNALS:
            obj = self.dut
            try:
                for part in n.split("."):
                    obj = getattr(obj, part)
                out[n] = int(obj.value)
            except (AttributeError, ValueError):
                out[n] = "?"
        return out

    def set_backpressure(self, on: bool, seed: int = 7):
        if on:
            rng, rng2 = random.Random(seed), random.Random(seed + 1)
            self.source.set_pause_generator(iter(lambda: rng.random() < 0.35, None))
            self.sink.set_pause_generator(iter(lambda: rng2.random() < 0.45, None))
        else:
            self.source.clear_pause_generator()
            self.sink.clear_pause_generator()
        for port in self.ddr.ports:
            port.set_stalls(0.3 if on else 0.0, seed)

    def start_monitor(self):
        cocotb.start_soon(self._monitor())

    async def _monitor(self):
        """Count clock cycles and record the handshakes that bound each frame."""
        d = self.dut
        first_pending = True
        while True:
            await RisingEdge(d.ap_clk)
            self.cycle += 1
            if int(d.ap_rst_n.value) == 0:
                first_pending = True
                continue
            if int(d.s_axis_in_TVALID.value) and int(d.s_axis_in_TREADY.value):
                if first_pending:
                    self.hs_in_first.append(self.cycle)
                    first_pending = False
                if int(d.s_axis_in_TLAST.value):
                    first_pending = True
            if int(d.m_axis_out_TVALID.value) and int(d.m_axis_out_TREADY.value) and int(d.m_axis_out_TLAST.value):
                self.hs_out_last.append(self.cycle)

    def write_result(self, **kw):
        self.result.update(kw)
        out = _env("ZQ_RESULT")
        if out:
            Path(out).write_text(json.dumps(self.result, indent=1, default=lambda o: o.tolist()
                                            if hasattr(o, "tolist") else str(o)))

    def fail(self, msg: str):
        self.write_result(error=msg)
        raise AssertionError(msg)

    def check(self, cond, msg: str):
        if not cond:
            self.fail(msg)

    async def layer_figures(self) -> list[dict]:
        """Measured cycles and stalls of every layer of the last computed frame (RTL twin)."""
        rows = []
        for i, l in enumerate(self.ex.man["layers"]):
            await self.wr("layer_sel", i)
            rows.append(dict(name=l["name"], cycles=await self.rd("layer_cycles"), stalls=await self.rd("layer_stalls"),
                             mac_cycles=l["mac_cycles"], cycles_model=l.get("cycles_model")))
        return rows

    async def single_frames(self, source: str, n: int, stop=None) -> tuple[list, np.ndarray]:
        """Reset, set the bases, then ``n`` frames of ``source`` with one ap_start each (``stop()``
        true after a frame ends the run early); returns the logits and the golden ones."""
        await self.reset()
        await self.set_bases()
        frames = self.ex.frames(n, source)[0]
        expected = self.ex.golden(frames)
        got = []
        for f in frames:
            await self.start()
            await self.send(self.frame_bytes(f))
            got.append(await self.recv_logits())
            if stop is not None and stop():
                break
        return got, expected

    async def frame_figures(self) -> dict:
        return {n: await self.rd(n) for n in ("cycles_last", "dram_stall_cycles", "dram_rd_bytes", "dram_wr_bytes")}


class LastStepIsolator:
    """A memory that isolates the last MAC step of a layer that writes DDR (the busy hole of
    issue 16), as a hook of :class:`Ddr` that watches the engine (the cocotb build's public
    signals) and steers the W channel of one write path (``ports``: path 1's and path 2's; the
    other path's writes go free).

    From the layer's start W is held, so the path's output FIFO fills and the loop stops
    (``out_full``). Once it has stopped and every result is in (``quiet`` cycles without a step in
    the address stages, the free path's FIFO at most half full), ``k`` steps are left. The FIFO is then drained
    to ``c0`` units and W held again: the loop runs a burst of steps until T - c0 of its results
    have gone to the held path, then ``a`` - 1 steps more (the pipeline and the registered
    ``full``; ``a`` learnt from the bursts). With two paths the odd 128-byte lines go to path 2, so
    the isolator records which path each step's result took and extends that pattern (periodic)
    to the steps to come; the burst that leaves the last step must end on a result of the held
    path, so once ``a`` is known the isolator holds the path of step ``steps - a - 1``. Bursts are
    chosen so that exactly one step is left at the end; then W goes free and that last step is
    issued alone, far from the one before it. One step per output pixel (1x1 kernel, one input
    chunk) keeps the counting exact."""

    QUIET = 25         # cycles without a step: every result of the steps issued is in the FIFO
    SPREAD = 9         # c0 from threshold - 1 down to threshold - 1 - SPREAD (drain shorter than the pipeline)
    T_RUN, G_RUN = 5, 3

    def __init__(self, dut, ports, li: int, steps: int, fifo_threshold: int):
        self.li, self.steps, self.T = li, steps, fifo_threshold
        u, o = dut.u_core, dut.u_out
        self.r = dict(li=signal_reader(dut.li), top=signal_reader(dut.state), loop=signal_reader(u.u_loop.state),
                      l1=signal_reader(u.u_loop.l1_v), l2=signal_reader(u.u_loop.l2_v), s0=signal_reader(u.s_valid),
                      unit=signal_reader(o.in_valid), unit1=signal_reader(o.u_out0.in_valid))
        counts = [signal_reader(o.u_out0.f_count)]
        if hasattr(o, "g_path2"):
            counts.append(signal_reader(o.g_path2.u_out1.f_count))
        self.counts = counts
        self.hold_w = False
        self.path = 0                                     # the held path (0: path 1, 1: path 2)
        for i, port in enumerate(ports[:len(counts)]):
            port.hold("w", lambda c, i=i: self.hold_w and self.path == i)
        self.phase = "wait"
        self.issued = self.quiet = 0
        self.prev_issue = self.last_issue = None
        self.k_before = self.c0 = None
        self.bursts: list[tuple[int, int, int, int]] = []    # (path, c0, steps left before, steps issued)
        self.to1: list[int] = []                              # 1 where a step's result went to path 1
        self.a = None
        self.gap = None
        self.done = False
        self.why = ""

    def report(self) -> dict:
        return dict(phase=self.phase, done=self.done, gap=self.gap, bursts=self.bursts, a=self.a, why=self.why,
                    to1="".join(map(str, self.to1)))

    def _give_up(self, why: str) -> None:
        self.why, self.phase, self.hold_w = why, "failed", False

    def _pattern(self, path: int) -> list[int]:
        """1 where a step's result goes to ``path``, for every step of the layer: the steps seen,
        then their shortest period."""
        seen = self.to1
        p = next(p for p in range(1, len(seen) + 1)
                 if all(seen[i] == seen[i - p] for i in range(p, len(seen))))
        out = list(seen)
        while len(out) < self.steps:
            out.append(out[-p])
        return [v ^ path for v in out]

    def _until(self, pat: list[int], s: int, m: int) -> int | None:
        """Steps from step s until m results have gone to the path (None: not before the layer's end)."""
        n = 0
        for j in range(s, self.steps):
            n += pat[j]
            if n >= m:
                return j - s + 1
        return None

    def _plan(self, k: int) -> int | None:
        """c0 for the next burst, from k steps left: the last burst leaves exactly one."""
        pat, a = self._pattern(self.path), self.a
        choices = range(self.T - 1, self.T - 2 - self.SPREAD, -1)
        memo: dict[int, int | None] = {1: -1}

        def reach(k: int) -> int | None:
            if k not in memo:
                memo[k] = None
                for c0 in choices:
                    j = self._until(pat, self.steps - k, self.T - c0)
                    d = None if j is None else j + a - 1
                    if d is not None and d <= k - 1 and reach(k - d) is not None:
                        memo[k] = c0
                        break
            return memo[k]

        c0 = reach(k)
        return None if c0 is None or c0 < 0 else c0

    def cycle(self, c: int) -> None:
        if self.phase in ("done", "failed"):
            return
        r = self.r
        if self.phase == "wait":
            if r["li"]() == self.li and r["top"]() == self.T_RUN:
                self.phase, self.hold_w = "hold", True
            return
        if r["li"]() != self.li:
            return self._give_up(f"layer {self.li} ended with {self.steps - self.issued} steps left unisolated")
        if r["unit"]():
            self.to1.append(int(r["unit1"]()))
        s0 = r["s0"]()
        if s0:
            self.issued += 1
            self.prev_issue, self.last_issue = self.last_issue, c
        self.quiet = 0 if (s0 or r["l1"]() or r["l2"]()) else self.quiet + 1
        counts = [f() for f in self.counts]
        if self.phase == "hold":
            held_full = counts[self.path] >= self.T
            free_low = all(n <= self.T // 2 for i, n in enumerate(counts) if i != self.path)
            if self.quiet >= self.QUIET and held_full and free_low and r["loop"]() == self.G_RUN:
                k = self.steps - self.issued
                if len(self.to1) != self.issued:
                    return self._give_up(f"{self.issued} steps issued, {len(self.to1)} results in")
                if self.k_before is not None:
                    self.bursts.append((self.path, self.c0, self.k_before, self.k_before - k))
                    fit = sorted(d - self._until(self._pattern(p), self.steps - kb, self.T - c0) + 1
                                 for p, c0, kb, d in self.bursts)
                    self.a = fit[len(fit) // 2]
                if k == 1:
                    self.phase, self.hold_w = "final", False
                    return
                if k < 1:
                    return self._give_up("no step left")
                if self.a is not None:
                    last_path = 1 - self._pattern(0)[self.steps - self.a - 1]
                    if last_path != self.path:
                        # hold the path of the last burst's final result from now on
                        self.path, self.k_before = last_path, None
                        return
                self.c0 = self.T - 1 if self.a is None else self._plan(k)
                if self.c0 is None:
                    return self._give_up(f"no bursts (a = {self.a}) leave exactly one of {k} steps")
                self.k_before, self.phase, self.hold_w = k, "drain", False
        elif self.phase == "drain":
            if counts[self.path] <= self.c0:
                self.phase, self.hold_w = "hold", True
        elif self.phase == "final" and s0:
            self.gap = c - self.prev_issue
            self.done = self.gap >= self.QUIET
            self.phase = "done" if self.done else "failed"
            self.why = "" if self.done else f"last step only {self.gap} cycles after the one before"


async def _run_stream(tb: TB, frames: np.ndarray) -> tuple[list[np.ndarray], list[float]]:
    """Frames back to back (auto_restart), fed one ahead of the answers so that Python
    sleeps while the engine computes."""
    got, t_done = [], []
    n = len(frames)
    if n:
        await tb.send(tb.frame_bytes(frames[0]))
    for i in range(n):
        if i + 1 < n:
            cocotb.start_soon(tb.send(tb.frame_bytes(frames[i + 1])))
        got.append(await tb.recv_logits())
        t_done.append(get_sim_time("ns"))
    return got, t_done


# ---------------------------------------------------------------------------
@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
async def run_frames(dut):
    """N frames through the engine; logits must equal the golden model's."""
    tb = TB(dut)
    n = int(_env("ZQ_FRAMES", "4"))
    mode = _env("ZQ_MODE", "auto")
    bp = _env("ZQ_BACKPRESSURE", "0") == "1"
    frames, labels = tb.ex.frames(n, _env("ZQ_SOURCE", "vectors"))
    n = len(frames)
    expected = tb.ex.golden(frames)
    await tb.reset()
    await tb.set_bases()
    tb.set_backpressure(bp, seed=int(_env("ZQ_SEED", "7")))
    t_wall = time.time()
    t_sim0 = get_sim_time("ns")
    got, t_done, per_frame = [], [], []
    if mode == "auto":
        await tb.start(auto_restart=True)
        got, t_done = await _run_stream(tb, frames)
        await tb.wr("AP_CTRL", 0)
    else:
        for f in frames:
            await tb.start()
            await tb.send(tb.frame_bytes(f))
            got.append(await tb.recv_logits())
            t_done.append(get_sim_time("ns"))
            st = await tb.rd("status")
            tb.check(st == 0, f"frame {len(got) - 1}: status 0x{st:08x} != 0 ({E.decode_status(st)})")
            if tb.kind == "rtl":
                per_frame.append(await tb.frame_figures())
    wall = time.time() - t_wall
    sim_cycles = (get_sim_time("ns") - t_sim0) / CLK_NS
    await ClockCycles(dut.ap_clk, 20)
    frames_done = await tb.rd("frames_done")
    status = await tb.rd("status")
    extra = tb.sink.count()
    got_arr = np.array(got, dtype=np.int64).reshape(n, -1) if got else np.zeros((0, tb.ex.classes), np.int64)
    mism = [i for i in range(n) if got_arr.shape[1] != expected.shape[1] or not np.array_equal(got_arr[i], expected[i])]
    res = dict(frames=n, mode=mode, backpressure=bp, logits=got_arr, expected=expected, mismatches=mism,
               frames_done=frames_done, status=status, per_frame=per_frame, t_done_ns=t_done, sim_cycles=sim_cycles,
               wall_s=wall, extra_output_frames=extra,
               ddr=dict(wts_bursts=tb.ddr.wts.read.bursts, wts_bytes=tb.ddr.wts.read.bytes,
                        act_rd_bytes=tb.ddr.act.read.bytes + tb.ddr.act2.read.bytes,
                        act_wr_bytes=tb.ddr.act.write.bytes + tb.ddr.wts.write.bytes,
                        act2_rd_bytes=tb.ddr.act2.read.bytes, wts_wr_bytes=tb.ddr.wts.write.bytes))
    if labels is not None:
        res["labels"] = np.asarray(labels)
        res["top1"] = float(np.mean(got_arr.argmax(axis=1) == np.asarray(labels))) if n else 0.0
    if tb.kind == "rtl":
        res["figures"] = await tb.frame_figures()
        res["layers"] = await tb.layer_figures()
    tb.write_result(**res)
    tb.check(not mism, f"{len(mism)} of {n} frames differ from the golden model (first: {mism[:1]}; "
                       f"got {got_arr[mism[0]].tolist() if mism else ''} expected "
                       f"{expected[mism[0]].tolist() if mism else ''})")
    tb.check(frames_done == n, f"frames_done = {frames_done}, sent {n}")
    tb.check(status == 0, f"status 0x{status:08x} after good frames")
    tb.check(extra == 0, f"{extra} extra output frames")


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
async def registers(dut):
    """The register map and the Vitis 2023.2 control behaviour: ID, build constants, AP_CTRL bits
    (ap_done and ap_ready clear on read, ap_idle), ISR toggle on write, the interrupt, cycles_last."""
    tb = TB(dut)
    await tb.reset()
    tb.start_monitor()
    m = tb.ex.man
    ctrl = await tb.rd("AP_CTRL")
    tb.check(ctrl & E.ap_ctrl_mask("ap_idle"), f"AP_CTRL after reset = {ctrl:#x}: ap_idle not set")
    tb.check(await tb.rd("frames_done") == 0 and await tb.rd("status") == 0, "counters not 0 after reset")
    await tb.set_bases()
    tb.check(await tb.rd("wts") == WTS_BASE and await tb.rd("act") == ACT_BASE, "base registers do not read back")
    await tb.wr("GIE", 1)
    await tb.wr("IER", 1)
    frames = tb.ex.frames(3, "vectors")[0]
    expected = tb.ex.golden(frames)
    results = []
    for i, f in enumerate(frames):
        await tb.start()
        await tb.send(tb.frame_bytes(f))
        got = await tb.recv_logits()
        tb.check(np.array_equal(got, expected[i]), f"frame {i}: logits {got.tolist()} != {expected[i].tolist()}")
        await ClockCycles(dut.ap_clk, 4)
        irq = int(dut.interrupt.value)
        isr = await tb.rd("ISR")
        ctrl1 = await tb.rd("AP_CTRL")
        ctrl2 = await tb.rd("AP_CTRL")
        vld = await tb.rd("frames_done_ctrl")
        vld2 = await tb.rd("frames_done_ctrl")
        r = dict(ctrl=ctrl1, isr=isr, irq=irq)
        tb.check(irq == 1 and isr & 1, f"frame {i}: interrupt {irq}, ISR {isr:#x} after ap_done")
        await tb.wr("ISR", 1)   # toggle on write clears it
        tb.check(await tb.rd("ISR") == 0, "ISR not cleared by toggle-on-write")
        await ClockCycles(dut.ap_clk, 2)
        tb.check(int(dut.interrupt.value) == 0, "interrupt not cleared with ISR")
        tb.check(ctrl1 & E.ap_ctrl_mask("ap_done", "ap_ready") == E.ap_ctrl_mask("ap_done", "ap_ready"),
                 f"ap_done/ap_ready not set after a frame (AP_CTRL {ctrl1:#x})")
        tb.check(not ctrl2 & E.ap_ctrl_mask("ap_done", "ap_ready"), f"ap_done/ap_ready not cleared on read ({ctrl2:#x})")
        tb.check(ctrl2 & E.ap_ctrl_mask("ap_idle"), f"ap_idle not set after a frame (AP_CTRL {ctrl2:#x})")
        tb.check(vld == 1 and vld2 == 0, f"frames_done_ap_vld {vld}, {vld2} (expected 1 then 0: COR)")
        tb.check(await tb.rd("frames_done") == i + 1, "frames_done does not count frames")
        tb.check(await tb.rd("status") == 0, "status != 0 for a good frame")
        if tb.kind == "rtl":
            cyc = await tb.rd("cycles_last")
            measured = tb.hs_out_last[-1] - tb.hs_in_first[-1] + 1
            r.update(cycles_last=cyc, measured=measured)
            tb.check(cyc == measured, f"frame {i}: cycles_last {cyc} != measured {measured} (first input beat to "
                                      "last output beat)")
        results.append(r)
    e = m["engine"]
    got = dict(net_id=await tb.rd("net_id"), build_params=await tb.rd("build_params"),
               engine_info=await tb.rd("engine_info"))
    tb.write_result(**got, frames=results)
    tb.check(got["net_id"] == m["network_id_int"], f"net_id {got['net_id']:#x} != manifest {m['network_id_int']:#x}")
    tb.check(got["build_params"] == e["build_params"], f"build_params {got['build_params']:#x} != {e['build_params']:#x}")
    want_info = e["engine_info_rtl"] if tb.kind == "rtl" else e["engine_info_hls"]
    tb.check(got["engine_info"] == want_info, f"engine_info {got['engine_info']:#x} != {want_info:#x}")


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
async def layer_cycles(dut):
    """One frame; the measured cycles of every layer and of the frame (RTL twin)."""
    tb = TB(dut)
    if tb.kind != "rtl":
        tb.write_result(skipped="the HLS engine has no cycle counters")
        return
    await tb.reset()
    await tb.set_bases()
    frames = tb.ex.frames(1, "vectors")[0]
    # the frame waits on the stream before ap_start, as it does back to back and in the free-running
    # harness: the first layer's cycles then do not include the host's delay in starting the stream
    sender = cocotb.start_soon(tb.send(tb.frame_bytes(frames[0])))
    await ClockCycles(dut.ap_clk, 4)
    await tb.start()
    await sender
    got = await tb.recv_logits()
    tb.check(np.array_equal(got, tb.ex.golden(frames)[0]), "logits differ from golden")
    rows = await tb.layer_figures()
    await tb.wr("layer_sel", len(rows))
    beyond = await tb.rd("layer_cycles")
    fig = await tb.frame_figures()
    tb.write_result(layers=rows, beyond=beyond, **fig)
    tb.check(beyond == 0, f"layer_cycles for layer_sel >= N_LAYERS = {beyond}, expected 0")
    tb.check(all(r["cycles"] >= r["mac_cycles"] for r in rows), "a layer took fewer cycles than its MAC steps")


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
async def reset_mid_frame(dut):
    """ap_rst_n low while a frame streams in, while it computes, and while its output streams out:
    everything resets (counters included) and the next frame is right."""
    tb = TB(dut)
    await tb.reset()
    await tb.set_bases()
    frames = tb.ex.frames(4, "random:5")[0]
    expected = tb.ex.golden(frames)
    await tb.start()
    await tb.send(tb.frame_bytes(frames[0]))
    tb.check(np.array_equal(await tb.recv_logits(), expected[0]), "frame before reset wrong")
    log = {}
    # 1) half a frame in, then reset
    await tb.start(auto_restart=True)
    await tb.source.send(AxiStreamFrame(tb.frame_bytes(frames[1])))
    for _ in range(tb.ex.in_bytes // 8):
        await RisingEdge(dut.ap_clk)
    tb.source.clear()
    await tb.reset(cycles=5)
    regs = {k: await tb.rd(k) for k in ("AP_CTRL", "frames_done", "status", "ISR", "GIE", "wts")}
    log["after_input_reset"] = regs
    tb.check(regs["frames_done"] == 0 and regs["status"] == 0, f"counters not cleared by reset: {regs}")
    tb.check(regs["AP_CTRL"] & E.ap_ctrl_mask("ap_start", "auto_restart") == 0 and
             regs["AP_CTRL"] & E.ap_ctrl_mask("ap_idle"), f"AP_CTRL {regs['AP_CTRL']:#x} after reset")
    tb.check(tb.sink.count() == 0, "output produced for the interrupted frame")
    dut._log.warning('reset_mid_frame: part 2')
    # 2) a whole frame in, reset while it computes
    await tb.set_bases()
    await tb.start()
    await tb.send(tb.frame_bytes(frames[1]))
    if _env("ZQ_DEBUG_RESET"):
        await ClockCycles(dut.ap_clk, 2000)
        for n in ("state", "li", "ap_start", "u_stem.istate", "u_stem.bstate", "u_wdma.active", "u_wdma.q_beat",
                  "u_wdma.p_beat", "u_wdma.hdr_ok", "u_wdma.cached", "u_core.u_loop.state", "abort", "s_axis_in_TREADY"):
            obj = dut
            for part in n.split("."):
                obj = getattr(obj, part)
            dut._log.warning(f"{n} = {obj.value}")
    await tb.source.wait()
    await ClockCycles(dut.ap_clk, 40)
    await tb.reset(cycles=3)
    tb.check(tb.sink.count() == 0, "output produced for the frame interrupted while computing")
    dut._log.warning('reset_mid_frame: part 3')
    # 3) reset during the output phase: hold TREADY low so the frame waits in the output stage
    await tb.set_bases()
    tb.sink.pause = True
    await tb.start()
    await tb.send(tb.frame_bytes(frames[2]))
    for _ in range(200000):
        await RisingEdge(dut.ap_clk)
        if int(dut.m_axis_out_TVALID.value):
            break
    tb.check(int(dut.m_axis_out_TVALID.value) == 1, "no output beat while TREADY is held low")
    await ClockCycles(dut.ap_clk, 3)
    await tb.reset(cycles=3)
    tb.sink.clear()
    tb.sink.pause = False
    await ClockCycles(dut.ap_clk, 10)
    tb.check(int(dut.m_axis_out_TVALID.value) == 0, "TVALID still high after reset in the output phase")
    log["after_output_reset"] = {k: await tb.rd(k) for k in ("frames_done", "status")}
    tb.check(log["after_output_reset"]["frames_done"] == 0, "frames_done counted the frame reset in its output phase")
    dut._log.warning('reset_mid_frame: part 4')
    # clean frame
    await tb.set_bases()
    await tb.start()
    await tb.send(tb.frame_bytes(frames[3]))
    got = await tb.recv_logits()
    fd = await tb.rd("frames_done")
    tb.write_result(log=log, logits=got, expected=expected[3], frames_done=fd)
    tb.check(np.array_equal(got, expected[3]), f"frame after reset: {got.tolist()} != {expected[3].tolist()}")
    tb.check(fd == 1, f"frames_done {fd} != 1 after reset + one frame")


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
async def protocol_errors(dut):
    """Short frame, long frame, missing TLAST: status bits, error frames, exactly one output per input
    frame, and the next frame right; also back to back under auto_restart."""
    tb = TB(dut)
    await tb.reset()
    await tb.set_bases()
    frames = tb.ex.frames(4, "random:9")[0]
    expected = tb.ex.golden(frames)
    nb = tb.ex.in_bytes
    errf = np.full(tb.ex.classes, ERR, np.int64)
    short, long_ = E.STATUS["short_frame"].mask, E.STATUS["long_frame"].mask
    log = []

    async def one(data: bytes, want_flags: int, want: np.ndarray, what: str):
        await tb.start()
        await tb.send(data)
        got = await tb.recv_logits()
        st = await tb.rd("status")
        log.append(dict(what=what, status=st, logits=got))
        tb.check(st & E.STATUS_FLAGS_MASK == want_flags, f"{what}: status {st:#x}, flags {want_flags:#x} expected")
        tb.check(np.array_equal(got, want), f"{what}: output {got.tolist()} != {want.tolist()}")

    await one(tb.frame_bytes(frames[0])[: nb - 8], short, errf, "short frame")
    await one(tb.frame_bytes(frames[1]), 0, expected[1], "good frame after short")
    await one(tb.frame_bytes(frames[0]) + bytes(range(12)), long_, errf, "long frame")
    await one(tb.frame_bytes(frames[2]), 0, expected[2], "good frame after long")
    await one(tb.frame_bytes(frames[3])[:4], short, errf, "one-beat frame")
    st = await tb.rd("status")
    tb.check(st >> E.STATUS_ERRCNT_SHIFT == 3, f"error-frame count {st >> E.STATUS_ERRCNT_SHIFT} != 3")
    # missing TLAST: 3 frames in (the first without TLAST) -> 3 frames out, the third right
    fd0 = await tb.rd("frames_done")
    await tb.start(auto_restart=True)
    # frame 1 without TLAST: its bytes and frame 2's in one stream packet (TLAST only at its end)
    await tb.source.send(AxiStreamFrame(tb.frame_bytes(frames[1]) + tb.frame_bytes(frames[2])))
    await tb.send(tb.frame_bytes(frames[3]))
    outs = [await tb.recv_logits() for _ in range(3)]
    await tb.wr("AP_CTRL", 0)
    await ClockCycles(dut.ap_clk, 50)
    fd = await tb.rd("frames_done")
    tb.write_result(log=log, missing_tlast=outs, frames_done=fd - fd0)
    tb.check(np.array_equal(outs[0], errf) and np.array_equal(outs[1], errf),
             f"missing TLAST: outputs {outs[0][:3]}, {outs[1][:3]}: expected two error frames")
    tb.check(np.array_equal(outs[2], expected[3]), "missing TLAST: the frame after it is wrong")
    tb.check(fd - fd0 == 3, f"missing TLAST: frames_done advanced by {fd - fd0}, expected 3")
    tb.check(tb.sink.count() == 0, "extra output frames")


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
async def ddr_faults(dut):
    """A read error on the weights, a write error on the activations (when the network writes DDR),
    a base address out of range, a weight image of another network: each sets its status bit,
    answers the frame with an error frame, and the next frame is right."""
    tb = TB(dut)
    await tb.reset()
    await tb.set_bases()
    frames = tb.ex.frames(2, "random:3")[0]
    expected = tb.ex.golden(frames)
    errf = np.full(tb.ex.classes, ERR, np.int64)
    log = []

    async def one(frame_i: int, flag: str | None, what: str):
        dut._log.warning(f"ddr_faults: {what}")
        await tb.start()
        await tb.send(tb.frame_bytes(frames[frame_i]))
        got = await tb.recv_logits(timeout_cycles=5_000_000)
        st = await tb.rd("status")
        log.append(dict(what=what, status=st))
        if flag is None:
            tb.check(st & E.STATUS_FLAGS_MASK == 0, f"{what}: status {st:#x}")
            tb.check(np.array_equal(got, expected[frame_i]), f"{what}: logits differ from golden")
        else:
            tb.check(st & E.STATUS[flag].mask, f"{what}: status {st:#x} lacks {flag}")
            tb.check(np.array_equal(got, errf), f"{what}: not an error frame: {got[:4]}")

    img = len(tb.ex.weights)
    hdr = tb.ex.man["memory"]["header_bytes"]
    # 1) SLVERR on a weight word (the cache, if any, is dropped by rewriting the base)
    tb.ddr.wts.fail_reads(WTS_BASE + hdr, WTS_BASE + hdr + 64)
    await tb.set_bases()
    await one(0, "axi_read_error", "weight read error")
    tb.ddr.wts.clear_faults()
    await one(1, None, "good frame after a read error")
    # 2) SLVERR on an activation write, if the network writes DDR tensors
    if tb.ex.man["memory"]["scratch_bytes"]:
        tb.ddr.act.fail_writes(ACT_BASE, ACT_BASE + 4096)
        await one(0, "axi_write_error", "activation write error")
        tb.ddr.act.clear_faults()
        await one(1, None, "good frame after a write error")
    # 3) a weights address past the end of the DDR window
    bursts = tb.ddr.wts.read.bursts
    await tb.set_bases(wts=E.DDR_WINDOW_BYTES - 4096 * (img // 4096))   # the image runs past the window
    await one(0, "address_range", "weights address out of range")
    tb.check(tb.ddr.wts.read.bursts == bursts, "the engine read from an out-of-range address")
    await tb.set_bases()
    await one(1, None, "good frame after an address error")
    # 4) a weight image whose network ID is not this engine's
    bad = bytearray(tb.ex.weights[:hdr])
    bad[8] ^= 0xFF
    tb.ddr.load(WTS_BASE, bytes(bad))
    await tb.set_bases()
    await one(0, "weight_image", "weight image of another network")
    tb.ddr.load(WTS_BASE, tb.ex.weights[:hdr])
    await tb.set_bases()
    await one(1, None, "good frame after a foreign weight image")
    tb.write_result(log=log, image_bytes=img)


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
async def busy_hole(dut):
    """The memory isolates the last MAC step of layer ZQ_TARGET_LAYER (a layer that writes DDR):
    it holds the W channel so that the output FIFO fills and the loop stops exactly one step
    before the layer's end, waits until every result is in, then lets W go: the last step is
    issued alone, long after the one before it. Then the frame must still be right."""
    tb = TB(dut)
    name = _env("ZQ_TARGET_LAYER")
    li = [l["name"] for l in tb.ex.man["layers"]].index(name)
    iso = LastStepIsolator(dut, (tb.ddr.act, tb.ddr.wts), li, tb.ex.man["layers"][li]["mac_cycles"],
                           fifo_threshold=E.RTL_OUT_FIFO_UNITS - E.RTL_OUT_FIFO_MARGIN)
    tb.ddr.hooks.append(iso.cycle)
    got, expected = await tb.single_frames("random:13", 2, stop=lambda: not iso.done)
    status = await tb.rd("status")
    tb.write_result(isolator=iso.report(), logits=got, expected=expected[:len(got)], status=status)
    tb.check(iso.done, f"the memory could not isolate the last step of {name}: {iso.report()}")
    tb.check(np.array_equal(got[0], expected[0]), f"logits of the frame whose last {name} step was isolated "
                                                  f"({iso.report()}) differ from golden: {got[0].tolist()} != "
                                                  f"{expected[0].tolist()}")
    tb.check(status == 0, f"status 0x{status:08x} ({E.decode_status(status)})")
    tb.check(len(got) == 2 and np.array_equal(got[1], expected[1]), "the frame after it differs from golden")


class LateLastRow:
    """A memory that answers the last input row of layer ``li`` late. The layer (a 1x1 stride-2
    conv over a DDR tensor) never reads that row, so its loop ends while the row is still in
    flight: its R beats are held until ``hold_after`` cycles after zq_core has gone idle, and
    (when the engine has moved on meanwhile) until the next layer's input DMA has started."""

    T_FETCH, T_DECODE, T_WAITWR = 2, 3, 4

    def __init__(self, dut, port, li: int, rows: int, hold_after: int = 100):
        self.li, self.rows, self.hold_after = li, rows, hold_after
        self.r = dict(li=signal_reader(dut.li), top=signal_reader(dut.state), p_y=signal_reader(dut.u_fill.u_fill0.p_y),
                      core=signal_reader(dut.core_busy))
        self.idle_at = None
        self.holding = False
        self.held_past_layer = 0          # frames whose last row was still held when the layer's loop ended
        port.hold("r", self.hold)

    def hold(self, c: int) -> bool:
        r = self.r
        li = r["li"]()
        if li == self.li and r["p_y"]() >= self.rows - 1:
            if not r["core"]() and self.idle_at is None:
                self.idle_at = c
                self.held_past_layer += 1
            h = self.idle_at is None or c < self.idle_at + self.hold_after
        else:
            h = li == self.li + 1 and self.holding and r["top"]() in (self.T_FETCH, self.T_DECODE, self.T_WAITWR)
        if not h and li != self.li:
            self.idle_at = None
        self.holding = h
        return h


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
async def late_last_row(dut):
    """Layer ZQ_TARGET_LAYER leaves the last row of its DDR source unread; the memory answers that
    row only after the layer's loop has ended: the next layer (which reads DDR too) must not take
    those beats, every frame bit-exact."""
    tb = TB(dut)
    name = _env("ZQ_TARGET_LAYER")
    layers = tb.ex.man["layers"]
    li = [l["name"] for l in layers].index(name)
    late = LateLastRow(dut, tb.ddr.act, li, layers[li]["in_size"])
    got, expected = await tb.single_frames("random:19", 2)
    status = await tb.rd("status")
    mism = [i for i in range(len(got)) if not np.array_equal(got[i], expected[i])]
    tb.write_result(held_past_layer=late.held_past_layer, mismatches=mism, status=status)
    tb.check(late.held_past_layer == len(got), f"the last row of {name} was held past the layer's end in "
                                               f"{late.held_past_layer} of {len(got)} frames")
    tb.check(not mism, f"frames {mism} differ from golden after {name}'s unread last row came late "
                       f"(got {got[mism[0]].tolist() if mism else ''}, expected {expected[mism[0]].tolist() if mism else ''})")
    tb.check(status == 0, f"status 0x{status:08x} ({E.decode_status(status)})")


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
async def reset_reads_in_flight(dut):
    """A PL reset while the weight port has its 8 reads in flight (R held back once the header is
    in): the memory answers them after the reset, from a weight image the host has since
    overwritten (garbage); the next frame, on a fresh copy of the image, must take none of those
    late beats: right logits, status 0, and the frame after it too."""
    tb = TB(dut)
    await tb.reset()
    await tb.set_bases()
    frames = tb.ex.frames(3, "random:17")[0]
    expected = tb.ex.golden(frames)
    port = tb.ddr.wts
    hdr_beats = tb.ex.man["memory"]["header_bytes"] * 8 // E.AXI_DATA_BITS
    hold = port.hold("r", lambda c: port.read.beats >= hdr_beats)
    await tb.start()
    sender = cocotb.start_soon(tb.send(tb.frame_bytes(frames[0])))
    for _ in range(20000):
        await RisingEdge(dut.ap_clk)
        if port.reads_outstanding >= E.MEMORY_MODEL.max_reads:
            break
    in_flight = port.reads_outstanding
    tb.check(in_flight >= 2, f"only {in_flight} weight reads in flight before the reset")
    sender.kill()
    tb.source.clear()
    await tb.reset(cycles=5)
    # the host moves the image: the old copy is overwritten, the late beats carry that garbage
    tb.ddr.load(WTS_BASE, bytes((i * 37 + 11) & 0xFF for i in range(len(tb.ex.weights))))
    wts2 = WTS_BASE + 0x0100_0000
    tb.ddr.load(wts2, tb.ex.weights)
    await tb.set_bases(wts=wts2)
    got = []
    await tb.start(auto_restart=True)
    cocotb.start_soon(tb.send(tb.frame_bytes(frames[1])))
    await ClockCycles(dut.ap_clk, 30)            # the new frame's reads queue behind the late ones
    port.release("r", hold)
    got.append(await tb.recv_logits())
    cocotb.start_soon(tb.send(tb.frame_bytes(frames[2])))
    got.append(await tb.recv_logits())
    await tb.wr("AP_CTRL", 0)
    status = await tb.rd("status")
    late = port.read.bursts
    tb.write_result(in_flight=in_flight, logits=got, expected=expected[1:], status=status, wts_bursts=late)
    tb.check(np.array_equal(got[0], expected[1]), f"the frame after a reset with {in_flight} reads in flight: "
                                                  f"{got[0].tolist()} != {expected[1].tolist()} (status "
                                                  f"{E.decode_status(status)})")
    tb.check(np.array_equal(got[1], expected[2]), "the second frame after the reset differs from golden")
    tb.check(status == 0, f"status 0x{status:08x} ({E.decode_status(status)}) after the reset with reads in flight")


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms", skip=_env("ZQ_DEBUG") is None)
async def debug_state(dut):
    """Debugging aid (ZQ_DEBUG=<cycles>): one frame, then the internal state after that many cycles."""
    tb = TB(dut)
    await tb.reset()
    await tb.set_bases()
    frames = tb.ex.frames(1, "vectors")[0]
    await tb.start()
    cocotb.start_soon(tb.send(tb.frame_bytes(frames[0])))
    names = _env("ZQ_DEBUG_SIGNALS", "").split(",")
    trace = []
    for c in range(int(_env("ZQ_DEBUG"))):
        await RisingEdge(dut.ap_clk)
        if c % int(_env("ZQ_DEBUG_EVERY", "100")) == 0:
            row = {}
            for n in names:
                if not n:
                    continue
                obj = dut
                for part in n.split("."):
                    obj = getattr(obj, part)
                try:
                    row[n] = int(obj.value)
                except ValueError:
                    row[n] = str(obj.value)
            trace.append((c, row))
    tb.write_result(trace=trace, out_frames=tb.sink.count())
