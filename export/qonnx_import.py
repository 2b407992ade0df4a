"""``zynqflow import model.onnx``: a QAT network exported by Brevitas (``export_qonnx``)
-> a NetConfig JSON and a checkpoint in the flow's format, checked bit-exact.

    zynqflow import model.onnx [--name NAME] [--out DIR] [--data FOLDER | --class-names a,b,..]

Writes ``<out>/<name>.json`` (the network, full form), ``<out>/checkpoint.pt`` (folded,
calibrated: ``make export CKPT=...`` reads it like a trained one) and ``<out>/import.json``
(what was mapped, the rounding analysis, the verification). Default ``<out>``:
``build/<name>/imported``. Then ``make export csim rtl-bench NET=<name> CKPT=<out>/checkpoint.pt``.

Accepted (a member of the family, docs/datasets-and-import.md): an input ``Quant``
(unsigned 8 bits, scale 2^-8, zero point 0); ``Conv`` with kernel 1 or 3, stride 1 or 2,
same padding, group 1, whose weights and bias are ``Quant`` of constants (per-tensor
power-of-two scales, zero point 0, weights <= 8 bits, bias at most the accumulator's
scale; no bias: a zero bias); ``Relu`` then ``Quant`` (unsigned, power-of-two scale, <= 8
bits); ``Concat`` on channels of tensors with one format; the final conv with a signed
``Quant`` (<= 16 bits); a global average pool (``GlobalAveragePool``, ``ReduceMean`` over H,
W, or an ``AveragePool`` over the whole map) over 2^k pixels, rounded to the logits' scale
by a ``Trunc`` (Brevitas ``TruncAvgPool2d``: zynqflow.export.brevitas_quant.gap_pool) or a
``Quant`` (k = 0: nothing to round); and ``Flatten``/``Reshape``/``Squeeze``/``Identity``.
Everything else is refused naming the node and the rule.

Rounding (the convs' is fixed: ties toward +inf): a ``Quant`` that rounds (its scale
coarser than its input's grid) is accepted only where its rounding is provably the
engine's: ``HALF_UP`` after a ``Relu`` (ties away from zero = toward +inf on values
>= 0). The final conv's ``Quant`` must not round (scale <= the accumulator's): no QONNX
rounding mode equals ties toward +inf on negative values. The pool's shift takes the
graph's mode (NetConfig.gap_round, spec.engine.GAP_ROUNDINGS): ``FLOOR`` -> floor,
``ROUND``/``HALF_EVEN`` -> half_even, ``HALF_UP`` -> half_away; any other is refused naming
the node and the mode. Constants (weights, biases) are rounded by the graph's own mode.

Bit-exactness: the golden model's logits are compared with the graph's own execution on
the frames (the test split of ``--data``, else seeded random frames), exactly: every node
in float64 numpy (``Quant`` by qonnx's own ``int_quant``), where every value is an integer
times a power of two below 2^53, so no result is rounded (onnxruntime's float32 Conv is
not exact once an accumulator passes 2^24).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from zynqflow.spec.numerics import QFormat
from zynqflow.spec.topology import INPUT, DesignRuleError, LayerSpec, NetConfig, check_rules


class ImportRefused(ValueError):
    """The graph is not a member of the family, or rounds differently: names node and rule."""

    def __init__(self, node: str, rule: str):
        self.node, self.rule = node, rule
        super().__init__(f"node '{node}': {rule}")


HOW_TO_ROUND = ("train it in Brevitas with zynqflow.export.brevitas_quant.ReLUQuant (rounding HALF_UP, "
                "= ties toward +inf after a ReLU) for every ReLU's act_quant")
HOW_POOL = ("pool the final conv's map with zynqflow.export.brevitas_quant.gap_pool(size) (Brevitas TruncAvgPool2d "
            "rounding FLOOR, or ROUND: ties to even), its input the final conv's QuantTensor "
            "(return_quant_tensor=True)")
# the rounding modes of a QONNX Trunc / Quant that the engine's pool shift implements (spec.engine.GAP_ROUNDINGS)
QONNX_GAP_ROUND = {"FLOOR": "floor", "ROUND": "half_even", "HALF_EVEN": "half_even", "HALF_UP": "half_away"}
HOW_LOGITS = ("give the final conv an output quantizer whose scale is at most its accumulator's, "
              "2^-(F_in + F_w): zynqflow.export.brevitas_quant.logit_quant(F_in + F_w), with a fixed-scale "
              "input (const_relu_quant) and weights (const_weight_quant)")


def _attr(node, name, default=None):
    import onnx

    for a in node.attribute:
        if a.name == name:
            v = onnx.helper.get_attribute_value(a)
            return v.decode() if isinstance(v, bytes) else v
    return default


def _pow2_frac(scale: np.ndarray, node: str, what: str) -> int:
    s = np.asarray(scale, np.float64).ravel()
    if s.size == 0:
        raise ImportRefused(node, f"{what}: empty scale")
    if s.size > 1 and not np.all(s == s[0]):
        raise ImportRefused(node, f"{what}: per-channel scales ({s.size} values); only one power-of-two scale "
                                  "per tensor is accepted (Brevitas: a *PerTensorFixedPoint quantizer)")
    v = float(s[0])
    if not (v > 0 and math.isfinite(v)):
        raise ImportRefused(node, f"{what}: scale {v} is not positive")
    m, e = math.frexp(v)
    if m != 0.5:
        raise ImportRefused(node, f"{what}: scale {v!r} is not a power of two (the engine shifts, it never "
                                  "multiplies; Brevitas: a *FixedPoint quantizer)")
    return 1 - e                       # v = 2^(e-1) = 2^-frac


@dataclass
class QuantInfo:
    node: str
    frac: int
    bits: int
    signed: bool
    narrow: bool
    mode: str


@dataclass
class Tensor:
    """A value of the graph as the walk knows it."""

    kind: str                        # const | input | act | acc | pooled
    value: np.ndarray | None = None  # const: float64 values (after its Quant: ints * 2^-frac)
    quant: QuantInfo | None = None   # const / act: its format
    size: int = 0                    # act / acc: spatial size
    channels: int = 0
    name: str = ""                   # act: our tensor name (or the layers it is made of)
    layers: list = field(default_factory=list)    # act made by a Concat: its writer layers
    conv: dict | None = None         # acc: the pending conv
    pool: dict | None = None         # pooled: node, k (2^k pixels), frac (the value's grid), mode (None: unrounded)


def _quant_info(node, consts, what: str) -> QuantInfo:
    scale, zp, bw = (consts.get(n) for n in node.input[1:4])
    if scale is None or zp is None or bw is None:
        raise ImportRefused(node.name, f"{what}: scale, zero point and bit width must be constants")
    if np.any(np.asarray(zp) != 0):
        raise ImportRefused(node.name, f"{what}: zero point {np.asarray(zp).ravel()[:4].tolist()}; the engine's "
                                       "integers have zero point 0 (Brevitas: a symmetric / unsigned quantizer)")
    bits = np.asarray(bw).ravel()
    if bits.size != 1 or bits[0] != int(bits[0]):
        raise ImportRefused(node.name, f"{what}: bit width {bits.tolist()} is not one integer")
    return QuantInfo(node.name, _pow2_frac(scale, node.name, what), int(bits[0]), bool(_attr(node, "signed", 1)),
                     bool(_attr(node, "narrow", 0)), str(_attr(node, "rounding_mode", "ROUND")).upper())


def _eval_quant(x: np.ndarray, q: QuantInfo) -> np.ndarray:
    """The graph's own Quant semantics, in float64 (qonnx.custom_op.general.quant.quant)."""
    from qonnx.custom_op.general.quant import quant

    return quant(np.asarray(x, np.float64), np.float64(2.0 ** -q.frac), np.float64(0.0), np.float64(q.bits),
                 int(q.signed), int(q.narrow), q.mode)


def _constants(graph) -> dict[str, np.ndarray]:
    from onnx import numpy_helper

    consts = {i.name: numpy_helper.to_array(i).astype(np.float64) if numpy_helper.to_array(i).dtype.kind == "f"
              else numpy_helper.to_array(i) for i in graph.initializer}
    for n in graph.node:
        if n.op_type == "Constant":
            consts[n.output[0]] = np.asarray(numpy_helper.to_array(_attr(n, "value")))
    return consts


@dataclass
class Imported:
    cfg: NetConfig
    weights: dict[str, np.ndarray]       # layer -> int64 OIHW
    biases: dict[str, np.ndarray]        # layer -> int64 at F_in + F_w
    w_fracs: dict[str, int]
    act_formats: dict[str, QFormat]      # tensor -> format
    report: list[dict]                   # one row per mapped node group
    input_name: str
    output_frac: int


def parse(path: Path, name: str = "imported", num_classes: int | None = None) -> Imported:
    """Map a QONNX graph onto the family (see the module docstring); :class:`ImportRefused`
    names the node and the rule for anything else."""
    import onnx

    try:
        model = onnx.load(str(path))
    except Exception as e:  # noqa: BLE001 - protobuf / file errors
        raise ImportRefused(str(path), f"not an ONNX file ({type(e).__name__}: {e})") from e
    g = model.graph
    consts = _constants(g)
    inputs = [i for i in g.input if i.name not in consts]
    if len(inputs) != 1:
        raise ImportRefused(str(path), f"{len(inputs)} graph inputs; the engine takes one image")
    dims = [d.dim_value for d in inputs[0].type.tensor_type.shape.dim]
    if len(dims) != 4 or dims[2] != dims[3] or dims[2] < 1 or dims[1] not in (1, 3):
        raise ImportRefused(inputs[0].name, f"input shape {dims}: expected N x C x S x S with C = 1 or 3")
    channels, size = dims[1], dims[2]
    vals: dict[str, Tensor] = {inputs[0].name: Tensor("input", size=size, channels=channels)}
    layers: list[dict] = []
    report: list[dict] = []
    fmt: dict[str, QFormat] = {}
    users: dict[str, int] = {}
    for n in g.node:
        for i in n.input:
            users[i] = users.get(i, 0) + 1
    pooled = None
    t_count = [0]

    def new_tensor() -> str:
        t_count[0] += 1
        return f"t{t_count[0]}"

    def finish_layer(acc: Tensor, q: QuantInfo, relu: bool, node) -> Tensor:
        c = acc.conv
        s = c["f_acc"] - q.frac                     # requantization shift
        where = f"{c['node']} -> {node.name}"
        if relu:
            if q.narrow:
                raise ImportRefused(node.name, "narrow-range activations: the engine saturates to the full range")
            bits = q.bits - 1 if q.signed else q.bits   # a signed Quant of values >= 0 keeps 2^(b-1) - 1 levels
            out = QFormat(bits, False, q.frac)
            if s > 0 and q.mode != "HALF_UP":
                raise ImportRefused(node.name, f"rounding_mode {q.mode} rounds this ReLU's output (shift {s}), and "
                                               "differs from the engine's ties toward +inf on ties: "
                                               f"{HOW_TO_ROUND}")
            rule = "no rounding (shift <= 0)" if s <= 0 else "HALF_UP on values >= 0 = ties toward +inf"
        else:
            if q.narrow or not q.signed:
                raise ImportRefused(node.name, "the final conv's output must be a signed, full-range Quant")
            out = QFormat(q.bits, True, q.frac)
            if s > 0:
                raise ImportRefused(node.name, f"the final conv's Quant rounds (its scale 2^-{q.frac} is coarser "
                                               f"than the accumulator's 2^-{c['f_acc']}); no QONNX rounding mode "
                                               f"equals ties toward +inf on negative values: {HOW_LOGITS}")
            rule = "no rounding (scale at most the accumulator's)"
        if q.bits > (16 if not relu else 8):
            raise ImportRefused(node.name, f"{q.bits}-bit {'activations' if relu else 'logits'}: the engine takes "
                                           f"at most {8 if relu else 16}")
        lname = f"l{len(layers) + 1}"
        t = new_tensor()
        layers.append(dict(name=lname, src=c["src"], dst=t, cin=c["cin"], cout=c["cout"], k=c["k"],
                           stride=c["stride"], relu=relu, w=c["w"], b=c["b"], w_frac=c["w_frac"]))
        fmt[t] = out
        report.append(dict(layer=lname, nodes=where, k=c["k"], stride=c["stride"], cin=c["cin"], cout=c["cout"],
                           relu=relu, weight=f"s{c['w_bits']}.F{c['w_frac']}", out=str(out), shift=s,
                           rounding=q.mode, rounding_rule=rule))
        return Tensor("act", quant=q, size=acc.size, channels=c["cout"], name=t, layers=[lname])

    for n in g.node:
        op, nm = n.op_type, n.name or n.output[0]
        if op == "Constant":
            continue
        ins = [vals.get(i) if i in vals else (Tensor("const", value=consts[i]) if i in consts else None)
               for i in n.input]
        if op != "Quant" and op not in ("Reshape", "Squeeze") and any(v is None for v in ins[:1]):
            raise ImportRefused(nm, f"{op} reads '{n.input[0]}', which the walk does not know")
        x = ins[0] if ins else None
        if op == "Quant":
            if x is None:
                raise ImportRefused(nm, f"Quant of '{n.input[0]}', which the walk does not know")
            q = _quant_info(n, consts, "Quant")
            if x.kind == "const":
                if x.quant is not None:
                    raise ImportRefused(nm, "a constant quantized twice")
                vals[n.output[0]] = Tensor("const", value=_eval_quant(x.value, q), quant=q)
            elif x.kind == "input":
                if (q.bits, q.signed, q.frac, q.narrow) != (8, False, 8, False):
                    raise ImportRefused(nm, f"input Quant of {'signed' if q.signed else 'unsigned'} {q.bits} bits "
                                            f"at scale 2^-{q.frac}{' narrow' if q.narrow else ''}: the engine reads "
                                            "unsigned 8-bit pixels at scale 2^-8, zero point 0 (x = pixel / 256; "
                                            "Brevitas: zynqflow.export.brevitas_quant.InputQuant)")
                vals[n.output[0]] = Tensor("act", quant=q, size=x.size, channels=x.channels, name=INPUT)
                fmt[INPUT] = QFormat(8, False, 8)
            elif x.kind == "acc":
                vals[n.output[0]] = finish_layer(x, q, bool(x.conv.get("relu")), n)
            elif x.kind == "act" and x.quant is not None:
                if (q.frac, q.bits, q.signed) != (x.quant.frac, x.quant.bits, x.quant.signed):
                    raise ImportRefused(nm, "a Quant that changes an activation's format outside a conv (the "
                                            "engine requantizes only at a conv's output)")
                vals[n.output[0]] = x
            elif x.kind == "pooled":
                if q.narrow:
                    raise ImportRefused(nm, "a narrow-range Quant after the global pool (the engine does not "
                                            "saturate its logits)")
                vals[n.output[0]] = round_pool(x, nm, q.mode, x.pool["frac"] - q.frac, q.frac, q.signed, q.bits)
            else:
                raise ImportRefused(nm, f"Quant of a {x.kind} tensor is not supported here")
        elif op == "Conv":
            if x.kind != "act" or x.quant is None:
                raise ImportRefused(nm, "Conv on an unquantized tensor (every conv input is a Quant'ed activation)")
            if len(ins) < 2 or ins[1] is None or ins[1].kind != "const" or ins[1].quant is None:
                raise ImportRefused(nm, "Conv weights must be a Quant of a constant")
            b = ins[2] if len(ins) > 2 and n.input[2] else None          # no bias (bias=False): a zero bias
            if b is not None and (b.kind != "const" or b.quant is None):
                raise ImportRefused(nm, "Conv bias must be a Quant of a constant (Brevitas: bias_quant=Int32Bias), "
                                        "or none")
            w = ins[1]
            k = list(_attr(n, "kernel_shape", w.value.shape[2:]))
            stride = list(_attr(n, "strides", [1, 1]))
            pads = list(_attr(n, "pads", [0, 0, 0, 0]))
            if k[0] != k[1] or k[0] not in (1, 3):
                raise ImportRefused(nm, f"kernel {k[0]}x{k[1]} is not allowed (only 1x1 and 3x3)")
            if stride[0] != stride[1] or stride[0] not in (1, 2):
                raise ImportRefused(nm, f"stride {stride} is not allowed (only 1 and 2)")
            if pads != [k[0] // 2] * 4 or _attr(n, "auto_pad", "NOTSET") not in ("NOTSET", ""):
                raise ImportRefused(nm, f"padding {pads}: only 'same' zero padding k // 2 is allowed")
            if _attr(n, "group", 1) != 1 or list(_attr(n, "dilations", [1, 1])) != [1, 1]:
                raise ImportRefused(nm, "grouped or dilated convolutions are not allowed")
            wq = w.quant
            if not wq.signed or wq.bits > 8:
                raise ImportRefused(wq.node, f"weights of {wq.bits} bits ({'signed' if wq.signed else 'unsigned'}): "
                                             "the engine takes signed weights of at most 8 bits")
            wint = np.rint(w.value * 2.0 ** wq.frac).astype(np.int64)
            f_acc = x.quant.frac + wq.frac
            cout, cin = wint.shape[:2]
            if b is None:
                bint = np.zeros(cout, np.int64)
            else:
                bq = b.quant
                if bq.frac > f_acc:
                    raise ImportRefused(bq.node, f"bias scale 2^-{bq.frac} is finer than the accumulator's "
                                                 f"2^-{f_acc} (Brevitas: bias_quant=Int32Bias)")
                bint = np.rint(b.value * 2.0 ** bq.frac).astype(np.int64) << (f_acc - bq.frac)
                if np.abs(bint).max(initial=0) > 2 ** 31 - 1:
                    raise ImportRefused(bq.node, "bias does not fit int32 at the accumulator's scale")
            if cin != x.channels:
                raise ImportRefused(nm, f"weights for {cin} input channels, the input has {x.channels}")
            src = x.name
            vals[n.output[0]] = Tensor("acc", size=-(-x.size // stride[0]), channels=cout, conv=dict(
                node=nm, src=src, cin=cin, cout=cout, k=k[0], stride=stride[0], w=wint, b=bint, w_frac=wq.frac,
                w_bits=wq.bits, f_acc=f_acc, relu=False))
        elif op == "Relu":
            if x.kind != "acc" or x.conv.get("relu"):
                raise ImportRefused(nm, "Relu must directly follow a Conv (then a Quant)")
            vals[n.output[0]] = Tensor("acc", size=x.size, channels=x.channels, conv=dict(x.conv, relu=True))
        elif op == "Concat":
            if _attr(n, "axis") not in (1, -3):
                raise ImportRefused(nm, "Concat only along channels")
            parts = ins
            if any(p is None or p.kind != "act" or not p.layers for p in parts):
                raise ImportRefused(nm, "Concat of tensors that are not conv outputs")
            f0 = fmt[parts[0].name]
            for tname, p in zip(n.input, parts):
                if fmt[p.name] != f0:
                    raise ImportRefused(nm, f"concatenated branches have formats {fmt[p.name]} and {f0}: they must "
                                            "share one (Brevitas: the same act_quant for both ReLUs)")
                if users.get(tname, 0) > 1:
                    raise ImportRefused(nm, f"the concatenated branch '{tname}' is also read elsewhere")
            t = new_tensor()
            off = 0
            for p in parts:
                for ln in p.layers:
                    l = next(l for l in layers if l["name"] == ln)
                    l["dst"], l["dst_offset"] = t, off + l.get("dst_offset", 0)
                off += p.channels
                fmt.pop(p.name, None)
            fmt[t] = f0
            vals[n.output[0]] = Tensor("act", quant=parts[0].quant, size=parts[0].size, channels=off, name=t,
                                       layers=[ln for p in parts for ln in p.layers])
        elif op in ("GlobalAveragePool", "ReduceMean", "AveragePool", "MaxPool", "GlobalMaxPool",
                    "QuantAvgPool2d", "TruncAvgPool2d"):
            global_pool = op == "GlobalAveragePool"
            if op == "ReduceMean":
                axes = _attr(n, "axes") or (consts[n.input[1]].tolist() if len(n.input) > 1 else None)
                global_pool = sorted(int(a) % 4 for a in (axes or [])) == [2, 3]
            if op in ("AveragePool", "QuantAvgPool2d", "TruncAvgPool2d") and x is not None:
                global_pool = list(_attr(n, "kernel_shape", _attr(n, "kernel", [0]))) in ([x.size, x.size], x.size)
            if not global_pool or "Max" in op:
                raise ImportRefused(nm, f"{op} is a pooling layer: not allowed (downsample with a strided 3x3 "
                                        "conv; the only pooling is the final global average pool)")
            if x.kind != "act" or not x.layers or fmt[x.name].signed is False:
                raise ImportRefused(nm, "the global average pool must read the final conv's signed output")
            k = 2 * (x.size.bit_length() - 1)          # 2^k pixels (sizes are powers of two)
            f = fmt[x.name].frac
            pooled = Tensor("pooled", size=1, channels=x.channels, name=x.name, layers=x.layers,
                            pool=dict(node=nm, k=k, frac=f + k, bits=fmt[x.name].bits, mode=None if k else "exact"))
            vals[n.output[0]] = pooled
        elif op == "Trunc":
            if x is None or x.kind != "pooled":
                raise ImportRefused(nm, "Trunc outside a global average pool (TruncAvgPool2d)")
            vals[n.output[0]] = trunc_pool(x, n, consts)
        elif op in ("Flatten", "Reshape", "Squeeze", "Identity", "Unsqueeze") and x is not None:
            vals[n.output[0]] = x
        elif op in ("MaxPool", "AveragePool"):
            raise ImportRefused(nm, f"{op}: pooling layers are not allowed")
        else:
            raise ImportRefused(nm, f"{op} is not an operation of the family (Quant, Conv, Relu, Concat, "
                                    "global average pool)")
    outs = [o.name for o in g.output]
    if len(outs) != 1 or outs[0] not in vals or vals[outs[0]].kind != "pooled":
        raise ImportRefused(outs[0] if outs else str(path), "the graph must end with the final conv's global "
                                                            "average pool")
    head = vals[outs[0]]
    pool = head.pool
    if pool["mode"] is None:
        raise ImportRefused(pool["node"], f"the mean over {1 << pool['k']} pixels is not rounded to the logits' "
                                          f"scale (a float average; the engine's pool shifts): {HOW_POOL}")
    ncls = num_classes or head.channels
    specs = [LayerSpec(l["name"], l["src"], l["dst"], l["cin"], l["cout"], l["k"], l["stride"], l["relu"],
                       l.get("dst_offset", 0)) for l in layers]
    out_fmt = fmt[head.name]
    gap_round = QONNX_GAP_ROUND.get(pool["mode"], "half_up")     # k = 0: exact, the default
    cfg = NetConfig(name=name, input_size=size, in_channels=channels, num_classes=ncls, layers=tuple(specs),
                    act_bits=8, weight_bits=8, out_bits=out_fmt.bits, gap_round=gap_round)
    if pool["k"]:
        report.append(dict(layer="pool", nodes=pool["node"], pixels=1 << pool["k"], shift=pool["k"],
                           rounding=pool["mode"], gap_round=gap_round,
                           rounding_rule=f"QONNX {pool['mode']} = the engine's pool rounding {gap_round} "
                                         "(spec.engine.GAP_ROUNDINGS)"))
    try:
        check_rules(cfg)
    except DesignRuleError as e:
        src = next((r["nodes"] for r in report if r["layer"] == e.layer), e.layer)
        raise ImportRefused(src, e.rule) from e
    return Imported(cfg, {l["name"]: l["w"] for l in layers}, {l["name"]: l["b"] for l in layers},
                    {l["name"]: l["w_frac"] for l in layers}, {t: f for t, f in fmt.items() if t != INPUT}, report,
                    inputs[0].name, pool["frac"])


def round_pool(x: Tensor, node: str, mode: str, shift: int, out_frac: int, signed: bool, bits: int) -> Tensor:
    """A Quant or Trunc of the pooled mean: its value, on the grid 2^-frac, divided by 2^shift and
    rounded by ``mode``, lands on the grid 2^-out_frac. Accepted when that is the engine's pool:
    the division is by 2^k exactly (the logits keep the final conv's grid: shift = k), the mode is
    one of the engine's (QONNX_GAP_ROUND), and the range holds every mean (no saturation)."""
    p = x.pool
    mode = str(mode).upper()
    logits = p["frac"] if p["mode"] is not None else p["frac"] - p["k"]     # the final conv's grid, F
    if shift != (0 if p["mode"] is not None else p["k"]) or out_frac != logits:
        raise ImportRefused(node, f"it rescales the pooled logits (from the grid 2^-{p['frac']} to 2^-{out_frac}); "
                                  f"the engine's pool divides the sum of {1 << p['k']} pixels by {1 << p['k']} once "
                                  f"and keeps the final conv's scale 2^-{logits}")
    if not signed or bits < p["bits"]:
        raise ImportRefused(node, f"a {'signed' if signed else 'unsigned'} {bits}-bit range after the pool: it "
                                  f"must hold every {p['bits']}-bit signed logit (the engine does not saturate "
                                  "the pool)")
    if p["mode"] is not None:                     # already rounded (or a 1x1 map): an exact re-quantization
        return x
    if mode not in QONNX_GAP_ROUND:
        raise ImportRefused(node, f"rounding_mode {mode} of the global average pool over {1 << p['k']} pixels: the "
                                  "engine's pool rounds FLOOR, ROUND/HALF_EVEN (ties to even) or HALF_UP (ties away "
                                  f"from zero): {HOW_POOL}")
    return Tensor("pooled", size=1, channels=x.channels, name=x.name, layers=x.layers,
                  pool=dict(p, frac=out_frac, mode=mode))


def trunc_pool(x: Tensor, n, consts: dict) -> Tensor:
    """A QONNX Trunc of the pooled mean (Brevitas TruncAvgPool2d): v1 (x, scale, zero point, in bits,
    out bits; output at ``scale``) or v2 (x, scale, zero point, in bits, out scale, out bits).
    It computes round(x / scale) / 2^t, rounded by its mode, times the output scale."""
    nm = n.name or n.output[0]
    args = [consts.get(i) for i in n.input[1:]]
    if len(args) not in (4, 5) or any(a is None for a in args):
        raise ImportRefused(nm, "Trunc: its scale, zero point and bit widths must be constants")
    if np.any(np.asarray(args[1]) != 0):
        raise ImportRefused(nm, "Trunc with a zero point (the engine's integers have zero point 0)")
    s_frac = _pow2_frac(args[0], nm, "Trunc scale")
    if s_frac < x.pool["frac"]:
        raise ImportRefused(nm, f"Trunc scale 2^-{s_frac} is coarser than the pooled sum's grid "
                                f"2^-{x.pool['frac']} (it would round twice)")
    if len(args) == 4:                            # v1: t = in bits - out bits, output at the input scale
        t = int(np.asarray(args[2]).ravel()[0]) - int(np.asarray(args[3]).ravel()[0])
        out_frac, bits, signed = s_frac, int(np.asarray(args[3]).ravel()[0]), True
    else:                                         # v2: t = log2(out scale / scale)
        out_frac = _pow2_frac(args[3], nm, "Trunc output scale")
        t, bits, signed = s_frac - out_frac, int(np.asarray(args[4]).ravel()[0]), bool(_attr(n, "signed", 1))
        if _attr(n, "narrow", 0):
            raise ImportRefused(nm, "a narrow-range Trunc after the global pool (the engine does not saturate "
                                    "its logits)")
    # the value on the grid 2^-frac is exactly x/scale * 2^(s_frac - frac); divided by 2^t
    return round_pool(x, nm, _attr(n, "rounding_mode", "FLOOR"), t - (s_frac - x.pool["frac"]), out_frac, signed,
                      bits)


# ---- the graph's own execution, exact ---------------------------------------------------
def _conv64(x: np.ndarray, w: np.ndarray, b: np.ndarray | None, k: int, s: int) -> np.ndarray:
    """NCHW float64 convolution, same padding; exact for integer-times-power-of-two values
    whose sums stay below 2^53 (they do: 32-bit accumulators)."""
    n, c, h, wd = x.shape
    p = k // 2
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    ho, wo = -(-h // s), -(-wd // s)
    cols = np.stack([xp[:, :, ky:ky + s * ho:s, kx:kx + s * wo:s] for ky in range(k) for kx in range(k)], 2)
    out = np.einsum("nckhw,ock->nohw", cols, w.reshape(w.shape[0], w.shape[1], k * k), optimize=True)
    return out + (b.reshape(1, -1, 1, 1) if b is not None else 0)


def execute_exact(path: Path, frames_nchw_u8: np.ndarray) -> np.ndarray:
    """The graph's output for uint8 frames (fed as pixel / 256), every node in float64."""
    import onnx

    model = onnx.load(str(path))
    g = model.graph
    consts = _constants(g)
    inp = next(i.name for i in g.input if i.name not in consts)
    env: dict[str, np.ndarray] = dict(consts)
    env[inp] = frames_nchw_u8.astype(np.float64) / 256.0
    for n in g.node:
        op = n.op_type
        if op == "Constant":
            continue
        a = [env[i] if i else None for i in n.input]
        if op == "Quant":
            q = QuantInfo(n.name, 0, 0, bool(_attr(n, "signed", 1)), bool(_attr(n, "narrow", 0)),
                          str(_attr(n, "rounding_mode", "ROUND")))
            from qonnx.custom_op.general.quant import quant
            y = quant(a[0], np.asarray(a[1], np.float64), np.asarray(a[2], np.float64), np.asarray(a[3], np.float64),
                      int(q.signed), int(q.narrow), q.mode)
        elif op == "Conv":
            k = int(a[1].shape[2])
            y = _conv64(a[0], a[1], a[2] if len(a) > 2 else None, k, int(_attr(n, "strides", [1, 1])[0]))
        elif op == "Relu":
            y = np.maximum(a[0], 0.0)
        elif op == "Concat":
            y = np.concatenate(a, axis=int(_attr(n, "axis")))
        elif op in ("GlobalAveragePool", "ReduceMean", "AveragePool"):
            y = a[0].mean(axis=(2, 3), keepdims=op != "ReduceMean" or bool(_attr(n, "keepdims", 1)))
        elif op == "Trunc":                      # qonnx's own semantics, v1 (5 inputs) or v2 (6)
            from qonnx.custom_op.general.trunc import trunc_v1, trunc_v2
            mode = str(_attr(n, "rounding_mode", "FLOOR"))
            y = trunc_v1(*a[:5], mode) if len(a) == 5 else \
                trunc_v2(*a[:4], int(_attr(n, "narrow", 0)), int(_attr(n, "signed", 1)), a[4], a[5], mode)
        elif op in ("Flatten", "Reshape", "Squeeze"):
            y = a[0].reshape(a[0].shape[0], -1)
        elif op in ("Identity", "Unsqueeze"):
            y = a[0]
        else:
            raise ImportRefused(n.name, f"{op}: not executable here")
        env[n.output[0]] = np.asarray(y, np.float64)
    out = env[g.output[0].name]
    return out.reshape(out.shape[0], -1)


# ---- the flow's checkpoint ----------------------------------------------------------------
def to_checkpoint(imp: Imported, source: str, dataset: dict | None = None) -> dict:
    """A checkpoint as ``make train`` writes it (folded, calibrated, QAT mode): float weights
    and biases that are exactly the imported integers times their powers of two."""
    import torch

    from zynqflow.model.net import ZynqNet, _key

    net = ZynqNet(imp.cfg)
    net.fold_bn()
    with torch.no_grad():
        for l in imp.cfg.conv_layers:
            u = net.units[_key(l.name)]
            fin = 8 if l.src == INPUT else imp.act_formats[l.src].frac
            u.conv.weight.copy_(torch.from_numpy(imp.weights[l.name] * 2.0 ** -imp.w_fracs[l.name]))
            u.conv.bias.copy_(torch.from_numpy(imp.biases[l.name] * 2.0 ** -(fin + imp.w_fracs[l.name])))
    net.act_formats = dict(imp.act_formats)
    net.weight_fracs = dict(imp.w_fracs)
    net.set_mode("qat")
    ck = net.checkpoint_state()
    ck.update(train_config=dict(net=imp.cfg.name, data=(dataset or {}).get("data") or ""),
              dataset=dataset or {}, imported_from=source,
              train=dict(epoch=0, qat=True, float_top1=None, done=True))
    return ck


def check_roundtrip(imp: Imported, ck: dict) -> None:
    """The checkpoint gives back exactly the imported integers (float32 holds them)."""
    from zynqflow.model.net import ZynqNet

    params = ZynqNet.from_checkpoint(ck).integer_params()
    for l in imp.cfg.conv_layers:
        p = params[l.name]
        if not (np.array_equal(p["w"].numpy(), imp.weights[l.name]) and np.array_equal(p["b"].numpy(),
                                                                                        imp.biases[l.name])):
            raise ImportRefused(l.name, "its integers do not survive the checkpoint's float32 (a bias beyond "
                                        "2^24 at the accumulator's scale)")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="zynqflow import", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("onnx", help="QONNX file (Brevitas export_qonnx)")
    p.add_argument("--name", default=None, help="network name (default: the file's stem)")
    p.add_argument("--out", default=None, help="output directory (default build/<name>/imported)")
    p.add_argument("--data", default=None, help="dataset the network was trained on (a folder of images, ...): "
                                                "its class names and its test split for the verification")
    p.add_argument("--class-names", default=None, help="comma-separated class names")
    p.add_argument("--frames", type=int, default=16, help="frames checked against the graph's execution")
    a = p.parse_args(argv)
    src = Path(a.onnx)
    name = a.name or src.stem
    out = Path(a.out or f"build/{name}/imported")
    try:
        if not src.is_file():
            raise ImportRefused(str(src), "no such file")
        imp = parse(src, name)
        names: tuple[str, ...] = ()
        dataset, frames = None, None
        if a.data:
            from zynqflow.model.data import load_dataset

            h, _, c = imp.cfg.input_size, 0, imp.cfg.in_channels
            ds = load_dataset(a.data, None, size=h, channels=c)
            names = ds.class_names
            frames = ds.test.images[:a.frames]
            dataset = dict(tag=ds.name, data=a.data, recipe=ds.recipe, class_names=list(names), channels=c,
                           path=str(Path(a.data).resolve()) if ds.recipe is not None else None)
        if a.class_names:
            names = tuple(s.strip() for s in a.class_names.split(","))
        if names and len(names) != imp.cfg.num_classes:
            raise ImportRefused(str(src), f"the network has {imp.cfg.num_classes} outputs, the data has "
                                          f"{len(names)} classes")
        from dataclasses import replace as dc_replace
        imp.cfg = dc_replace(imp.cfg, class_names=tuple(names))
        if frames is None:
            s = imp.cfg.input_size
            frames = np.random.default_rng(0).integers(0, 256, (a.frames, imp.cfg.in_channels, s, s), np.uint8)
        ck = to_checkpoint(imp, str(src.resolve()), dataset)
        check_roundtrip(imp, ck)
        verdict = verify(imp, ck, src, frames)
        out.mkdir(parents=True, exist_ok=True)
        import torch

        cfg_path = out / f"{name}.json"
        cfg_path.write_text(json.dumps(imp.cfg.to_dict(), indent=1) + "\n")
        torch.save(ck, out / "checkpoint.pt")
        (out / "import.json").write_text(json.dumps(dict(source=str(src.resolve()), network=name,
                                                         layers=imp.report, verification=verdict), indent=1) + "\n")
    except (ImportRefused, ValueError, OSError) as e:
        print(f"zynqflow import: refused, nothing written: {e}", file=sys.stderr)
        return 2
    print(f"imported {src} as {name}: {len(imp.cfg.layers)} conv layers, {imp.cfg.num_classes} classes; "
          f"{verdict['frames']} frames bit-exact against the graph's own execution -> {out}\n"
          f"next: make export csim rtl-bench NET={name} CKPT={out / 'checkpoint.pt'}")
    return 0


def verify(imp: Imported, ck: dict, src: Path, frames_nchw: np.ndarray) -> dict:
    """Golden logits of the imported network = the graph's exact execution, frame by frame."""
    from zynqflow.export.exporter import load_checkpoint_qnet  # noqa: F401 - same path as make export
    from zynqflow.model.net import ZynqNet, qnet_from_model
    from zynqflow.spec.golden import golden_logits

    qnet = qnet_from_model(ZynqNet.from_checkpoint(ck))
    gold = golden_logits(qnet, np.ascontiguousarray(frames_nchw.transpose(0, 2, 3, 1)))
    graph = execute_exact(src, frames_nchw)[:, :imp.cfg.num_classes]
    ours = gold.astype(np.float64) * 2.0 ** -imp.output_frac
    bad = np.flatnonzero(~np.all(ours == graph, axis=1))
    if bad.size:
        i = int(bad[0])
        raise ImportRefused(str(src), f"frame {i}: golden logits {ours[i].tolist()} differ from the graph's "
                                      f"execution {graph[i].tolist()} ({bad.size} of {len(frames_nchw)} frames)")
    return dict(frames=int(len(frames_nchw)), bit_exact=True, method="float64 numpy execution of every node "
                "(Quant by qonnx int_quant), exact: integers times powers of two below 2^53",
                output_format=str(qnet.output_format))


if __name__ == "__main__":
    sys.exit(main())
