"""Small family networks written and trained in Brevitas for the import tests, with the
quantizers of zynqflow.export.brevitas_quant (and variants that the importer refuses)."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn


def build(in_ch: int = 1, classes: int = 4, relu_quant=None, logit_frac: int | None = 15, n_fires: int = 3,
          kernel: int = 3, pool: str = "mean", input_quant=None, weight_quant=None):
    """16x16 input -> c1 3x3 s2 (8) -> ``n_fires`` fires s2 (3: 4, 2, 1) -> head 1x1 -> pool: ``mean`` (a float
    mean), ``max`` (a 2x2 max pool first), or a rounding of BQ.gap_pool (``floor``, ``half_even``, ``half_away``:
    TruncAvgPool2d over the final map)."""
    import brevitas.nn as qnn

    from zynqflow.export import brevitas_quant as BQ

    rq = relu_quant or BQ.ReLUQuant
    wq = weight_quant or BQ.WeightQuant

    def conv(cin, cout, k, s, q=None):
        return qnn.QuantConv2d(cin, cout, k, stride=s, padding=k // 2, bias=True, weight_quant=q or wq,
                               bias_quant=BQ.BiasQuant, return_quant_tensor=True)

    class Fire(nn.Module):
        def __init__(self, cin, sq, ex, last=False):
            super().__init__()
            self.s = conv(cin, sq, 3, 2)
            self.rs = qnn.QuantReLU(act_quant=rq, return_quant_tensor=True)
            self.e1 = conv(sq, ex, 1, 1)
            self.r1 = qnn.QuantReLU(act_quant=BQ.const_relu_quant(8) if last else rq, return_quant_tensor=True)
            self.e3 = conv(sq, ex, 3, 1)
            self.r3 = qnn.QuantReLU(act_quant=self.r1.act_quant, return_quant_tensor=True)

        def forward(self, x):
            x = self.rs(self.s(x))
            return torch.cat([self.r1(self.e1(x)), self.r3(self.e3(x))], 1)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = qnn.QuantIdentity(act_quant=input_quant or BQ.InputQuant, return_quant_tensor=True)
            self.c1 = conv(in_ch, 8, kernel, 2)
            self.r1 = qnn.QuantReLU(act_quant=rq, return_quant_tensor=True)
            self.fires = nn.ModuleList([Fire(8 if i == 0 else 16, 8, 8, last=i == n_fires - 1)
                                        for i in range(n_fires)])
            out_q = BQ.logit_quant(logit_frac) if logit_frac is not None else BQ.logit_quant(4, 8)
            trunc = pool not in ("mean", "max")
            self.head = qnn.QuantConv2d(16, classes, 1, bias=True, weight_quant=BQ.const_weight_quant(7),
                                        bias_quant=BQ.BiasQuant, output_quant=out_q, return_quant_tensor=trunc)
            self.pool = nn.MaxPool2d(2) if pool == "max" else BQ.gap_pool(16 >> (1 + n_fires), rounding=pool) \
                if trunc else None

        def forward(self, x):
            x = self.r1(self.c1(self.inp(x)))
            for f in self.fires:
                x = f(x)
            x = self.head(x)
            if isinstance(self.pool, nn.MaxPool2d):
                x = self.pool(x)
            elif self.pool is not None:
                return self.pool(x).flatten(1)
            return x.mean((2, 3))

    net = Net()
    with torch.no_grad():            # keep activations of order 1 through the layers (no BatchNorm here)
        for m in net.modules():
            if isinstance(m, qnn.QuantConv2d) and m is not net.head:
                m.weight.mul_(3.0)
    return net


def _train(net: nn.Module, x: torch.Tensor, y: torch.Tensor, steps: int) -> nn.Module:
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    net.train()
    for _ in range(steps):
        loss = nn.functional.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return net.eval()


def _export(net: nn.Module, example: torch.Tensor, path: Path, dynamo: bool = True) -> Path:
    from zynqflow.export.brevitas_quant import export_qonnx

    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        export_qonnx(net, example, path, dynamo=dynamo)
    return path


def train_and_export(path: Path, steps: int = 4, seed: int = 0, dynamo: bool = True, return_net: bool = False,
                     negate_even: bool = False, **kw):
    """A few SGD steps on random data, then ``export_qonnx`` (with ``return_net``: (path, the trained net)).
    ``negate_even``: the head's weights and bias of the even classes negated after training (exact: symmetric
    quantizers), so that the pool sums logits of both signs."""
    torch.manual_seed(seed)
    net = build(**kw)
    in_ch = kw.get("in_ch", 1)
    _train(net, torch.rand(32, in_ch, 16, 16), torch.randint(0, kw.get("classes", 4), (32,)), steps)
    if negate_even:
        with torch.no_grad():
            net.head.weight[::2].neg_()
            net.head.bias[::2].neg_()
    _export(net, torch.rand(1, in_ch, 16, 16), path, dynamo)
    return (path, net) if return_net else path


def zynqnet_mini(rounding: str = "floor", steps: int = 2, seed: int = 0) -> Path:
    """The preset zynqnet-mini (a 4x4 final map) written in Brevitas (zynqflow.export.brevitas_quant.FamilyNet,
    its pool BQ.gap_pool with ``rounding``), trained ``steps`` SGD steps on 32 frames of the synthetic set, exported
    with export_qonnx: cached under build/sim/brevitas/, keyed by the sources and versions that make it."""
    import hashlib

    import brevitas

    from zynqflow.export import brevitas_quant as BQ
    from zynqflow.model.data import synthetic
    from zynqflow.spec.paths import BUILD
    from zynqflow.spec.topology import get_config

    key = hashlib.sha1(Path(BQ.__file__).read_bytes() + Path(__file__).read_bytes() + json.dumps(
        [rounding, steps, seed, brevitas.__version__, torch.__version__]).encode()).hexdigest()[:12]
    path = BUILD / "sim" / "brevitas" / f"zynqnet-mini-{rounding}-{key}.onnx"
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    cfg = get_config("zynqnet-mini")
    net = BQ.FamilyNet(cfg, rounding=rounding)
    with torch.no_grad():            # no BatchNorm: keep activations of order 1 through the layers
        for name, m in net.convs.items():
            if name != "c6":
                m.weight.mul_(3.0)
    data = synthetic(n_train=32, n_test=1, size=32)
    _train(net, torch.from_numpy(data.train.images).float() / 256, torch.from_numpy(data.train.labels), steps)
    import tempfile

    import onnx

    with tempfile.TemporaryDirectory(dir=path.parent) as d:   # the exporter may write external data beside it
        m = onnx.load(str(_export(net, torch.rand(1, 1, 32, 32), Path(d) / "net.onnx")))
        onnx.save(m, str(Path(d) / "one.onnx"))                 # one self-contained file, renamed into place
        os.replace(Path(d) / "one.onnx", path)
    return path


def frames(n: int, in_ch: int = 1, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, in_ch, 16, 16), np.uint8)
