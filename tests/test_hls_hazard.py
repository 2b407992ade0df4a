"""The HLS core's pipeline hazards in C simulation (hls/csim/zq_hazard.h), and the exact HLS types.

The core's loop declares its RAMs free of inter-iteration dependences; its guards (AVAIL_GUARD,
RELEASE_GUARD = 2 x HLS_CORE_DEPTH + 1 iterations, spec/engine.py) keep every read away from a store in
flight. The hazard modes replay the loop as a pipeline would run it: ``late_stores`` lands every store
to the activation, weight and GAP RAMs and every slot release D iterations late (a read-after-write
hazard shows), ``late_reads`` runs the datapath's reads D iterations behind the control (a weight
beat overwriting a word still to be read shows). For every D up to twice the stated depth the logits
stay the golden model's; with the guards at 1 both modes give wrong logits.

``make test`` runs a representative subset (three delays on a stem-fed cached build and on ZynqNet
64x64 with DDR tensors and the weight ring, the guards at 1 on a weight-ring build of 8-beat words,
zynqnet-mini frames in the exact HLS types); every delay on every test network, and a full ZynqNet
frame in the exact types, are ``slow`` (and in ``make bench``: build/bench/hls_exact.json).
"""

from __future__ import annotations

import os
import shutil
import time

import numpy as np
import pytest

from zynqflow.export import fixtures
from zynqflow.sim.csim import runner as csim
from zynqflow.spec import engine as E
from zynqflow.spec.golden import golden_logits
from zynqflow.spec.qnet import QNet

pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CXX", "g++")) is None,
                                reason="no C++ compiler (g++) for the C simulation")

DEPTH = E.HLS_CORE_DEPTH
ALL_DELAYS = list(range(0, 2 * DEPTH + 1))
SOME_DELAYS = [0, DEPTH, 2 * DEPTH]

# the test networks of tests/test_hls_csim.py, a weight-ring build of 8-beat words, and ZynqNet 64x64 on a
# 32x16 engine with both activation paths and LUT lanes
NETS = fixtures.HLS_TEST_NETS


def _frames(d, n: int, seed: int = 5):
    q = QNet.load_npz(d / "integers.npz")
    f = np.random.default_rng(seed).integers(0, 256, (n,) + q.input_shape, dtype=np.uint8)
    return f, golden_logits(q, f)


def _sweep(name: str, delays, n_frames: int = 2, **build) -> dict:
    d = NETS[name]()
    sim = csim.CSim(d, **build)
    frames, want = _frames(d, n_frames)
    return sim.hazard_sweep(frames, want, delays)


@pytest.mark.parametrize("name", ["tiny", "zq64-ddr", "zq64-32x16"])
def test_hazards_within_the_guards(name):
    """Every store and release D iterations late, or every read, for D = 0, the stated depth and twice
    it: bit-exact (a cached stem-fed build; ZynqNet 64x64 with DDR tensors, halo rows, the weight ring,
    both activation paths; on 16x16 and on 32x16 with LUT lanes)."""
    if name != "tiny":   # the DDR layers read and write over both activation paths (issue 27)
        from zynqflow.export.exporter import load_plan

        plan = load_plan(NETS[name]())
        assert plan.act_paths == 2 and any(l.row["src_path"] == E.PATH_BOTH for l in plan.layers)
        assert any(l.row["dst_path"] == E.PATH_BOTH for l in plan.layers)
    res = _sweep(name, SOME_DELAYS)
    assert res == {hz: {d: 0 for d in SOME_DELAYS} for hz in ("late_stores", "late_reads")}, res


def test_hazards_with_the_guards_at_one():
    """The same pipeline with the guards cut to one iteration: the loop as written (D = 0) is still
    bit-exact, but late stores read rows and words before they land and late reads see weight words
    overwritten under them. With the real guards the same delays are bit-exact."""
    name = "mini-ring"
    m = NETS[name]()
    sim = csim.CSim(m, guard=1)
    assert sim.guards == dict(avail=1, release=1)
    frames, want = _frames(m, 2)
    bad = sim.hazard_sweep(frames, want, [0, 2 * DEPTH])
    assert bad["late_stores"][0] == 0 and bad["late_reads"][0] == 0
    assert bad["late_stores"][2 * DEPTH] == 2, bad      # read-after-write: AVAIL_GUARD
    assert bad["late_reads"][2 * DEPTH] == 2, bad       # write-after-read on the weight RAM: RELEASE_GUARD
    ok = csim.CSim(m)
    assert ok.guards == dict(avail=E.HLS_GUARD, release=E.HLS_GUARD)
    assert ok.hazard_sweep(frames, want, [2 * DEPTH]) == {"late_stores": {2 * DEPTH: 0}, "late_reads": {2 * DEPTH: 0}}


def test_bad_hazard_arguments():
    sim = csim.CSim(NETS["tiny"]())
    with pytest.raises(ValueError, match="late_stores"):
        sim.set_hazard("early_stores", 2)
    with pytest.raises(ValueError, match="not negative"):
        sim.set_hazard("late_reads", -1)
    with pytest.raises(ValueError, match="at least one"):
        csim.build(NETS["tiny"](), guard=0)


def test_exact_types_on_zynqnet_mini():
    """zynqnet-mini frames through the exact HLS types (ap_int datapath, ap_uint counters of the spec's
    widths, the synthesized shift-register guards), bit-exact, also with the stores late by twice the
    stated depth."""
    d = NETS["mini"]()
    sim = csim.CSim(d, native=False)
    assert "exact" in sim.lib_path.name
    frames, want = _frames(d, 6)
    got = sim.run(frames)
    assert np.array_equal(got, want) and got.std() > 0
    assert sim.hazard_sweep(frames[:2], want[:2], [2 * DEPTH], hazards=("late_stores",)) == \
        {"late_stores": {2 * DEPTH: 0}}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(NETS))
def test_hazards_every_delay(name):
    """Every D from 0 to twice the stated depth, both modes, on every test network."""
    res = _sweep(name, ALL_DELAYS)
    bad = {hz: {d: n for d, n in r.items() if n} for hz, r in res.items()}
    assert bad == {"late_stores": {}, "late_reads": {}}, bad


@pytest.mark.slow
@pytest.mark.parametrize("variant", [{}, {"act_paths": 1}, {"dsp_pairs": 256}])
def test_exact_types_full_zynqnet_frame(variant):
    """One full 256x256 ZynqNet frame through the exact HLS types, bit-exact: on the default 32x16 engine
    (two activation paths, 72 LUT lanes), with one path, and with every lane pair on a DSP48E1."""
    d = fixtures.random_export("zynqnet", n_pe=32, n_ci=16, act_kb=192, vectors=1, **variant)
    sim = csim.CSim(d, native=False)
    frames, want = _frames(d, 1, seed=256)
    t0 = time.perf_counter()
    got = sim.run(frames)
    print(f"\nzynqnet 256x256, exact HLS types: {time.perf_counter() - t0:.1f} s a frame")
    assert np.array_equal(got, want)


# A minimal hls_stream.h of Vitis's interface (UG1399, "HLS Stream Library": hls::stream<T, DEPTH>,
# read, write, read_nb, write_nb, empty, full), only for g++ to compile the engine as Vitis sees it.
VITIS_STREAM_H = r"""
#ifndef ZQ_TEST_VITIS_STREAM_H
#define ZQ_TEST_VITIS_STREAM_H
#include <deque>
namespace hls {
template <typename T, int DEPTH = 2>
class stream {
   public:
    stream() {}
    explicit stream(const char*) {}
    T read() { T v = q_.front(); q_.pop_front(); return v; }
    void read(T& v) { v = read(); }
    void write(const T& v) { q_.push_back(v); }
    bool read_nb(T& v) { if (q_.empty()) return false; v = read(); return true; }
    bool write_nb(const T& v) { if (full()) return false; write(v); return true; }
    bool empty() const { return q_.empty(); }
    bool full() const { return DEPTH > 0 && (int)q_.size() >= DEPTH; }
   private:
    std::deque<T> q_;
};
}  // namespace hls
#endif
"""


def test_vitis_form_compiles(tmp_path):
    """The engine as Vitis compiles it (-DZQ_VITIS: Vitis's hls::stream<T, DEPTH> and plain calls; the
    hazard hooks the plain store and step; the guards' shift registers) compiles with g++: no C-sim-only
    code leaks into the synthesized form."""
    (tmp_path / "hls_stream.h").write_text(VITIS_STREAM_H)
    d = NETS["zq64-ddr"]()
    cmd = [csim.compiler(), "-std=c++14", "-fsyntax-only", "-DZQ_VITIS", "-Wall", "-Werror", "-Wno-unknown-pragmas",
           "-Wno-unused-label", "-Wno-unused-variable", f"-I{tmp_path}", f"-I{d}", f"-I{csim.HLS_DIR}", "-isystem",
           str(csim.ap_types_dir()), str(csim.HLS_DIR / "zq_top.cpp")]
    import subprocess
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-4000:]
    text = (csim.HLS_DIR / "zq_core.h").read_text()
    assert "ZQ_NATIVE" in text.split("struct Delayed")[1].split("};")[0]   # the ring only in the native C-sim
