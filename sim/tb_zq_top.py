"""cocotb testbench of ``zq_top`` (rtl/ or the Vitis HLS export).

Run through :mod:`zynqflow.sim.rtl_sim` (pytest: ``tests/test_rtl_zq_top.py``).
Configuration comes from environment variables:

``ZQ_EXPORT``   export directory (manifest.json, integers.npz, vectors_in.bin)
``ZQ_RTL``      ``rtl`` or ``hls`` (HLS: no layer profiling registers)
``ZQ_RESULT``   JSON file this testbench writes its measurements to
``ZQ_FRAMES``   number of frames (run_frames)
``ZQ_SOURCE``   ``vectors`` (the export's test vectors, repeated), ``random:<seed>``
                or a ``.npz`` with ``frames`` (N,H,W,C uint8) and optionally ``labels``
``ZQ_MODE``     ``auto`` (auto_restart, frames back to back) or ``single`` (one ap_start per frame)
``ZQ_BACKPRESSURE``  1: random TVALID gaps on the input and random TREADY on the output

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
from cocotbext.axi import (AxiLiteBus, AxiLiteMaster, AxiStreamBus, AxiStreamFrame, AxiStreamSink,
                           AxiStreamSource)

from zynqflow.spec.qnet import QNet
from zynqflow.spec.golden import golden_logits
from zynqflow.sim.rtl_params import FRAME_OVERHEAD, LAYER_OVERHEAD, load_regmap

CLK_NS = 10
ERR_VALUE = -32768
TIMEOUT_MS = float(os.environ.get("ZQ_TIMEOUT_MS", "100"))   # simulated time limit per test


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

    def frames(self, n: int, source: str):
        labels = None
        if source == "vectors":
            if not len(self.vectors):
                source = "random:1"
            else:
                idx = np.arange(n) % len(self.vectors)
                return self.vectors[idx], None
        if source.startswith("random"):
            seed = int(source.split(":")[1]) if ":" in source else 1
            rng = np.random.default_rng(seed)
            return rng.integers(0, 256, (n,) + self.shape, dtype=np.uint8), None
        z = np.load(source)
        frames = z["frames"][:n]
        if "labels" in z:
            labels = z["labels"][:n]
        return frames, labels

    def golden(self, frames):
        return golden_logits(self.qnet, frames)


class TB:
    def __init__(self, dut):
        self.dut = dut
        self.regmap = load_regmap()
        self.reg = self.regmap["offsets"]
        self.kind = _env("ZQ_RTL", "rtl")
        self.ex = Export(_env("ZQ_EXPORT"))
        cocotb.start_soon(Clock(dut.ap_clk, CLK_NS, unit="ns").start())
        self.source = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_in"), dut.ap_clk, dut.ap_rst_n,
                                      reset_active_level=False)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_out"), dut.ap_clk, dut.ap_rst_n,
                                  reset_active_level=False)
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axi_control"), dut.ap_clk, dut.ap_rst_n,
                                  reset_active_level=False)
        for lg in (self.source.log, self.sink.log, self.axil.write_if.log, self.axil.read_if.log):
            lg.setLevel("WARNING")
        self.result: dict = {}
        self.cycle = 0
        self.hs_in_first: list[int] = []    # cycle of each frame's first input handshake
        self.hs_out_last: list[int] = []    # cycle of each frame's last output handshake
        self._mon = None

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

    async def start(self, auto_restart: bool = False):
        await self.wr("AP_CTRL", 0x81 if auto_restart else 0x01)

    def frame_bytes(self, frame: np.ndarray) -> bytes:
        return np.ascontiguousarray(frame, np.uint8).tobytes()   # HWC, pixel 0 in byte lane 0

    async def send(self, data: bytes):
        await self.source.send(AxiStreamFrame(data))

    async def recv_logits(self) -> np.ndarray:
        fr = await self.sink.recv()
        v = np.frombuffer(bytes(fr.tdata), "<i4").astype(np.int64)
        return v

    def set_backpressure(self, on: bool, seed: int = 7):
        if on:
            rng = random.Random(seed)
            rng2 = random.Random(seed + 1)
            self.source.set_pause_generator(iter(lambda: rng.random() < 0.35, None))
            self.sink.set_pause_generator(iter(lambda: rng2.random() < 0.45, None))
        else:
            self.source.clear_pause_generator()
            self.sink.clear_pause_generator()

    def start_monitor(self):
        self._mon = cocotb.start_soon(self._monitor())

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

    def expected_frame_cycles(self, layer_cycles: list[int]) -> int:
        """cycles_last of a computed frame without input gaps or output backpressure."""
        return self.in_beats + self.im2col_words + sum(layer_cycles) + self.ex.classes + FRAME_OVERHEAD

    @property
    def in_beats(self) -> int:
        return (self.ex.in_bytes + 3) // 4

    @property
    def im2col_words(self) -> int:
        """Words zq_im2col writes into buffer 0 (one per cycle): the export's buffers_words[0]."""
        return int(self.ex.man["buffers_words"][0])


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
    tb.set_backpressure(bp, seed=int(_env("ZQ_SEED", "7")))
    t_wall = time.time()
    t_sim0 = cocotb.utils.get_sim_time("ns")
    got, cycles_last, t_done = [], [], []
    if mode == "auto":
        await tb.start(auto_restart=True)
        for f in frames:
            await tb.send(tb.frame_bytes(f))
        for i in range(n):
            got.append(await tb.recv_logits())
            t_done.append(cocotb.utils.get_sim_time("ns"))
        await tb.wr("AP_CTRL", 0x00)   # stop auto-restart
    else:
        for f in frames:
            await tb.start()
            await tb.send(tb.frame_bytes(f))
            got.append(await tb.recv_logits())
            t_done.append(cocotb.utils.get_sim_time("ns"))
            cycles_last.append(await tb.rd("cycles_last"))
            tb.check(await tb.rd("status") == 0, f"frame {len(got) - 1}: status {await tb.rd('status')} != 0")
    wall = time.time() - t_wall
    sim_cycles = (cocotb.utils.get_sim_time("ns") - t_sim0) / CLK_NS
    await ClockCycles(dut.ap_clk, 20)
    frames_done = await tb.rd("frames_done")
    cyc_last = await tb.rd("cycles_last")
    extra = tb.sink.count()
    got_arr = np.array(got, dtype=np.int64).reshape(n, -1) if got else np.zeros((0, tb.ex.classes), np.int64)
    mism = [i for i in range(n) if got_arr.shape[1] != expected.shape[1] or not np.array_equal(got_arr[i], expected[i])]
    res = dict(frames=n, mode=mode, backpressure=bp, logits=got_arr, expected=expected, mismatches=mism,
               frames_done=frames_done, cycles_last=cyc_last, cycles_last_per_frame=cycles_last,
               t_done_ns=t_done, sim_cycles=sim_cycles, wall_s=wall, extra_output_frames=extra)
    if labels is not None:
        res["labels"] = np.asarray(labels)
        res["top1"] = float(np.mean(got_arr.argmax(axis=1) == np.asarray(labels))) if n else 0.0
    if tb.kind == "rtl":
        lc = []
        for i in range(len(tb.ex.man["layers"])):
            await tb.wr("layer_sel", i)
            lc.append(await tb.rd("layer_cycles"))
        res["layer_cycles"] = lc
    tb.write_result(**res)
    tb.check(not mism, f"{len(mism)} of {n} frames differ from the golden model (first: {mism[:1]}; "
                       f"got {got_arr[mism[0]].tolist() if mism else ''} expected {expected[mism[0]].tolist() if mism else ''})")
    tb.check(frames_done == n, f"frames_done = {frames_done}, sent {n}")
    tb.check(extra == 0, f"{extra} extra output frames")


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
async def registers(dut):
    """Register map: ID, build parameters, ap_ctrl bits, interrupts, cycles_last, frames_done."""
    tb = TB(dut)
    await tb.reset()
    tb.start_monitor()
    m = tb.ex.man
    ctrl = await tb.rd("AP_CTRL")
    tb.check(ctrl & 0x4, f"AP_CTRL after reset = {ctrl:#x}: ap_idle not set")
    tb.check(await tb.rd("frames_done") == 0, "frames_done not 0 after reset")
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
        cyc = await tb.rd("cycles_last")
        vld = await tb.rd("cycles_last_ctrl")
        vld2 = await tb.rd("cycles_last_ctrl")
        measured = tb.hs_out_last[-1] - tb.hs_in_first[-1] + 1
        results.append(dict(cycles_last=cyc, measured=measured, ctrl=ctrl1, isr=isr, irq=irq))
        tb.check(irq == 1 and isr & 1, f"frame {i}: interrupt {irq}, ISR {isr:#x} after ap_done")
        await tb.wr("ISR", 1)   # toggle-on-write clears it
        tb.check(await tb.rd("ISR") == 0 and int(dut.interrupt.value) == 0, "ISR/interrupt not cleared by TOW")
        tb.check(ctrl1 & 0x2, f"ap_done not set after a frame (AP_CTRL {ctrl1:#x})")
        tb.check(not (ctrl2 & 0x2), f"ap_done not cleared on read (AP_CTRL {ctrl2:#x})")
        tb.check(ctrl2 & 0x4, f"ap_idle not set after a frame (AP_CTRL {ctrl2:#x})")
        tb.check(vld == 1 and vld2 == 0, f"cycles_last_ap_vld {vld}, {vld2} (expected 1 then 0: COR)")
        tb.check(cyc == measured, f"frame {i}: cycles_last {cyc} != measured {measured} (first input beat to last output beat)")
        tb.check(await tb.rd("frames_done") == i + 1, "frames_done does not count frames")
        tb.check(await tb.rd("status") == 0, "status != 0 for a good frame")
    net_id = await tb.rd("net_id")
    bp = await tb.rd("build_params")
    e = m["engine"]
    want_bp = e["n_pe"] | e["n_ci"] << 8 | tb.ex.qnet.cfg.weight_bits << 16 | tb.ex.qnet.cfg.act_bits << 24
    tb.write_result(net_id=net_id, build_params=bp, frames=results)
    tb.check(net_id == m["network_id_int"], f"net_id {net_id:#x} != manifest {m['network_id_int']:#x}")
    tb.check(bp == want_bp, f"build_params {bp:#x} != {want_bp:#x}")


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
async def layer_cycles(dut):
    """Per-layer cycles = co_groups*out_size^2*k^2*ci_chunks + LAYER_OVERHEAD; frame total by formula."""
    tb = TB(dut)
    if tb.kind != "rtl":
        tb.write_result(skipped="the HLS engine has no layer profiling registers")
        return
    await tb.reset()
    frames = tb.ex.frames(1, "vectors")[0]
    await tb.start()
    await tb.send(tb.frame_bytes(frames[0]))
    got = await tb.recv_logits()
    tb.check(np.array_equal(got, tb.ex.golden(frames)[0]), "logits differ from golden")
    tb.check(await tb.rd("layer_cycles_ctrl") == 1, "layer_cycles_ap_vld not set")
    rows = []
    for i, l in enumerate(tb.ex.man["layers"]):
        await tb.wr("layer_sel", i)
        c = await tb.rd("layer_cycles")
        rows.append(dict(name=l["name"], cycles=c, mac_cycles=l["hw_cycles"], overhead=c - l["hw_cycles"]))
    await tb.wr("layer_sel", len(rows))
    beyond = await tb.rd("layer_cycles")
    cyc = await tb.rd("cycles_last")
    want = tb.expected_frame_cycles([r["cycles"] for r in rows])
    tb.write_result(layers=rows, cycles_last=cyc, expected_cycles_last=want,
                    mac_cycles=tb.ex.man["cycles_mac_array"])
    for r in rows:
        tb.check(r["overhead"] == LAYER_OVERHEAD,
                 f"layer {r['name']}: {r['cycles']} cycles = {r['mac_cycles']} + {r['overhead']}, "
                 f"expected overhead {LAYER_OVERHEAD}")
    tb.check(beyond == 0, f"layer_cycles for layer_sel >= N_LAYERS = {beyond}, expected 0")
    tb.check(cyc == want, f"cycles_last {cyc} != formula {want}")


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
async def reset_mid_frame(dut):
    """ap_rst_n low in the middle of a frame; everything resets; the next frame is right."""
    tb = TB(dut)
    await tb.reset()
    frames = tb.ex.frames(3, "random:5")[0]
    expected = tb.ex.golden(frames)
    # one good frame first, so that counters are non-zero
    await tb.start()
    await tb.send(tb.frame_bytes(frames[0]))
    got0 = await tb.recv_logits()
    tb.check(np.array_equal(got0, expected[0]), "frame before reset wrong")
    # half a frame, then reset
    await tb.start(auto_restart=True)
    await tb.source.send(AxiStreamFrame(tb.frame_bytes(frames[1])))
    beats = tb.in_beats
    for _ in range(beats // 2 + 3):
        await RisingEdge(dut.ap_clk)
    tb.source.clear()
    await tb.reset(cycles=5)
    regs = {k: await tb.rd(k) for k in ("AP_CTRL", "frames_done", "status", "cycles_last", "ISR", "GIE")}
    tb.check(regs["frames_done"] == 0, f"frames_done {regs['frames_done']} after reset")
    tb.check(regs["AP_CTRL"] & 0x81 == 0 and regs["AP_CTRL"] & 0x4, f"AP_CTRL {regs['AP_CTRL']:#x} after reset")
    tb.check(tb.sink.count() == 0, "output produced for the interrupted frame")
    # mid-compute reset too: a whole frame in, reset while the engine computes
    await tb.start()
    await tb.send(tb.frame_bytes(frames[1]))
    await tb.source.wait()
    await ClockCycles(dut.ap_clk, 40)
    await tb.reset(cycles=3)
    tb.check(tb.sink.count() == 0, "output produced for the frame interrupted while computing")
    # clean frame
    await tb.start()
    await tb.send(tb.frame_bytes(frames[2]))
    got = await tb.recv_logits()
    fd = await tb.rd("frames_done")
    tb.write_result(regs_after_reset=regs, logits=got, expected=expected[2], frames_done=fd)
    tb.check(np.array_equal(got, expected[2]), f"frame after reset: {got.tolist()} != {expected[2].tolist()}")
    tb.check(fd == 1, f"frames_done {fd} != 1 after reset + one frame")


@cocotb.test(timeout_time=TIMEOUT_MS, timeout_unit="ms")
async def protocol_errors(dut):
    """Short and long frames: status bits, error frame, next frame correct; also back to back."""
    tb = TB(dut)
    await tb.reset()
    frames = tb.ex.frames(4, "random:9")[0]
    expected = tb.ex.golden(frames)
    nb = tb.ex.in_bytes
    err_frame = np.full(tb.ex.classes, ERR_VALUE, np.int64)
    log = []

    async def one(data: bytes, want_status: int, want: np.ndarray, what: str):
        await tb.start()
        await tb.send(data)
        got = await tb.recv_logits()
        st = await tb.rd("status")
        log.append(dict(what=what, status=st, logits=got))
        tb.check(st == want_status, f"{what}: status {st} != {want_status}")
        tb.check(np.array_equal(got, want), f"{what}: output {got.tolist()} != {want.tolist()}")

    short = tb.frame_bytes(frames[0])[: nb - 8]          # TLAST two beats early
    long_ = tb.frame_bytes(frames[0]) + bytes(range(12))  # three beats too many
    await one(short, 1, err_frame, "short frame")
    await one(tb.frame_bytes(frames[1]), 0, expected[1], "good frame after short")
    await one(long_, 2, err_frame, "long frame")
    await one(tb.frame_bytes(frames[2]), 0, expected[2], "good frame after long")
    await one(tb.frame_bytes(frames[3])[:4], 1, err_frame, "one-beat frame")
    # back to back in auto-restart mode: exactly one output frame per input frame, in order
    seq = [(tb.frame_bytes(frames[1]), expected[1]), (short, err_frame), (long_, err_frame),
           (tb.frame_bytes(frames[3]), expected[3])]
    fd0 = await tb.rd("frames_done")
    await tb.start(auto_restart=True)
    for data, _ in seq:
        await tb.send(data)
    outs = [await tb.recv_logits() for _ in seq]
    await tb.wr("AP_CTRL", 0)
    await ClockCycles(dut.ap_clk, 50)
    fd = await tb.rd("frames_done")
    tb.write_result(log=log, auto_outputs=outs, frames_done=fd)
    for i, ((_, want), got) in enumerate(zip(seq, outs)):
        tb.check(np.array_equal(got, want), f"auto-restart frame {i}: {got.tolist()} != {want.tolist()}")
    tb.check(fd - fd0 == len(seq), f"frames_done advanced by {fd - fd0}, expected {len(seq)}")
    tb.check(tb.sink.count() == 0, "extra output frames")
