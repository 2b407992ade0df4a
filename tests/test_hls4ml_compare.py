"""hls4ml side by side (zynqflow.bench.hls4ml_compare) on zynqnet-tiny.

One hls4ml build (io_stream, g++ -O3) takes about 20 s here, so the
per-layer checks run by default; the end-to-end ``compare`` (two builds) is
marked slow.

What is exactly true, and asserted:
* the float module with the contract's rounding equals the golden model, and
  each of its convs, on our integer inputs, gives exactly our accumulator;
* with our formats mirrored (pool accumulator at F_out, "mirror"), every
  hls4ml layer output up to and including the final conv is bit-identical to
  ``golden_tensors`` -- saturating ReLU outputs included;
* the logits are NOT: hls4ml's AveragePooling2D returns ``sum / N`` computed as
  ``ap_fixed / int`` in the accumulator type (an integer division truncating
  towards zero, at F_out), where we round half up with ``(sum + 2^(k-1)) >> k``.
  Its logits equal the truncated quotient of our exact sums, always;
* with the accumulator hls4ml itself would infer ("auto": k more fractional
  bits) the quotient is exact, AP_RND rounds it half up and the logits agree.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import torch

pytest.importorskip("hls4ml")
if shutil.which("g++") is None:
    pytest.skip("hls4ml's C simulation needs g++", allow_module_level=True)

from zynqflow.bench import hls4ml_compare as H  # noqa: E402
from zynqflow.spec.topology import get_config  # noqa: E402
from zynqflow.spec.golden import conv_acc, golden_logits, golden_tensors  # noqa: E402
from zynqflow.model.net import qnet_from_model  # noqa: E402
from zynqflow.model.net import ZynqNet  # noqa: E402
from zynqflow.spec.numerics import round_shift  # noqa: E402


@pytest.fixture(scope="module")
def tiny():
    """Random zynqnet-tiny with non-zero biases, calibrated on dimmed frames so
    that full-range frames saturate some activations (exercises AP_SAT)."""
    torch.manual_seed(1)
    cfg = get_config("zynqnet-tiny")
    net = ZynqNet(cfg)
    with torch.no_grad():
        for u in net.units.values():
            u.bn.running_mean.uniform_(-0.5, 0.5)
            u.bn.bias.uniform_(-0.3, 0.3)
    x = torch.randint(0, 256, (64, 1, 16, 16), dtype=torch.uint8)
    net.calibrate([(x // 3).float() / 256])
    qnet = qnet_from_model(net)
    rng = np.random.default_rng(3)
    frames = rng.integers(0, 256, (40, 16, 16, 1), dtype=np.uint8)
    frames[0] = 0
    frames[1] = 255
    return qnet, frames


@pytest.fixture(scope="module")
def mirrored(tiny, tmp_path_factory):
    qnet, frames = tiny
    hm, seconds = H.build_hls4ml(qnet, tmp_path_factory.mktemp("h4") / "prj", "io_stream", "mirror")
    return hm, seconds


def _nchw(qnet, frames):
    return torch.from_numpy(frames.transpose(0, 3, 1, 2).astype(np.float64) * 2.0 ** -qnet.input_format.frac)


# ---- the float module -------------------------------------------------------------
def test_float_module_with_rounding_equals_golden(tiny):
    qnet, frames = tiny
    m = H.to_torch_float(qnet)
    y = m.forward_quantized(_nchw(qnet, frames)).numpy()[:, : qnet.num_classes]
    assert np.array_equal(y * 2.0 ** qnet.output_format.frac, golden_logits(qnet, frames))


def test_float_module_equals_golden_up_to_rounding(tiny):
    """Each float conv on our integer input (x 2^-F_in) is exactly our
    accumulator x 2^-(F_in+F_w); the only difference left is the documented
    requantization (round half up, ReLU, saturate) and the pool's rounding."""
    qnet, frames = tiny
    m = H.to_torch_float(qnet)
    t = golden_tensors(qnet, frames)
    for l in qnet.layers:
        x = torch.from_numpy(t[l.src].transpose(0, 3, 1, 2).astype(np.float64) * 2.0 ** -l.in_format.frac)
        with torch.no_grad():
            y = getattr(m, l.name.replace("/", "_"))(x).numpy().transpose(0, 2, 3, 1)
        acc = conv_acc(t[l.src], l)
        assert np.array_equal(y * 2.0 ** (l.in_format.frac + l.w_frac), acc), l.name
        q = np.floor(y * 2.0 ** l.out_format.frac + 0.5)
        if l.relu:
            q = np.maximum(q, 0)
        q = np.clip(q, l.out_format.lo, l.out_format.hi)
        assert np.array_equal(q, t[l.dst][..., l.dst_offset:l.dst_offset + l.cout]), l.name
    # plain float forward (no rounding) stays close to the integer logits
    with torch.no_grad():
        y = m(_nchw(qnet, frames)).numpy()[:, : qnet.num_classes]
    g = golden_logits(qnet, frames) * 2.0 ** -qnet.output_format.frac
    assert np.abs(y - g).max() < 0.1 * max(np.abs(g).max(), 1e-3) + 64 * qnet.output_format.scale


def test_precisions_mirror_our_formats(tiny):
    qnet, _ = tiny
    p = H.precisions(qnet, "mirror")
    assert p["x"]["result"] == "ap_ufixed<8,0>"
    for l in qnet.layers:
        d, fo = p[l.name.replace("/", "_")], l.out_format
        f_acc = l.in_format.frac + l.w_frac
        assert d["weight"] == f"ap_fixed<8,{8 - l.w_frac}>"
        assert d["bias"] == f"ap_fixed<32,{32 - f_acc}>"
        assert d["accum"].endswith(f",{int(d['accum'][9:].split(',')[0]) - f_acc}>")
        if l.relu:
            assert p[l.name.replace("/", "_") + "_relu"]["result"] == f"ap_ufixed<8,{8 - fo.frac},AP_RND,AP_SAT>"
            assert d["result"].endswith(",AP_RND,AP_SAT>")
        else:
            assert d["result"] == f"ap_fixed<16,{16 - fo.frac},AP_RND,AP_SAT>"
    fo = qnet.output_format
    assert p["gap"]["accum"] == f"ap_fixed<{16 + 4},{16 + 4 - fo.frac}>"  # 4x4 = 2^4 pixels
    assert H.precisions(qnet, "auto")["gap"]["accum"] == "auto"


# ---- hls4ml C simulation ------------------------------------------------------------
def test_hls4ml_layers_before_pool_are_bit_exact(tiny, mirrored):
    qnet, frames = tiny
    hm, seconds = mirrored
    print(f"\nhls4ml build: {seconds:.0f} s")     # a figure, not a check: no test depends on the machine's speed
    tr = H.hls4ml_trace(hm, qnet, frames)
    stages, _ = H._reference_stages(qnet, frames)
    saturated = 0
    for name, what, ours, frac in stages:
        if name == "gap":
            continue
        theirs = H._to_int(tr[name], frac).reshape(ours.shape)
        assert np.array_equal(theirs, ours), f"{name}: {what}"
        if name.endswith("_relu"):
            l = next(l for l in qnet.layers if l.name.replace("/", "_") + "_relu" == name)
            saturated += int((ours == l.out_format.hi).sum())
    assert saturated > 0, "test network should saturate some activations"


def test_hls4ml_pool_truncates_where_we_round(tiny, mirrored):
    qnet, frames = tiny
    hm, _ = mirrored
    got = H.hls4ml_logits(hm, qnet, frames)
    sums = golden_tensors(qnet, frames)[qnet.cfg.output_tensor].sum(axis=(1, 2))[:, : qnet.num_classes]
    assert np.array_equal(got, np.sign(sums) * (np.abs(sums) // 16))   # C division, towards zero
    ours = golden_logits(qnet, frames)
    assert np.array_equal(ours, round_shift(sums, 4))
    d = ours - got
    assert (d != 0).any()
    assert np.all(d == np.where(d == 0, 0, np.sign(sums)))              # +1 LSB for sum > 0, -1 for < 0
    r = H.diagnose(hm, qnet, frames, got, trace_frames=8)
    assert r["pool_candidates"]["truncate towards zero: sum / 2^k as C integer division"] == 1.0
    assert r["reasons"][0].startswith("layer 'gap'")
    assert all(row["mismatched_elements"] == 0 for row in r["per_layer"] if row["layer"] != "gap")


@pytest.mark.slow
def test_compare_end_to_end_with_auto_pool_accum(tiny, tmp_path):
    qnet, frames = tiny
    r = H.compare(qnet, frames[:16], out_dir=tmp_path, trace_frames=4)
    assert r["frames"] == 16 and r["hls4ml_version"]
    assert r["agree_fraction"] < 1.0 and r["max_abs_diff"] == 1
    assert r["variants"]["auto"]["agree_fraction"] == 1.0
    assert r["variants"]["auto"]["per_layer_all_equal"]
    assert r["float_module_quantized_equals_golden"]
    assert set(r["fps"]) == {"golden", "zynqflow_csim", "hls4ml_csim"}
    assert r["fps"]["golden"] > 0 and r["fps"]["hls4ml_csim"] > 0
