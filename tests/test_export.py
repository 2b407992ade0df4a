"""Golden model vs the PyTorch exact integer path, and the exporter's checks."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from zynqflow.spec.topology import get_config
from zynqflow.export.exporter import EngineParams, ExportError, export, load_checkpoint_qnet, load_plan, plan_hardware
from zynqflow.export.plan import default_engine, plan_layout
from zynqflow.spec import engine as E
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


def test_conv_acc_exact_on_both_sides_of_the_float32_bound():
    """spec.golden.conv_acc multiplies in float32 only while no partial sum can reach 2^24: 1x1
    convolutions of 255 x 127 products over 514 inputs (below the bound, every sum even) and over 601
    (above it, odd sums that float32 cannot hold), with random signs, equal the int64 sums."""
    from zynqflow.spec.golden import conv_acc

    rng = np.random.default_rng(7)
    for cin in (514, 601):
        x = np.full((2, 3, 3, cin), 255, np.int64)
        w = np.full((4, 1, 1, cin), 127, np.int64)
        w[1:] *= rng.choice([-1, 1], size=(3, 1, 1, cin))
        x[1] = rng.integers(0, 256, size=(3, 3, cin))
        layer = replace(_conv_layer(cin), w=w, b=np.arange(4, dtype=np.int64))
        want = np.einsum("nhwc,oc->nhwo", x, w[:, 0, 0, :]) + layer.b
        assert np.array_equal(conv_acc(x, layer), want), cin
        assert (cin * 255 * 127 < 1 << 24) == (cin == 514) and want[0, 0, 0, 0] % 2 == (cin % 2)


def _conv_layer(cin: int):
    """A 1x1, stride 1, 4-output QLayer of a zynqnet-tiny layer's formats, for conv_acc alone."""
    net, _ = calibrated("zynqnet-tiny")
    return replace(qnet_from_model(net).layers[1], cin=cin, cout=4, k=1, stride=1)


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
    # the weight image: the header, then per (layer, group) a bias word and the weight words
    plan = plan_hardware(q, EngineParams())
    img = (d / "weights.bin").read_bytes()
    assert img == plan.weight_image and len(img) == man["memory"]["weight_image_bytes"]
    hdr = {f.name: int.from_bytes(img[i * 4:i * 4 + 4], "little") for i, f in enumerate(E.HEADER)}
    assert hdr == dict(magic=E.HEADER_MAGIC, spec_version=E.SPEC_VERSION, net_id=q.network_id(), word_bytes=128,
                       n_words=plan.image_words, header_bytes=256)
    P, C = 16, 8
    word = lambda i: np.frombuffer(img, np.uint8)[256 + i * P * C: 256 + (i + 1) * P * C]
    l1, q1 = plan.layers[1], q.layers[1]        # f2/s3: 3x3, one group, one chunk
    assert np.frombuffer(word(l1.w_off).tobytes()[:4 * P], "<i4")[: q1.cout].tolist() == q1.b.tolist()
    # weight word (tap 4 = centre, chunk 0): lane (pe, ci) = w[pe, 1, 1, ci]
    w = word(l1.w_off + 1 + 4).view(np.int8).reshape(P, C)
    assert w[: q1.cout, : q1.cin].tolist() == q1.w[:, 1, 1, :].tolist()
    # the RTL parameters carry the packed layer table and the constants of net_params.h
    svh = (d / "rtl_params.svh").read_text()
    assert f"`define ZQ_NET_ID 32'h{q.network_id():08x}" in svh and f"`define ZQ_N_LAYERS {len(q.layers)}" in svh
    table = int(svh.split("`define ZQ_LAYER_TABLE ")[1].split()[0].split("'h")[1], 16)
    rows = [table >> (i * E.ROW_BITS) & ((1 << E.ROW_BITS) - 1) for i in range(len(q.layers))]
    assert rows == plan.rows and E.unpack_row(rows[1])["k3"] == 1
    header = (d / "net_params.h").read_text()
    assert f"0x{q.network_id():08x}" in header and f"N_LAYERS = {len(q.layers)}" in header
    assert man["cycles_model"]["cycles"] > plan.mac_cycles and man["weights_source"] == "unknown"
    assert load_plan(d).rows == plan.rows


def test_hardware_plan_mini_and_zynqnet():
    net, _ = calibrated("zynqnet-mini")
    plan = plan_hardware(qnet_from_model(net), EngineParams(16, 8))
    # stem is im2col'ed: a 1x1 conv on 16x16 pixels of 9 channels (2 chunks), fed by the stem ring
    c1 = plan.layers[0]
    assert (c1.k, c1.stride, c1.in_size, c1.ci_chunks, c1.co_groups) == (1, 1, 16, 2, 4)
    assert c1.src_kind == E.SRC_STEM and c1.band_rows == 1
    # hand-computed: groups * pixels * taps * chunks per layer
    expect = [4 * 256 * 1 * 2, 1 * 256 * 1 * 8, 2 * 256 * 1 * 2, 2 * 256 * 9 * 2,
              2 * 64 * 9 * 8, 4 * 64 * 1 * 4, 4 * 64 * 9 * 4,
              2 * 64 * 1 * 16, 4 * 64 * 1 * 4, 4 * 64 * 9 * 4,
              4 * 16 * 9 * 16, 4 * 16 * 1 * 8, 4 * 16 * 9 * 8, 1 * 16 * 1 * 16]
    assert [l.mac_cycles for l in plan.layers] == expect and plan.mac_cycles == 60672
    # everything on chip: the weight image is cached, no DDR tensors
    assert plan.weight_cache and not plan.ddr_tensors and plan.scratch_bytes == 0
    assert plan.layers[-1].dst_kind == E.DST_GAP
    # the full ZynqNet on its default engine: 32 x 16 lanes (220 DSP48E1 pairs, 72 LUT lanes), five
    # tensors in DDR over both activation paths, a streamed weight ring
    zn = plan_layout(get_config("zynqnet"), default_engine(get_config("zynqnet")))
    assert (zn.engine.n_pe, zn.engine.n_ci, zn.engine.dsp48e1, zn.engine.lut_lanes) == (32, 16, 220, 72)
    assert sorted(t.name for t in zn.tensors.values() if t.place == "ddr") == ["c1", "f2", "f3", "f4", "f5"]
    assert all((t.wr_path, t.rd_path) == (E.PATH_BOTH, E.PATH_BOTH) for t in zn.tensors.values() if t.place == "ddr")
    assert zn.act_paths == 2 and not zn.weight_cache and zn.wring_words == 512
    assert zn.act_bytes() <= 192 * 1024 and zn.macs > 500e6
    kinds = {l.name: (l.src_kind, l.dst_kind) for l in zn.layers}
    assert kinds["c1"] == (E.SRC_STEM, E.DST_DDR) and kinds["f2/s3"] == (E.SRC_DDR, E.DST_ACT)
    assert zn.layers[0].row["dst_path"] == E.PATH_BOTH and zn.layers[1].row["src_path"] == E.PATH_BOTH
    # the engine before (EXPORT_ARGS="--n-pe 16 --n-ci 16 --act-paths 1"): 128 DSP48E1, one path
    old = plan_layout(get_config("zynqnet"), EngineParams(16, 16, act_paths=1))
    assert sorted(t.name for t in old.tensors.values() if t.place == "ddr") == ["c1", "f2", "f3"]
    assert old.scratch_bytes == 2 << 20 and old.act_paths == 1 and old.engine.lut_lanes == 0
    assert {l.row["src_path"] | l.row["dst_path"] for l in old.layers} <= {0, E.PATH_1}


def test_plan_refusals_name_the_layer():
    cfg = get_config("zynqnet-mini")
    with pytest.raises(ExportError, match=r"layer '.*'.*on-chip activations.*budget is 1 KiB"):
        plan_layout(cfg, EngineParams(16, 8, act_kb=1))
    with pytest.raises(ExportError, match="n_pe=4 < 8"):
        plan_layout(cfg, EngineParams(4, 4))
    with pytest.raises(ExportError, match="must be a multiple of n_ci"):
        plan_layout(cfg, EngineParams(16, 32))
    with pytest.raises(ExportError, match="32: a weight word must be 64 bytes"):
        plan_layout(cfg, EngineParams(8, 4))
    with pytest.raises(ExportError, match=r"dsp_pairs=65: 0\.\.64"):
        plan_layout(cfg, EngineParams(16, 8, dsp_pairs=65))
    with pytest.raises(ExportError, match="act_paths=3: 1 or 2"):
        plan_layout(cfg, EngineParams(16, 8, act_paths=3))


def test_export_cli_engine_options(tmp_path):
    """--n-pe/--n-ci pick an engine with EngineParams' defaults (not the network's default engine's),
    --dsp-pairs and --act-paths go into the engine, the manifest and rtl_params.svh."""
    from zynqflow.export.exporter import main
    out = tmp_path / "e"
    assert main(["--net", "zynqnet-tiny", "--random-weights", "1", "--vectors", "1", "--out", str(out),
                 "--n-pe", "16", "--n-ci", "8", "--dsp-pairs", "40", "--act-paths", "1"]) == 0
    man = json.loads((out / "manifest.json").read_text())
    e = man["engine"]
    assert (e["dsp48e1"], e["lut_lanes"], e["params"]["act_paths"], e["params"]["act_kb"]) == (40, 48, 1, 320)
    svh = (out / "rtl_params.svh").read_text()
    assert "`define ZQ_DSP_PAIRS 40\n" in svh and "`define ZQ_ACT_PATHS 1\n" in svh


def test_export_cli_random_weights(tmp_path, capsys):
    from zynqflow.export.exporter import main
    assert main(["--net", "zynqnet-tiny", "--random-weights", "3", "--vectors", "2", "--out", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    assert "seeded random weights (seed 3)" in err and "not accuracy" in err
    man = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert man["weights_source"] == "random:3" and man["test_vectors"] == 2
    with pytest.raises(SystemExit):
        main(["--random-weights", "3", "--out", str(tmp_path / "x")])     # no --net
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_export_folder_gets_the_users_umask(tmp_path, umask):
    """The export is staged in a temporary folder (mkdtemp: 0700) and renamed: it gets the mode mkdir would give
    (0777 & ~umask), so others can read it where the umask lets them; and it records what it was made from."""
    import os
    import stat

    from zynqflow.export.exporter import EXPORT_INPUTS, main
    old = os.umask(umask)
    try:
        assert main(["--net", "zynqnet-tiny", "--random-weights", "1", "--vectors", "1",
                     "--out", str(tmp_path / "e")]) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "e").stat().st_mode) == 0o777 & ~umask
    inputs = json.loads((tmp_path / "e" / EXPORT_INPUTS).read_text())
    assert (inputs["source"], inputs["net"], inputs["seed"], inputs["args"]["vectors"]) == ("random", "zynqnet-tiny", 1, 1)


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
    # the same topology with 4096 channels is provably safe ...
    from zynqflow.export.exporter import verify
    cfg = fire_net("safe", 16, 1, 10, stem=4096, fires=[FireSpec(8, 8, 8, downsample=True)])
    net = ZynqNet(cfg)
    net.calibrate([torch.randint(0, 256, (2, 1, 16, 16)).float() / 256])
    verify(qnet_from_model(net))
    # ... but its 3x3 squeeze needs weight blocks of 1 + 9 * 512 words: more than a layer row holds
    with pytest.raises(ExportError, match=r"layer 'f2/s3'.*w_blk=4609 does not fit 12 bits"):
        export(qnet_from_model(net), tmp_path / "ok")
    assert not (tmp_path / "ok").exists()


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


def test_cycle_model_two_paths():
    """The cycle model with two activation paths (spec.cycles): the full ZynqNet's default engine
    models at >= 75 fps at 100 MHz under pynq-z2 (its RTL measured 80.9), each DDR tensor's bytes
    once whatever the paths, the one-path plan of the same engine slower with its writes bound by one
    port; the shared-budget windows settle (another pass changes nothing), and a layer's windows are
    its own (its factors do not move when an earlier layer's time changes)."""
    from zynqflow.spec import cycles as C
    from zynqflow.spec.engine import memory_preset

    cfg = get_config("zynqnet")
    two = plan_layout(cfg, default_engine(cfg))
    one = plan_layout(cfg, EngineParams(32, 16, act_kb=192, act_paths=1))
    p2, p1 = C.predict(two, "pynq-z2"), C.predict(one, "pynq-z2")
    assert p2["frame"]["fps_at_100mhz"] >= 75.0 > p1["frame"]["fps_at_100mhz"]
    assert p2["frame"]["dram_wr_bytes"] == p1["frame"]["dram_wr_bytes"] == two.scratch_bytes
    by = {l["name"]: l for l in p1["layers"]}
    assert by["f2/e1"]["bound"] in ("ddr write", "ddr shared") and by["f2/e1"]["cycles"] > 3 * by["f2/e1"]["mac_cycles"]
    assert C.predict(two, "pynq-z2", passes=12)["frame"]["cycles"] == pytest.approx(p2["frame"]["cycles"], rel=2e-3)
    # ideal memory: no shared budget, both paths at a port's rate each
    pi = C.predict(two, memory_preset("ideal"))
    assert pi["frame"]["cycles"] < p2["frame"]["cycles"]
    tl = C._Timeline()
    for t in (0.0, 5000.0, 9000.0):
        tl.start_layer(t)
    assert tl.key(5100.0) == (1, 0) and tl.key(5000.0 + 2 * C.SHARED_WINDOW + 1) == (1, 2)
    assert tl.window((1, 7)) == (5000.0 + 7 * C.SHARED_WINDOW, 9000.0)      # cut at the next layer
    assert [k for k, _, _ in tl.split(8900.0, 9100.0)] == [(1, 7), (2, 0)]
