"""End to end through the rtl backend: the board driver (zynqflow.host.driver)
+ the PYNQ shim (zynqflow.sim.world.pynq_shim, cocotbext-axi) + the Verilator RTL, with
the DDR model (zynqflow.sim.world.ddr) behind the engine's AXI4 masters and
the shim's allocate() buffers in it.

Every run must give exactly the golden model's logits, in input order, one
result per frame (frames_done, DMA transfer counts, no extra output).
Simulators are the ones zynqflow.sim.rtl.runner builds (cached under build/sim/).
Exports: zynqnet-tiny (weights cached on chip), zynqnet-mini with streamed
weights, and one frame of the 64 x 64 zynqnet with tensors in DDR. The
Fashion-MNIST run needs the reference checkpoint and skips without it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from zynqflow.host import Accelerator, EngineStatusError, NetworkIdMismatch
from zynqflow.host.manifest import Export
from zynqflow.spec import engine as E
from zynqflow.sim.rtl.host_job import run_job
from zynqflow.spec.golden import golden_logits
from zynqflow.export import fixtures as exports

try:
    from zynqflow.sim.rtl.runner import RtlUnavailable, SimBuild
except ImportError as e:  # pragma: no cover
    pytest.skip(f"zynqflow.sim.rtl.runner unavailable: {e}", allow_module_level=True)

N = 32
N_REF = 8          # reference Fashion-MNIST frames (zynqnet-mini: about 2 s of simulation each)


def _built(path) -> Export:
    ex = Export(path)
    try:
        SimBuild(ex.dir).build()
    except RtlUnavailable as e:
        pytest.skip(str(e))
    return ex


@pytest.fixture(scope="module")
def tiny() -> Export:
    return _built(exports.random_export("zynqnet-tiny", seed=0, vectors=16))


@pytest.fixture(scope="module")
def tiny_frames(tiny) -> np.ndarray:
    """The 16 export vectors and 16 random frames (all distinct: order errors would show)."""
    vec, _ = tiny.vectors()
    rng = np.random.default_rng(7)
    f = np.concatenate([vec, rng.integers(0, 256, (N - len(vec),) + tiny.input_shape, dtype=np.uint8)])
    assert len({x.tobytes() for x in f}) == N
    return f


def _check_run(ex: Export, res: dict, frames_per_step: list[np.ndarray], gold: list[np.ndarray]):
    assert res["error"] is None
    assert res["net_id"] == ex.network_id and res["id_probed"] is False
    total = sum(len(f) for f in frames_per_step)
    assert res["mm2s_transfers"] == total and res["s2mm_transfers"] == total
    assert res["extra_output_frames"] == 0 and res["source_idle"]
    for s, f, g in zip(res["steps"], frames_per_step, gold):
        assert s["frames"] == len(f) and s["logits"].shape == (len(f), ex.num_classes)
        assert np.array_equal(s["logits"], g), f"{s['op']}: logits differ from the golden model"
        assert s["frames_done"] == len(f)
        assert np.all(s["t_done"] > s["t_send"]) and np.all(np.diff(s["t_done"]) > 0)   # in order


def test_rtl_tiny_classify_and_stream(tiny, tiny_frames):
    """8 frames one ap_start each, then 32 back to back (auto_restart): golden logits, in order.
    The weight image was loaded into DDR once, and the engine (weights cached on chip) read it
    once: its first frame's dram_rd_bytes is the image, the others' at most the header."""
    gold = golden_logits(tiny.qnet(), tiny_frames)
    res = run_job(tiny, [("classify", tiny_frames[:8]), ("stream", tiny_frames)])
    _check_run(tiny, res, [tiny_frames[:8], tiny_frames], [gold[:8], gold])
    classify, stream = res["steps"]
    cyc = classify["cycles_last"]
    assert abs(cyc[0] - cyc[1]) < 8 and len(set(cyc[1:])) == 1 and cyc[1] > tiny.frame_cycles() // 2
    assert res["engine"] == classify["engine"] == "rtl" and res["engine_from"] == "the .hwh, confirmed by engine_info"
    assert res["weight_loads"] == 1 and res["bases_rewritten"] == 0
    assert res["ddr"]["wts"] % E.ADDR_ALIGN == 0 and res["ddr"]["wts"] + tiny.weight_image_bytes <= E.DDR_WINDOW_BYTES
    rd = classify["dram_rd_bytes"]
    assert rd[0] == tiny.weight_image_bytes and all(b <= tiny.header_bytes for b in rd[1:] + stream["dram_rd_bytes"])
    assert classify["dram_wr_bytes"] == [0] * 8 and res["ddr_bytes"]["act_rd"] == 0
    # stream: simulated throughput within 5% of 1 frame per cycles_last at 100 MHz (or better)
    fps = N / stream["sim_seconds"]
    assert fps >= 0.95 * 1e8 / stream["cycles_last"][-1]
    print(f"\nrtl tiny: cycles_last {cyc[0]}, classify {8 / classify['sim_seconds']:.0f} frames/s, stream "
          f"{fps:.0f} frames/s simulated at 100 MHz; simulator wall {stream['wall_seconds']:.2f} s for {N} frames")


def test_rtl_tiny_stream_backpressure_via_accelerator(tiny, tiny_frames):
    """Random stalls on both DMA streams, through the Accelerator front end: same logits, same order."""
    gold = golden_logits(tiny.qnet(), tiny_frames)
    with Accelerator(tiny, "rtl", backpressure=0.4, seed=3) as acc:
        r = acc.stream(tiny_frames)
        assert len(r) == N and np.array_equal(r.logits, gold) and np.array_equal(r.labels, gold.argmax(1))
        assert r.info["frames_done"] == N and r.info["extra_output_frames"] == 0
        last = acc.backend.last
        assert last["mm2s_transfers"] == N and last["s2mm_transfers"] == N
        lat = r.latency_ms()
        assert 0 < lat["p50"] <= lat["p90"] <= lat["p99"]
        c = acc.classify(tiny_frames[:3])      # single frames under stalls too
        assert np.array_equal(c.logits, gold[:3])


def _other_network(ex: Export, dest: Path) -> dict:
    """A copy of ``ex`` with another network ID (manifest and weights.bin header agree), as the
    export of another network would be."""
    shutil.copytree(ex.dir, dest)
    m = json.loads((dest / "manifest.json").read_text())
    m["network_id_int"] = ex.network_id ^ 0x5A5A5A5A
    m["network_id"] = f"0x{m['network_id_int']:08x}"
    (dest / "manifest.json").write_text(json.dumps(m))
    img = bytearray((dest / "weights.bin").read_bytes())
    img[8:12] = m["network_id_int"].to_bytes(4, "little")
    (dest / "weights.bin").write_bytes(bytes(img))
    return m


def test_rtl_network_id_mismatch_sends_nothing(tiny, tiny_frames, tmp_path):
    """A bitstream whose network ID is not the manifest's (here: the manifest and weight image of
    another network): refused before any DMA transfer."""
    other = tmp_path / "other"
    m = _other_network(tiny, other)
    with pytest.raises(NetworkIdMismatch) as e:
        run_job(tiny, [("stream", tiny_frames[:4])], driver_export=other)
    msg = str(e.value)
    assert f"0x{tiny.network_id:08x}" in msg and m["network_id"] in msg and str(other / "manifest.json") in msg
    s = e.value.sim_summary
    assert s["mm2s_transfers"] == 0 and s["s2mm_transfers"] == 0 and s["extra_output_frames"] == 0


def _reference_export() -> tuple[Path, str] | None:
    env = os.environ.get("ZQ_HOST_REF_EXPORT")
    if env:
        return Path(env), "ZQ_HOST_REF_EXPORT"
    if exports.REFERENCE_CKPT.exists():
        return exports.checkpoint_export(exports.REFERENCE_CKPT, frames=8)[0], str(exports.REFERENCE_CKPT)
    return None


@pytest.mark.xdist_group("rtl-reference")
@pytest.mark.skipif(not os.environ.get("ZQ_HOST_REF_EXPORT") and not exports.REFERENCE_CKPT.exists(),
                    reason=f"no reference checkpoint at {exports.REFERENCE_CKPT}")
def test_rtl_reference_fashion_mnist():
    """Fashion-MNIST test images on the reference zynqnet-mini: golden labels and logits, in order."""
    from zynqflow.model.data import DatasetError, load_dataset

    path, origin = _reference_export()
    ex = _built(path)
    try:
        test = load_dataset("fashion-mnist", None, size=ex.input_shape[0]).test
    except DatasetError as e:
        pytest.skip(f"Fashion-MNIST not available: {e}")
    frames, labels = test.hwc()[:N_REF], test.labels[:N_REF]
    gold = golden_logits(ex.qnet(), frames)
    with Accelerator(ex, "rtl") as acc:
        r = acc.stream(frames)
    assert len(r) == N_REF and np.array_equal(r.logits, gold) and np.array_equal(r.labels, gold.argmax(1))
    assert r.info["frames_done"] == N_REF and r.info["extra_output_frames"] == 0
    print(f"\nreference ({origin}): {N_REF} Fashion-MNIST test images, top-1 {np.mean(r.labels == labels):.3f}, "
          f"cycles_last {r.info['cycles_last']} -> {r.info['fps_at_100MHz_from_cycles_last']:.0f} frames/s at "
          f"100 MHz; simulated stream {r.fps:.0f} frames/s; simulator wall {r.info['sim_wall_seconds']:.1f} s")


# ---- DMA errors and timeouts: recovery (the shim's DMA behaves as PG021 says the hardware does) ----
def test_rtl_dma_errors_recovered_no_frame_lost(tiny, tiny_frames):
    """Three injected faults in one simulation, each recovered by the driver (soft reset of the
    DMA, channels restarted, engine drained) with the frames without a result sent again:

    * stream: S2MM transfer 5 ends with a slave error (the engine's output for frame 5 is lost,
      the DMA halts with DMASlvErr);
    * classify: MM2S transfer 14 ends with an internal error after 10 beats (the engine holds
      part of a frame: the driver ends it with a one-beat packet, answered by an error frame);
    * stream_async (interrupts): S2MM transfer 22 never takes its data (timeout, channel busy).

    Every step returns exactly the golden logits, in order; the counters show what happened:
    frames_done and the DMA transfers account for every re-sent, drained and lost frame."""
    f = tiny_frames
    gold = golden_logits(tiny.qnet(), f)
    faults = [dict(channel="s2mm", transfer=5, kind="slave"),
              dict(channel="mm2s", transfer=14, kind="internal", beats=10),
              dict(channel="s2mm", transfer=22, kind="stall")]
    steps = [("stream", f[:12]), ("classify", f[12:16]), ("stream_async", f[16:24])]
    res = run_job(tiny, steps, sim=dict(faults=faults, pynq_dma=True), timeout_s=20 * tiny.frame_cycles() / 1e8)
    assert res["error"] is None and res["extra_output_frames"] == 0
    assert res["dma"]["resets"] == 3 and res["dma"]["s2mm_errors"] == 1 and res["dma"]["mm2s_errors"] == 1
    if importlib.util.find_spec("pynq") is not None:                        # pynq's own driver code
        assert res["dma"]["channel_class"] == "pynq.lib.dma._SDMAChannel"
    (s1, s2, s3), gold_steps = res["steps"], [gold[:12], gold[12:16], gold[16:24]]
    for s, g in zip(res["steps"], gold_steps):
        assert np.array_equal(s["logits"], g), f"{s['op']}: logits differ from the golden model"
        assert len(s["recoveries"]) == 1 and np.all(np.diff(s["t_done"]) > 0)
    # stream: frames 0-6 sent (6 in the engine when 5's output failed), 5-11 sent again; the
    # engine answered 12 frames + 5 (lost) + 6 (drained)
    r = s1["recoveries"][0]
    assert r["frame"] == 5 and "DMASlvErr" in r["reason"] and r["dmasr_s2mm"] & 0x21 == 0x21
    assert (s1["mm2s_transfers"], s1["s2mm_transfers"]) == (7 + 7, 6 + r["drained"] + 7)
    assert s1["frames_done"] == 12 + 1 + r["drained"] and r["flushes"] == 0
    # classify: frame 0's input cut after 10 beats: one one-beat packet, one error frame drained
    r = s2["recoveries"][0]
    assert r["frame"] == 0 and "DMAIntErr" in r["reason"] and (r["flushes"], r["drained"]) == (1, 1)
    assert (s2["mm2s_transfers"], s2["s2mm_transfers"]) == (1 + 1 + 4, 1 + 1 + 4)   # failed, recovery, 4
    assert s2["frames_done"] == 4 + 1 and s2["cycles_last"] == [s1["cycles_last"][-1]] * 4
    # stream_async: S2MM of frame 2 stalls: timeout, then frame 2's output drained, 2-7 sent again
    r = s3["recoveries"][0]
    assert r["frame"] == 2 and r["reason"].startswith("AcceleratorTimeout") and r["drained"] == 1
    assert s3["frames_done"] == 8 + 1 and s3["interrupts"] is True
    assert res["mm2s_transfers"] == sum(s["mm2s_transfers"] for s in res["steps"])
    assert res["s2mm_transfers"] == sum(s["s2mm_transfers"] for s in res["steps"])


def test_rtl_retries_exhausted_cli_exit_1(tiny, tiny_frames, tmp_path, capsys, monkeypatch):
    """More DMA errors than retries: the CLI exits 1 with the DMA status in one message, no
    traceback (pynq's RuntimeError arrives as a host error)."""
    from zynqflow.host import cli

    d = tmp_path / "frames"
    d.mkdir()
    for i in range(3):
        np.save(d / f"f{i}.npy", tiny_frames[i])
    # S2MM transfers 0, 2, 4 are frame 0 and its two re-sends (1 and 3: the recoveries draining frame 1)
    monkeypatch.setenv("ZQ_SIM_FAULTS", json.dumps([dict(channel="s2mm", transfer=k, kind="decode")
                                                     for k in (0, 2, 4)]))
    rc = cli.main(["stream", str(d), "--backend", "rtl", "--export", str(tiny.dir)])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err
    assert "DMADecErr" in err and "exceed retries=2" in err and "accelerator error" in err


def test_rtl_host_time_and_labels(tiny, tiny_frames):
    """Simulated figures say "accelerator only"; the host's own per-frame work is measured
    apart, without the simulator's time, and the throughput test adds the DMA bandwidth."""
    with Accelerator(tiny, "rtl") as acc:
        b = acc.benchmark(tiny_frames[:16])
        r = acc.backend.last["steps"][0]
    assert "accelerator only" in b["timing"] and "accelerator only" in b["clock"]
    n, sim_s = 16, r["sim_seconds"]
    assert b["frames"] == n and b["fps_accelerator_only"] == pytest.approx(n / sim_s)
    host = b["host_seconds_per_frame"]
    assert 0 < host < r["wall_seconds"] / n            # the simulator's wall time is not host time
    assert 0 < b["host_copy_seconds_per_frame"] < host and 0 < b["host_dma_seconds_per_frame"] < host
    assert b["fps_including_host"] == pytest.approx(n / (sim_s + n * host))
    assert b["input_MBps_accelerator_only"] == pytest.approx(b["fps_accelerator_only"] * tiny.bytes_per_frame / 1e6)
    assert b["output_MBps_accelerator_only"] == pytest.approx(b["fps_accelerator_only"] * tiny.num_classes * 4 / 1e6)
    assert "not the board's CPU" in b["including_host_from"]


# ---- DDR: the weight image, the scratch area, and what can go wrong with them --------------------
def test_rtl_memory_faults_and_pl_reset(tiny, tiny_frames):
    """Between two classify frames another agent

    * flips a byte of the weight image's header in DDR and writes wts again (the engine checks the
      header at every frame): the next frame is an error frame with status ``weight_image``;
    * writes an address past the DDR window into wts: status ``address_range``.

    Each raises EngineStatusError naming the flag and the driver's buffer; the driver reloads the
    image (copy, flush) and rewrites wts/act, and the next call is right. Then ap_rst_n (a PL
    reset: the engine and the AXI DMA lose their registers, the DDR keeps the image): the next call
    finds wts/act lost, rewrites them, restarts the DMA and is right, without reloading the image."""
    f = tiny_frames
    gold = golden_logits(tiny.qnet(), f)
    # S2MM transfers: step 0 frames 0-2 (transfers 0-2; after 1 the header is flipped, so frame 2
    # fails), step 1 transfers 3-6, step 2 transfers 7-8 (after 7: wts out of range, frame 1 fails)
    faults = [dict(channel="s2mm", transfer=1, kind="weight_header"),
              dict(channel="s2mm", transfer=7, kind="wts_addr", value=E.DDR_WINDOW_BYTES)]
    steps = [("classify", f[:4]), ("classify", f[4:8]), ("classify", f[8:12]), ("classify", f[12:16]),
             ("pl_reset", None), ("classify", f[16:20]), ("stream", f[20:28])]
    res = run_job(tiny, steps, sim=dict(faults=faults), continue_on_error=True)
    assert res["error"] is None and res["extra_output_frames"] == 0 and len(res["tampered"]) == 2
    s = res["steps"]
    e0, e2 = s[0]["error"], s[2]["error"]
    assert e0["type"] == "EngineStatusError" and e0["attrs"]["frame"] == 2
    assert "weight_image" in e0["message"] and f"the image in DDR at 0x{res['ddr']['wts']:08x}" in e0["message"]
    assert "copied the weight image into its buffer again, flushed it and rewrote wts/act" in e0["message"]
    assert e2["type"] == "EngineStatusError" and e2["attrs"]["frame"] == 1
    assert "address_range" in e2["message"] and f"wts=0x{res['ddr']['wts']:08x}" in e2["message"]
    for i, sl in ((1, slice(4, 8)), (3, slice(12, 16)), (5, slice(16, 20)), (6, slice(20, 28))):
        assert s[i]["error"] is None and np.array_equal(s[i]["logits"], gold[sl]), f"step {i}"
    assert s[3]["registers"]["wts"] == res["ddr"]["wts"]
    # the PL reset: wts and act rewritten, the DMA (reset with the PL) restarted before sending
    rec = s[5]["recoveries"]
    assert len(rec) == 1 and rec[0]["pl_reset"] and "lost wts and act" in rec[0]["reason"]
    # wts found changed twice (the recovery after address_range, the PL reset); the image loaded
    # on open and after each of the two errors, not after the PL reset (the DDR kept it)
    assert res["bases_rewritten"] == 2 and res["weight_loads"] == 3 and s[5]["frames_done"] == 4
    assert s[5]["dram_rd_bytes"][0] == tiny.weight_image_bytes          # the reset dropped the cache: read again


def test_rtl_weights_not_flushed_fail(tiny, tiny_frames):
    """A driver that forgot to flush the weight image (the shim's allocate() ignores its flush()):
    the engine reads the DDR, not the CPU's copy, and answers status weight_image, as a board would."""
    with pytest.raises(EngineStatusError) as e:
        run_job(tiny, [("classify", tiny_frames[:2])],
                sim=dict(alloc=dict(forget_flush_bytes=tiny.weight_image_bytes)))
    assert e.value.flags == ["weight_image"] and e.value.frame == 0
    assert "not flushed to DDR" in str(e.value)
    assert e.value.sim_summary["extra_output_frames"] == 0


@pytest.fixture(scope="module")
def mini_streamed() -> Export:
    return _built(exports.random_export("zynqnet-mini", seed=0, vectors=16, wcache_kb=0))


def test_rtl_mini_streamed_weights(mini_streamed):
    """zynqnet-mini with no weight cache: the engine streams the image from DDR every frame."""
    ex = mini_streamed
    vec, _ = ex.vectors()
    gold = golden_logits(ex.qnet(), vec[:3])
    res = run_job(ex, [("classify", vec[:1]), ("stream", vec[1:3])])
    _check_run(ex, res, [vec[:1], vec[1:3]], [gold[:1], gold[1:3]])
    c, st = res["steps"]
    body = ex.weight_image_bytes - ex.header_bytes
    assert body <= c["dram_rd_bytes"][0] <= ex.weight_image_bytes and st["dram_rd_bytes"][0] == c["dram_rd_bytes"][0]
    assert res["ddr_bytes"]["wts_rd"] >= 3 * body and ex.scratch_bytes == 0


@pytest.mark.xdist_group("rtl-ddr64")
def test_rtl_ddr_tensors_64():
    """One frame of the 64 x 64 zynqnet with an activation budget too small for its tensors: the
    driver allocates the scratch area, the engine writes and reads it through m_axi_act; the
    figures are measured (RTL twin) and labelled so."""
    ex = _built(exports.random_export("zynqnet", n_pe=16, n_ci=16, input_size=64, act_kb=24, dsp_pairs=96))
    assert ex.scratch_bytes > 0
    vec, _ = ex.vectors()
    with Accelerator(ex, "rtl") as acc:
        r = acc.classify(vec[:1])
        last = acc.backend.last
    assert np.array_equal(r.logits, golden_logits(ex.qnet(), vec[:1]))
    ddr = {k: int(v, 16) for k, v in r.info["ddr"].items()}
    assert ddr["act"] != ddr["wts"] and ddr["act"] % E.ADDR_ALIGN == 0 and ddr["act"] + ex.scratch_bytes <= E.DDR_WINDOW_BYTES
    assert last["ddr_bytes"]["act_wr"] > 0 and last["ddr_bytes"]["act_rd"] > 0
    assert r.info["dram_wr_bytes_per_frame"] == last["ddr_bytes"]["act_wr"]
    assert r.info["dram_rd_bytes_per_frame"] == last["ddr_bytes"]["wts_rd"] + last["ddr_bytes"]["act_rd"]
    assert r.info["cycles_from"] == "measured (RTL twin), RTL simulation" and r.info["dram_from"] == "measured (RTL twin)"
    assert r.info["cycles_per_frame"] == r.info["cycles_last"] and r.info["fps_at_100MHz"] == pytest.approx(
        1e8 / r.info["cycles_last"])
    print(f"\nzynqnet 64x64 (tensors in DDR): {r.info['cycles_last']} cycles -> {r.info['fps_at_100MHz']:.1f} frames/s "
          f"at 100 MHz (measured, RTL simulation); DRAM {r.info['dram_rd_bytes_per_frame']} B read, "
          f"{r.info['dram_wr_bytes_per_frame']} B written per frame")
