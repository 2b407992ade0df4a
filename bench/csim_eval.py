"""``make csim``: the HLS engine in C simulation on a test set, against the golden model.

    python -m zynqflow.bench.csim_eval --export build/zynqnet-mini/export \\
        --ckpt build/zynqnet-mini/fashion-mnist/checkpoint.pt --frames 256

builds and runs the C testbench (``hls/tb/tb_zq_top.cpp``) on the export's
vectors, then runs ``--frames`` test-set frames through the C simulation
(:class:`zynqflow.sim.csim.runner.CSim`) and the numpy golden model and writes
``csim.json`` (frames, top1, mismatches_vs_golden, golden_top1, seconds, fps,
network_id, testbench_rc, the registers after the run, and ``hls_model``: the HLS engine's
frame time on the FPGA as ``zynqflow.spec.cycles_hls`` models it under the pynq-z2 memory
preset, an estimate beside the RTL twin's model; ``fps`` is the C simulation's speed on this
host, in the scheduler mode ``csim_mode``). The C simulation reads
the export's weight image (``weights.bin``) from its simulated DDR. Exit status 1
on any mismatch, 2 on a usage or build error.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from zynqflow.sim.csim.runner import REG_NAMES, CSim, CSimError, _export_dir, run_testbench


def _checkpoint_info(ckpt: Path) -> dict:
    import torch

    ck = torch.load(ckpt, map_location="cpu", weights_only=False)
    return ck.get("train_config", {}) if isinstance(ck, dict) else {}


def _hls_model(export_dir: Path) -> dict | None:
    """The HLS engine's modelled frame time for this export (zynqflow.spec.cycles_hls; an estimate
    of Vitis's schedule, not a measurement), beside the RTL twin's model; None for an export
    without the engine parameters."""
    from zynqflow.export.exporter import load_plan
    from zynqflow.export.plan import ExportError
    from zynqflow.spec.cycles import predict
    from zynqflow.spec.cycles_hls import predict_hls

    try:
        plan = load_plan(export_dir)
    except ExportError:
        return None
    h, first = predict_hls(plan, memory="pynq-z2"), predict_hls(plan, memory="pynq-z2", cached=False)
    return dict(label=h["label"], memory="pynq-z2", cycles=h["frame"]["cycles"],
                first_frame_cycles=first["frame"]["cycles"], fps_at_100mhz=round(h["frame"]["fps_at_100mhz"], 2),
                rtl_model_fps_at_100mhz=round(predict(plan)["frame"]["fps_at_100mhz"], 2))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m zynqflow.bench.csim_eval", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--export", required=True, help="export directory (net_params.h, vectors, integers.npz)")
    p.add_argument("--ckpt", default=None, help="checkpoint.pt the export came from (dataset, default --out, "
                                                 "staleness check)")
    p.add_argument("--frames", type=int, default=256, help="test-set frames to simulate (default 256; 0 = the whole test set)")
    p.add_argument("--data", default=None, help="dataset (default: the checkpoint's / the export's)")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--out", default=None, help="csim.json (default: beside the checkpoint, else "
                                                "<export>/../<dataset>/csim.json)")
    p.add_argument("--skip-tb", action="store_true", help="do not build and run the C testbench")
    p.add_argument("--mode", default="lockstep", choices=("lockstep", "threads", "sequential"),
                   help="the C simulation's scheduler (default lockstep; see zynqflow.sim.csim.runner)")
    a = p.parse_args(argv)

    from zynqflow.model.data import DatasetError, dataset_tag, load_for_manifest
    from zynqflow.spec.qnet import QNet
    from zynqflow.spec.golden import golden_logits

    try:
        export_dir = _export_dir(a.export)
        man = json.loads((export_dir / "manifest.json").read_text())
        train_cfg, ckpt_ok = {}, None
        if a.ckpt:
            ckpt = Path(a.ckpt)
            if not ckpt.is_file():
                raise CSimError(f"{ckpt}: no such checkpoint")
            from zynqflow.export.exporter import load_checkpoint_qnet
            train_cfg = _checkpoint_info(ckpt)
            ckpt_ok = load_checkpoint_qnet(ckpt).network_id() == man["network_id_int"]
            if not ckpt_ok:
                print(f"WARNING: {ckpt} does not match the export {export_dir} (network ID "
                      f"{man['network_id']}): the export is stale, re-run the exporter", file=sys.stderr)
        data = a.data or train_cfg.get("data") or (man.get("dataset_source") or {}).get("path") or man.get("dataset")
        if not data:
            raise CSimError("no dataset: pass --data")
        data_dir = a.data_dir or train_cfg.get("data_dir")
        out = Path(a.out) if a.out else (Path(a.ckpt).parent / "csim.json" if a.ckpt
                                         else export_dir.parent / (man.get("dataset") or dataset_tag(data)) /
                                         "csim.json")

        tb_rc = None
        if not a.skip_tb:
            print(f"C testbench on {export_dir}/vectors_*.bin:")
            tb_rc = run_testbench(export_dir)

        qnet = QNet.load_npz(export_dir / "integers.npz")
        ds = load_for_manifest(man, data, data_dir)
        test = ds.test.subset(a.frames if a.frames > 0 else None)
        frames, labels = test.hwc(), test.labels
        if frames.shape[1:] != qnet.input_shape:
            raise CSimError(f"dataset {data} gives {frames.shape[1:]} frames, {qnet.name} takes "
                            f"{qnet.input_shape}")
        sim = CSim(export_dir, mode=a.mode)
        t0 = time.perf_counter()
        logits = sim.run(frames)
        seconds = time.perf_counter() - t0
        regs = sim.registers()
        gold = golden_logits(qnet, frames)
        hls_model = _hls_model(export_dir)
    except (CSimError, DatasetError, ValueError, OSError) as e:
        print(f"csim failed: {e}", file=sys.stderr)
        return 2

    bad = ~np.all(logits == gold, axis=1)
    n = len(frames)
    res = dict(
        frames=n,
        top1=float(np.mean(logits.argmax(1) == labels)) if n else 0.0,
        mismatches_vs_golden=int(bad.sum()),
        golden_top1=float(np.mean(gold.argmax(1) == labels)) if n else 0.0,
        seconds=round(seconds, 4),
        fps=round(n / seconds, 2) if seconds > 0 else 0.0,
        network_id=man["network_id"],
        network=man["network"],
        dataset=man.get("dataset") or dataset_tag(data),
        mismatched_logits=int((logits != gold).sum()),
        testbench_rc=tb_rc,
        csim_mode=a.mode,
        ckpt_matches_export=ckpt_ok,
        registers={k: regs[k] for k in REG_NAMES},
        hls_model=hls_model,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2) + "\n")
    rnd = str(man.get("weights_source", "")).startswith("random:")
    rnd = ", seeded random weights: top-1 means nothing" if rnd else ""
    print(f"C sim {man['network']} ({man['network_id']}{rnd}): "
          f"{n} frames, top-1 {res['top1']:.4f} "
          f"(golden {res['golden_top1']:.4f}), {res['mismatches_vs_golden']} mismatching frames, "
          f"{res['fps']} frames/s in C simulation on this host -> {out}")
    if hls_model:
        print(f"HLS engine on the FPGA, {hls_model['label']}: {hls_model['fps_at_100mhz']:.1f} fps at 100 MHz "
              f"({hls_model['cycles']} cycles per frame; RTL twin's model {hls_model['rtl_model_fps_at_100mhz']:.1f})")
    if res["mismatches_vs_golden"] or (tb_rc not in (None, 0)):
        if tb_rc not in (None, 0):
            print(f"C testbench FAILED (exit {tb_rc})", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
