"""End to end through the rtl backend: the board driver (zynqflow.host.driver)
+ the PYNQ shim (zynqflow.sim.sim_shim, cocotbext-axi) + the Verilator RTL.

Every run must give exactly the golden model's logits, in input order, one
result per frame (frames_done, DMA transfer counts, no extra output).
Simulators are the ones zynqflow.sim.rtl_sim builds (cached under build/sim/).
The Fashion-MNIST run needs the reference checkpoint and skips without it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from zynqflow.host import Accelerator, NetworkIdMismatch
from zynqflow.host.manifest import Export
from zynqflow.sim.rtl_host import run_job
from zynqflow.spec.golden import golden_logits
from zynqflow.export import fixtures as exports

try:
    from zynqflow.sim.rtl_sim import RtlUnavailable, SimBuild
except ImportError as e:  # pragma: no cover
    pytest.skip(f"zynqflow.sim.rtl_sim unavailable: {e}", allow_module_level=True)

N = 32


@pytest.fixture(scope="module")
def tiny() -> Export:
    ex = Export(exports.random_export("zynqnet-tiny", seed=0, vectors=16))
    try:
        SimBuild(ex.dir).build()
    except RtlUnavailable as e:
        pytest.skip(str(e))
    return ex


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
    """8 frames one ap_start each, then 32 back to back (auto_restart): golden logits, in order."""
    gold = golden_logits(tiny.qnet(), tiny_frames)
    res = run_job(tiny, [("classify", tiny_frames[:8]), ("stream", tiny_frames)])
    _check_run(tiny, res, [tiny_frames[:8], tiny_frames], [gold[:8], gold])
    classify, stream = res["steps"]
    cyc = classify["cycles_last"]
    assert len(cyc) == 8 and len(set(cyc)) == 1 and cyc[0] > tiny.frame_cycles() // 2
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


def test_rtl_network_id_mismatch_sends_nothing(tiny, tiny_frames, tmp_path):
    """A manifest that is not the one the RTL was built from: refused before any DMA transfer."""
    other = tmp_path / "other"
    shutil.copytree(tiny.dir, other)
    m = json.loads((other / "manifest.json").read_text())
    m["network_id_int"] = tiny.network_id ^ 0x5A5A5A5A
    m["network_id"] = f"0x{m['network_id_int']:08x}"
    (other / "manifest.json").write_text(json.dumps(m))
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


@pytest.mark.skipif(not os.environ.get("ZQ_HOST_REF_EXPORT") and not exports.REFERENCE_CKPT.exists(),
                    reason=f"no reference checkpoint at {exports.REFERENCE_CKPT}")
def test_rtl_reference_fashion_mnist():
    """32 Fashion-MNIST test images on the reference zynqnet-mini: golden labels and logits, in order."""
    from zynqflow.model.data import load_dataset

    path, origin = _reference_export()
    ex = Export(path)
    test = load_dataset("fashion-mnist", None, size=ex.input_shape[0]).test
    frames, labels = test.hwc()[:N], test.labels[:N]
    gold = golden_logits(ex.qnet(), frames)
    with Accelerator(ex, "rtl") as acc:
        r = acc.stream(frames)
    assert len(r) == N and np.array_equal(r.logits, gold) and np.array_equal(r.labels, gold.argmax(1))
    assert r.info["frames_done"] == N and r.info["extra_output_frames"] == 0
    print(f"\nreference ({origin}): {N} Fashion-MNIST test images, top-1 {np.mean(r.labels == labels):.3f}, "
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
