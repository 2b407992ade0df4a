"""Exporter: trained checkpoint -> fixed-point integers -> HLS headers, RTL
``.mem`` ROM images, a host manifest and C-sim test vectors.

    python -m zynqflow.export.exporter --ckpt build/zynqnet-mini/fashion-mnist/checkpoint.pt

Output directory (default ``build/<net>/export/``):

``net_params.h``      constants, layer table and ROMs for the HLS templates
``weights.mem``       one line per weight word (N_PE x N_CI lanes), ``$readmemh``
``biases.mem``        one line per bias word (N_PE lanes of 32 bits)
``layers.mem``        one line per hardware layer (see ``LAYER_FIELDS``)
``manifest.json``     what the host needs: name, network ID, formats, classes
``integers.npz``      every integer, for the golden model
``vectors_in.bin`` / ``vectors_out.bin``  N test frames (uint8 HWC) and
                      their expected logits (int32 little endian)

Nothing is written unless every check passes: the design rules, the
accumulator overflow proof, the bias range, and the engine's buffer and
channel-alignment constraints. Files are staged in a temporary directory and
moved into place at the end.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from zynqflow.spec.engine import LAYER_FIELDS, SIGNED_FIELDS  # noqa: F401
from zynqflow.spec.golden import golden_logits
from zynqflow.spec.numerics import ACC_BITS, acc_bound, acc_fits
from zynqflow.spec.qnet import QNet
from zynqflow.spec.recipes import default_recipe
from zynqflow.spec.topology import INPUT, DesignRuleError, check_rules

FORMAT_VERSION = 1
IM2COL_BUF = 0   # physical buffer holding the (im2col'ed) input frame
GAP_BUF = 15     # "destination" of the final conv: the global-average accumulators


class ExportError(ValueError):
    """The checkpoint cannot be exported; names the layer (or file) and why."""

    def __init__(self, where: str, reason: str):
        self.where, self.reason = where, reason
        super().__init__(f"{where}: {reason}")


@dataclass(frozen=True)
class EngineParams:
    """Build parameters of the engine the ROMs are laid out for."""

    n_pe: int = 16   # output channels computed in parallel
    n_ci: int = 8    # input channels (reduction lanes) per output channel

    def check(self) -> None:
        for v, n in ((self.n_pe, "n_pe"), (self.n_ci, "n_ci")):
            if v < 1 or v & (v - 1):
                raise ExportError("engine", f"{n}={v} must be a power of two")




@dataclass
class HwLayer:
    """One row of the engine's layer table."""

    name: str
    in_size: int
    out_size: int
    k: int
    stride: int
    ci_chunks: int
    co_groups: int
    cout: int
    relu: int
    shift: int
    src_buf: int
    dst_buf: int
    dst_word_off: int
    dst_words: int
    w_base: int
    b_base: int
    is_last: int
    out_lo: int
    out_hi: int

    def fields(self) -> list[int]:
        return [int(getattr(self, f)) for f in LAYER_FIELDS]

    def cycles(self) -> int:
        """MAC-array cycles: groups x output pixels x taps x channel chunks."""
        return self.co_groups * self.out_size ** 2 * self.k ** 2 * self.ci_chunks


@dataclass
class HwPlan:
    """Everything the engine needs: layer table, ROM images, buffer sizes."""

    engine: EngineParams
    layers: list[HwLayer]
    weights: np.ndarray      # int64 [W_WORDS, N_PE, N_CI]
    biases: np.ndarray       # int64 [B_WORDS, N_PE]
    buf_words: list[int]     # words (of N_CI channels) per physical buffer; [0] is the input
    im2col: bool             # the first layer reads an im2col'ed input frame
    im2col_channels: int     # channels per pixel of that frame (k*k*Cin, or Cin)
    in_words: int            # words per pixel of the input buffer
    gap_channels: int
    gap_shift: int

    @property
    def total_cycles(self) -> int:
        return sum(l.cycles() for l in self.layers)


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


# ---------------------------------------------------------------------------
def verify(qnet: QNet, engine: EngineParams) -> None:
    """Every check the exporter makes; raises :class:`ExportError`."""
    cfg = qnet.cfg
    try:
        check_rules(cfg)
    except DesignRuleError as e:
        raise ExportError(f"layer '{e.layer}'", e.rule) from e
    engine.check()
    shapes = cfg.tensor_shapes()
    if [l.name for l in qnet.layers] != [s.name for s in cfg.conv_layers]:
        raise ExportError(cfg.name, "integer layers do not match the topology's conv layers")
    for l, spec in zip(qnet.layers, cfg.conv_layers):
        where = f"layer '{l.name}'"
        mine = (l.src, l.dst, l.cin, l.cout, l.k, l.stride, l.relu, l.dst_offset, l.in_size, l.out_size)
        want = (spec.src, spec.dst, spec.cin, spec.cout, spec.k, spec.stride, spec.relu, spec.dst_offset,
                shapes[spec.src][0], shapes[spec.dst][0])
        if mine != want:
            raise ExportError(where, f"integer layer {mine} disagrees with the topology {want}")
        if l.w.shape != (l.cout, l.k, l.k, l.cin):
            raise ExportError(where, f"weights have shape {l.w.shape}, expected {(l.cout, l.k, l.k, l.cin)}")
        wf = l.w_format
        if l.w.size and (l.w.min() < wf.lo or l.w.max() > wf.hi):
            raise ExportError(where, f"weights outside signed {wf.bits}-bit range")
        if l.b.size and np.abs(l.b).max() > (1 << 31) - 1:
            raise ExportError(where, "bias does not fit int32")
        bound = acc_bound(l.k, l.cin, wf, l.in_format, int(np.abs(l.b).max()) if l.b.size else 0)
        if not acc_fits(bound):
            raise ExportError(where, f"accumulator may overflow: |acc| <= {l.k}x{l.k}x{l.cin} x {wf.max_abs} x "
                                     f"{l.in_format.max_abs} + |bias| = {bound} > 2^{ACC_BITS - 1}-1")
        if l.shift < 0 and not acc_fits(bound << -l.shift):
            raise ExportError(where, f"left shift by {-l.shift} may overflow the {ACC_BITS}-bit accumulator")
        if l.shift > 31:
            raise ExportError(where, f"requantization shift {l.shift} > 31")
        if l.out_format.bits > 16:
            raise ExportError(where, f"output format {l.out_format} wider than 16 bits")
    out_t = cfg.output_tensor
    writers = [l for l in qnet.layers if l.dst == out_t]
    if any(l.out_format != qnet.output_format for l in writers):
        raise ExportError(f"layer '{writers[0].name}'", "output layers disagree on the output format")
    for t in {l.dst for l in qnet.layers}:
        fmts = {l.out_format for l in qnet.layers if l.dst == t}
        if len(fmts) > 1:
            raise ExportError(f"tensor '{t}'", f"concatenated branches have different formats {sorted(map(str, fmts))}")


def plan_hardware(qnet: QNet, engine: EngineParams) -> HwPlan:
    """Lay the network out for the engine: im2col the stem, assign tensors to
    physical buffers, and build the weight and bias ROM images."""
    cfg, P, C = qnet.cfg, engine.n_pe, engine.n_ci
    layers = qnet.layers
    first = layers[0]
    # Stem: a k x k conv on an input of fewer than N_CI channels wastes lanes,
    # so the input loader writes the im2col of the frame (k*k*Cin channels per
    # output pixel) and the stem runs as a 1x1 stride-1 conv on it.
    im2col = first.src == INPUT and first.k > 1 and cfg.in_channels < C
    for l in layers:
        if l.src == INPUT and l is not first:
            raise ExportError(f"layer '{l.name}'", "only the first layer may read the input frame")
    # physical buffers: greedy interval colouring over tensor lifetimes
    order = [l.dst for l in layers]
    last_read = {}
    for i, l in enumerate(layers):
        last_read[l.src] = i
    first_write = {}
    for i, l in enumerate(layers):
        first_write.setdefault(l.dst, i)
    shapes = cfg.tensor_shapes()
    out_t = cfg.output_tensor
    buf_of: dict[str, int] = {INPUT: IM2COL_BUF}
    buf_free_after: dict[int, int] = {}
    buf_words: list[int] = [0]
    for t in dict.fromkeys(order):
        if t == out_t:
            buf_of[t] = GAP_BUF
            continue
        start = first_write[t]
        for b, free_at in sorted(buf_free_after.items()):
            if free_at < start:
                break
        else:
            b = len(buf_words)
            buf_words.append(0)
            if b >= GAP_BUF:
                raise ExportError(f"tensor '{t}'", f"needs more than {GAP_BUF - 1} activation buffers")
        buf_of[t] = b
        size, ch = shapes[t]
        buf_words[b] = max(buf_words[b], size * size * _ceil(ch, C))
        buf_free_after[b] = last_read.get(t, len(layers))
    in_size, in_ch = shapes[INPUT]
    if im2col:
        im_ch = first.k * first.k * in_ch
        in_words = _ceil(im_ch, C)
        buf_words[IM2COL_BUF] = first.out_size ** 2 * in_words
    else:
        im_ch = in_ch
        in_words = _ceil(in_ch, C)
        buf_words[IM2COL_BUF] = in_size * in_size * in_words

    hw, wwords, bwords = [], [], []
    for l in layers:
        where = f"layer '{l.name}'"
        is_last = l.dst == out_t
        if not is_last and (l.dst_offset % C or (l.dst_offset + l.cout < l.dst_channels and l.cout % C)):
            raise ExportError(where, f"concatenation offset {l.dst_offset} / width {l.cout} not a multiple of "
                                     f"N_CI={C}: the engine writes whole channel words")
        w = l.w
        k, stride, in_sz, cin = l.k, l.stride, l.in_size, l.cin
        if l is first and im2col:
            w = w.reshape(l.cout, 1, 1, l.k * l.k * l.cin)
            k, stride, in_sz, cin = 1, 1, l.out_size, l.k * l.k * l.cin
        groups, chunks = _ceil(l.cout, P), _ceil(cin, C)
        wp = np.zeros((groups * P, k, k, chunks * C), np.int64)
        wp[: l.cout, :, :, :cin] = w
        # word (g, t, c) = [pe][ci] = w[g*P + pe, ky, kx, c*C + ci]
        words = wp.reshape(groups, P, k * k, chunks, C).transpose(0, 2, 3, 1, 4).reshape(-1, P, C)
        bp = np.zeros(groups * P, np.int64)
        bp[: l.cout] = l.b
        w_base = sum(len(x) for x in wwords)
        b_base = sum(len(x) for x in bwords)
        wwords.append(words)
        bwords.append(bp.reshape(groups, P))
        hw.append(HwLayer(
            name=l.name, in_size=in_sz, out_size=l.out_size, k=k, stride=stride, ci_chunks=chunks,
            co_groups=groups, cout=l.cout, relu=int(l.relu), shift=l.shift,
            src_buf=buf_of[l.src], dst_buf=buf_of[l.dst], dst_word_off=0 if is_last else l.dst_offset // C,
            dst_words=_ceil(l.dst_channels, C), w_base=w_base, b_base=b_base, is_last=int(is_last),
            out_lo=l.out_format.lo, out_hi=l.out_format.hi))
        if is_last:
            hw[-1].dst_word_off = l.dst_offset  # channel offset into the GAP accumulators
    out_size, out_ch = shapes[out_t]
    return HwPlan(engine, hw, np.concatenate(wwords), np.concatenate(bwords), buf_words, im2col, im_ch,
                  in_words, out_ch, (out_size * out_size).bit_length() - 1)


# ---- writers ---------------------------------------------------------------
def _hex_word(values: np.ndarray, bits: int) -> str:
    """Pack lanes (lane 0 in the least significant bits) into one hex line."""
    mask = (1 << bits) - 1
    word = 0
    for i, v in enumerate(np.asarray(values).ravel().tolist()):
        word |= (int(v) & mask) << (i * bits)
    digits = _ceil(bits * np.asarray(values).size, 4)
    return f"{word:0{digits}x}"


def write_mem(plan: HwPlan, out: Path, w_bits: int) -> None:
    (out / "weights.mem").write_text("".join(_hex_word(wd, w_bits) + "\n" for wd in plan.weights))
    (out / "biases.mem").write_text("".join(_hex_word(bd, 32) + "\n" for bd in plan.biases))
    (out / "layers.mem").write_text("".join(_hex_word(np.array(l.fields()), 16) + "\n" for l in plan.layers))


def _c_array(name: str, ctype: str, arr: np.ndarray, per_line: int = 32) -> str:
    dims = "".join(f"[{d}]" for d in arr.shape)
    flat = arr.ravel().tolist()
    body = ",\n".join("  " + ", ".join(str(int(v)) for v in flat[i:i + per_line])
                      for i in range(0, len(flat), per_line))
    return f"static const {ctype} {name}{dims} = {{\n{body}\n}};\n"


def write_hls_header(qnet: QNet, plan: HwPlan, out: Path, net_id: int) -> None:
    cfg, e = qnet.cfg, plan.engine
    w_ctype = "signed char" if cfg.weight_bits <= 8 else "short"
    rows = ",\n".join("  {" + ", ".join(str(v) for v in l.fields()) + "}  /* " + l.name + " */"
                      for l in plan.layers)
    max_cycles_layer = max(l.cycles() for l in plan.layers)
    consts = dict(
        NET_ID=f"0x{net_id:08x}u", N_PE=e.n_pe, N_CI=e.n_ci, N_LAYERS=len(plan.layers),
        IN_SIZE=cfg.input_size, IN_CH=cfg.in_channels, IN_BYTES=cfg.input_size ** 2 * cfg.in_channels,
        IM2COL=int(plan.im2col), IM2COL_K=qnet.layers[0].k if plan.im2col else 1,
        IM2COL_STRIDE=qnet.layers[0].stride if plan.im2col else 1,
        IM2COL_OUT=qnet.layers[0].out_size if plan.im2col else cfg.input_size,
        IM2COL_CH=plan.im2col_channels, IN_WORDS=plan.in_words,
        N_CLASSES=cfg.num_classes, GAP_CH=plan.gap_channels, GAP_SHIFT=plan.gap_shift,
        OUT_BITS=qnet.output_format.bits, W_BITS=cfg.weight_bits, A_BITS=cfg.act_bits,
        W_WORDS=len(plan.weights), B_WORDS=len(plan.biases), N_BUFS=len(plan.buf_words),
        MAX_SIZE=max(max(l.in_size, l.out_size) for l in plan.layers),
        MAX_CYCLES_LAYER=max_cycles_layer, TOTAL_CYCLES=plan.total_cycles,
        MAX_GROUPS=max(l.co_groups for l in plan.layers), MAX_CHUNKS=max(l.ci_chunks for l in plan.layers),
    )
    lines = [
        "// Generated by zynqflow.export.exporter -- do not edit.",
        f"// Network {cfg.name} ({qnet.dataset}), ID 0x{net_id:08x}, engine N_PE={e.n_pe} N_CI={e.n_ci}.",
        "#ifndef ZQ_NET_PARAMS_H", "#define ZQ_NET_PARAMS_H", "", "namespace zq_net {", "",
    ]
    for k, v in consts.items():
        ty = "unsigned" if k == "NET_ID" else "int"
        lines.append(f"constexpr {ty} {k} = {v};")
    for i, w in enumerate(plan.buf_words):
        lines.append(f"constexpr int BUF{i}_WORDS = {max(w, 1)};")
    lines += ["", "// Layer table: one row per layer, fields as zq::LayerDesc (hls/engine.h).",
              f"// Fields: {', '.join(LAYER_FIELDS)}",
              f"constexpr int LAYERS[N_LAYERS][{len(LAYER_FIELDS)}] = {{", rows, "};", ""]
    lines.append(f"// Weight ROM: word (layer, group, tap, chunk) x [N_PE][N_CI], signed {cfg.weight_bits}-bit.")
    lines.append(_c_array("WEIGHTS", w_ctype, plan.weights))
    lines.append("// Bias ROM: word (layer, group) x [N_PE], int32 at F_in + F_w.")
    lines.append(_c_array("BIASES", "int", plan.biases))
    lines += ["} // namespace zq_net", "", "#endif"]
    (out / "net_params.h").write_text("\n".join(lines) + "\n")


def manifest(qnet: QNet, plan: HwPlan, net_id: int, n_vectors: int) -> dict:
    cfg = qnet.cfg
    h, w, c = qnet.input_shape
    return dict(
        format_version=FORMAT_VERSION, network=cfg.name, network_id=f"0x{net_id:08x}",
        network_id_int=net_id, dataset=qnet.dataset,
        input=dict(shape=[h, w, c], layout="HWC", channels=c, dtype="uint8",
                   format=qnet.input_format.to_dict(), color="gray" if c == 1 else "rgb",
                   bytes_per_frame=h * w * c, pixels_per_beat=4),
        output=dict(classes=cfg.num_classes, format=qnet.output_format.to_dict(),
                    dtype=f"int{qnet.output_format.bits}", values_per_beat=1),
        preprocess=default_recipe(qnet.dataset, (h, w, c)),
        class_names=list(qnet.class_names) or [f"class{i}" for i in range(cfg.num_classes)],
        engine=asdict(plan.engine),
        layers=[dict(name=l.name, src=l.src, dst=l.dst, k=l.k, stride=l.stride, cin=l.cin, cout=l.cout,
                     in_size=l.in_size, out_size=l.out_size, relu=l.relu, dst_offset=l.dst_offset,
                     in_format=l.in_format.to_dict(), weight_format=l.w_format.to_dict(),
                     bias_frac=l.in_format.frac + l.w_frac, shift=l.shift, out_format=l.out_format.to_dict(),
                     hw_cycles=hl.cycles())
                for l, hl in zip(qnet.layers, plan.layers)],
        cycles_mac_array=plan.total_cycles,
        buffers_words=plan.buf_words,
        test_vectors=n_vectors,
        files=dict(hls_header="net_params.h", weights_mem="weights.mem", biases_mem="biases.mem",
                   layers_mem="layers.mem", integers="integers.npz", vectors_in="vectors_in.bin",
                   vectors_out="vectors_out.bin"),
    )


def export(qnet: QNet, out_dir: Path, frames_hwc: np.ndarray | None = None,
           engine: EngineParams = EngineParams()) -> dict:
    """Check, then write every export file into ``out_dir`` atomically.
    Returns the manifest."""
    verify(qnet, engine)
    plan = plan_hardware(qnet, engine)
    net_id = qnet.network_id()
    frames = np.zeros((0,) + qnet.input_shape, np.uint8) if frames_hwc is None else np.asarray(frames_hwc, np.uint8)
    logits = golden_logits(qnet, frames) if len(frames) else np.zeros((0, qnet.num_classes), np.int64)
    man = manifest(qnet, plan, net_id, len(frames))
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".export-", dir=out_dir.parent))
    try:
        write_hls_header(qnet, plan, stage, net_id)
        write_mem(plan, stage, qnet.cfg.weight_bits)
        qnet.save_npz(stage / "integers.npz")
        frames.tofile(stage / "vectors_in.bin")
        logits.astype("<i4").tofile(stage / "vectors_out.bin")
        (stage / "manifest.json").write_text(json.dumps(man, indent=2) + "\n")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        stage.rename(out_dir)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return man


def load_checkpoint_qnet(ckpt: str | Path) -> QNet:
    """A checkpoint file -> QNet, with clear errors for unusable files."""
    import torch

    from zynqflow.model.data import dataset_tag
    from zynqflow.model.net import ZynqNet, qnet_from_model

    p = Path(ckpt)
    if not p.is_file():
        raise ExportError(str(p), "no such checkpoint (run `make train` first)")
    try:
        ck = torch.load(p, map_location="cpu", weights_only=False)
    except Exception as e:  # noqa: BLE001
        raise ExportError(str(p), f"cannot read checkpoint ({type(e).__name__}: {e})") from e
    if not isinstance(ck, dict) or "config" not in ck or "state_dict" not in ck:
        raise ExportError(str(p), "not a zynqflow checkpoint (no config/state_dict)")
    try:
        net = ZynqNet.from_checkpoint(ck)
    except DesignRuleError as e:
        raise ExportError(f"{p}: layer '{e.layer}'", e.rule) from e
    except (KeyError, TypeError, RuntimeError) as e:
        raise ExportError(str(p), f"checkpoint does not match its topology ({e})") from e
    if not net.act_formats or not net.folded:
        raise ExportError(str(p), "checkpoint is not quantized (training did not reach calibration/QAT)")
    data = ck.get("train_config", {}).get("data", "")
    return qnet_from_model(net, dataset_tag(data) if data else "")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ckpt", required=True, help="checkpoint.pt from make train")
    p.add_argument("--out", default=None, help="output directory (default build/<net>/export)")
    p.add_argument("--vectors", type=int, default=16, help="test frames to write (from the test set)")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--n-pe", type=int, default=EngineParams.n_pe)
    p.add_argument("--n-ci", type=int, default=EngineParams.n_ci)
    a = p.parse_args(argv)
    try:
        qnet = load_checkpoint_qnet(a.ckpt)
        frames = None
        if a.vectors:
            from .data import load_dataset
            ds = load_dataset(qnet.dataset or "synthetic", a.data_dir, size=qnet.cfg.input_size)
            frames = ds.test.subset(a.vectors).hwc()
        out = Path(a.out or f"build/{qnet.name}/export")
        man = export(qnet, out, frames, EngineParams(a.n_pe, a.n_ci))
    except (ExportError, ValueError, OSError) as e:
        print(f"export failed, nothing written: {e}", file=sys.stderr)
        return 2
    print(f"exported {man['network']} (ID {man['network_id']}, {len(man['layers'])} layers, "
          f"{man['cycles_mac_array']} MAC-array cycles/frame at N_PE={a.n_pe} N_CI={a.n_ci}) -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
