"""A quantized network in integers: what the exporter reads and every
hardware model computes with (torch-free).

:class:`QNet` is a :class:`~zynqflow.spec.topology.NetConfig` plus, per conv
layer, a :class:`QLayer` holding its integer weights (OHWI, the hardware
order), int32-range biases, the requantization shift and the formats of
docs/fixed-point.md. It is saved as ``integers.npz`` beside the export
manifest and identified by a 32-bit network ID (CRC-32 of the topology and
every integer), which the hardware reports in its ``net_id`` register.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .numerics import INPUT_FORMAT, QFormat
from .topology import LayerSpec, NetConfig


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
    w_bits: int = 8

    @property
    def pad(self) -> int:
        return self.k // 2

    @property
    def w_format(self) -> QFormat:
        return QFormat(self.w_bits, True, self.w_frac)

    @staticmethod
    def from_spec(spec: LayerSpec, cfg: NetConfig, w, b, w_frac: int, shift: int, in_format: QFormat,
                  out_format: QFormat, shapes: dict | None = None) -> "QLayer":
        """The one constructor: geometry from the topology, integers and formats given.
        ``w`` OHWI, ``b`` per output channel (any integer array type)."""
        shapes = shapes or cfg.tensor_shapes()
        return QLayer(
            name=spec.name, src=spec.src, dst=spec.dst, cin=spec.cin, cout=spec.cout, k=spec.k,
            stride=spec.stride, relu=spec.relu, in_size=shapes[spec.src][0], out_size=shapes[spec.dst][0],
            dst_offset=spec.dst_offset, dst_channels=shapes[spec.dst][1],
            w=np.asarray(w, dtype=np.int64), b=np.asarray(b, dtype=np.int64), w_frac=int(w_frac),
            shift=int(shift), in_format=in_format, out_format=out_format, w_bits=cfg.weight_bits)


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
            if len(meta["layers"]) != len(cfg.conv_layers):
                raise ValueError(f"{len(meta['layers'])} integer layers for {len(cfg.conv_layers)} conv layers")
            layers = [QLayer.from_spec(spec, cfg, z[f"w{i}"], z[f"b{i}"], lm["w_frac"], lm["shift"],
                                       QFormat.from_dict(lm["in_format"]), QFormat.from_dict(lm["out_format"]),
                                       shapes)
                      for i, (spec, lm) in enumerate(zip(cfg.conv_layers, meta["layers"]))]
        except (OSError, KeyError, ValueError, TypeError) as e:
            raise ValueError(f"{path}: not a valid integers file ({e})") from e
        return QNet(cfg, layers, QFormat.from_dict(meta["output_format"]), meta.get("dataset", ""),
                    tuple(meta.get("class_names", ())))
