"""Design-rule checker and presets."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from zynqflow.spec.topology import (INPUT, PRESETS, DesignRuleError, FireSpec, LayerSpec, NetConfig,
                                   check_rules, fire_net, get_config)


def small_net(**kw) -> NetConfig:
    """16x16 gray input, c1 + one fire + 10-class head (like zynqnet-tiny)."""
    return fire_net("t", 16, 1, 10, stem=8, fires=[FireSpec(8, 8, 8, downsample=True)], **kw)


def with_layers(cfg: NetConfig, layers) -> NetConfig:
    return replace(cfg, layers=tuple(layers))


def rejects(cfg: NetConfig, layer: str, *parts: str) -> DesignRuleError:
    with pytest.raises(DesignRuleError) as e:
        check_rules(cfg)
    assert e.value.layer == layer, str(e.value)
    msg = str(e.value)
    assert f"layer '{layer}'" in msg
    for p in parts:
        assert p in msg, f"{p!r} not in {msg!r}"
    return e.value


# ---- presets -------------------------------------------------------------------
@pytest.mark.parametrize("name", ["zynqnet", "zynqnet-mini", "zynqnet-tiny"])
def test_presets_pass(name):
    cfg = get_config(name)
    check_rules(cfg)
    assert cfg.name == name and name in PRESETS
    assert all(l.kind == "conv" for l in cfg.layers)
    assert not any(l.relu for l in cfg.layers if l.dst == cfg.output_tensor)
    assert cfg.out_channels >= cfg.num_classes


def test_mini_and_tiny_shapes():
    mini, tiny = get_config("zynqnet-mini"), get_config("zynqnet-tiny")
    assert (mini.input_size, mini.in_channels, mini.num_classes) == (32, 1, 10)
    assert mini.tensor_shapes()[mini.output_tensor] == (4, 10)
    assert (tiny.input_size, tiny.in_channels, tiny.num_classes) == (16, 1, 10)
    assert [l.name for l in tiny.layers] == ["c1", "f2/s3", "f2/e1", "f2/e3", "c3"]
    assert tiny.tensor_shapes() == {INPUT: (16, 1), "c1": (8, 8), "f2/s3": (4, 8), "f2": (4, 16), "c3": (4, 10)}


# name, input size, cin, cout, k, stride, relu
ZYNQNET = [
    ("c1", 256, 3, 64, 3, 2, True),
    ("f2/s3", 128, 64, 16, 3, 2, True),
    ("f2/e1", 64, 16, 64, 1, 1, True),
    ("f2/e3", 64, 16, 64, 3, 1, True),
    ("f3/s1", 64, 128, 16, 1, 1, True),
    ("f3/e1", 64, 16, 64, 1, 1, True),
    ("f3/e3", 64, 16, 64, 3, 1, True),
    ("f4/s3", 64, 128, 32, 3, 2, True),
    ("f4/e1", 32, 32, 128, 1, 1, True),
    ("f4/e3", 32, 32, 128, 3, 1, True),
    ("f5/s1", 32, 256, 32, 1, 1, True),
    ("f5/e1", 32, 32, 128, 1, 1, True),
    ("f5/e3", 32, 32, 128, 3, 1, True),
    ("f6/s3", 32, 256, 64, 3, 2, True),
    ("f6/e1", 16, 64, 256, 1, 1, True),
    ("f6/e3", 16, 64, 256, 3, 1, True),
    ("f7/s1", 16, 512, 64, 1, 1, True),
    ("f7/e1", 16, 64, 192, 1, 1, True),
    ("f7/e3", 16, 64, 192, 3, 1, True),
    ("f8/s3", 16, 384, 112, 3, 2, True),
    ("f8/e1", 8, 112, 256, 1, 1, True),
    ("f8/e3", 8, 112, 256, 3, 1, True),
    ("f9/s1", 8, 512, 112, 1, 1, True),
    ("f9/e1", 8, 112, 368, 1, 1, True),
    ("f9/e3", 8, 112, 368, 3, 1, True),
    ("c10/p1", 8, 736, 512, 1, 1, False),
    ("c10/p2", 8, 736, 512, 1, 1, False),
]


def test_zynqnet_topology_exact():
    cfg = get_config("zynqnet")
    assert (cfg.input_size, cfg.in_channels, cfg.num_classes) == (256, 3, 1000)
    got = [(l.name, cfg.layer_sizes(l)[0], l.cin, l.cout, l.k, l.stride, l.relu) for l in cfg.layers]
    assert got == ZYNQNET
    for l in cfg.layers:
        assert l.pad == (1 if l.k == 3 else 0)
        size_in, size_out = cfg.layer_sizes(l)
        assert size_out == size_in // l.stride
    # expand 1x1 first, then expand 3x3 in the same tensor; c10 halves concatenated to 1024
    layers = {l.name: l for l in cfg.layers}
    for i in range(2, 10):
        e1, e3 = layers[f"f{i}/e1"], layers[f"f{i}/e3"]
        assert e1.dst == e3.dst == f"f{i}" and e1.dst_offset == 0 and e3.dst_offset == e1.cout
    p1, p2 = layers["c10/p1"], layers["c10/p2"]
    assert p1.src == p2.src == "f9" and p1.dst == p2.dst == "c10"
    assert (p1.dst_offset, p2.dst_offset) == (0, 512)
    assert cfg.output_tensor == "c10" and cfg.tensor_shapes()["c10"] == (8, 1024)
    assert cfg.out_channels == 1024


def test_zynqnet_reduced_input():
    cfg = get_config("zynqnet", input_size=32)
    assert cfg.input_size == 32 and len(cfg.layers) == len(ZYNQNET)
    assert cfg.tensor_shapes()["c10"] == (1, 1024)
    with pytest.raises(DesignRuleError) as e:
        get_config("zynqnet", input_size=16)  # f8/s3 would stride a 1x1 map
    assert e.value.layer == "f8/s3" and "stride 2 on a 1x1 map" in str(e.value)


def test_with_input_channels():
    cfg = get_config("zynqnet-mini", in_channels=3)
    assert cfg.in_channels == 3 and cfg.layers[0].cin == 3 and cfg.layers[1].cin == 64
    with pytest.raises(ValueError, match="class count"):
        cfg.with_input(num_classes=100)


# ---- rejections ----------------------------------------------------------------
def test_reject_maxpool():
    cfg = small_net()
    ls = list(cfg.layers)
    ls.insert(1, LayerSpec("pool1", "c1", "pool1", 8, 8, k=3, stride=2, kind="maxpool"))
    e = rejects(with_layers(cfg, ls), "pool1", "maxpool is not allowed", "strided 3x3 conv")
    assert "global average" in e.rule


def test_reject_avgpool_and_unknown_kind():
    cfg = small_net()
    ls = list(cfg.layers)
    rejects(with_layers(cfg, [ls[0], replace(ls[1], kind="avgpool")] + ls[2:]), "f2/s3", "avgpool is not allowed")
    rejects(with_layers(cfg, [ls[0], replace(ls[1], kind="dense")] + ls[2:]), "f2/s3", "unknown layer kind 'dense'")


@pytest.mark.parametrize("size", [28, 27, 48, 0])
def test_reject_input_size(size):
    rejects(replace(small_net(), input_size=size), INPUT, f"input size {size} is not a power of two")
    if size:
        with pytest.raises(DesignRuleError, match="not a power of two"):
            get_config("zynqnet-mini", input_size=size)


def test_reject_kernel_5():
    cfg = small_net()
    ls = list(cfg.layers)
    ls[2] = replace(ls[2], k=5)  # f2/e1
    rejects(with_layers(cfg, ls), "f2/e1", "kernel 5x5 is not allowed", "only 1x1 and 3x3")


def test_reject_stride_3():
    cfg = small_net()
    ls = list(cfg.layers)
    ls[0] = replace(ls[0], stride=3)
    rejects(with_layers(cfg, ls), "c1", "stride 3 is not allowed", "only 1 and 2")


def test_reject_concat_different_relu():
    cfg = small_net()
    ls = list(cfg.layers)
    ls[3] = replace(ls[3], relu=False)  # f2/e3 signed, f2/e1 unsigned, same tensor f2
    rejects(with_layers(cfg, ls), "f2/e3", "concatenated with 'f2/e1'", "ReLU differs", "signedness")


def test_reject_concat_different_size():
    cfg = small_net()
    ls = list(cfg.layers)
    ls[3] = replace(ls[3], stride=2)  # f2/e3 halves the map, f2/e1 does not
    rejects(with_layers(cfg, ls), "f2/e3", "concatenated with 'f2/e1'", "2x2, not 4x4")


def test_reject_channel_mismatch():
    cfg = small_net()
    ls = list(cfg.layers)
    ls[4] = replace(ls[4], cin=8)  # head reads f2 (16 channels)
    rejects(with_layers(cfg, ls), "c3", "expects 8 input channels but 'f2' has 16")


def test_reject_channel_gap():
    cfg = small_net()
    ls = list(cfg.layers)
    ls[3] = replace(ls[3], dst_offset=9)
    rejects(with_layers(cfg, ls), "f2/e3", "writes channels from 9", "filled up to 8")


def test_reject_final_relu():
    cfg = small_net()
    ls = list(cfg.layers)
    ls[-1] = replace(ls[-1], relu=True)
    rejects(with_layers(cfg, ls), "c3", "final conv", "must not have a ReLU")
    # split head: both halves with ReLU still rejected, naming the first
    z = get_config("zynqnet-tiny")
    split = fire_net("s", 16, 1, 10, stem=8, fires=[FireSpec(8, 8, 8, downsample=True)],
                     head_channels=16, head_splits=2)
    ls = [replace(l, relu=True) if l.dst == "c3" else l for l in split.layers]
    rejects(with_layers(split, ls), "c3/p1", "must not have a ReLU")
    assert z.layers[-1].relu is False


def test_reject_too_few_classes_and_structure():
    cfg = small_net()
    rejects(replace(cfg, num_classes=11), "c3", "outputs 10 channels for 11 classes")
    ls = list(cfg.layers)
    rejects(with_layers(cfg, ls + [replace(ls[-1])]), "c3", "duplicate layer name")
    rejects(with_layers(cfg, [replace(ls[0], src="nowhere")] + ls[1:]), "c1", "reads tensor 'nowhere'")
    rejects(with_layers(cfg, []), "t", "no layers")
    rejects(replace(cfg, act_bits=17), "t", "act_bits=17 is outside 2..16")
    dead = LayerSpec("dead", "c1", "dead", 8, 4)
    rejects(with_layers(cfg, ls[:1] + [dead] + ls[1:]), "dead", "written but never read")
    late = LayerSpec("late", "f2/s3", "c1", 8, 8, dst_offset=8)
    rejects(with_layers(cfg, ls[:2] + [late] + ls[2:]), "late", "after it has been read")


def test_reject_uneven_head_split():
    with pytest.raises(DesignRuleError) as e:
        fire_net("s", 16, 1, 10, stem=8, fires=[], head_channels=10, head_splits=3)
    assert e.value.layer == "c2" and "do not split into 3 equal parts" in str(e.value)


# ---- JSON configs ----------------------------------------------------------------
def test_json_full_layers_form(tmp_path):
    cfg = get_config("zynqnet-mini")
    p = tmp_path / "net.json"
    p.write_text(json.dumps(cfg.to_dict()))
    got = get_config(str(p))
    assert got == cfg
    assert got.class_names == cfg.class_names and isinstance(got.layers, tuple)
    # a broken layer in the file is caught by the rule checker
    d = cfg.to_dict()
    d["layers"][3]["k"] = 5
    p.write_text(json.dumps(d))
    with pytest.raises(DesignRuleError) as e:
        get_config(str(p))
    assert e.value.layer == cfg.layers[3].name and "kernel 5x5" in str(e.value)


def test_json_compact_form(tmp_path):
    d = {"name": "mine", "input_size": 32, "in_channels": 3, "num_classes": 10, "stem": 16,
         "fires": [{"squeeze": 8, "expand1": 16, "expand3": 16, "downsample": True},
                   {"squeeze": 8, "expand1": 16, "expand3": 16}],
         "head_channels": 16, "head_splits": 2, "act_bits": 6, "class_names": [f"k{i}" for i in range(10)]}
    p = tmp_path / "compact.json"
    p.write_text(json.dumps(d))
    cfg = get_config(str(p))
    assert cfg.name == "mine" and cfg.act_bits == 6 and cfg.weight_bits == 8
    assert [l.name for l in cfg.layers] == ["c1", "f2/s3", "f2/e1", "f2/e3", "f3/s1", "f3/e1", "f3/e3",
                                            "c4/p1", "c4/p2"]
    assert [(l.cin, l.cout, l.k, l.stride) for l in cfg.layers] == [
        (3, 16, 3, 2), (16, 8, 3, 2), (8, 16, 1, 1), (8, 16, 3, 1), (32, 8, 1, 1), (8, 16, 1, 1),
        (8, 16, 3, 1), (32, 8, 1, 1), (32, 8, 1, 1)]
    assert cfg.tensor_shapes()["c4"] == (8, 16)
    assert cfg.class_names == tuple(f"k{i}" for i in range(10))
    # the compact form round-trips through the full form
    assert NetConfig.from_dict(cfg.to_dict()) == cfg


def test_json_invalid(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text("{not json")
    with pytest.raises(ValueError, match="not a valid network config") as e:
        get_config(str(p))
    assert str(p) in str(e.value)
    p.write_text(json.dumps({"name": "x", "input_size": 16}))
    with pytest.raises(ValueError, match="not a valid network config"):
        get_config(str(p))


def test_unknown_net_name():
    with pytest.raises(ValueError) as e:
        get_config("zynqnet-huge")
    msg = str(e.value)
    assert not isinstance(e.value, DesignRuleError)
    assert "unknown network 'zynqnet-huge'" in msg and "zynqnet-mini" in msg and "no such config file" in msg


# ---- JSON configs: the schema and its errors ---------------------------------------
from zynqflow.spec.topology import CONFIG_SCHEMA, ConfigError, validate_config  # noqa: E402


def _config_error(tmp_path, d, *parts) -> ConfigError:
    """get_config on ``d`` written to a file raises ConfigError whose message names the
    file and contains every part."""
    p = tmp_path / "net.json"
    p.write_text(json.dumps(d))
    with pytest.raises(ConfigError) as e:
        get_config(str(p))
    msg = str(e.value)
    assert msg.startswith(f"{p}: ") and e.value.source == str(p), msg
    for part in parts:
        assert part in msg, f"{part!r} not in {msg!r}"
    assert "__init__" not in msg and "positional argument" not in msg
    return e.value


@pytest.mark.parametrize("field,value,parts", [
    ("cout", None, ["layers[3] 'f2/e3'", "missing field 'cout'", "required: name, src, dst, cin, cout"]),
    ("name", None, ["layers[3]:", "missing field 'name'"]),
    ("kernel", 3, ["layers[3] 'f2/e3'", "unknown field 'kernel'", "fields: name, src, dst, cin, cout, k, stride"]),
    ("k", "3", ["layers[3] 'f2/e3'", "field 'k' must be an integer, got \"3\" (str)"]),
    ("cin", True, ["layers[3] 'f2/e3'", "field 'cin' must be an integer, got true (bool)"]),
    ("relu", 1, ["layers[3] 'f2/e3'", "field 'relu' must be true or false, got 1 (int)"]),
    ("cout", 0, ["layers[3] 'f2/e3'", "field 'cout' must be >= 1, got 0"]),
    ("src", 7, ["layers[3] 'f2/e3'", "field 'src' must be a string, got 7 (int)"]),
])
def test_json_full_form_layer_errors(tmp_path, field, value, parts):
    d = get_config("zynqnet-tiny").to_dict()
    assert d["layers"][3]["name"] == "f2/e3"
    if value is None:
        del d["layers"][3][field]
    else:
        d["layers"][3][field] = value
    e = _config_error(tmp_path, d, *parts)
    assert e.where.startswith("layers[3]")


@pytest.mark.parametrize("edit,parts", [
    (lambda d: d.pop("num_classes"), ["missing field 'num_classes'", "required: name, input_size, in_channels"]),
    (lambda d: d.update(layer=[]), ["unknown field 'layer'", "layers"]),
    (lambda d: d.update(input_size="16"), ["field 'input_size' must be an integer, got \"16\" (str)"]),
    (lambda d: d.update(layers={"c1": {}}), ["field 'layers' must be a list"]),
    (lambda d: d.update(class_names=["a", "b"]), ["field 'class_names' has 2 names for num_classes 10"]),
    (lambda d: d.update(class_names=[1, 2]), ["field 'class_names' must be a list of strings"]),
    (lambda d: d["layers"].__setitem__(1, ["c1"]), ["layers[1]: layers[1] must be a JSON object, not list"]),
    (lambda d: d.update(stem=8), ["has both 'layers' (full form) and 'stem'/'fires' (compact form)"]),
    (lambda d: d.pop("layers"), ["needs 'layers' (full form) or 'stem' and 'fires' (compact form)"]),
])
def test_json_full_form_top_level_errors(tmp_path, edit, parts):
    d = get_config("zynqnet-tiny").to_dict()
    edit(d)
    _config_error(tmp_path, d, *parts)


COMPACT = {"name": "mine", "input_size": 32, "in_channels": 1, "num_classes": 10, "stem": 16,
           "fires": [{"squeeze": 8, "expand1": 16, "expand3": 16, "downsample": True},
                     {"squeeze": 8, "expand1": 16, "expand3": 16}]}


@pytest.mark.parametrize("edit,parts", [
    (lambda d: d["fires"][1].pop("expand3"), ["fires[1]: missing field 'expand3'",
                                              "required: squeeze, expand1, expand3"]),
    (lambda d: d["fires"][0].update(expand5=4), ["fires[0]: unknown field 'expand5'", "downsample"]),
    (lambda d: d["fires"][0].update(downsample="yes"), ["fires[0]: field 'downsample' must be true or false"]),
    (lambda d: d.update(stem=-1), ["field 'stem' must be >= 1, got -1"]),
    (lambda d: d.update(head_splits=2.5), ["field 'head_splits' must be an integer, got 2.5 (float)"]),
    (lambda d: d.update(head_channel=16), ["unknown field 'head_channel'", "head_channels"]),
    (lambda d: d.pop("stem"), ["missing field 'stem'"]),
    (lambda d: d.update(fires=None), ["field 'fires' must be a list, got null"]),
])
def test_json_compact_form_errors(tmp_path, edit, parts):
    d = json.loads(json.dumps(COMPACT))
    assert validate_config(json.loads(json.dumps(COMPACT)), "x") == "compact"
    edit(d)
    _config_error(tmp_path, d, *parts)


def test_json_schema_accepts_both_forms_and_optional_fields(tmp_path):
    d = dict(COMPACT, head_channels=None, head_splits=1, act_bits=6, class_names=[f"c{i}" for i in range(10)])
    p = tmp_path / "ok.json"
    p.write_text(json.dumps(d))
    cfg = get_config(str(p))
    assert cfg.act_bits == 6 and cfg.layers[-1].cout == 10
    assert validate_config(cfg.to_dict()) == "full"
    full = cfg.to_dict()
    for layer in full["layers"]:                       # the defaults may be left out
        for key in ("k", "stride", "relu", "dst_offset", "kind"):
            if layer[key] == CONFIG_DEFAULTS[key]:
                del layer[key]
    p.write_text(json.dumps(full))
    assert get_config(str(p)) == cfg


CONFIG_DEFAULTS = {"k": 1, "stride": 1, "relu": True, "dst_offset": 0, "kind": "conv"}


def test_json_not_json_names_line(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"name": "x",\n  "input_size": 16,,\n}')
    with pytest.raises(ConfigError, match=r"not JSON \(line 2, column 20") as e:
        get_config(str(p))
    assert str(e.value).startswith(f"{p}: not a valid network config")
    p.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="a network config is a JSON object, not list"):
        get_config(str(p))


def test_config_schema_is_documented():
    """docs/config-schema.md lists every field of both forms, of a layer and of a fire
    module, with its type and whether it is required."""
    from zynqflow.spec.paths import REPO

    doc = (REPO / "docs" / "config-schema.md").read_text()
    for part, schema in CONFIG_SCHEMA.items():
        for field, (typ, required, _) in schema.items():
            row = next((l for l in doc.splitlines() if l.startswith(f"| `{field}` ")), None)
            assert row is not None, f"{part}.{field} not documented"
            assert typ.split("[")[0].split("|")[0] in row, (field, typ, row)
            assert ("yes" in row) == required or part in ("full", "compact"), (field, row)
