"""The RTL twin against a realistic and a hostile DDR (issue 16): the memory presets of
spec.engine.MemoryModel on the cocotb path (sim/ddr_model.py), the bugs they found, each held by
a test that fails on the RTL before its fix, and the proof that the memory's protocol checkers
fire (the broken master, sim/harness/zq_maxi_echo.sv).

Exports: ``mini16`` is zynqnet-mini on a 16x16 engine with 12 KiB of activation RAM and no
weight cache: two tensors in DDR (c1, f2), layers in bands fed from DDR, streamed weights, 1x1
layers of one input chunk (one MAC step per output pixel) that write DDR; ``tiny`` is
zynqnet-tiny (on chip, cached weights); ``probe1x1`` a fire net whose last layers run on a 1x1
map (a layer of one MAC step).
"""

from __future__ import annotations

import json

import pytest

from zynqflow.export import fixtures as exports
from zynqflow.sim.rtl_sim import RtlUnavailable, SimBuild, rtl_kind

KIND = rtl_kind()
pytestmark = pytest.mark.skipif(KIND != "rtl", reason="the memory scenarios watch the RTL twin's internal signals")


@pytest.fixture(scope="session")
def mini16():
    return exports.random_export("zynqnet-mini", seed=0, vectors=2, n_pe=16, n_ci=16, act_kb=12, wcache_kb=0)


@pytest.fixture(scope="session")
def tiny():
    return exports.random_export("zynqnet-tiny", seed=0, vectors=16)


_builds: dict = {}


def run(export_dir, testcase, run_name=None, **env):
    key = str(export_dir)
    if key not in _builds:
        try:
            _builds[key] = SimBuild(export_dir, "rtl").build()
        except RtlUnavailable as e:
            pytest.skip(str(e))
    env = {f"ZQ_{k.upper()}": (json.dumps(v) if isinstance(v, dict) else str(v)) for k, v in env.items()}
    return _builds[key].run(testcase, env, run_name=run_name or testcase)


def test_busy_hole_isolated_last_step(mini16):
    """The busy hole, on every run: the memory holds W so that f2/e1's last step (it writes DDR)
    is issued alone, long after the one before it; the frame must be bit-exact."""
    r = run(mini16, "busy_hole", target_layer="f2/e1", frame_budget=400_000)
    assert r["isolator"]["done"] and r["isolator"]["gap"] >= 25, r["isolator"]


def test_reset_with_reads_in_flight(tiny):
    """ap_rst_n while the weight port has its reads in flight; the memory answers them after the
    reset (as the PS's HP port does) with data the host has since overwritten: the next frames must
    drop those late beats (and stay within 8 reads outstanding), bit-exact with status 0."""
    r = run(tiny, "reset_reads_in_flight", frame_budget=200_000)
    assert r["in_flight"] == 8 and r["status"] == 0


def test_slave_waits_for_wvalid(mini16):
    """A slave that holds AWREADY until it sees WVALID (AXI A3.3.1 allows it): every DDR write
    still goes out, the frame is bit-exact."""
    r = run(mini16, "run_frames", run_name="aw_waits_for_w", frames=1, source="random:3", mode="single",
            memory="ideal", memory_overrides={"aw_waits_for_w": True}, frame_budget=200_000)
    assert r["mismatches"] == [] and r["status"] == 0


@pytest.mark.parametrize("preset,seed", [("pynq-z2", 1), ("stress", 1), ("stress", 2)])
def test_presets_mini_in_ddr(mini16, preset, seed):
    """zynqnet-mini with tensors in DDR, layers in bands fed from DDR and streamed weights, under
    the board's memory and the hostile one (every channel gapped and stalled, bandwidth far below
    demand, AWREADY held until WVALID): bit-exact, status 0, no AXI rule broken, no hang (a frame
    over its budget fails naming the layer and the cycle)."""
    r = run(mini16, "run_frames", run_name=f"{preset}_{seed}", frames=2, source=f"random:{seed}", mode="single",
            memory=preset, memory_overrides={"seed": seed}, frame_budget=1_500_000)
    assert r["mismatches"] == [] and r["status"] == 0 and r["frames_done"] == 2


@pytest.mark.parametrize("preset", ["pynq-z2", "stress"])
def test_presets_on_chip(tiny, preset):
    """zynqnet-tiny (activations on chip, weights cached) under each preset, frames back to back."""
    r = run(tiny, "run_frames", run_name=f"{preset}", frames=6, source="random:5", mode="auto", memory=preset,
            frame_budget=300_000)
    assert r["mismatches"] == [] and r["status"] == 0 and r["frames_done"] == 6


def test_busy_hole_one_step_layer():
    """The busy hole without any memory trick: a layer of one MAC step (f4/e1 on a 1x1 map) issues
    it alone after its set-up, so it is in the address stages when nothing else is in flight (the
    bug engineer 20 found with a 1x1 final map): bit-exact over 4 frames."""
    ex = exports.variant_export("map1x1", vectors=4)
    man = json.loads((ex / "manifest.json").read_text())
    assert min(l["mac_cycles"] for l in man["layers"]) == 1
    r = run(ex, "run_frames", run_name="map1x1", frames=4, source="vectors", mode="auto", frame_budget=100_000)
    assert r["mismatches"] == [] and r["status"] == 0


def test_checkers_fire_on_the_broken_master():
    """The DDR model's protocol checks, each proven to fire: the echo DUT's FAULT register breaks
    one rule per frame (a 17-beat burst, a 4 KiB crossing, ARSIZE, AWBURST, a missing WLAST, VALID
    withdrawn and payload changed on AR, AW and W, 9 reads and 9 writes outstanding); each frame
    gets exactly its check's message, naming the cycle, the port and the channel. The correct echo
    passes every check, also against a slave that waits for WVALID, which deadlocks a master whose
    W waits for AWREADY."""
    from zynqflow.sim.module_sim import ModuleBuild

    res = ModuleBuild("zq_maxi_echo").run()
    msgs = res["info"]["checkers_fire"]["messages"]
    assert sorted(int(k) for k in msgs) == list(range(1, 14))
    assert all(m and all(x.startswith("cycle ") for x in m) for m in msgs.values()), msgs
