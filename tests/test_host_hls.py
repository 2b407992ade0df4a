"""The board driver against the HLS engine's register behaviour as Vitis generates it: the C-simulated
engine behind the control block of either generation (sim/world/vitis_ctrl.py, built from generated
*_control_s_axi.v files: Vitis 2022.1's IP_ISR clear on read, 2023.2 and later toggle on write; in
both, ap_done and ap_ready clear on read and absent under auto_restart), registers laid out from
zq_top's argument list by UG1399's rules (sim/world/vitis_axilite.py, checked against generated
maps; not from spec/engine.py), a .hwh that pynq's own parser reads. The same open, network-ID,
streaming, error-frame and recovery checks as on the RTL twin (tests/test_host_rtl.py,
tests/test_host_bringup.py), and the end of a stream behind a slow host."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil

import numpy as np
import pytest

from zynqflow.export import fixtures as exports
from zynqflow.host import DmaError, EngineStatusError, NetworkIdMismatch
from zynqflow.host.manifest import Export
from zynqflow.spec.golden import golden_logits

pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CXX", "g++")) is None
                                or importlib.util.find_spec("hls4ml") is None,
                                reason="the C simulation needs g++ and hls4ml's ap_types")


@pytest.fixture(scope="module")
def tiny() -> Export:
    return Export(exports.random_export("zynqnet-tiny", seed=0, vectors=16))


@pytest.fixture(scope="module")
def frames(tiny) -> np.ndarray:
    vec, _ = tiny.vectors()
    rng = np.random.default_rng(3)
    return np.concatenate([vec, rng.integers(0, 256, (8,) + tiny.input_shape, dtype=np.uint8)])


def _ap_types():
    from zynqflow.sim.csim.runner import ap_types_dir

    return ap_types_dir()


def _open(tiny, tmp_path, **kw):
    from zynqflow.sim.csim.hls_host import open_hls

    return open_hls(tiny, tmp_path / "zq_hls.hwh", **kw)


GENERATIONS = ("2022.1", "2023.2")


# ---- the register map: from the HLS function's arguments, by UG1399's rules -----------------------
VENDOR_MAPS = {
    # mahyarsamani/sega-fpga, GPNKernelv1/imports/rtl_kernel_wizard_0_control_s_axi.v (Vitis HLS 2022.1)
    "rtl_kernel_wizard_0": (
        "void rtl_kernel_wizard_0(unsigned int GPNControl, ap_uint<64> FirstMessage, "
        + ", ".join(f"unsigned int MemoryOffset{i}" for i in range(17)) + ", unsigned int TotalEdgeSize) {\n"
        + "".join(f"#pragma HLS INTERFACE mode=s_axilite port={n}\n" for n in
                  ["GPNControl", "FirstMessage"] + [f"MemoryOffset{i}" for i in range(17)] + ["TotalEdgeSize"]),
        dict(GPNControl=0x10, FirstMessage_1=0x18, FirstMessage_2=0x1C,
             **{f"MemoryOffset{i}": 0x24 + 8 * i for i in range(17)}, TotalEdgeSize=0xAC)),
    # CTSRD-CHERI/cheri-hls, examples/vect_mult/vect_mult_prj/solution1/.autopilot/db/coregen/
    # vect_mult_control_s_axi.v (Vitis HLS 2023.1)
    "vect_mult": (
        "void vect_mult(int* size, int* a, int* b, int* c) {\n"
        + "".join(f"#pragma HLS INTERFACE mode=m_axi port={n} offset=slave bundle=gmem\n"
                  f"#pragma HLS INTERFACE mode=s_axilite port={n}\n" for n in "size a b c".split()),
        dict(size_1=0x10, size_2=0x14, a_1=0x1C, a_2=0x20, b_1=0x28, b_2=0x2C, c_1=0x34, c_2=0x38)),
    # soheilbh/fpga-vs-cpu-realtime-vision, hls_syn/hls_design_output/solution1/impl/ip/hdl/verilog/
    # detect_and_recognize_control_s_axi.v (Vitis HLS 2024.2)
    "detect_and_recognize": (
        "void detect_and_recognize(hls::stream<pix>& in, ap_uint<8>& result) {\n"
        "#pragma HLS INTERFACE mode=axis port=in\n#pragma HLS INTERFACE mode=s_axilite port=result\n",
        dict(result=0x10, result_ctrl=0x14)),
}


@pytest.mark.parametrize("top", sorted(VENDOR_MAPS))
def test_allocation_rebuilds_what_vitis_generated(top):
    """The allocation rules (sim/world/vitis_axilite.py) give the register maps Vitis generated for
    these functions (their *_control_s_axi.v), from the functions' argument lists alone."""
    from zynqflow.sim.world.vitis_axilite import allocate_source

    src, want = VENDOR_MAPS[top]
    src += "#pragma HLS INTERFACE mode=s_axilite port=return\n#pragma HLS INTERFACE mode=ap_ctrl_hs port=return\n}\n"
    got = {r.name: r.offset for r in allocate_source(src, top)}
    assert {n: got[n] for n in ("CTRL", "GIER", "IP_IER", "IP_ISR")} == dict(CTRL=0, GIER=4, IP_IER=8, IP_ISR=0xC)
    assert {n: o for n, o in got.items() if o >= 0x10} == want


def test_zq_top_registers_from_its_arguments(tiny):
    """zq_top's registers as Vitis lays them out from its argument list and interface pragmas (the
    preprocessed hls/zq_top.cpp, not hls/zq_spec.h's tables nor spec/engine.py) are where the driver
    reads them (the HLS register map of the engine specification): every register of the map is
    generated, at its offset. A changed pragma or argument type shows."""
    from zynqflow.host.registers import RegMap, check_register_offsets
    from zynqflow.sim.csim.runner import ap_types_dir
    from zynqflow.sim.world.vitis_axilite import HLS_DIR, AxiliteError, allocate_source, preprocess, top_from_source

    regs = {r.name: dict(address_offset=r.offset) for r in top_from_source(tiny.dir, ap_types_dir())}
    rm = RegMap("hls")
    assert check_register_offsets(dict(rm.offsets), regs) == dict(rm.offsets)      # all compared, all equal
    assert {r.name: r.access for r in top_from_source(tiny.dir, ap_types_dir())}["status_ctrl"] == "read-only"
    text = preprocess(HLS_DIR / "zq_top.cpp", [tiny.dir, HLS_DIR, ap_types_dir()])
    assert "mode=s_axilite port=frames_done offset=0x38" in text
    with pytest.raises(AxiliteError, match="port frames_done at 0x2c..0x33 overlaps port status"):
        allocate_source(text.replace("port=frames_done offset=0x38", "port=frames_done offset=0x2C"), "zq_top")
    moved = {r.name: dict(address_offset=r.offset) for r in allocate_source(
        text.replace("port=net_id offset=0x48", "port=net_id offset=0x78"), "zq_top")}
    with pytest.raises(Exception, match=r"net_id at 0x48 .* but 'net_id' at 0x78"):
        check_register_offsets(dict(rm.offsets), moved)
    as_input = {r.name for r in allocate_source(text.replace("zq_reg_t& status,", "const zq_reg_t& status,"), "zq_top")}
    assert "status" in as_input and "status_ctrl" not in as_input                   # an input has no ap_vld word


@pytest.mark.parametrize("generation", GENERATIONS)
def test_vitis_control_block_behaviour(generation, tiny):
    """The generated control block of each generation (sim/world/vitis_ctrl.py cites the files):
    ap_start self-clearing, ap_done/ap_ready clear on read and absent under auto_restart (one ap_done
    when the block goes idle after auto_restart is cleared), IP_ISR set by every call's ap_done, clear
    on read (2022.1) or toggle on write (2023.2 on)."""
    from zynqflow.sim.world.vitis_ctrl import AP_DONE, AP_IDLE, AP_READY, AP_START, AUTO_RESTART, VitisControl
    from zynqflow.sim.world.vitis_hwh import hls_control_registers

    regs = {r["name"]: dict(address_offset=r["offset"]) for r in hls_control_registers(tiny.dir, _ap_types())}
    c = VitisControl(regs, generation)
    off = {n: r["address_offset"] for n, r in regs.items()}
    assert c.read(off["CTRL"]) == AP_IDLE
    c.write(off["wts_1"], 0x1000)
    c.write(off["wts_2"], 0x2)
    assert c.read(off["wts_1"]) == 0x1000 and c.read(off["wts_2"]) == 2
    c.write(off["CTRL"], AP_START)
    assert c.take_start() == dict(wts=0x2_0000_1000, act=0)                      # 64-bit argument from _1/_2
    assert c.read(off["CTRL"]) == AP_START and c.take_start() is None           # running: not idle
    c.write(off["CTRL"], 0)                                                     # a 0 does not clear ap_start
    assert c.read(off["CTRL"]) & AP_START
    c.write(off["IP_IER"], 1)
    c.write(off["GIER"], 1)
    c.finish(dict(status=0, net_id=0x1234))
    v = c.read(off["CTRL"])
    assert v & (AP_DONE | AP_READY | AP_IDLE) == AP_DONE | AP_READY | AP_IDLE and not v & AP_START   # self-cleared
    assert v & 0x200 and c.interrupt                                            # ISR ap_done, GIER
    assert c.read(off["CTRL"]) & (AP_DONE | AP_READY) == 0                      # clear on read
    assert c.read(off["net_id"]) == 0x1234 and c.read(off["net_id_ctrl"]) == 1 and c.read(off["net_id_ctrl"]) == 0
    assert c.read(off["IP_ISR"]) == 1
    if generation == "2022.1":                                                  # clear on read; writes ignored
        assert c.read(off["IP_ISR"]) == 0 and not c.interrupt
        c.write(off["IP_ISR"], 1)
        assert c.read(off["IP_ISR"]) == 0
    else:                                                                       # toggle on write
        assert c.read(off["IP_ISR"]) == 1
        c.write(off["IP_ISR"], 1)
        assert c.read(off["IP_ISR"]) == 0 and not c.interrupt
        c.write(off["IP_ISR"], 2)
        assert c.read(off["IP_ISR"]) == 2
        c.write(off["IP_ISR"], 2)
    # auto_restart: every call restarts the block; CTRL shows neither ap_done nor ap_ready, IP_ISR does
    c.write(off["CTRL"], AP_START | AUTO_RESTART)
    for _ in range(3):
        assert c.take_start() is not None
        c.finish({})
        v = c.read(off["CTRL"])
        assert v & (AP_START | AUTO_RESTART) == AP_START | AUTO_RESTART and not v & (AP_DONE | AP_READY | AP_IDLE)
        assert c.read(off["IP_ISR"]) & 1
        if generation != "2022.1":
            c.write(off["IP_ISR"], 1)
    assert c.take_start() is not None
    c.write(off["CTRL"], 0)                                                     # auto_restart off mid-call ...
    c.finish({})
    v = c.read(off["CTRL"])                                                     # ... one ap_done, idle
    assert v & (AP_DONE | AP_IDLE) == AP_DONE | AP_IDLE and not v & AP_START and c.take_start() is None
    c.write(off["CTRL"], AP_START)                                              # then per-call ap_done again
    c.take_start()
    c.finish({})
    assert c.read(off["CTRL"]) & (AP_DONE | AP_READY) == AP_DONE | AP_READY


def test_hwh_read_by_pynq(tiny, tmp_path):
    """The .hwh the HLS simulation writes is read by pynq's own parser (pynqmetadata, as pynq.Overlay
    reads it): the same IPs, addresses, registers and interrupt pins as the simulation reads."""
    from zynqflow.sim.world.vitis_hwh import hls_control_registers, pynq_ip_dict, read_hwh, write_hwh

    hwh = write_hwh(tmp_path / "x.hwh", hls_control_registers(tiny.dir, _ap_types()))
    ours = read_hwh(hwh)
    regs = ours["zq_top_0"]["registers"]
    assert ours["zq_top_0"]["type"] == "zynqflow.org:hls:zq_top:1.0" and ours["zq_top_0"]["phys_addr"] == 0x4000_0000
    assert {"CTRL", "GIER", "IP_IER", "IP_ISR", "wts_1", "wts_2", "act_1", "act_2", "status_ctrl"} <= set(regs)
    assert regs["CTRL"]["fields"]["AUTO_RESTART"]["bit_offset"] == 7 and regs["wts_2"]["address_offset"] == 0x14
    assert ours["processing_system7_0"]["parameters"]["PCW_FPGA0_PERIPHERAL_FREQMHZ"] == "100"
    pytest.importorskip("pynqmetadata")
    ip, pins = pynq_ip_dict(hwh)
    for name, d in ours.items():
        for key in ("type", "phys_addr", "addr_range", "registers"):
            assert (ip[name].get(key) or None) == d.get(key), (name, key)
        assert {p: (v["controller"], v["index"]) for p, v in ip[name]["interrupts"].items()} == \
            {p: (v["controller"], v["index"]) for p, v in d["interrupts"].items()}
    assert ip["processing_system7_0"]["parameters"]["PCW_FPGA0_PERIPHERAL_FREQMHZ"] == "100"
    assert {k: v["index"] for k, v in pins.items() if not k.startswith("irq_concat")} == {
        "zq_top_0/interrupt": 0, "axi_dma_0/mm2s_introut": 1, "axi_dma_0/s2mm_introut": 2}
    # the RTL twin's .hwh the cocotb host jobs write (sim/rtl/tb_host.py): the same writer, read the same
    from zynqflow.sim.world.pynq_shim import vitis_hwh_registers
    from zynqflow.sim.world.vitis_hwh import registers_from_offsets
    from zynqflow.spec import engine as E

    offs = {n: r["address_offset"] for n, r in vitis_hwh_registers(E.offsets("rtl")).items()}
    rtl = write_hwh(tmp_path / "rtl.hwh", registers_from_offsets(offs))
    ip, _ = pynq_ip_dict(rtl)
    assert ip["zq_top_0"]["registers"] == read_hwh(rtl)["zq_top_0"]["registers"]
    assert {n: r["address_offset"] for n, r in ip["zq_top_0"]["registers"].items()} == offs


# ---- the driver through it -----------------------------------------------------------------------
@pytest.mark.parametrize("generation", GENERATIONS)
def test_hls_open_id_classify_stream(generation, tiny, frames, tmp_path):
    """Open (weights in the engine's DDR, wts/act as _1/_2), the network-ID check (net_id reads 0
    after ap_start: its output register updates when a call ends, so a one-beat probe frame),
    classify (ap_done clear-on-read), stream (auto_restart: no per-call ap_done), and both again on
    the interrupts (asyncio: IP_ISR clear on read in 2022.1, toggle on write after), bit-exact and in
    order, behind the control block of each Vitis generation; the engine idle after every call."""
    import asyncio

    gold = golden_logits(tiny.qnet(), frames)
    ol, drv = _open(tiny, tmp_path, generation=generation)
    dev = ol.device
    with drv:
        assert drv.engine == "hls" and drv.engine_from == "the .hwh" and drv.registers_checked
        assert drv.has_interrupts
        c = drv.classify(frames[:4])
        assert drv.id_probed and drv.hw_id == tiny.network_id and drv.engine_from == "the .hwh, confirmed by engine_info"
        s = drv.stream(frames)
        assert dev.ctrl.idle
        sa = drv.stream(frames[:5])
        ca = asyncio.run(drv.classify_async(frames[5:9]))
        assert ca.interrupts and dev.ctrl.idle
        st = asyncio.run(drv.stream_async(frames[2:8]))
        c2 = drv.classify(frames[9:11])
        assert dev.ctrl.idle and ol.csim.bases["wts"] == drv.bases["wts"] == dev.allocate.base
    assert np.array_equal(c.logits, gold[:4]) and np.array_equal(s.logits, gold) and np.array_equal(sa.logits, gold[:5])
    assert np.array_equal(ca.logits, gold[5:9]) and np.array_equal(st.logits, gold[2:8])
    assert np.array_equal(c2.logits, gold[9:11])
    assert c.cycles_last == [None] * 4 and c.engine == "hls"               # the HLS engine cannot count cycles
    assert np.all(np.diff(s.t_done) > 0) and s.frames_done == len(frames)
    assert [r.recoveries for r in (c, s, sa, ca, st, c2)] == [[]] * 6
    assert dev.calls == 1 + 4 + len(frames) + 5 + 4 + 6 + 2 and dev.ctrl.idle   # the probe, then one call per frame
    irq = ol.zq_top_0.interrupt
    assert irq.fired >= 4 and irq.timeouts == 0


def test_hls_network_id_mismatch(tiny, frames, tmp_path):
    from test_host_rtl import _other_network

    other = tmp_path / "other"
    m = _other_network(tiny, other)
    from zynqflow.sim.csim.runner import CSim
    from zynqflow.sim.csim.hls_host import HlsOverlay
    from zynqflow.host.board import open_driver

    ol = HlsOverlay(Export(other), tmp_path / "x.hwh", csim=CSim(tiny.dir))     # the bitstream holds tiny
    drv = open_driver(Export(other), ol, platform=ol.platform(), min_timeout_s=0.0)
    with pytest.raises(NetworkIdMismatch) as e:
        drv.classify(frames[:2])
    assert m["network_id"] in str(e.value) and f"0x{tiny.network_id:08x}" in str(e.value)
    assert ol.device.dma.mm2s.transfers == 1 and ol.device.calls == 1       # the probe only: no frame sent
    drv.close()


@pytest.mark.parametrize("generation", GENERATIONS)
def test_hls_error_frame_and_recovery(generation, tiny, frames, tmp_path):
    """An error frame (the weight image's header overwritten in DDR between two calls): EngineStatusError
    weight_image, the image reloaded, the next call right. A DMA error mid-stream (S2MM halted after 2
    beats of a frame) and an MM2S error mid-frame: recovered (reset, drained, re-sent), golden, in order."""
    gold = golden_logits(tiny.qnet(), frames)
    faults = [dict(channel="s2mm", transfer=3, kind="slave", beats=2), dict(channel="mm2s", transfer=12,
                                                                            kind="internal", beats=10)]
    ol, drv = _open(tiny, tmp_path, faults=faults, timeout_s=50 * tiny.frame_cycles() / 1e8, generation=generation)
    with drv:
        s = drv.stream(frames[:8])
        assert np.array_equal(s.logits, gold[:8]) and len(s.recoveries) == 1
        rec = s.recoveries[0]
        assert "DMASlvErr" in rec["reason"] and rec["drained"] >= 1
        c = drv.classify(frames[8:12])
        assert np.array_equal(c.logits, gold[8:12]) and len(c.recoveries) == 1 and c.recoveries[0]["flushes"] == 1
        wts = drv.bases["wts"]
        ol.device.allocate.mem.write(wts + 8, bytes([ol.device.allocate.mem.read(wts + 8, 1)[0] ^ 0xFF]))
        with pytest.raises(EngineStatusError) as e:
            drv.classify(frames[12:14])
        assert e.value.flags == ["weight_image"] and "copied the weight image into its buffer again" in str(e.value)
        again = drv.classify(frames[12:16])
        assert np.array_equal(again.logits, gold[12:16]) and drv.weight_loads == 2
    assert ol.device.dma.resets == 3 and ol.device.dma.stray_writes == []


def test_hls_without_recovery_dma_error(tiny, frames, tmp_path):
    """recover=False: the DMA stays halted (PG021) and the next call says so."""
    ol, drv = _open(tiny, tmp_path, faults=[dict(channel="s2mm", transfer=2, kind="decode")], recover=False)
    with drv:
        with pytest.raises(DmaError, match="DMADecErr"):
            drv.stream(frames[:4])
        with pytest.raises(DmaError, match="DMA channel not started"):
            drv.classify(frames[:1])
    json.dumps(ol.ip_dict)                                                   # the ip_dict is plain data


# ---- the same checks on both engines -------------------------------------------------------------
def _on_engine(engine: str, ex: Export, steps, faults=(), driver_export=None, generation: str = "2023.2") -> list[dict]:
    """Run ``steps`` [(op, frames)] through the board driver on the RTL twin (cocotb, the PYNQ shim)
    or on the HLS C-sim engine behind the Vitis control block; per step: logits or the error's type,
    and the recoveries."""
    if engine == "rtl":
        from test_host_rtl import _built
        from zynqflow.sim.rtl.host_job import run_job

        _built(ex.dir)
        try:
            res = run_job(ex, steps, sim=dict(faults=list(faults)), continue_on_error=True,
                          driver_export=driver_export, timeout_s=50 * ex.frame_cycles() / 1e8)
        except NetworkIdMismatch as e:
            return [dict(error="NetworkIdMismatch", mm2s=e.sim_summary["mm2s_transfers"])]
        if (res["steps"][0]["error"] or {}).get("type") == "NetworkIdMismatch":
            return [dict(error="NetworkIdMismatch", mm2s=res["mm2s_transfers"])]
        return [dict(logits=s.get("logits"), error=(s["error"] or {}).get("type"),
                     recoveries=[r["reason"].split(":")[0] for r in s.get("recoveries", [])]) for s in res["steps"]]
    from zynqflow.host.board import open_driver
    from zynqflow.sim.csim.runner import CSim
    from zynqflow.sim.csim.hls_host import HlsOverlay

    drv_ex = Export(driver_export) if driver_export is not None else ex
    # the HLS engine's network-ID check sends its one-beat probe first: the faults move by one transfer
    ol = HlsOverlay(drv_ex, _tmp_hwh(), [dict(f, transfer=f["transfer"] + 1) for f in faults], csim=CSim(ex.dir),
                    generation=generation)
    out = []
    with open_driver(drv_ex, ol, platform=ol.platform(), min_timeout_s=0.0, timeout_s=50 * ex.frame_cycles() / 1e8) as drv:
        for op, frames in steps:
            try:
                st = getattr(drv, op)(frames)
            except NetworkIdMismatch:
                return [dict(error="NetworkIdMismatch", mm2s=ol.device.dma.mm2s.transfers - 1)]   # less the probe
            out.append(dict(logits=st.logits, error=None, recoveries=[r["reason"].split(":")[0] for r in st.recoveries]))
    return out


def _tmp_hwh():
    import tempfile
    from pathlib import Path

    return Path(tempfile.mkdtemp()) / "zq_hls.hwh"


@pytest.mark.parametrize("engine", ["rtl", "hls-2022.1", "hls-2023.2"])
def test_same_open_stream_recovery_and_id_check_on_both_engines(engine, tiny, frames, tmp_path):
    """One scenario, both engines (the HLS engine behind both generations of Vitis's control block):
    open, classify, a stream whose S2MM halts mid-packet (recovered, re-sent), classify again: golden
    logits in order; then another network's manifest: refused before any input frame."""
    engine, _, generation = engine.partition("-")
    gold = golden_logits(tiny.qnet(), frames)
    steps = [("classify", frames[:3]), ("stream", frames[3:13]), ("classify", frames[13:16])]
    out = _on_engine(engine, tiny, steps, faults=[dict(channel="s2mm", transfer=6, kind="slave", beats=2)],
                     generation=generation or "2023.2")
    assert [o["error"] for o in out] == [None, None, None]
    for o, sl in zip(out, (slice(0, 3), slice(3, 13), slice(13, 16))):
        assert np.array_equal(o["logits"], gold[sl])
    assert [o["recoveries"] for o in out] == [[], ["DmaError"], []]
    from test_host_rtl import _other_network

    _other_network(tiny, tmp_path / "other")
    assert _on_engine(engine, tiny, [("classify", frames[:2])], driver_export=tmp_path / "other",
                      generation=generation or "2023.2") == [
        dict(error="NetworkIdMismatch", mm2s=0)]


# ---- the end of a stream (issue 25, point 8) ---------------------------------------------------------
@pytest.mark.parametrize("generation", GENERATIONS)
def test_stream_ends_idle_behind_a_slow_host(generation, tiny, frames, tmp_path):
    """auto_restart must be off before the engine ends the last frame's call, or it starts another one
    and waits, busy, for input that never comes. Behind a host a frame late at every register access
    (a Cortex-A9 preempted or flushing caches), the stream ends with the engine idle, one call per
    frame, and the next call right."""
    n = 6
    gold = golden_logits(tiny.qnet(), frames)
    ol, drv = _open(tiny, tmp_path, generation=generation, host_cycles=2 * tiny.frame_cycles(), timeout_s=0.05)
    dev = ol.device
    with drv:
        s = drv.stream(frames[:n])
        assert dev.ctrl.idle and not dev.ctrl.running, "the engine restarted after the last frame"
        assert dev.calls == 1 + n and s.recoveries == []                    # the ID probe, then one call per frame
        c = drv.classify(frames[n:n + 3])
        s2 = drv.stream(frames[:4])
    assert np.array_equal(s.logits, gold[:n]) and np.array_equal(c.logits, gold[n:n + 3])
    assert np.array_equal(s2.logits, gold[:4]) and dev.ctrl.idle and dev.calls == 1 + n + 3 + 4


@pytest.mark.parametrize("generation", GENERATIONS)
def test_stream_end_checks_ap_idle(generation, tiny, frames, tmp_path):
    """With an AXI4-Stream FIFO between the engine and the S2MM, the engine ends the last frame's call
    before its result is taken: a host a frame late finds it restarted, busy on a call without input.
    The driver checks ap_idle after the last result, ends that call with a one-beat frame and drains
    it: the engine idle, every result golden, the next call right, and the recovery reported."""
    n = 6
    gold = golden_logits(tiny.qnet(), frames)
    ol, drv = _open(tiny, tmp_path, generation=generation, host_cycles=2 * tiny.frame_cycles(), timeout_s=0.05,
                    out_fifo_frames=2)
    dev = ol.device
    with drv:
        s = drv.stream(frames[:n])
        assert dev.ctrl.idle and not dev.ctrl.running and dev.out_fifo == []
        assert [r.get("end_of_stream") for r in s.recoveries] == [True] and s.recoveries[0]["flushes"] == 1
        assert "busy after the stream's last result" in s.recoveries[0]["reason"] and s.frames_done == n
        c = drv.classify(frames[n:n + 3])
    assert np.array_equal(s.logits, gold[:n]) and np.array_equal(c.logits, gold[n:n + 3])
    assert dev.ctrl.idle and c.recoveries == []
