"""Small family networks written and trained in Brevitas for the import tests, with the
quantizers of zynqflow.export.brevitas_quant (and variants that the importer refuses)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn


def build(in_ch: int = 1, classes: int = 4, relu_quant=None, logit_frac: int | None = 15, final_map_1x1: bool = True,
          kernel: int = 3, pool: str = "mean", input_quant=None, weight_quant=None):
    """16x16 input -> c1 3x3 s2 (8) -> fire s2 (4) -> fire s2 (2) -> [fire s2 (1)] -> head 1x1 -> pool."""
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
            n_fires = 3 if final_map_1x1 else 2
            self.fires = nn.ModuleList([Fire(8 if i == 0 else 16, 8, 8, last=i == n_fires - 1)
                                        for i in range(n_fires)])
            out_q = BQ.logit_quant(logit_frac) if logit_frac is not None else BQ.logit_quant(4, 8)
            self.head = qnn.QuantConv2d(16, classes, 1, bias=True, weight_quant=BQ.const_weight_quant(7),
                                        bias_quant=BQ.BiasQuant, output_quant=out_q, return_quant_tensor=False)
            self.pool = nn.MaxPool2d(2) if pool == "max" else None

        def forward(self, x):
            x = self.r1(self.c1(self.inp(x)))
            for f in self.fires:
                x = f(x)
            x = self.head(x)
            if self.pool is not None:
                x = self.pool(x)
            return x.mean((2, 3))

    net = Net()
    with torch.no_grad():            # keep activations of order 1 through the layers (no BatchNorm here)
        for m in net.modules():
            if isinstance(m, qnn.QuantConv2d) and m is not net.head:
                m.weight.mul_(3.0)
    return net


def train_and_export(path: Path, steps: int = 4, seed: int = 0, dynamo: bool = True, **kw) -> Path:
    """A few SGD steps on random data, then ``export_qonnx``."""
    from brevitas.export import export_qonnx

    torch.manual_seed(seed)
    net = build(**kw)
    in_ch = kw.get("in_ch", 1)
    x = torch.rand(32, in_ch, 16, 16)
    y = torch.randint(0, kw.get("classes", 4), (32,))
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    net.train()
    for _ in range(steps):
        loss = nn.functional.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    net.eval()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        export_qonnx(net, torch.rand(1, in_ch, 16, 16), export_path=str(path), dynamo=dynamo)
    return path


def frames(n: int, in_ch: int = 1, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, in_ch, 16, 16), np.uint8)
