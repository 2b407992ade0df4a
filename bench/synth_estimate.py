"""Resource and timing estimate of the RTL twin with Yosys (``synth_xilinx -family xc7``).

    python -m zynqflow.bench.synth_estimate build/zynqnet-mini/export [--out build/zynqnet-mini/resources.json]

Synthesizes ``rtl/`` with the export's ``rtl_params.svh``, writes the netlist
(``write_json``) and from it ``resources.json`` and, beside it, ``timing.json``:

* ``lut`` (logic LUTs + LUT RAM), ``ff``, ``bram36`` (RAMB36 + RAMB18/2), ``dsp``
  (DSP48E1), ``fits_xc7z020``; ``lanes``, ``lut_lanes``, ``act_paths`` of the engine;
* ``block_design``, ``lut_with_block_design``, ``lut_fill_with_block_design``,
  ``fits_xc7z020_80pct_lut``: what board/pynq_z2.tcl adds around the engine (an
  estimate, item by item with its source: export.resources.block_design) and the
  part's LUT fill with it (at most 80 %);
* ``dsp_expected``, ``mac_array_intact``: the export's DSP48E1 lane pairs (its
  other lanes are LUT multipliers), and whether the netlist has them (a
  synthesis that removed part of the datapath is reported, and the command fails);
* ``dsp_unregistered``: DSP48E1 cells without both their M and P pipeline
  registers (MREG=1 and PREG=1), read from the netlist; the engine's are all
  registered, so this must be 0;
* ``timing.json`` (:mod:`zynqflow.bench.sta`): the worst 20 register-to-register
  paths of the netlist with the 7-series -1 data-sheet cell delays and a
  fanout-based routing estimate, each with its start and end, logic levels,
  carry chains, the fanout of each net, the logic delay, the estimate and the
  slack at 100 and 150 MHz; ``resources.json``'s ``timing`` summarizes it
  (``worst_ns``, ``within_clock``: the estimate fits the 10 ns period,
  ``within_limit``: it is at most :data:`~zynqflow.bench.sta.LIMIT_NS`). The
  command fails when a path is over the limit.

It is a Yosys estimate, not a Vivado result: no placement, no routing (the net
delays are estimated from the fanout), Yosys's own memory and DSP mapping.
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

from zynqflow.sim.rtl.runner import RTL_DIR, RTL_HEADERS, RTL_SOURCES, net_name
from zynqflow.spec.paths import REPO

XC7Z020 = dict(lut=53200, ff=106400, bram36=140, dsp=220)
LUT_FILL_MAX = 0.80     # engine + block design: at most 80 % of the LUTs (room for Vivado's placement)
CLOCK_NS = 10.0
NETLIST = "netlist.json"   # Yosys write_json after synth_xilinx, in the work folder
SCRIPT_REV = 2             # the Yosys script of run_yosys (2: write_json, no sta/ltp); part of synth_key


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
    # LUTs per LUT-RAM primitive (7-series)
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


def synth_key(export_dir: Path) -> str:
    """What a synthesis result depends on: the RTL sources and headers, the export's RTL parameters,
    the Yosys script's revision and the Yosys version (a result with the same key can be reused)."""
    import hashlib

    h = hashlib.sha1(f"script {SCRIPT_REV}".encode())
    for s in RTL_SOURCES + RTL_HEADERS:
        h.update(s.encode() + b"\0" + (RTL_DIR / s).read_bytes())
    h.update((export_dir / "rtl_params.svh").read_bytes())
    ver = subprocess.run(["yosys", "-V"], capture_output=True, text=True).stdout if shutil.which("yosys") else ""
    h.update(ver.encode())
    return h.hexdigest()[:16]


def run_yosys(export_dir: Path, work: Path, timeout: int = 7200) -> tuple[dict, str]:
    if shutil.which("yosys") is None:
        raise RuntimeError("yosys not found (Debian: apt-get install yosys)")
    if not (export_dir / "rtl_params.svh").is_file():
        raise RuntimeError(f"{export_dir}: no rtl_params.svh (re-run the exporter: make export)")
    work.mkdir(parents=True, exist_ok=True)
    src = " ".join(str(RTL_DIR / s) for s in RTL_SOURCES)
    script = work / "synth.ys"
    script.write_text("\n".join([
        f"read_verilog -defer -sv -I{export_dir} -I{RTL_DIR} {src}",
        "hierarchy -check -top zq_top",
        "synth_xilinx -family xc7 -top zq_top -flatten",
        f"tee -o {work / 'stat.txt'} stat",
        # the netlist: cells with their parameters (DSP48E1 MREG, PREG, ...) and nets, for the timing
        f"write_json {work / NETLIST}",
    ]) + "\n")
    log = work / "yosys.log"
    t0 = time.time()
    p = subprocess.run(["yosys", "-q", "-l", str(log), "-s", str(script)], capture_output=True, text=True,
                       timeout=timeout)
    if p.returncode:
        raise RuntimeError(f"yosys failed ({p.returncode}): {p.stderr[-2000:]}; log {log}")
    return dict(seconds=round(time.time() - t0, 1), cells=parse_stat((work / "stat.txt").read_text())), log.read_text()


def cached_yosys(export_dir: Path, work: Path, timeout: int = 7200) -> dict:
    """:func:`run_yosys`, unless ``work`` holds the result of a run with the same :func:`synth_key`
    (``cached``: True; ``seconds`` are the run's)."""
    key, stamp = synth_key(export_dir), work / "synth_key.json"
    done = json.loads(stamp.read_text()) if stamp.is_file() else {}
    if done.get("key") == key and (work / NETLIST).is_file() and (work / "stat.txt").is_file():
        return dict(seconds=done["seconds"], cells=parse_stat((work / "stat.txt").read_text()), cached=True)
    stamp.unlink(missing_ok=True)
    info, _ = run_yosys(export_dir, work, timeout)
    stamp.write_text(json.dumps(dict(key=key, seconds=info["seconds"])) + "\n")
    return dict(info, cached=False)


def dsp_registers(netlist: dict) -> list[dict[str, int]]:
    """Per DSP48E1 cell of a Yosys JSON netlist: its pipeline-register parameters (register stages;
    absent = the primitive's default, 1)."""
    from zynqflow.bench.sta import Netlist, _int

    nl = Netlist.load(netlist)
    return [{name: _int(c["parameters"].get(name, 1)) for name in ("AREG", "BREG", "MREG", "PREG", "ADREG", "DREG")}
            for c in nl.cells if c["type"] == "DSP48E1"]


def timing_summary(t: dict, timing_file: Path | None = None) -> dict:
    """resources.json's ``timing``: the worst path of a :func:`zynqflow.bench.sta.report`."""
    w = t["paths"][0] if t["paths"] else {}
    return dict(label=t["label"], clock_ns=CLOCK_NS, limit_ns=t["limit_ns"], worst_ns=t["worst_ns"],
                worst_logic_ns=w.get("logic_ns", 0.0), worst_start=w.get("start"), worst_end=w.get("end"),
                worst_logic_levels=w.get("logic_levels", 0), slack_ns=t["slack_ns"],
                within_clock=t["worst_ns"] <= CLOCK_NS, within_limit=t["within_limit"],
                file=str(timing_file) if timing_file else None)


def estimate(export_dir: Path, out: Path | None = None, timeout: int = 7200, work: Path | None = None) -> dict:
    """Synthesize the export's engine; write ``resources.json`` (``out``) and ``timing.json`` beside it."""
    from zynqflow.bench import sta

    export_dir = Path(export_dir).resolve()
    net = net_name(export_dir)
    man = json.loads((export_dir / "manifest.json").read_text())
    # Yosys work files beside the export (one folder per export: two exports of a network do not share it)
    work = Path(work) if work else export_dir.parent / f"{export_dir.name}-synth_yosys"
    info = cached_yosys(export_dir, work, timeout)
    res = summarize(info["cells"])
    netlist = json.loads((work / NETLIST).read_text())
    dsps = dsp_registers(netlist)
    dsp_nom = sum(1 for d in dsps if not d["MREG"])
    dsp_nop = sum(1 for d in dsps if not d["PREG"])
    out = Path(out) if out else REPO / "build" / net / "resources.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    timing = sta.report(netlist)
    timing.update(network=net, engine=man["engine"], netlist=str(work / NETLIST))
    timing_file = out.parent / "timing.json"
    timing_file.write_text(json.dumps(timing, indent=1) + "\n")
    res.update(
        label="Yosys estimate (synth_xilinx -family xc7), not a Vivado result", tool="yosys",
        yosys_seconds=info["seconds"], yosys_cached=info["cached"], network=net, engine=man["engine"],
        export=str(export_dir),
        device="xc7z020", device_limits=XC7Z020, cells=info["cells"],
        dsp_expected=man["engine"].get("dsp48e1", man["engine"]["n_pe"] * man["engine"]["n_ci"] // 2),
        lanes=man["engine"]["n_pe"] * man["engine"]["n_ci"], lut_lanes=man["engine"].get("lut_lanes", 0),
        act_paths=man["engine"].get("act_paths", 1),
        dsp_unregistered=sum(1 for d in dsps if not (d["MREG"] and d["PREG"])), dsp_without_mreg=dsp_nom,
        dsp_without_preg=dsp_nop, timing=timing_summary(timing, timing_file),
    )
    # the MAC array is two lanes per DSP48E1 (the export's DSP lane pairs): fewer DSPs means synthesis
    # removed part of the datapath (e.g. a construct Yosys reads differently from the simulators)
    res["mac_array_intact"] = res["dsp"] >= res["dsp_expected"]
    # what the block design adds around the engine (an estimate with its sources), and the part's fill
    from zynqflow.export.exporter import load_plan
    from zynqflow.export.resources import block_design

    bd = block_design(load_plan(export_dir))
    res["block_design"] = bd
    res["lut_with_block_design"] = res["lut"] + bd["lut"]
    res["lut_fill_with_block_design"] = round(res["lut_with_block_design"] / XC7Z020["lut"], 4)
    res["fits_xc7z020_80pct_lut"] = res["fits_xc7z020"] and res["lut_fill_with_block_design"] <= LUT_FILL_MAX
    out.write_text(json.dumps(res, indent=2) + "\n")
    return res


def main(argv=None) -> int:
    from zynqflow.bench.sta import summary_line

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("export", help="export directory")
    ap.add_argument("--out", default=None, help="resources.json path (default build/<net>/resources.json; "
                                                "timing.json beside it)")
    ap.add_argument("--timeout", type=int, default=7200, help="seconds before yosys is stopped")
    a = ap.parse_args(argv)
    try:
        r = estimate(Path(a.export), Path(a.out) if a.out else None, a.timeout)
    except (RuntimeError, subprocess.TimeoutExpired, OSError, ValueError) as e:
        print(f"synth_estimate: {e}", file=sys.stderr)
        return 2
    t = r["timing"]
    print(json.dumps({k: r[k] for k in ("lut", "ff", "bram36", "dsp", "dsp_unregistered", "fits_xc7z020",
                                          "lut_with_block_design", "lut_fill_with_block_design",
                                          "fits_xc7z020_80pct_lut", "yosys_seconds")}))
    if not r["mac_array_intact"]:
        print(f"synth_estimate: only {r['dsp']} DSP48E1 for a MAC array of {r['dsp_expected']}: Yosys removed part "
              "of the datapath", file=sys.stderr)
        return 1
    paths = json.loads(Path(t["file"]).read_text())["paths"]
    print(f"worst register-to-register paths (estimate with routing, not Vivado) -> {t['file']}:")
    for p in paths[:5]:
        print("  " + summary_line(p))
    if not t["within_limit"]:
        print(f"synth_estimate: the worst path is {t['worst_ns']:.2f} ns estimated, over the {t['limit_ns']} ns "
              f"limit: {t['worst_start']} -> {t['worst_end']}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
