"""The co-design search (zynqflow.dse): the space samples only legal designs,
the provisional hardware model agrees with the exporter's plan, a two-worker
study on one storage records every trial once (a failure as failed) and
gives a non-dominated Pareto set, Ctrl-C leaves a study that resumes,
promotion retrains a trial's network, and hardware in the loop compares the
models with the RTL and Yosys.

Real Optuna, real training (synthetic data), real worker processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import optuna
import pytest
import torch

from zynqflow.dse import hw_model, report
from zynqflow.dse.cli import main as dse_main
from zynqflow.dse.space import Space, feasible_engines, get_space, n_params, sample
from zynqflow.export import fixtures
from zynqflow.export.exporter import EngineParams, plan_hardware, verify
from zynqflow.export.plan import plan_layout
from zynqflow.export.resources import estimate
from zynqflow.spec.cycles import predict
from zynqflow.model.net import ZynqNet, qnet_from_model
from zynqflow.sim.rtl.runner import SimBuild
from zynqflow.spec.paths import REPO
from zynqflow.spec.topology import NetConfig, get_config

PY = sys.executable
SMALL = ["--data", "synthetic", "--space", "small", "--proxy", "smoke", "--threads", "1"]


def _env() -> dict:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("PYTEST_CURRENT_TEST", None)
    return env


# ---- the space --------------------------------------------------------------------------
def test_space_samples_only_legal_designs():
    """300 random draws: every network passes the rules, every engine the engine rules and the part;
    a few of them, with random weights, pass the exporter's checks and plan for their engine."""
    sp = get_space("default")
    study = optuna.create_study(directions=["maximize", "maximize"], sampler=optuna.samplers.RandomSampler(seed=3))
    seen = dict(fires=set(), engines=set(), splits=set(), downs=set())
    designs = []
    for i in range(300):
        d = sample(study.ask(), sp, "xc7z020", 1, f"t{i}")
        assert d.n_pe % d.n_ci == 0 and d.n_pe % 2 == 0 and d.n_ci >= 4
        assert d.n_pe & (d.n_pe - 1) == 0 and d.n_ci & (d.n_ci - 1) == 0
        res = hw_model.evaluate(d.cfg, d.n_pe, d.n_ci, "xc7z020", act_paths=d.act_paths)
        assert res["dsp"] <= 220 and res["lut"] <= 53200 and res["ff"] <= 106400
        # lanes beyond two per DSP48E1 of the part are LUT lanes
        assert res["detail"]["lut_lanes"] == max(0, d.n_pe * d.n_ci - 2 * 220) and d.act_paths in (1, 2)
        for f in d.net["fires"]:
            assert f["expand1"] % d.n_ci == 0     # the e3 branch starts on a channel word
        shapes = d.cfg.tensor_shapes()
        assert min(s for s, _ in shapes.values()) >= sp.min_map
        seen["fires"].add(len(d.net["fires"]))
        seen["engines"].add((d.n_pe, d.n_ci))
        seen["splits"].add(d.net["head_splits"])
        seen["downs"].add(tuple(f["downsample"] for f in d.net["fires"]))
        designs.append(d)
    assert seen["fires"] == set(range(2, 7)) and seen["splits"] == {1}
    assert len(seen["downs"]) > 20
    # 512 lanes fit with 72 of them on LUT multipliers (220 DSP48E1); 1024 lanes do not (their LUTs)
    assert max(pe * ci for pe, ci in seen["engines"]) == 512
    assert {d.act_paths for d in designs} == {1, 2}
    assert set(feasible_engines(sp, "xczu7ev", 1)) > set(feasible_engines(sp, "xc7z020", 1))
    torch.manual_seed(0)
    for d in designs[:300:60]:
        net = ZynqNet(d.cfg)
        net.calibrate([torch.rand(8, 1, 32, 32)])
        qnet = qnet_from_model(net)
        eng = EngineParams(d.n_pe, d.n_ci)
        verify(qnet)
        plan = plan_hardware(qnet, eng)
        # the search's cycles are the exporter's plan through the cycle model, cycle for cycle
        model = hw_model.evaluate(d.cfg, d.n_pe, d.n_ci)["cycles_per_frame"]
        assert model == predict(plan, memory="pynq-z2")["frame"]["period_cycles"]   # the board's memory


def test_space_errors_name_the_field():
    with pytest.raises(ValueError, match="expands"):
        Space(expands=(8, 16), n_ci=(4, 16)).check()
    with pytest.raises(ValueError, match="consecutive"):
        Space(stems=(8, 32)).check()
    with pytest.raises(ValueError, match="engine 16x32"):
        get_space("default", ("16x32",))
    with pytest.raises(ValueError, match="unknown search space 'huge'"):
        get_space("huge")


# ---- the hardware models --------------------------------------------------------------
def test_hw_model_is_the_flows_models():
    cfg = get_config("zynqnet-mini")
    r = hw_model.evaluate(cfg, 16, 8)
    plan = plan_layout(cfg, EngineParams(16, 8))
    pred = predict(plan, memory="pynq-z2")      # the xc7z020's board memory (hw_model.PARTS)
    assert r["cycles_per_frame"] == pred["frame"]["period_cycles"] and r["detail"]["memory"] == "pynq-z2"
    assert r["fps"] == pytest.approx(100e6 / r["cycles_per_frame"]) and r["clock_mhz"] == 100
    res = estimate(plan)
    assert (r["dsp"], r["bram36"], r["lut"], r["ff"]) == (64, res["bram36"], res["lut"], res["ff"])
    assert r["bram36"] == sum(m["bram36"] for m in r["detail"]["rams"]) > 0
    assert "spec.cycles" in r["model"] and "export.resources" in r["model"]
    # the exporter writes the same prediction into the manifest of a real (random-weight) export
    man = json.loads((fixtures.random_export("zynqnet-mini") / "manifest.json").read_text())
    assert man["cycles_model_presets"]["pynq-z2"]["period_cycles"] == r["cycles_per_frame"]
    # at 150 MHz the DDR latencies grow in cycles: never fewer cycles per frame
    assert hw_model.evaluate(cfg, 16, 8, clock_mhz=150)["cycles_per_frame"] >= r["cycles_per_frame"]
    # bigger engines: fewer cycles, more resources; ZCU104 fits what the xc7z020 does not
    big = hw_model.evaluate(cfg, 64, 16, "zcu104")
    assert big["cycles_per_frame"] < r["cycles_per_frame"] and big["dsp"] == 512
    assert max(hw_model.violations(big, "zcu104").values()) <= 0
    assert hw_model.violations(big, "xc7z020")["dsp"] == pytest.approx(512 / 220 - 1)
    assert hw_model.get_part("ZCU104").bram36 == 312 and hw_model.get_part("pynq-z2").dsp == 220
    with pytest.raises(ValueError, match="unknown target part 'xc7a35t'"):
        hw_model.evaluate(cfg, 16, 8, "xc7a35t")
    with pytest.raises(ValueError, match="N_PE=8, N_CI=4"):
        hw_model.evaluate(cfg, 8, 4)               # 32-byte weight words: not buildable
    # the full ZynqNet on the engine `make export` gives it: the RTL simulation's 46 fps
    zn = hw_model.evaluate(get_config("zynqnet"), 16, 16)
    assert 40 < zn["fps"] < 50 and zn["bram36"] <= 140 and "plan_error" not in zn


def test_bram_packing():
    from zynqflow.export.resources import Ram
    assert Ram("x", 64, 8).bram36 == 0 and Ram("x", 64, 8).lutram_luts == 4 * 3 * 1   # 64 words: LUT RAM
    assert Ram("x", 100, 8).bram36 == 0.5          # one RAMB18
    assert Ram("x", 512, 72).bram36 == 1
    assert Ram("x", 513, 72).bram36 == 2
    assert Ram("x", 4096, 9).bram36 == 1
    assert Ram("x", 1024, 64).bram36 == 2
    assert Ram("x", 256, 1024).bram36 == 14.5      # 29 RAMB18 of 512 x 36
    assert Ram("x", 1024, 64, copies=3).bram36 == 6


# ---- the study ------------------------------------------------------------------------
def _read_jsonl(p: Path) -> list[dict]:
    return [json.loads(l) for l in p.read_text().splitlines()]


@pytest.fixture(scope="module")
def two_worker_study(tmp_path_factory):
    """A 4-trial study on synthetic data, two worker processes on one journal storage, trial 1
    broken on purpose (a 5x5 stem the rule checker refuses). The second worker starts first and
    waits for the study; the first creates it."""
    root = tmp_path_factory.mktemp("dse")
    journal = root / "shared" / "journal.log"
    common = ["--study", "two", "--storage", str(journal), "--out-root", str(root), "--fail-trial", "1"]
    t0 = time.time()
    b = subprocess.Popen([PY, "-m", "zynqflow.dse", "worker", "--wait", "900", "--threads", "1"] + common,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env(), cwd=REPO)
    a = subprocess.Popen([PY, "-m", "zynqflow.dse", "run", "--trials", "4", "--hil", "0", "--seed", "1"]
                         + SMALL + common, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=_env(), cwd=REPO)
    out_a, _ = a.communicate(timeout=1800)    # bounds against a hang (the study takes ~1 min), not timings
    out_b, _ = b.communicate(timeout=1800)
    assert a.returncode == 0, out_a[-3000:]
    assert b.returncode == 0, out_b[-3000:]
    return dict(root=root, out=root / "two", journal=journal, pids={a.pid, b.pid}, log=out_a,
                seconds=time.time() - t0)


def test_two_workers_record_every_trial_once(two_worker_study):
    out = two_worker_study["out"]
    rows = _read_jsonl(out / "trials.jsonl")
    assert [r["number"] for r in rows] == [0, 1, 2, 3]
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(
        str(two_worker_study["journal"])))
    trials = optuna.load_study(study_name="two", storage=storage).get_trials()
    assert sorted(t.number for t in trials) == [0, 1, 2, 3]
    assert len({t._trial_id for t in trials}) == 4
    # both processes ran trials
    pids = {int(r["worker"].rsplit(":", 1)[1]) for r in rows}
    assert pids == two_worker_study["pids"], (pids, two_worker_study["pids"])
    # the broken trial is recorded as failed, with the checker's reason; the others ran to the end
    failed = rows[1]
    assert failed["state"] == "fail" and failed["fail_kind"] == "error"
    assert "layer 'c1'" in failed["reason"] and "kernel 5x5" in failed["reason"]
    assert trials[[t.number for t in trials].index(1)].state == optuna.trial.TrialState.FAIL
    for r in rows[:1] + rows[2:]:
        assert r["state"] in ("complete", "pruned"), r
        if r["state"] == "complete":
            assert 0.0 <= r["fixed_top1_proxy"] <= 1.0 and r["feasible"] is True
            assert r["proxy"]["eval_split"].startswith("holdout")
            # the recorded fps is the model's for the recorded network and engine
            cfg = get_config(r["net_json"])
            e = r["engine"]
            assert r["fps"] == pytest.approx(hw_model.evaluate(cfg, e["n_pe"], e["n_ci"])["fps"])
            assert cfg.to_dict() == NetConfig.from_dict(r["net"]).to_dict() and cfg.name == f"two-t{r['number']}"
            assert (out / "trials" / f"{r['number']:04d}" / "checkpoint.pt").is_file()
    assert sum(r["state"] == "complete" for r in rows) >= 2
    assert "proxy: all training images, 3 float + 1 QAT epochs" in two_worker_study["log"]
    print(f"two-worker study: {two_worker_study['seconds']:.1f} s")


def test_pareto_set_is_non_dominated(two_worker_study):
    out = two_worker_study["out"]
    rows = _read_jsonl(out / "trials.jsonl")
    rep = json.loads((out / "pareto.json").read_text())
    front = rep["pareto"]
    ok = [r for r in rows if r["state"] == "complete" and r["feasible"]]
    assert front and {r["number"] for r in front} <= {r["number"] for r in ok}
    key = lambda r: (r["fixed_top1_proxy"], r["fps"])  # noqa: E731
    for p in front:   # nothing dominates a front member ...
        assert not any(key(o) != key(p) and all(x >= y for x, y in zip(key(o), key(p))) for o in ok)
    for o in ok:      # ... and every other feasible design is dominated by (or equal to) one
        if o["number"] not in {p["number"] for p in front}:
            assert any(all(x >= y for x, y in zip(key(p), key(o))) for p in front)
    # Optuna's own non-dominated sort agrees
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(
        str(two_worker_study["journal"])))
    best = optuna.load_study(study_name="two", storage=storage).best_trials
    assert {t.number for t in best} == {r["number"] for r in front}
    assert rep["proxy"].startswith("proxy:") and rep["part"] == "xc7z020" and rep["reference"] is None
    assert rep["states"]["fail"] == 1 and rep["budget"] == 4
    # the study's time: trials overlap on two workers, so busy time is below the sum of trial times
    st = rep["study_time"]
    assert 0 < st["busy_seconds"] <= two_worker_study["seconds"] and st["trials_trained"] == len(ok)
    png = (out / "pareto.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10000


def test_promotion_retrains_the_trial_network(two_worker_study):
    out = two_worker_study["out"]
    rows = _read_jsonl(out / "trials.jsonl")
    r = next(r for r in rows if r["state"] == "complete")
    rc = dse_main(["train", "--study", "two", "--storage", str(two_worker_study["journal"]), "--out-root",
                   str(two_worker_study["root"]), "--trial", str(r["number"]), "--epochs", "1", "--qat-epochs", "1",
                   "--threads", "1"])
    assert rc == 0
    dest = out / "promoted" / f"t{r['number']:04d}"
    promo = json.loads((dest / "promotion.json").read_text())
    metrics = json.loads((dest / "metrics.json").read_text())
    assert promo["fixed_top1"] == metrics["fixed_top1"] and 0 <= metrics["fixed_top1"] <= 1
    assert metrics["eval_split"] == "test" and metrics["test_images"] == 256   # the full test split
    assert metrics["train_config"]["net"] == r["net_json"]
    assert promo["engine"] == {"n_pe": r["engine"]["n_pe"], "n_ci": r["engine"]["n_ci"]}
    assert f"--n-pe {r['engine']['n_pe']}" in promo["export_command"]
    ck = torch.load(dest / "checkpoint.pt", weights_only=False)
    assert ck["config"] == get_config(r["net_json"]).to_dict()
    assert dse_main(["train", "--study", "two", "--storage", str(two_worker_study["journal"]), "--out-root",
                     str(two_worker_study["root"]), "--trial", "99"]) == 2
    # the report lists the promoted design with its proxy and full accuracies
    assert dse_main(["report", "--study", "two", "--storage", str(two_worker_study["journal"]), "--out-root",
                     str(two_worker_study["root"]), "--quiet"]) == 0
    pro = json.loads((out / "pareto.json").read_text())["promoted"]
    assert pro["designs"] == [dict(trial=r["number"], proxy_fixed_top1=r["fixed_top1_proxy"],
                                   fixed_top1=metrics["fixed_top1"], checkpoint=str(dest / "checkpoint.pt"))]
    assert pro["proxy_rank_correlation"] is None   # one design: no correlation yet
    # publishing: export for its engine, test frames through the RTL bit-exact, metrics with RTL fps
    pub = two_worker_study["root"] / "published"
    assert dse_main(["publish", "--study", "two", "--storage", str(two_worker_study["journal"]), "--out-root",
                     str(two_worker_study["root"]), "--trial", str(r["number"]), "--dest", str(pub),
                     "--frames", "3"]) == 0
    m = json.loads((pub / "metrics.json").read_text())
    rtl = json.loads((dest / "rtl_bench.json").read_text())
    assert m["fixed_top1"] == metrics["fixed_top1"] and m["rtl"]["frames"] == 3
    assert m["rtl"]["mismatches_vs_golden"] == 0 and m["mac_units"] == r["engine"]["n_pe"] * r["engine"]["n_ci"]
    assert m["fps_at_100mhz"] == pytest.approx(1e8 / rtl["frame_period_cycles"], abs=0.1)
    assert m["fps_label"] == "fps at 100 MHz, RTL simulation" and m["reference"] is None   # synthetic data
    assert get_config(str(pub / "config.json")).to_dict() == ck["config"]
    assert {p.name for p in pub.iterdir()} >= {"checkpoint.pt", "pareto.json", "pareto.png", "train_log.jsonl"}
    assert dse_main(["publish", "--study", "two", "--storage", str(two_worker_study["journal"]), "--out-root",
                     str(two_worker_study["root"]), "--trial", "99", "--dest", str(pub)]) == 2


def _read_until(p: subprocess.Popen, text: str, bound_s: float = 600) -> str:
    """``p``'s output up to the line holding ``text``. Bounded: a child still silent after ``bound_s``
    seconds (it hangs) is killed, and the test fails with its output."""
    killer = threading.Timer(bound_s, p.kill)
    killer.start()
    lines = []
    try:
        for line in p.stdout:
            lines.append(line)
            if text in line:
                return "".join(lines)
    finally:
        killer.cancel()
    pytest.fail(f"the study never printed {text!r} (exit {p.wait()}; killed if silent for {bound_s:.0f} s):\n"
                + "".join(lines)[-3000:])


def test_ctrl_c_leaves_a_consistent_study_that_resumes(tmp_path):
    """SIGINT while a trial trains: the trial is recorded as interrupted (not counted), the outputs are
    written, and running again finishes the budget. The study itself says when trial 0 has trained an
    epoch and then holds (--hold-trial, a test hook): the signal lands mid-training, never in a race."""
    args = [PY, "-m", "zynqflow.dse", "run", "--study", "intr", "--out-root", str(tmp_path), "--trials", "2",
            "--hil", "0", "--proxy-epochs", "2", "--hold-trial", "0"] + SMALL
    # SIGINT's disposition as from a terminal: a shell's background job (make test &) starts its
    # children with SIGINT ignored, and Python then installs no KeyboardInterrupt handler
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env(), cwd=REPO,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    out = tmp_path / "intr"
    log = _read_until(p, "hold: trial 0 training")
    assert len(_read_jsonl(out / "trials" / "0000" / "train_log.jsonl")) == 1   # one epoch trained, then held
    p.send_signal(signal.SIGINT)
    try:
        log += p.communicate(timeout=600)[0]
    except subprocess.TimeoutExpired:
        p.kill()   # no study left behind, held forever
        pytest.fail("the study did not end within 600 s of SIGINT:\n" + (log + p.communicate()[0])[-3000:])
    assert p.returncode == 130, log[-3000:]
    rows = _read_jsonl(out / "trials.jsonl")
    assert [(r["number"], r["state"], r["fail_kind"], r["counted"]) for r in rows] == \
        [(0, "fail", "interrupted", False)]
    assert "interrupted" in rows[0]["reason"]
    # resume with a budget of 1: the interrupted trial does not count, so one more trial runs
    # (trial 1, made to fail at once here: the proxy of this study is fixed)
    rc = dse_main(["run", "--study", "intr", "--out-root", str(tmp_path), "--hil", "0", "--quiet",
                   "--threads", "1", "--trials", "1", "--fail-trial", "1"])
    assert rc == 0
    rows = _read_jsonl(out / "trials.jsonl")
    assert [(r["number"], r["state"], r["counted"]) for r in rows] == [(0, "fail", False), (1, "fail", True)]
    assert rows[1]["fail_kind"] == "error" and "kernel 5x5" in rows[1]["reason"]
    # a changed setting is refused, naming it
    assert dse_main(["run", "--study", "intr", "--out-root", str(tmp_path), "--part", "zcu104", "--hil", "0"]) == 2


def test_hardware_in_the_loop_tiny_design(tmp_path):
    """One trial on the 8x8 engine, then export + RTL simulation + Yosys: bit-exact, the cycle and
    resource models within reach of the measurements, and the report puts model and measurement side
    by side with the > 5 % flags."""
    rc = dse_main(["run", "--study", "hil", "--out-root", str(tmp_path), "--trials", "1", "--engines", "8x8",
                   "--hil", "1", "--hil-frames", "2", "--quiet"] + SMALL)
    assert rc == 0
    out = tmp_path / "hil"
    rep = json.loads((out / "pareto.json").read_text())
    assert len(rep["hil"]) == 1
    h = rep["hil"][0]
    assert "error" not in h, h
    m = h["measured"]
    assert m["bit_exact"] is True and m["mismatches"] == 0 and m["frames"] == 2
    man = json.loads((out / "trials" / "0000" / "hil" / "export" / "manifest.json").read_text())
    assert (man["engine"]["n_pe"], man["engine"]["n_ci"]) == (8, 8)
    assert m["dsp"] == 32                     # two 8-bit MACs per DSP48E1
    c = h["comparison"]
    assert c["dsp"]["model"] == 32 and not c["dsp"]["flagged"]
    assert c["fps"]["measured"] == pytest.approx(100e6 / m["period_cycles"])
    assert abs(c["fps"]["error"]) < 0.03 and not c["fps"]["flagged"]     # the cycle model: within 3 %
    for q in c.values():
        assert q["flagged"] == (abs(q["model"] / q["measured"] - 1) > 0.05)
    assert sorted(h["flagged"]) == sorted(k for k, v in c.items() if v["flagged"])
    assert (out / "pareto.png").stat().st_size > 10000
    assert (out / "trials" / "0000" / "hil" / "resources.json").is_file()   # Yosys work stays in the study


def test_min_fps_designs_are_not_trained(tmp_path):
    """A frame-rate floor no design reaches: every trial is recorded as pruned with the reason and
    its constraint value, nothing is trained, and the outputs are still written."""
    rc = dse_main(["run", "--study", "fast", "--out-root", str(tmp_path), "--trials", "2", "--min-fps", "1e9",
                   "--hil", "0", "--quiet"] + SMALL)
    assert rc == 0
    out = tmp_path / "fast"
    rows = _read_jsonl(out / "trials.jsonl")
    assert [r["state"] for r in rows] == ["pruned", "pruned"]
    for r in rows:
        assert f"({r['fps']:.0f} fps < 1e+09); not trained" in r["reason"] and r["feasible"] is False
        assert r["constraints"]["fps"] == pytest.approx(1e9 / r["fps"] - 1) and r["constraints"]["fps"] > 0
        assert r["constraints"]["dsp"] <= 0
        assert not (out / "trials" / f"{r['number']:04d}" / "checkpoint.pt").exists()
    rep = json.loads((out / "pareto.json").read_text())
    assert rep["pareto"] == [] and rep["min_fps"] == 1e9 and (out / "pareto.png").is_file()


def test_reference_counts_in_the_rank_correlation_with_its_proxy_run():
    from dataclasses import asdict
    from zynqflow.dse.study import Proxy, Settings
    r = report.reference_proxy_row(Settings(data="fashion-mnist", proxy=asdict(Proxy())))
    assert r["fixed_top1"] == 0.9361 and 0.85 < r["proxy_fixed_top1"] < r["fixed_top1"]
    # another schedule, seed or dataset: the reference's proxy score does not apply
    assert report.reference_proxy_row(Settings(data="fashion-mnist", proxy=asdict(Proxy(epochs=3)))) is None
    assert report.reference_proxy_row(Settings(data="fashion-mnist", proxy=asdict(Proxy()), seed=1)) is None
    assert report.reference_proxy_row(Settings(data="synthetic", proxy=asdict(Proxy()))) is None


def test_spearman():
    assert report.spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1)
    assert report.spearman([0.1, 0.5, 0.3, 0.9], [1, 3, 2, 4]) == pytest.approx(1)
    assert report.spearman([1, 1, 2], [1, 2, 3]) == pytest.approx(0.8660254)
    assert report.spearman([1, 2], [1, 2]) is None


# ---- the RGB preset and the CIFAR-10 recipe ------------------------------------------
def _fake_cifar(root: Path, n: int = 40, seed: int = 0) -> Path:
    """A cifar-10-batches-py directory in the real format (pickled dicts, uint8 N x 3072), random pixels."""
    import pickle

    d = root / "cifar-10-batches-py"
    d.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
                 b"labels": [int(v) for v in rng.integers(0, 10, n)], b"batch_label": name.encode()}
        with open(d / name, "wb") as f:
            pickle.dump(batch, f)
    return root


def test_rgb_preset_fits_the_search_models():
    cfg = get_config("zynqnet-rgb")
    assert (cfg.in_channels, cfg.input_size, cfg.num_classes) == (3, 32, 10)
    assert cfg.class_names[0] == "airplane"
    params = n_params(cfg)                                                      # folded weights + biases
    assert 1_000_000 < params <= 1_500_000                                      # FINN CNV's scale
    r = hw_model.evaluate(cfg, 16, 16, "xc7z020")
    assert max(hw_model.violations(r, "xc7z020").values()) <= 0 and r["fps"] >= 400   # 433 (model)
    # each of the search's engine choices sees the same network: the models are monotone in MACs
    small = hw_model.evaluate(cfg, 16, 8, "xc7z020")
    assert small["cycles_per_frame"] > r["cycles_per_frame"] and small["dsp"] < r["dsp"]


def test_models_command_lists_every_engine(capsys):
    assert dse_main(["models", "--net", "zynqnet-mini"]) == 0
    out = capsys.readouterr().out
    row = next(l for l in out.splitlines() if l.split()[:1] == ["16x8"])
    r = hw_model.evaluate(get_config("zynqnet-mini"), 16, 8)
    assert row.split()[1:4] == [str(r["cycles_per_frame"]), f"{r['fps']:.0f}", str(r["dsp"])]
    assert row.split()[4] == f"{r['bram36']:g}" and row.endswith("yes")


def test_cifar_recipe_and_data_path(tmp_path):
    from zynqflow.model.train import TrainConfig, parse_args, recipe, run

    data = _fake_cifar(tmp_path / "data")
    a = parse_args(["--net", "zynqnet-rgb", "--data", str(data)])
    assert (a.epochs, a.qat_epochs) == (60, 5) and recipe(str(data))["augment_shift"] == 4
    f = parse_args(["--data", "fashion-mnist"])                     # unchanged for Fashion-MNIST
    assert (f.epochs, f.qat_epochs, recipe("fashion-mnist")["augment_shift"]) == (20, 3, 2)
    assert parse_args(["--data", str(data), "--epochs", "2"]).epochs == 2
    m = run(TrainConfig(net="zynqnet-rgb", data=str(data), epochs=1, qat_epochs=1, limit_train=64, limit_test=8,
                        batch_size=32, calib_images=32, threads=1, out=str(tmp_path / "out")))
    assert m["dataset"] == "cifar10" and m["net"] == "zynqnet-rgb"
    assert m["train_images"] == 64 and m["test_images"] == 8 and m["eval_split"] == "test"
    assert "zero-padded by 4 px" in m["augmentation"] and "horizontal flip" in m["augmentation"]
    assert 0.0 <= m["fixed_top1"] <= 1.0 and m["params"] > 1_000_000
    ck = torch.load(tmp_path / "out" / "checkpoint.pt", weights_only=False)
    assert ck["config"]["in_channels"] == 3 and ck["train"]["done"] is True
