"""The resource model (export/resources.py) against the Yosys runs it is calibrated on.

The co-design search trusts ``export.resources.estimate`` for every candidate; these
tests hold it to the synthesis runs recorded in ``CALIBRATION`` (``make synth-estimate``
on random-weight exports of this RTL): DSP exactly, block RAM within one RAMB18 per RAM
kind, LUT and FF within the fit's stated error, and the coefficients equal to a refit.
"""

from __future__ import annotations

import pytest

from zynqflow.export import resources
from zynqflow.export.resources import (CALIBRATION, FF_COEF, LUT_COEF, calibration_plan, calibration_target, estimate,
                                      fit)

# the linear fit's worst error on the calibration runs (relative): Yosys's LUT mapping varies by
# about +-10 % between networks on the same engine (ABC), flip-flops far less. With the 512-lane
# point of issue 27 (LUT lanes, two paths) the three-coefficient fit is held to it within 3 % and
# is off by up to 14.8 % LUT (zynqnet-mini on 16 x 8) and 6.2 % FF (8 x 8) on the small engines
TOLERANCE = dict(lut=0.15, ff=0.07)


@pytest.fixture(scope="module")
def estimates():
    return {name: estimate(calibration_plan(point)) for name, point in CALIBRATION.items()}


def test_calibration_is_overdetermined():
    # more synthesis runs than free coefficients (a0, per lane, per PE): the fit can be wrong
    assert len(CALIBRATION) >= 6
    engines = {(p["n_pe"], p["n_ci"]) for p in CALIBRATION.values()}
    assert len(engines) >= 4


def test_coefficients_are_the_refit():
    lut, ff = fit()
    assert LUT_COEF == pytest.approx(lut, rel=0.01, abs=1.0)
    assert FF_COEF == pytest.approx(ff, rel=0.01, abs=1.0)


@pytest.mark.parametrize("name", sorted(CALIBRATION))
def test_estimate_against_yosys(name, estimates):
    point, est = CALIBRATION[name], estimates[name]
    assert est["dsp"] == point["dsp"] == (point.get("dsp_pairs") or point["n_pe"] * point["n_ci"] // 2)
    # the BRAM model maps each RAM as memory_libmap does; Yosys sometimes saves half a RAMB36
    assert point["bram36"] - 1.0 <= est["bram36"] <= point["bram36"] + 1.0, est["rams"]
    for key, want in zip(("lut", "ff"), calibration_target(point)):
        err = est[key] / want - 1.0
        assert abs(err) <= TOLERANCE[key], f"{name}: {key} model {est[key]} vs Yosys {want:.0f} ({err:+.1%})"


def test_estimate_grows_with_the_engine():
    small = estimate(calibration_plan(dict(net="zynqnet-mini", input_size=None, n_pe=8, n_ci=8)))
    big = estimate(calibration_plan(dict(net="zynqnet-mini", input_size=None, n_pe=32, n_ci=8)))
    assert big["dsp"] == 4 * small["dsp"] and big["lut"] > small["lut"] and big["ff"] > small["ff"]
    assert big["bram36"] >= small["bram36"]
    assert "Yosys" in resources.MODEL


def test_hls_variant():
    """The HLS engine's memories as its pragmas lay them out (hls/): the activation RAM's WPG banks as
    the RTL's, the weight RAM as BPW banks of 64-bit beats, the stem's raw rows, the m_axi adapters'
    buffers; never less BRAM than the RTL twin's; LUT/FF above the RTL fit (the adapters); the full
    ZynqNet's 16x16 build fits the xc7z020. The search evaluates the variant it targets."""
    from zynqflow.dse import hw_model
    from zynqflow.spec.topology import get_config

    plan = calibration_plan(dict(net="zynqnet", input_size=None, n_pe=16, n_ci=16))
    rtl, hls = estimate(plan), estimate(plan, "hls")
    names = {r["name"].split(" (")[0]: r for r in hls["rams"]}
    assert names["weight RAM wbuf"]["copies"] == 16 * 16 // 8 and names["weight RAM wbuf"]["width"] == 64
    assert names["activation RAM act_ram"]["copies"] == plan.engine.wpg
    assert sum(1 for n in names if n.startswith("m_axi")) == 3
    assert hls["dsp"] == rtl["dsp"] == 128
    assert rtl["bram36"] + 8 <= hls["bram36"] <= 140 and hls["lut"] > rtl["lut"] and hls["ff"] > rtl["ff"]
    assert hls["lut"] <= 53200 and hls["ff"] <= 106400 and "HLS" in hls["model"] and hls["engine"] == "hls"
    with pytest.raises(ValueError, match="engine 'vhdl'"):
        estimate(plan, "vhdl")
    cfg = get_config("zynqnet")
    r_rtl, r_hls = hw_model.evaluate(cfg, 32, 8, engine="rtl"), hw_model.evaluate(cfg, 32, 8, engine="hls")
    assert r_hls["engine"] == "hls" and "cycles_hls" in r_hls["model"]
    assert r_hls["bram36"] > r_rtl["bram36"]
    assert max(hw_model.violations(r_rtl, "xc7z020").values()) <= 0 < hw_model.violations(r_hls, "xc7z020")["bram36"]


def test_lut_lanes_second_path_and_block_design():
    """LUT lanes trade DSP48E1 for LUTs and flip-flops (the modules' own Yosys counts), the second
    activation path adds its DMAs' logic and a second output FIFO, the block design's estimate
    names each IP with the source of its figure; the full ZynqNet's default engine (32 x 16, 220
    DSP48E1, 72 LUT lanes, both paths) fits the xc7z020 with the block design within 80 % of its LUTs."""
    from zynqflow.export.plan import EngineParams, default_engine, plan_layout
    from zynqflow.spec.topology import get_config

    cfg = get_config("zynqnet")
    a = plan_layout(cfg, EngineParams(16, 16, act_paths=1))
    b = plan_layout(cfg, EngineParams(16, 16, act_paths=1, dsp_pairs=96))
    c = plan_layout(cfg, EngineParams(16, 16, act_paths=2))
    ea, eb, ec = estimate(a), estimate(b), estimate(c)
    assert (ea["dsp"], eb["dsp"], eb["lut_lanes"]) == (128, 96, 64)
    assert eb["lut"] == pytest.approx(ea["lut"] + 64 * resources.LUT_LANE["lut"], abs=1)
    assert eb["ff"] == pytest.approx(ea["ff"] + 64 * resources.LUT_LANE["ff"], abs=1)
    fifo = sum(r["lutram_luts"] for r in ec["rams"]) - sum(r["lutram_luts"] for r in ea["rams"])
    assert fifo > 0 and ec["lut"] == pytest.approx(ea["lut"] + resources.PATH2["lut"] + fifo, abs=1)
    bd_a, bd_c = resources.block_design(a), resources.block_design(c)
    assert bd_c["lut"] == bd_a["lut"] + resources.PROTOCOL_CONVERTER["lut"]          # act2_pc
    assert all(i["source"] for i in bd_c["items"]) and "TRANSLATION_MODE 0" in bd_c["items"][0]["source"]
    assert any("PR #1054" in i["source"] for i in bd_c["items"])
    zn = plan_layout(cfg, default_engine(cfg))
    ez, bz = estimate(zn), resources.block_design(zn)
    assert (ez["dsp"], ez["lut_lanes"]) == (220, 72) and ez["bram36"] <= 120
    assert ez["lut"] + bz["lut"] <= 0.80 * 53200
    # the model at 512 lanes against its Yosys run (make synth-estimate NET=zynqnet)
    point = resources.CALIBRATION["zynqnet-random0-pe32ci16-lut72"]
    assert calibration_plan(point).engine.dsp48e1 == zn.engine.dsp48e1 == 220 and point["n_pe"] * point["n_ci"] == zn.engine.lanes
    assert abs(ez["lut"] / point["lut"] - 1) <= 0.03 and abs(ez["ff"] / point["ff"] - 1) <= 0.03
    assert ez["bram36"] == point["bram36"] and ez["dsp"] == point["dsp"]
