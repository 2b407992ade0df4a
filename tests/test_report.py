"""Workload characterization (zynqflow.model.report) against hand-computed numbers."""

from __future__ import annotations

import json

import pytest

from zynqflow.spec.topology import get_config
from zynqflow.model.report import PYNQ_Z2, ZCU104, characterize, format_table, main

# zynqnet-tiny, worked by hand from its layer list (16x16x1 input, 8-bit
# weights and activations, 16-bit logits, 32-bit biases):
#
#   c1     input(16x16x1) -> c1     3x3 s2, 1 -> 8,  out 8x8x8
#   f2/s3  c1(8x8x8)      -> f2/s3  3x3 s2, 8 -> 8,  out 4x4x8
#   f2/e1  f2/s3(4x4x8)   -> f2[0:8]  1x1, 8 -> 8,   out 4x4x8
#   f2/e3  f2/s3(4x4x8)   -> f2[8:16] 3x3, 8 -> 8,   out 4x4x8
#   c3     f2(4x4x16)     -> c3     1x1, 16 -> 10,   out 4x4x10 (logits, 16-bit)
TINY = {
    # name: (out_shape, params, macs, weight_bytes, act_bytes)
    "c1": ([8, 8, 8],
           9 * 1 * 8 + 8,              # 72 weights + 8 biases = 80
           8 * 8 * (9 * 1 * 8),        # 64 pixels * 72 MACs = 4608
           72 + 8 * 4,                 # 72 B of 8-bit weights + 32 B of biases = 104
           16 * 16 * 1 + 8 * 8 * 8),   # 256 B image read + 512 B written = 768
    "f2/s3": ([4, 4, 8],
              9 * 8 * 8 + 8,           # 576 + 8 = 584
              4 * 4 * (9 * 8 * 8),     # 16 * 576 = 9216
              576 + 32,                # 608
              8 * 8 * 8 + 4 * 4 * 8),  # 512 + 128 = 640
    "f2/e1": ([4, 4, 8],
              1 * 8 * 8 + 8,           # 64 + 8 = 72
              4 * 4 * (1 * 8 * 8),     # 16 * 64 = 1024
              64 + 32,                 # 96
              4 * 4 * 8 + 4 * 4 * 8),  # 128 + 128 = 256
    "f2/e3": ([4, 4, 8],
              9 * 8 * 8 + 8,           # 584
              4 * 4 * (9 * 8 * 8),     # 9216
              576 + 32,                # 608
              4 * 4 * 8 + 4 * 4 * 8),  # 256
    "c3": ([4, 4, 10],
           1 * 16 * 10 + 10,               # 160 + 10 = 170
           4 * 4 * (1 * 16 * 10),          # 16 * 160 = 2560
           160 + 10 * 4,                   # 200
           4 * 4 * 16 + 4 * 4 * 10 * 2),   # 256 B read + 160 logits * 2 B = 576
}
TINY_PARAMS = 80 + 584 + 72 + 584 + 170            # 1490
TINY_MACS = 4608 + 9216 + 1024 + 9216 + 2560       # 26624
TINY_WEIGHT_BYTES = 104 + 608 + 96 + 608 + 200     # 1616
TINY_ACT_BYTES = 768 + 640 + 256 + 256 + 576       # 2496


@pytest.fixture(scope="module")
def tiny() -> dict:
    return characterize(get_config("zynqnet-tiny"))


def test_tiny_layers_by_hand(tiny):
    assert [l["name"] for l in tiny["layers"]] == list(TINY)
    for l in tiny["layers"]:
        shape, params, macs, wb, ab = TINY[l["name"]]
        assert l["out_shape"] == shape, l["name"]
        assert l["params"] == params, l["name"]
        assert l["macs"] == macs, l["name"]
        assert l["weight_bytes"] == wb, l["name"]
        assert l["act_bytes"] == ab, l["name"]
        assert l["intensity"] == pytest.approx(macs / (wb + ab)), l["name"]
    c1 = tiny["layers"][0]
    assert (c1["src"], c1["dst"], c1["k"], c1["stride"], c1["cin"], c1["cout"],
            c1["in_size"], c1["out_size"]) == ("input", "c1", 3, 2, 1, 8, 16, 8)


def test_tiny_totals_by_hand(tiny):
    assert tiny["net"] == "zynqnet-tiny"
    assert tiny["input"] == [16, 16, 1]
    assert tiny["params"] == TINY_PARAMS == 1490
    assert tiny["macs"] == TINY_MACS == 26624
    assert tiny["weight_bytes"] == TINY_WEIGHT_BYTES == 1616
    assert tiny["act_bytes"] == TINY_ACT_BYTES == 2496
    assert tiny["gap"]["out_shape"] == [1, 1, 10]
    assert tiny["gap"]["params"] == 0 and tiny["gap"]["macs"] == 0


def test_targets_roofline(tiny):
    assert PYNQ_Z2.peak_gmacs == pytest.approx(22.0)        # 220 DSP * 100 MHz
    assert PYNQ_Z2.ddr_gbytes_s == pytest.approx(2.132)     # 2 B * 1066 MT/s
    assert ZCU104.peak_gmacs == pytest.approx(345.6)        # 1728 DSP * 200 MHz
    assert ZCU104.ddr_gbytes_s == pytest.approx(19.2)       # 8 B * 2400 MT/s
    assert ZCU104.ridge == pytest.approx(18.0)
    by_name = {t["name"]: t for t in tiny["targets"]}
    assert set(by_name) == {"PYNQ-Z2", "ZCU104"}
    for t in tiny["targets"]:
        for key in ("part", "dsp", "clock_mhz", "peak_gmacs", "ddr_gbytes_s", "ridge_intensity"):
            assert key in t
        assert [r["name"] for r in t["layers"]] == list(TINY)
    # c1: 4608 / (104 + 768) = 5.28 MAC/B, below both ridges: memory-bound.
    c1 = by_name["PYNQ-Z2"]["layers"][0]
    assert c1["attainable_gmacs"] == pytest.approx(4608 / 872 * 2.132)
    assert c1["bound"] == "memory"
    # f2/e3: 9216 / 864 = 10.67 MAC/B, above the PYNQ-Z2 ridge (22 / 2.132 = 10.32).
    e3 = by_name["PYNQ-Z2"]["layers"][3]
    assert e3["attainable_gmacs"] == pytest.approx(22.0) and e3["bound"] == "compute"


def test_params_match_folded_pytorch_module():
    from zynqflow.model.net import ZynqNet

    for name in ("zynqnet-tiny", "zynqnet-mini"):
        cfg = get_config(name)
        net = ZynqNet(cfg)
        net.fold_bn()
        count = sum(u.conv.weight.numel() + u.conv.bias.numel() for u in net.units.values())
        assert count == sum(p.numel() for p in net.parameters())  # nothing but convs left
        assert characterize(cfg)["params"] == count


def test_zynqnet_matches_thesis():
    r = characterize(get_config("zynqnet"))
    assert r["params"] == pytest.approx(2.5e6, rel=0.03)    # thesis: 2.5 M parameters
    assert r["macs"] == pytest.approx(530e6, rel=0.03)      # thesis: 530 M MACs
    assert len(r["layers"]) == 27
    assert r["layers"][-1]["out_shape"] == [8, 8, 512]     # c10 in two halves


def test_zynqnet_mini_budget():
    r = characterize(get_config("zynqnet-mini"))
    assert r["params"] <= 256_000
    assert r["macs"] <= 20_000_000


def test_in_channels_changes_stem_only():
    gray = characterize(get_config("zynqnet-mini"))
    rgb = characterize(get_config("zynqnet-mini", in_channels=3))
    assert rgb["input"] == [32, 32, 3]
    assert rgb["params"] - gray["params"] == 9 * 2 * 64     # two more input planes of c1 weights
    assert rgb["layers"][1:] == gray["layers"][1:]


def test_format_table(tiny):
    text = format_table(tiny)
    for name in (*TINY, "gap", "total", "PYNQ-Z2", "ZCU104"):
        assert name in text
    assert "3x3 s2" in text and "4x4x10" in text
    assert "1,490" in text and "26,624" in text


def test_main_writes_report_and_png(tmp_path, capsys):
    assert main(["--net", "zynqnet-tiny", "--out", str(tmp_path)]) == 0
    assert "total" in capsys.readouterr().out
    report = json.loads((tmp_path / "report.json").read_text())
    assert type(report["params"]) is int and report["params"] == 1490
    assert type(report["macs"]) is int and report["macs"] == 26624
    png = (tmp_path / "roofline.png").read_bytes()
    assert len(png) > 1000 and png.startswith(b"\x89PNG")


def test_main_no_plot(tmp_path):
    assert main(["--net", "zynqnet-tiny", "--out", str(tmp_path), "--no-plot"]) == 0
    assert (tmp_path / "report.json").is_file()
    assert not (tmp_path / "roofline.png").exists()


def test_main_unknown_net(tmp_path, capsys):
    assert main(["--net", "no-such-net", "--out", str(tmp_path)]) == 2
    assert "unknown network 'no-such-net'" in capsys.readouterr().err
    assert not (tmp_path / "report.json").exists()
