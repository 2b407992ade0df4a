"""Command line of the co-design search (``make dse``, ``make dse-train``).

    python -m zynqflow.dse run [--study S] [--data fashion-mnist] [--part xc7z020] [--trials 32]
                               [--workers 2] [--storage URL|FILE] [--hil 3]
    python -m zynqflow.dse worker --study S --storage URL|FILE       # another process or machine
    python -m zynqflow.dse report --study S [--hil K]                # outputs (and HIL) again
    python -m zynqflow.dse train --study S --trial N                 # promotion: full training
    python -m zynqflow.dse models --net zynqnet-mini [--part xc7z020] # the models over every engine
    python -m zynqflow.dse publish --study S --trial N --dest DIR    # a promoted design, measured in RTL

Outputs go to ``build/dse/<study>/`` (``--out-root`` moves them); the
default storage is the journal file ``build/dse/<study>/journal.log``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from zynqflow.spec.paths import REPO, repo_relative

from . import hw_model
from .space import SPACES, get_space, n_params, parse_engine
from .study import (PROXIES, Proxy, Settings, Worker, default_out, design_of, hw_record, lock_path, open_study,
                    settings_from_args, storage_for, trial_dir, wait_for_running, work, write_net)


def _add_common(p: argparse.ArgumentParser, study_required: bool = False) -> None:
    p.add_argument("--study", required=study_required, default=None,
                   help="study name (default <dataset>-<part>); outputs in <out-root>/<study>/")
    p.add_argument("--storage", default=None,
                   help="Optuna storage: an RDB URL (postgresql://..., sqlite:///file.db) or a journal file path "
                        "(on a shared filesystem for several machines); default <out-root>/<study>/journal.log")
    p.add_argument("--out-root", default=None, help="default build/dse")
    p.add_argument("--data-dir", default=None, help="dataset directory on this machine")
    p.add_argument("--threads", type=int, default=None, help="torch threads per worker")
    p.add_argument("--quiet", action="store_true")


def _add_work(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fail-trial", type=int, action="append", default=[],
                   help="testing: make this trial number fail with a design-rule violation (repeatable)")
    p.add_argument("--hold-trial", type=int, default=None,
                   help="testing: after this trial's first epoch, print 'hold: trial N training' on stderr and "
                        "wait for Ctrl-C / SIGTERM (an interrupt that lands mid-training, whatever the load)")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m zynqflow.dse", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="create or resume a study, run trials, write the outputs, hardware in the loop")
    _add_common(r)
    _add_work(r)
    r.add_argument("--data", default=None, help="fashion-mnist (default), synthetic, cifar10, or a folder: "
                                                "cifar-10-batches-py, IDX files, or image folders (train/<class>/ "
                                                "+ test/<class>/, or <class>/)")
    r.add_argument("--part", default=None, help=f"target part ({', '.join(hw_model.PARTS)}; pynq-z2, zcu104)")
    r.add_argument("--space", default=None, choices=sorted(SPACES), help="search space (default: default)")
    r.add_argument("--engines", default=None, help="only these engines, e.g. 16x8,32x8 (default: all that fit)")
    r.add_argument("--proxy", default=None, choices=sorted(PROXIES), help="proxy schedule preset (default)")
    r.add_argument("--proxy-train", type=int, default=None, help="proxy: training images (0 = all)")
    r.add_argument("--proxy-holdout", type=int, default=None, help="proxy: held-out training images scored")
    r.add_argument("--proxy-epochs", type=int, default=None, help="proxy: float epochs")
    r.add_argument("--proxy-qat-epochs", type=int, default=None, help="proxy: QAT epochs")
    r.add_argument("--seed", type=int, default=None, help="training and sampler seed (default 0)")
    r.add_argument("--startup-trials", type=int, default=None, help="random trials before TPE (default 10)")
    r.add_argument("--target", default=None, choices=hw_model.ENGINES,
                   help="the engine variant whose models judge the designs: rtl (the RTL twin, default) or hls "
                        "(the Vitis HLS engine: its schedule and its memories)")
    r.add_argument("--min-fps", type=float, default=None,
                   help="constraint: designs predicted below this frame rate are not trained (default: none)")
    r.add_argument("--trials", type=int, default=None, help="trial budget of the study (default 32; raise to extend)")
    r.add_argument("--workers", type=int, default=1, help="worker processes on this machine (default 1)")
    r.add_argument("--hil", type=int, default=3, help="Pareto designs through RTL + Yosys afterwards (0: none)")
    r.add_argument("--hil-frames", type=int, default=4)
    w = sub.add_parser("worker", help="join a study and run trials until its budget is used")
    _add_common(w, study_required=True)
    _add_work(w)
    w.add_argument("--wait", type=float, default=300, help="seconds to wait for the study to be created")
    w.add_argument("--seed", type=int, default=None, help="sampler seed of this worker (default: from its pid)")
    rp = sub.add_parser("report", help="write trials.jsonl, pareto.json, pareto.png (and run HIL)")
    _add_common(rp, study_required=True)
    rp.add_argument("--hil", type=int, default=0)
    rp.add_argument("--hil-frames", type=int, default=4)
    t = sub.add_parser("train", help="promotion: retrain a trial's design with the full schedule")
    _add_common(t, study_required=True)
    t.add_argument("--trial", type=int, required=True)
    t.add_argument("--epochs", type=int, default=None, help="float epochs (default: the dataset's recipe)")
    t.add_argument("--qat-epochs", type=int, default=None)
    t.add_argument("--limit-train", type=int, default=None)
    pb = sub.add_parser("publish", help="a promoted design: export for its engine, the test set through the RTL, "
                                        "then config, checkpoint, metrics and the study's front into --dest")
    _add_common(pb, study_required=True)
    pb.add_argument("--trial", type=int, required=True)
    pb.add_argument("--dest", required=True, help="e.g. model/reference/dse/fashion-mnist")
    pb.add_argument("--frames", type=int, default=0, help="test images through the RTL (default 0: all)")
    m = sub.add_parser("models", help="a network against the hardware models, for every engine of the space")
    m.add_argument("--net", required=True, help="preset or JSON config")
    m.add_argument("--part", default="xc7z020")
    m.add_argument("--space", default="default", choices=sorted(SPACES))
    m.add_argument("--in-channels", type=int, default=None)
    m.add_argument("--target", default="rtl", choices=hw_model.ENGINES, help="engine variant (rtl or hls)")
    return ap


def _proxy(a) -> tuple[Proxy, bool]:
    px = PROXIES[a.proxy or "default"]
    over = dict(limit_train=a.proxy_train, holdout=a.proxy_holdout, epochs=a.proxy_epochs,
                qat_epochs=a.proxy_qat_epochs)
    over = {k: v for k, v in over.items() if v is not None}
    if over.get("limit_train") == 0:
        over["limit_train"] = None
    explicit = a.proxy is not None or bool(over)
    return replace(px, **over), explicit


def _data(a) -> tuple[str, str | None]:
    """(dataset, directory): a directory given as --data is looked at: CIFAR-10 pickles or
    Fashion-MNIST IDX files there, or a folder of images (its path is the study's dataset)."""
    data, ddir = a.data or "fashion-mnist", a.data_dir
    if Path(data).is_dir():
        from zynqflow.model.folders import detect_layout

        layout = detect_layout(data)
        if layout not in ("cifar10", "idx"):
            return str(Path(data).resolve()), None
        data, ddir = ("cifar10" if layout == "cifar10" else "fashion-mnist"), ddir or data
    from zynqflow.model.data import dataset_tag

    return dataset_tag(data), ddir


def cmd_run(a) -> int:
    data, ddir = _data(a)
    proxy, proxy_explicit = _proxy(a)
    engines = tuple(e.strip() for e in a.engines.split(",")) if a.engines else ()
    for e in engines:
        parse_engine(e)
    part = a.part or "xc7z020"
    settings = settings_from_args(data, part, a.space or "default", engines, proxy,
                                  0 if a.seed is None else a.seed, 10 if a.startup_trials is None else a.startup_trials,
                                  a.min_fps or 0.0, a.target or "rtl")
    from zynqflow.model.data import dataset_tag

    name = a.study or f"{dataset_tag(data)}-{settings.part}"
    out = default_out(name, a.out_root)
    explicit = {"data": a.data is not None, "in_channels": a.data is not None, "part": a.part is not None,
                "space": a.space is not None or bool(engines), "proxy": proxy_explicit, "seed": a.seed is not None,
                "startup_trials": a.startup_trials is not None, "min_fps": a.min_fps is not None,
                "engine": a.target is not None}
    storage = storage_for(a.storage, out)
    study, settings = open_study(name, storage, settings, settings.seed, a.trials, explicit=explicit,
                                 default_trials=32)
    threads = a.threads or max(1, (os.cpu_count() or 1) // max(1, a.workers))
    w = Worker(out=out, data_dir=ddir, threads=threads, fail_trials=tuple(a.fail_trial),
               hold_trial=a.hold_trial, quiet=a.quiet)
    children = []
    store_arg = a.storage or str(out / "journal.log")
    for i in range(1, max(1, a.workers)):
        cmd = [sys.executable, "-m", "zynqflow.dse", "worker", "--study", name, "--storage", store_arg,
               "--threads", str(threads), "--quiet", "--wait", "60", "--seed", str(settings.seed + i)]
        cmd += ["--out-root", str(out.parent)] + (["--data-dir", ddir] if ddir else [])
        for f in a.fail_trial:
            cmd += ["--fail-trial", str(f)]
        if a.hold_trial is not None:
            cmd += ["--hold-trial", str(a.hold_trial)]
        children.append(subprocess.Popen(cmd))
    rc = 0
    try:
        work(study, settings, w, lock_path(a.storage, out))
    except KeyboardInterrupt:
        rc = 130
        print("interrupted: the running trial is recorded as interrupted; run again to resume", file=sys.stderr)
    finally:
        _wait_children(children, a.quiet)
    if rc == 0:
        wait_for_running(study, a.quiet)
    return _report(study, settings, out, a.hil if rc == 0 else 0, a.hil_frames, ddir, threads, a.quiet) or rc


def _wait_children(children: list, quiet: bool) -> None:
    """Wait for this machine's other workers to finish their running trials, saying which (a trial's
    length is the study's setting, so no limit here; Ctrl-C, which they get too, ends them)."""
    for c in children:
        while True:
            try:
                c.wait(timeout=60)
                break
            except subprocess.TimeoutExpired:
                if not quiet:
                    print(f"waiting for worker pid {c.pid} to finish its trial (Ctrl-C stops it)", file=sys.stderr)
            except KeyboardInterrupt:
                c.wait()
                break


def _report(study, settings: Settings, out: Path, hil_k: int, frames: int, ddir, threads, quiet) -> int:
    from . import hil, report

    rep = report.write(study, settings, out)
    if hil_k and rep["pareto"]:
        res = hil.run(rep["pareto"], settings, out, hil_k, frames, ddir, threads, quiet)
        rep = report.write(study, settings, out, hil=res)
    if not quiet:
        print(summary(rep, out))
    return 0


def summary(rep: dict, out: Path) -> str:
    from .hil import table

    lines = [f"{rep['study']}: {rep['trials']} trials {rep['states']}; {rep['proxy']}",
             f"models: {rep['models']}", "Pareto front (proxy fixed top-1, predicted fps):"]
    for r in rep["pareto"]:
        e = r["engine"]
        lines.append(f"  trial {r['number']:3d}  {r['fixed_top1_proxy']:.4f}  {r['fps']:9.0f} fps  "
                     f"{e['n_pe']}x{e['n_ci']}  DSP {r['resources']['dsp']} BRAM36 {r['resources']['bram36']}  "
                     f"{r['n_params']} params  {r['net_json']}")
    if rep.get("hil"):
        lines += ["hardware in the loop (model against measurement):", table(rep["hil"])]
    lines.append(f"-> {out / 'trials.jsonl'}, {out / 'pareto.json'}, {out / 'pareto.png'}")
    return "\n".join(lines)


def _load(a, wait_s: float = 0.0, seed: int | None = None):
    out = default_out(a.study, a.out_root)
    storage = storage_for(a.storage, out)
    study, settings = open_study(a.study, storage, None, seed if seed is not None else os.getpid(), None,
                                 wait_s=wait_s)
    return study, settings, out


def cmd_worker(a) -> int:
    study, settings, out = _load(a, a.wait, a.seed)
    w = Worker(out=out, data_dir=a.data_dir, threads=a.threads, fail_trials=tuple(a.fail_trial),
               hold_trial=a.hold_trial, quiet=a.quiet)
    try:
        work(study, settings, w, lock_path(a.storage, out))
    except KeyboardInterrupt:
        return 130
    return 0


def cmd_report(a) -> int:
    study, settings, out = _load(a)
    return _report(study, settings, out, a.hil, a.hil_frames, a.data_dir, a.threads, a.quiet)


def cmd_train(a) -> int:
    """Promotion: the trial's network JSON + the normal training with the full schedule."""
    import optuna

    from zynqflow.model.train import TrainConfig, recipe, run

    study, settings, out = _load(a)
    t = next((t for t in study.get_trials(deepcopy=False) if t.number == a.trial), None)
    if t is None:
        raise ValueError(f"study '{a.study}' has no trial {a.trial}")
    if not t.params:
        raise ValueError(f"trial {a.trial} has no sampled design ({t.state.name})")
    design = design_of(optuna.trial.FixedTrial(t.params, number=t.number), settings, study.study_name)
    net_json = write_net(design, trial_dir(out, t.number) / "net.json")
    r = recipe(settings.data)
    dest = out / "promoted" / f"t{t.number:04d}"
    tc = TrainConfig(net=str(net_json), data=settings.data, data_dir=a.data_dir,
                     epochs=r["epochs"] if a.epochs is None else a.epochs,
                     qat_epochs=r["qat_epochs"] if a.qat_epochs is None else a.qat_epochs,
                     limit_train=a.limit_train, seed=settings.seed, out=str(dest), threads=a.threads)
    print(f"promoting trial {t.number} ({design.n_pe}x{design.n_ci}): {net_json} -> {dest} "
          f"({tc.epochs} float + {tc.qat_epochs} QAT epochs; same as `make train NET={net_json}`)")
    metrics = run(tc)
    hw = hw_record(design, settings.part, settings.min_fps, settings.engine)
    promo = dict(trial=t.number, net_json=repo_relative(net_json), checkpoint=repo_relative(dest / "checkpoint.pt"),
                 engine=dict(n_pe=design.n_pe, n_ci=design.n_ci), proxy_fixed_top1=t.values[0] if t.values else None,
                 fixed_top1=metrics.get("fixed_top1"), float_top1=metrics.get("float_top1"),
                 predicted=dict(fps=hw["fps"], cycles_per_frame=hw["cycles_per_frame"], model=hw["model"]),
                 export_command=f"python -m zynqflow.export --ckpt {repo_relative(dest / 'checkpoint.pt')} "
                                f"--out {repo_relative(dest / 'export')} "
                                f"--n-pe {design.n_pe} --n-ci {design.n_ci}")
    (dest / "promotion.json").write_text(json.dumps(promo, indent=2) + "\n")
    print(json.dumps({k: promo[k] for k in ("trial", "proxy_fixed_top1", "fixed_top1", "export_command")}, indent=2))
    return 0


def cmd_models(a) -> int:
    from zynqflow.spec.topology import get_config

    cfg = get_config(a.net, in_channels=a.in_channels)
    params = n_params(cfg)
    print(f"{cfg.name}: {params} parameters, {cfg.in_channels}x{cfg.input_size}x{cfg.input_size} input; "
          f"{a.part}; {hw_model.MODEL_HLS if a.target == 'hls' else hw_model.MODEL}")
    print(f"{'engine':>7s} {'cycles':>9s} {'fps':>8s} {'DSP':>5s} {'BRAM36':>6s} {'LUT':>7s} {'FF':>7s}  fits")
    for pe, ci in get_space(a.space).engine_pairs():
        r = hw_model.evaluate(cfg, pe, ci, a.part, engine=a.target)
        fits = max(hw_model.violations(r, a.part).values()) <= 0
        print(f"{pe:>4d}x{ci:<2d} {r['cycles_per_frame']:>9d} {r['fps']:>8.0f} {r['dsp']:>5d} {r['bram36']:>6g} "
              f"{r['lut']:>7d} {r['ff']:>7d}  {'yes' if fits else 'no'}")
    return 0


def cmd_publish(a) -> int:
    """A promoted design, measured: its checkpoint exported for its engine, ``--frames`` test
    images (default all) through the RTL harness bit-exact against the golden model, then the
    network config, checkpoint, training log, ``metrics.json`` (full-training ``fixed_top1``,
    RTL ``fps_at_100mhz``, ``cycles_per_frame``, ``mac_units``) and the study's ``pareto.json``
    and ``pareto.png`` copied into ``--dest``."""
    import shutil

    from zynqflow.bench.rtl_bench import measure

    from . import report

    study, settings, out = _load(a)
    src = out / "promoted" / f"t{a.trial:04d}"
    promo_f = src / "promotion.json"
    if not promo_f.is_file():
        raise ValueError(f"trial {a.trial} is not promoted ({promo_f} missing): make dse-train TRIAL={a.trial} first")
    promo = json.loads(promo_f.read_text())
    train_metrics = json.loads((src / "metrics.json").read_text())
    for f in ("pareto.json", "pareto.png"):
        if not (out / f).is_file():
            raise ValueError(f"{out / f} missing: run `python -m zynqflow.dse report --study {study.study_name}`")
    e = promo["engine"]
    export_dir = src / "export"
    cmd = [sys.executable, "-m", "zynqflow.export", "--ckpt", str(src / "checkpoint.pt"), "--out", str(export_dir),
           "--n-pe", str(e["n_pe"]), "--n-ci", str(e["n_ci"])]
    if a.data_dir:
        cmd += ["--data-dir", a.data_dir]
    print("publish: " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    rtl = measure(export_dir, frames=a.frames, data=settings.data, data_dir=a.data_dir, out=src / "rtl_bench.json")
    if rtl["mismatches_vs_golden"]:
        raise ValueError(f"the RTL disagrees with the golden model on {rtl['mismatches_vs_golden']} of "
                         f"{rtl['frames']} frames ({src / 'rtl_bench.json'}): not published")
    dest = Path(a.dest)
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / promo["net_json"], dest / "config.json")
    shutil.copy(src / "train_log.jsonl", dest / "train_log.jsonl")
    # the published copy names where it now lives (relative to the checkout when inside it)
    here = dict(net=repo_relative(dest / "config.json"), out=repo_relative(dest))
    train_metrics["train_config"] = dict(train_metrics.get("train_config", {}), **here)
    _publish_checkpoint(src / "checkpoint.pt", dest / "checkpoint.pt", here)
    for f in ("pareto.json", "pareto.png"):
        shutil.copy(out / f, dest / f)
    ref = report.reference_point() if settings.data == "fashion-mnist" else None
    metrics = dict(
        train_metrics, study=study.study_name, trial=a.trial, part=settings.part,
        proxy_fixed_top1=promo["proxy_fixed_top1"], n_pe=e["n_pe"], n_ci=e["n_ci"], mac_units=e["n_pe"] * e["n_ci"],
        fps_at_100mhz=round(rtl["fps_at_100mhz"], 1), fps_label=rtl["fps_at_100mhz_label"],
        frame_period_cycles=rtl["frame_period_cycles"], cycles_per_frame=rtl["cycles_per_frame"],
        utilization=rtl["utilization"], predicted_fps=promo["predicted"]["fps"],
        rtl=dict(frames=rtl["frames"], mismatches_vs_golden=rtl["mismatches_vs_golden"], top1=rtl["top1"],
                 golden_top1=rtl["golden_top1"], wall_seconds=rtl["wall_seconds"], machine=rtl["machine"]),
        reference=ref,
        dominates_reference=(None if ref is None else bool(
            train_metrics["fixed_top1"] >= ref["fixed_top1"] and rtl["fps_at_100mhz"] >= ref["fps"]
            and (train_metrics["fixed_top1"] > ref["fixed_top1"] or rtl["fps_at_100mhz"] > ref["fps"]))),
        export_command=promo["export_command"])
    (dest / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    print(f"publish: trial {a.trial} ({e['n_pe']}x{e['n_ci']}): fixed top-1 {metrics['fixed_top1']:.4f} on "
          f"{metrics['test_images']} test images, {metrics['fps_at_100mhz']:.0f} {rtl['fps_at_100mhz_label']} "
          f"({rtl['frames']} frames bit-exact in RTL)"
          + (f"; reference zynqnet-mini {ref['fixed_top1']:.4f} at {ref['fps']:.0f} fps: "
             f"{'dominated' if metrics['dominates_reference'] else 'not dominated'}" if ref else "")
          + f" -> {dest}")
    return 0


def _publish_checkpoint(src: Path, dest: Path, train_config: dict) -> None:
    """Copy a checkpoint, its ``train_config`` updated with ``train_config`` (the published paths)."""
    import torch

    ck = torch.load(src, map_location="cpu", weights_only=False)
    ck["train_config"] = dict(ck.get("train_config", {}), **train_config)
    torch.save(ck, dest)


def main(argv=None) -> int:
    a = parser().parse_args(argv)
    try:
        return dict(run=cmd_run, worker=cmd_worker, report=cmd_report, train=cmd_train, models=cmd_models,
                    publish=cmd_publish)[a.cmd](a)
    except ValueError as e:
        print(f"dse: {e}", file=sys.stderr)
        return 2


