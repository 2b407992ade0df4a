"""End-to-end training on the synthetic set with the tiny preset: float
epochs, BN folding + calibration, QAT, integer scoring, and resume."""

from __future__ import annotations

import json
import math

import pytest
import torch

from zynqflow.model import train as T
from zynqflow.model.data import synthetic
from zynqflow.model.net import ZynqNet
from zynqflow.model.train import TrainConfig, fixed_accuracy, run


def tc(tmp_path, **kw) -> TrainConfig:
    base = dict(net="zynqnet-tiny", data="synthetic", epochs=2, qat_epochs=1, out=str(tmp_path),
                calib_images=256, threads=1)  # one thread: fast even on a busy machine
    base.update(kw)
    return TrainConfig(**base)


def read_log(tmp_path) -> list[dict]:
    return [json.loads(l) for l in (tmp_path / "train_log.jsonl").read_text().splitlines()]


class Interrupt(Exception):
    pass


def interrupt_at_eval(monkeypatch, n: int) -> None:
    """Make the n-th call of float_accuracy raise: a crash after the
    previous epoch's checkpoint was written."""
    real, calls = T.float_accuracy, [0]

    def fake(*a, **kw):
        calls[0] += 1
        if calls[0] == n:
            raise Interrupt
        return real(*a, **kw)

    monkeypatch.setattr(T, "float_accuracy", fake)


def test_train_end_to_end(tmp_path):
    m = run(tc(tmp_path))
    for f in ("checkpoint.pt", "train_log.jsonl", "metrics.json"):
        assert (tmp_path / f).is_file(), f
    log = read_log(tmp_path)
    assert [(r["epoch"], r["phase"]) for r in log] == [(1, "float"), (2, "float"), (3, "qat")]
    for r in log:
        assert math.isfinite(r["loss"]) and r["loss"] > 0 and 0 <= r["test_top1"] <= 1
    assert log[2]["lr"] == pytest.approx(0.005) and log[0]["lr"] == pytest.approx(0.1)
    saved = json.loads((tmp_path / "metrics.json").read_text())
    assert saved["float_top1"] == m["float_top1"] and saved["fixed_top1"] == m["fixed_top1"]
    for k in ("float_top1", "fixed_top1", "qat_fake_quant_top1"):
        assert isinstance(saved[k], float) and 0.0 <= saved[k] <= 1.0, k
    assert saved["fixed_minus_float"] == pytest.approx(saved["fixed_top1"] - saved["float_top1"])
    assert saved["net"] == "zynqnet-tiny" and saved["dataset"] == "synthetic"
    assert saved["test_images"] == 256 and saved["train_images"] == 512
    assert saved["epochs"] == 2 and saved["qat_epochs"] == 1
    # the final checkpoint is the calibrated QAT net and reproduces fixed_top1 exactly
    ck = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
    assert ck["train"]["done"] is True and ck["train"]["epoch"] == 3
    assert ck["train"]["float_top1"] == saved["float_top1"]
    net = ZynqNet.from_checkpoint(ck)
    assert net.folded and net.mode == "qat" and net.act_formats
    test = synthetic(size=16).test
    assert fixed_accuracy(net, test) == saved["fixed_top1"]


def test_resume_after_interruption(tmp_path, monkeypatch):
    # first attempt dies while scoring epoch 2: only epoch 1 is saved
    interrupt_at_eval(monkeypatch, 2)
    with pytest.raises(Interrupt):
        run(tc(tmp_path))
    monkeypatch.undo()
    assert [r["epoch"] for r in read_log(tmp_path)] == [1]
    ck = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
    assert ck["train"] == dict(epoch=1, qat=False, float_top1=None, done=False)
    assert not (tmp_path / "metrics.json").exists()
    first = read_log(tmp_path)[0]

    m = run(tc(tmp_path))
    log = read_log(tmp_path)
    assert [(r["epoch"], r["phase"]) for r in log] == [(1, "float"), (2, "float"), (3, "qat")]
    assert log[0] == first  # epoch 1 was not redone
    assert 0 <= m["float_top1"] <= 1 and 0 <= m["fixed_top1"] <= 1
    assert torch.load(tmp_path / "checkpoint.pt", weights_only=False)["train"]["done"] is True


def test_resume_in_qat_phase_keeps_float_score(tmp_path, monkeypatch):
    # float_accuracy calls: end of epoch 1, float score before calibration,
    # end of epoch 2 (QAT 1), end of epoch 3 (QAT 2) <- dies here
    interrupt_at_eval(monkeypatch, 4)
    with pytest.raises(Interrupt):
        run(tc(tmp_path, epochs=1, qat_epochs=2))
    monkeypatch.undo()
    ck = torch.load(tmp_path / "checkpoint.pt", weights_only=False)
    assert ck["train"]["epoch"] == 2 and ck["train"]["qat"] is True and ck["mode"] == "qat"
    float_top1 = ck["train"]["float_top1"]
    assert isinstance(float_top1, float)
    m = run(tc(tmp_path, epochs=1, qat_epochs=2))
    assert [(r["epoch"], r["phase"]) for r in read_log(tmp_path)] == [(1, "float"), (2, "qat"), (3, "qat")]
    assert m["float_top1"] == float_top1


def test_finished_run_is_not_retrained(tmp_path):
    m1 = run(tc(tmp_path, epochs=1, qat_epochs=1))
    assert len(read_log(tmp_path)) == 2
    before = (tmp_path / "checkpoint.pt").read_bytes()
    m2 = run(tc(tmp_path, epochs=1, qat_epochs=1))
    assert m2 == m1 and len(read_log(tmp_path)) == 2
    assert (tmp_path / "checkpoint.pt").read_bytes() == before
    # --no-resume starts over: the old log is replaced
    run(tc(tmp_path, epochs=1, qat_epochs=0, resume=False))
    assert [(r["epoch"], r["phase"]) for r in read_log(tmp_path)] == [(1, "float")]
    assert json.loads((tmp_path / "metrics.json").read_text())["qat_epochs"] == 0


def test_resume_rejects_other_net(tmp_path, monkeypatch):
    interrupt_at_eval(monkeypatch, 2)
    with pytest.raises(Interrupt):
        run(tc(tmp_path))
    monkeypatch.undo()
    with pytest.raises(ValueError, match="checkpoint is for zynqnet-tiny, not zynqnet-mini"):
        run(tc(tmp_path, net="zynqnet-mini"))
