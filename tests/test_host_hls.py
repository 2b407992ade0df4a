"""The board driver against the HLS engine's real register behaviour: the C-simulated engine behind
the control block Vitis generates (UG1399 ap_ctrl_hs: ap_start self-clearing on ap_ready, ap_done
clear-on-read, ap_idle, auto_restart, GIER/IP_IER/IP_ISR toggle-on-write, 64-bit pointers as _1/_2),
with a .hwh written as Vitis writes one (registers laid out from the HLS source's pragmas, not
from spec/engine.py). The same open, network-ID, streaming, error-frame and recovery checks as on
the RTL twin (tests/test_host_rtl.py, tests/test_host_bringup.py)."""

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


def _open(tiny, tmp_path, **kw):
    from zynqflow.sim.csim.hls_host import open_hls

    return open_hls(tiny, tmp_path / "zq_hls.hwh", **kw)


# ---- the control block alone (UG1399) ------------------------------------------------------------
def test_vitis_control_block_behaviour():
    from zynqflow.sim.world.vitis_ctrl import AP_DONE, AP_IDLE, AP_READY, AP_START, AUTO_RESTART, VitisControl
    from zynqflow.sim.world.vitis_hwh import hls_control_registers

    regs = {r["name"]: dict(address_offset=r["offset"]) for r in hls_control_registers()}
    c = VitisControl(regs)
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
    c.write(off["IP_ISR"], 1)                                                   # toggle on write: cleared
    assert c.read(off["IP_ISR"]) == 0 and not c.interrupt
    c.write(off["IP_ISR"], 2)                                                   # ... and set
    assert c.read(off["IP_ISR"]) == 2
    c.write(off["CTRL"], AP_START | AUTO_RESTART)
    c.take_start()
    c.finish({})
    assert c.read(off["CTRL"]) & (AP_START | AUTO_RESTART) == AP_START | AUTO_RESTART   # auto_restart keeps it
    assert c.take_start() is not None


def test_hwh_written_the_vitis_way(tiny, tmp_path):
    """The .hwh: the registers from the HLS pragmas (CTRL, GIER, IP_IER, IP_ISR, wts_1/wts_2, act_1/act_2,
    outputs with <name>_ctrl), read back as pynq does; the driver's spec map matches every register."""
    from zynqflow.host.registers import RegMap, check_register_offsets
    from zynqflow.sim.world.vitis_hwh import hls_control_registers, read_hwh, write_hwh

    ip = read_hwh(write_hwh(tmp_path / "x.hwh", hls_control_registers()))
    regs = ip["zq_top_0"]["registers"]
    assert ip["zq_top_0"]["type"] == "zynqflow.org:hls:zq_top:1.0" and ip["zq_top_0"]["phys_addr"] == 0x4000_0000
    assert {"CTRL", "GIER", "IP_IER", "IP_ISR", "wts_1", "wts_2", "act_1", "act_2", "status_ctrl"} <= set(regs)
    assert regs["CTRL"]["fields"]["AUTO_RESTART"]["bit_offset"] == 7 and regs["wts_2"]["address_offset"] == 0x14
    assert ip["processing_system7_0"]["parameters"]["PCW_FPGA0_PERIPHERAL_FREQMHZ"] == "100"
    rm = RegMap("hls")
    assert check_register_offsets(dict(rm.offsets), regs) == dict(rm.offsets)


# ---- the driver through it -----------------------------------------------------------------------
def test_hls_open_id_classify_stream(tiny, frames, tmp_path):
    """Open (weights in the engine's DDR, wts/act as _1/_2), the network-ID check (net_id reads 0
    after ap_start: its output register updates when a call ends, so a one-beat probe frame),
    classify (ap_done clear-on-read) and stream (auto_restart), bit-exact and in order."""
    gold = golden_logits(tiny.qnet(), frames)
    ol, drv = _open(tiny, tmp_path)
    with drv:
        assert drv.engine == "hls" and drv.engine_from == "the .hwh" and drv.registers_checked
        c = drv.classify(frames[:4])
        assert drv.id_probed and drv.hw_id == tiny.network_id and drv.engine_from == "the .hwh, confirmed by engine_info"
        s = drv.stream(frames)
        sa = drv.stream(frames[:5])
        assert ol.csim.bases["wts"] == drv.bases["wts"] == ol.device.allocate.base
    assert np.array_equal(c.logits, gold[:4]) and np.array_equal(s.logits, gold) and np.array_equal(sa.logits, gold[:5])
    assert c.cycles_last == [None] * 4 and c.engine == "hls"               # the HLS engine cannot count cycles
    assert np.all(np.diff(s.t_done) > 0) and s.frames_done == len(frames)
    dev = ol.device
    assert dev.calls == 1 + 4 + len(frames) + 5 and dev.ctrl.idle           # the probe, then one call per frame


def test_hls_network_id_mismatch(tiny, frames, tmp_path):
    from test_host_rtl import _other_network

    other = tmp_path / "other"
    m = _other_network(tiny, other)
    from zynqflow.sim.csim.runner import CSim
    from zynqflow.sim.csim.hls_host import HlsOverlay
    from zynqflow.host.board import open_driver

    ol = HlsOverlay(Export(other), tmp_path / "x.hwh", csim=CSim(tiny.dir))     # the bitstream holds tiny
    drv = open_driver(ol, Export(other), allocate=ol.allocate, clocks=ol.clocks, raw_mmio=ol.raw_mmio, clock=ol.now,
                      min_timeout_s=0.0, simulated=True, source="HLS C-sim")
    with pytest.raises(NetworkIdMismatch) as e:
        drv.classify(frames[:2])
    assert m["network_id"] in str(e.value) and f"0x{tiny.network_id:08x}" in str(e.value)
    assert ol.device.dma.mm2s.transfers == 1 and ol.device.calls == 1       # the probe only: no frame sent
    drv.close()


def test_hls_error_frame_and_recovery(tiny, frames, tmp_path):
    """An error frame (the weight image's header overwritten in DDR between two calls): EngineStatusError
    weight_image, the image reloaded, the next call right. A DMA error mid-stream (S2MM halted after 2
    beats of a frame) and an MM2S error mid-frame: recovered (reset, drained, re-sent), golden, in order."""
    gold = golden_logits(tiny.qnet(), frames)
    faults = [dict(channel="s2mm", transfer=3, kind="slave", beats=2), dict(channel="mm2s", transfer=12,
                                                                            kind="internal", beats=10)]
    ol, drv = _open(tiny, tmp_path, faults=faults, timeout_s=50 * tiny.frame_cycles() / 1e8)
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
def _on_engine(engine: str, ex: Export, steps, faults=(), driver_export=None) -> list[dict]:
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
    ol = HlsOverlay(drv_ex, _tmp_hwh(), [dict(f, transfer=f["transfer"] + 1) for f in faults], csim=CSim(ex.dir))
    out = []
    with open_driver(ol, drv_ex, allocate=ol.allocate, clocks=ol.clocks, raw_mmio=ol.raw_mmio, clock=ol.now,
                     min_timeout_s=0.0, simulated=True, timeout_s=50 * ex.frame_cycles() / 1e8) as drv:
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


@pytest.mark.parametrize("engine", ["rtl", "hls"])
def test_same_open_stream_recovery_and_id_check_on_both_engines(engine, tiny, frames, tmp_path):
    """One scenario, both engines: open, classify, a stream whose S2MM halts mid-packet (recovered,
    re-sent), classify again: golden logits in order; then another network's manifest: refused
    before any input frame."""
    gold = golden_logits(tiny.qnet(), frames)
    steps = [("classify", frames[:3]), ("stream", frames[3:13]), ("classify", frames[13:16])]
    out = _on_engine(engine, tiny, steps, faults=[dict(channel="s2mm", transfer=6, kind="slave", beats=2)])
    assert [o["error"] for o in out] == [None, None, None]
    for o, sl in zip(out, (slice(0, 3), slice(3, 13), slice(13, 16))):
        assert np.array_equal(o["logits"], gold[sl])
    assert [o["recoveries"] for o in out] == [[], ["DmaError"], []]
    from test_host_rtl import _other_network

    _other_network(tiny, tmp_path / "other")
    assert _on_engine(engine, tiny, [("classify", frames[:2])], driver_export=tmp_path / "other") == [
        dict(error="NetworkIdMismatch", mm2s=0)]
