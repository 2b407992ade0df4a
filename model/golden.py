"""The numpy golden model: docs/fixed-point.md applied to exported integers.

It takes a :class:`QNet` (the integers the exporter writes) and uint8 HWC
frames, and returns integer logits. It is vectorized over the batch: each
convolution is one im2col matrix product done in float64 on integer values
(every product and sum stays below 2^53, so the result is exact) and then the
contract's integer requantization.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .config import INPUT, NetConfig
from .numerics import INPUT_FORMAT, QFormat, gap_shift, requantize


@dataclass
class QLayer:
    """One convolution in integers. ``w`` is int64 ``[cout, k, k, cin]``
    (OHWI, the hardware order), ``b`` int64 ``[cout]`` at F_in + F_w."""

    name: str
    src: str
    dst: str
    cin: int
    cout: int
    k: int
    stride: int
    relu: bool
    in_size: int
    out_size: int
    dst_offset: int
    dst_channels: int
    w: np.ndarray
    b: np.ndarray
    w_frac: int
    shift: int
    in_format: QFormat
    out_format: QFormat

    @property
    def pad(self) -> int:
        return self.k // 2

    w_bits: int = 8

    @property
    def w_format(self) -> QFormat:
        return QFormat(self.w_bits, True, self.w_frac)


@dataclass
class QNet:
    """A quantized network: topology plus every integer and format."""

    cfg: NetConfig
    layers: list[QLayer]
    output_format: QFormat
    dataset: str = ""
    class_names: tuple[str, ...] = ()
    input_format: QFormat = INPUT_FORMAT

    @property
    def name(self) -> str:
        return self.cfg.name

    @property
    def num_classes(self) -> int:
        return self.cfg.num_classes

    @property
    def input_shape(self) -> tuple[int, int, int]:
        """H, W, C of one frame (HWC, uint8)."""
        return (self.cfg.input_size, self.cfg.input_size, self.cfg.in_channels)

    def network_id(self) -> int:
        """32-bit ID: CRC-32 of the topology and every integer."""
        topo = json.dumps(self.cfg.to_dict() | {"class_names": []}, sort_keys=True).encode()
        crc = zlib.crc32(topo)
        for l in self.layers:
            crc = zlib.crc32(json.dumps([l.name, l.w_frac, l.shift, l.in_format.to_dict(),
                                         l.out_format.to_dict()]).encode(), crc)
            crc = zlib.crc32(np.ascontiguousarray(l.w, dtype="<i8").tobytes(), crc)
            crc = zlib.crc32(np.ascontiguousarray(l.b, dtype="<i8").tobytes(), crc)
        crc = zlib.crc32(json.dumps(self.output_format.to_dict()).encode(), crc)
        return crc & 0xFFFFFFFF

    # ---- persistence (integers.npz beside the manifest) ----------------
    def save_npz(self, path: Path) -> None:
        arrays = {}
        for i, l in enumerate(self.layers):
            arrays[f"w{i}"] = l.w.astype(np.int32)
            arrays[f"b{i}"] = l.b.astype(np.int64)
        meta = dict(cfg=self.cfg.to_dict(), dataset=self.dataset, class_names=list(self.class_names),
                    output_format=self.output_format.to_dict(),
                    layers=[dict(name=l.name, w_frac=l.w_frac, shift=l.shift, w_bits=l.w_bits,
                                 in_format=l.in_format.to_dict(), out_format=l.out_format.to_dict())
                            for l in self.layers])
        np.savez(path, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)

    @staticmethod
    def load_npz(path: Path) -> "QNet":
        try:
            z = np.load(path)
            meta = json.loads(bytes(z["meta"]).decode())
            cfg = NetConfig.from_dict(meta["cfg"])
            shapes = cfg.tensor_shapes()
            layers = []
            for i, (spec, lm) in enumerate(zip(cfg.conv_layers, meta["layers"])):
                layers.append(QLayer(
                    name=spec.name, src=spec.src, dst=spec.dst, cin=spec.cin, cout=spec.cout, k=spec.k,
                    stride=spec.stride, relu=spec.relu, in_size=shapes[spec.src][0],
                    out_size=shapes[spec.dst][0], dst_offset=spec.dst_offset,
                    dst_channels=shapes[spec.dst][1], w=z[f"w{i}"].astype(np.int64),
                    b=z[f"b{i}"].astype(np.int64), w_frac=lm["w_frac"], shift=lm["shift"],
                    in_format=QFormat.from_dict(lm["in_format"]), out_format=QFormat.from_dict(lm["out_format"]),
                    w_bits=lm.get("w_bits", 8)))
        except (OSError, KeyError, ValueError) as e:
            raise ValueError(f"{path}: not a valid integers file ({e})") from e
        return QNet(cfg, layers, QFormat.from_dict(meta["output_format"]), meta.get("dataset", ""),
                    tuple(meta.get("class_names", ())))


def qnet_from_model(net, dataset: str = "", class_names: tuple[str, ...] | None = None) -> QNet:
    """The integers of a calibrated :class:`~zynqflow.model.net.ZynqNet`."""
    params = net.integer_params()
    cfg: NetConfig = net.cfg
    shapes = cfg.tensor_shapes()
    layers = []
    for spec in cfg.conv_layers:
        p = params[spec.name]
        layers.append(QLayer(
            name=spec.name, src=spec.src, dst=spec.dst, cin=spec.cin, cout=spec.cout, k=spec.k,
            stride=spec.stride, relu=spec.relu, in_size=shapes[spec.src][0], out_size=shapes[spec.dst][0],
            dst_offset=spec.dst_offset, dst_channels=shapes[spec.dst][1],
            w=p["w"].numpy().transpose(0, 2, 3, 1).astype(np.int64), b=p["b"].numpy().astype(np.int64),
            w_frac=p["w_frac"], shift=p["shift"], in_format=p["in_format"], out_format=p["out_format"],
            w_bits=cfg.weight_bits))
    names = class_names if class_names is not None else cfg.class_names
    return QNet(cfg, layers, net.output_format, dataset, tuple(names))


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
    """Exact int64 accumulators N x Ho x Wo x Cout (bias included)."""
    cols = im2col(x, layer.k, layer.stride)
    n, ho, wo, kk = cols.shape
    wmat = layer.w.reshape(layer.cout, kk).T.astype(np.float64)
    acc = cols.reshape(-1, kk).astype(np.float64) @ wmat
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
    tensors = {INPUT: frames.astype(np.int64)}
    pieces: dict[str, list[np.ndarray]] = {}
    for l in qnet.layers:
        if l.src not in tensors:
            tensors[l.src] = np.concatenate(pieces.pop(l.src), axis=3)
        acc = conv_acc(tensors[l.src], l)
        pieces.setdefault(l.dst, []).append(requantize(acc, l.shift, l.relu, l.out_format))
    for t, p in pieces.items():
        tensors[t] = np.concatenate(p, axis=3)
    return tensors


def golden_logits(qnet: QNet, frames: np.ndarray, batch_size: int = 1000) -> np.ndarray:
    """int64 logits N x num_classes (output format ``qnet.output_format``)."""
    frames = np.asarray(frames)
    if frames.ndim == 3:
        frames = frames[None]
    out = []
    for i in range(0, len(frames), batch_size):
        t = golden_tensors(qnet, frames[i:i + batch_size])[qnet.cfg.output_tensor]
        n, h, w, c = t.shape
        out.append(gap_shift(t.sum(axis=(1, 2)), h * w)[:, : qnet.num_classes])
    return np.concatenate(out) if out else np.zeros((0, qnet.num_classes), np.int64)
