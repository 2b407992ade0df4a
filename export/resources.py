"""The resource model of the engine: DSP48E1, block RAM, LUTs and flip-flops of a
hardware plan, without running a synthesis tool (the co-design search calls it
for every candidate; ``make synth-estimate`` runs Yosys for the real count).

* **DSP48E1**: one per two MAC lanes (``N_PE * N_CI / 2``: two 8-bit weights
  share one multiplier, see rtl/zq_mac_array.sv).
* **Block RAM**: every RAM of the RTL (activation banks, the weight ring or
  cache, the stem's raw input rows, the GAP sums) from the plan's sizes, each
  mapped the way Yosys's ``memory_libmap`` maps it for xc7 (the cheapest
  arrangement of RAMB18E1 (0.5 RAMB36) or RAMB36E1 primitives in simple dual
  port mode, widths up to 36 / 72 bits); RAMs of at most ``LUTRAM_DEPTH`` words
  go to LUT RAM.
* **LUTs and flip-flops**: a linear model in the engine's parameters, fitted to
  Yosys ``synth_xilinx`` runs of this RTL (:data:`CALIBRATION`); the MAC array
  (per lane: the split of a packed product, adder-tree share, accumulator share)
  dominates. Its error against those runs is in ``CALIBRATION`` and checked by
  the tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MODEL = "resource model (export/resources.py): DSP = MAC lanes / 2, BRAM from the plan's RAMs, " \
        "LUT/FF linear fit to Yosys synth_xilinx runs"

LUTRAM_DEPTH = 64          # RAMs this shallow go to LUT RAM (RAM64M / RAM32M)
# (depth, width, RAMB36 equivalents) of the SDP arrangements: RAMB18E1 then RAMB36E1
_BRAM_SHAPES = ((16384, 1, 0.5), (8192, 2, 0.5), (4096, 4, 0.5), (2048, 9, 0.5), (1024, 18, 0.5), (512, 36, 0.5),
                (32768, 1, 1.0), (16384, 2, 1.0), (8192, 4, 1.0), (4096, 9, 1.0), (2048, 18, 1.0), (1024, 36, 1.0),
                (512, 72, 1.0))


@dataclass(frozen=True)
class Ram:
    name: str
    depth: int
    width: int
    copies: int = 1

    @property
    def bits(self) -> int:
        return self.depth * self.width * self.copies

    @property
    def bram36(self) -> float:
        if self.depth <= LUTRAM_DEPTH:
            return 0.0
        best = min(math.ceil(self.width / w) * math.ceil(self.depth / d) * c for d, w, c in _BRAM_SHAPES)
        return best * self.copies

    @property
    def lutram_luts(self) -> int:
        """LUTs of a LUT-RAM mapping (RAM64M: 3 bits x 64 words per 4 LUTs; RAM32M: 6 bits x 32)."""
        if self.depth > LUTRAM_DEPTH:
            return 0
        per = (6, 32) if self.depth <= 32 else (3, 64)
        return 4 * math.ceil(self.width / per[0]) * math.ceil(self.depth / per[1]) * self.copies


def rams(plan) -> list[Ram]:
    """Every RAM of the RTL twin for ``plan`` (zq_top and its modules)."""
    e = plan.engine
    st = plan.stem
    return [
        Ram("activation RAM (zq_act_mem)", plan.act_rows, e.n_ci * 8, e.wpg),
        Ram("weight ring / cache (zq_top u_wbuf)", plan.wbuf_depth, e.n_pe * e.n_ci * 8),
        Ram("stem raw rows (zq_stem)", st["in_size"], st["in_ch"] * 8, st["raw_rows"]),
        Ram("GAP sums (zq_gap)", plan.gap["rows"], e.n_pe * 32),
        Ram("output unit FIFO (zq_out_dma)", 64, e.n_pe * 8),
        Ram("output burst commands (zq_out_dma)", 64, 37),
        Ram("bias queue (zq_mac_array)", 8, e.n_pe * 32),
        Ram("layer counters (zq_top)", max(2, plan.n_layers), 32, 2),
    ]


# Yosys 0.23 ``synth_xilinx -family xc7`` of rtl/ (make synth-estimate) on these random-weight
# exports (export.fixtures.random_export(net, n_pe=, n_ci=, input_size=)): what Yosys counted.
# LUT/FF below are the least-squares fit of :func:`fit` to them; tests/test_resources.py refits,
# checks every point and the BRAM model against the same runs.
def _searched(name: str, stem: int, fires: tuple[tuple[int, int, bool], ...]) -> dict:
    """A 32x32 Fashion-MNIST network of the co-design search: (squeeze, expand, downsample) per fire."""
    return dict(name=name, input_size=32, in_channels=1, num_classes=10, stem=stem, head_splits=1,
                fires=[dict(squeeze=q, expand1=e, expand3=e, downsample=d) for q, e, d in fires])


CALIBRATION: dict[str, dict] = {
    "zynqnet-random0-pe16ci16": dict(net="zynqnet", input_size=None, n_pe=16, n_ci=16,
                                     lut=19157, ff=24092, bram36=100.0, dsp=128),
    "zynqnet-mini-random0-pe16ci8": dict(net="zynqnet-mini", input_size=None, n_pe=16, n_ci=8,
                                         lut=17182, ff=15730, bram36=49.0, dsp=64),
    "zynqnet-mini-random0-pe8ci8": dict(net="zynqnet-mini", input_size=None, n_pe=8, n_ci=8,
                                        lut=10224, ff=8792, bram36=48.0, dsp=32),
    "zynqnet-128-random0-pe32ci8": dict(net="zynqnet", input_size=128, n_pe=32, n_ci=8,
                                        lut=25871, ff=28752, bram36=133.0, dsp=128),
    # hardware in the loop of the Fashion-MNIST study (docs/dse.md): trained proxy weights
    "dse-t29-pe32ci8": dict(net=_searched("dse-t29", 32, ((16, 16, False), (32, 32, True), (64, 128, True),
                                                          (64, 64, True))),
                            input_size=None, n_pe=32, n_ci=8, lut=22489, ff=27224, bram36=61.0, dsp=128),
    "dse-t30-pe32ci8": dict(net=_searched("dse-t30", 32, ((32, 32, True), (32, 32, True), (64, 64, True))),
                            input_size=None, n_pe=32, n_ci=8, lut=22342, ff=27054, bram36=61.0, dsp=128),
    "dse-t33-pe32ci8": dict(net=_searched("dse-t33", 32, ((32, 16, True), (8, 16, True), (64, 16, True))),
                            input_size=None, n_pe=32, n_ci=8, lut=22330, ff=27083, bram36=32.5, dsp=128),
}
# lut = a0 + a1 * lanes + a2 * n_pe + a3 * n_ci (+ the LUT RAM of the small RAMs); ff likewise
LUT_COEF = (7229.32, 27.11, 230.53, 0.0)
FF_COEF = (2951.68, 69.0, 217.22, 0.0)


def _linear(coef, e) -> float:
    return coef[0] + coef[1] * e.n_pe * e.n_ci + coef[2] * e.n_pe + coef[3] * e.n_ci


def calibration_plan(point: dict):
    """The hardware plan of a :data:`CALIBRATION` point (the export Yosys synthesized)."""
    from zynqflow.export.plan import EngineParams, plan_layout
    from zynqflow.spec.topology import NetConfig, get_config

    net = point["net"]
    cfg = NetConfig.from_dict(net) if isinstance(net, dict) else get_config(net, input_size=point["input_size"])
    return plan_layout(cfg, EngineParams(point["n_pe"], point["n_ci"]))


def fit(calibration: dict[str, dict] = CALIBRATION) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Least-squares LUT and FF coefficients (a0, a1 per lane, a2 per PE, a3 = 0) over the
    calibration runs; the LUT target excludes the LUT RAM that :func:`estimate` adds itself."""
    import numpy as np

    rows, lut, ff = [], [], []
    for point in calibration.values():
        lutram = sum(r.lutram_luts for r in rams(calibration_plan(point)))
        rows.append((1.0, point["n_pe"] * point["n_ci"], point["n_pe"]))
        lut.append(point["lut"] - lutram)
        ff.append(point["ff"])
    a = np.array(rows)
    lut_c = np.linalg.lstsq(a, np.array(lut, float), rcond=None)[0]
    ff_c = np.linalg.lstsq(a, np.array(ff, float), rcond=None)[0]
    return (tuple(round(float(v), 2) for v in lut_c) + (0.0,),
            tuple(round(float(v), 2) for v in ff_c) + (0.0,))


def estimate(plan) -> dict:
    """dsp, bram36, lut, ff (numbers comparable with bench.synth_estimate) and the RAMs behind them."""
    e = plan.engine
    rs = rams(plan)
    lutram = sum(r.lutram_luts for r in rs)
    return dict(
        dsp=e.n_pe * e.n_ci // 2,
        bram36=sum(r.bram36 for r in rs),
        lut=int(round(_linear(LUT_COEF, e) + lutram)),
        ff=int(round(_linear(FF_COEF, e))),
        model=MODEL,
        rams=[dict(name=r.name, depth=r.depth, width=r.width, copies=r.copies, bram36=r.bram36,
                   lutram_luts=r.lutram_luts) for r in rs],
    )
