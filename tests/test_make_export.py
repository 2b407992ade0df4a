"""The Makefile's export (zynqflow.export.ensure): `make export CKPT=x` then a target that needs an export
uses x's export, re-made only when x, EXPORT_ARGS or the exporter change; a DATA with no checkpoint is
refused naming the checkpoint it would use; random weights only when asked (WEIGHTS=random) or for a network
without a dataset; `make import` passes DATA. Runs make on zynqnet-tiny with a throw-away EXPORT directory."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

from zynqflow.spec.paths import REPO

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="no make")

GIVEN = ("NET", "DATA", "DATA_DIR", "CKPT", "WEIGHTS", "SEED", "EXPORT", "EXPORT_ARGS", "FRAMES", "MAKEFLAGS")


def make(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in GIVEN}      # nothing given through the environment
    # rtl_bench runs the golden model in a thread while it forks its simulators: a threaded OpenBLAS call in
    # flight then waits forever for the pool OpenBLAS's fork handler stopped (bench/rtl_bench.py, reported)
    env["OPENBLAS_NUM_THREADS"] = "1"
    net = [] if any(a.startswith("NET=") for a in args) else ["NET=zynqnet-tiny"]
    return subprocess.run(["make", "-s", "--no-print-directory", *net, *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)


def tiny_checkpoint(path: Path, seed: int) -> Path:
    """A calibrated zynqnet-tiny checkpoint (random weights, seeded), trained on the synthetic set as far as the
    exporter knows."""
    from zynqflow.model.net import ZynqNet
    from zynqflow.spec.topology import get_config

    torch.manual_seed(seed)
    net = ZynqNet(get_config("zynqnet-tiny"))
    net.calibrate([torch.randint(0, 256, (32, 1, 16, 16), dtype=torch.uint8).float() / 256])
    net.set_mode("qat")
    ck = net.checkpoint_state()
    ck.update(train_config=dict(net="zynqnet-tiny", data="synthetic"), dataset=dict(tag="synthetic"),
              train=dict(epoch=1, qat=True, float_top1=None, done=True))
    torch.save(ck, path)
    return path


def manifest(e: Path) -> dict:
    return json.loads((e / "manifest.json").read_text())


def test_targets_use_the_users_export_and_remake_it_only_when_its_inputs_change(tmp_path):
    x, e = tiny_checkpoint(tmp_path / "x.pt", 0), tmp_path / "export"
    r = make("export", f"CKPT={x}", f"EXPORT={e}")
    assert r.returncode == 0, r.stderr
    first = manifest(e)
    assert first["weights_source"] == f"checkpoint:{x}"
    stamp = (e / "manifest.json").stat().st_mtime_ns
    r = make("export-ready", f"EXPORT={e}")                         # what csim, rtl-bench, ... run first
    assert r.returncode == 0 and f"using {e}, exported from {x} (unchanged since)" in r.stdout, r.stdout + r.stderr
    assert (e / "manifest.json").stat().st_mtime_ns == stamp
    tiny_checkpoint(x, 1)                                          # retrained: re-exported from it
    r = make("export-ready", f"EXPORT={e}")
    assert r.returncode == 0 and f"{x} changed since it was exported" in r.stdout, r.stdout + r.stderr
    from zynqflow.export.exporter import load_checkpoint_qnet
    assert manifest(e)["network_id_int"] == load_checkpoint_qnet(x).network_id() != first["network_id_int"]
    r = make("export-ready", f"EXPORT={e}", "EXPORT_ARGS=--vectors 4")
    assert r.returncode == 0 and "the exporter's arguments changed" in r.stdout and manifest(e)["test_vectors"] == 4
    r = make("export-ready", f"EXPORT={e}")                         # EXPORT_ARGS not given: the export's own kept
    assert "unchanged since" in r.stdout and manifest(e)["test_vectors"] == 4
    # a dataset named on the command line with no checkpoint for it: refused, naming the one it would use
    (tmp_path / "mine" / "a").mkdir(parents=True)
    r = make("export-ready", f"EXPORT={e}", f"DATA={tmp_path / 'mine'}")
    tag = make("data-tag", f"DATA={tmp_path / 'mine'}").stdout.strip()
    assert r.returncode != 0 and f"build/zynqnet-tiny/{tag}/checkpoint.pt does not exist" in r.stderr, r.stderr
    assert "WEIGHTS=random" in r.stderr and "nothing was exported" in r.stderr
    assert manifest(e)["weights_source"] == f"checkpoint:{x}"
    # random weights only when asked
    r = make("export-ready", f"EXPORT={e}", "WEIGHTS=random", "SEED=3")
    assert r.returncode == 0 and manifest(e)["weights_source"] == "random:3", r.stderr


def test_make_export_then_rtl_bench_runs_its_weights(tmp_path):
    """The issue's trap: `make export CKPT=x` then `make rtl-bench` re-exported the default checkpoint (or random
    weights) behind the user's back. x: a copy of the reference zynqnet-mini checkpoint (so the fast RTL model is
    the one tests/test_rtl_fast.py builds: no extra Verilator build); the export must stay x's."""
    from zynqflow.export.fixtures import REFERENCE_CKPT

    if not REFERENCE_CKPT.is_file():
        pytest.skip(f"no reference checkpoint at {REFERENCE_CKPT}")
    x, e = tmp_path / "mine.pt", tmp_path / "export"
    shutil.copy(REFERENCE_CKPT, x)
    kept = {f: f.read_bytes() for f in (REPO / "build" / "zynqnet-mini").glob("rtl_bench*") if f.is_file()}
    try:
        assert make("NET=zynqnet-mini", "export", f"CKPT={x}", f"EXPORT={e}").returncode == 0
        r = make("NET=zynqnet-mini", "rtl-bench", f"EXPORT={e}", "FRAMES=2", "MEMORY=ideal")
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        assert f"using {e}, exported from {x} (unchanged since)" in r.stdout
        assert manifest(e)["weights_source"] == f"checkpoint:{x}"             # not re-exported from the default
        assert "2 frames" in r.stdout and "0 mismatches vs golden" in r.stdout and "random" not in r.stdout
        out = Path(r.stdout.strip().splitlines()[-1].rsplit("-> ", 1)[1])
        res = json.loads((out if out.is_absolute() else REPO / out).read_text())
        assert (res["network"], res["frames"], res["mismatches_vs_golden"], res["data"]) == \
            ("zynqnet-mini", 2, 0, "fashion-mnist")                              # its test set, not random frames
    finally:                                                                  # the developer's own results back
        for f in (REPO / "build" / "zynqnet-mini").glob("rtl_bench*"):
            if f.is_file() and f not in kept:
                f.unlink()
        for f, b in kept.items():
            f.write_bytes(b)


def test_no_dataset_network_gets_random_weights_said_so(monkeypatch, tmp_path, capsys):
    """zynqnet (no dataset here, no checkpoint): seeded random weights, said so; zynqnet-tiny (a preset with
    class names): refused."""
    from zynqflow.export import ensure

    calls = []
    monkeypatch.setattr(ensure, "export_main", lambda argv: calls.append(argv) or 0)
    assert ensure.main(["--net", "zynqnet", "--out", str(tmp_path / "z"), "--dset", "fashion-mnist", "--seed", "2",
                        "--candidate", str(tmp_path / "none.pt")]) == 0
    assert len(calls) == 1
    assert calls[0][:6] == ["--net", "zynqnet", "--random-weights", "2", "--out", str(tmp_path / "z")]
    assert "zynqnet has no dataset here and no checkpoint: seeded random weights (seed 2)" in capsys.readouterr().out
    assert ensure.main(["--net", "zynqnet-tiny", "--out", str(tmp_path / "t"), "--dset", "fashion-mnist",
                        "--candidate", str(tmp_path / "none.pt")]) == 2
    assert f"{tmp_path / 'none.pt'} does not exist" in capsys.readouterr().err and len(calls) == 1


def test_make_import_passes_data():
    r = make("-n", "import", "ONNX=m.onnx", "DATA=synthetic")
    assert r.returncode == 0 and "--data synthetic" in r.stdout, r.stdout + r.stderr
    r = make("-n", "import", "ONNX=m.onnx")
    assert r.returncode == 0 and "--data" not in r.stdout
