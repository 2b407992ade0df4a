"""Network topology as data, the design-rule checker and the presets.

A network is a :class:`NetConfig`: an input, an ordered list of
:class:`LayerSpec` (convolutions that each write a slice of a named tensor;
a tensor written by several convolutions is their channel concatenation) and
a final global average pool. Fire modules are sugar that expand into three
``LayerSpec`` rows (squeeze, expand-1x1, expand-3x3).

Everything downstream (PyTorch module, exporter, HLS layer table, RTL ROMs,
characterization) is derived from the flattened ``NetConfig.layers``, and
every stage that evaluates the network walks it with :func:`run_graph`.

A network config file is JSON in one of two forms (``docs/config-schema.md``):
the full form (``name``, ``input_size``, ``in_channels``, ``num_classes``,
``layers``: a list of :class:`LayerSpec` objects, optional ``act_bits``,
``weight_bits``, ``out_bits``, ``class_names``, ``gap_round``) or the compact form (the same
top-level fields with ``stem`` and ``fires``: a list of :class:`FireSpec`
objects, optional ``head_channels`` and ``head_splits``, instead of
``layers``). :func:`validate_config` checks a config against that schema and
raises :class:`ConfigError` naming the file, the layer (index and name) or
fire module, and the field that is missing, unknown or of the wrong type.
"""

from __future__ import annotations

import json
from dataclasses import MISSING, asdict, dataclass, fields, replace
from pathlib import Path
from typing import Callable, Sequence, TypeVar

from .engine import GAP_ROUND

INPUT = "input"  # name of the network's input tensor

T = TypeVar("T")


class DesignRuleError(ValueError):
    """A topology or checkpoint breaks one of the FPGA design rules."""

    def __init__(self, layer: str, rule: str):
        self.layer = layer
        self.rule = rule
        super().__init__(f"layer '{layer}': {rule}")


@dataclass(frozen=True)
class LayerSpec:
    """One operation of the flattened network.

    ``kind`` is ``conv`` for every layer a legal network has; ``maxpool`` and
    ``avgpool`` exist only so that the rule checker can name and reject them.
    A conv reads tensor ``src`` (all its channels) and writes channels
    ``[dst_offset, dst_offset + cout)`` of tensor ``dst``.
    """

    name: str
    src: str
    dst: str
    cin: int
    cout: int
    k: int = 1
    stride: int = 1
    relu: bool = True
    dst_offset: int = 0
    kind: str = "conv"

    @property
    def pad(self) -> int:
        return self.k // 2


@dataclass(frozen=True)
class FireSpec:
    """A fire module: squeeze (1x1 s1, or 3x3 s2 when ``downsample``) then
    expand 1x1 and expand 3x3, concatenated (e1 channels first)."""

    squeeze: int
    expand1: int
    expand3: int
    downsample: bool = False


@dataclass(frozen=True)
class NetConfig:
    name: str
    input_size: int
    in_channels: int
    num_classes: int
    layers: tuple[LayerSpec, ...]
    act_bits: int = 8
    weight_bits: int = 8
    out_bits: int = 16
    class_names: tuple[str, ...] = ()
    gap_round: str = "half_up"      # the global average pool's rounding (spec.engine.GAP_ROUNDINGS)

    # ---- derived views -------------------------------------------------
    @property
    def conv_layers(self) -> list[LayerSpec]:
        return [l for l in self.layers if l.kind == "conv"]

    @property
    def output_tensor(self) -> str:
        return self.layers[-1].dst

    def tensor_shapes(self) -> dict[str, tuple[int, int]]:
        """``{tensor: (spatial size, channels)}`` in creation order."""
        shapes: dict[str, tuple[int, int]] = {INPUT: (self.input_size, self.in_channels)}
        for l in self.layers:
            size = shapes[l.src][0]
            out = (size + l.stride - 1) // l.stride if l.kind == "conv" else size // max(l.stride, 1)
            prev = shapes.get(l.dst, (out, 0))
            shapes[l.dst] = (out, max(prev[1], l.dst_offset + l.cout))
        return shapes

    def layer_sizes(self, layer: LayerSpec) -> tuple[int, int]:
        """(input spatial size, output spatial size) of one layer."""
        shapes = self.tensor_shapes()
        return shapes[layer.src][0], shapes[layer.dst][0]

    @property
    def out_channels(self) -> int:
        return self.tensor_shapes()[self.output_tensor][1]

    def to_dict(self) -> dict:
        d = asdict(self)
        d["layers"] = [asdict(l) for l in self.layers]
        if self.gap_round == "half_up":      # the default: left out, so existing configs and IDs stay as they were
            del d["gap_round"]
        return d

    @staticmethod
    def from_dict(d: dict, source: str = "network config") -> "NetConfig":
        """A config in the full or the compact form, checked against the schema first
        (:func:`validate_config`; ``source`` names the file in errors)."""
        validate_config(d, source)
        d = dict(d)
        if "fires" in d:  # compact form: stem + fires + head
            return fire_net(
                name=d["name"],
                input_size=d["input_size"],
                in_channels=d["in_channels"],
                num_classes=d["num_classes"],
                stem=d["stem"],
                fires=[FireSpec(**f) for f in d["fires"]],
                head_channels=d.get("head_channels"),
                head_splits=d.get("head_splits", 1),
                class_names=tuple(d.get("class_names", ())),
                **{k: d[k] for k in ("act_bits", "weight_bits", "out_bits", "gap_round") if k in d},
            )
        d["layers"] = tuple(LayerSpec(**l) for l in d["layers"])
        d["class_names"] = tuple(d.get("class_names", ()))
        return NetConfig(**d)

    def with_input(self, in_channels: int | None = None, input_size: int | None = None,
                   num_classes: int | None = None) -> "NetConfig":
        """The same topology for another input (e.g. RGB CIFAR-10 vs gray
        Fashion-MNIST). Changing ``input_size`` keeps every layer."""
        layers = list(self.layers)
        if in_channels is not None:
            layers = [replace(l, cin=in_channels) if l.src == INPUT else l for l in layers]
        cfg = replace(self, layers=tuple(layers),
                      in_channels=in_channels or self.in_channels,
                      input_size=input_size or self.input_size)
        if num_classes is not None and num_classes != self.num_classes:
            raise ValueError("changing the class count changes the head; build a new config")
        return cfg


# ---- JSON configs: schema and validation -----------------------------------
class ConfigError(ValueError):
    """A network config does not match the schema (``docs/config-schema.md``). The
    message names the file, the layer (index and name) or fire module, and the field."""

    def __init__(self, source: str, where: str, problem: str):
        self.source, self.where, self.problem = source, where, problem
        super().__init__(f"{source}: not a valid network config: {where + ': ' if where else ''}{problem}")


_TYPES = {"str": (str, "a string"), "int": (int, "an integer"), "bool": (bool, "true or false")}


def _dataclass_schema(cls, minimum: dict[str, int]) -> dict[str, tuple[str, bool, int | None]]:
    """``{field: (type name, required, minimum)}`` from a dataclass's fields."""
    return {f.name: (str(f.type), f.default is MISSING, minimum.get(f.name)) for f in fields(cls)}


_COMMON = {"name": ("str", True, None), "input_size": ("int", True, 1), "in_channels": ("int", True, 1),
           "num_classes": ("int", True, 1), "act_bits": ("int", False, 1), "weight_bits": ("int", False, 1),
           "out_bits": ("int", False, 1), "class_names": ("list[str]", False, None),
           "gap_round": ("str", False, None)}
# the schema, per form: field -> (type, required, minimum)
CONFIG_SCHEMA = {
    "full": {**_COMMON, "layers": ("list[layer]", True, None)},
    "compact": {**_COMMON, "stem": ("int", True, 1), "fires": ("list[fire]", True, None),
                "head_channels": ("int|null", False, 1), "head_splits": ("int", False, 1)},
    "layer": _dataclass_schema(LayerSpec, {"cin": 1, "cout": 1, "k": 1, "stride": 1, "dst_offset": 0}),
    "fire": _dataclass_schema(FireSpec, {"squeeze": 1, "expand1": 1, "expand3": 1}),
}


def _check_fields(obj, schema: dict, source: str, where: str) -> None:
    what = where or "the config"
    if not isinstance(obj, dict):
        raise ConfigError(source, where, f"{what} must be a JSON object, not {type(obj).__name__}")
    required = [k for k, (_, req, _) in schema.items() if req]
    for key in required:
        if key not in obj:
            raise ConfigError(source, where, f"missing field '{key}' (required: {', '.join(required)})")
    for key, value in obj.items():
        if key not in schema:
            raise ConfigError(source, where, f"unknown field '{key}' (fields: {', '.join(schema)})")
        typ, _, lo = schema[key]
        if typ.startswith("list["):
            if not isinstance(value, (list, tuple)):        # tuple: from NetConfig.to_dict()
                raise ConfigError(source, where, f"field '{key}' must be a list, got {json.dumps(value)}")
            if typ == "list[str]" and not all(isinstance(v, str) for v in value):
                raise ConfigError(source, where, f"field '{key}' must be a list of strings")
            continue
        if typ == "int|null" and value is None:
            continue
        py, want = _TYPES[typ.split("|")[0]]
        if not isinstance(value, py) or (py is int and isinstance(value, bool)):
            raise ConfigError(source, where, f"field '{key}' must be {want}, got {json.dumps(value)} "
                                             f"({type(value).__name__})")
        if lo is not None and value < lo:
            raise ConfigError(source, where, f"field '{key}' must be >= {lo}, got {value}")


def validate_config(d, source: str = "network config") -> str:
    """Check a config dict against :data:`CONFIG_SCHEMA`; returns its form (``full`` or
    ``compact``). Raises :class:`ConfigError` for a missing, unknown or wrongly typed
    field, naming ``source``, the layer (``layers[i] 'name'``) or ``fires[i]``, and the field."""
    if not isinstance(d, dict):
        raise ConfigError(source, "", f"a network config is a JSON object, not {type(d).__name__}")
    compact, full = "stem" in d or "fires" in d, "layers" in d
    if compact and full:
        raise ConfigError(source, "", "has both 'layers' (full form) and 'stem'/'fires' (compact form); use one")
    if not compact and not full:
        raise ConfigError(source, "", "needs 'layers' (full form) or 'stem' and 'fires' (compact form)")
    form = "compact" if compact else "full"
    _check_fields(d, CONFIG_SCHEMA[form], source, "")
    items, kind = (d["fires"], "fire") if compact else (d["layers"], "layer")
    for i, item in enumerate(items):
        name = item.get("name") if isinstance(item, dict) else None
        where = f"{kind}s[{i}]" + (f" '{name}'" if isinstance(name, str) else "")
        _check_fields(item, CONFIG_SCHEMA[kind], source, where)
    if "gap_round" in d and d["gap_round"] not in GAP_ROUND:
        raise ConfigError(source, "", f"field 'gap_round' is {json.dumps(d['gap_round'])}; the global average pool "
                                      f"rounds {', '.join(GAP_ROUND)} (docs/fixed-point.md)")
    names = d.get("class_names") or []
    if names and len(names) != d["num_classes"]:
        raise ConfigError(source, "", f"field 'class_names' has {len(names)} names for num_classes "
                                      f"{d['num_classes']}")
    return form


# ---------------------------------------------------------------------------
def run_graph(layers: Sequence, x: T, apply: Callable[[object, T], T],
              concat: Callable[[list[T]], T], on_tensor: Callable[[str, T], None] | None = None
              ) -> dict[str, T]:
    """Evaluate the tensor graph of ``layers`` (LayerSpec or anything with
    ``src``/``dst``) on the input ``x``: the one walk every stage uses.

    ``apply(layer, source_tensor)`` computes one layer's output slice;
    ``concat(pieces)`` joins the slices written into one tensor, in layer
    order (the channel concatenation). A tensor is assembled when a layer
    first reads it, and the rest (the network's output) at the end.
    ``on_tensor(name, value)`` sees every assembled tensor but the input.
    Returns ``{tensor name: value}`` including ``INPUT``."""
    tensors: dict[str, T] = {INPUT: x}
    pieces: dict[str, list[T]] = {}

    def assemble(name: str) -> None:
        tensors[name] = concat(pieces.pop(name))
        if on_tensor is not None:
            on_tensor(name, tensors[name])

    for l in layers:
        if l.src not in tensors:
            assemble(l.src)
        pieces.setdefault(l.dst, []).append(apply(l, tensors[l.src]))
    for name in list(pieces):
        assemble(name)
    return tensors


def fire_net(name: str, input_size: int, in_channels: int, num_classes: int, stem: int,
             fires: list[FireSpec], head_channels: int | None = None, head_splits: int = 1,
             **kw) -> NetConfig:
    """Build the flattened layer list of a ZynqNet-style network:
    ``c1`` (3x3 s2 stem), fire modules ``f2, f3, ...``, the final 1x1 conv
    (split into ``head_splits`` concatenated parts ``p1, p2, ...`` as in
    ZynqNet's c10), then the global average pool."""
    layers: list[LayerSpec] = [LayerSpec("c1", INPUT, "c1", in_channels, stem, k=3, stride=2)]
    src, ch = "c1", stem
    for i, f in enumerate(fires, start=2):
        fn = f"f{i}"
        sq = f"{fn}/s3" if f.downsample else f"{fn}/s1"
        layers.append(LayerSpec(sq, src, sq, ch, f.squeeze, k=3 if f.downsample else 1,
                                stride=2 if f.downsample else 1))
        layers.append(LayerSpec(f"{fn}/e1", sq, fn, f.squeeze, f.expand1, k=1))
        layers.append(LayerSpec(f"{fn}/e3", sq, fn, f.squeeze, f.expand3, k=3, dst_offset=f.expand1))
        src, ch = fn, f.expand1 + f.expand3
    head = f"c{len(fires) + 2}"
    out = head_channels or num_classes
    if out % head_splits:
        raise DesignRuleError(head, f"{out} output channels do not split into {head_splits} equal parts")
    part = out // head_splits
    for p in range(head_splits):
        lname = head if head_splits == 1 else f"{head}/p{p + 1}"
        layers.append(LayerSpec(lname, src, head, ch, part, k=1, relu=False, dst_offset=p * part))
    return NetConfig(name=name, input_size=input_size, in_channels=in_channels,
                     num_classes=num_classes, layers=tuple(layers), **kw)


# ---------------------------------------------------------------------------
def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def check_rules(cfg: NetConfig) -> None:
    """Raise :class:`DesignRuleError` naming the first layer that breaks a rule.

    Rules: power-of-two spatial sizes everywhere; kernels 1 or 3, strides 1 or
    2 (3x3 zero-padded by 1); no pooling but the final global average;
    concatenated branches share size, activation (hence signedness) and bit
    width, so they can share one fixed-point format; every conv reads a tensor
    that exists with the channel count it expects; the output tensor is
    written by the last layers and carries at least ``num_classes`` channels.
    """
    if not cfg.layers:
        raise DesignRuleError(cfg.name, "network has no layers")
    if not _pow2(cfg.input_size):
        raise DesignRuleError(INPUT, f"input size {cfg.input_size} is not a power of two")
    if cfg.in_channels < 1:
        raise DesignRuleError(INPUT, "input needs at least one channel")
    if cfg.gap_round not in GAP_ROUND:
        raise DesignRuleError(cfg.name, f"gap_round {cfg.gap_round!r} is not a rounding of the global average pool "
                                        f"({', '.join(GAP_ROUND)})")
    for bits, what in ((cfg.act_bits, "act_bits"), (cfg.weight_bits, "weight_bits"), (cfg.out_bits, "out_bits")):
        if not 2 <= bits <= 16:
            raise DesignRuleError(cfg.name, f"{what}={bits} is outside 2..16")
    sizes: dict[str, int] = {INPUT: cfg.input_size}
    channels: dict[str, int] = {INPUT: cfg.in_channels}
    writers: dict[str, list[LayerSpec]] = {}
    finished: set[str] = {INPUT}  # tensors that have been read (no more writes allowed)
    names: set[str] = set()
    for l in cfg.layers:
        if l.name in names:
            raise DesignRuleError(l.name, "duplicate layer name")
        names.add(l.name)
        if l.kind in ("maxpool", "avgpool", "pool"):
            raise DesignRuleError(l.name, f"{l.kind} is not allowed: downsample with a strided 3x3 conv; "
                                          "the only pooling is the final global average pool")
        if l.kind != "conv":
            raise DesignRuleError(l.name, f"unknown layer kind '{l.kind}' (only conv)")
        if l.k not in (1, 3):
            raise DesignRuleError(l.name, f"kernel {l.k}x{l.k} is not allowed (only 1x1 and 3x3)")
        if l.stride not in (1, 2):
            raise DesignRuleError(l.name, f"stride {l.stride} is not allowed (only 1 and 2)")
        if l.src not in sizes:
            raise DesignRuleError(l.name, f"reads tensor '{l.src}' before anything writes it")
        if l.src == l.dst:
            raise DesignRuleError(l.name, "reads and writes the same tensor")
        finished.add(l.src)
        if channels[l.src] != l.cin:
            raise DesignRuleError(l.name, f"expects {l.cin} input channels but '{l.src}' has {channels[l.src]}")
        if l.cin < 1 or l.cout < 1:
            raise DesignRuleError(l.name, "channel counts must be positive")
        size = sizes[l.src]
        if l.stride == 2 and size < 2:
            raise DesignRuleError(l.name, "stride 2 on a 1x1 map")
        out = size // l.stride
        if not _pow2(out):
            raise DesignRuleError(l.name, f"output size {out} is not a power of two")
        if l.dst in finished:
            raise DesignRuleError(l.name, f"writes tensor '{l.dst}' after it has been read")
        ws = writers.setdefault(l.dst, [])
        if ws:
            first = ws[0]
            if sizes[l.dst] != out:
                raise DesignRuleError(l.name, f"concatenated with '{first.name}' but its output is "
                                              f"{out}x{out}, not {sizes[l.dst]}x{sizes[l.dst]}")
            if first.relu != l.relu:
                raise DesignRuleError(l.name, f"concatenated with '{first.name}' but ReLU differs, so the "
                                              "branches cannot share one fixed-point format (signedness)")
            if l.dst_offset != channels[l.dst]:
                raise DesignRuleError(l.name, f"writes channels from {l.dst_offset} but '{l.dst}' is filled "
                                              f"up to {channels[l.dst]} (gaps or overlaps are not allowed)")
        elif l.dst_offset != 0:
            raise DesignRuleError(l.name, f"first writer of '{l.dst}' must start at channel 0")
        ws.append(l)
        sizes[l.dst] = out
        channels[l.dst] = l.dst_offset + l.cout
    last = cfg.layers[-1].dst
    for l in cfg.layers:
        if l.dst == last and l.relu:
            raise DesignRuleError(l.name, "the final conv (the logits) must not have a ReLU")
    if channels[last] < cfg.num_classes:
        raise DesignRuleError(cfg.layers[-1].name, f"outputs {channels[last]} channels for "
                                                   f"{cfg.num_classes} classes")
    for t in writers:
        if t != last and t not in finished:
            raise DesignRuleError(writers[t][0].name, f"tensor '{t}' is written but never read")


# ---------------------------------------------------------------------------
FASHION_CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                   "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer",
                   "dog", "frog", "horse", "ship", "truck")


def _zynqnet() -> NetConfig:
    """ZynqNet CNN (Gschwend 2016), ImageNet, 256x256x3, exactly."""
    fires = [
        FireSpec(16, 64, 64, downsample=True),    # f2: 128 -> 64
        FireSpec(16, 64, 64),                     # f3
        FireSpec(32, 128, 128, downsample=True),  # f4: 64 -> 32
        FireSpec(32, 128, 128),                   # f5
        FireSpec(64, 256, 256, downsample=True),  # f6: 32 -> 16
        FireSpec(64, 192, 192),                   # f7
        FireSpec(112, 256, 256, downsample=True), # f8: 16 -> 8
        FireSpec(112, 368, 368),                  # f9
    ]
    return fire_net("zynqnet", 256, 3, 1000, stem=64, fires=fires, head_channels=1024, head_splits=2)


def _zynqnet_mini() -> NetConfig:
    """32x32 (Fashion-MNIST padded, or CIFAR-10), 10 classes. Power-of-two
    channels throughout so N_PE=16 x N_CI=8 divide every layer but the stem's
    input and the 10-class head."""
    fires = [
        FireSpec(16, 32, 32),                     # f2 @16
        FireSpec(32, 64, 64, downsample=True),    # f3: 16 -> 8
        FireSpec(32, 64, 64),                     # f4 @8
        FireSpec(64, 64, 64, downsample=True),    # f5: 8 -> 4
    ]
    return fire_net("zynqnet-mini", 32, 1, 10, stem=64, fires=fires, class_names=FASHION_CLASSES)


def _zynqnet_tiny() -> NetConfig:
    """A few layers on 16x16 input, for fast tests."""
    fires = [FireSpec(8, 8, 8, downsample=True)]
    return fire_net("zynqnet-tiny", 16, 1, 10, stem=8, fires=fires, class_names=FASHION_CLASSES)


def _zynqnet_rgb() -> NetConfig:
    """RGB 32x32 (CIFAR-10-class data), 10 classes, 1.33 M parameters (under
    FINN CNV's 1.5 M), 45 M MACs: CNV's 64-128-256 channel progression as fire
    modules, two per map size. Chosen with the search's hardware models
    (docs/dse.md): the largest of the candidates that keeps >= 500 frames/s
    on a 256-MAC engine inside the xc7z020 (weights streamed through a ring)."""
    fires = [
        FireSpec(32, 64, 64),                     # f2 @16
        FireSpec(32, 64, 64),                     # f3 @16
        FireSpec(64, 128, 128, downsample=True),  # f4: 16 -> 8
        FireSpec(64, 128, 128),                   # f5 @8
        FireSpec(128, 256, 256, downsample=True), # f6: 8 -> 4
        FireSpec(128, 256, 256),                  # f7 @4
    ]
    return fire_net("zynqnet-rgb", 32, 3, 10, stem=64, fires=fires, class_names=CIFAR10_CLASSES)


PRESETS = {"zynqnet": _zynqnet, "zynqnet-mini": _zynqnet_mini, "zynqnet-tiny": _zynqnet_tiny,
           "zynqnet-rgb": _zynqnet_rgb}


def get_config(name_or_path: str, in_channels: int | None = None, input_size: int | None = None) -> NetConfig:
    """A preset by name, or a JSON config file (full ``layers`` list or the
    compact ``stem``/``fires`` form). The rule checker always runs."""
    if name_or_path in PRESETS:
        cfg = PRESETS[name_or_path]()
    else:
        p = Path(name_or_path)
        if not p.is_file():
            raise ValueError(f"unknown network '{name_or_path}': not a preset "
                             f"({', '.join(PRESETS)}) and no such config file")
        try:
            raw = json.loads(p.read_text())
        except json.JSONDecodeError as e:
            raise ConfigError(str(p), "", f"not JSON (line {e.lineno}, column "
                                          f"{e.colno}: {e.msg})") from e
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(str(p), "", f"cannot read the network config ({e})") from e
        cfg = NetConfig.from_dict(raw, source=str(p))
    if in_channels is not None or input_size is not None:
        cfg = cfg.with_input(in_channels=in_channels, input_size=input_size)
    check_rules(cfg)
    return cfg
