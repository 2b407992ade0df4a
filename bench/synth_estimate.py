"""Resource estimate of the RTL engine with Yosys (``synth_xilinx -family xc7``).

    python -m zynqflow.bench.synth_estimate build/zynqnet-mini/export [--out build/zynqnet-mini/resources.json]

Synthesizes ``rtl/`` with the export's parameters and ROM images and writes
``resources.json``: ``lut`` (logic LUTs + LUT RAM), ``ff``, ``bram36`` (RAMB36
+ RAMB18/2), ``dsp`` (DSP48E1) and ``fits_xc7z020``. It is a Yosys estimate,
not a Vivado result: no placement, Yosys' own memory and DSP mapping (Vivado
usually needs fewer LUTs), no timing.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from zynqflow.sim.rtl_params import write_svh
from zynqflow.sim.rtl_sim import RTL_DIR, RTL_SOURCES, net_name
from zynqflow.spec.paths import REPO

XC7Z020 = dict(lut=53200, ff=106400, bram36=140, dsp=220)


def parse_stat(text: str) -> dict[str, int]:
    """Cell counts of the last (top-level, whole design) ``stat`` block."""
    block = text[text.rfind("=== design hierarchy ==="):] if "=== design hierarchy ===" in text else \
        text[text.rfind("Number of cells:"):]
    cells: dict[str, int] = {}
    for m in re.finditer(r"^\s+(\$?[A-Za-z_][\w$]*)\s+(\d+)\s*$", block, re.M):
        cells[m.group(1)] = cells.get(m.group(1), 0) + int(m.group(2))
    return cells


def summarize(cells: dict[str, int]) -> dict:
    lut_logic = sum(v for k, v in cells.items() if re.fullmatch(r"LUT[1-6]", k))
    lutram_cells = {k: v for k, v in cells.items() if k.startswith(("RAM32", "RAM64", "RAM128", "RAM256", "SRL"))}
    # LUTs per LUT-RAM primitive (7-series): RAM32M/RAM64M = 4, RAM32X1D/RAM64X1D = 2, RAM128X1D = 4, RAM256X1S = 4
    per = {"RAM32M": 4, "RAM64M": 4, "RAM32M16": 8, "RAM64M8": 8, "RAM32X1D": 2, "RAM64X1D": 2, "RAM128X1D": 4,
           "RAM256X1S": 4, "RAM32X1S": 1, "RAM64X1S": 1, "RAM128X1S": 2, "SRL16E": 1, "SRLC32E": 1}
    lut_mem = sum(v * per.get(k, 1) for k, v in lutram_cells.items())
    ff = sum(v for k, v in cells.items() if re.fullmatch(r"FD[A-Z]*", k))
    ramb36 = sum(v for k, v in cells.items() if k.startswith("RAMB36"))
    ramb18 = sum(v for k, v in cells.items() if k.startswith("RAMB18"))
    dsp = sum(v for k, v in cells.items() if k.startswith("DSP48"))
    carry = sum(v for k, v in cells.items() if k.startswith("CARRY"))
    res = dict(lut=lut_logic + lut_mem, lut_logic=lut_logic, lut_as_memory=lut_mem, ff=ff,
               bram36=ramb36 + ramb18 / 2, ramb36=ramb36, ramb18=ramb18, dsp=dsp, carry4=carry)
    res["fits_xc7z020"] = all(res[k] <= XC7Z020[k] for k in XC7Z020)
    res["utilization_xc7z020"] = {k: round(res[k] / XC7Z020[k], 4) for k in XC7Z020}
    return res


def run_yosys(export_dir: Path, work: Path, timeout: int = 3600, flatten: bool = True) -> tuple[dict, str]:
    if shutil.which("yosys") is None:
        raise RuntimeError("yosys not found")
    work.mkdir(parents=True, exist_ok=True)
    write_svh(export_dir, work / "rtl_params.svh")
    src = " ".join(str(RTL_DIR / s) for s in RTL_SOURCES)
    script = work / "synth.ys"
    script.write_text("\n".join([
        f"read_verilog -defer -sv -I{work} {src}",
        "hierarchy -check -top zq_top",
        f"synth_xilinx -family xc7 -top zq_top{' -flatten' if flatten else ''}",
        "stat",
        f"write_verilog -noattr {work / 'zq_top_synth.v'}",
    ]) + "\n")
    log = work / "yosys.log"
    t0 = time.time()
    p = subprocess.run(["yosys", "-q", "-l", str(log), "-s", str(script)], capture_output=True, text=True,
                       timeout=timeout)
    if p.returncode:
        raise RuntimeError(f"yosys failed ({p.returncode}): {p.stderr[-2000:]}; log {log}")
    text = log.read_text()
    return dict(seconds=round(time.time() - t0, 1), cells=parse_stat(text)), text


def estimate(export_dir: Path, out: Path | None = None, timeout: int = 3600) -> dict:
    export_dir = Path(export_dir)
    net = net_name(export_dir)
    man = json.loads((export_dir / "manifest.json").read_text())
    work = REPO / "build" / net / "synth_yosys"
    info, _ = run_yosys(export_dir, work, timeout)
    res = summarize(info["cells"])
    res.update(label="Yosys estimate (synth_xilinx -family xc7), not a Vivado result", tool="yosys",
               yosys_seconds=info["seconds"], network=net, engine=man["engine"], export=str(export_dir),
               device="xc7z020", device_limits=XC7Z020, cells=info["cells"])
    out = Path(out) if out else REPO / "build" / net / "resources.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2) + "\n")
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("export", help="export directory")
    ap.add_argument("--out", default=None, help="resources.json path (default build/<net>/resources.json)")
    ap.add_argument("--timeout", type=int, default=3600, help="seconds before yosys is stopped")
    a = ap.parse_args(argv)
    try:
        r = estimate(Path(a.export), Path(a.out) if a.out else None, a.timeout)
    except (RuntimeError, subprocess.TimeoutExpired, OSError, ValueError) as e:
        print(f"synth_estimate: {e}", file=sys.stderr)
        return 2
    print(json.dumps({k: r[k] for k in ("lut", "ff", "bram36", "dsp", "fits_xc7z020", "yosys_seconds")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
