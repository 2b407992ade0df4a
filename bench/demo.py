"""``make demo``: the flow end to end on a laptop-sized budget.

1. a short QAT training of zynqnet-mini on Fashion-MNIST (a subset, 1 float
   + 1 QAT epoch) with its fixed-point evaluation;
2. the per-layer characterization (report.json, roofline.png);
3. the committed reference checkpoint exported to integers, HLS header and
   ROM images, then float, fixed-point golden and HLS C-sim accuracy side by
   side on the same test images;
4. a few test images through the RTL twin (cocotb + Verilator): cycles per
   frame, MAC utilization, simulated fps at 100 MHz;
5. frames streamed through the RTL simulation by the PYNQ host driver (the
   code that runs on the board), with accuracy and simulated fps.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

NET = "zynqnet-mini"
DATASET = "fashion-mnist"
REFERENCE = Path(f"model/reference/{NET}/{DATASET}/checkpoint.pt")


def step(n: int, title: str) -> None:
    print(f"\n=== {n}. {title} " + "=" * max(0, 60 - len(title)), flush=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--train-images", type=int, default=8192)
    p.add_argument("--frames", type=int, default=256, help="test images through C-sim")
    p.add_argument("--eval-images", type=int, default=2000, help="test images for float/golden accuracy")
    p.add_argument("--rtl-frames", type=int, default=4, help="test images through the RTL twin")
    p.add_argument("--stream-frames", type=int, default=16, help="test images streamed by the host driver")
    a = p.parse_args(argv)

    from zynqflow.export.exporter import export, load_checkpoint_qnet
    from zynqflow.model.data import load_dataset
    from zynqflow.model.net import ZynqNet
    from zynqflow.model.report import format_table, write_report
    from zynqflow.model.train import TrainConfig, float_accuracy, run
    from zynqflow.spec.golden import golden_logits
    from zynqflow.spec.topology import get_config

    t_start = time.time()
    step(1, f"short QAT training of {NET} on {DATASET} ({a.train_images} images, 1+1 epochs)")
    m = run(TrainConfig(net=NET, data=DATASET, epochs=1, qat_epochs=1, limit_train=a.train_images,
                        limit_test=a.eval_images, out=f"build/demo/{NET}/{DATASET}", resume=False))
    print(f"short run: float top-1 {m['float_top1']:.4f}, fixed-point (exact integer) top-1 {m['fixed_top1']:.4f} "
          f"on {m['test_images']} test images")

    step(2, f"characterization of {NET}")
    rep = write_report(get_config(NET), Path(f"build/{NET}"))
    print(format_table(rep))

    step(3, "reference checkpoint: export, golden model, HLS C-sim")
    if not REFERENCE.is_file():
        print(f"{REFERENCE} missing: run `make train` first", file=sys.stderr)
        return 1
    ds = load_dataset(DATASET, None, size=32)
    qnet = load_checkpoint_qnet(REFERENCE)
    export_dir = Path(f"build/{NET}/export")
    man = export(qnet, export_dir, ds.test.subset(16).hwc())
    print(f"exported {man['network']} ID {man['network_id']} -> {export_dir}/ "
          f"({', '.join(sorted(man['files'].values()))})")
    n = a.eval_images
    test = ds.test.subset(n)
    ck = torch.load(REFERENCE, map_location="cpu", weights_only=False)
    fnet = ZynqNet.from_checkpoint(ck)
    fnet.set_mode("float")
    float_top1 = float_accuracy(fnet, test)
    gold = golden_logits(qnet, test.hwc())
    gold_top1 = float((gold.argmax(1) == test.labels).mean())
    rows = [("float (BN folded)", n, float_top1, "-"), ("fixed point, golden", n, gold_top1, "-")]
    try:
        from zynqflow.sim.csim import CSim
        k = min(a.frames, n)
        t0 = time.time()
        cs = CSim(export_dir).run(test.hwc()[:k])
        secs = time.time() - t0
        mism = int((cs != gold[:k]).any(1).sum())
        rows.append(("fixed point, HLS C-sim", k, float((cs.argmax(1) == test.labels[:k]).mean()),
                     f"{mism} mismatching frames vs golden, {k / secs:.0f} frames/s incl. the g++ build"))
    except Exception as e:  # noqa: BLE001 - the demo reports and goes on
        rows.append(("fixed point, HLS C-sim", 0, float("nan"), f"unavailable: {e}"))
    print(f"\n{'model':<24} {'images':>6}  {'top-1':>7}  notes")
    for name, k, acc, note in rows:
        print(f"{name:<24} {k:>6}  {acc:>7.4f}  {note}")
    ref_metrics = json.loads((REFERENCE.parent / "metrics.json").read_text())
    print(f"\nreference on all 10 000 test images: float {ref_metrics['float_top1']:.4f}, "
          f"fixed {ref_metrics['fixed_top1']:.4f} (model/reference/{NET}/{DATASET}/metrics.json)")
    print(f"engine model: {man['cycles_mac_array']} MAC-array cycles/frame at N_PE={man['engine']['n_pe']} "
          f"N_CI={man['engine']['n_ci']} -> {1e8 / man['cycles_mac_array']:.0f} frames/s at 100 MHz "
          "(cycle model, not a measurement)")

    step(4, f"RTL twin (cocotb + Verilator), {a.rtl_frames} test images")
    from zynqflow.bench.rtl_perf import measure
    os.environ.setdefault("COCOTB_LOG_LEVEL", "WARNING")  # keep the demo's output readable
    perf = measure(export_dir, frames=a.rtl_frames, data=DATASET)
    print(f"cycles/frame {perf['cycles_per_frame']}, MAC units {perf['mac_units']}, utilization "
          f"{perf['utilization']:.3f}, {perf['fps_at_100mhz']:.0f} fps at 100 MHz (RTL simulation), "
          f"mismatches vs golden {perf['mismatches_vs_golden']} -> build/{NET}/rtl_perf.json")

    step(5, f"host driver streaming {a.stream_frames} test images through the RTL simulation")
    from zynqflow.host import Accelerator
    k = a.stream_frames
    with Accelerator(export_dir, backend="rtl") as acc:
        res = acc.stream(test.hwc()[:k])
    same = bool(np.array_equal(res.logits, gold[:k]))
    fps = res.info.get("fps_at_100MHz_from_cycles_last")
    print(f"{len(res)} results in order, logits {'identical to' if same else 'DIFFERENT from'} golden, "
          f"top-1 {float((res.labels == test.labels[:k]).mean()):.4f}, "
          f"{fps:.0f} fps at 100 MHz (RTL simulation, from cycles_last)")
    print(f"\ndemo done in {time.time() - t_start:.0f} s")
    if not same or perf["mismatches_vs_golden"]:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
