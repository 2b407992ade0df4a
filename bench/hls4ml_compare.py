"""Side by side with hls4ml: the same quantized network through hls4ml's
PyTorch front end and its C simulation, bit for bit against our golden model.

    python -m zynqflow.bench.hls4ml_compare --ckpt build/zynqnet-mini/fashion-mnist/checkpoint.pt \\
        [--frames 200] [--export build/zynqnet-mini/export] [--out build/bench/bitexact.json]
    python -m zynqflow.bench.hls4ml_compare --random-net zynqnet-tiny      # quick, no checkpoint

What is converted
-----------------
:func:`to_torch_float` rebuilds the :class:`~zynqflow.spec.qnet.QNet` as a
plain float64 PyTorch module: one ``Conv2d`` per layer with weight
``w * 2^-F_w`` and bias ``b * 2^-(F_in+F_w)`` (both exact in float64), an
``nn.ReLU`` module after every ReLU layer, ``torch.cat([a, b], dim=1)`` for the
fire expands (hls4ml only parses two-input ``cat`` with ``dim`` given as a
keyword), and a final ``AvgPool2d(kernel_size=final map size)`` + ``flatten``
(hls4ml has no adaptive/global pool for PyTorch). Its float ``forward`` is our
math without the per-layer rounding; :meth:`FloatNet.forward_quantized` adds
``floor(x*2^F + 1/2)`` and the saturation after every conv and after the pool
and then equals the golden model exactly (float64 holds every intermediate).

hls4ml configuration (:func:`hls4ml_config`), per layer (``granularity='name'``)
--------------------------------------------------------------------------------
* input ``x``: ``ap_ufixed<8,0>`` (pixel / 256, exact);
* conv weights ``ap_fixed<W_BITS, W_BITS-F_w>``, bias ``ap_fixed<32, 32-(F_in+F_w)>``;
* conv accumulator ``ap_fixed<A, A-(F_in+F_w)>`` with ``A >= 32`` bits from the
  worst-case bound (``acc_bound``): every product and sum is exact, as in our engine;
* the conv of a ReLU layer produces ``ap_fixed<R, R-F_out, AP_RND, AP_SAT>`` with
  R wide enough never to saturate: hls4ml casts the accumulator to the conv's
  result type *before* its separate ReLU layer, so an 8-bit *signed* result
  would clip at 127 instead of 255. ``AP_RND`` (round towards +inf on a tie) of
  an exact accumulator is our ``(acc + 2^(s-1)) >> s``;
* the ReLU produces ``ap_ufixed<8, 8-F_out, AP_RND, AP_SAT>`` (our saturation;
  no rounding happens there since the fractional bits already match);
* the final conv (no ReLU) produces ``ap_fixed<16, 16-F_out, AP_RND, AP_SAT>``;
* the concatenations carry the ReLU format of the tensor they build;
* the average pool: result ``ap_fixed<16, 16-F_out, AP_RND, AP_SAT>``; its
  accumulator is the one thing we choose two ways (``pool_accum``):
  ``"mirror"`` (the default, the primary result) is our GAP accumulator,
  ``ap_fixed<16+k, 16+k-F_out>`` for 2^k pixels: the sum is exact but hls4ml
  then computes ``sum / N`` *in that type* (``ap_fixed / int`` keeps the
  dividend's fractional bits and divides integers, truncating towards zero),
  so the logits are ``trunc(sum / 2^k)`` where we compute
  ``(sum + 2^(k-1)) >> k``; ``"auto"`` is what hls4ml's own precision inference
  picks (``ap_fixed<16+2k, 16-F_out+k>``: k more fractional bits), where the
  quotient is exact and the final ``AP_RND`` cast rounds it half up, like us.
* ``io_stream`` (line-buffer convolutions, hls4ml's choice for CNNs), Vivado
  backend, ``Strategy: Latency``, ``ReuseFactor: 1``; pragmas do not matter to
  the C simulation. Measured on zynqnet-mini (random weights, 2 shared cores,
  g++ 12 -O3, hls4ml 1.3.0): io_stream/Latency compiles in 37-47 s and
  simulates ~3 frames/s; io_stream/Resource 49 s, ~2.6 frames/s; io_parallel/
  Latency 555 s, ~2.3-2.8 frames/s; all three gave the golden logits (pool
  accumulator 'auto', 20 frames). Hence io_stream.
  (The bit-accurate ap_fixed arithmetic, ~7.6 M MACs/frame, is what is slow.)
* every layer is traced (``TraceOutput``), so the same library gives per-layer
  outputs (:meth:`ModelGraph.trace`) for the diagnosis without a rebuild.

Diagnosis (:func:`diagnose`)
----------------------------
hls4ml's traced per-layer outputs (channels last, doubles) times ``2^F`` on
the first ``trace_frames`` frames are compared with
:func:`~zynqflow.spec.golden.golden_tensors`: each conv's pre-ReLU output
with ``round_shift(acc)``, each ReLU output, each concatenation and the final
conv with our tensors, the pool with our GAP. The first stage that differs is
named, and hls4ml's logits on all frames are matched against candidate
rounding rules (round half up, truncation towards zero, floor, half-even)
applied to our exact integer GAP sums.

Findings (zynqnet-mini, random calibrated weights, 200 frames each of
Fashion-MNIST and of uniform noise): every one of the 27 traced conv / ReLU
stages and the 4 concatenations is bit-identical (no value saturated there;
saturating ReLUs are checked bit-exact in tests/test_hls4ml_compare.py); the
logits agree on 1/200 (Fashion-MNIST) and 0/200 (noise) frames with
``pool_accum="mirror"``, always by 1 LSB, and hls4ml's logits are exactly
``trunc(sum / 16)`` (C division towards zero) of our sums; with
``pool_accum="auto"`` 200/200 frames agree exactly.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn

from zynqflow.bench.bench import machine
from zynqflow.spec.topology import run_graph
from zynqflow.spec.qnet import QNet
from zynqflow.spec.golden import conv_acc, golden_logits, golden_tensors
from zynqflow.spec.numerics import ACC_BITS, BIAS_BITS, QFormat, acc_bound, gap_shift, pixels_shift, round_shift

POOL_ACCUM_CHOICES = ("mirror", "auto")


def _key(name: str) -> str:
    return name.replace("/", "_")


# ---- the float module ------------------------------------------------------------
class FloatNet(nn.Module):
    """The QNet as float64 Conv2d / ReLU / cat / AvgPool2d (see the module doc).

    Submodules are named after our layers with ``/`` -> ``_`` (``f2_s3``,
    ``f2_s3_relu``); hls4ml uses these names for its layers."""

    def __init__(self, qnet: QNet):
        super().__init__()
        self.qnet = qnet
        for l in qnet.layers:
            conv = nn.Conv2d(l.cin, l.cout, l.k, l.stride, l.pad, bias=True).double()
            with torch.no_grad():
                conv.weight.copy_(torch.from_numpy(
                    l.w.transpose(0, 3, 1, 2).astype(np.float64) * 2.0 ** -l.w_frac))
                conv.bias.copy_(torch.from_numpy(
                    l.b.astype(np.float64) * 2.0 ** -(l.in_format.frac + l.w_frac)))
            setattr(self, _key(l.name), conv)
            if l.relu:
                setattr(self, _key(l.name) + "_relu", nn.ReLU())
        self.final_size = qnet.layers[-1].out_size
        self.gap = nn.AvgPool2d(self.final_size)
        self.out_tensor = qnet.cfg.output_tensor
        self.eval()

    @staticmethod
    def _cat(parts: list[torch.Tensor]) -> torch.Tensor:
        # hls4ml parses only two-input cat, with dim as a keyword argument
        y = parts[0]
        for p in parts[1:]:
            y = torch.cat([y, p], dim=1)
        return y

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Float NCHW input (pixel / 256) -> all output channels, pooled (N x C_out)."""
        def apply(l, src):
            y = getattr(self, _key(l.name))(src)
            return getattr(self, _key(l.name) + "_relu")(y) if l.relu else y

        out = run_graph(self.qnet.layers, x, apply, self._cat)[self.out_tensor]
        return torch.flatten(self.gap(out), 1)

    @torch.no_grad()
    def forward_quantized(self, x: torch.Tensor) -> torch.Tensor:
        """``forward`` with the contract's rounding: after every conv
        ``clamp(floor(y*2^F + 1/2))`` (ReLU in between), and the pool rounded
        the same way. Equals the golden logits * 2^-F exactly (float64)."""
        def apply(l, src):
            return _quant(getattr(self, _key(l.name))(src), l.out_format, l.relu)

        out = run_graph(self.qnet.layers, x.double(), apply, lambda parts: torch.cat(parts, 1))[self.out_tensor]
        return _quant(torch.flatten(self.gap(out), 1), self.qnet.output_format, False)


def _quant(y: torch.Tensor, fmt: QFormat, relu: bool) -> torch.Tensor:
    s = 2.0 ** fmt.frac
    q = torch.floor(y * s + 0.5)
    if relu:
        q = torch.clamp_min(q, 0)
    return torch.clamp(q, fmt.lo, fmt.hi) / s


def to_torch_float(qnet: QNet) -> FloatNet:
    """A plain float64 PyTorch module computing the QNet's math without the
    per-layer rounding (``forward``) or with it (``forward_quantized``)."""
    return FloatNet(qnet)


# ---- hls4ml configuration --------------------------------------------------------
def _fx(bits: int, frac: int, signed: bool = True, rnd_sat: bool = False) -> str:
    t = f"ap_{'' if signed else 'u'}fixed<{bits},{bits - frac}"
    return t + (",AP_RND,AP_SAT>" if rnd_sat else ">")


def _gap_k(qnet: QNet) -> int:
    return pixels_shift(qnet.layers[-1].out_size ** 2)


def _cat_names(qnet: QNet) -> dict[str, list[str]]:
    """``{tensor: [hls4ml concatenate layers building it]}``: FX names the
    ``torch.cat`` calls cat, cat_1, ... in the order ``FloatNet.forward`` makes
    them (a tensor is concatenated when first read, the output one last)."""
    writers: dict[str, int] = {}
    for l in qnet.layers:
        writers[l.dst] = writers.get(l.dst, 0) + 1
    order = [l.src for l in qnet.layers if writers.get(l.src, 0) > 1]
    order = list(dict.fromkeys(order)) + [qnet.cfg.output_tensor]
    out, i = {}, 0
    for t in order:
        names = []
        for _ in range(writers.get(t, 1) - 1):
            names.append("cat" if i == 0 else f"cat_{i}")
            i += 1
        if names:
            out[t] = names
    return out


def precisions(qnet: QNet, pool_accum: str = "mirror") -> dict[str, dict[str, str]]:
    """``{hls4ml layer name: {weight/bias/accum/result: ap type}}`` mirroring our formats."""
    if pool_accum not in POOL_ACCUM_CHOICES:
        raise ValueError(f"pool_accum must be one of {POOL_ACCUM_CHOICES}")
    fi = qnet.input_format
    p: dict[str, dict[str, str]] = {"x": {"result": _fx(fi.bits, fi.frac, fi.signed)}}
    for l in qnet.layers:
        f_acc = l.in_format.frac + l.w_frac
        bound = acc_bound(l.k, l.cin, l.w_format, l.in_format, int(np.abs(l.b).max(initial=0)))
        a_bits = max(ACC_BITS, bound.bit_length() + 1)
        d = {"weight": _fx(l.w_bits, l.w_frac), "bias": _fx(BIAS_BITS, f_acc),
             "accum": _fx(a_bits, f_acc)}
        fo = l.out_format
        if l.relu:
            r_bits = a_bits + max(0, -l.shift)     # holds round_shift(acc) without saturating
            d["result"] = _fx(r_bits, fo.frac, True, True)
            p[_key(l.name) + "_relu"] = {"result": _fx(fo.bits, fo.frac, fo.signed, True)}
        else:
            d["result"] = _fx(fo.bits, fo.frac, fo.signed, True)
        p[_key(l.name)] = d
    for dst, names in _cat_names(qnet).items():
        fo = next(l.out_format for l in qnet.layers if l.dst == dst)
        for name in names:
            p[name] = {"result": _fx(fo.bits, fo.frac, fo.signed, True)}
    fo = qnet.output_format
    k = _gap_k(qnet)
    accum = _fx(fo.bits + k, fo.frac) if pool_accum == "mirror" else "auto"
    p["gap"] = {"accum": accum, "result": _fx(fo.bits, fo.frac, fo.signed, True)}
    p["flatten"] = {"result": _fx(fo.bits, fo.frac, fo.signed, True)}
    return p


def hls4ml_config(qnet: QNet, model: nn.Module, pool_accum: str = "mirror",
                  strategy: str = "Latency", trace: bool = True) -> dict:
    """The hls4ml config dict (``granularity='name'``) with our precisions."""
    import hls4ml

    s = qnet.cfg.input_size
    cfg = hls4ml.utils.config_from_pytorch_model(
        model, (qnet.cfg.in_channels, s, s), granularity="name", backend="Vivado",
        default_precision="ap_fixed<32,16>")
    cfg["Model"]["Strategy"] = strategy
    cfg["Model"]["TraceOutput"] = trace
    names = cfg["LayerName"]
    for name, prec in precisions(qnet, pool_accum).items():
        if name not in names:
            raise RuntimeError(f"hls4ml has no layer '{name}' (it has {sorted(names)})")
        names[name].setdefault("Precision", {}).update(prec)
    for name, lc in names.items():
        lc["Trace"] = trace
        unset = [t for t, v in lc.get("Precision", {}).items() if v == "auto" and t not in ("accum",)]
        if unset:
            raise RuntimeError(f"hls4ml layer '{name}': precision {unset} not mirrored")
    return cfg


def build_hls4ml(qnet: QNet, out_dir: Path, io_type: str = "io_stream", pool_accum: str = "mirror",
                 strategy: str = "Latency", model: nn.Module | None = None):
    """Convert and compile; returns ``(hls_model, compile_seconds)``."""
    import hls4ml

    model = model or to_torch_float(qnet)
    cfg = hls4ml_config(qnet, model, pool_accum, strategy)
    out_dir = Path(out_dir)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    with contextlib.redirect_stdout(io.StringIO()):   # hls4ml prints the topology
        hm = hls4ml.converters.convert_from_pytorch_model(
            model, hls_config=cfg, output_dir=str(out_dir), backend="Vivado", io_type=io_type,
            part="xc7z020clg400-1")
    # tracing code is compiled in but only runs when ModelGraph.trace() asks for it
    # (hls4ml reads TraceOutput from the top-level config, not from hls_config)
    hm.config.trace_output = True
    t = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        hm.compile()
    return hm, time.perf_counter() - t


def applied_precisions(hm) -> dict[str, dict[str, str]]:
    """The types hls4ml actually generated, per layer (inserted layers included)."""
    return {l.name: {t: str(v.precision) for t, v in l.types.items()} for l in hm.get_layers()}


def _hls_input(qnet: QNet, frames: np.ndarray) -> np.ndarray:
    """uint8 HWC frames -> float64 NCHW pixel/2^F_in, flattened per frame (hls4ml's
    own input transpose turns it channels-last)."""
    x = frames.transpose(0, 3, 1, 2).astype(np.float64) * 2.0 ** -qnet.input_format.frac
    return np.ascontiguousarray(x.reshape(len(frames), -1))


def hls4ml_logits(hm, qnet: QNet, frames: np.ndarray) -> np.ndarray:
    """hls4ml C-sim outputs -> our integer logits (x 2^F_out; exact, asserted)."""
    y = np.asarray(hm.predict(_hls_input(qnet, frames)), dtype=np.float64).reshape(len(frames), -1)
    return _to_int(y, qnet.output_format.frac)[:, : qnet.num_classes]


def _to_int(y: np.ndarray, frac: int) -> np.ndarray:
    v = np.asarray(y, np.float64) * 2.0 ** frac
    r = np.rint(v)
    if not np.array_equal(r, v):
        raise AssertionError(f"hls4ml values are not on the 2^-{frac} grid")
    return r.astype(np.int64)


def hls4ml_trace(hm, qnet: QNet, frames: np.ndarray) -> dict[str, np.ndarray]:
    """Per-layer hls4ml outputs (channels last, N x ...) for ``frames``.

    The library was built with ``TraceOutput`` on (tracing is switched on at
    run time by the bridge), so ``ModelGraph.trace``'s rebuild is skipped."""
    x = _hls_input(qnet, frames)
    orig = hm.compile
    hm.compile = lambda: None   # already compiled with tracing; trace() would rebuild
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            _, tr = hm.trace(x)
    finally:
        hm.compile = orig
    return {k: np.asarray(v, np.float64).reshape((len(frames),) + np.shape(v)[1:]) for k, v in tr.items()}


# ---- diagnosis -------------------------------------------------------------------
def _reference_stages(qnet: QNet, frames: np.ndarray) -> tuple[list[tuple[str, str, np.ndarray, int]], np.ndarray]:
    """Our per-stage integers in hls4ml's stage names: ``(hls4ml name, what,
    int64 N x H x W x C, frac)``, plus the GAP sums (N x C, int64)."""
    t = golden_tensors(qnet, frames)
    stages = []
    for l in qnet.layers:
        acc = conv_acc(t[l.src], l)
        piece = t[l.dst][..., l.dst_offset:l.dst_offset + l.cout]
        if l.relu:
            stages.append((_key(l.name), f"{l.name} conv (before ReLU): round_shift(acc, {l.shift})",
                           round_shift(acc, l.shift), l.out_format.frac))
            stages.append((_key(l.name) + "_relu", f"{l.name} ReLU + saturate to {l.out_format}",
                           piece, l.out_format.frac))
        else:
            stages.append((_key(l.name), f"{l.name} final conv: round, saturate to {l.out_format}",
                           piece, l.out_format.frac))
    for dst, names in _cat_names(qnet).items():   # the last cat is the whole tensor
        l = next(l for l in qnet.layers if l.dst == dst)
        stages.append((names[-1], f"concatenation into '{dst}'", t[dst], l.out_format.frac))
    out = t[qnet.cfg.output_tensor]
    sums = out.sum(axis=(1, 2))
    stages.append(("gap", "global average pool: (sum + 2^(k-1)) >> k",
                   gap_shift(sums, qnet.layers[-1].out_size ** 2)[:, None, None, :], qnet.output_format.frac))
    return stages, sums


def diagnose(hm, qnet: QNet, frames: np.ndarray, hls_logits: np.ndarray | None = None,
             trace_frames: int = 50) -> dict:
    """Name where and why hls4ml differs from us.

    Per layer: hls4ml's traced outputs on the first ``trace_frames`` frames
    against our tensors (tracing costs a second C-sim pass, hence the subset).
    Pool: ``hls_logits`` (all frames, from ``predict``) against candidate
    rounding rules applied to our exact integer GAP sums."""
    sel = frames[:trace_frames]
    tr = hls4ml_trace(hm, qnet, sel)
    stages, _ = _reference_stages(qnet, sel)
    per_layer = []
    first_bad = None
    for name, what, ours, frac in stages:
        if name not in tr:
            per_layer.append(dict(layer=name, what=what, traced=False))
            continue
        theirs = _to_int(tr[name], frac).reshape(ours.shape)
        d = theirs - ours
        row = dict(layer=name, what=what, traced=True, frames=len(sel), elements=int(d.size),
                   mismatched_elements=int((d != 0).sum()),
                   mismatched_frames=int(np.any(d != 0, axis=tuple(range(1, d.ndim))).sum()),
                   max_abs_diff_lsb=int(np.abs(d).max(initial=0)))
        per_layer.append(row)
        if row["mismatched_frames"] and first_bad is None:
            first_bad = row

    if hls_logits is None:
        hls_logits = _to_int(tr["gap"], qnet.output_format.frac).reshape(len(sel), -1)[:, : qnet.num_classes]
        frames = sel
    k = _gap_k(qnet)
    n = 1 << k
    c = golden_tensors(qnet, frames)[qnet.cfg.output_tensor].sum(axis=(1, 2))[:, : qnet.num_classes]
    th = np.asarray(hls_logits)
    candidates = {
        "round half up: (sum + 2^(k-1)) >> k [ours]": round_shift(c, k),
        "truncate towards zero: sum / 2^k as C integer division": np.sign(c) * (np.abs(c) // n),
        "floor: sum >> k": c >> k,
        "round half to even": np.rint(c / n).astype(np.int64),
    }
    cands = {desc: float(np.mean(v == th)) for desc, v in candidates.items()}
    d = th - candidates["round half up: (sum + 2^(k-1)) >> k [ours]"]
    bad = np.any(d != 0, axis=1)

    reasons = []
    gap_name = f"layer 'gap' (AvgPool2d over {qnet.layers[-1].out_size}x{qnet.layers[-1].out_size} = 2^{k} pixels)"
    if first_bad is None and not bad.any():
        reasons.append(f"none: every traced layer output and every logit equals ours ({_pool_rule(hm)})")
    elif first_bad is not None and first_bad["layer"] != "gap":
        r = first_bad
        reasons.append(f"first differing stage: '{r['layer']}' ({r['what']}): {r['mismatched_elements']}/"
                       f"{r['elements']} values on {r['mismatched_frames']}/{r['frames']} traced frames, "
                       f"up to {r['max_abs_diff_lsb']} LSB; later stages inherit it")
    else:
        best = max(cands, key=cands.get)
        head = (f"{gap_name}: every conv, ReLU and concat output before the pool is bit-identical "
                f"({len(sel)} traced frames); {int((d != 0).sum())}/{d.size} logits on {int(bad.sum())}/"
                f"{len(frames)} frames differ, by at most {int(np.abs(d).max())} LSB, and hls4ml's logits "
                f"equal '{best}' of our exact sums on {cands[best]:.1%} of logits")
        if best.startswith("truncate") and cands[best] == 1.0:
            fa = _frac_of(applied_precisions(hm).get("gap", {}).get("accum_t", ""))
            reasons.append(
                head + f". Mechanism: hls4ml's pool sums into accum_t ({_pool_rule(hm)}) and returns "
                f"sum / N as ap_fixed / int, whose quotient keeps the dividend's {fa} fractional bits "
                f"(= F_out: nothing left for AP_RND to round) and is an integer sdiv, truncating towards "
                f"zero; the result_t cast is then exact. We round half up: (sum + 2^(k-1)) >> k. They "
                f"differ when sum mod 2^k >= 2^(k-1) for a positive sum, or when -sum mod 2^k > 2^(k-1) "
                f"for a negative one; the difference is always 1 LSB (ours - hls4ml = +1 for positive "
                f"sums, -1 for negative ones)")
            reasons.append("fix: give the pool's accum_t k more fractional bits than F_out (hls4ml's own "
                           "precision inference, accum 'auto', does: width + 2k, integer + k); the quotient "
                           "is then exact and the AP_RND cast to result_t rounds it half up like us "
                           "(the pool_accum='auto' variant)")
        else:
            reasons.append(head)
    return dict(per_layer=per_layer, reasons=reasons, pool_candidates=cands,
                pool_mismatched_frames=int(bad.sum()))


def _frac_of(ap_type: str) -> str:
    """'fixed<20,5,...>' -> '15'."""
    try:
        w, i = ap_type.split("<", 1)[1].split(",")[:2]
        return str(int(w) - int(i.rstrip(">")))
    except (IndexError, ValueError):
        return "?"


def _pool_rule(hm) -> str:
    t = applied_precisions(hm).get("gap", {})
    return f"pool accum_t {t.get('accum_t', '?')}, result_t {t.get('result_t', '?')}"


# ---- timing ----------------------------------------------------------------------
def _fps(fn, n: int, min_seconds: float = 0.5):
    """Frames per second of ``fn()`` (which evaluates ``n`` frames), best of
    repeats within ``min_seconds``, and the last result."""
    best, spent, out = math.inf, 0.0, None
    while spent < min_seconds or best == math.inf:
        t = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t
        best, spent = min(best, dt), spent + dt
        if spent > 5 * min_seconds:
            break
    return n / best, out


def _our_csim(qnet: QNet, frames: np.ndarray, export_dir: str | Path | None, gold: np.ndarray):
    """(fps or None, reason or None, agrees or None) of zynqflow.sim.csim.runner.CSim."""
    tmp = None
    try:
        from zynqflow.sim.csim.runner import CSim  # being written concurrently: import lazily
    except Exception as e:  # noqa: BLE001
        return None, f"zynqflow.sim.csim.runner unavailable: {type(e).__name__}: {e}", None
    try:
        if export_dir is None:
            from zynqflow.export.exporter import export
            tmp = tempfile.mkdtemp(prefix="zq-export-")
            export_dir = Path(tmp) / "export"
            export(qnet, export_dir)
        sim = CSim(export_dir)
        fps, out = _fps(lambda: sim.run(frames), len(frames))
        out = np.asarray(out).reshape(len(frames), -1)[:, : qnet.num_classes].astype(np.int64)
        return fps, None, bool(np.array_equal(out, gold))
    except Exception as e:  # noqa: BLE001
        return None, f"CSim failed: {type(e).__name__}: {e}", None
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


# ---- the comparison --------------------------------------------------------------
def compare(qnet: QNet, frames_hwc_uint8: np.ndarray, export_dir: str | Path | None = None,
            out_dir: str | Path = "build/bench/hls4ml", io_type: str = "io_stream",
            strategy: str = "Latency", variants: bool = True, trace_frames: int = 50) -> dict:
    """Golden vs hls4ml C-sim (vs our C-sim when it exists) on the same frames.

    Returns the ``build/bench/bitexact.json`` dict. ``variants`` also builds the
    ``pool_accum='auto'`` model (a second compile) to confirm the diagnosis."""
    import hls4ml

    frames = np.ascontiguousarray(np.asarray(frames_hwc_uint8, np.uint8))
    if frames.ndim == 3:
        frames = frames[None]
    n = len(frames)
    out_dir = Path(out_dir)
    fps_gold, gold = _fps(lambda: golden_logits(qnet, frames), n)

    model = to_torch_float(qnet)
    with torch.no_grad():
        xq = torch.from_numpy(frames.transpose(0, 3, 1, 2).astype(np.float64) * 2.0 ** -qnet.input_format.frac)
        fq = model.forward_quantized(xq).numpy()[:, : qnet.num_classes]
    float_quantized_exact = bool(np.array_equal(_to_int(fq, qnet.output_format.frac), gold))

    runs = {}
    for pool_accum in ("mirror", "auto") if variants else ("mirror",):
        hm, compile_s = build_hls4ml(qnet, out_dir / f"{qnet.name}-{io_type}-{pool_accum}", io_type,
                                     pool_accum, strategy, model)
        fps_h, hl = _fps(lambda: hls4ml_logits(hm, qnet, frames), n)
        d = hl - gold
        agree = np.all(d == 0, axis=1)
        diag = diagnose(hm, qnet, frames, hl, trace_frames)
        runs[pool_accum] = dict(
            precisions=precisions(qnet, pool_accum), applied=applied_precisions(hm),
            compile_seconds=round(compile_s, 2),
            fps=fps_h, agree_fraction=float(agree.mean()), agree_frames=int(agree.sum()),
            logits_agree_fraction=float((d == 0).mean()), max_abs_diff=int(np.abs(d).max(initial=0)),
            mean_diff_lsb=float(d.mean()) if d.size else 0.0, **diag)

    csim_fps, csim_reason, csim_agree = _our_csim(qnet, frames, export_dir, gold)
    main = runs["mirror"]
    reasons = list(main["reasons"])
    if "auto" in runs:
        a = runs["auto"]
        reasons.append(f"pool_accum='auto' variant: agree_fraction={a['agree_fraction']:.4f}, "
                       f"max_abs_diff={a['max_abs_diff']} LSB ({a['reasons'][0]})")
    return dict(
        network=qnet.name, network_id=f"0x{qnet.network_id():08x}", dataset=qnet.dataset,
        frames=n, hls4ml_version=hls4ml.__version__, torch_version=torch.__version__,
        io_type=io_type, strategy=strategy, backend="Vivado", pool_accum="mirror",
        agree_fraction=main["agree_fraction"], max_abs_diff=main["max_abs_diff"],
        logits_agree_fraction=main["logits_agree_fraction"],
        disagreement_reasons=reasons,
        per_layer=main["per_layer"], pool_candidates=main["pool_candidates"],
        float_module_quantized_equals_golden=float_quantized_exact,
        fps=dict(golden=fps_gold, zynqflow_csim=csim_fps, hls4ml_csim=main["fps"]),
        zynqflow_csim_note=csim_reason, zynqflow_csim_agrees=csim_agree,
        hls4ml_compile_seconds=main["compile_seconds"],
        precisions=main["precisions"], precisions_applied=main["applied"],
        variants={k: {kk: vv for kk, vv in v.items() if kk not in ("precisions", "applied", "per_layer")}
                  | {"pool_precision": v["applied"]["gap"],
                     "per_layer_all_equal": all(r.get("mismatched_elements", 0) == 0 for r in v["per_layer"])}
                  for k, v in runs.items() if k != "mirror"},
        machine=machine(),
    )


# ---- CLI -------------------------------------------------------------------------
def _random_qnet(name: str, seed: int = 0) -> QNet:
    """A calibrated random network with non-zero biases (so rounding is exercised)."""
    from zynqflow.spec.topology import get_config
    from zynqflow.model.net import qnet_from_model
    from zynqflow.model.net import ZynqNet

    torch.manual_seed(seed)
    cfg = get_config(name)
    net = ZynqNet(cfg)
    with torch.no_grad():
        for u in net.units.values():
            u.bn.running_mean.uniform_(-0.5, 0.5)
            u.bn.bias.uniform_(-0.2, 0.2)
    s = cfg.input_size
    x = torch.randint(0, 256, (64, cfg.in_channels, s, s), dtype=torch.uint8)
    net.calibrate([x.float() / 256])
    return qnet_from_model(net)


def _table(r: dict) -> str:
    f = r["fps"]
    fmt = lambda v: "n/a" if v is None else f"{v:,.0f}"  # noqa: E731
    lines = [
        f"{r['network']} ({r['dataset'] or 'random'}), {r['frames']} frames, hls4ml {r['hls4ml_version']} "
        f"{r['io_type']}/{r['strategy']}",
        f"  frames with identical logits   {r['agree_fraction']:.4f}  (max |diff| {r['max_abs_diff']} LSB)",
    ]
    for k, v in r["variants"].items():
        lines.append(f"  ... with pool_accum={k:<9}     {v['agree_fraction']:.4f}  "
                     f"(max |diff| {v['max_abs_diff']} LSB)")
    lines += [
        f"  hls4ml compile                  {r['hls4ml_compile_seconds']:.1f} s",
        f"  frames/s  golden {fmt(f['golden'])}   zynqflow C-sim {fmt(f['zynqflow_csim'])}   "
        f"hls4ml C-sim {fmt(f['hls4ml_csim'])}",
    ]
    if r.get("zynqflow_csim_note"):
        lines.append(f"  zynqflow C-sim: {r['zynqflow_csim_note']}")
    lines.append("  why:")
    lines += [f"   - {s}" for s in r["disagreement_reasons"]]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--ckpt", help="checkpoint.pt (frames come from its dataset's test split)")
    g.add_argument("--random-net", metavar="PRESET", help="random calibrated network, random frames")
    p.add_argument("--frames", type=int, default=200)
    p.add_argument("--dataset", default=None,
                   help="with --random-net: take frames from this dataset's test split instead of noise")
    p.add_argument("--export", default=None, help="export directory for our C-sim (default: a temporary export)")
    p.add_argument("--out", default="build/bench/bitexact.json")
    p.add_argument("--work", default="build/bench/hls4ml", help="hls4ml project directories")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--io-type", default="io_stream", choices=("io_stream", "io_parallel"))
    p.add_argument("--strategy", default="Latency", choices=("Latency", "Resource"))
    p.add_argument("--no-variant", action="store_true", help="skip the pool_accum='auto' build")
    a = p.parse_args(argv)
    if a.ckpt:
        from zynqflow.model.data import load_dataset
        from zynqflow.export.exporter import load_checkpoint_qnet
        qnet = load_checkpoint_qnet(a.ckpt)
        ds = load_dataset(qnet.dataset or "synthetic", a.data_dir, size=qnet.cfg.input_size)
        frames = ds.test.subset(a.frames).hwc()
    else:
        qnet = _random_qnet(a.random_net)
        if a.dataset:
            from zynqflow.model.data import load_dataset
            qnet.dataset = a.dataset
            frames = load_dataset(a.dataset, a.data_dir, size=qnet.cfg.input_size).test.subset(a.frames).hwc()
        else:
            rng = np.random.default_rng(0)
            frames = rng.integers(0, 256, (a.frames,) + qnet.input_shape, dtype=np.uint8)
    r = compare(qnet, frames, a.export, a.work, a.io_type, a.strategy, variants=not a.no_variant)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(r, indent=2) + "\n")
    print(_table(r))
    print(f"-> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
