"""``make bench``: speed and bit-exactness figures, as JSON plus a short table.

Writes into ``build/bench/``:

``training.json``  seconds per epoch of zynqnet-mini training, float vs QAT
                   (median of timed windows, extrapolated to a full epoch),
                   their ratio, and the exact-integer evaluation throughput
                   over the whole test set.
``csim.json``      the reference checkpoint's whole test set through the
                   HLS C simulation, mismatches vs golden (must be 0).
``bitexact.json``  hls4ml side by side (see zynqflow.bench.hls4ml_compare).
``rtl_bench.json`` the test set through the RTL twin on the free-running
                   Verilator harness, one simulator per core (``--rtl-frames``,
                   default all 10 000; see zynqflow.bench.rtl_bench): accuracy,
                   mismatches vs golden, cycles per frame, simulator speed.
``memory.json``    the full 256x256 ZynqNet (seeded random weights) through the
                   RTL behind the memory presets (spec.engine.MEMORY_PRESETS):
                   each preset, per-port bandwidth 8/7/6/5/4 B/cycle x read
                   latency 32/64/128 on pynq-z2, the CPU's share 0 and 25 %,
                   20 seeds of stress; per run preset, port_bytes_per_cycle,
                   read_latency, cpu_share, fps_at_100mhz, utilization,
                   stall_cycles, mismatches_vs_golden, hangs and per layer the
                   bound (with measured and modelled cycles); the pynq-z2
                   figures at the top level.
``zynqnet.json``   the full 256x256 ZynqNet (seeded random weights) through the
                   RTL behind the pynq-z2 memory: frames back to back, bit-exact
                   vs golden, cycles per frame, fps at 100 MHz (RTL simulation),
                   MAC utilization, DRAM bytes and stalls, each layer against the
                   cycle model; the read-latency rows of memory.json, and the
                   model's 150 MHz projection; the engine's lanes (DSP-packed and
                   LUT), DSP, LUT, BRAM36 (Yosys estimate when resources.json is
                   this export's, else modelled) with the block design's LUTs
                   (estimate), and GOP/s per DSP and per thousand LUTs.
``dse.json``       the co-design search's committed Fashion-MNIST design
                   (model/reference/dse/fashion-mnist/) exported for its engine,
                   2 000 test images through the RTL (bit-exact, fps at 100 MHz),
                   beside zynqnet-mini and the study's time and proxy rank
                   correlation.
``resources.json``, ``timing.json``  Yosys estimate of the engine that runs zynqnet
                   (make synth-estimate NET=zynqnet): resources, and the worst
                   register-to-register paths with a routing estimate (bench/sta.py;
                   the bench fails when one is over 8.5 ns).
``hls_exact.json`` one full ZynqNet frame through the HLS engine's C simulation in the exact HLS
                   types, and the pipeline-hazard C simulation for every delay up to twice the
                   core's stated depth on the HLS test networks (0 mismatches, or the bench fails).
``hls.json``       the HLS engine (hls/) beside the RTL twin for zynqnet, zynqnet-rgb and
                   zynqnet-mini: its frame rate at 100 MHz as its cycle model predicts it
                   (spec.cycles_hls, modelled, under the pynq-z2 and ideal memory presets),
                   the RTL twin's measured frame rate (RTL simulation), the worst layer of the
                   HLS model against the RTL twin's model, and the HLS resource estimate.

Every figure names the machine it was measured on.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from zynqflow.export.exporter import load_checkpoint_qnet
from zynqflow.model.data import augment, batches, load_dataset
from zynqflow.model.net import ZynqNet
from zynqflow.spec.golden import golden_logits
from zynqflow.spec.topology import get_config


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return dict(platform=platform.platform(), cpu=cpu, cores=os.cpu_count(),
                torch_threads=torch.get_num_threads(), python=platform.python_version(),
                load_average_1_5_15min=list(os.getloadavg()),
                torch=torch.__version__, numpy=np.__version__)


def _time_steps(net: ZynqNet, split, steps: int, batch_size: int, repeats: int) -> list[float]:
    """Seconds per training step, one median-able sample per repeat."""
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    gen = torch.Generator().manual_seed(0)
    samples = []
    for _ in range(repeats):
        it = batches(split, batch_size, shuffle=True, augment_fn=lambda x: augment(x, generator=gen), generator=gen)
        done, t0 = 0, None
        for i, (x, y) in enumerate(it):
            if i == 2:           # two warm-up steps per window
                t0 = time.perf_counter()
            loss = F.cross_entropy(net(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if i >= 2:
                done += 1
            if done == steps:
                break
        samples.append((time.perf_counter() - t0) / done)
    return samples


def bench_training(net_name: str, ckpt: str, data_dir: str | None, steps: int, repeats: int) -> dict:
    cfg = get_config(net_name)
    ds = load_dataset("fashion-mnist", data_dir, size=cfg.input_size)
    torch.manual_seed(0)
    net = ZynqNet(get_config(net_name, in_channels=ds.channels))
    batch_size = 128
    steps_per_epoch = -(-len(ds.train) // batch_size)
    float_s = _time_steps(net, ds.train, steps, batch_size, repeats)
    calib = torch.from_numpy(ds.train.images[:2048]).float() / 256
    net.calibrate([calib])
    net.set_mode("qat")
    qat_s = _time_steps(net, ds.train, steps, batch_size, repeats)
    f_epoch = statistics.median(float_s) * steps_per_epoch
    q_epoch = statistics.median(qat_s) * steps_per_epoch

    qnet = load_checkpoint_qnet(ckpt)
    frames, labels = ds.test.hwc(), ds.test.labels
    evals = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        logits = golden_logits(qnet, frames)
        evals.append(time.perf_counter() - t0)
    # the PyTorch exact integer path on the same frames
    from zynqflow.model.net import ZynqNet as _Z
    ck = torch.load(ckpt, map_location="cpu", weights_only=False)
    tnet = _Z.from_checkpoint(ck)
    from zynqflow.model.train import integer_logits
    t0 = time.perf_counter()
    tlogits = integer_logits(tnet, ds.test.images)
    torch_eval = time.perf_counter() - t0
    return dict(
        net=net_name, batch_size=batch_size, steps_per_epoch=steps_per_epoch,
        timed_steps_per_window=steps, windows=repeats,
        seconds_per_epoch_float=f_epoch, seconds_per_epoch_qat=q_epoch,
        qat_over_float=q_epoch / f_epoch,
        seconds_per_step_float=float_s, seconds_per_step_qat=qat_s,
        method="median over windows of timed training steps (after 2 warm-up steps), times steps per epoch",
        exact_integer_eval=dict(
            frames=len(frames), checkpoint=str(ckpt),
            golden_numpy_fps=len(frames) / statistics.median(evals),
            golden_numpy_seconds=evals,
            torch_integer_path_fps=len(frames) / torch_eval,
            top1=float((logits.argmax(1) == labels).mean()),
            golden_equals_torch_integer_path=bool(np.array_equal(logits, tlogits)),
        ),
        machine=machine(),
    )


ZYNQNET_EXPORT = Path("build/zynqnet/export")


def zynqnet_export() -> Path:
    """build/zynqnet/export with seeded random weights (as `make export NET=zynqnet` makes it)."""
    from zynqflow.export.exporter import main as export_main

    man = ZYNQNET_EXPORT / "manifest.json"
    if not man.is_file() or not json.loads(man.read_text()).get("weights_source", "").startswith("random:"):
        if export_main(["--net", "zynqnet", "--random-weights", "0", "--vectors", "2", "--out", str(ZYNQNET_EXPORT)]):
            raise RuntimeError("export of zynqnet failed")
    return ZYNQNET_EXPORT


SWEEP_PORT_BYTES = (8, 7, 6, 5, 4)     # per-port bandwidth, bytes per cycle (8: a 64-bit beat every cycle)
SWEEP_LATENCY = (32, 64, 128)          # read latency, cycles (write latency half of it)
CPU_SHARES = (0.0, 0.25)
STRESS_SEEDS = 20


def memory_points() -> list[tuple[str, dict, object]]:
    """(group, label fields, MemoryModel) of every run of memory.json."""
    from zynqflow.spec import engine as E

    pts = [("preset", dict(preset=n), E.memory_preset(n)) for n in ("ideal", "pynq-z2")]
    for bw in SWEEP_PORT_BYTES:
        for lat in SWEEP_LATENCY:
            if (bw, lat) != (8, 32):           # that one is pynq-z2 itself
                pts.append(("sweep", dict(preset="pynq-z2"), E.memory_preset(
                    "pynq-z2", port_bytes_per_cycle=float(bw), read_latency=lat, write_latency=lat // 2)))
    for c in CPU_SHARES:
        if c:
            pts.append(("cpu_share", dict(preset="pynq-z2"), E.memory_preset("pynq-z2", cpu_share=c)))
    pts += [("stress", dict(preset="stress"), E.memory_preset("stress", seed=s)) for s in range(1, STRESS_SEEDS + 1)]
    return pts


def bench_memory(out: Path, workers: int | None = None) -> dict:
    """The full 256x256 ZynqNet (seeded random weights) through the RTL harness behind the memory
    presets (``memory.json``): each preset; a sweep of per-port bandwidth x read latency on pynq-z2;
    the CPU's share of the DDR at 0 and 25 %; ``STRESS_SEEDS`` seeds of stress. One frame per run
    (the weight image streams every frame, so every frame takes the same cycles; the period is
    cycles_last + the restart), two back to back for the presets; every run checked against the
    golden model, a time-out counted as a hang naming the layer and the cycle; each run beside the
    cycle model under the same memory."""
    from dataclasses import asdict

    from zynqflow.export.exporter import load_plan
    from zynqflow.sim.harness import rtl_fast as rf
    from zynqflow.spec import engine as E
    from zynqflow.spec.cycles import RTL_TIMING, predict

    ex = zynqnet_export()
    plan = load_plan(ex)
    pts = memory_points()
    lib = rf.FastBuild(ex, opt=rf.run_opt(ex, 2 * len(pts))).build()
    spec = rf.SimSpec.for_export(lib, ex)
    x = np.random.default_rng(7).integers(0, 256, (2, 256, 256, 3), dtype=np.uint8)
    gold = rf.golden(ex, x)
    t0 = time.time()
    runs: list = [None] * len(pts)
    groups = [[k for k, p in enumerate(pts) if p[0] == "preset"], [k for k, p in enumerate(pts) if p[0] != "preset"]]
    for idx, n in zip(groups, (2, 1)):    # presets: two frames back to back; the rest: one
        mems = [pts[k][2] for k in idx]
        done = rf.run_memories(spec, x[:n], mems, workers=workers,
                               frame_budget=[rf.cycle_budget(ex, memory=m) for m in mems],
                               progress=lambda d, t: print(f"bench: memory runs {d}/{t} ({time.time() - t0:.0f} s)",
                                                           flush=True) if d == t or d % 4 == 0 else None)
        for k, r in zip(idx, done):
            runs[k] = r
    macs, units = plan.macs, plan.engine.n_pe * plan.engine.n_ci
    rows = []
    for (group, lab, m), r in zip(pts, runs):
        pred = predict(plan, memory=m)
        row = dict(group=group, **lab, port_bytes_per_cycle=m.port_bytes_per_cycle, read_latency=m.read_latency,
                   write_latency=m.write_latency, cpu_share=m.cpu_share, shared_bytes_per_cycle=m.shared_bytes_per_cycle,
                   seed=m.seed, hangs=int(r.hang is not None), protocol_failures=int(r.error is not None),
                   hang=None if r.hang is None else dict(layer=r.hang_layer, cycle=r.hang_cycle, message=r.hang),
                   model_fps_at_100mhz=round(pred["frame"]["fps_at_100mhz"], 3), model_cycles=pred["frame"]["cycles"])
        b = r.batch
        if b is None or not len(b):
            row.update(fps_at_100mhz=None, cycles_per_frame=None, utilization=None, stall_cycles=None,
                       mismatches_vs_golden=None, bound=[dict(name=l["name"], bound=l["bound"]) for l in pred["layers"]])
            rows.append(row)
            continue
        cyc = int(b.cycles_last[-1])
        period = float(np.diff(b.out_last)[-1]) if len(b) > 1 else float(cyc + RTL_TIMING.restart)
        layers = [dict(name=q["name"], bound=q["bound"], cycles_measured=ml["cycles"], stalls_measured=ml["stalls"],
                       cycles_model=q["cycles"], error_pct=round(100.0 * (q["cycles"] - ml["cycles"]) / ml["cycles"], 3))
                  for ml, q in zip(r.layers, pred["layers"])]
        ms = {k: sum(int(r.mem[p][k]) for p in rf.MAXI_PORTS) for k in
              ("r_budget_cycles", "w_budget_cycles", "refresh_cycles", "stall_cycles")}
        row.update(fps_at_100mhz=round(100e6 / period, 3), frame_period_cycles=period, cycles_per_frame=cyc,
                   utilization=round(macs / (units * cyc), 4), stall_cycles=int(b.regs["dram_stall_cycles"][-1]),
                   memory_stall_cycles=ms, shared_empty_cycles=int(r.mem["shared"]["empty_cycles"]),
                   mismatches_vs_golden=int((b.logits != gold[:len(b)]).any(axis=1).sum()),
                   model_error_pct=round(100.0 * (pred["frame"]["cycles"] - cyc) / cyc, 3),
                   worst_layer_error_pct=max(abs(l["error_pct"]) for l in layers), bound=layers,
                   sim_seconds=round(r.wall_s, 1))
        rows.append(row)
    head = next(r for r in rows if r["group"] == "preset" and r["preset"] == "pynq-z2")
    ideal = next(r for r in rows if r["group"] == "preset" and r["preset"] == "ideal")
    stress = [r for r in rows if r["group"] == "stress"]
    sfps = [r["fps_at_100mhz"] for r in stress if r["fps_at_100mhz"]]
    summary = dict(
        stress_seeds=len(stress), stress_hangs=sum(r["hangs"] for r in stress),
        stress_mismatches=sum(r["mismatches_vs_golden"] or 0 for r in stress),
        stress_protocol_failures=sum(r["protocol_failures"] for r in stress),
        stress_fps_at_100mhz=dict(median=float(np.median(sfps)) if sfps else None, min=min(sfps, default=None),
                                  max=max(sfps, default=None)),
        sweep=[dict(port_bytes_per_cycle=r["port_bytes_per_cycle"], read_latency=r["read_latency"],
                    fps_at_100mhz=r["fps_at_100mhz"], model_fps_at_100mhz=r["model_fps_at_100mhz"])
               for r in rows if r["group"] in ("sweep",) or (r["group"] == "preset" and r["preset"] == "pynq-z2")],
        cpu_share=[dict(cpu_share=r["cpu_share"], fps_at_100mhz=r["fps_at_100mhz"]) for r in rows
                   if r["group"] == "cpu_share" or (r["group"] == "preset" and r["preset"] == "pynq-z2")],
        ideal_fps_at_100mhz=ideal["fps_at_100mhz"])
    res = dict({k: head[k] for k in ("preset", "port_bytes_per_cycle", "read_latency", "cpu_share", "fps_at_100mhz",
                                     "utilization", "stall_cycles", "mismatches_vs_golden", "hangs", "bound")},
               label="fps at 100 MHz, RTL simulation (free-running Verilator harness); the top-level figures are "
                     "the pynq-z2 preset's, every run is in rows",
               network="zynqnet", input=[256, 256, 3], macs_per_frame=macs, mac_units=units,
               engine=asdict(plan.engine), export=str(ex),
               weights="seeded random (no ImageNet here): speed and bit-exactness figures, not accuracy",
               mismatches_total=sum(r["mismatches_vs_golden"] or 0 for r in rows),
               hangs_total=sum(r["hangs"] for r in rows), summary=summary, rows=rows,
               presets={n: asdict(E.memory_preset(n)) for n in ("ideal", "pynq-z2", "stress")},
               wall_seconds=round(time.time() - t0, 1), machine=machine())
    (out / "memory.json").write_text(json.dumps(res, indent=2) + "\n")
    return res


def bench_zynqnet(out: Path, frames: int = 3, memory_rows: list | None = None) -> dict:
    """The full ZynqNet through the RTL (frames back to back) behind the pynq-z2 memory, and the
    read-latency figures of the memory sweep (memory.json) when it ran."""
    from dataclasses import asdict

    from zynqflow.bench.rtl_bench import measure
    from zynqflow.export.exporter import load_plan

    ex = zynqnet_export()
    r = measure(ex, frames=frames, workers=1, out=Path("build/zynqnet/rtl_bench.json"), memory="pynq-z2")
    plan = load_plan(ex)
    keys = ("network", "memory_preset", "frames", "mismatches_vs_golden", "cycles_per_frame", "frame_period_cycles",
            "fps_at_100mhz", "fps_at_100mhz_label", "utilization", "macs_per_frame", "mac_units",
            "dram_bytes_per_frame", "dram_rd_bytes_per_frame", "dram_wr_bytes_per_frame", "dram_mb_per_s_at_100mhz",
            "dram_stall_cycles", "cycles_model", "layers", "projection_150mhz", "memory_model", "machine")
    z = {k: r.get(k) for k in keys}
    z.update(input=[256, 256, 3], weights="seeded random (no ImageNet here): speed and bit-exactness figures, not "
             "accuracy", export=str(ex), engine=asdict(plan.engine))
    z.update(engine_figures(plan, z["fps_at_100mhz"], z["macs_per_frame"]))
    if memory_rows:
        sweep = [dict(read_latency=m["read_latency"], write_latency=m["write_latency"],
                      cycles_per_frame=m["cycles_per_frame"], fps_at_100mhz=m["fps_at_100mhz"],
                      model_cycles=m["model_cycles"], bit_exact=m["mismatches_vs_golden"] == 0)
                 for m in memory_rows if m["port_bytes_per_cycle"] == 8 and m.get("preset") == "pynq-z2"
                 and m["cpu_share"] == 0 and m["group"] in ("preset", "sweep")]
        z["ddr_latency_sweep"] = dict(label="measured, RTL simulation, pynq-z2 preset (read latency in cycles at "
                                            "100 MHz; write latency half of it); from memory.json",
                                      rows=sorted(sweep, key=lambda w: w["read_latency"]))
    (out / "zynqnet.json").write_text(json.dumps(z, indent=2) + "\n")
    return z


def engine_figures(plan, fps: float | None, macs: int, resources: Path = Path("build/zynqnet/resources.json")) -> dict:
    """The engine beside its throughput: lanes (DSP48E1-packed and LUT), DSP, LUT, BRAM36 and the
    GOP/s per DSP48E1 and per thousand LUTs (2 operations a MAC). Resources from ``resources``
    (``make synth-estimate``: a Yosys estimate) when it is this export's, else the resource model;
    the block design's LUTs (an estimate, export.resources.block_design) beside them."""
    from dataclasses import asdict

    from zynqflow.export.resources import block_design, estimate

    e = plan.engine
    res, label = None, None
    if resources.is_file():
        y = json.loads(resources.read_text())
        if y.get("engine", {}).get("params") == asdict(plan.engine):
            res, label = y, "Yosys estimate (make synth-estimate), not a Vivado result"
    if res is None:
        res, label = estimate(plan), "modelled (export.resources)"
    bd = block_design(plan)
    gops = 2.0 * macs * fps / 1e9 if fps else None
    return dict(lanes=e.lanes, dsp_lanes=2 * e.dsp48e1, lut_lanes=e.lut_lanes, act_paths=plan.act_paths,
                dsp=res["dsp"], lut=res["lut"], ff=res["ff"], bram36=res["bram36"], resources_label=label,
                block_design_lut=bd["lut"], lut_with_block_design=res["lut"] + bd["lut"],
                lut_fill_xc7z020=round((res["lut"] + bd["lut"]) / 53200, 4),
                gops_at_100mhz=round(gops, 2) if gops else None,
                gops_per_dsp=round(gops / res["dsp"], 4) if gops and res["dsp"] else None,
                gops_per_klut=round(gops / (res["lut"] / 1000), 3) if gops else None,
                gops_label="RTL-simulated fps x the network's MACs x 2, at 100 MHz; resources as labelled")


HLS_NETS = ("zynqnet", "zynqnet-rgb", "zynqnet-mini")


def _random_export(net: str) -> Path:
    """build/<net>/export with seeded random weights when there is no export of ``net`` yet."""
    from zynqflow.export.exporter import main as export_main

    ex = Path(f"build/{net}/export")
    if not (ex / "manifest.json").is_file():
        if export_main(["--net", net, "--random-weights", "0", "--vectors", "2", "--out", str(ex)]):
            raise RuntimeError(f"export of {net} failed")
    return ex


def bench_hls(out: Path, measured: dict | None = None, rtl_frames: int = 4) -> dict:
    """The HLS engine beside the RTL twin, per network of HLS_NETS: the HLS cycle model's frame
    rate (modelled: spec.cycles_hls under the pynq-z2 preset, the RTL figure's, and ideal), the
    RTL twin's measured frame rate (RTL simulation: from ``measured`` {net: rtl_bench result} when
    the bench measured it already, else ``rtl_frames`` frames through the harness now), the RTL
    twin's model, the HLS model's worst layer against it, and the HLS resource estimate."""
    from zynqflow.bench.rtl_bench import measure
    from zynqflow.export.exporter import load_plan
    from zynqflow.export.resources import estimate
    from zynqflow.spec.cycles import predict
    from zynqflow.spec.cycles_hls import LABEL, hls_vs_rtl, predict_hls

    measured = measured or {}
    rows = {}
    for net in HLS_NETS:
        ex = zynqnet_export() if net == "zynqnet" else _random_export(net)
        plan = load_plan(ex)
        r = measured.get(net)
        if r is None:
            r = measure(ex, frames=rtl_frames, workers=1, out=Path(f"build/{net}/rtl_bench_hls_compare.json"))
        h = {m: predict_hls(plan, memory=m)["frame"] for m in ("pynq-z2", "ideal")}
        v = hls_vs_rtl(plan, memory="pynq-z2")
        res = estimate(plan, "hls")
        rows[net] = dict(
            export=str(ex), engine=f"{plan.engine.n_pe}x{plan.engine.n_ci}", dsp_pairs=plan.engine.dsp48e1,
            lut_lanes=plan.engine.lut_lanes, act_paths=plan.act_paths,
            hls_fps_at_100mhz_modelled=round(h["pynq-z2"]["fps_at_100mhz"], 2),
            hls_fps_at_100mhz_modelled_ideal_memory=round(h["ideal"]["fps_at_100mhz"], 2),
            hls_cycles_per_frame_modelled=h["pynq-z2"]["cycles"],
            rtl_fps_at_100mhz_measured=r.get("fps_at_100mhz"), rtl_measured_label=r.get("fps_at_100mhz_label"),
            rtl_measured_frames=r.get("frames"), rtl_measured_memory=r.get("memory_model"),
            rtl_fps_at_100mhz_model=round(predict(plan)["frame"]["fps_at_100mhz"], 2),
            hls_worst_layer_vs_rtl_model_pct=round(100 * v["worst_ratio"], 2),
            hls_vs_rtl_model_pct_by_layer={x["name"]: round(100 * (x["ratio"] - 1), 2) for x in v["layers"]},
            hls_resources=dict(dsp=res["dsp"], bram36=res["bram36"], lut=res["lut"], ff=res["ff"], model=res["model"]))
    d = dict(label=f"HLS: {LABEL}; RTL: measured in RTL simulation (free-running Verilator harness)", networks=rows,
             machine=machine())
    (out / "hls.json").write_text(json.dumps(d, indent=2) + "\n")
    return d


def bench_hls_exact(out: Path) -> dict:
    """The HLS engine's C simulation beyond the native fast path: one full 256x256 ZynqNet frame through
    the exact HLS types (what Vitis synthesizes: ap_int datapath, ap_uint counters, the guards' shift
    registers), against the golden model; and the pipeline-hazard C simulation (every store and
    release, or every read, of the core's loop D iterations late) for every D from 0 to twice the
    stated pipeline depth on the HLS test networks (export.fixtures.HLS_TEST_NETS: ZynqNet 64x64 with
    DDR tensors among them, on 16x16 and on 32x16 with both activation paths and LUT lanes); and one
    full frame in the exact types on the default engine's variants (one activation path, every lane
    pair on a DSP48E1). Writes hls_exact.json; every figure must be 0 mismatching frames."""
    from zynqflow.export import fixtures
    from zynqflow.sim.csim import runner as csim
    from zynqflow.spec import engine as E
    from zynqflow.spec.golden import golden_logits
    from zynqflow.spec.qnet import QNet

    ex = zynqnet_export()
    q = QNet.load_npz(ex / "integers.npz")
    frames = np.fromfile(ex / "vectors_in.bin", np.uint8).reshape((-1,) + q.input_shape)[:1]
    sim = csim.CSim(ex, native=False)
    t0 = time.perf_counter()
    got = sim.run(frames)
    secs = time.perf_counter() - t0
    want = golden_logits(q, frames)
    exact = dict(export=str(ex), frames=len(frames), mismatches_vs_golden=int(np.count_nonzero(~np.all(got == want,
                 axis=1))), seconds_per_frame=round(secs, 1), library=sim.lib_path.name,
                 label="C simulation in the exact HLS types (ap_int/ap_uint), lockstep; wall time under load")
    variants = {}
    for name, kw in (("act_paths_1", dict(act_paths=1)), ("all_dsp", dict(dsp_pairs=256))):
        d = fixtures.random_export("zynqnet", n_pe=32, n_ci=16, act_kb=192, vectors=1, **kw)
        qv = QNet.load_npz(d / "integers.npz")
        f = np.random.default_rng(256).integers(0, 256, (1,) + qv.input_shape, dtype=np.uint8)
        got_v = csim.CSim(d, native=False).run(f)
        variants[name] = dict(export=str(d), frames=1,
                              mismatches_vs_golden=int(np.count_nonzero(~np.all(got_v == golden_logits(qv, f), axis=1))))
    exact["variants"] = variants
    delays = list(range(0, 2 * E.HLS_CORE_DEPTH + 1))
    hazard = {}
    for name, make in fixtures.HLS_TEST_NETS.items():
        d = make()
        qn = QNet.load_npz(d / "integers.npz")
        f = np.random.default_rng(5).integers(0, 256, (2,) + qn.input_shape, dtype=np.uint8)
        res = csim.CSim(d).hazard_sweep(f, golden_logits(qn, f), delays)
        hazard[name] = dict(frames=len(f), mismatching=sum(n != 0 for r in res.values() for n in r.values()),
                            runs=res)
    r = dict(zynqnet_exact=exact, hazard_delays=delays, hazard_core_depth=E.HLS_CORE_DEPTH, hazard_guard=E.HLS_GUARD,
             hazard=hazard, machine=machine())
    (out / "hls_exact.json").write_text(json.dumps(r, indent=2) + "\n")
    return r


DSE_REFERENCE = Path("model/reference/dse/fashion-mnist")


def bench_dse(out: Path, frames: int = 2000) -> dict:
    """The co-design search's committed Fashion-MNIST result (``make dse`` + ``dse-train`` +
    ``dse publish``), measured again: its checkpoint exported for its engine and ``frames`` test
    images through the RTL harness (bit-exact against golden, fps at 100 MHz), beside the study's
    figures (trials, wall time, proxy rank correlation) and the reference zynqnet-mini."""
    from zynqflow.bench.rtl_bench import measure
    from zynqflow.export.exporter import main as export_main

    m = json.loads((DSE_REFERENCE / "metrics.json").read_text())
    front = json.loads((DSE_REFERENCE / "pareto.json").read_text())
    ex = Path("build/dse-reference/export")
    if export_main(["--ckpt", str(DSE_REFERENCE / "checkpoint.pt"), "--out", str(ex), "--n-pe", str(m["n_pe"]),
                    "--n-ci", str(m["n_ci"])]):
        raise RuntimeError("export of the searched design failed")
    r = measure(ex, frames=frames, data="fashion-mnist", out=Path("build/dse-reference/rtl_bench.json"))
    ref = m.get("reference") or {}
    d = dict(design=m["train_config"]["net"], study=m["study"], trial=m["trial"], engine=f"{m['n_pe']}x{m['n_ci']}",
             mac_units=m["mac_units"], fixed_top1=m["fixed_top1"], test_images=m["test_images"],
             fps_at_100mhz=r["fps_at_100mhz"], fps_label=r["fps_at_100mhz_label"],
             committed_fps_at_100mhz=m["fps_at_100mhz"], rtl_frames=r["frames"],
             rtl_mismatches_vs_golden=r["mismatches_vs_golden"], rtl_top1=r["top1"],
             reference=ref, fps_over_reference=r["fps_at_100mhz"] / ref["fps"] if ref else None,
             dominates_reference=m.get("dominates_reference"),
             study_trials=front.get("trials"), study_time=front.get("study_time"),
             proxy_rank_correlation=(front.get("promoted") or {}).get("proxy_rank_correlation"),
             machine=machine())
    (out / "dse.json").write_text(json.dumps(d, indent=2) + "\n")
    return d


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--net", default="zynqnet-mini")
    p.add_argument("--ckpt", required=True)
    p.add_argument("--data-dir", default=None)
    p.add_argument("--steps", type=int, default=40, help="timed training steps per window")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--out", default="build/bench")
    p.add_argument("--only", default="training,csim,bitexact,rtl,memory,zynqnet,dse,hls,hls_exact,synth",
                   help="comma list of parts to run (synth: the Yosys estimate of the zynqnet engine)")
    p.add_argument("--rtl-frames", type=int, default=10000, help="test images through the RTL simulation")
    a = p.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    parts = set(a.only.split(","))
    rows = []
    failed = False
    rtl_measured: dict = {}   # network -> RTL figures measured by this run (the HLS comparison reuses them)
    if "training" in parts:
        print("bench: training speed (float vs QAT) and exact-integer evaluation ...", flush=True)
        r = bench_training(a.net, a.ckpt, a.data_dir, a.steps, a.repeats)
        (out / "training.json").write_text(json.dumps(r, indent=2) + "\n")
        e = r["exact_integer_eval"]
        rows += [("training s/epoch, float", f"{r['seconds_per_epoch_float']:.1f}"),
                 ("training s/epoch, QAT", f"{r['seconds_per_epoch_qat']:.1f}"),
                 ("QAT / float", f"{r['qat_over_float']:.2f}"),
                 ("exact-integer eval, numpy golden (frames/s)", f"{e['golden_numpy_fps']:.0f}"),
                 ("exact-integer eval, torch (frames/s)", f"{e['torch_integer_path_fps']:.0f}"),
                 ("fixed top-1 (whole test set)", f"{e['top1']:.4f}")]
    if "csim" in parts:
        try:
            from zynqflow.bench import csim_eval as csim
        except ImportError as e:  # pragma: no cover
            print(f"bench: C-sim unavailable ({e})")
        else:
            export_dir = Path(f"build/{a.net}/export")
            print("bench: whole test set through the HLS C simulation ...", flush=True)
            rc = csim.main(["--export", str(export_dir), "--ckpt", a.ckpt, "--frames", "0",
                            "--out", str(out / "csim.json")] + (["--data-dir", a.data_dir] if a.data_dir else []))
            if (out / "csim.json").exists():
                c = json.loads((out / "csim.json").read_text())
                rows += [("C-sim frames", str(c.get("frames"))), ("C-sim top-1", f"{c.get('top1', 0):.4f}"),
                         ("C-sim mismatches vs golden", str(c.get("mismatches_vs_golden"))),
                         ("C-sim frames/s", f"{c.get('fps', 0):.0f}")]
            if rc:
                print("bench: C-sim reported mismatches", file=sys.stderr)
                return rc
    if "bitexact" in parts:
        try:
            from zynqflow.bench import hls4ml_compare
        except ImportError as e:  # pragma: no cover
            print(f"bench: hls4ml comparison unavailable ({e})")
        else:
            print("bench: hls4ml side by side ...", flush=True)
            hls4ml_compare.main(["--ckpt", a.ckpt, "--export", f"build/{a.net}/export",
                                 "--out", str(out / "bitexact.json")])
    if "rtl" in parts:
        from zynqflow.bench.rtl_bench import measure
        print(f"bench: {a.rtl_frames} test images through the RTL twin (free-running Verilator harness) ...",
              flush=True)
        r = measure(Path(f"build/{a.net}/export"), frames=a.rtl_frames, data="fashion-mnist",
                    data_dir=a.data_dir, out=out / "rtl_bench.json")
        rtl_measured[a.net] = r
        rows += [("RTL sim frames", str(r["frames"])), ("RTL sim top-1", f"{r['top1']:.4f}"),
                 ("RTL sim mismatches vs golden", str(r["mismatches_vs_golden"])),
                 ("RTL cycles/frame", f"{r['cycles_per_frame']['median']:.0f}"),
                 ("RTL utilization", f"{r['utilization']:.3f}"),
                 ("fps at 100 MHz, RTL simulation", f"{r['fps_at_100mhz']:.0f}"),
                 ("RTL sim wall s (M cycles/s, all cores)",
                  f"{r['wall_seconds']:.0f} ({r['sim_cycles_per_second']['total'] / 1e6:.2f})")]
        if r["mismatches_vs_golden"]:
            print(f"bench: RTL mismatches vs golden: {r['first_mismatch']['message']}", file=sys.stderr)
            return 1
    mem_rows = None
    if "memory" in parts:
        print(f"bench: the full 256x256 ZynqNet behind the memory presets: {len(memory_points())} runs (presets, "
              f"port bandwidth x latency, CPU share, {STRESS_SEEDS} stress seeds) ...", flush=True)
        mres = bench_memory(out)
        mem_rows = mres["rows"]
        sm = mres["summary"]
        cpu = {c["cpu_share"]: c["fps_at_100mhz"] for c in sm["cpu_share"]}
        grid = {(w["port_bytes_per_cycle"], w["read_latency"]): w["fps_at_100mhz"] for w in sm["sweep"]}
        fmt = lambda v: "hang" if v is None else f"{v:.1f}"  # noqa: E731
        rows += [("zynqnet, pynq-z2: fps at 100 MHz, RTL simulation (ideal memory)",
                  f"{fmt(mres['fps_at_100mhz'])} ({fmt(sm['ideal_fps_at_100mhz'])})"),
                 ("zynqnet, pynq-z2: layers not bound by compute (model)",
                  ", ".join(f"{l['name']} {l['bound']}" for l in mres["bound"] if l["bound"] != "compute") or "none"),
                 *[(f"zynqnet, pynq-z2, port {bw} B/cycle: fps at latency " + "/".join(map(str, SWEEP_LATENCY)),
                    " / ".join(fmt(grid.get((float(bw), lat))) for lat in SWEEP_LATENCY)) for bw in SWEEP_PORT_BYTES],
                 ("zynqnet, pynq-z2: fps with the CPU's share 0 / 25 %",
                  " / ".join(fmt(cpu.get(c)) for c in CPU_SHARES)),
                 (f"zynqnet, stress x {sm['stress_seeds']} seeds: hangs, mismatches, fps median (min..max)",
                  f"{sm['stress_hangs']}, {sm['stress_mismatches']}, {fmt(sm['stress_fps_at_100mhz']['median'])} "
                  f"({fmt(sm['stress_fps_at_100mhz']['min'])}..{fmt(sm['stress_fps_at_100mhz']['max'])})")]
        if mres["mismatches_total"] or mres["hangs_total"]:
            print(f"bench: memory presets: {mres['mismatches_total']} mismatching frames, {mres['hangs_total']} hangs "
                  f"(build/bench/memory.json rows)", file=sys.stderr)
            failed = True
    if "zynqnet" in parts:
        print("bench: the full 256x256 ZynqNet through the RTL twin (random weights, pynq-z2 memory) ...", flush=True)
        z = bench_zynqnet(out, memory_rows=mem_rows)
        rtl_measured["zynqnet"] = z
        rows += [("zynqnet 256x256: cycles/frame (RTL sim, pynq-z2)", f"{z['cycles_per_frame']['median']:.0f}"),
                 ("zynqnet: fps at 100 MHz, RTL simulation (pynq-z2)", f"{z['fps_at_100mhz']:.1f}"),
                 ("zynqnet: MAC utilization", f"{z['utilization']:.3f}"),
                 ("zynqnet engine: lanes (DSP / LUT), activation paths",
                  f"{z['lanes']} ({z['dsp_lanes']} / {z['lut_lanes']}), {z['act_paths']}"),
                 (f"zynqnet engine: DSP / LUT / BRAM36 ({z['resources_label'].split(' (')[0]})",
                  f"{z['dsp']} / {z['lut']} / {z['bram36']:g} (+{z['block_design_lut']} LUT block design, estimate: "
                  f"{100 * z['lut_fill_xc7z020']:.0f} % of the xc7z020)"),
                 ("zynqnet: GOP/s per DSP, per thousand LUTs (at 100 MHz)",
                  f"{z['gops_per_dsp']:.3f}, {z['gops_per_klut']:.2f}"),
                 ("zynqnet: DRAM MB/frame (MB/s at 100 MHz)",
                  f"{z['dram_bytes_per_frame'] / 1e6:.2f} ({z['dram_mb_per_s_at_100mhz']:.0f})"),
                 ("zynqnet: worst layer vs cycle model", f"{z['cycles_model']['worst_layer_error_pct']:.2f} %"),
                 ("zynqnet: 150 MHz (cycle model)", f"{z['projection_150mhz']['fps']:.1f} fps")]
        if z["mismatches_vs_golden"]:
            return 1
    if "dse" in parts and (DSE_REFERENCE / "metrics.json").is_file():
        print("bench: the co-design search's Fashion-MNIST design through the RTL twin ...", flush=True)
        d = bench_dse(out)
        ref = d["reference"]
        rows += [("DSE design: fixed top-1 (10 000 test images)", f"{d['fixed_top1']:.4f} ({d['engine']} engine)"),
                 ("DSE design: fps at 100 MHz, RTL simulation", f"{d['fps_at_100mhz']:.0f} "
                  f"({d['fps_over_reference']:.2f}x zynqnet-mini's {ref['fps']:.0f} at {ref['fixed_top1']:.4f})"),
                 ("DSE design: RTL mismatches vs golden", f"{d['rtl_mismatches_vs_golden']} of {d['rtl_frames']}")]
        if d["rtl_mismatches_vs_golden"]:
            return 1
    if "synth" in parts:
        from zynqflow.bench.synth_estimate import estimate
        print("bench: Yosys estimate of the zynqnet engine (several minutes) ...", flush=True)
        res = estimate(zynqnet_export(), out=out / "resources.json")
        t = res["timing"]
        rows += [("zynqnet engine: DSP / BRAM36 / LUT / FF (Yosys)",
                  f"{res['dsp']} / {res['bram36']:.0f} / {res['lut']} / {res['ff']}"),
                 ("zynqnet engine: worst path, estimate with routing (not Vivado)",
                  f"{t['worst_ns']:.2f} ns ({t['worst_logic_ns']:.2f} logic), limit {t['limit_ns']} ns")]
        if not (res["mac_array_intact"] and t["within_limit"]):
            print(f"bench: the zynqnet engine's synthesis estimate fails: {t['worst_ns']:.2f} ns estimated "
                  f"({t['worst_start']} -> {t['worst_end']}), DSP48E1 {res['dsp']} of {res['dsp_expected']}",
                  file=sys.stderr)
            failed = True
    if "hls" in parts:
        print("bench: the HLS engine's modelled frame rate beside the RTL twin's measured one ...", flush=True)
        hb = bench_hls(out, rtl_measured)
        for net, h in hb["networks"].items():
            rows.append((f"{net}: fps at 100 MHz, HLS modelled (pynq-z2) / RTL measured",
                         f"{h['hls_fps_at_100mhz_modelled']:.1f} / {h['rtl_fps_at_100mhz_measured']:.1f}"))
    if "hls_exact" in parts:
        print("bench: a full ZynqNet frame in the exact HLS types; the pipeline-hazard C simulation ...", flush=True)
        hx = bench_hls_exact(out)
        ze = hx["zynqnet_exact"]
        bad = {n: h["mismatching"] for n, h in hx["hazard"].items() if h["mismatching"]}
        rows += [("zynqnet, exact HLS types: mismatching frames (s a frame)",
                  f"{ze['mismatches_vs_golden']} of {ze['frames']} ({ze['seconds_per_frame']:.0f})"),
                 (f"pipeline hazards, D = 0..{hx['hazard_delays'][-1]}, both modes: runs with wrong logits",
                  ", ".join(f"{n} {c}" for n, c in bad.items()) or f"none ({len(hx['hazard'])} networks)")]
        if ze["mismatches_vs_golden"] or bad:
            print("bench: the HLS engine's exact types or hazard runs mismatched (build/bench/hls_exact.json)",
                  file=sys.stderr)
            failed = True
    width = max((len(k) for k, _ in rows), default=0)
    print(f"\nbench results ({machine()['cpu']}, {os.cpu_count()} cores) -> {out}/")
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
