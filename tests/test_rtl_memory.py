"""The RTL twin against a realistic and a hostile DDR (issue 16): the memory presets of
spec.engine.MemoryModel on the cocotb path (sim/world/ddr.py), the bugs they found, each held by
a test that fails on the RTL before its fix, and the proof that the memory's protocol checkers
fire (the broken master, sim/harness/zq_maxi_echo.sv).

Exports: ``memory`` (export/fixtures.py: variant_config) is a small network that uses DDR in
every way the engine can, 8 k cycles a frame: tensors in DDR, layers in bands fed from DDR,
streamed weights, a 1x1 layer that writes DDR at twice a port's rate, two 1x1 stride-2 layers
reading DDR back to back, layers of one MAC step; ``tiny`` is zynqnet-tiny (on chip, weights
cached). The busy hole with a 1x1 final map is also held by
tests/test_qonnx_import.py::test_rtl_final_map_1x1 and the zq_loop_gen testbench.
"""

from __future__ import annotations

import json

import pytest

from zynqflow.export import fixtures as exports
from zynqflow.sim.rtl.runner import RtlUnavailable, SimBuild, rtl_kind

KIND = rtl_kind()
pytestmark = pytest.mark.skipif(KIND != "rtl", reason="the memory scenarios watch the RTL twin's internal signals")


@pytest.fixture(scope="session")
def memory():
    return exports.variant_export("memory", vectors=4)


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


def test_busy_hole_isolated_last_step(memory):
    """The busy hole, on every run: the memory holds W so that e2's last step (it writes DDR) is
    issued alone, long after the one before it; that frame and the next must be bit-exact."""
    r = run(memory, "busy_hole", target_layer="e2", frame_budget=200_000)
    assert r["isolator"]["done"] and r["isolator"]["gap"] >= 25, r["isolator"]


def test_busy_hole_one_step_layers(memory):
    """The busy hole without a memory trick: e8 and e9 are one MAC step each (1x1 maps), issued
    alone after their layer's set-up (engineer 20's 1x1-final-map bug); frames back to back."""
    man = json.loads((memory / "manifest.json").read_text())
    assert [l["mac_cycles"] for l in man["layers"][-2:]] == [1, 1]
    r = run(memory, "run_frames", run_name="one_step", frames=4, source="vectors", mode="auto", frame_budget=100_000)
    assert r["mismatches"] == [] and r["status"] == 0


def test_input_dma_drained_between_layers(memory):
    """d3 (1x1, stride 2) never reads the last row of t2; the memory answers it after d3's loop has
    ended; d3b, which reads t2 from DDR next, must not take those beats."""
    r = run(memory, "late_last_row", target_layer="d3", frame_budget=100_000)
    assert r["held_past_layer"] == 2 and r["mismatches"] == [] and r["status"] == 0


def test_reset_with_reads_in_flight(tiny):
    """ap_rst_n while the weight port has its reads in flight; the memory answers them after the
    reset (as the PS's HP port does) with data the host has since overwritten: the next frames must
    drop those late beats (and stay within 8 reads outstanding), bit-exact with status 0."""
    r = run(tiny, "reset_reads_in_flight", frame_budget=200_000)
    assert r["in_flight"] == 8 and r["status"] == 0


def test_slave_waits_for_wvalid(memory):
    """A slave that holds AWREADY until it sees WVALID (AXI A3.3.1 allows it): every DDR write
    still goes out, the frame is bit-exact."""
    r = run(memory, "run_frames", run_name="aw_waits_for_w", frames=1, source="random:3", mode="single",
            memory="ideal", memory_overrides={"aw_waits_for_w": True}, frame_budget=100_000)
    assert r["mismatches"] == [] and r["status"] == 0


@pytest.mark.parametrize("preset,seed", [("pynq-z2", 1), ("stress", 1), ("stress", 2), ("stress", 3)])
def test_presets_tensors_in_ddr(memory, preset, seed):
    """The DDR network under the board's memory and the hostile one (every channel gapped and
    stalled, bandwidth far below demand, AWREADY held until WVALID), frames back to back:
    bit-exact, status 0, no AXI rule broken, no hang (a frame over its budget fails naming the
    layer and the cycle)."""
    r = run(memory, "run_frames", run_name=f"{preset}_{seed}", frames=3, source=f"random:{seed}", mode="auto",
            memory=preset, memory_overrides={"seed": seed}, frame_budget=400_000)
    assert r["mismatches"] == [] and r["status"] == 0 and r["frames_done"] == 3


@pytest.mark.parametrize("preset", ["pynq-z2", "stress"])
def test_presets_on_chip(tiny, preset):
    """zynqnet-tiny (activations on chip, weights cached) under each preset, frames back to back."""
    r = run(tiny, "run_frames", run_name=f"{preset}", frames=6, source="random:5", mode="auto", memory=preset,
            frame_budget=300_000)
    assert r["mismatches"] == [] and r["status"] == 0 and r["frames_done"] == 6



def test_checkers_fire_on_the_broken_master():
    """The DDR model's protocol checks, each proven to fire: the echo DUT's FAULT register breaks
    one rule per frame (a 17-beat burst, a 4 KiB crossing, ARSIZE, AWBURST, a missing WLAST, VALID
    withdrawn and payload changed on AR, AW and W, 9 reads and 9 writes outstanding); each frame
    gets exactly its check's message, naming the cycle, the port and the channel. The correct echo
    passes every check, also against a slave that waits for WVALID, which deadlocks a master whose
    W waits for AWREADY."""
    from zynqflow.sim.rtl.modules import ModuleBuild

    res = ModuleBuild("zq_maxi_echo").run()
    msgs = res["info"]["checkers_fire"]["messages"]
    assert sorted(int(k) for k in msgs) == list(range(1, 14))
    assert all(m and all(x.startswith("cycle ") for x in m) for m in msgs.values()), msgs


def test_ddr_writes_go_through_cocotbs_write_queue():
    """The DDR model writes its signals through cocotb's own write queue (sim/world/ddr.py,
    ``signal_writer``: about a sixth of a DDR test's CPU). Those names are cocotb's private ones:
    a cocotb without them makes the model fall back to the public setter, slower but the same bits,
    and this test says so instead of the suite getting slower unnoticed."""
    import inspect

    from zynqflow.sim.world import ddr

    assert ddr._schedule_write is not None, (
        "cocotb.handle has no _schedule_write / _GPISetAction: sim/world/ddr.py's signal_writer "
        "falls back to `h.value = v`")
    params = list(inspect.signature(ddr._schedule_write).parameters)
    assert params == ["handle", "write_func", "action", "value"], params
