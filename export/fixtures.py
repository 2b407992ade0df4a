"""Export directories for tests and benches: random-weight networks and the
reference checkpoint, made once and cached under ``build/sim/exports/``.

A random export is a calibrated random-weight network (the formats come from
calibration on random frames, so requantization, saturation and signed tensors
all occur) with random test frames; :func:`variant_config` adds small networks
that reach the corners of the engine the presets do not."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from zynqflow.spec.paths import REPO, file_lock

from .plan import EngineParams

EXPORT_ROOT = REPO / "build" / "sim" / "exports"
REFERENCE_CKPT = REPO / "model" / "reference" / "zynqnet-mini" / "fashion-mnist" / "checkpoint.pt"
FORMAT = 11  # bump to invalidate cached exports (9: the RTL's 5-stage requantizer, issue 24; 10: GAP rounding modes, issue 26; 11: LUT lanes and two activation paths, issue 27)


def _fresh(out: Path, stamp: dict) -> bool:
    f = out / "rtl_export.json"
    return (out / "manifest.json").exists() and f.exists() and json.loads(f.read_text()) == stamp


def _lock(out: Path):
    """One process makes a cached export at a time (test workers, benches); the others wait, then
    find it fresh."""
    return file_lock(out.parent / f".{out.name}.lock")


def random_qnet(cfg, seed: int, vectors: int = 16):
    """A calibrated random-weight QNet of ``cfg`` (torch's default initialisation, seeded; the
    activation formats from calibration on 16 or more random frames) and ``vectors`` of those
    random frames (HWC uint8)."""
    import torch

    from zynqflow.model.net import ZynqNet, qnet_from_model

    torch.manual_seed(seed)
    net = ZynqNet(cfg)
    x = torch.randint(0, 256, (max(16, vectors), cfg.in_channels, cfg.input_size, cfg.input_size), dtype=torch.uint8)
    with torch.no_grad():
        net.calibrate([x[i:i + 16].float() / 256 for i in range(0, len(x), 16)])
    return qnet_from_model(net), x.numpy().transpose(0, 2, 3, 1)[:vectors]


def _export_random(cfg, out: Path, seed: int, vectors: int, engine: EngineParams, stamp: dict) -> Path:
    from .exporter import export

    qnet, frames = random_qnet(cfg, seed, vectors)
    export(qnet, out, frames, engine, weights_source=f"random:{seed}")
    (out / "rtl_export.json").write_text(json.dumps(stamp))
    return out


def random_export(name: str, seed: int = 0, vectors: int = 16, n_pe: int = 16, n_ci: int = 8,
                  input_size: int | None = None, act_kb: int | None = None, wcache_kb: int | None = None,
                  dsp_pairs: int | None = None, act_paths: int | None = None) -> Path:
    """A calibrated random-weight ``name`` network (at ``input_size`` if given), exported for an
    engine of ``n_pe`` x ``n_ci`` (with an on-chip activation budget of ``act_kb`` KiB: small
    budgets put tensors in DDR; ``dsp_pairs`` lane pairs on DSP48E1, ``act_paths`` activation
    paths: EngineParams' defaults when None), with ``vectors`` random test frames."""
    d = EngineParams()
    engine = EngineParams(n_pe, n_ci, act_kb=act_kb or d.act_kb, wcache_kb=d.wcache_kb if wcache_kb is None
                          else wcache_kb, dsp_pairs=dsp_pairs, act_paths=act_paths or d.act_paths)
    tag = f"{name}{'-' + str(input_size) if input_size else ''}-random{seed}-pe{n_pe}ci{n_ci}"
    tag += (f"-act{act_kb}" if act_kb else "") + (f"-wc{wcache_kb}" if wcache_kb is not None else "")
    tag += (f"-dsp{dsp_pairs}" if dsp_pairs is not None else "") + (f"-p{act_paths}" if act_paths else "")
    tag += f"-v{vectors}" if vectors != 16 else ""      # (the count changes the files: its own directory)
    out = EXPORT_ROOT / tag
    stamp = dict(kind="random", name=name, seed=seed, vectors=vectors, engine=asdict(engine), input_size=input_size,
                 format=FORMAT)
    if _fresh(out, stamp):
        return out
    from zynqflow.spec.topology import get_config
    with _lock(out):
        if _fresh(out, stamp):
            return out
        return _export_random(get_config(name, input_size=input_size), out, seed, vectors, engine, stamp)


def variant_config(which: str):
    """Small networks that reach the corners the presets do not.

    ``rgb``: 3-channel input (im2col of 27 channels = 7 words at N_CI=4, four banks),
    a signed (no ReLU) intermediate tensor of 10 channels (partial words), a
    concatenation at word offset 2, stride-2 3x3 layers down to 1x1 (GAP shift 0),
    a head of two parts of 16 channels (10 classes). Engine N_PE=16, N_CI=4.
    ``wide``: 12-channel input (no im2col: 2 words per pixel, 4 padded channels,
    a 3x3 stem reading the ring of input rows with zero padding), a signed
    tensor, two output groups with 10 channels, a 4x4 final map pooled with ties to
    even (``gap_round`` half_even, the rounding of Brevitas's TruncAvgPool2d default).
    Engine N_PE=8, N_CI=8 (one bank).
    ``map1x1``: a fire net whose last layers run on a 1x1 map (16 -> 8 -> 4 -> 2 -> 1):
    ``f4/e1`` is one MAC step, issued alone after the layer's set-up (the busy hole of issue 16).
    ``memory``: every way the engine uses DDR, small (8 k cycles a frame) for the memory tests
    of issue 16. Engine 16 x 16, 8 KiB of activation RAM, weights streamed: c1 (stem) and t2 in
    DDR; s2 in bands from DDR; e2 a 1x1 layer of one input chunk (one MAC step per pixel) that
    writes DDR at twice a port's rate; d3 and d3b 1x1 stride-2 layers reading t2 from DDR (they
    leave its odd rows unread) back to back; e8 and e9 one MAC step each on a 1x1 map.
    """
    from zynqflow.spec.topology import INPUT, LayerSpec as L, NetConfig

    if which == "rgb":
        return NetConfig(name="rtl-variant-rgb", input_size=16, in_channels=3, num_classes=10, layers=(
            L("c1", INPUT, "c1", 3, 16, k=3, stride=2),
            L("s2", "c1", "s2", 16, 10, k=1, relu=False),
            L("e1", "s2", "t3", 10, 8, k=1),
            L("e3", "s2", "t3", 10, 12, k=3, dst_offset=8),
            L("d4", "t3", "d4", 20, 24, k=3, stride=2),
            L("d5", "d4", "d5", 24, 16, k=3, stride=2),
            L("d6", "d5", "d6", 16, 32, k=3, stride=2),
            L("p1", "d6", "out", 32, 16, k=1, relu=False),
            L("p2", "d6", "out", 32, 16, k=1, relu=False, dst_offset=16),
        )), EngineParams(16, 4)
    if which == "wide":
        return NetConfig(name="rtl-variant-wide", input_size=8, in_channels=12, num_classes=10, layers=(
            L("c1", INPUT, "c1", 12, 16, k=3, stride=1),
            L("c2", "c1", "c2", 16, 8, k=3, stride=2, relu=False),
            L("c3", "c2", "out", 8, 10, k=1, relu=False),
        ), gap_round="half_even"), EngineParams(8, 8)
    if which == "memory":
        return NetConfig(name="rtl-variant-memory", input_size=32, in_channels=1, num_classes=10, layers=(
            L("c1", INPUT, "c1", 1, 32, k=3, stride=2),
            L("s2", "c1", "s2", 32, 16, k=1),
            L("e2", "s2", "t2", 16, 32, k=1),
            L("d3", "t2", "t3", 32, 32, k=1, stride=2),
            L("d3b", "t2", "t3", 32, 32, k=1, stride=2, dst_offset=32),
            L("c4", "t3", "c4", 64, 16, k=3),
            L("c5", "c4", "c5", 16, 16, k=3, stride=2),
            L("c6", "c5", "c6", 16, 16, k=3, stride=2),
            L("c7", "c6", "c7", 16, 16, k=3, stride=2),
            L("e8", "c7", "e8", 16, 16, k=1),
            L("e9", "e8", "out", 16, 10, k=1, relu=False),
        )), EngineParams(16, 16, act_kb=8, wcache_kb=0)
    if which == "map1x1":
        from zynqflow.spec.topology import FireSpec, fire_net
        return fire_net("rtl-variant-map1x1", 16, 1, 4, stem=8, fires=[FireSpec(8, 8, 8, True)] * 3), EngineParams()
    raise ValueError(f"unknown variant {which!r}")


def variant_export(which: str, seed: int = 0, vectors: int = 8, engine: tuple[int, int] | None = None) -> Path:
    """A :func:`variant_config` network exported for its engine, or for ``engine`` = (n_pe, n_ci) with
    the variant's memory budgets."""
    cfg, params = variant_config(which)
    stamp = dict(kind="variant", which=which, seed=seed, vectors=vectors, format=FORMAT)
    if engine is not None:
        params = replace(params, n_pe=engine[0], n_ci=engine[1])
        stamp["engine"] = asdict(params)
    engine = params
    out = EXPORT_ROOT / f"{cfg.name}-random{seed}-pe{engine.n_pe}ci{engine.n_ci}"
    if _fresh(out, stamp):
        return out
    with _lock(out):
        if _fresh(out, stamp):
            return out
        return _export_random(cfg, out, seed, vectors, engine, stamp)


# The HLS engine's test networks (tests/test_hls_hazard.py, make bench's hls_exact part): a cached
# stem-fed build, zynqnet-mini (cached weights), ZynqNet 64x64 with DDR tensors and the weight ring,
# the rgb and wide variants, and zynqnet-mini on an 8x8 engine streaming 8-beat weight words.
HLS_TEST_NETS = {
    "tiny": lambda: random_export("zynqnet-tiny"),
    "mini": lambda: random_export("zynqnet-mini"),
    "zq64-ddr": lambda: random_export("zynqnet", input_size=64, n_pe=16, n_ci=16, act_kb=24),
    "rgb": lambda: variant_export("rgb"),
    "wide": lambda: variant_export("wide"),
    "mini-ring": lambda: random_export("zynqnet-mini", n_pe=8, n_ci=8, wcache_kb=0),
    # 32 x 16 with both activation paths (even/odd row fills, line-split writes) and 112 LUT lanes
    "zq64-32x16": lambda: random_export("zynqnet", input_size=64, n_pe=32, n_ci=16, act_kb=32, dsp_pairs=200),
}


def checkpoint_export(ckpt: Path, frames: int = 8, data: str = "fashion-mnist",
                      engine: EngineParams = EngineParams()) -> tuple[Path, np.ndarray]:
    """Export a trained checkpoint with ``frames`` test-set frames; returns (dir, labels)."""
    from zynqflow.model.data import load_dataset

    from .exporter import export, load_checkpoint_qnet

    ckpt = Path(ckpt)
    out = EXPORT_ROOT / f"{ckpt.parent.parent.name}-{ckpt.parent.name}-ckpt-pe{engine.n_pe}ci{engine.n_ci}"
    st = ckpt.stat()
    stamp = dict(kind="checkpoint", ckpt=str(ckpt.resolve()), mtime=st.st_mtime_ns, size=st.st_size,
                 frames=frames, data=data, engine=asdict(engine), format=FORMAT)
    qnet = load_checkpoint_qnet(ckpt)
    test = load_dataset(data, None, qnet.cfg.input_size).test
    labels = test.labels[:frames]
    if not _fresh(out, stamp):
        with _lock(out):
            if not _fresh(out, stamp):
                export(qnet, out, test.hwc()[:frames], engine)
                (out / "rtl_export.json").write_text(json.dumps(stamp))
    return out, labels
