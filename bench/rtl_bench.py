"""``make rtl-bench``: the test set through the RTL twin, free-running, sharded over the cores.

    python -m zynqflow.bench.rtl_bench --export build/zynqnet-mini/export [--frames N] [--backpressure P]

Builds (cached) the fast Verilator model of ``rtl/`` for the export
(:mod:`zynqflow.sim.rtl_fast`, with the AXI4 memory model of the engine
specification behind m_axi_wts / m_axi_act), runs the dataset's test images
(seeded random frames for an export of random weights) through one
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
``utilization``                        network MACs / (N_PE * N_CI * median cycles_last)
``dram_bytes_per_frame``               bytes over both AXI4 masters per frame (``dram_rd_bytes_per_frame`` +
                                       ``dram_wr_bytes_per_frame``; the RTL's counters, median), and
                                       ``dram_mb_per_s_at_100mhz``; ``dram_stall_cycles`` (median)
``cycles_model``                       the cycle model's frame (``spec.cycles``) and its error; ``layers``: per
                                       layer measured ``layer_cycles`` against the model (last frame)
``projection_150mhz``                  the model's fps at 150 MHz (not simulated)
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
import threading
import time
from pathlib import Path

import numpy as np

from zynqflow.bench.rtl_perf import network_macs
from zynqflow.sim.rtl_fast import (CLOCK_HZ, FastBuild, LogitMismatch, RtlFastError, SimSpec, compare_logits,
                                   cycle_budget, golden, run_sharded)
from zynqflow.spec.cycles import RTL_TIMING
from zynqflow.spec.paths import REPO

LABEL = "fps at 100 MHz, RTL simulation"


def dataset_frames(export_dir: Path, frames: int, data: str | None, data_dir: str | None, seed: int = 1):
    """The first ``frames`` (0: all) test images of the export's dataset, HWC uint8, their labels and
    the dataset's name. An export of seeded random weights (``weights_source`` random:<seed>) gets
    seeded random frames and no labels: its figures are speed and bit-exactness, not accuracy."""
    man = json.loads((export_dir / "manifest.json").read_text())
    if str(man.get("weights_source", "")).startswith("random:"):
        n = frames if frames > 0 else 16
        x = np.random.default_rng(seed).integers(0, 256, (n, *man["input"]["shape"]), dtype=np.uint8)
        return x, None, f"random frames (seed {seed}; random weights {man['weights_source']})"
    if not (data or man.get("dataset") or man.get("dataset_source")):   # e.g. an imported network: its vectors
        x = np.fromfile(export_dir / "vectors_in.bin", np.uint8).reshape(-1, *man["input"]["shape"])
        n = len(x) if frames <= 0 else min(frames, len(x))
        return x[:n], None, "the export's test vectors (no dataset)"
    from zynqflow.model.data import load_for_manifest

    ds = load_for_manifest(man, data, data_dir)
    test = ds.test
    n = len(test) if frames <= 0 else min(frames, len(test))
    return test.subset(n).hwc(), test.labels[:n], ds.name


def memory_figures(res, man: dict, export_dir: Path) -> dict:
    """DRAM traffic and stalls (the RTL's own counters, median over the frames), the cycle model's
    prediction for the frame and per layer against the measured layer_cycles, and the model's
    projection to 150 MHz (DDR latencies scaled with the clock)."""
    from dataclasses import asdict

    from zynqflow.export.exporter import load_plan
    from zynqflow.spec import engine as E
    from zynqflow.spec.cycles import predict

    rd = np.median(res.regs["dram_rd_bytes"]) if "dram_rd_bytes" in res.regs else None
    wr = np.median(res.regs["dram_wr_bytes"]) if "dram_wr_bytes" in res.regs else None
    st = np.median(res.regs["dram_stall_cycles"]) if "dram_stall_cycles" in res.regs else None
    cyc = float(np.median(res.cycles_last)) if len(res.cycles_last) else 0.0
    out = dict(dram_rd_bytes_per_frame=None if rd is None else int(rd),
               dram_wr_bytes_per_frame=None if wr is None else int(wr),
               dram_bytes_per_frame=None if rd is None else int(rd + wr),
               dram_stall_cycles=None if st is None else int(st),
               memory_model=asdict(E.MEMORY_MODEL))
    if rd is not None and cyc:
        out["dram_mb_per_s_at_100mhz"] = round((rd + wr) * CLOCK_HZ / cyc / 1e6, 1)
    try:
        plan = load_plan(export_dir)
    except Exception as e:  # noqa: BLE001 - an old export: no model figures
        out["cycles_model"] = dict(error=str(e))
        return out
    p = predict(plan)
    out["cycles_model"] = dict(cycles=p["frame"]["cycles"], fps_at_100mhz=p["frame"]["fps_at_100mhz"],
                               error_pct=round(100 * (p["frame"]["cycles"] - cyc) / cyc, 3) if cyc else None,
                               label=p["label"])
    if res.layers:
        rows = []
        for m, q in zip(res.layers, p["layers"]):
            err = 100.0 * (q["cycles"] - m["cycles"]) / m["cycles"] if m["cycles"] else None
            rows.append(dict(name=q["name"], cycles_measured=m["cycles"], stalls_measured=m["stalls"],
                             cycles_model=q["cycles"], error_pct=None if err is None else round(err, 3),
                             bound_model=q["bound"], mac_cycles=q["mac_cycles"]))
        out["layers"] = rows
        out["cycles_model"]["worst_layer_error_pct"] = max(abs(r["error_pct"] or 0) for r in rows)
    m150 = E.MemoryModel(read_latency=-(-E.MEMORY_MODEL.read_latency * 3 // 2),
                         write_latency=-(-E.MEMORY_MODEL.write_latency * 3 // 2))
    p150 = predict(plan, memory=m150, clock_mhz=150.0)
    out["projection_150mhz"] = dict(fps=round(p150["frame"]["fps"], 2), cycles=p150["frame"]["cycles"],
                                    label="cycle model at 150 MHz (DDR latencies scaled to the same ns), "
                                          "not simulated; timing closure at 150 MHz not shown")
    return out


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
    x, labels, dname = dataset_frames(export_dir, frames, data, data_dir, seed)
    t0 = time.perf_counter()
    build = FastBuild(export_dir)
    lib = build.build()
    build_s = time.perf_counter() - t0
    spec = SimSpec.for_export(lib, export_dir)
    workers = workers or os.cpu_count() or 1
    print(f"rtl_bench: {len(x)} frames ({dname}) through the RTL of {net} on {workers} simulator(s)"
          f"{f', backpressure {backpressure}' if backpressure else ''} ...", file=sys.stderr, flush=True)
    # the golden model runs in this process while the simulators run in theirs (numpy releases the GIL)
    gold_box: dict = {}

    def _golden() -> None:
        t1 = time.perf_counter()
        try:
            gold_box["logits"] = golden(export_dir, x)
        except BaseException as err:  # noqa: BLE001 - raised again below, in the caller's thread
            gold_box["error"] = err
        gold_box["seconds"] = time.perf_counter() - t1

    th = threading.Thread(target=_golden, name="golden", daemon=True)
    th.start()
    res = run_sharded(spec, x, workers=workers, backpressure=backpressure, seed=seed,
                      frame_budget=cycle_budget(export_dir, backpressure), progress=_progress(time.time()))
    th.join()
    if "error" in gold_box:
        raise gold_box["error"]
    res.check()
    gold, golden_s = gold_box["logits"], gold_box["seconds"]
    bad = (res.logits != gold).any(axis=1)
    first = None
    try:
        compare_logits(res.logits, gold)
    except LogitMismatch as e:
        first = dict(frame=e.frame, logit=e.index, rtl=e.got, golden=e.expected, message=str(e))
    cyc = res.cycles_last.astype(np.int64)
    # back to back, consecutive frames' last logits are cycles_last + the restart apart; with one
    # frame per simulator there is no second frame to measure it on: the RTL's restart is added
    period = float(np.median(res.periods)) if len(res.periods) else float(cyc.max(initial=0) + RTL_TIMING.restart)
    e = man["engine"]
    units = e["n_pe"] * e["n_ci"]
    per_core = sorted(res.sim_cycles_per_second_per_core.values(), reverse=True)
    r = dict(
        network=net, export=str(export_dir), rtl="rtl", simulator="free-running Verilator harness (zynqflow.sim.rtl_fast)",
        data=dname, frames=len(x), mismatches_vs_golden=int(bad.sum()), first_mismatch=first,
        top1=float((res.logits.argmax(1) == labels).mean()) if len(x) and labels is not None else None,
        golden_top1=float((gold.argmax(1) == labels).mean()) if len(x) and labels is not None else None,
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
    r.update(memory_figures(res, man, export_dir))
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
    acc = (f"top-1 {r['top1']:.4f} (golden {r['golden_top1']:.4f})" if r["top1"] is not None
           else f"no labels ({r['data']})")
    dram = (f", {r['dram_bytes_per_frame'] / 1e6:.2f} MB DRAM/frame" if r.get("dram_bytes_per_frame") is not None
            else "")
    print(f"{r['network']}: {r['frames']} frames, {r['mismatches_vs_golden']} mismatches vs golden, {acc}; "
          f"utilization {r['utilization']:.3f}{dram}; {c.get('median', 0):.0f} cycles/frame "
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
