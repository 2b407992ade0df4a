"""Resource and timing estimate of the RTL twin with Yosys (``synth_xilinx -family xc7``).

    python -m zynqflow.bench.synth_estimate build/zynqnet-mini/export [--out build/zynqnet-mini/resources.json]

Synthesizes ``rtl/`` with the export's ``rtl_params.svh`` and writes
``resources.json``:

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
* ``timing``: the longest register-to-register path by Yosys ``sta`` over the
  7-series cell delays of the ``specify`` blocks in Yosys's ``cells_sim.v``
  (Project X-Ray's Artix-7 data; the library is read again with ``-specify``
  after synthesis so that CARRY4 chains have their arcs; MUXF7/MUXF8 have none
  and count as zero): a **logic-only estimate**, with no routing delay, given
  with its start and end points; and the deepest path in cells from ``ltp``
  (combinational cells between flip-flops), as a second, delay-free view.

It is a Yosys estimate, not a Vivado result: no placement, no routing, Yosys's
own memory and DSP mapping.
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

from zynqflow.sim.rtl.runner import RTL_DIR, RTL_SOURCES, net_name
from zynqflow.spec.paths import REPO

XC7Z020 = dict(lut=53200, ff=106400, bram36=140, dsp=220)
LUT_FILL_MAX = 0.80     # engine + block design: at most 80 % of the LUTs (room for Vivado's placement)
CLOCK_NS = 10.0


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


def parse_sta(text: str) -> dict:
    """The critical path Yosys ``sta`` prints: arrival (ps), the cells on it, start and end."""
    m = re.search(r"Latest arrival time in '[^']*' is (\d+):", text)
    if not m:
        return dict(available=False)
    path = re.findall(r"^\s+(\d+)\s+(\S+)\s+\((\S+)\)", text[m.end():], re.M)
    cells = [dict(arrival_ps=int(a), net=n, cell=c) for a, n, c in path]
    # sta prints the path from its end point back to the clock
    return dict(available=True, logic_delay_ns=int(m.group(1)) / 1000.0, path=cells[::-1][:80],
                start=next((c["net"] for c in reversed(cells) if "->" in c["cell"] and not c["cell"].startswith(("IBUF", "BUFG"))), None),
                end=f"{cells[0]['net']} ({cells[0]['cell']})" if cells else None)


def parse_ltp(text: str) -> dict:
    m = re.search(r"Longest topological path in \S+ \(length=(\d+)\):", text)
    if not m:
        return dict(available=False)
    nodes = re.findall(r"^\s+\d+: (.+)$", text[m.end():], re.M)
    return dict(available=True, depth_cells=int(m.group(1)), nodes=nodes[:60])


def synth_key(export_dir: Path) -> str:
    """What a synthesis result depends on: the RTL sources, the export's RTL parameters and the
    Yosys version (a result with the same key can be reused)."""
    import hashlib

    h = hashlib.sha1()
    for s in RTL_SOURCES:
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
        # the DSP48E1 cells and their parameters (MREG, PREG, ...)
        f"tee -q -o {work / 'dsp_cells.txt'} dump t:DSP48E1",
        # the cell library again, with its specify blocks: timing arcs for CARRY4 too
        "read_verilog -lib -specify -overwrite +/xilinx/cells_sim.v",
        f"tee -o {work / 'sta.txt'} sta",
        "select -set nf t:* t:FD* %d t:SRL* %d t:RAM* %d t:DSP48E1 %d w:* %u",
        f"tee -o {work / 'ltp.txt'} ltp @nf",
    ]) + "\n")
    log = work / "yosys.log"
    t0 = time.time()
    p = subprocess.run(["yosys", "-q", "-l", str(log), "-s", str(script)], capture_output=True, text=True,
                       timeout=timeout)
    if p.returncode:
        raise RuntimeError(f"yosys failed ({p.returncode}): {p.stderr[-2000:]}; log {log}")
    return dict(seconds=round(time.time() - t0, 1), cells=parse_stat((work / "stat.txt").read_text())), log.read_text()


def dsp_registers(text: str) -> list[dict[str, int]]:
    """Per DSP48E1 cell of a ``dump``: its pipeline-register parameters (register stages; absent =
    the primitive's default, 1)."""
    cells = []
    for block in re.split(r"^\s*cell ", text, flags=re.M)[1:]:
        if not block.startswith("\\DSP48E1") and not block.startswith("DSP48E1"):
            continue
        regs = {}
        for name in ("AREG", "BREG", "MREG", "PREG", "ADREG", "DREG"):
            m = re.search(rf"parameter \\{name} (\d+)(?:'([01]+))?", block)
            regs[name] = (int(m.group(2), 2) if m.group(2) else int(m.group(1))) if m else 1
        cells.append(regs)
    return cells


def estimate(export_dir: Path, out: Path | None = None, timeout: int = 7200, work: Path | None = None) -> dict:
    export_dir = Path(export_dir).resolve()
    net = net_name(export_dir)
    man = json.loads((export_dir / "manifest.json").read_text())
    # Yosys work files beside the export (one folder per export: two exports of a network do not share it)
    work = Path(work) if work else export_dir.parent / f"{export_dir.name}-synth_yosys"
    info, _ = run_yosys(export_dir, work, timeout)
    res = summarize(info["cells"])
    dsps = dsp_registers((work / "dsp_cells.txt").read_text())
    dsp_nom = sum(1 for d in dsps if not d["MREG"])
    dsp_nop = sum(1 for d in dsps if not d["PREG"])
    sta = parse_sta((work / "sta.txt").read_text())
    ltp = parse_ltp((work / "ltp.txt").read_text())
    res.update(
        label="Yosys estimate (synth_xilinx -family xc7), not a Vivado result", tool="yosys",
        yosys_seconds=info["seconds"], network=net, engine=man["engine"], export=str(export_dir),
        device="xc7z020", device_limits=XC7Z020, cells=info["cells"],
        dsp_expected=man["engine"].get("dsp48e1", man["engine"]["n_pe"] * man["engine"]["n_ci"] // 2),
        lanes=man["engine"]["n_pe"] * man["engine"]["n_ci"], lut_lanes=man["engine"].get("lut_lanes", 0),
        act_paths=man["engine"].get("act_paths", 1),
        dsp_unregistered=sum(1 for d in dsps if not (d["MREG"] and d["PREG"])), dsp_without_mreg=dsp_nom,
        dsp_without_preg=dsp_nop,
        timing=dict(label="logic-only estimate: Yosys sta over the xc7 cell delays of cells_sim.v (Project X-Ray), "
                          "no routing; MUXF7/MUXF8 count as zero; ltp depth counts cells (carries included)",
                    clock_ns=CLOCK_NS, sta=sta, ltp=ltp,
                    within_clock=bool(sta.get("available") and sta["logic_delay_ns"] < CLOCK_NS)),
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
    out = Path(out) if out else REPO / "build" / net / "resources.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2) + "\n")
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("export", help="export directory")
    ap.add_argument("--out", default=None, help="resources.json path (default build/<net>/resources.json)")
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
    if t["sta"].get("available"):
        print(f"longest logic path (Yosys sta, logic only): {t['sta']['logic_delay_ns']:.2f} ns, "
              f"{t['sta']['start']} -> {t['sta']['end']}; deepest path {t['ltp'].get('depth_cells')} cells")
    return 0


if __name__ == "__main__":
    sys.exit(main())
