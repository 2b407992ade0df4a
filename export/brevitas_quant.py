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
  negative values.
"""

from __future__ import annotations

import torch
from brevitas.core.scaling import ScalingImplType
from brevitas.function.ops_ste import floor_ste
from brevitas.quant import Int8WeightPerTensorFixedPoint, Int32Bias, Uint8ActPerTensorFixedPoint
from brevitas.quant.fixed_point import Int8ActPerTensorFixedPoint


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
