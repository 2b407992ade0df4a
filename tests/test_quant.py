"""The fixed-point contract (numerics), BatchNorm folding, and the agreement
of fake-quantized QAT inference with the exact integer path."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch

from zynqflow.spec import numerics as N
from zynqflow.spec.topology import DesignRuleError, get_config
from zynqflow.model.net import ZynqNet, fake_quant
from zynqflow.spec.numerics import QFormat

S8, U8, U4 = QFormat(8, True, 0), QFormat(8, False, 0), QFormat(4, False, 0)


# ---- numerics --------------------------------------------------------------------
def test_qformat_ranges():
    assert (S8.lo, S8.hi, S8.max_abs) == (-128, 127, 128)
    assert (U8.lo, U8.hi, U8.max_abs) == (0, 255, 255)
    f = QFormat(16, True, 12)
    assert f.scale == 2.0 ** -12 and str(f) == "s16.F12" and QFormat.from_dict(f.to_dict()) == f
    assert N.INPUT_FORMAT == QFormat(8, False, 8)


@pytest.mark.parametrize("acc,s,want", [
    (-3, 1, -1),    # -1.5  -> -1 (half up, not away from zero)
    (-5, 2, -1),    # -1.25 -> -1
    (-6, 2, -1),    # -1.5  -> -1
    (-7, 2, -2),    # -1.75 -> -2
    (-2, 2, 0),     # -0.5  -> 0
    (-1, 1, 0),     # -0.5  -> 0
    (-10, 2, -2),   # -2.5  -> -2
    (2, 2, 1),      # 0.5   -> 1
    (5, 1, 3),      # 2.5   -> 3
    (7, 3, 1),      # 0.875 -> 1
    (3, 3, 0),      # 0.375 -> 0
    (3, 0, 3),
    (3, -2, 12),    # negative shift is a left shift
    (-3, -2, -12),
])
def test_round_shift(acc, s, want):
    got = N.round_shift(np.array([acc]), s)
    assert got.dtype == np.int64 and int(got[0]) == want
    # same as floor(acc / 2^s + 0.5), the fake-quant rounding
    assert want == int(np.floor(acc * 2.0 ** -s + 0.5))


def test_round_shift_large_values():
    acc = np.array([2 ** 40 + 2 ** 9, -(2 ** 40) - 2 ** 9, -(2 ** 40) - 2 ** 9 - 1])
    np.testing.assert_array_equal(N.round_shift(acc, 10), [2 ** 30 + 1, -(2 ** 30), -(2 ** 30) - 1])


def test_requantize():
    acc = np.array([-300, -5, 5, 6, 1000, 2])
    np.testing.assert_array_equal(N.requantize(acc, 2, False, S8), [-75, -1, 1, 2, 127, 1])
    np.testing.assert_array_equal(N.requantize(acc, 2, True, U8), [0, 0, 1, 2, 250, 1])
    np.testing.assert_array_equal(N.requantize(acc, 2, True, U4), [0, 0, 1, 2, 15, 1])
    np.testing.assert_array_equal(N.requantize(acc, 0, False, S8), [-128, -5, 5, 6, 127, 2])
    np.testing.assert_array_equal(N.requantize(np.array([-1, 1, 40]), -2, True, S8), [0, 4, 127])
    np.testing.assert_array_equal(N.saturate(np.array([-129, 128]), S8), [-128, 127])


def test_gap_shift():
    # over 64 pixels: k = 6, mean rounded half up
    np.testing.assert_array_equal(N.gap_shift(np.array([32, -32, 31, -33, 64 * 5, -64 * 5 - 33]), 64),
                                  [1, 0, 0, -1, 5, -6])
    np.testing.assert_array_equal(N.gap_shift(np.array([7, -7]), 1), [7, -7])
    np.testing.assert_array_equal(N.gap_shift(np.array([6, -6]), 4), [2, -1])  # 1.5 -> 2, -1.5 -> -1
    with pytest.raises(ValueError, match="48 pixels"):
        N.gap_shift(np.array([1]), 48)


def _exact_round(num: int, k: int, mode: str) -> int:
    """num / 2^k rounded by ``mode``, from the rational value (the definition, not the formula)."""
    from fractions import Fraction
    import math

    x = Fraction(num, 1 << k)
    fl = math.floor(x)
    frac = x - fl
    if mode == "floor":
        return fl
    if frac != Fraction(1, 2):
        return fl + int(frac > Fraction(1, 2))
    return {"half_up": fl + 1, "half_even": fl + (fl % 2), "half_away": fl + 1 if x > 0 else fl}[mode]


@pytest.mark.parametrize("mode", ["half_up", "floor", "half_even", "half_away"])
def test_gap_rounding_modes(mode):
    """Each rounding of the global average pool (spec.engine.GAP_ROUNDINGS) is its rational definition,
    in numpy and in torch, for every sum in -300..300 and 2^0..2^5 pixels."""
    sums = np.arange(-300, 301)
    for k in range(6):
        want = [_exact_round(int(v), k, mode) for v in sums]
        np.testing.assert_array_equal(N.gap_shift(sums, 1 << k, mode), want, err_msg=f"{mode}, k={k}")
        assert torch.equal(N.gap_shift(torch.from_numpy(sums), 1 << k, mode), torch.tensor(want))
        x = torch.from_numpy(sums).double() * 2.0 ** -k       # the QAT path rounds the mean the same way
        assert torch.equal(fake_quant(x, QFormat(16, True, 0), mode), torch.tensor(want).double())
    # the modes differ where they must: -1.5, -0.5, 0.5, 2.5
    got = N.gap_shift(np.array([-6, -2, 2, 10]), 4, mode).tolist()
    assert got == {"half_up": [-1, 0, 1, 3], "floor": [-2, -1, 0, 2], "half_even": [-2, 0, 0, 2],
                   "half_away": [-2, -1, 1, 3]}[mode]
    with pytest.raises(ValueError, match="unknown rounding"):
        N.gap_shift(sums, 4, "ceil")


@pytest.mark.parametrize("max_abs,bits,signed,want", [
    (1.0, 8, True, 7), (0.75, 8, True, 7), (0.5, 8, True, 8), (0.51, 8, True, 7), (0.1, 8, True, 10),
    (3.0, 8, False, 6), (1.0, 8, False, 8), (300.0, 16, True, 6), (1000.0, 8, True, -3),
    (0.0, 8, True, 7), (0.0, 8, False, 8), (float("inf"), 8, True, 7), (float("nan"), 16, False, 16),
    (-1.0, 8, True, 7),
])
def test_frac_for_range(max_abs, bits, signed, want):
    assert N.frac_for_range(max_abs, bits, signed) == want


def test_frac_for_range_brackets_the_range():
    # 2^(mag - F - 1) < max_abs <= 2^(mag - F): F is as large as the power-of-two range allows
    for m in np.geomspace(1e-4, 1e4, 97):
        for bits, signed in ((8, True), (8, False), (16, True)):
            f = N.frac_for_range(float(m), bits, signed)
            mag = bits - signed
            assert 2.0 ** (mag - f - 1) < m <= 2.0 ** (mag - f)


def test_quantize_real_and_bounds():
    f = QFormat(8, False, 8)
    np.testing.assert_array_equal(N.quantize_real([0.5, -0.5, 1.0, 1.5 / 256, 0.49 / 256], f), [128, 0, 255, 2, 0])
    np.testing.assert_array_equal(N.quantize_real([-2.5 / 4, 2.5 / 4], QFormat(8, True, 2)), [-2, 3])
    b = N.acc_bound(3, 64, QFormat(8, True, 7), N.INPUT_FORMAT, 1000)
    assert b == 9 * 64 * 128 * 255 + 1000
    assert N.acc_fits(2 ** 31 - 1) and not N.acc_fits(2 ** 31) and N.acc_fits(2 ** 15 - 1, 16)


def test_fake_quant_contract():
    x = torch.tensor([-2.5, -1.5, -0.5, 0.5, 1.5, 2.49, 200.0, -200.0], dtype=torch.float64)
    torch.testing.assert_close(fake_quant(x, S8), torch.tensor([-2, -1, 0, 1, 2, 2, 127, -128.0],
                                                               dtype=torch.float64), rtol=0, atol=0)
    torch.testing.assert_close(fake_quant(x, U4), torch.tensor([0, 0, 0, 1, 2, 2, 15, 0.0],
                                                               dtype=torch.float64), rtol=0, atol=0)
    f = QFormat(8, True, 3)
    torch.testing.assert_close(fake_quant(torch.tensor([0.0625, -0.0625, 100.0]), f),
                               torch.tensor([0.125, 0.0, 127 / 8]), rtol=0, atol=0)
    # straight-through gradient inside the range, zero where it saturates
    x = torch.tensor([0.3, 500.0], requires_grad=True)
    fake_quant(x, S8).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 0.0])


# ---- networks ------------------------------------------------------------------
def random_bn(net: ZynqNet, seed: int = 0) -> ZynqNet:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                n = m.num_features
                m.running_mean.copy_(torch.rand(n, generator=g) - 0.5)
                m.running_var.copy_(torch.rand(n, generator=g) * 1.5 + 0.25)
                m.weight.copy_(torch.rand(n, generator=g) + 0.5)
                m.bias.copy_(torch.rand(n, generator=g) * 0.4 - 0.2)
    return net


def tiny(seed: int = 0) -> ZynqNet:
    torch.manual_seed(seed)
    return random_bn(ZynqNet(get_config("zynqnet-tiny")), seed).eval()


def frames(n: int, cfg, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, (n, cfg.in_channels, cfg.input_size, cfg.input_size), generator=g,
                         dtype=torch.uint8)


def calibrated(seed: int = 0, calib_frames: torch.Tensor | None = None) -> ZynqNet:
    net = tiny(seed)
    x = frames(32, net.cfg, seed + 100) if calib_frames is None else calib_frames
    net.calibrate([x[:16].float() / 256, x[16:].float() / 256])
    net.set_mode("qat")
    return net


def test_bn_folding_equivalence():
    net = tiny(1)
    x = frames(8, net.cfg, 1).float() / 256
    with torch.no_grad():
        before = net(x)
    assert not net.folded
    net.fold_bn()
    assert net.folded and all(u.bn is None and u.conv.bias is not None for u in net.units.values())
    with torch.no_grad():
        after = net(x)
    assert before.abs().max() > 1e-2  # not trivially zero
    torch.testing.assert_close(after, before, rtol=1e-5, atol=1e-5)
    net.fold_bn()  # idempotent
    with torch.no_grad():
        torch.testing.assert_close(net(x), after, rtol=0, atol=0)


def test_bn_folding_keeps_dtype():
    net = tiny(2).double()
    x = frames(4, net.cfg, 2).double() / 256
    with torch.no_grad():
        before = net(x)
        net.fold_bn()
        assert all(p.dtype == torch.float64 for p in net.parameters())
        torch.testing.assert_close(net(x), before, rtol=1e-12, atol=1e-12)


def test_calibrate_formats():
    net = calibrated()
    cfg = net.cfg
    assert net.folded and net.mode == "qat"
    assert set(net.act_formats) == {"c1", "f2/s3", "f2", "c3"}
    for t, f in net.act_formats.items():
        if t == cfg.output_tensor:
            assert f.bits == cfg.out_bits == 16 and f.signed
        else:
            assert f.bits == cfg.act_bits == 8 and not f.signed
    for l in cfg.layers:
        w = net.units[l.name.replace("/", "_")].conv.weight
        mag = float(w.detach().abs().max())
        wf = net.weight_fracs[l.name]
        assert 2.0 ** (7 - wf - 1) < mag <= 2.0 ** (7 - wf)


def test_mode_guards():
    net = tiny()
    with pytest.raises(RuntimeError, match="calibrate"):
        net.set_mode("qat")
    with pytest.raises(ValueError):
        net.set_mode("int")
    with pytest.raises(RuntimeError, match="not calibrated"):
        net.integer_params()
    net = calibrated()
    with pytest.raises(TypeError, match="uint8"):
        net.integer_forward(frames(2, net.cfg).float())


@pytest.mark.parametrize("seed,dim_calibration,gap_round", [(0, False, "half_up"), (3, False, "half_up"),
                                                             (5, True, "half_up"), (0, False, "floor"),
                                                             (3, False, "half_even"), (5, False, "half_away")])
def test_qat_equals_integer_path_exactly(seed, dim_calibration, gap_round):
    """float64 fake quantization must reproduce the integer path bit for bit, under every rounding of the
    global average pool (4x4 final map). ``dim_calibration`` calibrates on dark frames so that bright
    test frames saturate (exercises the clamps)."""
    from dataclasses import replace

    cfg = get_config("zynqnet-tiny")
    calib = frames(32, cfg, seed + 100)
    if dim_calibration:
        calib = calib // 8
    net = calibrated(seed, calib)
    net.cfg = replace(net.cfg, gap_round=gap_round)
    x = frames(64, cfg, seed)
    logits = net.integer_forward(x)
    assert logits.dtype == torch.int64 and logits.shape == (64, 10)
    fout = net.output_format.frac
    assert net.output_format == net.act_formats["c3"]
    assert logits.abs().max() > 0 and len(torch.unique(logits)) > 10
    # float64 fake-quant reference
    net.double()
    with torch.no_grad():
        q64 = net(x.double() / 256)
    assert q64.dtype == torch.float64
    ref = logits.double() * 2.0 ** -fout
    mism = (q64 != ref)
    assert not mism.any(), f"{int(mism.sum())} mismatches, max |diff| {float((q64 - ref).abs().max())}"
    if dim_calibration:  # some activations really saturate at the top of their format
        want, t = numpy_reference(net, x)
        np.testing.assert_array_equal(logits.numpy(), want)
        assert any((t[n] == f.hi).any() for n, f in net.act_formats.items())
    # float32: argmax agrees on nearly all frames
    net.float()
    with torch.no_grad():
        q32 = net(x.float() / 256)
    agree = (q32.argmax(1) == logits.argmax(1)).float().mean().item()
    assert agree >= 0.95


def test_integer_params_shapes():
    net = calibrated()
    p = net.integer_params()
    for l in net.cfg.layers:
        e = p[l.name]
        assert e["w"].dtype == torch.int64 and tuple(e["w"].shape) == (l.cout, l.cin, l.k, l.k)
        assert e["b"].dtype == torch.int64 and tuple(e["b"].shape) == (l.cout,)
        assert e["w"].min() >= -128 and e["w"].max() <= 127
        assert e["shift"] == e["in_format"].frac + e["w_frac"] - e["out_format"].frac
        assert e["relu"] == l.relu
    assert p["c1"]["in_format"] == N.INPUT_FORMAT


def numpy_reference(net: ZynqNet, x: torch.Tensor) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The integer network re-derived with the numpy numerics functions:
    (logits, every tensor)."""
    cfg = net.cfg
    p = net.integer_params()
    t = {"input": x.numpy().astype(np.int64)}
    pieces: dict[str, list] = {}
    for l in cfg.layers:
        if l.src not in t:
            t[l.src] = np.concatenate(pieces.pop(l.src), 1)
        a = t[l.src]
        pad = np.pad(a, ((0, 0), (0, 0), (l.pad, l.pad), (l.pad, l.pad)))
        w, b = p[l.name]["w"].numpy(), p[l.name]["b"].numpy()
        n, _, h, _ = a.shape
        ho = h // l.stride
        acc = np.zeros((n, l.cout, ho, ho), np.int64)
        for ky in range(l.k):
            for kx in range(l.k):
                win = pad[:, :, ky:ky + l.stride * ho:l.stride, kx:kx + l.stride * ho:l.stride]
                acc += np.einsum("nchw,oc->nohw", win, w[:, :, ky, kx])
        acc += b[None, :, None, None]
        pieces.setdefault(l.dst, []).append(N.requantize(acc, p[l.name]["shift"], l.relu, p[l.name]["out_format"]))
    out = t[cfg.output_tensor] = np.concatenate(pieces.pop(cfg.output_tensor), 1)
    logits = N.gap_shift(out.sum(axis=(2, 3)), out.shape[2] * out.shape[3], cfg.gap_round)[:, :cfg.num_classes]
    return logits, t


def test_integer_path_matches_numpy_contract():
    net = calibrated(4)
    x = frames(3, net.cfg, 4)
    want, _ = numpy_reference(net, x)
    np.testing.assert_array_equal(net.integer_forward(x).numpy(), want)


def test_checkpoint_roundtrip():
    net = calibrated(6)
    x = frames(8, net.cfg, 6)
    want = net.integer_forward(x)
    buf = io.BytesIO()
    torch.save(net.checkpoint_state(), buf)
    buf.seek(0)
    ck = torch.load(buf, weights_only=False)
    net2 = ZynqNet.from_checkpoint(ck)
    assert net2.mode == "qat" and net2.folded
    assert net2.act_formats == net.act_formats and net2.weight_fracs == net.weight_fracs
    assert torch.equal(net2.integer_forward(x), want)
    with torch.no_grad():
        assert torch.equal(net2(x.float() / 256), net(x.float() / 256))
    # an unfolded float checkpoint round-trips too
    f = tiny(7)
    f2 = ZynqNet.from_checkpoint(f.checkpoint_state()).eval()
    with torch.no_grad():
        assert torch.equal(f2(x.float() / 256), f(x.float() / 256))


def test_checkpoint_shape_mismatch():
    net = calibrated()
    ck = net.checkpoint_state()
    sd = dict(ck["state_dict"])
    sd["units.f2_e3.conv.weight"] = torch.zeros(8, 8, 1, 1)  # topology says 3x3
    ck["state_dict"] = sd
    with pytest.raises(DesignRuleError) as e:
        ZynqNet.from_checkpoint(ck)
    assert e.value.layer == "f2/e3"
    assert "(8, 8, 1, 1)" in str(e.value) and "(8, 8, 3, 3)" in str(e.value)
    del sd["units.f2_e3.conv.weight"]
    with pytest.raises(DesignRuleError) as e:
        ZynqNet.from_checkpoint(ck)
    assert e.value.layer == "f2/e3" and "no weights" in str(e.value)


def test_zynqnet_reduced_input_integer_forward():
    torch.manual_seed(0)
    cfg = get_config("zynqnet", input_size=32)
    net = ZynqNet(cfg).eval()
    x = frames(2, cfg, 0)
    net.calibrate([x.float() / 256])
    logits = net.integer_forward(x)
    assert logits.shape == (2, 1000) and logits.dtype == torch.int64
    assert set(net.act_formats) >= {"c1", "f9", "c10"} and net.act_formats["c10"].signed
    p = net.integer_params()
    assert p["c10/p1"]["out_format"] == p["c10/p2"]["out_format"] == net.output_format
    net.set_mode("qat")
    net.double()
    with torch.no_grad():
        q = net(x.double() / 256)
    assert torch.equal(q, logits.double() * 2.0 ** -net.output_format.frac)
