"""``make rtl-bench``: the test set through the RTL twin, free-running, sharded over the cores.

    python -m zynqflow.bench.rtl_bench --export build/zynqnet-mini/export [--frames N] [--backpressure P]

Builds (cached) the fast Verilator model of ``rtl/`` for the export
(:mod:`zynqflow.sim.rtl_fast`), runs the dataset's test images through one
simulator per core and checks every frame against the golden model
(``zynqflow.spec.golden``), then writes ``build/<net>/rtl_bench.json``
(``rtl_bench_backpressure.json`` with ``--backpressure``):

``frames``, ``mismatches_vs_golden``   frames run; frames whose logits differ (must be 0)
``first_mismatch``                     frame, logit, RTL and golden values of the first difference
``top1``, ``golden_top1``              accuracy of the RTL's and of the golden model's logits
``sim_cycles_per_second``              ``per_core`` (simulated cycles / seconds in each C++ loop)
                                       and ``total`` (all simulated cycles / wall time of the parallel run)
``wall_seconds``                       the whole command (build check, data, simulation, golden model)
``cycles_per_frame``                   median, min, max of cycles_last (first input beat accepted .. last
                                       output beat accepted), checked equal to the harness's own count
``frame_period_cycles``                median cycles between consecutive frames back to back
``fps_at_100mhz``                      100e6 / frame_period_cycles ("fps at 100 MHz, RTL simulation")
``backpressure``                       probability per cycle of an input gap and of output TREADY low
``logits_identical_to_run_without_backpressure``  with --backpressure, when the run without it saved
                                       its logits for the same frames (``rtl_bench_logits.npz``)
``machine``                            zynqflow.bench.bench.machine() before the run, and the load after

Exit status 0 when every frame matches; 1 on a mismatch (the first differing frame and logit are
printed); 2 when it cannot run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from zynqflow.bench.rtl_perf import network_macs
from zynqflow.sim.rtl_fast import (CLOCK_HZ, FastBuild, LogitMismatch, RtlFastError, SimSpec, compare_logits,
                                   cycle_budget, golden, run_sharded)
from zynqflow.spec.paths import REPO

LABEL = "fps at 100 MHz, RTL simulation"


def dataset_frames(export_dir: Path, frames: int, data: str | None, data_dir: str | None):
    """The first ``frames`` (0: all) test images of the export's dataset, HWC uint8, and their labels."""
    from zynqflow.model.data import load_dataset

    man = json.loads((export_dir / "manifest.json").read_text())
    name = data or man.get("dataset") or "fashion-mnist"
    test = load_dataset(name, data_dir, man["input"]["shape"][0]).test
    n = len(test) if frames <= 0 else min(frames, len(test))
    return test.hwc()[:n], test.labels[:n], name


def _progress(t0: float):
    last = [0.0]

    def show(done: int, n: int) -> None:
        if done == n or time.time() - last[0] > 10:
            last[0] = time.time()
            print(f"rtl_bench: {done}/{n} frames ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
    return show


def measure(export_dir: Path, frames: int = 0, data: str | None = None, data_dir: str | None = None,
            backpressure: float = 0.0, workers: int | None = None, seed: int = 1, out: Path | None = None,
            expected: Path | None = None) -> dict:
    from zynqflow.bench.bench import machine

    t_start = time.perf_counter()
    m0 = machine()
    export_dir = Path(export_dir).resolve()
    man = json.loads((export_dir / "manifest.json").read_text())
    net = man["network"]
    x, labels, dname = dataset_frames(export_dir, frames, data, data_dir)
    t0 = time.perf_counter()
    build = FastBuild(export_dir)
    lib = build.build()
    build_s = time.perf_counter() - t0
    spec = SimSpec.for_export(lib, export_dir)
    workers = workers or os.cpu_count() or 1
    print(f"rtl_bench: {len(x)} {dname} test images through the RTL of {net} on {workers} simulator(s)"
          f"{f', backpressure {backpressure}' if backpressure else ''} ...", file=sys.stderr, flush=True)
    res = run_sharded(spec, x, workers=workers, backpressure=backpressure, seed=seed,
                      frame_budget=cycle_budget(export_dir, backpressure), progress=_progress(time.time()))
    res.check()
    t1 = time.perf_counter()
    gold = golden(export_dir, x)
    golden_s = time.perf_counter() - t1
    bad = (res.logits != gold).any(axis=1)
    first = None
    try:
        compare_logits(res.logits, gold)
    except LogitMismatch as e:
        first = dict(frame=e.frame, logit=e.index, rtl=e.got, golden=e.expected, message=str(e))
    cyc = res.cycles_last.astype(np.int64)
    period = float(np.median(res.periods)) if len(res.periods) else float(cyc.max(initial=0) + 1)
    e = man["engine"]
    units = e["n_pe"] * e["n_ci"]
    per_core = sorted(res.sim_cycles_per_second_per_core.values(), reverse=True)
    r = dict(
        network=net, export=str(export_dir), rtl="rtl", simulator="free-running Verilator harness (zynqflow.sim.rtl_fast)",
        data=dname, frames=len(x), mismatches_vs_golden=int(bad.sum()), first_mismatch=first,
        top1=float((res.logits.argmax(1) == labels).mean()) if len(x) else None,
        golden_top1=float((gold.argmax(1) == labels).mean()) if len(x) else None,
        sim_cycles_per_second=dict(per_core=per_core, total=res.sim_cycles_per_second,
                                   note="per core: simulated cycles / seconds inside that simulator's C++ loop; "
                                        "total: all simulated cycles / wall time of the parallel run"),
        sim_cycles=res.sim_cycles, workers=len(res.workers),
        wall_seconds=None, wall_seconds_simulation=res.wall_s, build_seconds=round(build_s, 2),
        golden_seconds=round(golden_s, 2),
        cycles_per_frame=dict(median=float(np.median(cyc)), min=int(cyc.min()), max=int(cyc.max())) if len(x)
        else None,
        frame_period_cycles=period, fps_at_100mhz=CLOCK_HZ / period, fps_at_100mhz_label=LABEL,
        latency_us_at_100mhz=float(np.median(cyc)) / (CLOCK_HZ / 1e6) if len(x) else None,
        utilization=network_macs(man) / (units * float(np.median(cyc))) if len(x) else None,
        backpressure=backpressure, seed=seed,
    )
    frames_sha = hashlib.sha1(x.tobytes()).hexdigest()
    out = Path(out) if out else REPO / "build" / net / ("rtl_bench_backpressure.json" if backpressure
                                                        else "rtl_bench.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    saved = out.parent / "rtl_bench_logits.npz"
    if not backpressure:
        np.savez(saved, logits=res.logits, frames_sha1=frames_sha)
    elif saved.is_file():
        z = np.load(saved)
        r["logits_identical_to_run_without_backpressure"] = (
            bool(np.array_equal(z["logits"], res.logits)) if str(z["frames_sha1"]) == frames_sha else None)
    if expected is not None:
        want = np.load(expected)
        try:
            compare_logits(res.logits, want, f"the expected logits ({expected})")
            r["identical_to_expected"] = True
        except (LogitMismatch, RtlFastError) as err:
            r["identical_to_expected"] = False
            r["expected_mismatch"] = str(err)
    r["wall_seconds"] = round(time.perf_counter() - t_start, 2)
    m0["load_average_after"] = list(os.getloadavg())
    r["machine"] = m0
    out.write_text(json.dumps(r, indent=2) + "\n")
    r["_out"] = str(out)
    return r


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--export", default="build/zynqnet-mini/export", help="export directory")
    ap.add_argument("--frames", type=int, default=0, help="test images (default 0: the whole test set)")
    ap.add_argument("--data", default=None, help="dataset (default: the manifest's)")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--backpressure", type=float, default=0.0,
                    help="probability per cycle of an input gap and of output TREADY low (default 0)")
    ap.add_argument("--workers", type=int, default=None, help="simulator processes (default: one per core)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--expected", default=None, help=".npy of logits to compare with as well (N x classes)")
    ap.add_argument("--out", default=None, help="default build/<net>/rtl_bench[_backpressure].json")
    a = ap.parse_args(argv)
    try:
        r = measure(Path(a.export), a.frames, a.data, a.data_dir, a.backpressure, a.workers, a.seed,
                    Path(a.out) if a.out else None, Path(a.expected) if a.expected else None)
    except (RtlFastError, OSError, ValueError) as e:
        print(f"rtl_bench: {e}", file=sys.stderr)
        return 2
    c = r["cycles_per_frame"] or {}
    print(f"{r['network']}: {r['frames']} frames, {r['mismatches_vs_golden']} mismatches vs golden, top-1 "
          f"{r['top1']:.4f} (golden {r['golden_top1']:.4f}); {c.get('median', 0):.0f} cycles/frame "
          f"(min {c.get('min')}, max {c.get('max')}), period {r['frame_period_cycles']:.0f} -> "
          f"{r['fps_at_100mhz']:.0f} {LABEL}; {r['sim_cycles_per_second']['total'] / 1e6:.2f} M cycles/s on "
          f"{r['workers']} cores ({', '.join(f'{v / 1e6:.2f}' for v in r['sim_cycles_per_second']['per_core'])} "
          f"per core); wall {r['wall_seconds']:.1f} s -> {r['_out']}")
    failed = False
    if r["first_mismatch"]:
        print(f"rtl_bench: MISMATCH: {r['first_mismatch']['message']}", file=sys.stderr)
        failed = True
    if r.get("identical_to_expected") is False:
        print(f"rtl_bench: MISMATCH: {r['expected_mismatch']}", file=sys.stderr)
        failed = True
    if r.get("logits_identical_to_run_without_backpressure") is False:
        print("rtl_bench: logits differ from the run without backpressure", file=sys.stderr)
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
