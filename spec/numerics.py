"""The fixed-point contract of docs/fixed-point.md, in one place.

Every other stage (QAT fake quantization, the exact integer path in PyTorch,
the numpy golden model, the exporter's overflow proof, the hls4ml comparison)
calls these functions; the HLS and RTL engines implement the same formulas.
Values are held as Python ints, int64 numpy arrays or int64 torch tensors,
never floats: every function here takes either kind of array and returns the
same kind (torch is never imported by this module).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

ACC_BITS = 32
BIAS_BITS = 32
INPUT_FRAC = 8  # uint8 pixel p means p * 2^-8


@dataclass(frozen=True)
class QFormat:
    """A tensor format: ``bits`` wide, ``signed`` or not, value = int * 2^-frac."""

    bits: int
    signed: bool
    frac: int

    @property
    def lo(self) -> int:
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def hi(self) -> int:
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1

    @property
    def max_abs(self) -> int:
        return max(-self.lo, self.hi)

    @property
    def scale(self) -> float:
        return 2.0 ** -self.frac

    def to_dict(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_dict(d: dict) -> "QFormat":
        return QFormat(int(d["bits"]), bool(d["signed"]), int(d["frac"]))

    def __str__(self) -> str:
        return f"{'s' if self.signed else 'u'}{self.bits}.F{self.frac}"


INPUT_FORMAT = QFormat(8, False, INPUT_FRAC)


def frac_for_range(max_abs: float, bits: int, signed: bool) -> int:
    """The largest fractional length whose range still holds ``max_abs``.

    Power-of-two scaling: with F, the top representable magnitude is about
    2^(bits - signed - F). Zero or non-finite ranges get F = bits - signed.
    """
    mag_bits = bits - (1 if signed else 0)
    if not np.isfinite(max_abs) or max_abs <= 0:
        return mag_bits
    return mag_bits - int(math.ceil(math.log2(max_abs)))


# ---- integer operations (numpy int64 arrays or torch int64 tensors) --------
def _is_torch(x) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def _int(x):
    """torch tensors as they are; anything else as an int64 numpy array."""
    return x if _is_torch(x) else np.asarray(x, dtype=np.int64)


def round_shift(acc, s: int):
    """s > 0: (acc + 2^(s-1)) >> s, arithmetic (round half up); s <= 0: acc << -s."""
    acc = _int(acc)
    if s > 0:
        return (acc + (1 << (s - 1))) >> s
    return acc << (-s)


def saturate(x, fmt: QFormat):
    return _int(x).clip(fmt.lo, fmt.hi)


def requantize(acc, shift: int, relu: bool, out: QFormat):
    """Accumulator (at F_in + F_w) to the output format: shift, ReLU, saturate."""
    y = round_shift(acc, shift)
    if relu:
        y = y.clip(min=0)
    return saturate(y, out)


def pixels_shift(pixels: int) -> int:
    """k for a global average over 2^k pixels; a clear error for any other count."""
    k = int(pixels).bit_length() - 1
    if pixels < 1 or 1 << k != pixels:
        raise ValueError(f"global average pool over {pixels} pixels: not a power of two")
    return k


def round_shift_mode(acc, s: int, mode: str = "half_up"):
    """(acc + bias) >> s, an arithmetic shift whose rounding term ``bias`` is the mode's
    (spec.engine.GAP_ROUNDINGS; h = 2^(s-1), neg = acc's sign bit, odd = bit s of acc):
    ``half_up`` h (ties toward +inf, :func:`round_shift`), ``floor`` 0, ``half_even``
    h - 1 + odd, ``half_away`` h - neg. s <= 0: acc << -s (no rounding)."""
    acc = _int(acc)
    if s <= 0 or mode == "half_up":
        return round_shift(acc, s)
    half = 1 << (s - 1)
    if mode == "floor":
        bias = 0
    elif mode == "half_even":
        bias = half - 1 + ((acc >> s) & 1)
    elif mode == "half_away":
        bias = half - ((acc >> 63) & 1)      # int64: acc >> 63 is -1 for a negative value, else 0
    else:
        raise ValueError(f"unknown rounding mode {mode!r} (half_up, floor, half_even, half_away)")
    return (acc + bias) >> s


def gap_shift(total, pixels: int, mode: str = "half_up"):
    """Global average over 2^k pixels: (sum + bias) >> k with the rounding term of ``mode``
    (:func:`round_shift_mode`; the default, ``half_up``, adds 2^(k-1)), no division."""
    return round_shift_mode(total, pixels_shift(pixels), mode)


def quantize_real(x: np.ndarray, fmt: QFormat) -> np.ndarray:
    """Real values to integers of ``fmt``: round half up, saturate."""
    return np.clip(np.floor(np.asarray(x, dtype=np.float64) * 2.0 ** fmt.frac + 0.5),
                   fmt.lo, fmt.hi).astype(np.int64)


def acc_bound(k: int, cin: int, w_fmt: QFormat, x_fmt: QFormat, max_abs_bias: int) -> int:
    """Worst-case |accumulator| from bit widths and K*K*Cin (plus the bias)."""
    return k * k * cin * w_fmt.max_abs * x_fmt.max_abs + int(max_abs_bias)


def acc_fits(bound: int, bits: int = ACC_BITS) -> bool:
    return bound <= (1 << (bits - 1)) - 1
