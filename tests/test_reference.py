"""The committed reference checkpoint (zynqnet-mini on Fashion-MNIST): its
metrics, and bit-exactness of PyTorch integer path, golden model and HLS C-sim
on real test images."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from zynqflow.model.data import load_dataset
from zynqflow.export.exporter import export, load_checkpoint_qnet
from zynqflow.spec.golden import golden_logits
from zynqflow.model.net import ZynqNet

REF = Path(__file__).resolve().parents[1] / "model/reference/zynqnet-mini/fashion-mnist"


@pytest.fixture(scope="module")
def ref():
    ck = torch.load(REF / "checkpoint.pt", map_location="cpu", weights_only=False)
    ds = load_dataset("fashion-mnist", None, size=32)
    return ck, ds, load_checkpoint_qnet(REF / "checkpoint.pt")


def test_reference_metrics_meet_the_bar():
    m = json.loads((REF / "metrics.json").read_text())
    assert m["net"] == "zynqnet-mini" and m["dataset"] == "fashion-mnist"
    assert m["test_images"] == 10000
    assert m["fixed_top1"] >= 0.930
    assert m["float_top1"] - m["fixed_top1"] <= 0.005
    assert m["params"] <= 256_000


def test_reference_fixed_top1_reproduces(ref):
    """fixed_top1 in metrics.json is the golden model's accuracy on all 10 000 test images."""
    _, ds, q = ref
    m = json.loads((REF / "metrics.json").read_text())
    logits = golden_logits(q, ds.test.hwc())
    assert float((logits.argmax(1) == ds.test.labels).mean()) == pytest.approx(m["fixed_top1"], abs=1e-9)


def test_reference_golden_equals_torch_integer_path(ref):
    ck, ds, q = ref
    net = ZynqNet.from_checkpoint(ck)
    frames = ds.test.images[:1000]
    torch_logits = net.integer_forward(torch.from_numpy(frames)).numpy()
    np.testing.assert_array_equal(golden_logits(q, ds.test.hwc()[:1000]), torch_logits)


def test_reference_csim_equals_golden(ref, tmp_path_factory):
    from zynqflow.sim.csim.runner import CSim
    _, ds, q = ref
    out = tmp_path_factory.mktemp("ref") / "export"
    export(q, out, ds.test.hwc()[:8])
    frames = ds.test.hwc()[:256]
    gold = golden_logits(q, frames)
    cs = CSim(out).run(frames)
    np.testing.assert_array_equal(cs, gold)
    assert float((cs.argmax(1) == ds.test.labels[:256]).mean()) > 0.85
