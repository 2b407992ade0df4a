"""Hardware in the loop: the Pareto front's designs through the exporter, the
RTL and Yosys, against the models.

For each picked design: its proxy checkpoint is exported for its engine
(retrained with the proxy schedule first if the checkpoint is not on this
machine), a few frames run through the RTL simulation (measured cycles,
bit-exactness against the golden model) and the RTL is synthesized with
Yosys (resources). Model and measurement are compared; a relative error
above :data:`FLAG` is flagged.

The two measurements are one function each (:func:`measure_rtl`,
:func:`measure_resources`), so a faster harness replaces one function.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path

from zynqflow.spec.paths import repo_relative

from . import hw_model
from .study import Settings, proxy_train, trial_dir

FLAG = 0.05   # relative model error above which a comparison is flagged


@contextlib.contextmanager
def _to_log(path: Path):
    """Send this process's stdout and stderr (file descriptors, so simulator subprocesses too) to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "a") as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)
        try:
            with contextlib.redirect_stdout(f), contextlib.redirect_stderr(f):
                yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def measure_rtl(export_dir: Path, frames: int, out: Path, memory: str = "pynq-z2") -> dict:
    """Cycles per frame (back to back) and bit-exactness of ``frames`` frames through the RTL
    (the free-running Verilator harness behind the ``memory`` preset of the specification, the
    part's board memory that the model assumes too; bench/rtl_perf.py)."""
    from zynqflow.bench.rtl_perf import measure

    r = measure(export_dir, frames=max(2, frames), out=out / "rtl_perf.json", memory=memory)
    return dict(cycles_per_frame=int(r["cycles_per_frame"]["median"]), period_cycles=r["frame_period_cycles"],
                frames=r["frames"], mismatches=r["mismatches_vs_golden"],
                worst_layer_error_pct=r.get("cycles_model", {}).get("worst_layer_error_pct"),
                tool="RTL simulation (free-running Verilator harness, bench/rtl_perf.py)")


def measure_resources(export_dir: Path, out: Path) -> dict:
    """DSP, BRAM36, LUT and FF of the RTL for this export (Yosys synth_xilinx estimate, as
    ``make synth-estimate``; the Yosys work files stay under ``out``)."""
    from zynqflow.bench.synth_estimate import run_yosys, summarize, synth_key

    key, cached = synth_key(export_dir), out / "resources.json"
    r = json.loads(cached.read_text()) if cached.is_file() else {}
    if r.get("key") != key:   # same RTL, parameters and Yosys: the earlier synthesis stands
        info, _ = run_yosys(export_dir, out / "synth_yosys")
        r = dict(summarize(info["cells"]), yosys_seconds=info["seconds"], cells=info["cells"], key=key)
        cached.write_text(json.dumps(r, indent=2) + "\n")
    man = json.loads((export_dir / "manifest.json").read_text())
    e = man["engine"]
    want = e.get("dsp48e1", e["n_pe"] * e["n_ci"] // 2)
    if r["dsp"] < want:
        raise RuntimeError(f"Yosys kept {r['dsp']} DSP48E1 of the MAC array's {want}: part of the datapath "
                           f"was removed in synthesis (see {out / 'synth_yosys'})")
    return dict({k: r[k] for k in hw_model.RESOURCES},
                tool="Yosys estimate (synth_xilinx -family xc7, bench/synth_estimate.py), not a Vivado result")


def export_design(ckpt: Path, n_pe: int, n_ci: int, out_dir: Path, frames_hwc, part: str = "xc7z020",
                  act_paths: int = 2) -> Path:
    from zynqflow.export.exporter import export, load_checkpoint_qnet

    export(load_checkpoint_qnet(ckpt), out_dir, frames_hwc, hw_model.engine_params(n_pe, n_ci, part, "rtl", act_paths))
    return out_dir


def pick(front: list[dict], k: int) -> list[dict]:
    """k designs spread along the front (sorted by accuracy): both ends first, then evenly between."""
    if k <= 0 or not front:
        return []
    if k >= len(front):
        return list(front)
    if k == 1:
        return [front[0]]
    idx = sorted({round(i * (len(front) - 1) / (k - 1)) for i in range(k)})
    return [front[i] for i in idx]


def compare(model: dict, measured: dict) -> dict:
    """Relative error model/measured - 1 per quantity, and whether it exceeds FLAG."""
    out = {}
    for k in ("fps",) + hw_model.RESOURCES:
        m, x = model.get(k), measured.get(k)
        if m is None or x is None:
            continue
        err = (m / x - 1.0) if x else (0.0 if not m else float("inf"))
        out[k] = dict(model=m, measured=x, error=round(err, 4), flagged=abs(err) > FLAG)
    return out


def current_model(r: dict, settings: Settings, clock: float) -> dict:
    """The hardware models' prediction for a trial row, evaluated now (a recalibrated model is
    compared as it stands; the values recorded when the trial ran stay in trials.jsonl)."""
    from zynqflow.spec.topology import NetConfig

    e = r["engine"]
    try:
        hw = hw_model.evaluate(NetConfig.from_dict(r["net"]), e["n_pe"], e["n_ci"], settings.part, clock,
                               engine=getattr(settings, "engine", "rtl"), act_paths=e.get("act_paths", 1))
    except (KeyError, TypeError, ValueError):
        return dict(r["resources"], fps=r["fps"], cycles_per_frame=r["cycles_per_frame"], model=r["model"])
    return dict({k: hw[k] for k in hw_model.RESOURCES}, fps=hw["fps"], cycles_per_frame=hw["cycles_per_frame"],
                model=hw["model"])


def hil_one(r: dict, settings: Settings, out: Path, frames: int = 4, data_dir: str | None = None,
            threads: int | None = None) -> dict:
    """Export, simulate and synthesize one trial row (from trials.jsonl); the comparison record."""
    from zynqflow.model.data import load_dataset

    d = trial_dir(out, r["number"])
    hd = d / "hil"
    log = hd / "hil.log"
    res = dict(number=r["number"], fixed_top1_proxy=r["fixed_top1_proxy"], engine=r["engine"], log=repo_relative(log))
    t0 = time.time()
    try:
        ckpt = Path((r.get("proxy") or {}).get("checkpoint") or d / "checkpoint.pt")
        if not ckpt.is_file():   # trained on another machine: retrain with the same proxy schedule here
            d.mkdir(parents=True, exist_ok=True)
            (d / "net.json").write_text(json.dumps(r["net"], indent=2) + "\n")
            proxy_train(d / "net.json", settings, d, data_dir, threads)
            ckpt = d / "checkpoint.pt"
            res["retrained_here"] = True
        e = r["engine"]
        test = load_dataset(settings.data, data_dir, settings.space_obj.input_size).test
        with _to_log(log):
            ex = export_design(ckpt, e["n_pe"], e["n_ci"], hd / "export", test.subset(frames).hwc(), settings.part,
                               e.get("act_paths", 1))
            rtl = measure_rtl(ex, frames, hd, hw_model.get_part(settings.part).memory)
            syn = measure_resources(ex, hd)
    except Exception as exc:  # noqa: BLE001 - one design's failure is reported, the others still run
        res.update(error=f"{type(exc).__name__}: {exc}", seconds=round(time.time() - t0, 1))
        return res
    clock = e.get("clock_mhz") or hw_model.get_part(settings.part).clock_mhz
    measured = dict(syn, fps=clock * 1e6 / rtl["period_cycles"], cycles_per_frame=rtl["cycles_per_frame"],
                    period_cycles=rtl["period_cycles"], bit_exact=rtl["mismatches"] == 0,
                    frames=rtl["frames"], mismatches=rtl["mismatches"], rtl_tool=rtl["tool"])
    model = current_model(r, settings, clock)
    cmp_ = compare(model, measured)
    res.update(model=model, measured=measured, comparison=cmp_,
               flagged=sorted(k for k, v in cmp_.items() if v["flagged"]), seconds=round(time.time() - t0, 1))
    return res


def run(rows_front: list[dict], settings: Settings, out: Path, k: int = 3, frames: int = 4,
        data_dir: str | None = None, threads: int | None = None, quiet: bool = False) -> list[dict]:
    results = []
    for r in pick(rows_front, k):
        if not quiet:
            print(f"hardware in the loop: trial {r['number']} ({r['engine']['n_pe']}x{r['engine']['n_ci']}): "
                  "export, RTL simulation, Yosys ...", file=sys.stderr)
        h = hil_one(r, settings, out, frames, data_dir, threads)
        results.append(h)
        if not quiet:
            print(table([h]), file=sys.stderr)
    (out / "hil.json").write_text(json.dumps(results, indent=2) + "\n")
    return results


def table(results: list[dict]) -> str:
    """Model against measurement, one line per quantity; '!!' marks errors above FLAG."""
    lines = []
    for h in results:
        if "error" in h:
            lines.append(f"  trial {h['number']}: hardware in the loop failed: {h['error']} (log {h['log']})")
            continue
        m = h["measured"]
        lines.append(f"  trial {h['number']}: bit-exact {m['bit_exact']} ({m['frames']} frames), "
                     f"{m['cycles_per_frame']} cycles/frame measured")
        for q, c in h["comparison"].items():
            lines.append(f"    {q:7s} model {c['model']:>12.1f}  measured {c['measured']:>12.1f}  "
                         f"error {c['error']:+7.1%}{'  !! > 5 %' if c['flagged'] else ''}")
    return "\n".join(lines)
