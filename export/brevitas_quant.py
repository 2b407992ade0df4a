"""Brevitas quantizers that train a network ``zynqflow import`` accepts bit-exactly
(docs/datasets-and-import.md, "Training in Brevitas"). Needs the ``import`` extra.

Why these and not Brevitas's defaults: the engine rounds ties toward +inf
(``floor(x + 0.5)``, docs/fixed-point.md) and its rounding is fixed. Brevitas
rounds half to even (``ROUND``) by default, which differs on every tie. So:

* :class:`InputQuant` -- the pixels: unsigned 8 bits at the constant scale 2^-8,
  zero point 0, exactly what the engine reads;
* :class:`WeightQuant` -- weights: signed 8 bits (narrow), one power-of-two scale
  per tensor (weights are constants: their rounding is the graph's own);
* :class:`BiasQuant` -- biases: 32 bits at the accumulator's scale (input x weight);
* :class:`ReLUQuant` -- every ReLU output: unsigned 8 bits, a power-of-two scale,
  rounding ``HALF_UP`` (ties away from zero), which on the non-negative values
  after a ReLU is exactly ties toward +inf; exported as ``rounding_mode="HALF_UP"``;
* :func:`const_relu_quant` / :func:`logit_quant` -- fixed scales for the tensor
  feeding the final conv and for the logits: the final conv's output quantizer
  must not round (its scale at most the accumulator's, 2^-(F_in + F_w)), because
  no rounding mode Brevitas or QONNX can express equals ties toward +inf on
  negative values;
* :func:`gap_pool` -- the global average pool: a ``TruncAvgPool2d`` over the whole
  final map whose shift rounds ``floor`` (the default), ``half_even`` or ``half_away``,
  the engine's pool modes (spec.engine.GAP_ROUNDINGS), keeping the logits' scale;
* :func:`export_qonnx` -- Brevitas's ``export_qonnx`` with the exporter that works
  (``dynamo=True``: the legacy TorchScript exporter cannot export ``HALF_UP``).
"""

from __future__ import annotations

import torch
from brevitas.core.scaling import ScalingImplType
from brevitas.function.ops_ste import floor_ste
from brevitas.quant import Int8WeightPerTensorFixedPoint, Int32Bias, Uint8ActPerTensorFixedPoint
from brevitas.quant.fixed_point import Int8ActPerTensorFixedPoint
from brevitas.quant.scaled_int import RoundTo8bit, TruncTo8bit


class RoundHalfUpSte(torch.nn.Module):
    """floor(x + 0.5) forward, identity gradient: ties toward +inf."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return floor_ste(x + 0.5)


class InputQuant(Uint8ActPerTensorFixedPoint):
    """The engine's input: uint8 pixels p at scale 2^-8 (x = p / 256), zero point 0."""

    scaling_impl_type = ScalingImplType.CONST
    scaling_init = 255.0 / 256.0          # threshold 255/256 -> scale 2^-8 for 8 unsigned bits


class WeightQuant(Int8WeightPerTensorFixedPoint):
    """Signed 8-bit weights, one power-of-two scale per tensor."""


class BiasQuant(Int32Bias):
    """32-bit biases at the accumulator's scale."""


class ReLUQuant(Uint8ActPerTensorFixedPoint):
    """A ReLU's output: unsigned 8 bits, learned power-of-two scale, ties rounded up."""

    float_to_int_impl = RoundHalfUpSte
    float_to_int_impl_type = "HALF_UP"


def const_relu_quant(frac: int, bits: int = 8):
    """A :class:`ReLUQuant` with the fixed scale 2^-frac (so the final conv's accumulator
    scale is known when the network is written)."""
    return type(f"ReLUQuantF{frac}", (ReLUQuant,), dict(
        scaling_impl_type=ScalingImplType.CONST, scaling_init=(2 ** bits - 1) * 2.0 ** -frac, bit_width=bits))


def const_weight_quant(frac: int):
    """:class:`WeightQuant` with the fixed scale 2^-frac."""
    return type(f"WeightQuantF{frac}", (WeightQuant,), dict(
        scaling_impl_type=ScalingImplType.CONST, scaling_init=127 * 2.0 ** -frac))


def logit_quant(frac: int, bits: int = 16):
    """The final conv's output: signed ``bits`` at the fixed scale 2^-frac. Choose
    ``frac`` >= F_in + F_w of the final conv, so it never rounds."""
    return type(f"LogitQuantF{frac}", (Int8ActPerTensorFixedPoint,), dict(
        scaling_impl_type=ScalingImplType.CONST, scaling_init=(2 ** (bits - 1) - 1) * 2.0 ** -frac,
        bit_width=bits))


class RoundHalfAwaySte(torch.nn.Module):
    """sign(x) * floor(|x| + 0.5) forward (ties away from zero: QONNX HALF_UP), identity gradient."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sign(x) * floor_ste(x.abs() + 0.5)


# the trunc quantizer of each pool rounding: (base class, attributes); exported as the Trunc's rounding_mode
_GAP_TRUNC = {
    "floor": (TruncTo8bit, {}),                                  # FLOOR
    "half_even": (RoundTo8bit, {}),                              # ROUND (torch.round: ties to even)
    "half_away": (RoundTo8bit, dict(float_to_int_impl=RoundHalfAwaySte, float_to_int_impl_type="HALF_UP")),
}


def gap_pool(size: int, bits: int = 16, rounding: str = "floor"):
    """The global average pool of a network ``zynqflow import`` accepts: ``TruncAvgPool2d`` over the
    whole ``size`` x ``size`` final map (a power of two: 2^k pixels), with a truncation to ``bits`` (the
    logits' width: the sum of 2^k logits has bits + k bits, so exactly k bits are shifted out and the
    logits keep their scale), rounding ``floor`` (an arithmetic shift: the cheapest), ``half_even``
    (Brevitas's default RoundTo8bit) or ``half_away``. Its input must be the final conv's QuantTensor
    (``return_quant_tensor=True``); otherwise Brevitas pools in float and the import refuses the
    unrounded mean. Returns a plain tensor N x C x 1 x 1 (flatten it)."""
    from brevitas.nn import TruncAvgPool2d

    if size < 1 or size & (size - 1):
        raise ValueError(f"gap_pool: a {size}x{size} map is not 2^k pixels (the engine's pool shifts)")
    if rounding not in _GAP_TRUNC:
        raise ValueError(f"gap_pool: rounding {rounding!r}: the engine's pool rounds {', '.join(_GAP_TRUNC)} "
                         "(or ties toward +inf, which no QONNX mode expresses)")
    base, extra = _GAP_TRUNC[rounding]
    tq = type(f"GapTrunc{bits}{rounding.title().replace('_', '')}", (base,), dict(extra, bit_width=bits))
    return TruncAvgPool2d(kernel_size=size, trunc_quant=tq, return_quant_tensor=False)


LEGACY_EXPORTER = ("Brevitas's legacy TorchScript exporter (export_qonnx(..., dynamo=False)) cannot export the "
                   "HALF_UP rounding of ReLUQuant (it fails inside Brevitas with 'HALF_UP not recognized'): export "
                   "with dynamo=True (torch.export; Brevitas 0.13 with torch >= 2.6), the default of "
                   "zynqflow.export.brevitas_quant.export_qonnx")


def export_qonnx(net: torch.nn.Module, example: torch.Tensor, path, dynamo: bool = True):
    """``brevitas.export.export_qonnx`` with the exporter that exports these quantizers (``dynamo=True``);
    the legacy one's failure on ``HALF_UP`` is raised as a RuntimeError that says which to use."""
    from brevitas.export import export_qonnx as brevitas_export

    try:
        return brevitas_export(net, example, export_path=str(path), dynamo=dynamo)
    except NotImplementedError as e:
        if "HALF_UP" in str(e):
            raise RuntimeError(LEGACY_EXPORTER) from e
        raise


class FamilyNet(torch.nn.Module):
    """A network of the family (a :class:`~zynqflow.spec.topology.NetConfig`, e.g.
    ``get_config("zynqnet-mini")``) written in Brevitas with the quantizers above, so that
    ``zynqflow import`` takes its QONNX export bit-exactly: :class:`InputQuant` first; every conv a
    ``QuantConv2d`` (:class:`WeightQuant`, :class:`BiasQuant`; no BatchNorm); every ReLU a
    :class:`ReLUQuant`, shared by the branches written into one tensor (one format); the tensor
    feeding the final convs at the fixed scale 2^-``final_in_frac``, the final convs' weights at
    2^-``final_w_frac`` and their output at 2^-(``final_in_frac`` + ``final_w_frac``) (no rounding);
    then :func:`gap_pool` with ``rounding``. ``forward`` takes images in [0, 1) (pixel / 256) and
    returns N x num_classes logits."""

    def __init__(self, cfg, rounding: str = "floor", final_in_frac: int = 8, final_w_frac: int = 7):
        import brevitas.nn as qnn

        super().__init__()
        self.cfg = cfg
        convs = cfg.conv_layers
        final = [l for l in convs if l.dst == cfg.output_tensor]
        feeds_final = {l.src for l in final}
        logit_q = logit_quant(final_in_frac + final_w_frac, cfg.out_bits)
        self.inp = qnn.QuantIdentity(act_quant=InputQuant, return_quant_tensor=True)
        self.convs = torch.nn.ModuleDict()
        self.relus = torch.nn.ModuleDict()
        first: dict[str, object] = {}
        for l in convs:
            key = l.name.replace("/", "_")
            if l in final:
                self.convs[key] = qnn.QuantConv2d(l.cin, l.cout, l.k, stride=l.stride, padding=l.pad, bias=True,
                                                  weight_quant=const_weight_quant(final_w_frac),
                                                  bias_quant=BiasQuant, output_quant=logit_q,
                                                  return_quant_tensor=True)
                continue
            self.convs[key] = qnn.QuantConv2d(l.cin, l.cout, l.k, stride=l.stride, padding=l.pad, bias=True,
                                              weight_quant=WeightQuant, bias_quant=BiasQuant, return_quant_tensor=True)
            if l.dst in first:          # a concatenated branch: the first writer's quantizer (one format)
                self.relus[key] = qnn.QuantReLU(act_quant=first[l.dst].act_quant, return_quant_tensor=True)
            else:
                q = const_relu_quant(final_in_frac) if l.dst in feeds_final else ReLUQuant
                self.relus[key] = first[l.dst] = qnn.QuantReLU(act_quant=q, return_quant_tensor=True)
        size = cfg.tensor_shapes()[cfg.output_tensor][0]
        self.pool = gap_pool(size, cfg.out_bits, rounding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from zynqflow.spec.topology import run_graph

        def apply(l, src):
            key = l.name.replace("/", "_")
            y = self.convs[key](src)
            return self.relus[key](y) if key in self.relus else y

        t = run_graph(self.cfg.conv_layers, self.inp(x), apply, lambda parts: torch.cat(parts, 1))
        return self.pool(t[self.cfg.output_tensor]).flatten(1)[:, :self.cfg.num_classes]
