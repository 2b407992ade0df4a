"""The numpy golden model: docs/fixed-point.md applied to exported integers.

It takes a :class:`~zynqflow.spec.qnet.QNet` (the integers the exporter writes) and uint8 HWC
frames, and returns integer logits. It is vectorized over the batch: each
convolution is one im2col matrix product done in float32 on integer values where
no partial sum can reach 2^24, else in float64 (below 2^53), so the result is exact
(:func:`conv_acc`), and then the contract's integer requantization.
"""

from __future__ import annotations

import numpy as np

from .numerics import gap_shift, requantize
from .qnet import QLayer, QNet
from .topology import run_graph


# ---- the model ------------------------------------------------------------
def im2col(x: np.ndarray, k: int, stride: int) -> np.ndarray:
    """N x H x W x C -> N x Ho x Wo x (k*k*C), taps ordered (ky, kx, c), zero pad k//2."""
    n, h, w, c = x.shape
    p = k // 2
    if p:
        x = np.pad(x, ((0, 0), (p, p), (p, p), (0, 0)))
    ho, wo = (h + stride - 1) // stride, (w + stride - 1) // stride
    cols = [x[:, ky:ky + stride * ho:stride, kx:kx + stride * wo:stride, :]
            for ky in range(k) for kx in range(k)]
    return np.concatenate(cols, axis=3) if len(cols) > 1 else cols[0]


def conv_acc(x: np.ndarray, layer: QLayer) -> np.ndarray:
    """Exact int64 accumulators N x Ho x Wo x Cout (bias included).

    One im2col matrix product in floating point on integer values: float32 when no partial sum can
    reach 2^24 (the largest |x| times the largest sum of one output channel's |w| is below it, so
    every product and partial sum in any order is an integer float32 holds exactly), else float64
    (below 2^53 for every layer of the family)."""
    kk = layer.k * layer.k * x.shape[3]
    w = layer.w.reshape(layer.cout, kk).T
    bound = int(np.abs(x).max(initial=0)) * int(np.abs(w).sum(axis=0).max(initial=0))
    dt = np.float32 if bound < 1 << 24 else np.float64
    cols = im2col(x.astype(dt), layer.k, layer.stride)
    n, ho, wo, _ = cols.shape
    acc = cols.reshape(-1, kk) @ w.astype(dt)
    return acc.astype(np.int64).reshape(n, ho, wo, layer.cout) + layer.b


def check_frames(frames: np.ndarray, input_shape: tuple[int, int, int], who: str) -> np.ndarray:
    """uint8 frames N x H x W x C (one H x W x C becomes a batch of one);
    a clear error naming ``who`` for any other dtype or shape."""
    frames = np.asarray(frames)
    if frames.dtype != np.uint8:
        raise TypeError(f"frames must be uint8, got {frames.dtype}")
    if frames.ndim == 3:
        frames = frames[None]
    if frames.shape[1:] != tuple(input_shape):
        raise ValueError(f"frames are {frames.shape[1:]}, {who} takes {tuple(input_shape)} (HWC)")
    return frames


def golden_tensors(qnet: QNet, frames: np.ndarray) -> dict[str, np.ndarray]:
    """Every tensor (int64, N x H x W x C) of the network for uint8 HWC frames."""
    frames = check_frames(frames, qnet.input_shape, qnet.name)
    return run_graph(qnet.layers, frames.astype(np.int64),
                     lambda l, x: requantize(conv_acc(x, l), l.shift, l.relu, l.out_format),
                     lambda parts: np.concatenate(parts, axis=3))


def golden_logits(qnet: QNet, frames: np.ndarray, batch_size: int = 1000) -> np.ndarray:
    """int64 logits N x num_classes (output format ``qnet.output_format``)."""
    frames = np.asarray(frames)
    if frames.ndim == 3:
        frames = frames[None]
    out = []
    for i in range(0, len(frames), batch_size):
        t = golden_tensors(qnet, frames[i:i + batch_size])[qnet.cfg.output_tensor]
        n, h, w, c = t.shape
        out.append(gap_shift(t.sum(axis=(1, 2)), h * w, qnet.cfg.gap_round)[:, : qnet.num_classes])
    return np.concatenate(out) if out else np.zeros((0, qnet.num_classes), np.int64)
