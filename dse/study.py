"""The study: settings, storage, the objective and the worker loop.

A study lives in Optuna storage; everything a worker needs to join it (data
set, part, search space, proxy schedule, trial budget) is stored with it as
study user attributes, so a second machine only names the study and the
storage. Each trial:

1. samples a design (:func:`zynqflow.dse.space.sample`), writes its network
   as ``trials/<n>/net.json`` (accepted by ``make train NET=<file>``);
2. evaluates it with the hardware models (:mod:`zynqflow.dse.hw_model`) and
   records the resource constraints (feasible when every value is <= 0);
   a design that does not fit the part is not trained: it is recorded as
   PRUNED with the reason, and the sampler learns it is infeasible;
3. trains it with the proxy schedule (``model.train.run`` on a subset, a few
   float epochs and QAT; scored with the exact integer path on held-out
   training images) and returns (fixed-point top-1, frames/s).

A trial that raises (a rule violation, divergence, anything) is recorded as
FAIL with its reason and the worker goes on; Ctrl-C (or SIGTERM) records the
running trial as FAIL ("interrupted", not counted against the budget) and
stops, so the storage is always consistent and the next run resumes.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import socket
import sys
import time
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

import optuna
from optuna.trial import TrialState

from zynqflow.spec.paths import BUILD, file_lock, repo_relative
from zynqflow.spec.topology import CIFAR10_CLASSES, FASHION_CLASSES

from . import hw_model
from .space import Design, Space, get_space, n_params, sample

DSE_ROOT = BUILD / "dse"
OBJECTIVES = ("fixed_top1_proxy", "fps")
ATTR = "zynqflow_dse"   # study user attribute holding the Settings


class TrialFailed(RuntimeError):
    """A trial cannot give a result (diverged, broke a rule); the message is its recorded reason."""


@dataclass(frozen=True)
class Proxy:
    """The short training that stands in for the full one (Iandola's "rapid training")."""

    limit_train: int | None = 15000   # first N training images (after the holdout is taken off)
    holdout: int = 2000               # scored on the last N training images (never on the test set)
    epochs: int = 6                   # float epochs
    qat_epochs: int = 1
    batch_size: int = 128
    calib_images: int = 1024

    def describe(self) -> str:
        n = "all" if self.limit_train is None else f"{self.limit_train}"
        return (f"proxy: {n} training images, {self.epochs} float + {self.qat_epochs} QAT epochs, "
                f"fixed-point top-1 (exact integer path) on the last {self.holdout} training images (held out)")


PROXIES = {
    "default": Proxy(),
    "smoke": Proxy(limit_train=None, holdout=128, epochs=3, qat_epochs=1, batch_size=64, calib_images=128),
}


@dataclass(frozen=True)
class Settings:
    """What defines a study (stored with it; a resumed or joined study must agree)."""

    data: str = "fashion-mnist"
    part: str = "xc7z020"
    space: dict | None = None
    proxy: dict | None = None
    seed: int = 0
    startup_trials: int = 10
    in_channels: int = 1
    min_fps: float = 0.0      # >0: designs predicted slower are infeasible (not trained)
    engine: str = "rtl"       # the engine variant the search targets (hw_model.ENGINES): its models

    @property
    def space_obj(self) -> Space:
        return Space.from_dict(self.space)

    @property
    def proxy_obj(self) -> Proxy:
        return Proxy(**self.proxy)


@dataclass
class Worker:
    """Per-process options (they do not change results)."""

    out: Path                      # build/dse/<study>
    data_dir: str | None = None
    threads: int | None = None
    fail_trials: tuple[int, ...] = ()   # testing: these trial numbers break a design rule
    hold_trial: int | None = None       # testing: this trial waits for a signal after its first epoch
    quiet: bool = False


# ---- storage -------------------------------------------------------------------------
def storage_for(url: str | None, out: Path):
    """``None``: a journal file under ``out``; ``<scheme>://...``: an RDB URL (sqlite, postgresql,
    mysql); anything else: a journal file path (on a shared filesystem for several machines)."""
    if url and "://" in url:
        return optuna.storages.RDBStorage(url)
    path = Path(url) if url else out / "journal.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    from optuna.storages.journal import JournalFileBackend

    return optuna.storages.JournalStorage(JournalFileBackend(str(path)))


def lock_path(url: str | None, out: Path) -> Path | None:
    """A file beside a file-based storage, to hand out trial numbers one at a time (so a budget
    of N trials gives exactly N even with several workers); None for network databases."""
    if url and "://" in url:
        return Path(url.split("///", 1)[1] + ".lock") if url.startswith("sqlite:///") else None
    return Path(url or out / "journal.log").with_suffix(".lock")


def sampler(settings: Settings, worker_seed: int) -> optuna.samplers.BaseSampler:
    """Multi-objective TPE with constraints (see docs/dse.md for why not NSGA-II)."""
    kw = dict(seed=worker_seed, n_startup_trials=settings.startup_trials, multivariate=True, group=True,
              constant_liar=True)
    if not hasattr(optuna.trial.Trial, "set_constraint"):   # Optuna < 5: constraints through the sampler
        kw["constraints_func"] = lambda t: t.user_attrs.get("constraints", [1.0])
    with _quiet_experimental():
        return optuna.samplers.TPESampler(**kw)


@contextlib.contextmanager
def _quiet_experimental():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        yield


def open_study(name: str, storage, settings: Settings | None, worker_seed: int, trials: int | None = None,
               explicit: dict[str, bool] | None = None, default_trials: int | None = None,
               wait_s: float = 0.0) -> tuple[optuna.Study, Settings]:
    """Create or load ``name``.

    With ``settings``: create the study with them, or, when it exists, check
    that the fields marked in ``explicit`` (the options given on the command
    line; all when None) agree with the stored ones. Without: load it,
    waiting up to ``wait_s`` seconds for another process to create it.
    ``trials`` sets the budget (``default_trials`` if the study has none)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    deadline = time.time() + wait_s
    while True:
        try:
            study = optuna.load_study(study_name=name, storage=storage)
            # the creator sets the settings just after creating the study: a waiting worker that
            # loads it in between waits for them as for the study
            if settings is not None or ATTR in study.user_attrs or time.time() > deadline:
                break
            time.sleep(0.5)
        except KeyError:
            if settings is not None:
                study = optuna.create_study(study_name=name, storage=storage, directions=["maximize", "maximize"],
                                            load_if_exists=True)
                break
            if time.time() > deadline:
                raise ValueError(f"study '{name}' does not exist in this storage (start it with "
                                 f"`python -m zynqflow.dse run --study {name} ...`)") from None
            time.sleep(0.5)
    stored = study.user_attrs.get(ATTR)
    if stored is None:
        if settings is None:
            raise ValueError(f"study '{name}' has no zynqflow settings: not a zynqflow.dse study")
        study.set_user_attr(ATTR, asdict(settings))
        stored = asdict(settings)
    have = Settings(**stored)
    if settings is not None:
        for f in fields(Settings):
            if explicit is not None and not explicit.get(f.name):
                continue
            a, b = getattr(have, f.name), getattr(settings, f.name)
            if json.dumps(a, sort_keys=True) != json.dumps(b, sort_keys=True):
                raise ValueError(f"study '{name}' was created with {f.name}={a!r}; this run asks for {b!r} "
                                 f"(use another --study, or leave the option out to resume it)")
    if trials is not None or ("trials" not in study.user_attrs and default_trials is not None):
        study.set_user_attr("trials", int(trials if trials is not None else default_trials))
    if "trials" not in study.user_attrs:
        raise ValueError(f"study '{name}' has no trial budget: pass --trials")
    study.sampler = sampler(have, worker_seed)
    return study, have


# ---- one trial -------------------------------------------------------------------------
def class_names(data: str) -> tuple[str, ...]:
    from zynqflow.model.data import dataset_tag

    if Path(data).is_dir():                 # a folder of images: its class folders
        from zynqflow.model.folders import list_folder

        return list_folder(data).class_names
    return {"fashion-mnist": FASHION_CLASSES, "cifar10": CIFAR10_CLASSES}.get(dataset_tag(data), ())


def design_of(trial, settings: Settings, study_name: str) -> Design:
    """Sample (a live trial) or rebuild (a FixedTrial of recorded params) a trial's design."""
    return sample(trial, settings.space_obj, settings.part, settings.in_channels, f"{study_name}-t{trial.number}",
                  class_names(settings.data), engine=settings.engine)


def trial_dir(out: Path, number: int) -> Path:
    return out / "trials" / f"{number:04d}"


def write_net(design: Design, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(design.net, indent=2) + "\n")
    return path


def hw_record(design: Design, part: str, min_fps: float = 0.0, engine: str = "rtl") -> dict:
    """The models' predictions for a design, its constraint values (feasible when all <= 0:
    the part's resources, and ``min_fps`` when given) and its parameter count."""
    hw = hw_model.evaluate(design.cfg, design.n_pe, design.n_ci, part, design.clock_mhz, engine=engine,
                           act_paths=design.act_paths)
    viol = hw_model.violations(hw, part)
    if min_fps:
        viol["fps"] = min_fps / hw["fps"] - 1.0
    return dict(hw, n_pe=design.n_pe, n_ci=design.n_ci, act_paths=design.act_paths,
                lut_lanes=hw["detail"].get("lut_lanes", 0), part=part, constraints=viol,
                feasible=max(viol.values()) <= 0,
                params=n_params(design.cfg))


def hold_for_signal(trial_number: int):
    """Test hook (``--hold-trial``): after the first epoch, say so on the process's own stderr
    (``hold: trial N training``) and wait for a signal; Ctrl-C / SIGTERM then interrupts the trial
    mid-training, however loaded the machine (a test waits for the line, never on a race)."""
    def on_epoch(rec: dict) -> None:
        if rec["epoch"] == 1:
            print(f"hold: trial {trial_number} training (epoch 1 done, pid {os.getpid()}): waiting for a signal",
                  file=sys.__stderr__, flush=True)
            while True:
                signal.pause()
    return on_epoch


def proxy_train(net_json: Path, settings: Settings, out: Path, data_dir: str | None, threads: int | None,
                log: Path | None = None, on_epoch=None) -> dict:
    """Train ``net_json`` with the study's proxy schedule into ``out``; the metrics (fixed_top1 is the
    exact-integer-path top-1 on the held-out images). Raises TrialFailed if training diverged."""
    from zynqflow.model.train import TrainConfig, run

    px = settings.proxy_obj
    tc = TrainConfig(net=str(net_json), data=settings.data, data_dir=data_dir, epochs=px.epochs,
                     qat_epochs=px.qat_epochs, batch_size=px.batch_size, limit_train=px.limit_train,
                     holdout=px.holdout, calib_images=px.calib_images, seed=settings.seed, out=str(out),
                     threads=threads, resume=False)
    log = log or out / "train.out"
    out.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as f, contextlib.redirect_stdout(f), contextlib.redirect_stderr(f):
        metrics = run(tc, on_epoch=on_epoch)
    losses = [json.loads(l)["loss"] for l in (out / "train_log.jsonl").read_text().splitlines()]
    bad = [i + 1 for i, v in enumerate(losses) if not math.isfinite(v)]
    if bad or not metrics:
        raise TrialFailed(f"training diverged: loss {losses[bad[0] - 1] if bad else None} at epoch "
                          f"{bad[0] if bad else '?'} (log {log})")
    return metrics


def _break_rule(design: Design) -> Design:
    """Fault injection for tests: a 5x5 stem, which the design-rule checker refuses."""
    cfg = design.cfg
    return replace(design, cfg=replace(cfg, layers=(replace(cfg.layers[0], k=5),) + cfg.layers[1:]))


def objective(trial: optuna.Trial, settings: Settings, study_name: str, w: Worker) -> tuple[float, float]:
    from zynqflow.spec.topology import check_rules

    design = design_of(trial, settings, study_name)
    if trial.number in w.fail_trials:
        design = _break_rule(design)
    d = trial_dir(w.out, trial.number)
    net_json = write_net(design, d / "net.json")
    trial.set_user_attr("net", design.net)
    check_rules(design.cfg)   # by construction this passes (a broken one fails the trial here)
    hw = hw_record(design, settings.part, settings.min_fps, settings.engine)
    trial.set_user_attr("hw", hw)
    _set_constraints(trial, hw["constraints"])
    if not hw["feasible"]:
        lim = hw_model.get_part(settings.part).limits()
        over = ", ".join(f"{k} {hw[k]} > {lim[k]}" if k in lim else f"{hw['fps']:.0f} fps < {settings.min_fps:g}"
                         for k, v in hw["constraints"].items() if v > 0)
        raise optuna.TrialPruned(f"infeasible on {settings.part} ({over}); not trained")
    t0 = time.time()
    m = proxy_train(net_json, settings, d, w.data_dir, w.threads,
                    on_epoch=hold_for_signal(trial.number) if trial.number == w.hold_trial else None)
    trial.set_user_attr("proxy", dict(fixed_top1=m["fixed_top1"], float_top1=m["float_top1"],
                                      eval_split=m["eval_split"], train_images=m["train_images"],
                                      eval_images=m["test_images"], seconds=round(time.time() - t0, 1),
                                      checkpoint=repo_relative(d / "checkpoint.pt"), device=m["machine"]["device"]))
    return float(m["fixed_top1"]), float(hw["fps"])


def _set_constraints(trial: optuna.Trial, viol: dict[str, float]) -> None:
    trial.set_user_attr("constraints", list(viol.values()))
    if hasattr(trial, "set_constraint"):
        for k, v in viol.items():
            trial.set_constraint(k, v)


# ---- the worker loop -------------------------------------------------------------------
def counted(t: optuna.trial.FrozenTrial) -> bool:
    """Trials that use up the budget: all but the interrupted ones."""
    return not (t.state == TrialState.FAIL and t.user_attrs.get("fail_kind") == "interrupted")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reap_dead(study: optuna.Study) -> list[int]:
    """RUNNING trials of dead workers on this host (killed without a chance to clean up) -> FAIL."""
    host, reaped = socket.gethostname(), []
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        wk = t.user_attrs.get("worker", "")
        h, _, pid = wk.rpartition(":")
        if h == host and pid.isdigit() and not _alive(int(pid)):
            tr = optuna.trial.Trial(study, t._trial_id)
            tr.set_user_attr("fail_reason", f"worker {wk} died while running it")
            tr.set_user_attr("fail_kind", "interrupted")
            with contextlib.suppress(Exception):   # another worker may have reaped it first
                study.tell(t.number, state=TrialState.FAIL)
                reaped.append(t.number)
    return reaped


@contextlib.contextmanager
def _file_lock(path: Path | None):
    if path is None:
        yield
        return
    with file_lock(path):
        yield


def _sigterm_as_interrupt():
    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    with contextlib.suppress(ValueError):   # not the main thread
        signal.signal(signal.SIGTERM, handler)


def progress_line(study: optuna.Study) -> dict:
    """Study-wide progress: finished trials (counted), failures, the most accurate feasible design so
    far and the mean duration of a finished trial."""
    trials = study.get_trials(deepcopy=False)
    done = [t for t in trials if t.state.is_finished() and counted(t)]
    ok = [t for t in trials if t.state == TrialState.COMPLETE and t.user_attrs.get("hw", {}).get("feasible")]
    best = max(ok, key=lambda t: (t.values[0], t.values[1]), default=None)
    secs = [(t.datetime_complete - t.datetime_start).total_seconds() for t in done
            if t.datetime_complete and t.datetime_start]
    return dict(done=len(done), failed=sum(t.state == TrialState.FAIL for t in done),
                best=None if best is None else f"{best.values[0]:.4f}@{best.values[1]:.0f}fps(#{best.number})",
                s_per_trial=f"{sum(secs) / len(secs):.0f}" if secs else "-")


class _Progress:
    """The progress bar, refreshed from the storage after every trial and every few seconds
    (so trials finished by other workers show up too)."""

    def __init__(self, study: optuna.Study, total: int, quiet: bool, every_s: float = 5.0):
        import threading

        from tqdm import tqdm

        self.study = study
        self.bar = tqdm(total=total, desc=f"dse {study.study_name}", unit="trial", disable=quiet,
                        file=sys.stderr, dynamic_ncols=True)
        self.stop = threading.Event()
        self.thread = None if quiet else threading.Thread(target=self._loop, args=(every_s,), daemon=True)
        if self.thread:
            self.thread.start()

    def _loop(self, every_s: float) -> None:
        while not self.stop.wait(every_s):
            with contextlib.suppress(Exception):   # a storage hiccup must not kill the worker
                self.update()

    def update(self, total: int | None = None) -> None:
        p = progress_line(self.study)
        if total is not None:
            self.bar.total = total
        self.bar.n = min(p.pop("done"), self.bar.total)
        self.bar.set_postfix(p, refresh=False)
        self.bar.refresh()

    def write(self, msg: str) -> None:
        self.bar.write(msg, file=sys.stderr)

    def close(self) -> None:
        self.stop.set()
        if self.thread:
            self.thread.join(timeout=10)
        self.bar.close()


def work(study: optuna.Study, settings: Settings, w: Worker, lock: Path | None) -> dict:
    """Run trials until the study's budget is used up; returns this worker's counts."""
    _sigterm_as_interrupt()
    me = f"{socket.gethostname()}:{os.getpid()}"
    target = int(study.user_attrs["trials"])
    stats = dict(ran=0, seconds=0.0)
    prog = _Progress(study, target, w.quiet)
    if not w.quiet:
        prog.write(f"{settings.proxy_obj.describe()}; {settings.part}; models: {hw_model.MODEL}")
    try:
        while True:
            reap_dead(study)
            with _file_lock(lock):
                target = int(study.user_attrs.get("trials", target))
                if sum(counted(t) for t in study.get_trials(deepcopy=False)) >= target:
                    break
                trial = study.ask()
                trial.set_user_attr("worker", me)
            t0 = time.time()
            try:
                values = objective(trial, settings, study.study_name, w)
            except optuna.TrialPruned as e:
                trial.set_user_attr("reason", str(e))
                study.tell(trial, state=TrialState.PRUNED)
            except KeyboardInterrupt:
                trial.set_user_attr("fail_reason", "interrupted (Ctrl-C / SIGTERM)")
                trial.set_user_attr("fail_kind", "interrupted")
                study.tell(trial, state=TrialState.FAIL)
                raise
            except Exception as e:  # noqa: BLE001 - any failure is recorded and the study goes on
                trial.set_user_attr("fail_reason", f"{type(e).__name__}: {e}")
                trial.set_user_attr("fail_kind", "error")
                study.tell(trial, state=TrialState.FAIL)
                if not w.quiet:
                    prog.write(f"trial {trial.number} failed: {type(e).__name__}: {e}")
            else:
                study.tell(trial, list(values))
            stats["ran"] += 1
            stats["seconds"] += time.time() - t0
            if not w.quiet:
                prog.update(target)
    finally:
        if not w.quiet:
            with contextlib.suppress(Exception):
                prog.update(target)
        prog.close()
    return stats


def wait_for_running(study: optuna.Study, quiet: bool = False, poll_s: float = 2.0) -> None:
    """Wait until no trial is RUNNING (other workers finishing theirs); Ctrl-C stops waiting."""
    said = None
    try:
        while True:
            reap_dead(study)
            running = [t.number for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))]
            if not running:
                return
            if running != said and not quiet:
                print(f"waiting for trials {running} on other workers (Ctrl-C to report without them)",
                      file=sys.stderr)
                said = running
            time.sleep(poll_s)
    except KeyboardInterrupt:
        return


def settings_from_args(data: str, part: str, space: str, engines: tuple[str, ...], proxy: Proxy, seed: int,
                       startup_trials: int, min_fps: float = 0.0, engine: str = "rtl") -> Settings:
    from zynqflow.model.data import dataset_tag

    in_channels = 3 if dataset_tag(data) == "cifar10" else 1
    sp = get_space(space, engines)
    if Path(data).is_dir():                 # a folder of images: its colour and class count
        from zynqflow.model.folders import folder_channels, list_folder

        lst = list_folder(data)
        in_channels = folder_channels(lst)
        sp = replace(sp, num_classes=len(lst.class_names))
        sp.check()
    hw_model.get_part(part)
    return Settings(data=data, part=hw_model.get_part(part).name, space=sp.to_dict(), proxy=asdict(proxy),
                    seed=seed, startup_trials=startup_trials, in_channels=in_channels, min_fps=float(min_fps),
                    engine=engine)


def default_out(study_name: str, root: Path | None = None) -> Path:
    return Path(root or DSE_ROOT) / study_name
