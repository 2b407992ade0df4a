"""The HLS engine (hls/) in C simulation against the numpy golden model.

For random-weight zynqnet-tiny and zynqnet-mini networks (exported into
temporary directories, random seeds, printed on failure; set ZQ_TEST_SEED to
replay) the C-simulated engine must reproduce ``golden_logits`` bit for bit,
report the right registers, pass its own C testbench (and fail it when the
expected vectors are corrupted), and handle short and long input frames.
Builds are cached per test module.
"""

from __future__ import annotations

import json
import os
import shutil
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from zynqflow.sim import csim
from zynqflow.spec.topology import get_config
from zynqflow.spec.topology import INPUT, LayerSpec, NetConfig
from zynqflow.export.exporter import EngineParams, export
from zynqflow.spec.golden import golden_logits
from zynqflow.model.net import qnet_from_model
from zynqflow.model.net import ZynqNet

pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CXX", "g++")) is None,
                                reason="no C++ compiler (g++) for the C simulation")

FRAMES = {"zynqnet-tiny": 64, "zynqnet-mini": 32}   # random frames compared with the golden model
ERR = csim.ERROR_LOGIT


def _seed(name: str) -> int:
    env = os.environ.get("ZQ_TEST_SEED")
    return int(env) if env else int.from_bytes(os.urandom(3), "little") + (0 if name.endswith("tiny") else 1)


def _frames(rng: np.random.Generator, n: int, shape: tuple[int, ...]) -> np.ndarray:
    """n random uint8 frames, the first few extreme (all 0, all 255, checkerboard, sparse)."""
    f = rng.integers(0, 256, (n,) + shape, dtype=np.uint8)
    f[0] = 0
    f[1] = 255
    yy, xx = np.indices(shape[:2])
    f[2] = (((yy + xx) % 2) * 255)[..., None].astype(np.uint8)
    f[3] = np.where(rng.random(shape) < 0.1, 255, 0).astype(np.uint8)
    return f


_NETS: dict[str, SimpleNamespace] = {}


def _make_net(name: str, factory, cfg=None, engine: EngineParams = EngineParams(), n_frames: int = 32,
              testbench: bool = True, calib_scale: float = 1.0) -> SimpleNamespace:
    """Random-weight network -> export -> C-sim library (+ testbench), cached per session."""
    if name in _NETS:
        return _NETS[name]
    seed = _seed(name)
    root = factory.mktemp(name.replace("-", "_"))
    torch.manual_seed(seed)
    cfg = cfg or get_config(name)
    model = ZynqNet(cfg)
    x = torch.randint(0, 256, (64, cfg.in_channels, cfg.input_size, cfg.input_size), dtype=torch.uint8)
    model.calibrate([x.float() / 256 * calib_scale])
    qnet = qnet_from_model(model)
    exp_dir = root / "export"
    man = export(qnet, exp_dir, x.numpy().transpose(0, 2, 3, 1)[:16], engine)
    sim = csim.CSim(exp_dir)                  # builds <root>/csim/libzq_csim.so
    tb = csim.build_testbench(exp_dir) if testbench else None
    frames = _frames(np.random.default_rng(seed), n_frames, qnet.input_shape)
    _NETS[name] = SimpleNamespace(name=name, seed=seed, qnet=qnet, dir=exp_dir, man=man, sim=sim, tb=tb,
                                  frames=frames, golden=golden_logits(qnet, frames), root=root)
    return _NETS[name]


@pytest.fixture(scope="module", params=sorted(FRAMES))
def net(request, tmp_path_factory):
    return _make_net(request.param, tmp_path_factory, n_frames=FRAMES[request.param])


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return _make_net("zynqnet-tiny", tmp_path_factory, n_frames=FRAMES["zynqnet-tiny"])


def _good_cycles(n) -> int:
    m = n.man
    return m["cycles_mac_array"] + m["input"]["bytes_per_frame"] // 4 + m["output"]["classes"]


# ---- bit exactness ------------------------------------------------------------
def test_logits_match_golden(net):
    net.sim.reset()
    logits = net.sim.run(net.frames)
    assert logits.shape == (len(net.frames), net.qnet.num_classes)
    bad = np.flatnonzero(~np.all(logits == net.golden, axis=1))
    assert np.array_equal(logits, net.golden), (
        f"{net.name} seed {net.seed}: {len(bad)} of {len(net.frames)} frames differ, first {bad[:5].tolist()}")


def test_export_vectors_match(net):
    frames = np.fromfile(net.dir / "vectors_in.bin", np.uint8).reshape((-1,) + net.qnet.input_shape)
    expect = np.fromfile(net.dir / "vectors_out.bin", "<i4").reshape(len(frames), -1)
    assert np.array_equal(net.sim.run(frames), expect), f"seed {net.seed}"


def test_registers(net):
    net.sim.reset()
    assert net.sim.registers()["frames_done"] == 0
    net.sim.run(net.frames[:5])
    r = net.sim.registers()
    assert r["frames_done"] == 5
    net.sim.run(net.frames[5:8])
    r = net.sim.registers()
    e = net.man["engine"]
    assert r["frames_done"] == 8
    assert r["net_id"] == net.man["network_id_int"]
    assert r["build_params"] == (e["n_pe"] | e["n_ci"] << 8 | net.qnet.cfg.weight_bits << 16
                                 | net.qnet.cfg.act_bits << 24)
    assert r["status"] == 0
    assert r["cycles_last"] == _good_cycles(net)


# ---- the C testbench ------------------------------------------------------------
def test_testbench_passes(net):
    assert csim.run_testbench(net.dir, quiet=True) == 0


def test_testbench_fails_on_corrupt_vectors(net, tmp_path):
    shutil.copy(net.dir / "vectors_in.bin", tmp_path / "vectors_in.bin")
    out = np.fromfile(net.dir / "vectors_out.bin", "<i4")
    out[3 * net.qnet.num_classes + 2] ^= 1          # flip one bit of one logit of frame 3
    out.astype("<i4").tofile(tmp_path / "vectors_out.bin")
    assert csim.run_testbench(net.dir, vectors_dir=tmp_path, quiet=True) == 1
    (tmp_path / "vectors_out.bin").write_bytes(b"\0" * 12)  # wrong size
    assert csim.run_testbench(net.dir, vectors_dir=tmp_path, quiet=True) == 2


# ---- protocol errors --------------------------------------------------------------
def test_short_frame(net):
    sim, k = net.sim, net.qnet.num_classes
    sim.reset()
    beats, last = csim.frame_beats(net.frames[10])
    cut = len(beats) // 2
    short_last = np.zeros(cut, np.uint8)
    short_last[-1] = 1
    out = sim.send_raw(beats[:cut], short_last)
    assert out.tolist() == [ERR] * k
    r = sim.registers()
    assert r["short_frame"] and not r["long_frame"] and r["error_frames"] == 1
    assert r["frames_done"] == 1
    assert r["cycles_last"] == cut + k
    out = sim.send_raw(beats, last)                  # the next frame is processed normally
    assert np.array_equal(out, net.golden[10])
    r = sim.registers()
    assert not r["short_frame"] and not r["long_frame"] and r["error_frames"] == 1
    assert r["frames_done"] == 2 and r["cycles_last"] == _good_cycles(net)


def test_long_frame(net):
    sim, k = net.sim, net.qnet.num_classes
    sim.reset()
    beats, last = csim.frame_beats(net.frames[11])
    extra = np.array([0xDEADBEEF, 0x01234567, 0x89ABCDEF], np.uint32)
    long_beats = np.concatenate([beats, extra])
    long_last = np.zeros(len(long_beats), np.uint8)
    long_last[-1] = 1
    out = sim.send_raw(long_beats, long_last)
    assert out.tolist() == [ERR] * k
    r = sim.registers()
    assert r["long_frame"] and not r["short_frame"] and r["error_frames"] == 1
    assert r["cycles_last"] == len(long_beats) + k
    out = sim.send_raw(beats, last)
    assert np.array_equal(out, net.golden[11])
    assert sim.registers()["status"] == 1 << 16


def test_mixed_stream_back_to_back(net):
    """good, short, long, good, good in one burst: one output frame per input frame."""
    sim, k = net.sim, net.qnet.num_classes
    sim.reset()
    parts, lasts = [], []
    for i in (12, 13):
        b, l = csim.frame_beats(net.frames[i])
        parts.append(b)
        lasts.append(l)
    (b12, b13), (l12, l13) = parts, lasts
    short_b, short_l = b13[:3], np.array([0, 0, 1], np.uint8)
    long_b = np.concatenate([b12, b13[:5]])
    long_l = np.zeros(len(long_b), np.uint8)
    long_l[-1] = 1
    seq_b = np.concatenate([b12, short_b, long_b, b13, b12])
    seq_l = np.concatenate([l12, short_l, long_l, l13, l12])
    out = sim.send_raw(seq_b, seq_l).reshape(-1, k)
    assert out.shape == (5, k)
    assert np.array_equal(out[0], net.golden[12])
    assert (out[1] == ERR).all() and (out[2] == ERR).all()
    assert np.array_equal(out[3], net.golden[13])
    assert np.array_equal(out[4], net.golden[12])
    r = sim.registers()
    assert r["frames_done"] == 5 and r["error_frames"] == 2 and r["status"] & 3 == 0


# ---- another engine shape, signed internal tensors, narrow formats ----------------------
def _signed_net() -> NetConfig:
    """Signed (no-ReLU) internal tensors, a 12-channel tensor (a partial word),
    a 1x1 stride-2 conv, 6-bit activations / 5-bit weights / 12-bit logits,
    and a head split in two (the second part at GAP channel 8)."""
    L = [LayerSpec("c1", INPUT, "c1", 1, 16, 3, 2),
         LayerSpec("c2", "c1", "c2", 16, 12, 1, 1, relu=False),
         LayerSpec("c3", "c2", "c3", 12, 24, 3, 1),
         LayerSpec("c4", "c3", "c4", 24, 16, 1, 2),
         LayerSpec("c5a", "c4", "c5", 16, 8, 1, 1, relu=False),
         LayerSpec("c5b", "c4", "c5", 16, 8, 3, 1, relu=False, dst_offset=8)]
    return NetConfig("signed-net", 16, 1, 10, tuple(L), act_bits=6, weight_bits=5, out_bits=12)


def test_other_engine_and_signed_tensors(tmp_path_factory):
    """N_PE=16, N_CI=4 (4 words per output group) on a network with signed
    internal tensors and narrow formats: still bit exact."""
    n = _make_net("signed-net", tmp_path_factory, cfg=_signed_net(), engine=EngineParams(16, 4), n_frames=32,
                  testbench=False, calib_scale=0.5)   # calibrated on darker frames: saturation happens
    assert any(l.out_format.signed for l in n.qnet.layers[:-2]), "no signed internal tensor"
    logits = n.sim.run(n.frames)
    assert np.array_equal(logits, n.golden), f"seed {n.seed}"
    r = n.sim.registers()
    assert r["build_params"] == 16 | 4 << 8 | 5 << 16 | 6 << 24
    assert r["cycles_last"] == _good_cycles(n)


# ---- command line and errors --------------------------------------------------------
def test_cli_writes_report(tiny, tmp_path):
    out = tmp_path / "csim.json"
    from zynqflow.bench import csim_eval
    rc = csim_eval.main(["--export", str(tiny.dir), "--frames", "48", "--data", "synthetic", "--out", str(out)])
    assert rc == 0
    res = json.loads(out.read_text())
    assert res["frames"] == 48 and res["mismatches_vs_golden"] == 0
    assert res["network_id"] == tiny.man["network_id"]
    assert res["top1"] == res["golden_top1"]
    for key in ("seconds", "fps", "testbench_rc"):
        assert key in res
    assert res["testbench_rc"] == 0


def test_missing_compiler_is_named(tiny, monkeypatch, tmp_path):
    monkeypatch.setenv("CXX", "no-such-g++")
    with pytest.raises(csim.CSimError, match="no-such-g\\+\\+"):
        csim.build(tiny.dir, tmp_path)


def test_bad_frames_rejected(tiny):
    with pytest.raises(ValueError):
        tiny.sim.run(np.zeros((2, 3, 3, 1), np.uint8))
    with pytest.raises(TypeError):
        tiny.sim.run(tiny.frames.astype(np.int16))
