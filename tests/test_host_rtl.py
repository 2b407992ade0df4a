"""End to end through the rtl backend: the board driver (zynqflow.host.driver)
+ the PYNQ shim (zynqflow.sim.sim_shim, cocotbext-axi) + the Verilator RTL.

Every run must give exactly the golden model's logits, in input order, one
result per frame (frames_done, DMA transfer counts, no extra output).
Simulators are the ones zynqflow.sim.rtl_sim builds (cached under build/sim/).
The Fashion-MNIST run needs the reference checkpoint and skips without it.
"""

from __future__ import annotations

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
