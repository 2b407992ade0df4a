"""Golden model vs the PyTorch exact integer path, and the exporter's checks."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from zynqflow.spec.topology import get_config
from zynqflow.export.exporter import (LAYER_FIELDS, EngineParams, ExportError, export, load_checkpoint_qnet,
                                   plan_hardware)
from zynqflow.spec.qnet import QNet
from zynqflow.spec.golden import golden_logits, golden_tensors
from zynqflow.model.net import qnet_from_model
from zynqflow.model.net import ZynqNet


def calibrated(name: str, seed: int = 0, n: int = 48, **cfg_kw) -> tuple[ZynqNet, torch.Tensor]:
    torch.manual_seed(seed)
    cfg = get_config(name, **cfg_kw)
    net = ZynqNet(cfg)
    for m in net.modules():  # non-trivial BN statistics, so folding matters
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 2.0)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.2, 0.2)
    x = torch.randint(0, 256, (n, cfg.in_channels, cfg.input_size, cfg.input_size), dtype=torch.uint8)
    net.calibrate([x.float() / 256])
    return net, x


def hwc(x: torch.Tensor) -> np.ndarray:
    return np.ascontiguousarray(x.numpy().transpose(0, 2, 3, 1))


@pytest.mark.parametrize("name,seed,kw", [
    ("zynqnet-tiny", 0, {}), ("zynqnet-tiny", 1, {}), ("zynqnet-mini", 0, {}),
    ("zynqnet-mini", 2, {"in_channels": 3}), ("zynqnet", 0, {"input_size": 32}),
])
def test_golden_equals_torch_integer_path(name, seed, kw):
    net, x = calibrated(name, seed, n=8 if name == "zynqnet" else 48, **kw)
    q = qnet_from_model(net)
    ref = net.integer_forward(x).numpy()
    got = golden_logits(q, hwc(x))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, ref)
    # logits are not trivially constant: the test can fail
    assert len(np.unique(got)) > 5


def test_golden_intermediate_formats_hold():
    net, x = calibrated("zynqnet-mini", 3)
    q = qnet_from_model(net)
    tensors = golden_tensors(q, hwc(x))
    for l in q.layers:
        t = tensors[l.dst]
        assert t.min() >= l.out_format.lo and t.max() <= l.out_format.hi, l.name
    assert tensors["c1"].max() > 0


def test_golden_rejects_bad_frames():
    net, x = calibrated("zynqnet-tiny")
    q = qnet_from_model(net)
    with pytest.raises(TypeError, match="uint8"):
        golden_logits(q, hwc(x).astype(np.int32))
    with pytest.raises(ValueError, match="HWC"):
        golden_logits(q, hwc(x)[:, :8])


def test_export_writes_consistent_files(tmp_path):
    net, x = calibrated("zynqnet-tiny")
    q = qnet_from_model(net, dataset="synthetic")
    man = export(q, tmp_path / "exp", hwc(x)[:5])
    d = tmp_path / "exp"
    for f in man["files"].values():
        assert (d / f).is_file(), f
    on_disk = json.loads((d / "manifest.json").read_text())
    assert on_disk == man
    assert man["network"] == "zynqnet-tiny"
    assert man["network_id"] == f"0x{q.network_id():08x}" and 0 <= man["network_id_int"] < 2 ** 32
    assert man["input"]["shape"] == [16, 16, 1] and man["input"]["format"] == {"bits": 8, "signed": False, "frac": 8}
    assert man["output"]["format"]["bits"] == 16 and man["output"]["format"]["signed"]
    assert len(man["class_names"]) == 10
    assert [l["name"] for l in man["layers"]] == [l.name for l in q.layers]
    # test vectors are the golden logits of the frames
    frames = np.fromfile(d / "vectors_in.bin", np.uint8).reshape(5, 16, 16, 1)
    logits = np.fromfile(d / "vectors_out.bin", "<i4").reshape(5, 10)
    np.testing.assert_array_equal(frames, hwc(x)[:5])
    np.testing.assert_array_equal(logits, golden_logits(q, frames))
    # integers.npz round trip: same network, same ID, same logits
    q2 = QNet.load_npz(d / "integers.npz")
    assert q2.network_id() == q.network_id()
    np.testing.assert_array_equal(golden_logits(q2, frames), logits)
    # .mem files: one line per ROM word, lanes packed lane 0 in the LSBs
    plan = plan_hardware(q, EngineParams())
    wl = (d / "weights.mem").read_text().split()
    assert len(wl) == len(plan.weights) and all(len(s) == 16 * 8 * 8 // 4 for s in wl)
    word = int(wl[3], 16)
    lane = lambda v, i, bits: ((v >> (i * bits)) & ((1 << bits) - 1)) - (((v >> (i * bits + bits - 1)) & 1) << bits)
    assert [lane(word, i, 8) for i in range(128)] == plan.weights[3].ravel().tolist()
    bl = (d / "biases.mem").read_text().split()
    assert [lane(int(bl[0], 16), i, 32) for i in range(16)] == plan.biases[0].tolist()
    ll = (d / "layers.mem").read_text().split()
    assert len(ll) == len(q.layers)
    row = [lane(int(ll[1], 16), i, 16) for i in range(len(LAYER_FIELDS))]
    assert row == plan.layers[1].fields()
    header = (d / "net_params.h").read_text()
    assert f"constexpr unsigned NET_ID = 0x{q.network_id():08x}u;" in header
    assert f"constexpr int N_LAYERS = {len(q.layers)};" in header


def test_hardware_plan_cycles_and_buffers():
    net, _ = calibrated("zynqnet-mini")
    plan = plan_hardware(qnet_from_model(net), EngineParams(16, 8))
    # stem is im2col'ed: a 1x1 conv on 16x16 pixels of 9 channels (2 chunks)
    c1 = plan.layers[0]
    assert (c1.k, c1.stride, c1.in_size, c1.ci_chunks, c1.co_groups) == (1, 1, 16, 2, 4)
    # hand-computed: groups * pixels * taps * chunks per layer
    expect = [4 * 256 * 1 * 2, 1 * 256 * 1 * 8, 2 * 256 * 1 * 2, 2 * 256 * 9 * 2,
              2 * 64 * 9 * 8, 4 * 64 * 1 * 4, 4 * 64 * 9 * 4,
              2 * 64 * 1 * 16, 4 * 64 * 1 * 4, 4 * 64 * 9 * 4,
              4 * 16 * 9 * 16, 4 * 16 * 1 * 8, 4 * 16 * 9 * 8, 1 * 16 * 1 * 16]
    assert [l.cycles() for l in plan.layers] == expect
    assert plan.total_cycles == 60672
    # input buffer + three rotating activation buffers
    assert plan.buf_words == [16 * 16 * 2, 16 * 16 * 8, 16 * 16 * 2]
    assert plan.layers[-1].is_last == 1 and plan.layers[-1].dst_buf == 15


def test_export_refuses_design_rule_violation(tmp_path):
    net, _ = calibrated("zynqnet-tiny")
    q = qnet_from_model(net)
    bad_layers = list(q.cfg.layers)
    bad_layers[1] = replace(bad_layers[1], stride=3)
    q.cfg = replace(q.cfg, layers=tuple(bad_layers))
    with pytest.raises(ExportError, match=r"layer 'f2/s3'.*stride 3"):
        export(q, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_overflow_proof_refuses_overflowing_network(tmp_path):
    """A 3x3 conv over 8192 u8 input channels with s8 weights can reach
    9 * 8192 * 128 * 255 = 2.4e9 > 2^31 - 1: the proof must refuse it."""
    from zynqflow.spec.topology import FireSpec, fire_net
    cfg = fire_net("overflow", 16, 1, 10, stem=8192, fires=[FireSpec(8, 8, 8, downsample=True)])
    torch.manual_seed(0)
    net = ZynqNet(cfg)
    net.calibrate([torch.randint(0, 256, (2, 1, 16, 16)).float() / 256])
    q = qnet_from_model(net)
    with pytest.raises(ExportError, match=r"layer 'f2/s3'.*accumulator may overflow.*3x3x8192"):
        export(q, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    # the same topology with 4096 channels is provably safe
    cfg = fire_net("safe", 16, 1, 10, stem=4096, fires=[FireSpec(8, 8, 8, downsample=True)])
    net = ZynqNet(cfg)
    net.calibrate([torch.randint(0, 256, (2, 1, 16, 16)).float() / 256])
    export(qnet_from_model(net), tmp_path / "ok")
    assert (tmp_path / "ok" / "manifest.json").is_file()


def test_export_refuses_integers_that_disagree_with_topology(tmp_path):
    net, _ = calibrated("zynqnet-tiny")
    q = qnet_from_model(net)
    q.layers[2].cin = 16
    with pytest.raises(ExportError, match=r"layer 'f2/e1'.*topology"):
        export(q, tmp_path / "out")


def test_export_refuses_bias_and_weight_ranges(tmp_path):
    net, _ = calibrated("zynqnet-tiny")
    q = qnet_from_model(net)
    q.layers[0].b = q.layers[0].b.copy()
    q.layers[0].b[0] = 1 << 31
    with pytest.raises(ExportError, match=r"layer 'c1'.*bias does not fit int32"):
        export(q, tmp_path / "out")
    q = qnet_from_model(net)
    q.layers[1].w = q.layers[1].w.copy()
    q.layers[1].w[0, 0, 0, 0] = 200
    with pytest.raises(ExportError, match=r"layer 'f2/s3'.*weights outside"):
        export(q, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_failed_export_keeps_previous_files(tmp_path):
    net, x = calibrated("zynqnet-tiny")
    q = qnet_from_model(net)
    export(q, tmp_path / "out", hwc(x)[:2])
    before = (tmp_path / "out" / "manifest.json").read_text()
    q.layers[0].shift = 40
    with pytest.raises(ExportError, match="shift 40"):
        export(q, tmp_path / "out")
    assert (tmp_path / "out" / "manifest.json").read_text() == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".export-")]


def test_network_id_tracks_every_integer():
    net, _ = calibrated("zynqnet-tiny")
    q = qnet_from_model(net)
    base = q.network_id()
    q.layers[3].w = q.layers[3].w.copy()
    q.layers[3].w[0, 1, 1, 0] += 1
    assert q.network_id() != base


def test_checkpoint_errors(tmp_path):
    with pytest.raises(ExportError, match="no such checkpoint"):
        load_checkpoint_qnet(tmp_path / "missing.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ExportError, match="junk.pt.*cannot read"):
        load_checkpoint_qnet(tmp_path / "junk.pt")
    # an unquantized (float) checkpoint
    net = ZynqNet(get_config("zynqnet-tiny"))
    torch.save(net.checkpoint_state(), tmp_path / "float.pt")
    with pytest.raises(ExportError, match="not quantized"):
        load_checkpoint_qnet(tmp_path / "float.pt")
    # a checkpoint whose weights break the topology (5x5 kernel in place of 3x3)
    net, _ = calibrated("zynqnet-tiny")
    ck = net.checkpoint_state()
    ck["state_dict"]["units.f2_e3.conv.weight"] = torch.zeros(8, 8, 5, 5)
    torch.save(ck, tmp_path / "bad.pt")
    with pytest.raises(ExportError, match=r"layer 'f2/e3'.*\(8, 8, 5, 5\)"):
        load_checkpoint_qnet(tmp_path / "bad.pt")
    # a checkpoint whose config breaks the design rules (maxpool layer)
    ck = net.checkpoint_state()
    ck["config"]["layers"].insert(1, dict(name="pool", src="c1", dst="p", cin=8, cout=8, kind="maxpool"))
    torch.save(ck, tmp_path / "pool.pt")
    with pytest.raises(ExportError, match=r"layer 'pool'.*maxpool is not allowed"):
        load_checkpoint_qnet(tmp_path / "pool.pt")


def test_export_cli_writes_nothing_on_error(tmp_path, capsys):
    from zynqflow.export.exporter import main
    assert main(["--ckpt", str(tmp_path / "none.pt"), "--out", str(tmp_path / "o")]) == 2
    assert "nothing written" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
