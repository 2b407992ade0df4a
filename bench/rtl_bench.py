"""``make rtl-bench``: the test set through the RTL twin, free-running, sharded over the cores.

    python -m zynqflow.bench.rtl_bench --export build/zynqnet-mini/export [--frames N] [--backpressure P]
        [--memory pynq-z2|ideal|stress] [--seeds N]

Builds (cached) the fast Verilator model of ``rtl/`` for the export
(:mod:`zynqflow.sim.harness.rtl_fast`, with a memory preset of the engine specification,
``pynq-z2`` by default, behind m_axi_wts / m_axi_act / m_axi_act2), runs the dataset's test images
(seeded random frames for an export of random weights) through one
simulator per core and checks every frame against the golden model
(``zynqflow.spec.golden``), then writes ``build/<net>/rtl_bench.json``
(``rtl_bench_backpressure.json`` with ``--backpressure``):

``memory_preset``, ``memory_model``    the DDR model's name (``custom`` if changed) and its fields
``frames``, ``mismatches_vs_golden``   frames run; frames whose logits differ (must be 0; with seeds, over all)
``seeds``, ``hangs``                   with ``--seeds`` or a random preset: the memory seeds run, and how many
                                       ended in a time-out (``hang_details``: seed, layer, cycle, message);
                                       ``protocol_failures`` (AXI rules broken); ``fps_at_100mhz_per_seed``
``memory_stats``                       the memories' counters: beats waiting for a token bucket, refresh and
                                       random-stall cycles, the shared budget's empty cycles, stream bytes
``macs_per_frame``, ``mac_units``      the network's MACs; N_PE * N_CI
``lanes``, ``dsp``, ``lut_lanes``      the engine's MAC lanes (N_PE * N_CI), DSP48E1 (lane pairs packed two to a
                                       DSP) and lanes on LUT multipliers; ``act_paths``: activation paths built
``first_mismatch``                     frame, logit, RTL and golden values of the first difference
``top1``, ``golden_top1``              accuracy of the RTL's and of the golden model's logits
``sim_cycles_per_second``              ``per_core`` (simulated cycles / seconds in each C++ loop)
                                       and ``total`` (all simulated cycles / wall time of the parallel run)
``sim_cycles_per_cpu_second``          ``per_core`` (simulated cycles / CPU seconds, user + sys, of each C++
                                       loop: independent of other load on the machine) and their ``median``
``sim_wall_seconds_projection``        a projection, not a measurement: the wall seconds of ``frames`` (the
                                       whole test set, at least 10 000) on ``cores`` free cores at the median
                                       CPU rate above
``sim_build``                          the simulator's build: ``opt`` (``--opt``: quick, o2, native, pgo; see
                                       zynqflow.sim.harness.rtl_fast.OPT_LEVELS; by default pgo for the whole
                                       test set), ``mem_fast_path``, cache key
``wall_seconds``                       the whole command (build check, data, golden model, simulation)
``golden_seconds``, ``golden_cached``  the golden model's time, and whether its logits came from the cache
``cycles_per_frame``                   median, min, max of cycles_last (first input beat accepted .. last
                                       output beat accepted), checked equal to the harness's own count
``frame_period_cycles``                median cycles between consecutive frames back to back
``fps_at_100mhz``                      100e6 / frame_period_cycles ("fps at 100 MHz, RTL simulation")
``backpressure``                       probability per cycle of an input gap and of output TREADY low
``utilization``                        network MACs / (N_PE * N_CI * median cycles_last)
``dram_bytes_per_frame``               bytes over the AXI4 masters per frame (``dram_rd_bytes_per_frame`` +
                                       ``dram_wr_bytes_per_frame``; the RTL's counters, median), and
                                       ``dram_mb_per_s_at_100mhz``; ``dram_stall_cycles`` (median)
``cycles_model``                       the cycle model's frame (``spec.cycles``) and its error; ``layers``: per
                                       layer measured ``layer_cycles`` against the model (last frame)
``projection_150mhz``                  the model's fps at 150 MHz (not simulated)
``logits_identical_to_run_without_backpressure``  with --backpressure, when the run without it saved
                                       its logits for the same frames (``rtl_bench_logits.npz``)
``machine``                            zynqflow.bench.bench.machine() before the run, and the load after

The golden logits are computed before any simulator starts (so no thread of this process is inside a
BLAS call while the simulator processes start) and cached in ``build/cache/golden/<key>.npy``, the key
over the export's integers, the frames and the golden model's sources: a second run of the same
export and frames reads them. Every wait on the simulators is bounded (``spec.procs``).

Exit status 0 when every frame matches; 1 on a mismatch (the first differing frame and logit are
printed), a hang or an AXI protocol error; 2 when it cannot run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from zynqflow.bench.rtl_perf import network_macs
from zynqflow.sim.harness.rtl_fast import (CLOCK_HZ, MAXI_PORTS, OPT_LEVELS, FastBuild, LogitMismatch, RtlFastError,
                                   SimSpec,
                                   compare_logits, cycle_budget, golden, memory_model, memory_name, run_opt,
                                   run_seeds, run_sharded)
from zynqflow.spec.cycles import RTL_TIMING
from zynqflow.spec.paths import REPO, repo_relative

LABEL = "fps at 100 MHz, RTL simulation"


def dataset_frames(export_dir: Path, frames: int, data: str | None, data_dir: str | None, seed: int = 1):
    """``frames`` (0: all) test images of the export's dataset, every class in proportion (a seeded stratified
    subset, model.data.Split.subset), HWC uint8, their labels and
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
    sub = test.subset(frames if frames > 0 else None)       # every class in proportion (seed 0), not a prefix
    return sub.hwc(), sub.labels, ds.name


GOLDEN_CACHE = REPO / "build" / "cache" / "golden"
GOLDEN_CACHE_KEEP = 64   # cached logit files kept (least recently used removed)


def golden_key(export_dir: Path, frames: np.ndarray) -> str:
    """What the golden logits of ``frames`` depend on: the export's integers, the frames, and the
    golden model's code (every source of zynqflow.spec)."""
    h = hashlib.sha256()
    h.update((Path(export_dir) / "integers.npz").read_bytes())
    h.update(repr((frames.shape, str(frames.dtype))).encode())
    h.update(np.ascontiguousarray(frames).tobytes())
    for src in sorted((REPO / "spec").glob("*.py")):
        h.update(src.read_bytes())
    return h.hexdigest()[:32]


def golden_cached(export_dir: Path, frames: np.ndarray, cache: Path | None = None) -> tuple[np.ndarray, Path, bool]:
    """The golden logits of ``frames`` (computed once per export content and frames, then read from
    ``cache``/<key>.npy); with the file and whether it was cached."""
    cache = Path(cache) if cache else GOLDEN_CACHE
    f = cache / f"{golden_key(export_dir, frames)}.npy"
    if f.is_file():
        try:
            logits = np.load(f)
            if logits.shape[0] == len(frames):
                os.utime(f)   # recently used
                return logits, f, True
        except (OSError, ValueError):
            pass   # a torn or foreign file: computed again below
    logits = golden(export_dir, frames)
    try:
        cache.mkdir(parents=True, exist_ok=True)
        tmp = f.with_name(f".{f.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            np.save(fh, logits)
        os.replace(tmp, f)
        old = sorted(cache.glob("*.npy"), key=lambda p: p.stat().st_mtime)[:-GOLDEN_CACHE_KEEP]
        for p in old:
            p.unlink(missing_ok=True)
    except OSError:
        pass   # a read-only checkout: not cached
    return logits, f, False


def memory_figures(res, man: dict, export_dir: Path, memory=None) -> dict:
    """DRAM traffic and stalls (the RTL's own counters, median over the frames), the cycle model's
    prediction under the same memory for the frame and per layer against the measured layer_cycles,
    and the model's projection to 150 MHz (the DDR's nanoseconds and bytes per second kept)."""
    from dataclasses import asdict

    from zynqflow.export.exporter import load_plan
    from zynqflow.spec.cycles import predict, scale_memory

    mem = memory_model(memory)
    rd = np.median(res.regs["dram_rd_bytes"]) if "dram_rd_bytes" in res.regs else None
    wr = np.median(res.regs["dram_wr_bytes"]) if "dram_wr_bytes" in res.regs else None
    st = np.median(res.regs["dram_stall_cycles"]) if "dram_stall_cycles" in res.regs else None
    cyc = float(np.median(res.cycles_last)) if len(res.cycles_last) else 0.0
    out = dict(dram_rd_bytes_per_frame=None if rd is None else int(rd),
               dram_wr_bytes_per_frame=None if wr is None else int(wr),
               dram_bytes_per_frame=None if rd is None else int(rd + wr),
               dram_stall_cycles=None if st is None else int(st),
               memory_model=asdict(mem))
    if rd is not None and cyc:
        out["dram_mb_per_s_at_100mhz"] = round((rd + wr) * CLOCK_HZ / cyc / 1e6, 1)
    try:
        plan = load_plan(export_dir)
    except Exception as e:  # noqa: BLE001 - an old export: no model figures
        out["cycles_model"] = dict(error=str(e))
        return out
    p = predict(plan, memory=mem)
    out["cycles_model"] = dict(cycles=p["frame"]["cycles"], fps_at_100mhz=p["frame"]["fps_at_100mhz"],
                               error_pct=round(100 * (p["frame"]["cycles"] - cyc) / cyc, 3) if cyc else None,
                               label=p["label"], memory=memory_name(memory))
    if res.layers:
        rows = []
        for m, q in zip(res.layers, p["layers"]):
            err = 100.0 * (q["cycles"] - m["cycles"]) / m["cycles"] if m["cycles"] else None
            rows.append(dict(name=q["name"], cycles_measured=m["cycles"], stalls_measured=m["stalls"],
                             cycles_model=q["cycles"], error_pct=None if err is None else round(err, 3),
                             bound_model=q["bound"], mac_cycles=q["mac_cycles"]))
        out["layers"] = rows
        out["cycles_model"]["worst_layer_error_pct"] = max(abs(r["error_pct"] or 0) for r in rows)
    p150 = predict(plan, memory=scale_memory(mem, 150.0), clock_mhz=150.0)
    out["projection_150mhz"] = dict(fps=round(p150["frame"]["fps"], 2), cycles=p150["frame"]["cycles"],
                                    label="cycle model at 150 MHz (the DDR's latencies in ns and bytes per second "
                                          "kept), not simulated; timing closure at 150 MHz not shown")
    return out


def is_random(memory) -> bool:
    """The memory model has random gaps or stalls (its seed matters)."""
    m = memory_model(memory)
    return any(g > 0 for g in (m.gap_ar, m.gap_r, m.gap_aw, m.gap_w, m.gap_b, m.stall_prob))


class _Seeds:
    """The good seeds' frames as one result (what memory_figures and the figures below read)."""

    def __init__(self, runs):
        good = [r for r in runs if r.batch is not None]
        cat = lambda xs: np.concatenate(xs) if xs else np.zeros(0)  # noqa: E731
        names = good[0].batch.regs.keys() if good else ()
        self.regs = {k: cat([r.batch.regs[k] for r in good]) for k in names}
        self.logits = cat([r.batch.logits for r in good]) if good else None
        self.cycles_last = self.regs.get("cycles_last", np.zeros(0))
        self.cycles_measured = cat([r.batch.cycles_measured for r in good])
        self.periods = cat([np.diff(r.batch.out_last) for r in good])
        self.layers = good[0].layers if good else None
        self.sim_cycles = int(sum(r.batch.cycles for r in good))
        self.seconds = sum(r.batch.wall_s for r in good)
        self.workers = {}

    def check(self) -> None:
        bad = np.flatnonzero(self.cycles_last.astype(np.int64) != self.cycles_measured)
        if len(bad):
            raise RtlFastError(f"{len(bad)} frames whose cycles_last register differs from the harness's count")


def _progress(t0: float, what: str = "frames"):
    last = [0.0]

    def show(done: int, n: int) -> None:
        if done == n or time.time() - last[0] > 10:
            last[0] = time.time()
            print(f"rtl_bench: {done}/{n} {what} ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
    return show


def measure(export_dir: Path, frames: int = 0, data: str | None = None, data_dir: str | None = None,
            backpressure: float = 0.0, workers: int | None = None, seed: int = 1, out: Path | None = None,
            expected: Path | None = None, memory="pynq-z2", seeds: int | None = None, opt: str | None = None,
            mem_fast_path: bool = True) -> dict:
    """The frames through the RTL behind ``memory`` (a preset name or a MemoryModel). Without ``seeds``
    and with a memory without random gaps or stalls, the frames are sharded over the simulators;
    otherwise every seed 1..``seeds`` (default 1) of the memory runs all the frames on its own
    simulator, and a hang (a time-out, naming the layer and the cycle) counts instead of ending
    the run. ``opt`` is the simulator's build (:data:`~zynqflow.sim.harness.rtl_fast.OPT_LEVELS`; default
    :func:`~zynqflow.sim.harness.rtl_fast.run_opt`: profile-guided for long runs such as the whole test
    set), and ``mem_fast_path`` the memories' quiet fast path (off: every cycle through the full model)."""
    from zynqflow.bench.bench import machine

    t_start = time.perf_counter()
    m0 = machine()
    export_dir = Path(export_dir).resolve()
    man = json.loads((export_dir / "manifest.json").read_text())
    net = man["network"]
    mem = memory_model(memory)
    x, labels, dname = dataset_frames(export_dir, frames, data, data_dir, seed)
    t0 = time.perf_counter()
    build = FastBuild(export_dir, opt=run_opt(export_dir, len(x) * (seeds or 1), opt))
    lib = build.build()
    build_s = time.perf_counter() - t0
    spec = SimSpec.for_export(lib, export_dir, memory=mem, mem_fast_path=mem_fast_path)
    workers = workers or os.cpu_count() or 1
    by_seed = seeds is not None or is_random(mem)
    seed_list = list(range(1, (seeds or 1) + 1)) if by_seed else []
    print(f"rtl_bench: {len(x)} frames ({dname}) through the RTL of {net} on {workers} simulator(s), memory "
          f"{memory_name(memory)}{f', {len(seed_list)} seed(s)' if by_seed else ''}"
          f"{f', backpressure {backpressure}' if backpressure else ''} ...", file=sys.stderr, flush=True)
    # the golden model first, in this thread, and cached on disk: no thread of this process is
    # inside a BLAS call while the simulators start (their pool never forks it either)
    t1 = time.perf_counter()
    gold, gold_cache, gold_cached = golden_cached(export_dir, x)
    golden_s = time.perf_counter() - t1
    print(f"rtl_bench: golden model of {len(x)} frames "
          f"{'from the cache' if gold_cached else f'computed in {golden_s:.1f} s, cached'} "
          f"({repo_relative(gold_cache)})", file=sys.stderr, flush=True)
    budget = cycle_budget(export_dir, backpressure, mem)
    runs = None
    if by_seed:
        runs = run_seeds(spec, x, seed_list, workers=workers, backpressure=backpressure, frame_budget=budget,
                         progress=_progress(time.time(), "seeds"))
        res = _Seeds(runs)
    else:
        res = run_sharded(spec, x, workers=workers, backpressure=backpressure, seed=seed, frame_budget=budget,
                          progress=_progress(time.time()))
    res.check()
    first = None
    if by_seed:
        bad = np.zeros(0, bool)
        for r in runs:
            if r.batch is None:
                continue
            b = (r.batch.logits != gold).any(axis=1)
            bad = np.concatenate([bad, b])
            if first is None and b.any():
                try:
                    compare_logits(r.batch.logits, gold)
                except LogitMismatch as e:
                    first = dict(seed=r.seed, frame=e.frame, logit=e.index, rtl=e.got, golden=e.expected,
                                 message=f"memory seed {r.seed}: {e}")
    else:
        bad = (res.logits != gold).any(axis=1)
        try:
            compare_logits(res.logits, gold)
        except LogitMismatch as e:
            first = dict(frame=e.frame, logit=e.index, rtl=e.got, golden=e.expected, message=str(e))
    cyc = res.cycles_last.astype(np.int64)
    n_good = len(cyc)
    # back to back, consecutive frames' last logits are cycles_last + the restart apart; with one
    # frame per simulator there is no second frame to measure it on: the RTL's restart is added
    # (to the slowest frame of one simulator, to the median over the seeds)
    period = (float(np.median(res.periods)) if len(res.periods)
              else float((np.median(cyc) if by_seed else cyc.max(initial=0)) + RTL_TIMING.restart) if n_good
              else None)
    e = man["engine"]
    units = e["n_pe"] * e["n_ci"]
    macs = network_macs(man)
    if by_seed:
        per_core = sorted((r.batch.cycles / r.batch.wall_s for r in runs if r.batch is not None and r.batch.wall_s),
                          reverse=True)
        per_cpu = sorted((r.batch.cycles / r.batch.cpu_s for r in runs if r.batch is not None and r.batch.cpu_s),
                         reverse=True)
        sim_cycles = res.sim_cycles
        wall_sim = sum(r.wall_s for r in runs) / max(1, min(workers, len(runs)))
        n_workers = min(workers, len(runs))
    else:
        per_core = sorted(res.sim_cycles_per_second_per_core.values(), reverse=True)
        per_cpu = sorted(res.sim_cycles_per_cpu_second_per_core.values(), reverse=True)
        sim_cycles, wall_sim, n_workers = res.sim_cycles, res.wall_s, len(res.workers)
    cpu_rate = float(np.median(per_cpu)) if per_cpu else None
    full = max(10_000, len(x))
    cores = min(workers, full)
    r = dict(
        network=net, export=str(export_dir), rtl="rtl", simulator="free-running Verilator harness (zynqflow.sim.harness.rtl_fast)",
        memory_preset=memory_name(memory), data=dname, frames=len(x), mismatches_vs_golden=int(bad.sum()),
        first_mismatch=first,
        top1=float((res.logits.argmax(1) == labels).mean()) if n_good and labels is not None and not by_seed
        else None,
        golden_top1=float((gold.argmax(1) == labels).mean()) if len(x) and labels is not None else None,
        sim_cycles_per_second=dict(per_core=per_core, total=sim_cycles / wall_sim if wall_sim else 0.0,
                                   note="per core: simulated cycles / seconds inside that simulator's C++ loop; "
                                        "total: all simulated cycles / wall time of the parallel run"),
        sim_cycles_per_cpu_second=dict(per_core=per_cpu, median=cpu_rate,
                                       note="simulated cycles / CPU seconds (user + sys) of each simulator's C++ "
                                            "loop"),
        sim_wall_seconds_projection=dict(
            frames=full, cores=cores,
            seconds=round(full * sim_cycles / max(1, n_good) / (cores * cpu_rate), 1) if cpu_rate and n_good else None,
            label="projection, not measured: frames x simulated cycles per frame (this run) / (cores x median "
                  "simulated cycles per CPU second); free cores assumed, start-up and golden model not included"),
        sim_build=dict(opt=build.opt, what=build.level.what, mem_fast_path=mem_fast_path, key=build.key),
        sim_cycles=sim_cycles, workers=n_workers,
        wall_seconds=None, wall_seconds_simulation=wall_sim, build_seconds=round(build_s, 2),
        golden_seconds=round(golden_s, 2), golden_cached=gold_cached,
        cycles_per_frame=dict(median=float(np.median(cyc)), min=int(cyc.min()), max=int(cyc.max())) if n_good
        else None,
        frame_period_cycles=period, fps_at_100mhz=CLOCK_HZ / period if period else None, fps_at_100mhz_label=LABEL,
        latency_us_at_100mhz=float(np.median(cyc)) / (CLOCK_HZ / 1e6) if n_good else None,
        macs_per_frame=macs, mac_units=units,
        # the engine's lanes: N_PE x N_CI, of which dsp48e1 pairs pack two MACs each and lut_lanes
        # are exact LUT multipliers; the activation paths it was built with
        lanes=units, dsp=int(e.get("dsp48e1", units // 2)), dsp48e1=int(e.get("dsp48e1", units // 2)),
        lut_lanes=int(e.get("lut_lanes", 0)), act_paths=int(e.get("act_paths", 1)),
        utilization=macs / (units * float(np.median(cyc))) if n_good else None,
        backpressure=backpressure, seed=seed,
    )
    if by_seed:
        hung = [x_ for x_ in runs if x_.hang]
        broken = [x_ for x_ in runs if x_.error]
        fps = [CLOCK_HZ / (float(np.median(np.diff(x_.batch.out_last))) if len(x_.batch) > 1
                           else float(x_.batch.cycles_last[-1]) + RTL_TIMING.restart)
               for x_ in runs if x_.batch is not None and len(x_.batch)]
        r.update(seeds=seed_list, hangs=len(hung), protocol_failures=len(broken),
                 hang_details=[dict(seed=x_.seed, layer=x_.hang_layer, cycle=x_.hang_cycle, message=x_.hang)
                               for x_ in hung],
                 protocol_failure_details=[dict(seed=x_.seed, message=x_.error) for x_ in broken],
                 fps_at_100mhz_per_seed=dict(median=float(np.median(fps)) if fps else None,
                                             min=min(fps, default=None), max=max(fps, default=None)),
                 memory_stats=_memory_stats([x_.mem for x_ in runs if x_.mem]))
    else:
        r.update(hangs=0, memory_stats=_memory_stats([w["mem"] for w in res.workers.values() if "mem" in w]))
    if n_good:
        r.update(memory_figures(res, man, export_dir, mem))
    else:
        r.update(memory_model=asdict(mem))
    frames_sha = hashlib.sha1(x.tobytes()).hexdigest()
    out = Path(out) if out else REPO / "build" / net / ("rtl_bench_backpressure.json" if backpressure
                                                        else "rtl_bench.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    saved = out.parent / "rtl_bench_logits.npz"
    if not by_seed and not backpressure:
        np.savez(saved, logits=res.logits, frames_sha1=frames_sha)
    elif backpressure and not by_seed and saved.is_file():
        z = np.load(saved)
        r["logits_identical_to_run_without_backpressure"] = (
            bool(np.array_equal(z["logits"], res.logits)) if str(z["frames_sha1"]) == frames_sha else None)
    if expected is not None and not by_seed:
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


def _memory_stats(mems: list[dict]) -> dict:
    """The memories' counters added over the simulators and both ports: cycles an R beat or a W
    beat waited for a token bucket, refresh cycles, random-stall cycles, late beats after a reset,
    the shared budget's empty cycles and the stream bytes charged to it."""
    keys = ("r_budget_cycles", "w_budget_cycles", "refresh_cycles", "stall_cycles", "late_read_beats",
            "protocol_errors")
    out = {k: 0 for k in keys}
    out.update(shared_empty_cycles=0, stream_bytes=0)
    for m in mems:
        for p in MAXI_PORTS:
            for k in keys:
                out[k] += int(m.get(p, {}).get(k, 0))
        out["shared_empty_cycles"] += int(m.get("shared", {}).get("empty_cycles", 0))
        out["stream_bytes"] += int(m.get("shared", {}).get("stream_bytes", 0))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--export", default="build/zynqnet-mini/export", help="export directory")
    ap.add_argument("--frames", type=int, default=0, help="test images (default 0: the whole test set)")
    ap.add_argument("--data", default=None, help="dataset (default: the manifest's)")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--backpressure", type=float, default=0.0,
                    help="probability per cycle of an input gap and of output TREADY low (default 0)")
    ap.add_argument("--workers", type=int, default=None, help="simulator processes (default: one per core)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the random frames and stream stalls")
    ap.add_argument("--memory", default="pynq-z2",
                    help="the DDR behind the engine: a preset of spec.engine.MEMORY_PRESETS (ideal, pynq-z2, "
                         "stress; default pynq-z2)")
    ap.add_argument("--seeds", type=int, default=None,
                    help="run the frames under memory seeds 1..N, one simulator per seed (random presets)")
    ap.add_argument("--expected", default=None, help=".npy of logits to compare with as well (N x classes)")
    ap.add_argument("--out", default=None, help="default build/<net>/rtl_bench[_backpressure].json")
    ap.add_argument("--opt", default=None, choices=sorted(OPT_LEVELS),
                    help="the simulator's C++ build (default: $ZQ_SIM_OPT, else pgo, profile-guided and cached, "
                         "for 100 M simulated cycles or more, e.g. the whole test set, else native)")
    ap.add_argument("--no-mem-fast-path", dest="mem_fast_path", action="store_false",
                    help="every cycle through the full memory model (the fast path gives the same bits)")
    a = ap.parse_args(argv)
    try:
        r = measure(Path(a.export), a.frames, a.data, a.data_dir, a.backpressure, a.workers, a.seed,
                    Path(a.out) if a.out else None, Path(a.expected) if a.expected else None, memory=a.memory,
                    seeds=a.seeds, opt=a.opt, mem_fast_path=a.mem_fast_path)
    except (RtlFastError, OSError, ValueError) as e:
        print(f"rtl_bench: {e}", file=sys.stderr)
        return 2
    c = r["cycles_per_frame"] or {}
    acc = (f"top-1 {r['top1']:.4f} (golden {r['golden_top1']:.4f})" if r["top1"] is not None
           else f"no labels ({r['data']})")
    dram = (f", {r['dram_bytes_per_frame'] / 1e6:.2f} MB DRAM/frame" if r.get("dram_bytes_per_frame") is not None
            else "")
    seeds = (f"{len(r['seeds'])} memory seeds, {r['hangs']} hangs, " if r.get("seeds") else "")
    speed = (f"utilization {r['utilization']:.3f}{dram}; {c.get('median', 0):.0f} cycles/frame "
             f"(min {c.get('min')}, max {c.get('max')}), period {r['frame_period_cycles']:.0f} -> "
             f"{r['fps_at_100mhz']:.1f} {LABEL}" if c else "no frame completed")
    print(f"{r['network']} (memory {r['memory_preset']}): {r['frames']} frames, {seeds}"
          f"{r['mismatches_vs_golden']} mismatches vs golden, {acc}; {speed}; "
          f"{r['sim_cycles_per_second']['total'] / 1e6:.2f} M cycles/s on {r['workers']} cores "
          f"({', '.join(f'{v / 1e6:.2f}' for v in r['sim_cycles_per_second']['per_core'])} per core; "
          f"{(r['sim_cycles_per_cpu_second']['median'] or 0) / 1e6:.2f} M per CPU second, {r['sim_build']['opt']}); "
          f"wall {r['wall_seconds']:.1f} s -> {r['_out']}")
    for h in r.get("hang_details", []):
        print(f"rtl_bench: HANG (memory seed {h['seed']}): {h['message']}", file=sys.stderr)
    for h in r.get("protocol_failure_details", []):
        print(f"rtl_bench: AXI PROTOCOL (memory seed {h['seed']}): {h['message']}", file=sys.stderr)
    failed = bool(r.get("hangs") or r.get("protocol_failures"))
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
