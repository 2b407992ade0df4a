"""The resource model (export/resources.py) against the Yosys runs it is calibrated on.

The co-design search trusts ``export.resources.estimate`` for every candidate; these
tests hold it to the synthesis runs recorded in ``CALIBRATION`` (``make synth-estimate``
on random-weight exports of this RTL): DSP exactly, block RAM within one RAMB18 per RAM
kind, LUT and FF within the fit's stated error, and the coefficients equal to a refit.
"""

from __future__ import annotations

import pytest

from zynqflow.export import resources
from zynqflow.export.resources import CALIBRATION, FF_COEF, LUT_COEF, calibration_plan, estimate, fit

# the linear fit's worst error on the calibration runs (relative): Yosys's LUT mapping varies by
# about +-10 % between networks on the same engine (ABC), flip-flops far less
TOLERANCE = dict(lut=0.13, ff=0.05)


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
    assert est["dsp"] == point["dsp"] == point["n_pe"] * point["n_ci"] // 2
    # the BRAM model maps each RAM as memory_libmap does; Yosys sometimes saves half a RAMB36
    assert point["bram36"] - 1.0 <= est["bram36"] <= point["bram36"] + 1.0, est["rams"]
    for key in ("lut", "ff"):
        err = est[key] / point[key] - 1.0
        assert abs(err) <= TOLERANCE[key], f"{name}: {key} model {est[key]} vs Yosys {point[key]} ({err:+.1%})"


def test_estimate_grows_with_the_engine():
    small = estimate(calibration_plan(dict(net="zynqnet-mini", input_size=None, n_pe=8, n_ci=8)))
    big = estimate(calibration_plan(dict(net="zynqnet-mini", input_size=None, n_pe=32, n_ci=8)))
    assert big["dsp"] == 4 * small["dsp"] and big["lut"] > small["lut"] and big["ff"] > small["ff"]
    assert big["bram36"] >= small["bram36"]
    assert "Yosys" in resources.MODEL
