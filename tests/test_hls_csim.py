"""The HLS engine (hls/) in C simulation (g++ and the hls4ml ap_types headers)
against the golden model, bit for bit.

Networks: random-weight exports from :mod:`zynqflow.export.fixtures` (cached
under build/sim/exports/): zynqnet-tiny and zynqnet-mini (16x8, the whole image
in the weight cache), zynqnet at 64x64 on a 16x16 engine with a 24 KiB
activation budget (DDR tensors read back through row rings with halo rows,
streamed weight ring, stride 2, concatenations), the ``rgb`` variant (3-channel
im2col stem over four banks, signed tensors, a concatenation at a word offset)
and the ``wide`` variant (a stem that is not im2col'ed, one bank, the pool rounding ties to even); the reference
checkpoint's export on real Fashion-MNIST test images; one full-size 256x256
zynqnet frame. Also: the C testbench (passes, and fails on corrupted vectors),
the registers, short / long / missing-TLAST frames, foreign weight images, the
weight cache, the exhaustive check of the packed DSP48E1 arithmetic, and the Vitis
HLS flow script under tclsh with the Vitis commands stubbed (no Vitis here).

The C simulation's own streams and scheduler (hls/csim/): the three modes agree bit for
bit; a FIFO too small for UG1399's dataflow example deadlocks and the watchdog names the
streams (Vitis's own sequential C simulation passes it); the engine with a ring smaller
than its layer needs deadlocks the same way; every engine stream at depth 1 still runs
(no reconvergent path needs a deep FIFO). Layers that read the region they write are
refused by the planner and by the C++ table check. The counts behind the HLS cycle model
are checked in tests/test_cycles_hls.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from zynqflow.export import fixtures
from zynqflow.sim.csim import runner as csim
from zynqflow.spec import engine as E
from zynqflow.spec.golden import golden_logits
from zynqflow.spec.qnet import QNet

pytestmark = pytest.mark.skipif(shutil.which(os.environ.get("CXX", "g++")) is None,
                                reason="no C++ compiler (g++) for the C simulation")

ERR = csim.ERROR_LOGIT

# name -> (export maker, random frames compared with the golden model)
NETS = {
    "tiny": (lambda: fixtures.random_export("zynqnet-tiny"), 64),
    "mini": (lambda: fixtures.random_export("zynqnet-mini"), 32),
    "zq64-ddr": (lambda: fixtures.random_export("zynqnet", input_size=64, n_pe=16, n_ci=16, act_kb=24, dsp_pairs=96), 16),
    "rgb": (lambda: fixtures.variant_export("rgb"), 32),
    "wide": (lambda: fixtures.variant_export("wide"), 32),
}


def _frames(rng: np.random.Generator, n: int, shape: tuple[int, ...]) -> np.ndarray:
    """n random uint8 frames, the first four extreme (all 0, all 255, checkerboard, sparse)."""
    f = rng.integers(0, 256, (n,) + shape, dtype=np.uint8)
    f[0] = 0
    f[1] = 255
    yy, xx = np.indices(shape[:2])
    f[2] = (((yy + xx) % 2) * 255)[..., None].astype(np.uint8)
    f[3] = np.where(rng.random(shape) < 0.1, 255, 0).astype(np.uint8)
    return f


_NETS: dict[str, SimpleNamespace] = {}


def _net(name: str) -> SimpleNamespace:
    """The export, its C-sim library (native build) and random frames with golden logits, once per session."""
    if name not in _NETS:
        make, n = NETS[name]
        d = make()
        qnet = QNet.load_npz(d / "integers.npz")
        man = json.loads((d / "manifest.json").read_text())
        frames = _frames(np.random.default_rng(len(name)), n, qnet.input_shape)
        _NETS[name] = SimpleNamespace(name=name, dir=d, qnet=qnet, man=man, sim=csim.CSim(d), frames=frames,
                                      golden=golden_logits(qnet, frames), k=qnet.num_classes)
    return _NETS[name]


@pytest.fixture(scope="module", params=sorted(NETS))
def net(request):
    return _net(request.param)


@pytest.fixture(scope="module", params=["tiny", "zq64-ddr"])
def pnet(request):
    """Protocol tests: a cached-weights build and a weight-ring build with DDR tensors."""
    return _net(request.param)


@pytest.fixture(scope="module")
def tiny():
    return _net("tiny")


def _expect_same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    bad = np.flatnonzero(~np.all(got == want, axis=1))
    assert np.array_equal(got, want), f"{what}: {len(bad)} of {len(want)} frames differ, first {bad[:5].tolist()}"


# ---- the packed DSP48E1 ---------------------------------------------------------
def test_packed_dsp_exhaustive(tmp_path_factory):
    """Both versions of the two-MACs-per-DSP split (ap_int and int64) equal the two plain
    products for every w_hi, w_lo in [-128, 127] and every 9-bit lane value in [-128, 255]; the
    LUT lane's plain product (the lane pairs beyond DSP_PAIRS) equals w * x for every pair."""
    rc, out = csim.run_dsp_test(tmp_path_factory.mktemp("dsp"), quiet=True)
    assert rc == 0, out
    assert "25165824 cases (49152 weight pairs with the pre-adder wrap), 0 mismatches" in out, out
    assert "LUT lane: 98304 cases, 0 mismatches" in out, out


# ---- bit exactness -------------------------------------------------------------
def test_export_covers_the_engine():
    """The test networks reach what they are here for (a planner change must not make them vacuous)."""
    m = _net("zq64-ddr").man
    kinds = {(l["src_kind"], l["dst_kind"]) for l in m["layers"]}
    assert ("stem", "ddr") in kinds and ("act", "ddr") in kinds and any(s == "ddr" for s, _ in kinds)
    assert any(l["bands"] > 1 and l["src_kind"] == "ddr" and l["k"] == 3 for l in m["layers"]), "no halo rows"
    assert any(l["stride"] == 2 and l["src_kind"] == "ddr" for l in m["layers"])
    assert any(l["dst_offset"] for l in m["layers"] if l["dst_kind"] == "ddr"), "no concatenation in DDR"
    assert not m["engine"]["weight_cache"] and m["memory"]["scratch_bytes"] > 0
    # issue 27: LUT lanes beside the DSP pairs, reads and writes over both activation paths
    assert m["engine"]["lut_lanes"] > 0 and m["engine"]["dsp48e1"] > 0 and m["engine"]["act_paths"] == 2
    from zynqflow.export.exporter import load_plan
    from zynqflow.spec import engine as E

    rows = [l.row for l in load_plan(_net("zq64-ddr").dir).layers]
    assert any(r["src_path"] == E.PATH_BOTH for r in rows) and any(r["dst_path"] == E.PATH_BOTH for r in rows)
    assert _net("mini").man["engine"]["weight_cache"]
    rgb, wide = _net("rgb").man, _net("wide").man
    assert rgb["engine"]["n_ci"] == 4 and any(l["dst_offset"] % 16 for l in rgb["layers"])   # mid-group word
    assert wide["layers"][0]["k"] == 3 and wide["layers"][0]["src_kind"] == "stem"   # not im2col'ed
    w = _net("wide")            # the pool rounds ties to even (4x4 map), and these frames have ties it decides
    assert (wide["output"]["gap_round"], wide["output"]["gap_shift"]) == ("half_even", 4)
    q = replace(w.qnet, cfg=replace(w.qnet.cfg, gap_round="half_up"))
    assert not np.array_equal(golden_logits(q, w.frames), w.golden)


def test_logits_match_golden(net):
    net.sim.reset()
    logits = net.sim.run(net.frames)
    assert logits.shape == (len(net.frames), net.k)
    _expect_same(logits, net.golden, f"{net.name} ({net.dir.name})")
    assert logits.std() > 0, "degenerate logits"


def test_export_vectors_match(net):
    frames = np.fromfile(net.dir / "vectors_in.bin", np.uint8).reshape((-1,) + net.qnet.input_shape)
    expect = np.fromfile(net.dir / "vectors_out.bin", "<i4").reshape(len(frames), -1)
    _expect_same(net.sim.run(frames), expect, f"{net.name} vectors")


def test_reference_checkpoint_on_fashion_mnist():
    """The committed reference checkpoint, exported, on real Fashion-MNIST test images."""
    if not fixtures.REFERENCE_CKPT.is_file():
        pytest.skip(f"{fixtures.REFERENCE_CKPT} is not there")
    d, labels = fixtures.checkpoint_export(fixtures.REFERENCE_CKPT, frames=32)
    qnet = QNet.load_npz(d / "integers.npz")
    frames = np.fromfile(d / "vectors_in.bin", np.uint8).reshape((-1,) + qnet.input_shape)
    assert len(frames) == 32 and frames.std() > 10, "not real images"
    logits = csim.CSim(d).run(frames)
    _expect_same(logits, golden_logits(qnet, frames), "reference checkpoint")
    _expect_same(logits, np.fromfile(d / "vectors_out.bin", "<i4").reshape(len(frames), -1), "vectors_out.bin")
    assert (logits.argmax(1) == labels).mean() >= 0.75, "the reference network should classify most images"


# ---- registers -----------------------------------------------------------------
def test_registers(net):
    sim, man = net.sim, net.man
    sim.reset()
    assert sim.registers()["frames_done"] == 0
    sim.run(net.frames[:3])
    assert sim.registers()["frames_done"] == 3
    sim.run(net.frames[3:5])
    r = sim.registers()
    e, cfg = man["engine"], net.qnet.cfg
    assert r["frames_done"] == 5 and r["status"] == 0
    assert r["net_id"] == man["network_id_int"]
    assert r["build_params"] == E.build_params(e["n_pe"], e["n_ci"], cfg.weight_bits, cfg.act_bits)
    assert r["engine_info"] == e["engine_info_hls"] == E.engine_info(False, e["weight_cache"],
                                                                     man["memory"]["scratch_bytes"] > 0)
    assert E.decode_engine_info(r["engine_info"])["spec_version"] == E.SPEC_VERSION


# ---- the C testbench ---------------------------------------------------------------
@pytest.mark.parametrize("name", ["tiny", "rgb", "wide", "zq64-ddr"])
def test_testbench_passes(name):
    """The C testbench (exact HLS types, what Vitis synthesizes) on the export's vectors and the
    protocol checks; ~15x slower than the native library: one test frame for the big network."""
    n = _net(name)
    assert csim.run_testbench(n.dir, quiet=True, max_frames=1 if name == "zq64-ddr" else None) == 0


def test_testbench_fails_on_corrupt_vectors(tiny, tmp_path):
    for f in ("vectors_in.bin", "weights.bin"):
        shutil.copy(tiny.dir / f, tmp_path / f)
    out = np.fromfile(tiny.dir / "vectors_out.bin", "<i4")
    out[3 * tiny.k + 2] ^= 1                         # one bit of one logit of frame 3
    out.astype("<i4").tofile(tmp_path / "vectors_out.bin")
    assert csim.run_testbench(tiny.dir, vectors_dir=tmp_path, quiet=True) == 1
    (tmp_path / "vectors_out.bin").write_bytes(b"\0" * 12)   # wrong size
    assert csim.run_testbench(tiny.dir, vectors_dir=tmp_path, quiet=True) == 2
    shutil.copy(tiny.dir / "vectors_out.bin", tmp_path / "vectors_out.bin")
    assert csim.run_testbench(tiny.dir, vectors_dir=tmp_path, quiet=True) == 0
    (tmp_path / "weights.bin").write_bytes((tiny.dir / "weights.bin").read_bytes()[:-8])  # truncated image
    assert csim.run_testbench(tiny.dir, vectors_dir=tmp_path, quiet=True) == 2
    shutil.copy(tiny.dir / "weights.bin", tmp_path / "weights.bin")
    man = json.loads((tiny.dir / "manifest.json").read_text())
    man["memory"]["scratch_bytes"] += 4096                   # a manifest of another build
    (tmp_path / "manifest.json").write_text(json.dumps(man))
    assert csim.run_testbench(tiny.dir, vectors_dir=tmp_path, quiet=True) == 2


# ---- protocol errors ------------------------------------------------------------------
def _last(n: int) -> np.ndarray:
    last = np.zeros(n, np.uint8)
    last[-1] = 1
    return last


def test_short_frame(pnet):
    sim, k = pnet.sim, pnet.k
    sim.reset()
    beats, last = csim.frame_beats(pnet.frames[4])
    for cut in (len(beats) // 2, 1, len(beats) - 1):
        out = sim.send_raw(beats[:cut], _last(cut))
        assert out.tolist() == [ERR] * k, f"cut at {cut} beats"
        assert sim.registers()["flags"] == ["short_frame"]
    r = sim.registers()
    assert r["error_frames"] == 3 and r["frames_done"] == 3
    assert np.array_equal(sim.send_raw(beats, last), pnet.golden[4])   # the next frame is right
    r = sim.registers()
    assert r["status"] == 3 << 16 and r["frames_done"] == 4


def test_long_frame(pnet):
    sim, k = pnet.sim, pnet.k
    sim.reset()
    beats, last = csim.frame_beats(pnet.frames[5])
    extra = np.array([0xDEADBEEF, 0x01234567, 0x89ABCDEF], np.uint32)
    long_beats = np.concatenate([beats, extra])
    out = sim.send_raw(long_beats, _last(len(long_beats)))
    assert out.tolist() == [ERR] * k
    r = sim.registers()
    assert r["flags"] == ["long_frame"] and r["error_frames"] == 1 and r["frames_done"] == 1
    assert np.array_equal(sim.send_raw(beats, last), pnet.golden[5])
    assert sim.registers()["status"] == 1 << 16


def test_missing_tlast(pnet):
    """A frame without TLAST runs into the next ones: each whole frame of drained beats is owed an
    error frame (drain_frames), so every input frame gets exactly one answer; the frame after is right."""
    sim, k = pnet.sim, pnet.k
    b = [csim.frame_beats(pnet.frames[i])[0] for i in (6, 7, 8, 9)]
    for n_after in (1, 2):                                    # frames the first one runs into
        sim.reset()
        run = np.concatenate(b[:1 + n_after])
        seq_b = np.concatenate([run, b[3]])
        seq_l = np.concatenate([_last(len(run)), _last(len(b[3]))])
        out = sim.send_raw(seq_b, seq_l).reshape(-1, k)
        assert out.shape == (n_after + 2, k)
        assert (out[:-1] == ERR).all()
        assert np.array_equal(out[-1], pnet.golden[9])
        r = sim.registers()
        assert r["frames_done"] == n_after + 2 and r["error_frames"] == n_after + 1 and r["status"] & 0xFFFF == 0


def test_mixed_stream_back_to_back(pnet):
    """good, short, long, good, good in one burst: one output frame per input frame."""
    sim, k = pnet.sim, pnet.k
    sim.reset()
    (b12, l12), (b13, l13) = csim.frame_beats(pnet.frames[10]), csim.frame_beats(pnet.frames[11])
    short_b, short_l = b13[:3], np.array([0, 0, 1], np.uint8)
    long_b = np.concatenate([b12, b13[:5]])
    seq_b = np.concatenate([b12, short_b, long_b, b13, b12])
    seq_l = np.concatenate([l12, short_l, _last(len(long_b)), l13, l12])
    out = sim.send_raw(seq_b, seq_l).reshape(-1, k)
    assert out.shape == (5, k)
    assert np.array_equal(out[0], pnet.golden[10]) and np.array_equal(out[3], pnet.golden[11])
    assert np.array_equal(out[4], pnet.golden[10])
    assert (out[1] == ERR).all() and (out[2] == ERR).all()
    r = sim.registers()
    assert r["frames_done"] == 5 and r["error_frames"] == 2 and r["status"] & 0xFFFF == 0


# ---- the weight image -------------------------------------------------------------------
def _header(sim) -> bytes:
    return sim.ddr_read(sim.bases["wts"], 4 * len(E.HEADER))


@pytest.mark.parametrize("field", ["magic", "spec_version", "net_id", "word_bytes", "n_words", "header_bytes"])
def test_foreign_weight_image(pnet, field):
    """A header that is not this engine's: status weight_image, an error frame, the frame (and its
    TLAST) consumed; with the header restored the next frame is right."""
    sim, k = pnet.sim, pnet.k
    sim.reset()
    base = sim.bases["wts"]
    i = [f.name for f in E.HEADER].index(field)
    good = _header(sim)
    sim.ddr_write(base + 4 * i, bytes([good[4 * i] ^ 0x01]))
    beats, last = csim.frame_beats(pnet.frames[12])
    assert sim.send_raw(beats, last).tolist() == [ERR] * k
    r = sim.registers()
    assert r["flags"] == ["weight_image"] and r["error_frames"] == 1
    sim.ddr_write(base, good)
    assert np.array_equal(sim.send_raw(beats, last), pnet.golden[12])
    assert sim.registers()["status"] == 1 << 16


def _other_image(n) -> tuple[bytes, np.ndarray]:
    """A weight image with this engine's header but other weights (the last layer's biases
    changed), and the golden logits of that network on the test frames."""
    from zynqflow.export.plan import EngineParams, plan_hardware

    q2 = QNet.load_npz(n.dir / "integers.npz")
    last = q2.layers[-1]
    last.b = last.b + (np.arange(last.b.size) % 7 - 3) * (1 << max(0, last.shift + 2))
    e = n.man["engine"]
    plan = plan_hardware(q2, EngineParams(e["n_pe"], e["n_ci"]))
    img = bytearray(plan.weight_image)
    assert len(img) == n.man["memory"]["weight_image_bytes"]
    img[: n.man["memory"]["header_bytes"]] = (n.dir / "weights.bin").read_bytes()[: n.man["memory"]["header_bytes"]]
    want = golden_logits(q2, n.frames[:4])
    assert not np.array_equal(want, n.golden[:4]), "the changed biases do not change the logits"
    return bytes(img), want


def _fresh_sim(n):
    """The network's library re-initialized (image reloaded, default bases, reset); a test that
    changes its DDR calls this again at the end, so that the other tests find it as it was."""
    return csim.CSim(n.dir, lib=n.sim.lib_path)


def test_weight_cache():
    """Cached build: the words are read once and stay until the cache is dropped (a header that is not
    this engine's, or a reset); the header is checked every frame, at the current `wts` address."""
    n = _net("mini")
    assert n.man["engine"]["weight_cache"]
    try:
        _weight_cache_steps(n, _fresh_sim(n))
    finally:
        _fresh_sim(n)


def _weight_cache_steps(n, sim) -> None:
    hdr = n.man["memory"]["header_bytes"]
    a, alt = sim.default_bases["wts"], sim.default_bases["wts_alt"]
    image = (n.dir / "weights.bin").read_bytes()
    other, want_other = _other_image(n)
    f = n.frames[:4]
    _expect_same(sim.run(f), n.golden[:4], "first frames")
    sim.ddr_write(a + hdr, bytes(len(image) - hdr))    # zero the words: the cache still has them
    _expect_same(sim.run(f), n.golden[:4], "cached words")
    sim.ddr_write(alt, other)                          # another image at another address: same header,
    sim.set_bases(wts=alt)                             # so the cached words are kept
    _expect_same(sim.run(f), n.golden[:4], "moved image, cached words kept")
    sim.reset()                                        # a reset drops the cache: the words at wts are read
    _expect_same(sim.run(f), want_other, "reloaded after a reset")
    sim.ddr_write(alt + 8, bytes([other[8] ^ 0xFF]))   # a foreign header drops the cache
    assert (sim.run(f[:1]) == ERR).all() and sim.registers()["flags"] == ["weight_image"]
    sim.ddr_write(alt, image)                          # the right image there again: read anew
    _expect_same(sim.run(f), n.golden[:4], "reloaded after a foreign header")
    sim.ddr_write(a, image)
    sim.set_bases(wts=a)
    _expect_same(sim.run(f), n.golden[:4], "back at the first address")


def test_weight_ring_reads_wts_every_frame():
    """Weight-ring build: every frame streams the words from the current `wts` address."""
    n = _net("zq64-ddr")
    assert not n.man["engine"]["weight_cache"]
    try:
        _weight_ring_steps(n, _fresh_sim(n))
    finally:
        _fresh_sim(n)


def _weight_ring_steps(n, sim) -> None:
    other, want_other = _other_image(n)
    f = n.frames[:4]
    sim.ddr_write(sim.default_bases["wts_alt"], other)
    sim.set_bases(wts=sim.default_bases["wts_alt"])
    _expect_same(sim.run(f), want_other, "the other image")
    sim.set_bases(wts=sim.default_bases["wts"])
    _expect_same(sim.run(f), n.golden[:4], "the export's image")
    sim.set_bases(act=sim.default_bases["act"] + 4096)  # the scratch area anywhere
    _expect_same(sim.run(f), n.golden[:4], "scratch area moved")
    with pytest.raises(csim.CSimError, match="past the simulated"):
        sim.set_bases(act=sim.ddr_bytes)


# ---- the full-size network ---------------------------------------------------------
def test_full_size_zynqnet_frame():
    """One 256x256 zynqnet frame (529 M MACs, 16x16 engine) through the native C simulation,
    equal to the golden model."""
    d = fixtures.random_export("zynqnet", n_pe=16, n_ci=16, vectors=1)
    qnet = QNet.load_npz(d / "integers.npz")
    frame = _frames(np.random.default_rng(256), 4, qnet.input_shape)[3:]
    sim = csim.CSim(d)
    t0 = time.perf_counter()
    logits = sim.run(frame)
    secs = time.perf_counter() - t0
    _expect_same(logits, golden_logits(qnet, frame), "zynqnet 256x256")
    print(f"\nzynqnet 256x256 C-sim frame: {secs:.2f} s")   # a figure (make bench has the speed), not a check


# ---- command line and errors ------------------------------------------------------------
def test_cli_writes_report(tiny, tmp_path):
    out = tmp_path / "csim.json"
    from zynqflow.bench import csim_eval
    rc = csim_eval.main(["--export", str(tiny.dir), "--frames", "48", "--data", "synthetic", "--out", str(out)])
    assert rc == 0
    res = json.loads(out.read_text())
    assert res["frames"] == 48 and res["mismatches_vs_golden"] == 0 and res["mismatched_logits"] == 0
    assert res["network_id"] == tiny.man["network_id"]
    assert res["top1"] == res["golden_top1"] and res["fps"] > 0 and res["testbench_rc"] == 0
    assert res["registers"]["frames_done"] == 48 and res["registers"]["engine_info"] == \
        tiny.man["engine"]["engine_info_hls"]
    hm = res["hls_model"]
    assert "modelled" in hm["label"] and hm["first_frame_cycles"] >= hm["cycles"] > 0 and hm["memory"] == "pynq-z2"
    assert hm["fps_at_100mhz"] == pytest.approx(hm["rtl_model_fps_at_100mhz"], rel=0.05)
    assert res["csim_mode"] == "lockstep"


def test_missing_compiler_is_named(tiny, monkeypatch, tmp_path):
    monkeypatch.setenv("CXX", "no-such-g++")
    with pytest.raises(csim.CSimError, match="no-such-g\\+\\+"):
        csim.build(tiny.dir, tmp_path)


def test_missing_weight_image_is_named(tiny, tmp_path):
    d = tmp_path / "export"
    shutil.copytree(tiny.dir, d)
    (d / "weights.bin").unlink()
    with pytest.raises(csim.CSimError, match="weights.bin"):
        csim.CSim(d, lib=tiny.sim.lib_path)


def test_bad_frames_rejected(tiny):
    with pytest.raises(ValueError):
        tiny.sim.run(np.zeros((2, 3, 3, 1), np.uint8))
    with pytest.raises(TypeError):
        tiny.sim.run(tiny.frames.astype(np.int16))


# ---- the Vitis HLS flow script (no Vitis here: tclsh with every Vitis command stubbed) ----------
MOCK_VITIS_HLS = r"""
set ::log [open $::env(MOCK_LOG) w]
rename exit real_exit
proc exit {{code 0}} { puts $::log "EXIT $code"; close $::log; real_exit $code }
proc unknown {args} { puts $::log $args; return "" }
source $::env(RUN_HLS_TCL)
"""


def _mock_run_hls(tmp_path, *args, env: dict | None = None) -> tuple[int, list[str], str]:
    if shutil.which("tclsh") is None:
        pytest.skip("no tclsh")
    (tmp_path / "mock.tcl").write_text(MOCK_VITIS_HLS)
    log = tmp_path / "vitis.log"
    log.unlink(missing_ok=True)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ZQ_HLS_", "ZQ_COSIM_"))}
    env = dict(base, **(env or {}), MOCK_LOG=str(log), RUN_HLS_TCL=str(csim.HLS_DIR / "scripts" / "run_hls.tcl"))
    p = subprocess.run(["tclsh", str(tmp_path / "mock.tcl"), *map(str, args)], capture_output=True, text=True,
                       env=env, timeout=60)
    return p.returncode, (log.read_text().splitlines() if log.exists() else []), p.stdout + p.stderr


def test_run_hls_tcl_flow(tmp_path):
    """run_hls.tcl (Vitis HLS 2023.2 / vitis-run Tcl): the part, the 10 ns clock, 64-bit m_axi addresses,
    the co-simulation depths from the export (image and scratch area in 64-bit beats), every source
    (every header of hls/, not the C simulation's scheduler) and the testbench, Vitis's own streams
    (-DZQ_VITIS), the four steps in order, a co-simulation of ZQ_COSIM_FRAMES frames without the
    protocol checks unless ZQ_COSIM_PROTOCOL=1; arguments from the command line or (vitis-run) the
    environment; zq_top's interface pragmas name the m_axi bundles wts, act and act2 (ports m_axi_wts,
    m_axi_act, m_axi_act2, with `latency=`) and the s_axilite bundle control (s_axi_control)."""
    d = NETS["zq64-ddr"][0]()                      # the export only (nothing compiled)
    n = SimpleNamespace(dir=d)
    mem = json.loads((d / "manifest.json").read_text())["memory"]
    rc, log, out = _mock_run_hls(tmp_path, n.dir, tmp_path / "hls")
    assert rc == 0 and log[-1] == "EXIT 0", out
    cmds = [l.split()[0] for l in log]
    assert [c for c in cmds if c.endswith("_design")] == ["csim_design", "csynth_design", "cosim_design",
                                                          "export_design"]
    assert "set_part xc7z020clg400-1" in log and "create_clock -period 10 -name default" in log
    assert "config_interface -m_axi_addr64" in log and "set_top zq_top" in log
    assert any(l.startswith("open_solution -reset solution1 -flow_target vivado") for l in log)
    adds = [l for l in log if l.startswith("add_files")]
    headers = sorted(p.name for p in csim.HLS_DIR.glob("*.h"))
    for f in ["zq_top.cpp", "tb_zq_top.cpp", *headers]:
        assert any(f in a for a in adds), f
    assert not any("zq_csim" in a for a in adds), "the C simulation's scheduler is not Vitis's business"
    assert any("-tb" in a and "tb_zq_top.cpp" in a for a in adds)
    flags = f"-DZQ_WTS_DEPTH={mem['weight_image_bytes'] // 8} -DZQ_ACT_DEPTH={max(1, mem['scratch_bytes'] // 8)}"
    assert all(flags in a and "-DZQ_USE_AP_AXI" in a and "-DZQ_VITIS" in a for a in adds)
    exp = next(l for l in log if l.startswith("export_design"))
    assert "-format ip_catalog" in exp and "-rtl verilog" in exp
    cos = next(l for l in log if l.startswith("cosim_design"))
    assert f"{n.dir} 1 0" in cos, cos                # one frame, no protocol checks
    # the co-simulation's frames and protocol switch; arguments from the environment (vitis-run)
    rc, log, out = _mock_run_hls(tmp_path, env=dict(ZQ_HLS_EXPORT=str(n.dir), ZQ_HLS_OUT=str(tmp_path / "hls4"),
                                                    ZQ_HLS_STEPS="cosim", ZQ_COSIM_FRAMES="3", ZQ_COSIM_PROTOCOL="1"))
    assert rc == 0, out
    assert [l.split()[0] for l in log if l.split()[0].endswith("_design")] == ["cosim_design"]
    assert f"{n.dir} 3 1" in next(l for l in log if l.startswith("cosim_design"))
    # steps, and a bad step or export directory
    rc, log, _ = _mock_run_hls(tmp_path, n.dir, tmp_path / "hls2", "csim,csynth")
    assert rc == 0 and [l.split()[0] for l in log if l.split()[0].endswith("_design")] == ["csim_design",
                                                                                           "csynth_design"]
    rc, _, out = _mock_run_hls(tmp_path, n.dir, tmp_path / "hls3", "csim,synth")
    assert rc == 2 and "unknown step 'synth'" in out
    rc, _, out = _mock_run_hls(tmp_path, tmp_path)
    assert rc == 2 and "net_params.h" in out
    rc, _, out = _mock_run_hls(tmp_path)
    assert rc == 2 and "ZQ_HLS_EXPORT" in out
    top = (csim.HLS_DIR / "zq_top.cpp").read_text()
    # three masters addressed by byte address from 0 (offset=off), their bases the spec's wts and act
    # registers (64-bit scalars): the register map stays the spec's (hls/README.md, "Interface")
    for port, bundle in (("wts_mem", "wts"), ("act_mem", "act"), ("act2_mem", "act2")):
        assert f"port={port} bundle={bundle} offset=off" in top, port
    assert "offset=slave" not in top and "zq_addr_t wts, zq_addr_t act" in top
    assert top.count("depth=ZQ_MEM_DEPTH") == 3 and "latency=ZQ_MAXI_LATENCY" in top
    assert "ZQ_WTS_DEPTH" in top and "ZQ_ACT_DEPTH" in top      # ZQ_MEM_DEPTH: the testbench's DDR from them
    spec_h = (csim.HLS_DIR / "zq_spec.h").read_text()
    for r in ("wts", "act", "status", "frames_done", "net_id", "build_params", "engine_info", "return"):
        assert f"port={r} " in spec_h and "bundle=control" in spec_h


def test_hls_sh_picks_the_tool(tiny, tmp_path):
    """hls.sh runs `vitis_hls -f run_hls.tcl -tclargs ...` (2023.2) or, where only vitis-run is installed
    (2024.2+), `vitis-run --mode hls --tcl run_hls.tcl` with the arguments in the environment."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("vitis_hls", "vitis-run"):
        (bin_dir / tool).write_text(f'#!/bin/sh\necho "{tool} $@ export=$ZQ_HLS_EXPORT steps=$ZQ_HLS_STEPS"\n')
        (bin_dir / tool).chmod(0o755)
    script = str(csim.HLS_DIR / "scripts" / "hls.sh")
    env = dict(os.environ, PATH=f"{bin_dir}:/usr/bin:/bin")
    p = subprocess.run(["bash", script, str(tiny.dir), str(tmp_path / "o1"), "csim"], capture_output=True,
                       text=True, env=env, timeout=60)
    assert p.returncode == 0 and "vitis_hls -l" in p.stdout and "-tclargs" in p.stdout, p.stdout + p.stderr
    (bin_dir / "vitis_hls").unlink()
    p = subprocess.run(["bash", script, str(tiny.dir), str(tmp_path / "o2"), "csim,csynth"], capture_output=True,
                       text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "vitis-run --mode hls --tcl" in p.stdout and f"export={tiny.dir}" in p.stdout
    assert "steps=csim,csynth" in p.stdout


def test_hls_sh_without_vitis(tiny, tmp_path):
    """hls.sh with no vitis_hls on PATH: exit 1 and a message naming it (and nothing created)."""
    env = dict(os.environ, PATH="/usr/bin:/bin")
    if shutil.which("vitis_hls", path=env["PATH"]):
        pytest.skip("vitis_hls is installed")
    p = subprocess.run(["bash", str(csim.HLS_DIR / "scripts" / "hls.sh"), str(tiny.dir), str(tmp_path / "out")],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 1 and "vitis_hls not found" in p.stderr and "vitis-run" in p.stderr
    assert not (tmp_path / "out").exists()


# ---- the C simulation's streams and scheduler (hls/csim/) ----------------------------------------
@pytest.mark.parametrize("name", ["rgb", "zq64-ddr"])
def test_modes_agree(name):
    """Threads and sequential (Vitis's csim semantics) give the golden logits too, bit for bit, as the
    default lockstep does (every other test), on a stem of three channels and on DDR tensors with the
    weight ring."""
    n = _net(name)
    try:
        for mode in ("threads", "sequential"):
            n.sim.set_mode(mode)
            n.sim.reset()
            _expect_same(n.sim.run(n.frames[:4]), n.golden[:4], f"{name}, {mode} mode")
    finally:
        n.sim.set_mode("lockstep")


def test_fifo_too_small_deadlocks(tmp_path_factory):
    """UG1399's deadlocking dataflow (proc_1 writes 10 items to data_channel1 before one to data_channel2,
    proc_2 reads data_channel2 first): with data_channel1 shorter than 10 the C simulation deadlocks,
    threads or lockstep, and the watchdog fails the run naming both processes and streams; with its
    declared depth it passes. Vitis's own sequential C simulation passes whatever the depth."""
    out = tmp_path_factory.mktemp("csim_streams")
    for mode in ("threads", "lockstep"):
        rc, text = csim.run_stream_test(out, mode, 10)
        assert rc == 0 and "PASS" in text, text
        rc, text = csim.run_stream_test(out, mode, 9)
        assert rc == 3, text
        assert "deadlock" in text and f"({mode} mode)" in text
        assert "'proc_1': blocked writing stream 'data_channel1' (full: 9 of depth 9)" in text
        assert "'proc_2': blocked reading stream 'data_channel2' (empty" in text
    rc, text = csim.run_stream_test(out, "sequential", 1)
    assert rc == 0 and "PASS" in text, text


def _patched_export(n, tmp_path, layer: int, field: str, value: int):
    """A copy of the export whose layer-table row `layer` has `field` = value (net_params.h)."""
    d = tmp_path / "export"
    shutil.copytree(n.dir, d)
    p = d / "net_params.h"
    lines = p.read_text().splitlines()
    rows = [i for i, l in enumerate(lines) if l.strip().startswith("{") and "//" in l]
    vals = lines[rows[layer]].split("{")[1].split("}")[0].split(",")
    vals[[f.name for f in E.ROW].index(field)] = f" {value}"
    head, tail = lines[rows[layer]].split("{")[0], lines[rows[layer]].split("}", 1)[1]
    lines[rows[layer]] = head + "{" + ",".join(vals) + "}" + tail
    p.write_text("\n".join(lines) + "\n")
    return d


def test_ring_too_small_deadlocks(tmp_path):
    """The engine whose first layer's input ring holds 2 rows where its 3x3 window needs 3 (a layer
    table the planner would never write, and that passes the C++ table check): the stem fills the
    ring and its FIFO, the core waits for row 2 that no slot can take; in every mode the run fails
    with the watchdog's report naming the stem blocked on the full 'stem_units' and the core's wait."""
    n = _net("wide")
    assert n.man["layers"][0]["k"] == 3 and n.man["layers"][0]["src_kind"] == "stem"
    d = _patched_export(n, tmp_path, 0, "src_lg_rows", 1)
    sim = csim.CSim(d, out_dir=tmp_path / "csim")
    for mode in ("threads", "lockstep", "sequential"):
        sim.set_mode(mode)
        with pytest.raises(csim.CSimError) as e:
            sim.run(n.frames[:1])
        msg = str(e.value)
        assert "deadlock" in msg and f"({mode} mode)" in msg, msg
        assert "layer 0: before block 0 of band 1 needs input rows 0..2 (2 in the ring" in msg, msg
        if mode != "sequential":
            assert "'stem': blocked writing stream 'stem_units' (full: 32 of depth 32)" in msg, msg
    assert sim.registers()["frames_done"] == 0


@pytest.mark.parametrize("name", ["tiny", "zq64-ddr"])
def test_every_stream_at_depth_one(name):
    """No path of the engine needs a deep FIFO (the core takes from every producer without blocking
    and only blocks on its own output): every stream at depth 1 runs bit-exact, only slower."""
    n = _net(name)
    streams = ("w_beats", "stem_units", "in_status", "logits", "fill_units", "fill_units2", "out_units", "out_units2")
    try:
        n.sim.reset()
        n.sim.process_stats()
        n.sim.run(n.frames[:2])
        base = n.sim.process_stats()
        for s in streams:
            n.sim.set_stream_depth(s, 1)
        n.sim.reset()
        _expect_same(n.sim.run(n.frames[:2]), n.golden[:2], f"{name}, every stream at depth 1")
        shallow = n.sim.process_stats()
        assert all(shallow["streams"][s]["depth"] == 1 for s in shallow["streams"])
        assert shallow["processes"]["layers"]["stall_join"] >= base["processes"]["layers"]["stall_join"]
    finally:
        n.sim.set_stream_depth(None)


def test_testbench_cosim_switch(tiny, capfd):
    """The co-simulation's switch: protocol=0 runs exactly the frames asked for (run_hls.tcl passes
    ZQ_COSIM_FRAMES and ZQ_COSIM_PROTOCOL to the testbench)."""
    assert csim.run_testbench(tiny.dir, max_frames=2, protocol=False) == 0
    out = capfd.readouterr().out
    assert "2 test frames" in out and "protocol checks skipped" in out and "protocol checks (short" not in out


def test_overlapping_regions_refused(tiny, tmp_path):
    """A layer that reads the rows it writes: the planner refuses it naming the layer, and the C++
    table check fails the build with LayerTableCheck<100*(layer+1) + 18>."""
    from zynqflow.export.exporter import load_plan
    from zynqflow.export.plan import ExportError, check_overlaps

    plan = load_plan(tiny.dir)
    l1 = plan.layers[1]
    assert l1.dst_kind == E.DST_ACT
    check_overlaps(plan)
    l1.row["dst_base"] = l1.row["src_base"]
    with pytest.raises(ExportError, match=rf"layer '{l1.name}': reads activation-RAM rows .* and writes"):
        check_overlaps(plan)
    d = _patched_export(tiny, tmp_path, 1, "dst_base", l1.row["src_base"])
    with pytest.raises(csim.CSimError, match=r"LayerTableCheck<218>"):
        csim.build(d, tmp_path / "csim")
