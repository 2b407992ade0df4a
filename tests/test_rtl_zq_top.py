"""The engine (rtl/zq_top.sv) under cocotb + Verilator, against the golden model, with the DDR
model of sim/world/ddr.py behind its two AXI4 masters.

Each test names the RTL it runs in its id: ``[rtl]`` is the hand-written
SystemVerilog in rtl/ (default); with ``RTL=hls`` the same testbench runs the
Vitis HLS export found at build/<net>/hls/**/impl/verilog/zq_top.v (or
``ZQ_HLS_VERILOG``), and the tests skip with a message when there is none.
Simulators are built once per export and cached under build/sim/.
``WAVES=1`` records dump.fst in build/sim/<build>/runs/<test>/.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

from zynqflow.export import fixtures as exports
from zynqflow.export.exporter import load_plan
from zynqflow.sim.rtl.runner import RTL_DIR, RTL_SOURCES, RtlUnavailable, SimBuild, rtl_kind
from zynqflow.spec import engine as E
from zynqflow.spec.cycles import RTL_TIMING, predict

KIND = rtl_kind()
pytestmark = pytest.mark.parametrize("rtl", [KIND])
ERR = E.ERROR_LOGIT


@pytest.fixture(scope="session")
def tiny():
    return exports.random_export("zynqnet-tiny", seed=0, vectors=16)


@pytest.fixture(scope="session")
def mini():
    return exports.random_export("zynqnet-mini", seed=0, vectors=4)


@pytest.fixture(scope="session")
def ddr64():
    """ZynqNet at 64x64 on a 16x16 engine with 24 KiB of activation RAM: three tensors in DDR
    (written and read back into rings over both activation paths: m_axi_act, m_axi_wts's writes,
    m_axi_act2's reads), streamed weights (a 512-word ring), 96 of the 128 lane pairs on DSP48E1 and
    64 lanes on LUT multipliers."""
    return exports.random_export("zynqnet", seed=0, vectors=2, n_pe=16, n_ci=16, input_size=64, act_kb=24,
                                  dsp_pairs=96)


_builds: dict = {}


def sim(export_dir, rtl: str) -> SimBuild:
    key = (str(export_dir), rtl)
    if key not in _builds:
        try:
            _builds[key] = SimBuild(export_dir, rtl).build()
        except RtlUnavailable as e:
            pytest.skip(str(e))
    return _builds[key]


def run(export_dir, rtl, testcase, run_name=None, **env):
    return sim(export_dir, rtl).run(testcase, {f"ZQ_{k.upper()}": str(v) for k, v in env.items()},
                                    run_name=run_name or testcase)


def issue_cycles(l) -> int:
    """Cycles of a layer that never waits: its MAC steps, one G_BAND cycle per band, one bias
    step per (band, group) block, and the fixed per-layer overhead (counted in zq_top/zq_loop_gen/
    zq_core: row fetch, decode, write-wait check, start, G_IDLE, G_PREP; G_END, the 20-stage
    pipeline, the busy register and T_DRAIN)."""
    return l.mac_cycles + l.n_bands * (1 + l.co_groups) + 29


def check_layers(ex, measured: list[dict], tol: float = 0.03, first_frame: bool = False) -> None:
    """Every layer within ``tol`` of the cycle model (of the first frame after a reset, which
    reads a cached weight image, when ``first_frame``); layers without stalls exactly at the
    independent count of issue_cycles."""
    plan = load_plan(ex)
    model = predict(plan, cached=not first_frame)["layers"]
    man = json.loads((ex / "manifest.json").read_text())
    assert RTL_TIMING.layer_overhead == 29
    for m, p, pl, ml in zip(measured, model, plan.layers, man["layers"]):
        assert abs(p["cycles"] - m["cycles"]) <= tol * m["cycles"], (m, p)
        if m["stalls"] == 0:
            assert m["cycles"] == issue_cycles(pl), (m, pl)
        if not first_frame:
            assert ml["cycles_model"] == p["cycles"]


# ---- logits ------------------------------------------------------------------
@pytest.mark.xdist_group("rtl-tiny")
def test_tiny_logits_back_to_back(tiny, rtl):
    """16 export vectors + 24 random frames, auto-restart, back to back: bit-exact, in order."""
    r = run(tiny, rtl, "run_frames", run_name="tiny_vectors", frames=16, source="vectors", mode="auto")
    assert r["mismatches"] == [] and r["frames"] == 16 and r["frames_done"] == 16
    assert np.array_equal(np.array(r["logits"]), np.fromfile(tiny / "vectors_out.bin", "<i4").reshape(16, -1))
    r = run(tiny, rtl, "run_frames", run_name="tiny_random", frames=24, source="random:11", mode="auto")
    assert r["mismatches"] == [] and r["frames_done"] == 24 and r["extra_output_frames"] == 0
    # distinct frames give distinct outputs, so order / loss / repetition would show
    assert len({tuple(x) for x in r["expected"]}) == 24


@pytest.mark.xdist_group("rtl-mini")
def test_mini_logits(mini, rtl):
    """zynqnet-mini (N_PE=16, N_CI=8, weights cached on chip), 4 frames back to back: bit-exact;
    the weight image is read once; each later frame reads only its header (the cache check)."""
    r = run(mini, rtl, "run_frames", run_name="mini_vectors", frames=4, source="vectors", mode="auto")
    assert r["mismatches"] == [] and r["frames_done"] == 4
    assert np.array_equal(np.array(r["logits"]), np.fromfile(mini / "vectors_out.bin", "<i4").reshape(4, -1))
    man = json.loads((mini / "manifest.json").read_text())
    mem = man["memory"]
    assert man["engine"]["weight_cache"] and r["ddr"]["wts_bytes"] == mem["weight_image_bytes"] + 3 * mem["header_bytes"]


@pytest.mark.xdist_group("rtl-ddr64")
def test_ddr_tensors_and_streamed_weights(ddr64, rtl):
    """Tensors in DDR and a weight ring smaller than the image, two frames back to back: both
    bit-exact (the second frame re-streams the image into a ring the first one left full), DDR
    traffic as planned, every layer within 3 % of the cycle model."""
    r = run(ddr64, rtl, "run_frames", run_name="ddr64", frames=2, source="random:2", mode="auto")
    assert r["mismatches"] == [] and r["frames_done"] == 2
    man = json.loads((ddr64 / "manifest.json").read_text())
    assert man["memory"]["scratch_bytes"] > 0 and not man["engine"]["weight_cache"]
    t = man["memory"]["ddr_tensors"]
    n_pe = man["engine"]["n_pe"]
    wr = sum(-(-v["channels"] // n_pe) * n_pe * v["size"] ** 2 for v in t.values())
    assert r["ddr"]["act_wr_bytes"] == 2 * wr and r["ddr"]["wts_bytes"] == 2 * man["memory"]["weight_image_bytes"]
    if man["engine"].get("act_paths") == 2:     # lines and rows alternate: both paths carry half
        assert 0 < r["ddr"]["wts_wr_bytes"] < 2 * wr and 0 < r["ddr"]["act2_rd_bytes"] < r["ddr"]["act_rd_bytes"]
    if rtl == "rtl":
        f = r["figures"]
        assert f["dram_wr_bytes"] == wr and f["dram_rd_bytes"] == r["ddr"]["act_rd_bytes"] // 2 + \
            man["memory"]["weight_image_bytes"]
        check_layers(ddr64, r["layers"])


@pytest.mark.xdist_group("rtl-tiny")
def test_backpressure(tiny, rtl):
    """Random gaps and stalls on both streams and every AXI4 channel: identical logits."""
    plain = run(tiny, rtl, "run_frames", run_name="tiny_plain", frames=12, source="random:21", mode="auto")
    bp = run(tiny, rtl, "run_frames", run_name="tiny_backpressure", frames=12, source="random:21", mode="auto",
             backpressure=1, seed=3)
    assert bp["mismatches"] == [] and bp["frames_done"] == 12
    assert bp["logits"] == plain["logits"]
    assert bp["sim_cycles"] > plain["sim_cycles"]   # the pauses did happen


@pytest.mark.xdist_group("rtl-ddr64")
def test_backpressure_ddr_single(ddr64, rtl):
    """One ap_start per frame, with backpressure on the streams and the DDR ports."""
    r = run(ddr64, rtl, "run_frames", run_name="ddr64_backpressure", frames=1, source="random:4", mode="single",
            backpressure=1, seed=5)
    assert r["mismatches"] == [] and r["frames_done"] == 1


@pytest.mark.parametrize("variant", [pytest.param(v, marks=pytest.mark.xdist_group(f"rtl-{v}")) for v in ("rgb", "wide")])
def test_variant_networks(variant, rtl):
    """Corner cases of the layer table and engine parameters (see zynqflow.export.fixtures.variant_config):
    RGB im2col, N_CI=4 / one-bank engines, signed tensors, partial words, odd concat offsets, GAP shift 0,
    left-shift requantization, a non-im2col 3x3 stem. Bit-exact; cycles per layer as modelled."""
    ex = exports.variant_export(variant)
    r = run(ex, rtl, "run_frames", run_name=f"variant_{variant}", frames=8, source="vectors", mode="auto")
    assert r["mismatches"] == [] and r["frames_done"] == 8
    if rtl == "rtl":
        check_layers(ex, r["layers"])


@pytest.mark.xdist_group("rtl-reference")
@pytest.mark.skipif(not exports.REFERENCE_CKPT.exists(),
                    reason=f"no reference checkpoint at {exports.REFERENCE_CKPT}")
def test_reference_checkpoint(rtl):
    """The trained Fashion-MNIST zynqnet-mini: 8 test-set frames, bit-exact."""
    ex, labels = exports.checkpoint_export(exports.REFERENCE_CKPT, frames=8)
    r = run(ex, rtl, "run_frames", run_name="reference", frames=8, source="vectors", mode="auto")
    assert r["mismatches"] == [] and r["frames_done"] == 8


# ---- control, protocol, faults ------------------------------------------------------
@pytest.mark.xdist_group("rtl-tiny")
def test_reset_mid_frame(tiny, rtl):
    """ap_rst_n while a frame streams in, while it computes and while its logits stream out."""
    r = run(tiny, rtl, "reset_mid_frame")
    assert r["frames_done"] == 1 and r["logits"] == r["expected"]
    assert r["log"]["after_output_reset"]["frames_done"] == 0


@pytest.mark.xdist_group("rtl-tiny")
def test_protocol_errors(tiny, rtl):
    """Short, long and one-beat frames; a frame without TLAST: one output frame per input frame."""
    r = run(tiny, rtl, "protocol_errors")
    short, long_ = E.STATUS["short_frame"].mask, E.STATUS["long_frame"].mask
    assert [x["status"] & E.STATUS_FLAGS_MASK for x in r["log"]] == [short, 0, long_, 0, short]
    assert all(v == ERR for v in r["log"][0]["logits"]) and all(v == ERR for v in r["log"][2]["logits"])
    assert r["frames_done"] == 3 and all(v == ERR for v in r["missing_tlast"][0] + r["missing_tlast"][1])


@pytest.mark.parametrize("net", [pytest.param("tiny", marks=pytest.mark.xdist_group("rtl-tiny")),
                                 pytest.param("ddr64", marks=pytest.mark.xdist_group("rtl-ddr64-faults"))])
def test_ddr_faults(net, rtl, request):
    """SLVERR on a weight read and on an activation write, a base address out of range, a weight
    image of another network: each sets its status bit and answers with an error frame; the next
    frame is right."""
    ex = request.getfixturevalue(net)
    r = run(ex, rtl, "ddr_faults", run_name=f"ddr_faults_{net}")
    whats = [x["what"] for x in r["log"]]
    assert "weight read error" in whats and "weight image of another network" in whats
    assert ("activation write error" in whats) == (net == "ddr64")
    for x in r["log"]:
        assert (x["status"] & E.STATUS_FLAGS_MASK == 0) == x["what"].startswith("good frame")


@pytest.mark.xdist_group("rtl-tiny")
def test_registers(tiny, rtl):
    r = run(tiny, rtl, "registers")
    man = json.loads((tiny / "manifest.json").read_text())
    assert r["net_id"] == man["network_id_int"]
    assert r["build_params"] == E.build_params(16, 8, 8, 8) == man["engine"]["build_params"]
    info = E.decode_engine_info(r["engine_info"])
    assert info["spec_version"] == E.SPEC_VERSION and info["rtl_twin"] == (rtl == "rtl")
    if rtl == "rtl":
        assert all(f["cycles_last"] == f["measured"] for f in r["frames"])


@pytest.mark.parametrize("net", [pytest.param("tiny", marks=pytest.mark.xdist_group("rtl-tiny")),
                                 pytest.param("mini", marks=pytest.mark.xdist_group("rtl-mini"))])
def test_layer_cycles(net, rtl, request):
    """The measured layer_cycles of every layer against the cycle model (within 3 %) and, for the
    layers that never stall, against the independent count of issue steps plus overhead."""
    ex = request.getfixturevalue(net)
    if rtl != "rtl":
        pytest.skip("layer profiling registers exist in the RTL twin only")
    r = run(ex, rtl, "layer_cycles", run_name=f"layer_cycles_{net}")
    assert r["beyond"] == 0
    check_layers(ex, r["layers"], first_frame=True)
    plan = load_plan(ex)
    model = predict(plan, cached=False)["frame"]["cycles"]     # the first frame after reset reads the image
    assert abs(r["cycles_last"] - model) <= 0.01 * model


# ---- static checks ----------------------------------------------------------------
def test_exports_with_the_same_parameters_share_one_simulator(tiny, rtl):
    """The build is keyed by what is compiled (sources, rtl_params.svh), not by the export's path:
    the same network with other test vectors uses the same simulator; other weights (another
    network ID in the parameters) get another."""
    if rtl != "rtl":
        pytest.skip("the HLS export's build is keyed by its Verilog")
    other_vectors = exports.random_export("zynqnet-tiny", seed=0, vectors=4)
    other_weights = exports.random_export("zynqnet-tiny", seed=1, vectors=4)
    assert other_vectors != tiny and (other_vectors / "rtl_params.svh").read_text() == \
        (tiny / "rtl_params.svh").read_text()
    assert SimBuild(other_vectors, rtl).build_dir == SimBuild(tiny, rtl).build_dir
    assert SimBuild(other_weights, rtl).build_dir != SimBuild(tiny, rtl).build_dir


def test_spec_generated_files_are_current(rtl):
    """hls/zq_spec.h, rtl/zq_spec.svh and docs/engine-spec.md are what spec/gen.py writes now."""
    p = subprocess.run([sys.executable, "-m", "zynqflow.spec.gen", "--check"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_register_offsets_follow_vitis_rules(rtl):
    """The shared registers sit where Vitis HLS 2023.2 would put the top function's arguments,
    derived here from hls/zq_top.h (its argument list, in order) by the documented rules: the
    block-control words at 0x00-0x0C, then per argument 8 bytes for a <= 32-bit input scalar,
    12 bytes for a 64-bit input (an m_axi offset=slave pointer, or the
    64-bit `wts` and `act` addresses of the offset=off masters), 16 bytes for an output scalar with ap_vld; no gaps.
    RTL-only registers lie above the last shared one and collide with nothing."""
    text = (RTL_DIR.parent / "hls" / "zq_top.h").read_text()
    m = re.search(r"void\s+zq_top\s*\((.*?)\)\s*;", text, re.S)
    assert m, "no zq_top prototype in hls/zq_top.h"
    args = [a.strip() for a in re.sub(r"//[^\n]*", "", m.group(1)).split(",") if a.strip()]
    pragmas = "".join(f.read_text() for f in sorted((RTL_DIR.parent / "hls").glob("*.[hc]*")))
    axilite = set(re.findall(r"mode=s_axilite\s+port=(\w+)", pragmas))
    off, derived = 0x10, {}
    for a in args:
        name = re.search(r"(\w+)\s*(\[\s*\w*\s*\])?$", a).group(1)
        if "stream" in a or name not in axilite:
            continue                                  # AXI4-Stream, or m_axi with offset=off: no register
        if "*" in a or re.match(r"(zq_addr_t|ap_uint<64>)\s", a):   # 64-bit: m_axi offset=slave, or an address
            derived[name], off = off, off + 12
        elif "&" in a:                                # output scalar, ap_vld
            derived[name], off = off, off + 16
        else:                                         # input scalar
            derived[name], off = off, off + 8
    hls = E.offsets("hls")
    assert {k: hls[k] for k in derived} == derived
    assert [hls[n] for n in ("AP_CTRL", "GIE", "IER", "ISR")] == [0x00, 0x04, 0x08, 0x0C]
    shared_end = off
    rtl_only = [r for r in E.REGMAP_RTL if "hls" not in r.engines]
    assert all(r.offset >= shared_end for r in rtl_only)
    spans = sorted((r.offset, r.offset + r.footprint) for r in E.REGMAP_RTL)
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), spans
    # the generated pragmas carry the same offsets
    pragmas = (RTL_DIR.parent / "hls" / "zq_spec.h").read_text()
    for name, o in derived.items():
        assert re.search(rf"port={name}\b[^\n]*offset=0x{o:x}\b", pragmas, re.I), name


def test_no_width_casts_inside_concatenations(rtl):
    """`P'(expr)` inside a concatenation is read differently by Yosys 0.23 (it drops the cast: a
    register table came out shifted, and a pipeline lost the MAC array's results); the RTL keeps
    such casts out of concatenations (a sized wire or a function instead)."""
    bad = []
    for f in sorted(RTL_DIR.glob("*.sv")):
        text = re.sub(r"//[^\n]*", "", f.read_text())
        depth, start = 0, 0
        for i, ch in enumerate(text):
            if ch == "{":
                depth, start = depth + 1, (i if depth == 0 else start)
            elif ch == "}" and depth:
                depth -= 1
                seg = text[start:i + 1]
                casts = re.findall(r"(\w+)'\(", seg)
                if depth == 0 and any(not c.isdigit() for c in casts):
                    bad.append(f"{f.name}:{text[:start].count(chr(10)) + 1}: {' '.join(seg.split())[:80]}")
    assert not bad, bad


def test_verilator_lint(tiny, rtl):
    """verilator --lint-only -Wall is clean (unused-signal and the Vitis port name `interrupt` aside)."""
    from zynqflow.sim.rtl.runner import _ensure_verilator
    _ensure_verilator()
    p = subprocess.run(["verilator", "--lint-only", "-Wall", "-Wno-UNUSEDSIGNAL", "-Wno-SYMRSVDWORD",
                        "-Wno-PINCONNECTEMPTY", f"-I{tiny}", f"-I{RTL_DIR}", "--top-module", "zq_top"]
                       + [str(RTL_DIR / s) for s in RTL_SOURCES], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]


@pytest.mark.skipif(shutil.which("yosys") is None, reason="yosys not installed")
def test_yosys_elaborates(tiny, rtl):
    """The RTL is in the subset Yosys reads: parse and elaborate zq_top (no synthesis)."""
    src = " ".join(str(RTL_DIR / s) for s in RTL_SOURCES)
    cmd = f"read_verilog -defer -sv -I{tiny} -I{RTL_DIR} {src}; hierarchy -check -top zq_top; proc; check -assert"
    p = subprocess.run(["yosys", "-q", "-p", cmd], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]


def test_elaboration_checks_reject_bad_parameters(tiny, rtl):
    """N_PE not a multiple of N_CI (and N_CI < 4) stop elaboration with the module's $error."""
    from zynqflow.sim.rtl.runner import _ensure_verilator
    _ensure_verilator()
    p = subprocess.run(["verilator", "--lint-only", "-Wno-fatal", "-Werror-USERERROR", "-Wno-WIDTH", "-GN_PE=12",
                        "-GN_CI=8", f"-I{tiny}", f"-I{RTL_DIR}", "--top-module", "zq_top"]
                       + [str(RTL_DIR / s) for s in RTL_SOURCES], capture_output=True, text=True, timeout=300)
    assert p.returncode != 0 and "N_PE=12" in p.stdout + p.stderr
