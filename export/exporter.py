"""Exporter: trained checkpoint -> fixed-point integers -> the files the HLS
engine, the RTL twin and the host read.

    python -m zynqflow.export --ckpt build/zynqnet-mini/fashion-mnist/checkpoint.pt [--n-pe 16 --n-ci 8]

Output directory (default ``build/<net>/export/``), all written from one
hardware plan (:mod:`zynqflow.export.plan`):

``net_params.h``      the HLS engine's network: constants and the typed layer table
``rtl_params.svh``    the RTL twin's parameters: the same constants and the packed layer table
``weights.bin``       the weight image the host loads into DDR (header + words, spec.engine)
``manifest.json``     what the host needs: name, network ID, formats, classes, engine
                      build, memory sizes, per-layer plan and cycle figures
``integers.npz``      every integer, for the golden model
``vectors_in.bin`` / ``vectors_out.bin``  N test frames (uint8 HWC) and their
                      expected logits (int32 little endian)
``export_inputs.json`` what the export was made from (:func:`export_inputs`: the checkpoint's path,
                      size and mtime, or the network and seed of random weights; the arguments; a
                      hash of the exporter's code), so ``make`` re-exports only when one changed

Nothing is written unless every check passes: the design rules, the
accumulator overflow proof, the bias range, and the plan's memory limits
(each failure names the layer). Files are staged in a temporary directory and
moved into place at the end.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

import numpy as np

from zynqflow.spec import engine as E
from zynqflow.spec.golden import golden_logits
from zynqflow.spec.numerics import ACC_BITS, acc_bound, acc_fits
from zynqflow.spec.qnet import QNet
from zynqflow.spec.recipes import default_recipe
from zynqflow.spec.topology import DesignRuleError, check_rules

from .plan import EngineParams, ExportError, HwPlan, default_engine, engine_from_args, plan_hardware

FORMAT_VERSION = 2


def _umask() -> int:
    """The process's umask (os.umask sets it; set it back at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# ---------------------------------------------------------------------------
def verify(qnet: QNet) -> None:
    """The numeric checks of docs/fixed-point.md; raises :class:`ExportError` naming the layer."""
    cfg = qnet.cfg
    try:
        check_rules(cfg)
    except DesignRuleError as e:
        raise ExportError(f"layer '{e.layer}'", e.rule) from e
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


# ---- the engine constants, shared by both writers ----------------------------------
def build_constants(plan: HwPlan) -> dict[str, int]:
    """Every per-network constant of an engine build, by name (net_params.h and
    rtl_params.svh carry exactly these)."""
    cfg, e, st = plan.cfg, plan.engine, plan.stem
    return dict(
        N_PE=e.n_pe, N_CI=e.n_ci, DSP_PAIRS=e.dsp48e1, ACT_PATHS=plan.act_paths, N_LAYERS=plan.n_layers,
        ACT_ROWS=plan.act_rows,
        WR_W=plan.wring_words.bit_length() - 1, WBUF_DEPTH=plan.wbuf_depth, WEIGHT_CACHE=int(plan.weight_cache),
        IMAGE_WORDS=plan.image_words, HEADER_BYTES=plan.header_bytes, IMAGE_BYTES=plan.image_bytes,
        SCRATCH_BYTES=plan.scratch_bytes,
        IN_SIZE=st["in_size"], IN_CH=st["in_ch"], IN_BYTES=st["in_bytes"], STEM_IM2COL=st["im2col"],
        STEM_K=st["k"], STEM_S=st["s"], STEM_SIZE=st["size"], IN_WORDS=st["in_words"], RAW_RR=st["raw_rows"],
        N_CLASSES=cfg.num_classes, GAP_ROWS=plan.gap["rows"], GAP_SHIFT=plan.gap["shift"],
        GAP_ROUND=E.gap_round_code(cfg.gap_round),
        OUT_BITS=cfg.out_bits, W_BITS=cfg.weight_bits, A_BITS=cfg.act_bits,
        NET_ID=plan.net_id, BUILD_PARAMS=E.build_params(e.n_pe, e.n_ci, cfg.weight_bits, cfg.act_bits),
        ENGINE_INFO_HLS=E.engine_info(False, plan.weight_cache, plan.ddr_tensors),
        ENGINE_INFO=E.engine_info(True, plan.weight_cache, plan.ddr_tensors),
    )


def write_hls_header(qnet: QNet, plan: HwPlan, out: Path) -> None:
    """net_params.h: the constants and a typed layer table (zq_spec::LayerRow)."""
    k = build_constants(plan)
    lines = [f"// Generated by zynqflow.export from {qnet.name} ({qnet.dataset or 'no dataset'}) -- do not edit.",
             f"// Network ID 0x{plan.net_id:08x}; engine N_PE={plan.engine.n_pe} N_CI={plan.engine.n_ci}; "
             f"spec version {E.SPEC_VERSION}.", "#ifndef ZQ_NET_PARAMS_H", "#define ZQ_NET_PARAMS_H", "",
             '#include "zq_spec.h"', "", "namespace zq_net {", ""]
    for name, v in k.items():
        if name == "ENGINE_INFO":
            continue
        ty = "unsigned" if name in ("NET_ID", "BUILD_PARAMS", "ENGINE_INFO_HLS", "IMAGE_BYTES", "SCRATCH_BYTES") else "int"
        lit = f"0x{v:08x}u" if ty == "unsigned" else str(v)
        lines.append(f"constexpr {ty} {name} = {lit};")
    lines += ["", "// The layer table: one row per layer (fields of spec.engine.ROW).",
              "constexpr zq_spec::LayerRow LAYERS[N_LAYERS] = {"]
    for l in plan.layers:
        vals = ", ".join(str(int(l.row[f.name])) for f in E.ROW)
        lines.append(f"    {{{vals}}},  // {l.name}")
    lines += ["};", "", "}  // namespace zq_net", "", "#endif", ""]
    (out / "net_params.h").write_text("\n".join(lines))


def rtl_params_text(qnet: QNet, plan: HwPlan) -> str:
    """rtl_params.svh: ZQ_<NAME> macros for zq_top's parameters and the packed layer table."""
    k = build_constants(plan)
    lines = [f"// Generated by zynqflow.export from {qnet.name} -- do not edit.",
             f"// Network ID 0x{plan.net_id:08x}; engine N_PE={plan.engine.n_pe} N_CI={plan.engine.n_ci}.",
             "`ifndef ZQ_RTL_PARAMS_SVH", "`define ZQ_RTL_PARAMS_SVH"]
    for name, v in k.items():
        if name == "ENGINE_INFO_HLS":
            continue
        hexed = name in ("NET_ID", "BUILD_PARAMS", "ENGINE_INFO", "IMAGE_BYTES", "SCRATCH_BYTES")
        lines.append(f"`define ZQ_{name} " + (f"32'h{v:08x}" if hexed else str(v)))
    packed = 0
    for i, r in enumerate(plan.rows):
        packed |= r << (i * E.ROW_BITS)
    width = E.ROW_BITS * plan.n_layers
    lines.append(f"// layer table: row i at bits [{E.ROW_BITS}*i +: {E.ROW_BITS}] (spec.engine.ROW)")
    lines.append(f"`define ZQ_LAYER_TABLE {width}'h{packed:0{-(-width // 4)}x}")
    lines += ["`endif", ""]
    return "\n".join(lines)


def _hls_frame(plan: HwPlan) -> dict:
    """The HLS engine's frame by its cycle model (spec.cycles_hls, the pynq-z2 memory preset)."""
    from zynqflow.spec.cycles_hls import predict_hls

    h = predict_hls(plan, memory="pynq-z2")
    return dict(h["frame"], memory="pynq-z2", label=h["label"])


def manifest(qnet: QNet, plan: HwPlan, n_vectors: int, dataset_info: dict | None = None) -> dict:
    """The manifest. ``dataset_info`` (:func:`checkpoint_dataset`): the preprocessing recipe the
    network was trained with (else the default for its dataset) and, for a folder of images,
    where it is (``dataset_source``: path, split, skip_bad), so later stages find its test split."""
    cfg, e = qnet.cfg, plan.engine
    info = dataset_info or {}
    h, w, c = qnet.input_shape
    k = build_constants(plan)
    from zynqflow.spec.cycles import BOUND_PRESETS, predict
    pred = predict(plan)
    presets = {m: predict(plan, memory=m) for m in BOUND_PRESETS if m != "ideal"}
    return dict(
        format_version=FORMAT_VERSION, spec_version=E.SPEC_VERSION, network=cfg.name,
        network_id=f"0x{plan.net_id:08x}", network_id_int=plan.net_id, dataset=qnet.dataset,
        input=dict(shape=[h, w, c], layout="HWC", channels=c, dtype="uint8",
                   format=qnet.input_format.to_dict(), color="gray" if c == 1 else "rgb",
                   bytes_per_frame=h * w * c, pixels_per_beat=E.PIXELS_PER_BEAT),
        output=dict(classes=cfg.num_classes, format=qnet.output_format.to_dict(),
                    dtype=f"int{qnet.output_format.bits}", values_per_beat=1, gap_shift=plan.gap["shift"],
                    gap_round=cfg.gap_round),
        preprocess=info.get("recipe") or default_recipe(qnet.dataset, (h, w, c)),
        dataset_source={k: info.get(k) for k in ("path", "split", "skip_bad")} if info.get("path") else None,
        class_names=list(qnet.class_names) or [f"class{i}" for i in range(cfg.num_classes)],
        engine=dict(n_pe=e.n_pe, n_ci=e.n_ci, mac_units=e.n_pe * e.n_ci, dsp48e1=e.dsp48e1, lut_lanes=e.lut_lanes,
                    act_paths=plan.act_paths,
                    params=asdict(e),
                    build_params=k["BUILD_PARAMS"], engine_info_hls=k["ENGINE_INFO_HLS"],
                    engine_info_rtl=k["ENGINE_INFO"], act_rows=plan.act_rows, act_bytes=plan.act_bytes(),
                    wring_words=plan.wring_words, wbuf_depth=plan.wbuf_depth, weight_cache=plan.weight_cache,
                    word_bytes=e.word_bytes),
        memory=dict(weight_image_bytes=plan.image_bytes, weight_words=plan.image_words,
                    header_bytes=plan.header_bytes, scratch_bytes=plan.scratch_bytes,
                    ddr_tensors={t.name: dict(offset=t.ddr_off, channels=t.channels, size=t.size,
                                              write_paths=t.wr_path, read_paths=t.rd_path)
                                 for t in plan.tensors.values() if t.place == "ddr"},
                    address_align=E.ADDR_ALIGN, ddr_window_bytes=E.DDR_WINDOW_BYTES),
        layers=[dict(name=l.name, src=l.src, dst=l.dst, k=ql.k, stride=ql.stride, cin=ql.cin, cout=ql.cout,
                     in_size=ql.in_size, out_size=ql.out_size, relu=ql.relu, dst_offset=ql.dst_offset,
                     in_format=ql.in_format.to_dict(), weight_format=ql.w_format.to_dict(),
                     bias_frac=ql.in_format.frac + ql.w_frac, shift=ql.shift, out_format=ql.out_format.to_dict(),
                     src_kind={0: "stem", 1: "act", 2: "ddr"}[l.src_kind],
                     dst_kind={0: "act", 1: "ddr", 2: "gap"}[l.dst_kind], bands=l.n_bands, ring_rows=l.ring_rows,
                     weight_words=l.weight_words, resident=l.resident, macs=l.macs, mac_cycles=l.mac_cycles,
                     cycles_model=pl["cycles"], bound_model=pl["bound"])
                for l, ql, pl in zip(plan.layers, qnet.layers, pred["layers"])],
        macs_per_frame=plan.macs,
        cycles_mac_array=plan.mac_cycles,
        cycles_model=dict(pred["frame"], label="cycle model of the RTL twin (spec.cycles), not a measurement"),
        cycles_model_hls=_hls_frame(plan),
        # the same model under the other memory presets (spec.engine.MEMORY_PRESETS): frame, per-layer
        # cycles and what bounds each layer (compute, ddr read, ddr write, weights, input stream, ddr shared)
        cycles_model_presets={m: dict(p["frame"], memory=m, layers=[dict(name=l["name"], cycles=l["cycles"],
                                                                          bound=l["bound"]) for l in p["layers"]])
                              for m, p in presets.items()},
        test_vectors=n_vectors,
        files=dict(hls_header="net_params.h", rtl_params="rtl_params.svh", weights="weights.bin",
                   integers="integers.npz", vectors_in="vectors_in.bin", vectors_out="vectors_out.bin"),
    )


def export(qnet: QNet, out_dir: Path, frames_hwc: np.ndarray | None = None,
           engine: EngineParams | None = None, weights_source: str = "", dataset_info: dict | None = None,
           inputs: dict | None = None) -> dict:
    """Check, plan, then write every export file into ``out_dir`` atomically. Returns the manifest.
    ``engine`` defaults to :func:`default_engine` of the network; ``weights_source`` says where the
    weights came from (``checkpoint:<path>``, ``random:<seed>``) and goes into the manifest;
    ``dataset_info``: see :func:`manifest`."""
    verify(qnet)
    plan = plan_hardware(qnet, engine or default_engine(qnet.cfg))
    frames = np.zeros((0,) + qnet.input_shape, np.uint8) if frames_hwc is None else np.asarray(frames_hwc, np.uint8)
    logits = golden_logits(qnet, frames) if len(frames) else np.zeros((0, qnet.num_classes), np.int64)
    man = manifest(qnet, plan, len(frames), dataset_info)
    man["weights_source"] = weights_source or "unknown"
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".export-", dir=out_dir.parent))
    try:
        os.chmod(stage, 0o777 & ~_umask())       # mkdtemp makes 0700: the export gets the user's umask, as mkdir does
        write_hls_header(qnet, plan, stage)
        (stage / "rtl_params.svh").write_text(rtl_params_text(qnet, plan))
        (stage / "weights.bin").write_bytes(plan.weight_image)
        qnet.save_npz(stage / "integers.npz")
        frames.tofile(stage / "vectors_in.bin")
        logits.astype("<i4").tofile(stage / "vectors_out.bin")
        (stage / "manifest.json").write_text(json.dumps(man, indent=2) + "\n")
        if inputs is not None:
            (stage / EXPORT_INPUTS).write_text(json.dumps(inputs, indent=1) + "\n")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        stage.rename(out_dir)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return man


def load_plan(export_dir: str | Path) -> HwPlan:
    """The hardware plan of an export, rebuilt from its integers and engine parameters."""
    export_dir = Path(export_dir)
    man = json.loads((export_dir / "manifest.json").read_text())
    params = man["engine"].get("params")
    if params is None:
        raise ExportError(str(export_dir), "manifest has no engine.params (exported by an older version: re-export)")
    return plan_hardware(QNet.load_npz(export_dir / "integers.npz"), EngineParams(**params))


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
    info = ck.get("dataset") or {}
    data = ck.get("train_config", {}).get("data", "")
    return qnet_from_model(net, info.get("tag") or (dataset_tag(data) if data else ""))


def checkpoint_dataset(ckpt: str | Path) -> dict:
    """What a checkpoint says about its data: ``tag``, ``data`` and ``data_dir`` (the training
    arguments), and for a folder of images ``path``, ``recipe``, ``split``, ``skip_bad``,
    ``channels`` and ``class_names`` (``dataset`` in checkpoints written by this version)."""
    import torch

    ck = torch.load(Path(ckpt), map_location="cpu", weights_only=False)
    tc = ck.get("train_config", {}) if isinstance(ck, dict) else {}
    info = dict(ck.get("dataset") or {}) if isinstance(ck, dict) else {}
    info.setdefault("recipe", None)
    return dict(info, data=tc.get("data"), data_dir=tc.get("data_dir"))


EXPORT_INPUTS = "export_inputs.json"
_CODE = ("export/*.py", "spec/*.py", "model/net.py")     # the code an export's files come from


def _code_hash() -> str:
    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha1()
    for pattern in _CODE:
        for f in sorted(root.glob(pattern)):
            h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


def export_inputs(ckpt: str | Path | None = None, net: str | None = None, seed: int | None = None,
                  args: dict | None = None) -> dict:
    """What an export is made from, as ``make`` compares it (the ``export_inputs.json`` it carries):
    the checkpoint (resolved path, size, mtime) or the seeded random weights of ``net`` (and, for a
    JSON config, the file's size and mtime), the exporter's ``args``, and a hash of the exporter's
    code (export/, spec/, model/net.py). A missing checkpoint raises OSError."""
    d: dict = dict(args=dict(sorted((args or {}).items())), code=_code_hash())
    if ckpt is not None:
        p = Path(ckpt).resolve()
        st = p.stat()
        d.update(source="checkpoint", ckpt=str(p), size=st.st_size, mtime_ns=st.st_mtime_ns)
    else:
        d.update(source="random", net=net, seed=seed)
        if net and Path(net).is_file():
            st = Path(net).stat()
            d.update(config=str(Path(net).resolve()), size=st.st_size, mtime_ns=st.st_mtime_ns)
    return d


def dataset_test_frames(qnet: QNet, info: dict, n: int, data_dir: str | None = None) -> np.ndarray:
    """``n`` test-split frames (HWC) of the data a network was trained on, every class in proportion
    (a seeded stratified subset, :meth:`zynqflow.model.data.Split.subset`)."""
    from zynqflow.model.data import load_dataset

    h, w, c = qnet.input_shape
    data = info.get("path") or info.get("data") or qnet.dataset or "synthetic"
    ds = load_dataset(data, data_dir or info.get("data_dir"), size=h, channels=c, recipe=info.get("recipe"),
                      split=info.get("split"), skip_bad=bool(info.get("skip_bad")))
    return ds.test.subset(n).hwc()


def exporter_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m zynqflow.export", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--ckpt", help="checkpoint.pt from make train")
    src.add_argument("--random-weights", type=int, metavar="SEED", default=None,
                     help="no checkpoint: calibrated random weights for --net, seeded (for speed and "
                          "bit-exactness figures, not accuracy)")
    p.add_argument("--net", default=None, help="network preset or JSON config (with --random-weights)")
    p.add_argument("--out", default=None, help="output directory (default build/<net>/export)")
    p.add_argument("--vectors", type=int, default=16, help="test frames to write (from the test set; random "
                                                           "frames with --random-weights)")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--n-pe", type=int, default=None, help="output channels in parallel (default: "
                                                          "export.plan.default_engine of the network)")
    p.add_argument("--n-ci", type=int, default=None, help="input channels per MAC lane group")
    p.add_argument("--act-kb", type=int, default=None, help="on-chip activation RAM budget (KiB; default: the "
                                                            "default engine's, or 320 with --n-pe/--n-ci)")
    p.add_argument("--wcache-kb", type=int, default=None, help="largest weight image kept on chip (KiB, default "
                                                               f"{EngineParams.wcache_kb})")
    p.add_argument("--dsp-pairs", type=int, default=None,
                   help="MAC lane pairs on DSP48E1, the rest on LUT multipliers (default: as many as the xc7z020 "
                        "allows)")
    p.add_argument("--act-paths", type=int, default=None, choices=(1, 2),
                   help="activation paths to the DDR tensors (default 2: m_axi_act, and m_axi_act2 / m_axi_wts)")
    return p


def export_args(a: argparse.Namespace) -> dict:
    """The exporter's options that shape an export (recorded in export_inputs.json)."""
    return dict(vectors=a.vectors, data_dir=a.data_dir, n_pe=a.n_pe, n_ci=a.n_ci, act_kb=a.act_kb,
                wcache_kb=a.wcache_kb, dsp_pairs=a.dsp_pairs, act_paths=a.act_paths)


def main(argv=None) -> int:
    p = exporter_parser()
    a = p.parse_args(argv)
    if a.random_weights is not None and not a.net:
        p.error("--random-weights needs --net")
    if (a.n_pe is None) != (a.n_ci is None):
        p.error("give both --n-pe and --n-ci, or neither")
    args = export_args(a)
    try:
        info = None
        if a.ckpt:
            qnet = load_checkpoint_qnet(a.ckpt)
            source = f"checkpoint:{a.ckpt}"
            info = checkpoint_dataset(a.ckpt)
            frames = dataset_test_frames(qnet, info, a.vectors, a.data_dir) if a.vectors else None
        else:
            from zynqflow.spec.topology import get_config

            from .fixtures import random_qnet
            qnet, frames = random_qnet(get_config(a.net), a.random_weights, a.vectors)
            source = f"random:{a.random_weights}"
            print(f"export: no checkpoint for {qnet.name}: seeded random weights (seed {a.random_weights}), "
                  "calibrated on random frames; the figures it gives are for speed and bit-exactness, "
                  "not accuracy", file=sys.stderr)
        out = Path(a.out or f"build/{qnet.name}/export")
        engine = engine_from_args(qnet.cfg, a.n_pe, a.n_ci, act_kb=a.act_kb, wcache_kb=a.wcache_kb,
                                  dsp_pairs=a.dsp_pairs, act_paths=a.act_paths)
        inputs = export_inputs(a.ckpt, a.net, a.random_weights, args)
        man = export(qnet, out, frames, engine, weights_source=source, dataset_info=info, inputs=inputs)
    except (ExportError, DesignRuleError, ValueError, OSError) as e:
        print(f"export failed, nothing written: {e}", file=sys.stderr)
        return 2
    cm = man["cycles_model"]
    print(f"exported {man['network']} (ID {man['network_id']}, {len(man['layers'])} layers, N_PE={engine.n_pe} "
          f"N_CI={engine.n_ci}: {man['cycles_mac_array']} MAC-array cycles, {cm['cycles']} cycles/frame modelled "
          f"= {cm['fps_at_100mhz']:.1f} fps at 100 MHz (model), weight image {man['memory']['weight_image_bytes']} B, "
          f"scratch {man['memory']['scratch_bytes']} B) -> {out}")
    from zynqflow.spec.cycles import bound_table
    print(bound_table(load_plan(out))[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
