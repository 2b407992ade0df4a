"""zynqflow import: a family network trained in Brevitas for a few steps, exported with
export_qonnx and imported; golden = the graph's own exact execution = C-sim = RTL on a
handful of frames; and one test per refusal (each names the node and the rule)."""

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
    return B.train_and_export(tmp_path_factory.mktemp("qonnx") / "net.onnx")


def test_import_is_bit_exact_through_the_flow(good, tmp_path):
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.core.onnx_exec import execute_onnx

    from zynqflow.bench.rtl_bench import measure
    from zynqflow.export.exporter import main as export_main
    from zynqflow.host.manifest import Export
    from zynqflow.sim.csim.runner import CSim
    from zynqflow.spec.golden import golden_logits

    out = tmp_path / "imported"
    assert cli(["import", str(good), "--name", "bnet", "--out", str(out), "--class-names", CLASSES]) == 0
    cfg = json.loads((out / "bnet.json").read_text())
    assert cfg["num_classes"] == 4 and cfg["class_names"] == CLASSES.split(",") and cfg["input_size"] == 16
    rep = json.loads((out / "import.json").read_text())
    assert rep["verification"]["bit_exact"] and all(r["rounding_rule"] for r in rep["layers"])
    assert [r["rounding"] for r in rep["layers"] if r["relu"]] == ["HALF_UP"] * 10
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
    m = ModelWrapper(str(good))                                # qonnx's own executor agrees (small sums here)
    for i in range(2):
        o = execute_onnx(m, {m.graph.input[0].name: (nchw[i:i + 1] / 256.0).astype(np.float32)})
        assert np.array_equal(next(iter(o.values())).reshape(-1).astype(np.float64), graph[i])
    assert np.array_equal(CSim(ex.dir).run(frames), gold)
    rtl = measure(ex.dir, frames=8)
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


def test_pool_over_more_than_one_pixel_is_refused(tmp_path):
    p = B.train_and_export(tmp_path / "pool2.onnx", steps=1, final_map_1x1=False)
    with pytest.raises(QI.ImportRefused, match="global average pool over 2x2 pixels .* 1x1 map"):
        QI.parse(p, "p")


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
