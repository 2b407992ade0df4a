"""The HLS engine's cycle model (zynqflow.spec.cycles_hls): on the presets, against the RTL
twin's model (never faster), the MAC-loop part equal to the plan's MAC cycles, and its loop
schedule against the C simulation: the engine built with -DZQ_COUNT_ITERATIONS counts every
pipelined loop's entries and iterations per layer, which must equal the model's, for the first
frame (the weight cache loading) and the frames after it."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from zynqflow.export.plan import EngineParams, plan_layout
from zynqflow.spec import engine as E
from zynqflow.spec.cycles import predict
from zynqflow.spec.cycles_hls import HLS_TIMING, LABEL, PHASES, HlsTiming, loop_counts, predict_hls
from zynqflow.spec.topology import get_config

PRESETS = {  # name -> (preset, input size, N_PE, N_CI)
    "zynqnet-tiny": ("zynqnet-tiny", None, 16, 8),
    "zynqnet-mini": ("zynqnet-mini", None, 16, 8),
    "zynqnet-64": ("zynqnet", 64, 16, 16),
    "zynqnet-256": ("zynqnet", 256, 16, 16),
}


def _plan(key: str):
    name, size, pe, ci = PRESETS[key]
    return plan_layout(get_config(name, input_size=size), EngineParams(pe, ci))


@pytest.mark.parametrize("key", list(PRESETS))
def test_model_on_presets(key):
    plan = _plan(key)
    for cached in (True, False):
        h, r = predict_hls(plan, cached=cached), predict(plan, cached=cached)
        assert h["label"] == LABEL and "not Vitis-scheduled" in h["label"] and "not measured" in h["label"]
        assert set(r["frame"]) <= set(h["frame"]), "frame keys of spec.cycles.predict missing"
        assert [l["name"] for l in h["layers"]] == [l.name for l in plan.layers]
        for hl, pl in zip(h["layers"], plan.layers):
            assert {"name", "cycles", "mac_cycles", "bound", "macs"} <= set(hl)
            assert hl["mac_cycles"] == pl.mac_cycles == hl["loops"]["mac"][0]
            assert hl["cycles"] == sum(hl["phase_cycles"].values())
            assert hl["bound"] in ("compute", "input stream", "ddr read", "weights", "ddr write")
        f = h["frame"]
        assert f["mac_cycles"] == plan.mac_cycles
        assert f["cycles"] > sum(l["cycles"] for l in h["layers"])
        assert f["period_cycles"] == f["cycles"] + HLS_TIMING.restart
        assert f["fps"] == pytest.approx(100e6 / f["period_cycles"]) == f["fps_at_100mhz"]
        assert 0 < f["utilization"] < 1
        # the sequential HLS engine is never faster than the RTL twin's overlapped schedule
        assert f["cycles"] >= r["frame"]["cycles"], (key, cached, f["cycles"], r["frame"]["cycles"])
        assert f["dram_rd_bytes"] >= 8 * 3
        if plan.ddr_tensors:
            assert f["dram_wr_bytes"] > 0 and f["dram_rd_bytes"] > 0
        else:
            assert f["dram_wr_bytes"] == 0
    # the first frame of a weight-cache build loads the image
    if plan.weight_cache:
        first, later = predict_hls(plan, cached=False)["frame"], predict_hls(plan)["frame"]
        assert first["dram_rd_bytes"] - later["dram_rd_bytes"] == plan.image_words * plan.engine.word_bytes
        assert first["cycles"] > later["cycles"] + plan.image_words * plan.engine.word_bytes // 8
    print(f"\n{key}: HLS {predict_hls(plan)['frame']['fps']:.1f} fps, RTL {predict(plan)['frame']['fps']:.1f} fps")


def test_model_parameters():
    plan = _plan("zynqnet-64")
    base = predict_hls(plan)["frame"]
    slow = predict_hls(plan, memory=dataclasses.replace(E.MEMORY_MODEL, read_latency=64))["frame"]
    assert slow["cycles"] > base["cycles"]
    assert predict_hls(plan, clock_mhz=150.0)["frame"]["fps"] == pytest.approx(base["fps"] * 1.5)
    deeper = predict_hls(plan, timing=dataclasses.replace(HLS_TIMING, depth_mac=HLS_TIMING.depth_mac + 1))
    n_mac_loops = sum(l["loops"]["mac"][1] for l in deeper["layers"])
    assert deeper["frame"]["cycles"] - base["cycles"] == n_mac_loops


def test_timing_constants_are_derived():
    """Every HlsTiming constant is named (and so derived) in its docstring, which says they are
    estimates; the dataclass is frozen."""
    doc = HlsTiming.__doc__
    for f in dataclasses.fields(HlsTiming):
        assert f"``{f.name}``" in doc, f"HlsTiming.{f.name} is not derived in the docstring"
    assert "estimate" in doc and "Vitis" in doc
    with pytest.raises(dataclasses.FrozenInstanceError):
        HLS_TIMING.depth_mac = 1


def test_spec_stays_torch_free_and_below_export():
    code = ("import sys, zynqflow.spec.cycles_hls; "
            "print([m for m in sys.modules if m.split('.')[0] == 'torch' or m.startswith('zynqflow.export')])")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip() == "[]"


# ---- against the C simulation's loop counts ----------------------------------------------
needs_cxx = pytest.mark.skipif(shutil.which(os.environ.get("CXX", "g++")) is None,
                               reason="no C++ compiler (g++) for the C simulation")


def _export(which: str):
    from zynqflow.export import fixtures

    return {
        "tiny": lambda: fixtures.random_export("zynqnet-tiny"),
        "mini": lambda: fixtures.random_export("zynqnet-mini"),
        "zq64-ddr": lambda: fixtures.random_export("zynqnet", input_size=64, n_pe=16, n_ci=16, act_kb=24),
        "zq256": lambda: fixtures.random_export("zynqnet", n_pe=16, n_ci=16, vectors=1),
        "rgb": lambda: fixtures.variant_export("rgb"),
        "wide": lambda: fixtures.variant_export("wide"),
    }[which]()


def _times(counts: dict, k: int) -> dict:
    row = lambda r: {ph: (k * v[0], k * v[1]) for ph, v in r.items()}  # noqa: E731
    return dict(layers=[row(r) for r in counts["layers"]], frame=row(counts["frame"]))


@needs_cxx
@pytest.mark.parametrize("which", ["tiny", "mini", "zq64-ddr", "zq256", "rgb", "wide"])
def test_loop_counts_match_csim(which):
    """Per layer and loop: the entries and iterations the C simulation counts equal the model's
    (stem rows with 1, 3 and 12 input channels, one or two units per stem pixel, DDR fills and
    writes in several passes, the weight ring and the weight cache)."""
    from zynqflow.export.exporter import load_plan
    from zynqflow.sim import csim
    from zynqflow.spec.qnet import QNet

    d = _export(which)
    plan = load_plan(d)
    sim = csim.CSim(d, count=True)
    shape = QNet.load_npz(d / "integers.npz").input_shape
    n = 1 if which == "zq256" else 3
    frames = np.random.default_rng(7).integers(0, 256, (n,) + shape, dtype=np.uint8)
    sim.reset()
    sim.loop_counts()                              # clear
    sim.run(frames[:1])
    first = sim.loop_counts()
    assert first == loop_counts(plan, cached=False), "first frame after a reset"
    assert first["frame"]["rest"] == (0, 1) and first["frame"]["out"] == (plan.gap["classes"], 1)
    assert [c["mac"][0] for c in first["layers"]] == [l.mac_cycles for l in plan.layers]
    if n > 1:
        sim.run(frames[1:])
        assert sim.loop_counts() == _times(loop_counts(plan, cached=True), n - 1), "frames after the first"
    beats, last = csim.frame_beats(frames[0])
    sim.send_raw(beats[:5], np.array([0, 0, 0, 0, 1], np.uint8))   # a short frame: aborted after the first fill
    short = sim.loop_counts()
    assert short["layers"][0]["raw"][1] >= 1 and short["frame"]["out"] == (plan.gap["classes"], 1)
    assert sum(c["mac"][1] + c["wload"][1] for c in short["layers"]) == 0
    assert all(c == (0, 0) for r in short["layers"][1:] for c in r.values())
    assert json.dumps(csim.PHASES) == json.dumps(PHASES)
