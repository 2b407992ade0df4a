"""zynqflow import: family networks trained in Brevitas for a few steps, exported with
export_qonnx and imported; golden = the graph's own exact execution = C-sim = RTL on a
handful of frames (a 4x4 final map pooled by TruncAvgPool2d, and the Brevitas zynqnet-mini);
and one test per refusal (each names the node and the rule)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("brevitas")
pytest.importorskip("qonnx")

import onnx  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

import brevitas_nets as B  # noqa: E402
from zynqflow.export import qonnx_import as QI  # noqa: E402
from zynqflow.host.cli import main as cli  # noqa: E402

CLASSES = "ring,bar,dot,cross"


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """A 1x1 final map (16 -> 8 -> 4 -> 2 -> 1), a float mean: the pool has nothing to round."""
    return B.train_and_export(tmp_path_factory.mktemp("qonnx") / "net.onnx")


@pytest.fixture(scope="module")
def pooled(tmp_path_factory):
    """A 4x4 final map (16 -> 8 -> 4) pooled by BQ.gap_pool (TruncAvgPool2d) with ties away from zero, logits of
    both signs (the even classes negated): (path, net)."""
    return B.train_and_export(tmp_path_factory.mktemp("qonnx") / "pooled.onnx", n_fires=1, pool="half_away",
                              return_net=True, negate_even=True)


def test_qonnx_modes_are_the_engines():
    """Each QONNX rounding mode the importer maps onto the pool (QONNX_GAP_ROUND) is, by qonnx's own function, the
    engine's mode (numerics.gap_shift) on every sum in -600..600 over 2^1..2^4 pixels."""
    from qonnx.custom_op.general.intquant import resolve_rounding_mode

    from zynqflow.spec.numerics import gap_shift

    sums = np.arange(-600, 601)
    for qmode, mode in QI.QONNX_GAP_ROUND.items():
        for k in range(1, 5):
            want = resolve_rounding_mode(qmode)(sums / 2.0 ** k).astype(np.int64)
            assert np.array_equal(gap_shift(sums, 1 << k, mode), want), (qmode, mode, k)
    assert set(QI.QONNX_GAP_ROUND.values()) == {"floor", "half_even", "half_away"}


def test_import_is_bit_exact_through_the_flow(pooled, tmp_path):
    """A Brevitas network with a 4x4 final map and a global average pool (TruncAvgPool2d, HALF_UP): imported
    with the engine's pool rounding half_away; Brevitas's forward = the graph = golden = C-sim (the RTL twin of an
    import: the zynqnet-mini test below; of half_away: tests/test_rtl_modules.py, zq_gap)."""
    import torch

    from dataclasses import replace

    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.core.onnx_exec import execute_onnx

    from zynqflow.export.exporter import main as export_main
    from zynqflow.host.manifest import Export
    from zynqflow.sim.csim.runner import CSim
    from zynqflow.spec.golden import golden_logits

    good, net = pooled
    out = tmp_path / "imported"
    assert cli(["import", str(good), "--name", "bnet", "--out", str(out), "--class-names", CLASSES]) == 0
    cfg = json.loads((out / "bnet.json").read_text())
    assert cfg["num_classes"] == 4 and cfg["class_names"] == CLASSES.split(",") and cfg["input_size"] == 16
    assert cfg["gap_round"] == "half_away"
    rep = json.loads((out / "import.json").read_text())
    assert rep["verification"]["bit_exact"] and all(r["rounding_rule"] for r in rep["layers"])
    assert [r["rounding"] for r in rep["layers"] if r.get("relu")] == ["HALF_UP"] * 4
    assert rep["layers"][-1] | {"rounding_rule": ""} == dict(layer="pool", nodes=rep["layers"][-1]["nodes"], pixels=16,
                                                             shift=4, rounding="HALF_UP", gap_round="half_away",
                                                             rounding_rule="")
    # the exporter reads the checkpoint like a trained one; its vectors are the golden logits
    assert export_main(["--ckpt", str(out / "checkpoint.pt"), "--out", str(tmp_path / "export"),
                        "--vectors", "8"]) == 0
    ex = Export(tmp_path / "export")
    assert ex.class_names == CLASSES.split(",")
    frames, logits = ex.vectors()
    nchw = np.ascontiguousarray(frames.transpose(0, 3, 1, 2))
    graph = QI.execute_exact(good, nchw)                      # the graph's own semantics, float64
    gold = golden_logits(ex.qnet(), frames)
    assert np.array_equal(gold, logits)
    assert np.array_equal(gold * 2.0 ** -ex.out_frac, graph)
    assert len(np.unique(gold, axis=0)) > 1                    # the frames give different logits
    with torch.no_grad():                                      # Brevitas's own forward (float32: exact here)
        assert np.array_equal(net(torch.from_numpy(nchw).float() / 256).double().numpy(), graph)
    q, f = ex.qnet(), B.frames(256)                            # on 256 frames: bit-exact, and the mode matters
    hwc, many = np.ascontiguousarray(f.transpose(0, 2, 3, 1)), QI.execute_exact(good, f)
    assert np.array_equal(golden_logits(q, hwc) * 2.0 ** -ex.out_frac, many)
    assert not np.array_equal(golden_logits(replace(q, cfg=replace(q.cfg, gap_round="half_up")), hwc)
                              * 2.0 ** -ex.out_frac, many)
    m = ModelWrapper(str(good))                                # qonnx's own executor agrees (small sums here)
    for i in range(2):
        o = execute_onnx(m, {m.graph.input[0].name: (nchw[i:i + 1] / 256.0).astype(np.float32)})
        assert np.array_equal(next(iter(o.values())).reshape(-1).astype(np.float64), graph[i])
    assert np.array_equal(CSim(ex.dir).run(frames), gold)


def test_brevitas_zynqnet_mini_round_trips(tmp_path):
    """zynqnet-mini written in Brevitas (BQ.FamilyNet: a 4x4 final map, gap_pool rounding FLOOR), trained a few
    steps (cached under build/sim/brevitas/), imported with --data synthetic: bit-exact through C-sim and RTL."""
    from zynqflow.bench.rtl_bench import measure
    from zynqflow.export.exporter import main as export_main
    from zynqflow.host.manifest import Export
    from zynqflow.sim.csim.runner import CSim
    from zynqflow.spec.golden import golden_logits

    src = B.zynqnet_mini("floor")
    out = tmp_path / "imported"
    assert cli(["import", str(src), "--name", "bmini", "--out", str(out), "--data", "synthetic", "--frames", "8"]) == 0
    rep = json.loads((out / "import.json").read_text())
    assert rep["layers"][-1]["gap_round"] == "floor" and rep["layers"][-1]["pixels"] == 16
    cfg = json.loads((out / "bmini.json").read_text())
    assert len(cfg["layers"]) == 14 and cfg["gap_round"] == "floor" and cfg["class_names"][0] == "class0"
    assert export_main(["--ckpt", str(out / "checkpoint.pt"), "--out", str(tmp_path / "export"), "--vectors", "8"]) == 0
    ex = Export(tmp_path / "export")
    assert ex.manifest["output"]["gap_round"] == "floor"
    frames, logits = ex.vectors()
    gold = golden_logits(ex.qnet(), frames)
    assert np.array_equal(gold, logits) and len(np.unique(gold, axis=0)) == len(gold)
    assert np.array_equal(gold * 2.0 ** -ex.out_frac, QI.execute_exact(src, np.ascontiguousarray(
        frames.transpose(0, 3, 1, 2))))
    assert np.array_equal(CSim(ex.dir).run(frames), gold)
    # one simulator, in this process: measure's golden thread (numpy/OpenBLAS) would race the fork of a worker
    # pool, and OpenBLAS's fork handler stops the pool a BLAS call in flight waits for (a livelock, seen here)
    rtl = measure(ex.dir, frames=8, workers=1, out=tmp_path / "rtl_bench.json")
    assert rtl["frames"] == 8 and rtl["mismatches_vs_golden"] == 0


def test_rtl_final_map_1x1(tmp_path):
    """A network whose last layers run on a 1x1 map (16 -> 8 -> 4 -> 2 -> 1): f4/e1 is one MAC step,
    issued alone after the layer's set-up, the busy hole of issue 16 (fixed in zq_loop_gen)."""
    from zynqflow.bench.rtl_bench import measure
    from zynqflow.export.exporter import main as export_main
    from zynqflow.spec.topology import FireSpec, fire_net

    cfg = fire_net("probe1x1", 16, 1, 4, stem=8, fires=[FireSpec(8, 8, 8, True)] * 3)
    (tmp_path / "net.json").write_text(json.dumps(cfg.to_dict()))
    assert export_main(["--net", str(tmp_path / "net.json"), "--random-weights", "0", "--out", str(tmp_path / "e"),
                        "--vectors", "4"]) == 0
    assert measure(tmp_path / "e", frames=4)["mismatches_vs_golden"] == 0


# ---- refusals: each names the node and the rule ------------------------------------------------
def _edit(src, dst, fn):
    m = onnx.load(str(src))
    fn(m.graph)
    onnx.save(m, str(dst))
    return dst


def _nodes(g, op):
    return [n for n in g.node if n.op_type == op]


def _const(g, name, value):
    g.initializer.append(numpy_helper.from_array(np.asarray(value, np.float32), name))
    return name


def _relu_quants(g):
    relus = {n.output[0] for n in _nodes(g, "Relu")}
    return [n for n in _nodes(g, "Quant") if n.input[0] in relus]


def _weight_quant(g):
    conv = _nodes(g, "Conv")[1]
    return next(n for n in _nodes(g, "Quant") if n.output[0] == conv.input[1]), conv


def per_channel(g):
    q, conv = _weight_quant(g)
    cout = next(numpy_helper.to_array(i) for i in g.initializer if i.name == q.input[0]).shape[0]
    q.input[1] = _const(g, "pc_scale", np.full((cout, 1, 1, 1), 2.0 ** -8) * (1 + np.arange(cout)[:, None, None, None] % 2))
    return q.name


def non_pow2(g):
    q, _ = _weight_quant(g)
    q.input[1] = _const(g, "np2_scale", 0.003)
    return q.name


def zero_point(g):
    q, _ = _weight_quant(g)
    q.input[2] = _const(g, "zp_one", 1.0)
    return q.name


def pooling(g):
    conv = _nodes(g, "Conv")[0]
    relu = next(n for n in _nodes(g, "Relu") if n.input[0] == conv.output[0])
    conv.output[0] = "pre_pool"
    pool = helper.make_node("MaxPool", ["pre_pool"], [relu.input[0]], name="the_maxpool", kernel_shape=[2, 2])
    g.node.insert(list(g.node).index(conv) + 1, pool)
    return "the_maxpool"


def kernel5(g):
    q, conv = _weight_quant(g)
    w = next(i for i in g.initializer if i.name == q.input[0])
    a = numpy_helper.to_array(w)
    w.CopyFrom(numpy_helper.from_array(np.zeros(a.shape[:2] + (5, 5), a.dtype), w.name))
    for at in conv.attribute:
        if at.name == "kernel_shape":
            at.ints[:] = [5, 5]
        if at.name == "pads":
            at.ints[:] = [2, 2, 2, 2]
    return conv.name


def input_quant(g):
    q = next(n for n in _nodes(g, "Quant") if n.input[0] == g.input[0].name)
    q.input[1] = _const(g, "in_scale", 2.0 ** -7)
    return q.name


def round_half_even(g):
    q = _relu_quants(g)[0]
    for at in q.attribute:
        if at.name == "rounding_mode":
            at.s = b"ROUND"
    return q.name


def coarse_logits(g):
    q = _nodes(g, "Quant")[-1]
    q.input[1] = _const(g, "coarse", 2.0 ** -10)
    return q.name


REFUSALS = {per_channel: "per-channel scales", non_pow2: "not a power of two", zero_point: "zero point",
            pooling: "pooling layer", kernel5: "kernel 5x5", input_quant: "input Quant .* scale 2\\^-7",
            round_half_even: "rounding_mode ROUND .*ReLUQuant", coarse_logits: "final conv's Quant rounds"}


@pytest.mark.parametrize("edit", list(REFUSALS), ids=[f.__name__ for f in REFUSALS])
def test_refused_naming_node_and_rule(good, tmp_path, edit, capsys):
    holder = {}
    bad = _edit(good, tmp_path / "bad.onnx", lambda g: holder.update(node=edit(g)))
    with pytest.raises(QI.ImportRefused, match=REFUSALS[edit]) as e:
        QI.parse(bad, "bad")
    assert holder["node"] in str(e.value)
    assert cli(["import", str(bad), "--out", str(tmp_path / "out")]) == 2
    assert "refused, nothing written" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_half_even_really_differs_where_refused(good, tmp_path):
    """The refusal of ROUND after a ReLU is not vacuous: the edited graph's own execution differs from the
    engine's rounding on some frames."""
    imp = QI.parse(good, "g")
    ck = QI.to_checkpoint(imp, str(good))
    from zynqflow.model.net import ZynqNet, qnet_from_model
    from zynqflow.spec.golden import golden_logits

    def all_round(g):
        for q in _relu_quants(g):
            for at in q.attribute:
                if at.name == "rounding_mode":
                    at.s = b"ROUND"
    bad = _edit(good, tmp_path / "even.onnx", all_round)
    f = B.frames(64)
    gold = golden_logits(qnet_from_model(ZynqNet.from_checkpoint(ck)), np.ascontiguousarray(f.transpose(0, 2, 3, 1)))
    graph = QI.execute_exact(bad, f)
    assert np.array_equal(gold * 2.0 ** -imp.output_frac, QI.execute_exact(good, f))
    assert not np.array_equal(gold * 2.0 ** -imp.output_frac, graph)


def test_unrounded_mean_over_more_than_one_pixel_is_refused(tmp_path):
    """A float mean of a 2x2 map (no TruncAvgPool2d) is not the engine's integer pool: refused, naming the pool."""
    p = B.train_and_export(tmp_path / "pool2.onnx", steps=1, n_fires=2)
    with pytest.raises(QI.ImportRefused, match="mean over 4 pixels is not rounded .*gap_pool") as e:
        QI.parse(p, "p")
    assert next(n.name for n in onnx.load(str(p)).graph.node if n.op_type in ("ReduceMean", "GlobalAveragePool",
                                                                               "AveragePool")) in str(e.value)


def _trunc(g):
    return _nodes(g, "Trunc")[0]


def trunc_ceil(g):
    t = _trunc(g)
    for at in t.attribute:
        if at.name == "rounding_mode":
            at.s = b"CEIL"
    return t.name


def trunc_rescales(g):
    t = _trunc(g)
    t.input[4] = _const(g, "out_scale_x2", 2.0 ** -14)
    return t.name


POOL_REFUSALS = {trunc_ceil: "rounding_mode CEIL of the global average pool over 16 pixels",
                 trunc_rescales: "rescales the pooled logits"}


@pytest.mark.parametrize("edit", list(POOL_REFUSALS), ids=[f.__name__ for f in POOL_REFUSALS])
def test_pool_refused_naming_node_and_mode(pooled, tmp_path, edit):
    holder = {}
    bad = _edit(pooled[0], tmp_path / "bad.onnx", lambda g: holder.update(node=edit(g)))
    with pytest.raises(QI.ImportRefused, match=POOL_REFUSALS[edit]) as e:
        QI.parse(bad, "bad")
    assert holder["node"] in str(e.value)


@pytest.mark.parametrize("qmode,rounding", [("FLOOR", "floor"), ("ROUND", "half_even"), ("HALF_UP", "half_away")])
def test_pool_modes_import_bit_exact(pooled, tmp_path, qmode, rounding):
    """The pool's Trunc in each QONNX mode the engine has (the 4x4 graph, its mode set to ``qmode``): imported
    with the engine's mode, the golden model equals the graph's execution on 256 frames, where the engine's
    default (ties toward +inf) would not."""
    from dataclasses import replace

    from zynqflow.model.net import ZynqNet, qnet_from_model
    from zynqflow.spec.golden import golden_logits

    def set_mode(g):
        for at in _trunc(g).attribute:
            if at.name == "rounding_mode":
                at.s = qmode.encode()
    p = _edit(pooled[0], tmp_path / f"{qmode}.onnx", set_mode)
    imp = QI.parse(p, "p")
    assert imp.cfg.gap_round == rounding
    qnet = qnet_from_model(ZynqNet.from_checkpoint(QI.to_checkpoint(imp, str(p))))
    f = B.frames(256)
    hwc = np.ascontiguousarray(f.transpose(0, 2, 3, 1))
    graph = QI.execute_exact(p, f)
    assert np.array_equal(golden_logits(qnet, hwc) * 2.0 ** -imp.output_frac, graph)
    other = replace(qnet, cfg=replace(qnet.cfg, gap_round="half_up"))
    assert not np.array_equal(golden_logits(other, hwc) * 2.0 ** -imp.output_frac, graph)


def test_bias_free_convs_import_with_zero_bias(good, tmp_path):
    """Convs without a bias input (what Brevitas exports for bias=False: Conv with two inputs) import with a zero
    bias, bit-exact against the graph (before: refused, 'Conv weights must be a Quant of a constant')."""
    def drop_biases(g):
        for conv in _nodes(g, "Conv")[:-1]:
            del conv.input[2:]
    p = _edit(good, tmp_path / "nobias.onnx", drop_biases)
    imp = QI.parse(p, "nb")
    assert all(not imp.biases[l.name].any() for l in imp.cfg.conv_layers[:-1])
    assert imp.biases[imp.cfg.conv_layers[-1].name].any()
    assert cli(["import", str(p), "--out", str(tmp_path / "out"), "--frames", "32"]) == 0
    assert json.loads((tmp_path / "out" / "import.json").read_text())["verification"]["bit_exact"]


def test_legacy_exporter_says_which_to_use(tmp_path):
    """Brevitas's TorchScript exporter (dynamo=False) fails on HALF_UP inside Brevitas: BQ.export_qonnx says to use
    dynamo=True."""
    with pytest.raises(RuntimeError, match="dynamo=True"):
        B.train_and_export(tmp_path / "legacy.onnx", steps=1, dynamo=False)
    assert not (tmp_path / "legacy.onnx").exists()


def test_without_the_extra_the_cli_says_what_to_install(monkeypatch, capsys):
    import builtins

    real = builtins.__import__

    def no_extra(name, *a, **k):
        if name.startswith("zynqflow.export.qonnx_import"):
            raise ImportError("No module named 'qonnx'")
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_extra)
    assert cli(["import", "x.onnx"]) == 2
    assert "zynqflow[import]" in capsys.readouterr().err
