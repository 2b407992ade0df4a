"""Per-layer cycles of the RTL engine against the cycle model, measured in simulation.

    python -m zynqflow.bench.rtl_perf build/zynqnet/export [--frames 2] [--rtl rtl|hls] [--memory pynq-z2]

``rtl`` (default): a few frames back to back through the free-running Verilator
harness (:mod:`zynqflow.bench.rtl_bench`) behind a memory preset (``pynq-z2`` by
default), checked against the golden model, written to ``build/<net>/rtl_perf.json``
with every key of ``rtl_bench.json``: ``cycles_per_frame``, ``macs_per_frame``,
``mac_units``, ``fps_at_100mhz`` ("fps at 100 MHz, RTL simulation"),
``utilization``, ``sim_cycles_per_second``, ``dram_bytes_per_frame``,
``dram_stall_cycles``, ``memory_preset``, the cycle model's prediction under the
same memory (``cycles_model``) and ``layers``: per layer the measured
``layer_cycles`` register against the model's cycles, their error and what
bounds the layer (compute, ddr read, ddr write, weights, input stream, ddr shared).

``hls``: the Vitis-exported Verilog under cocotb (needs ``make hls`` first):
logits and cycles as the testbench measures them; the HLS engine has no
per-layer counters.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from zynqflow.spec.paths import REPO


def network_macs(man: dict) -> int:
    return sum(l["out_size"] ** 2 * l["k"] ** 2 * l["cin"] * l["cout"] for l in man["layers"])


def measure(export_dir: Path, frames: int = 2, data: str | None = None, data_dir: str | None = None,
            rtl: str | None = None, out: Path | None = None, seed: int = 1, workers: int = 1,
            memory: str = "pynq-z2") -> dict:
    export_dir = Path(export_dir).resolve()
    man = json.loads((export_dir / "manifest.json").read_text())
    out = Path(out) if out else REPO / "build" / man["network"] / "rtl_perf.json"
    if (rtl or "rtl") == "hls":
        return _measure_hls(export_dir, frames, out, seed)
    from zynqflow.bench.rtl_bench import measure as bench_measure

    return bench_measure(export_dir, frames=frames, data=data, data_dir=data_dir, workers=workers, seed=seed,
                         out=out, memory=memory)


def _measure_hls(export_dir: Path, frames: int, out: Path, seed: int) -> dict:
    from zynqflow.sim.rtl.runner import SimBuild

    man = json.loads((export_dir / "manifest.json").read_text())
    build = SimBuild(export_dir, "hls")
    r = build.run("run_frames", {"ZQ_FRAMES": str(frames), "ZQ_MODE": "auto", "ZQ_SOURCE": f"random:{seed}",
                                 "ZQ_TIMEOUT_MS": str(max(100, frames * 50))}, run_name="perf")
    res = dict(network=man["network"], export=str(export_dir), rtl="hls", frames=r["frames"],
               mismatches_vs_golden=len(r["mismatches"]), sim_cycles=r["sim_cycles"],
               cycles_model=man["cycles_model"],
               note="the HLS engine has no cycle counters: sim_cycles is the testbench's count of the whole run")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2) + "\n")
    res["_out"] = str(out)
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("export", help="export directory")
    ap.add_argument("--frames", type=int, default=2)
    ap.add_argument("--data", default=None, help="take frames from this dataset's test split")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--rtl", default=None, help="rtl (default) or hls")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--memory", default="pynq-z2", help="memory preset (ideal, pynq-z2, stress)")
    ap.add_argument("--out", default=None, help="default build/<net>/rtl_perf.json")
    a = ap.parse_args(argv)
    try:
        r = measure(Path(a.export), a.frames, a.data, a.data_dir, a.rtl, Path(a.out) if a.out else None,
                    workers=a.workers, memory=a.memory)
    except Exception as e:  # noqa: BLE001 - one line for the user
        print(f"rtl_perf: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    if r.get("rtl") == "hls":
        print(f"{r['network']} (HLS RTL): {r['mismatches_vs_golden']} mismatches -> {r['_out']}")
        return 0 if r["mismatches_vs_golden"] == 0 else 1
    print(f"{r['network']} (memory {r['memory_preset']}): {r['cycles_per_frame']['median']:.0f} cycles/frame, "
          f"{r['macs_per_frame']} MACs on {r['mac_units']} MAC units, utilization {r['utilization']:.3f}, "
          f"{r['fps_at_100mhz']:.1f} fps at 100 MHz (RTL simulation); model {r['cycles_model']['cycles']} cycles, "
          f"worst layer {r['cycles_model'].get('worst_layer_error_pct', float('nan')):.2f} %; "
          f"{r['mismatches_vs_golden']} mismatches -> {r['_out']}")
    for l in r.get("layers", []):
        print(f"  {l['name']:12s} {l['cycles_measured']:9d} measured {l['cycles_model']:9d} model "
              f"{l['error_pct']:+7.2f} %  {l['bound_model']}")
    return 0 if r["mismatches_vs_golden"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
