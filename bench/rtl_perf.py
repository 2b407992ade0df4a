"""Throughput of the RTL engine, measured in simulation.

    python -m zynqflow.bench.rtl_perf build/zynqnet-mini/export --frames 8 [--data fashion-mnist]

Runs N frames back to back (auto-restart) through ``rtl/`` (or ``RTL=hls``)
under Verilator and writes ``build/<net>/rtl_perf.json``:

``cycles_per_frame``   cycles_last: first input beat accepted .. last output beat accepted
``frame_period_cycles``  cycles between consecutive frames' last output beats (back to back)
``macs_per_frame``     multiply-accumulates of the network (sum of out^2 * k^2 * cin * cout)
``mac_units``          N_PE * N_CI
``utilization``        macs_per_frame / (mac_units * cycles_per_frame)
``layer_cycles``       per layer (RTL profiling registers), with the MAC-array formula
``fps_at_100mhz``      100e6 / frame_period_cycles ("fps at 100 MHz, RTL simulation")
``sim_cycles_per_second``  simulator speed (wall clock, excluding build and start-up)
``mismatches_vs_golden``   frames whose logits differ from zynqflow.spec.golden
``top1``               with --data: accuracy of the RTL's logits on the frames' labels
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from zynqflow.sim.rtl_sim import RtlUnavailable, SimBuild, net_name, rtl_kind
from zynqflow.spec.paths import REPO


def network_macs(man: dict) -> int:
    return sum(l["out_size"] ** 2 * l["k"] ** 2 * l["cin"] * l["cout"] for l in man["layers"])


def measure(export_dir: Path, frames: int = 8, data: str | None = None, data_dir: str | None = None,
            rtl: str | None = None, out: Path | None = None, seed: int = 1) -> dict:
    export_dir = Path(export_dir).resolve()
    man = json.loads((export_dir / "manifest.json").read_text())
    net = net_name(export_dir)
    build = SimBuild(export_dir, rtl)
    t0 = time.time()
    build.build()
    build_s = time.time() - t0
    env = {"ZQ_FRAMES": frames, "ZQ_MODE": "auto", "ZQ_TIMEOUT_MS": max(100, frames * 2)}
    labels = None
    if data:
        from zynqflow.model.data import load_dataset
        test = load_dataset(data, data_dir, man["input"]["shape"][0]).test
        fr = test.hwc()[:frames]
        labels = test.labels[:frames]
        src = build.build_dir / "runs" / "perf" / "frames.npz"
        src.parent.mkdir(parents=True, exist_ok=True)
        np.savez(src, frames=fr, labels=labels)
        env["ZQ_SOURCE"] = str(src)
    else:
        env["ZQ_SOURCE"] = "vectors" if man.get("test_vectors") else f"random:{seed}"
    r = build.run("run_frames", {k: str(v) for k, v in env.items()}, run_name="perf")
    e = man["engine"]
    units = e["n_pe"] * e["n_ci"]
    macs = network_macs(man)
    cyc = int(r["cycles_last"])
    t = np.array(r["t_done_ns"], float)
    period = float(np.median(np.diff(t)) / 10.0) if len(t) > 1 else float(cyc)
    res = dict(
        network=net, export=str(export_dir), rtl=build.kind, frames=r["frames"],
        cycles_per_frame=cyc, frame_period_cycles=period,
        cycles_mac_array=man["cycles_mac_array"], macs_per_frame=macs, mac_units=units,
        utilization=macs / (units * cyc), utilization_mac_array_model=macs / (units * man["cycles_mac_array"]),
        layer_cycles=[dict(name=l["name"], cycles=c, mac_cycles=l["hw_cycles"])
                      for l, c in zip(man["layers"], r.get("layer_cycles") or [None] * len(man["layers"]))],
        fps_at_100mhz=1e8 / period, label="fps at 100 MHz, RTL simulation",
        latency_us_at_100mhz=cyc / 100.0,
        sim_cycles_per_second=r["sim_cycles"] / r["wall_s"] if r["wall_s"] else None,
        sim_wall_s=r["wall_s"], build_s=round(build_s, 1),
        mismatches_vs_golden=len(r["mismatches"]),
    )
    if labels is not None:
        res["top1"] = r.get("top1")
        res["data"] = data
    out = Path(out) if out else REPO / "build" / net / "rtl_perf.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2) + "\n")
    res["_out"] = str(out)
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("export", help="export directory")
    ap.add_argument("--frames", type=int, default=8)
    ap.add_argument("--data", default=None, help="take frames and labels from this dataset's test split")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--rtl", default=None, help="rtl (default) or hls")
    ap.add_argument("--out", default=None, help="default build/<net>/rtl_perf.json")
    a = ap.parse_args(argv)
    try:
        r = measure(Path(a.export), a.frames, a.data, a.data_dir, rtl_kind(a.rtl), Path(a.out) if a.out else None)
    except (RtlUnavailable, AssertionError, OSError, ValueError) as e:
        print(f"rtl_perf: {e}", file=sys.stderr)
        return 2
    print(f"{r['network']}: {r['cycles_per_frame']} cycles/frame, utilization {r['utilization']:.1%}, "
          f"{r['fps_at_100mhz']:.0f} fps at 100 MHz (RTL simulation), {r['mismatches_vs_golden']} mismatches "
          f"-> {r['_out']}")
    return 0 if r["mismatches_vs_golden"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
