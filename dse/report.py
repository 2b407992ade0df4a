"""Study outputs in ``build/dse/<study>/``, always rewritten whole from the
storage (so several workers and interrupted runs never leave a torn file):

``trials.jsonl``  one line per trial: number, state, the sampled parameters,
                  the network (compact NetConfig) and its JSON file, the engine,
                  proxy accuracy, predicted cycles/fps and resources, the
                  constraint values, the failure or pruning reason, worker, time
``pareto.json``   the non-dominated feasible designs (accuracy and fps both
                  maximized), the proxy schedule, the models, the reference and,
                  after hardware in the loop, model against measurement
``pareto.png``    accuracy against fps, colour = DSP, Pareto front joined,
                  hardware-in-the-loop points (measured fps) distinguished, the
                  reference zynqnet-mini marked
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import optuna

from zynqflow.spec.paths import REPO, repo_relative

from . import hw_model
from .study import Settings, counted, trial_dir

REFERENCE_METRICS = REPO / "model" / "reference" / "zynqnet-mini" / "fashion-mnist" / "metrics.json"


def reference_point() -> dict:
    """zynqnet-mini on Fashion-MNIST: full training, RTL-simulated frames/s at 100 MHz."""
    m = json.loads(REFERENCE_METRICS.read_text())
    fps = m["fps_at_100mhz"]   # measured: make rtl-bench on the reference checkpoint
    return dict(name="zynqnet-mini", fixed_top1=m["fixed_top1"], fps=round(fps, 1), n_pe=16, n_ci=8,
                source=f"{REFERENCE_METRICS.relative_to(REPO)} (full training, 10 000 test images); "
                       "fps: RTL simulation at 100 MHz (make rtl-bench)")


def row(t: optuna.trial.FrozenTrial, out: Path) -> dict:
    hw = t.user_attrs.get("hw", {})
    proxy = t.user_attrs.get("proxy", {})
    net_json = trial_dir(out, t.number) / "net.json"
    return dict(
        number=t.number, state=t.state.name.lower(),
        fixed_top1_proxy=t.values[0] if t.values else None,
        fps=t.values[1] if t.values else hw.get("fps"),
        feasible=hw.get("feasible"), params=t.params, net=t.user_attrs.get("net"),
        net_json=repo_relative(net_json) if net_json.exists() else None,
        engine=dict(n_pe=hw.get("n_pe"), n_ci=hw.get("n_ci"), clock_mhz=hw.get("clock_mhz"),
                    act_paths=hw.get("act_paths", 1), lut_lanes=hw.get("lut_lanes", 0)) if hw else None,
        cycles_per_frame=hw.get("cycles_per_frame"),
        resources={k: hw[k] for k in hw_model.RESOURCES} if hw else None,
        constraints=hw.get("constraints"), n_params=hw.get("params"), model=hw.get("model"),
        proxy=proxy or None,
        reason=t.user_attrs.get("fail_reason") or t.user_attrs.get("reason"),
        fail_kind=t.user_attrs.get("fail_kind"), counted=counted(t),
        worker=t.user_attrs.get("worker"),
        seconds=(t.datetime_complete - t.datetime_start).total_seconds()
        if t.datetime_complete and t.datetime_start else None,
    )


def dominates(a: dict, b: dict) -> bool:
    """a is at least as good in both objectives and better in one (both maximized)."""
    ka, kb = (a["fixed_top1_proxy"], a["fps"]), (b["fixed_top1_proxy"], b["fps"])
    return all(x >= y for x, y in zip(ka, kb)) and ka != kb


def pareto(rows: list[dict]) -> list[dict]:
    """The non-dominated completed feasible rows, by accuracy descending."""
    ok = [r for r in rows if r["state"] == "complete" and r["feasible"]]
    front = [r for r in ok if not any(dominates(o, r) for o in ok)]
    return sorted(front, key=lambda r: (-r["fixed_top1_proxy"], -r["fps"], r["number"]))


def _ranks(xs: list[float]) -> list[float]:
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2
        i = j + 1
    return r


def spearman(a: list[float], b: list[float]) -> float | None:
    """Spearman rank correlation (average ranks for ties); None below 3 points or without spread."""
    if len(a) < 3:
        return None
    ra, rb = _ranks(a), _ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va, vb = sum((x - ma) ** 2 for x in ra), sum((y - mb) ** 2 for y in rb)
    return cov / (va * vb) ** 0.5 if va and vb else None


def reference_proxy_row(settings: Settings) -> dict | None:
    """The reference zynqnet-mini as one more (proxy, full) pair, when its metrics record a proxy
    run with this study's schedule and seed (``dse_proxy`` in its metrics.json)."""
    if settings.data != "fashion-mnist" or not REFERENCE_METRICS.is_file():
        return None
    m = json.loads(REFERENCE_METRICS.read_text())
    px = m.get("dse_proxy")
    if not px or px.get("proxy_schedule") != settings.proxy or px.get("seed") != settings.seed:
        return None
    return dict(trial="reference zynqnet-mini", proxy_fixed_top1=px["fixed_top1"], fixed_top1=m["fixed_top1"],
                checkpoint=str(REFERENCE_METRICS.parent.relative_to(REPO) / "checkpoint.pt"))


def promoted(out: Path, settings: Settings | None = None) -> dict:
    """The promoted (fully retrained) designs: proxy against full fixed top-1, and their rank
    correlation (the reference zynqnet-mini counts as one more pair when its proxy run matches)."""
    rows = []
    for f in sorted((out / "promoted").glob("t*/promotion.json")):
        p = json.loads(f.read_text())
        if p.get("fixed_top1") is not None and p.get("proxy_fixed_top1") is not None:
            rows.append(dict(trial=p["trial"], proxy_fixed_top1=p["proxy_fixed_top1"], fixed_top1=p["fixed_top1"],
                             checkpoint=repo_relative(REPO / p["checkpoint"])))
    ref = reference_proxy_row(settings) if settings is not None else None
    if ref:
        rows.append(ref)
    return dict(designs=rows, proxy_rank_correlation=spearman([r["proxy_fixed_top1"] for r in rows],
                                                              [r["fixed_top1"] for r in rows]))


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def study_time(study: optuna.Study) -> dict:
    """How long the search took: ``busy_seconds`` is the time at least one trial was running (the
    union of the trials' intervals, so a study resumed the next day does not count the night),
    ``trial_seconds_median`` the median duration of a trained trial."""
    spans = sorted((t.datetime_start, t.datetime_complete) for t in study.get_trials(deepcopy=False)
                   if t.datetime_start and t.datetime_complete and counted(t))   # not the interrupted ones
    busy, cur = 0.0, None
    for a, b in spans:
        if cur is None or a > cur[1]:
            if cur:
                busy += (cur[1] - cur[0]).total_seconds()
            cur = [a, b]
        else:
            cur[1] = max(cur[1], b)
    if cur:
        busy += (cur[1] - cur[0]).total_seconds()
    trained = sorted((t.datetime_complete - t.datetime_start).total_seconds() for t in study.get_trials(deepcopy=False)
                     if t.state == optuna.trial.TrialState.COMPLETE and t.datetime_start and t.datetime_complete)
    return dict(busy_seconds=round(busy, 1), trials_trained=len(trained),
                trial_seconds_median=round(trained[len(trained) // 2], 1) if trained else None,
                note="wall time with at least one trial running (union of trial intervals), "
                     "hardware in the loop not included")


def write(study: optuna.Study, settings: Settings, out: Path, hil: list[dict] | None = None) -> dict:
    """Write trials.jsonl, pareto.json and pareto.png; returns the pareto.json content."""
    out.mkdir(parents=True, exist_ok=True)
    rows = [row(t, out) for t in study.get_trials(deepcopy=False)]
    _atomic_write(out / "trials.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    front = pareto(rows)
    old = out / "pareto.json"
    if hil is None and old.exists():   # keep earlier hardware-in-the-loop results of designs still on the front
        nums = {r["number"] for r in front}
        hil = [h for h in json.loads(old.read_text()).get("hil", []) if h.get("number") in nums]
    states = {}
    for r in rows:
        states[r["state"]] = states.get(r["state"], 0) + 1
    rep = dict(
        study=study.study_name, dataset=settings.data, part=settings.part,
        part_limits=hw_model.get_part(settings.part).limits(),
        objectives=["maximize fixed-point top-1 (exact integer path) after the proxy schedule",
                    f"maximize frames/s at {hw_model.get_part(settings.part).clock_mhz:g} MHz from the cycle model"],
        proxy=settings.proxy_obj.describe(), proxy_schedule=settings.proxy, models=hw_model.MODEL,
        min_fps=settings.min_fps or None,
        space=settings.space, trials=len(rows), states=states, budget=study.user_attrs.get("trials"),
        study_time=study_time(study), pareto=front, hil=hil or [], promoted=promoted(out, settings),
        reference=reference_point() if settings.data == "fashion-mnist" else None,
    )
    _atomic_write(out / "pareto.json", json.dumps(rep, indent=2) + "\n")
    plot(rows, front, rep, out / "pareto.png")
    return rep


def plot(rows: list[dict], front: list[dict], rep: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 5))
    ok = [r for r in rows if r["state"] == "complete" and r["feasible"]]
    if ok:
        sc = ax.scatter([r["fps"] for r in ok], [r["fixed_top1_proxy"] for r in ok],
                        c=[r["resources"]["dsp"] for r in ok], cmap="viridis", s=36, zorder=2,
                        label="trials (cycle model)")
        fig.colorbar(sc, ax=ax, label="DSP (model)")
    if front:
        pts = sorted((r["fps"], r["fixed_top1_proxy"]) for r in front)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "k--", lw=0.8, zorder=1)
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=90, facecolors="none", edgecolors="k", zorder=3,
                   label="Pareto front")
    for h in rep.get("hil", []):
        if h.get("measured", {}).get("fps"):
            ax.scatter([h["measured"]["fps"]], [h["fixed_top1_proxy"]], marker="D", s=60, color="tab:red",
                       zorder=4, label="hardware in the loop (RTL-measured fps)")
            ax.annotate("", (h["measured"]["fps"], h["fixed_top1_proxy"]),
                        (h["model"]["fps"], h["fixed_top1_proxy"]), arrowprops=dict(arrowstyle="->", color="tab:red"))
    fps_of = {r["number"]: r["fps"] for r in rows}
    for d in (rep.get("promoted") or {}).get("designs", []):
        if d["trial"] in fps_of:   # the same design after the full schedule (test set): a vertical step up
            x = fps_of[d["trial"]]
            ax.scatter([x], [d["fixed_top1"]], marker="s", s=60, color="tab:green", edgecolors="k", zorder=5,
                       label="promoted: full training, test set")
            ax.annotate("", (x, d["fixed_top1"]), (x, d["proxy_fixed_top1"]),
                        arrowprops=dict(arrowstyle="->", color="tab:green", lw=0.8))
            ax.annotate(f"#{d['trial']}", (x, d["fixed_top1"]), textcoords="offset points", xytext=(5, 3), fontsize=7)
    ref = rep.get("reference")
    if ref:
        ax.scatter([ref["fps"]], [ref["fixed_top1"]], marker="*", s=220, color="tab:orange", edgecolors="k",
                   zorder=5, label=f"{ref['name']} 16x8 (full training, RTL sim)")
    if rep.get("min_fps"):
        ax.axvline(rep["min_fps"], color="grey", lw=0.8, ls=":", label=f"min fps {rep['min_fps']:g}")
    ax.set_xscale("log")
    ax.set_xlabel(f"frames/s at {hw_model.get_part(rep['part']).clock_mhz:g} MHz")
    ax.set_ylabel("fixed-point top-1")
    ax.set_title(textwrap.fill(f"{rep['study']}: {rep['part']}, {len(rows)} trials; {rep['proxy']}", 110),
                 fontsize=7)
    handles, labels = ax.get_legend_handles_labels()
    seen = {}
    for hnd, lab in zip(handles, labels):
        seen.setdefault(lab, hnd)
    ax.legend(seen.values(), seen.keys(), fontsize=7, loc="lower left")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.png")
    fig.savefig(tmp, dpi=120)
    plt.close(fig)
    os.replace(tmp, path)
