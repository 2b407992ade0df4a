"""PyTorch model built from a NetConfig, with quantization-aware training
and the exact integer inference path.

Life cycle of a network (see docs/fixed-point.md):

1. ``float``: conv (no bias) -> BatchNorm -> ReLU; trained in float.
2. :meth:`ZynqNet.fold_bn`: BatchNorm folded into conv weight and bias.
3. :meth:`ZynqNet.calibrate`: one fixed-point format per tensor and per
   layer's weights is chosen from observed ranges, then frozen.
4. ``qat``: weights, biases and activations are fake-quantized with
   straight-through gradients; training continues.
5. :meth:`ZynqNet.integer_params` / :meth:`ZynqNet.integer_forward`: the
   integers and the exact integer path; the reference for every later stage.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from zynqflow.spec.numerics import BIAS_BITS, INPUT_FORMAT, QFormat, frac_for_range, gap_shift, requantize
from zynqflow.spec.qnet import QLayer, QNet
from zynqflow.spec.topology import INPUT, DesignRuleError, LayerSpec, NetConfig, check_rules, run_graph


def _key(name: str) -> str:
    return name.replace("/", "_")


def _round(x: torch.Tensor, mode: str) -> torch.Tensor:
    """x rounded to an integer by ``mode`` (spec.engine.GAP_ROUNDINGS; numerics.round_shift_mode on
    x = acc / 2^s): half_up floor(x + 0.5), floor, half_even (torch.round), half_away."""
    if mode == "half_up":
        return torch.floor(x + 0.5)
    if mode == "floor":
        return torch.floor(x)
    if mode == "half_even":
        return torch.round(x)
    if mode == "half_away":
        return torch.sign(x) * torch.floor(x.abs() + 0.5)
    raise ValueError(f"unknown rounding mode {mode!r}")


class _RoundSTE(torch.autograd.Function):
    """Rounding forward (floor(x + 0.5) by default), identity backward."""

    @staticmethod
    def forward(ctx, x, mode="half_up"):
        return _round(x, mode)

    @staticmethod
    def backward(ctx, g):
        return g, None


def fake_quant(x: torch.Tensor, fmt: QFormat, mode: str = "half_up") -> torch.Tensor:
    """Round to fmt (half up; the pooled logits by the network's ``gap_round``), saturate;
    straight-through inside the range."""
    s = 2.0 ** fmt.frac
    return torch.clamp(_RoundSTE.apply(x * s, mode), fmt.lo, fmt.hi) / s


class ConvUnit(nn.Module):
    def __init__(self, spec: LayerSpec):
        super().__init__()
        self.spec = spec
        self.conv = nn.Conv2d(spec.cin, spec.cout, spec.k, spec.stride, spec.pad, bias=False)
        self.bn: nn.BatchNorm2d | None = nn.BatchNorm2d(spec.cout)

    def fold(self) -> None:
        """Fold BatchNorm (running statistics) into conv weight and bias."""
        if self.bn is None:
            return
        bn, conv = self.bn, self.conv
        std = torch.sqrt(bn.running_var + bn.eps)
        gamma = bn.weight / std
        folded = nn.Conv2d(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride,
                           conv.padding, bias=True).to(device=conv.weight.device, dtype=conv.weight.dtype)
        with torch.no_grad():
            folded.weight.copy_(conv.weight * gamma.reshape(-1, 1, 1, 1))
            b = conv.bias if conv.bias is not None else torch.zeros_like(bn.running_mean)
            folded.bias.copy_((b - bn.running_mean) * gamma + bn.bias)
        self.conv, self.bn = folded, None


class ZynqNet(nn.Module):
    """A ZynqNet-style CNN; ``forward`` takes float images in [0, 1) (pixel / 256)."""

    def __init__(self, cfg: NetConfig):
        super().__init__()
        check_rules(cfg)
        self.cfg = cfg
        self.units = nn.ModuleDict({_key(l.name): ConvUnit(l) for l in cfg.conv_layers})
        self.mode = "float"  # or "qat"
        self.act_formats: dict[str, QFormat] = {}
        self.weight_fracs: dict[str, int] = {}
        self._observe: dict[str, float] | None = None

    # ---- formats -------------------------------------------------------
    @property
    def folded(self) -> bool:
        return all(u.bn is None for u in self.units.values())

    def tensor_format(self, tensor: str) -> QFormat:
        if tensor == INPUT:
            return INPUT_FORMAT
        return self.act_formats[tensor]

    def weight_format(self, layer: str) -> QFormat:
        return QFormat(self.cfg.weight_bits, True, self.weight_fracs[layer])

    def bias_format(self, layer: LayerSpec) -> QFormat:
        return QFormat(BIAS_BITS, True, self.tensor_format(layer.src).frac + self.weight_fracs[layer.name])

    def fold_bn(self) -> None:
        for u in self.units.values():
            u.fold()

    @torch.no_grad()
    def calibrate(self, batches, percentile: float = 99.99) -> None:
        """Choose and freeze every format from float activations on ``batches``
        (an iterable of image tensors). Folds BatchNorm first if needed.

        Activation ranges use a high percentile of |x| (robust to outliers;
        the rest saturates), concatenated branches share one format, and a
        layer's weight format covers its largest folded weight.
        """
        self.fold_bn()
        mode, self.mode = self.mode, "float"
        self._observe = {}
        self._percentile = percentile
        was_training = self.training
        self.eval()
        for x in batches:
            self(x.to(next(self.parameters()).device))
        self.train(was_training)
        ranges, self._observe = self._observe, None
        self.mode = mode
        relu_of = {l.dst: l.relu for l in self.cfg.conv_layers}
        out = self.cfg.output_tensor
        self.act_formats = {}
        for t, r in ranges.items():
            bits = self.cfg.out_bits if t == out else self.cfg.act_bits
            signed = not relu_of[t]
            self.act_formats[t] = QFormat(bits, signed, frac_for_range(r, bits, signed))
        self.weight_fracs = {}
        for l in self.cfg.conv_layers:
            w = self.units[_key(l.name)].conv.weight
            self.weight_fracs[l.name] = frac_for_range(float(w.abs().max()), self.cfg.weight_bits, True)

    def _record(self, tensor: str, y: torch.Tensor) -> None:
        percentile = getattr(self, "_percentile", 99.99)
        flat = y.detach().abs().flatten().float()
        if flat.numel() > 2_000_000:
            flat = flat[torch.randperm(flat.numel(), device=flat.device)[:2_000_000]]
        v = float(torch.quantile(flat, percentile / 100.0)) if flat.numel() > 1 else float(flat.max())
        self._observe[tensor] = max(self._observe.get(tensor, 0.0), v)

    def set_mode(self, mode: str) -> None:
        if mode not in ("float", "qat"):
            raise ValueError(f"unknown mode '{mode}'")
        if mode == "qat" and not self.act_formats:
            raise RuntimeError("calibrate() before switching to QAT")
        self.mode = mode

    # ---- forward -------------------------------------------------------
    def _qweights(self, l: LayerSpec, u: ConvUnit) -> tuple[torch.Tensor, torch.Tensor]:
        w = fake_quant(u.conv.weight, self.weight_format(l.name))
        b = fake_quant(u.conv.bias, self.bias_format(l))
        return w, b

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Float (or fake-quantized, in QAT mode) logits, N x num_classes."""
        q = self.mode == "qat"
        if q:
            x = fake_quant(x, INPUT_FORMAT)

        def apply(l: LayerSpec, src: torch.Tensor) -> torch.Tensor:
            u = self.units[_key(l.name)]
            if q:
                w, b = self._qweights(l, u)
                # fake_quant saturates at 0 for unsigned formats: equals ReLU then saturate
                return fake_quant(F.conv2d(src, w, b, l.stride, l.pad), self.act_formats[l.dst])
            y = u.conv(src)
            if u.bn is not None:
                y = u.bn(y)
            return F.relu(y) if l.relu else y

        record = self._record if self._observe is not None else None
        tensors = run_graph(self.cfg.conv_layers, x, apply, lambda parts: torch.cat(parts, 1), record)
        y = tensors[self.cfg.output_tensor].mean(dim=(2, 3))
        if q:
            y = fake_quant(y, self.act_formats[self.cfg.output_tensor], self.cfg.gap_round)
        return y[:, : self.cfg.num_classes]

    # ---- integers ------------------------------------------------------
    @torch.no_grad()
    def integer_params(self) -> dict[str, dict]:
        """Per conv layer: ``w`` int64 [cout, cin, k, k], ``b`` int64 [cout],
        ``w_frac``, ``shift`` (F_in + F_w - F_out) and the formats."""
        if not self.act_formats or not self.folded:
            raise RuntimeError("network is not calibrated (fold_bn + calibrate first)")
        out = {}
        for l in self.cfg.conv_layers:
            u = self.units[_key(l.name)]
            wf, bf = self.weight_format(l.name), self.bias_format(l)
            w = torch.clamp(torch.floor(u.conv.weight.double() * 2.0 ** wf.frac + 0.5), wf.lo, wf.hi)
            b = torch.floor(u.conv.bias.double() * 2.0 ** bf.frac + 0.5)
            if b.abs().max() > bf.hi:
                raise DesignRuleError(l.name, f"bias does not fit int{BIAS_BITS} at F={bf.frac}")
            fin, fout = self.tensor_format(l.src), self.act_formats[l.dst]
            out[l.name] = dict(w=w.cpu().to(torch.int64), b=b.cpu().to(torch.int64), w_frac=wf.frac,
                               in_format=fin, out_format=fout,
                               shift=fin.frac + wf.frac - fout.frac, relu=l.relu)
        return out

    @torch.no_grad()
    def integer_forward(self, frames: torch.Tensor, params: dict | None = None) -> torch.Tensor:
        """Exact integer path. ``frames``: uint8, N x C x H x W. Returns int64
        logits N x num_classes at the output format (see ``output_format``).

        Convolutions run in float64 on integer values: every product and
        partial sum is an integer below 2^53, so they are exact."""
        if frames.dtype != torch.uint8:
            raise TypeError("integer_forward takes uint8 frames")
        params = params or self.integer_params()

        def apply(l: LayerSpec, src: torch.Tensor) -> torch.Tensor:
            p = params[l.name]
            acc = F.conv2d(src.double(), p["w"].double(), None, l.stride, l.pad)
            acc = acc.round().to(torch.int64) + p["b"].reshape(1, -1, 1, 1)
            return requantize(acc, p["shift"], l.relu, p["out_format"])

        tensors = run_graph(self.cfg.conv_layers, frames.to(torch.int64), apply, lambda parts: torch.cat(parts, 1))
        out = tensors[self.cfg.output_tensor]
        logits = gap_shift(out.sum(dim=(2, 3)), out.shape[2] * out.shape[3], self.cfg.gap_round)
        return logits[:, : self.cfg.num_classes]

    @property
    def output_format(self) -> QFormat:
        return self.act_formats[self.cfg.output_tensor]

    # ---- checkpoints ---------------------------------------------------
    def checkpoint_state(self) -> dict:
        return dict(config=self.cfg.to_dict(), state_dict=self.state_dict(), folded=self.folded,
                    mode=self.mode,
                    act_formats={t: f.to_dict() for t, f in self.act_formats.items()},
                    weight_fracs=dict(self.weight_fracs))

    @staticmethod
    def from_checkpoint(ck: dict) -> "ZynqNet":
        cfg = NetConfig.from_dict(ck["config"])
        net = ZynqNet(cfg)
        if ck.get("folded"):
            net.fold_bn()
        sd = ck["state_dict"]
        for l in cfg.conv_layers:
            wkey = f"units.{_key(l.name)}.conv.weight"
            if wkey not in sd:
                raise DesignRuleError(l.name, "checkpoint has no weights for this layer")
            shape = tuple(sd[wkey].shape)
            if shape != (l.cout, l.cin, l.k, l.k):
                raise DesignRuleError(l.name, f"checkpoint weight shape {shape} does not match the "
                                              f"topology ({l.cout}, {l.cin}, {l.k}, {l.k})")
        net.load_state_dict(sd)
        net.act_formats = {t: QFormat.from_dict(f) for t, f in ck.get("act_formats", {}).items()}
        net.weight_fracs = {k: int(v) for k, v in ck.get("weight_fracs", {}).items()}
        net.mode = ck.get("mode", "float")
        return net



def qnet_from_model(net: ZynqNet, dataset: str = "", class_names: tuple[str, ...] | None = None) -> QNet:
    """The integers of a calibrated :class:`ZynqNet`."""
    params = net.integer_params()
    cfg: NetConfig = net.cfg
    shapes = cfg.tensor_shapes()
    layers = []
    for spec in cfg.conv_layers:
        p = params[spec.name]
        layers.append(QLayer.from_spec(spec, cfg, p["w"].numpy().transpose(0, 2, 3, 1), p["b"].numpy(),
                                       p["w_frac"], p["shift"], p["in_format"], p["out_format"], shapes))
    names = class_names if class_names is not None else cfg.class_names
    return QNet(cfg, layers, net.output_format, dataset, tuple(names))
