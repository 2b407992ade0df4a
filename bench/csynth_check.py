"""``make hls``: read the csynth report Vitis HLS wrote and check it against the engine's expectations.

    python -m zynqflow.bench.csynth_check build/<net>/hls            # or .../syn/report, or a csynth.xml
    python -m zynqflow.bench.csynth_check <dir> --json build/<net>/hls/csynth_check.json

``run_hls.tcl`` runs it right after ``csynth_design`` when ``$ZQ_CSYNTH_CHECK`` names it (``make hls``
does), so a bad schedule stops the flow before the long co-simulation.

What it reads. ``csynth_design`` writes ``<solution>/syn/report/csynth.xml`` (the XML beside the
Synthesis Summary that UG1399 describes: per module and loop its latency, iteration latency,
interval, trip count, pipelining, and the issues found). Its layout in Vitis HLS 2023.2:

    profile/UserAssignments/{TopModelName, TargetClockPeriod, ClockUncertainty}
    profile/PerformanceEstimates/{SummaryOfTimingAnalysis/EstimatedClockPeriod, SummaryOfLoopLatency}
    profile/ModuleInformation/Module/{Name, PerformanceEstimates/{SummaryOfLoopLatency/<LOOP>/
        {Name, TripCount, Latency, IterationLatency, PipelineII, PipelineDepth, PipelineType, <LOOP>...},
        SummaryOfViolations/SummaryOfLoopViolations/<LOOP>/{Name, IssueType, ViolationType, SourceLocation}}}

(a pipelined loop is its own module, ``<function>_Pipeline_<LABEL>``, holding the loop ``<LABEL>``; nested
loops nest; numbers may read ``undef``). Older releases write one ``<module>_csynth.xml`` per module with
``profile/PerformanceEstimates/SummaryOfLoopLatency/<LOOP>`` the same way; both are read.

What it checks (:data:`EXPECTED`, stated in hls/README.md): the core's loop ``CORE`` must be there,
pipelined at II=1, with a depth within what the guards allow (spec ``HLS_GUARD`` = 2 x
``HLS_CORE_DEPTH`` + 1: a pipeline of depth up to 2 x ``HLS_CORE_DEPTH``, every delay the
pipeline-hazard C simulation checks); otherwise the check fails naming the loop. A depth above the
stated ``HLS_CORE_DEPTH`` but within the guards is a warning (the cycle model's ``depth_core``: a
cycle per layer per stage). The other loops' II against their expected values, and the estimated
clock against the target, are warnings (``--strict``: errors).
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass
from pathlib import Path

from zynqflow.spec import engine as E


@dataclass(frozen=True)
class LoopExpect:
    """What a loop of the engine should synthesize to: ``ii`` (the largest acceptable; None: any),
    ``depth_max`` (None: any), ``required`` (an error when the report lacks it), ``doc``."""

    ii: int | None
    depth_max: int | None = None
    required: bool = False
    doc: str = ""


CORE_DEPTH_ALLOWED = 2 * E.HLS_CORE_DEPTH   # the guards (HLS_GUARD iterations) cover a depth up to this

EXPECTED: dict[str, LoopExpect] = {
    "CORE": LoopExpect(1, CORE_DEPTH_ALLOWED, True, "the core: a MAC step, a weight beat and a ring unit a cycle"),
    "HEADER": LoopExpect(1, None, False, "the weight image's header beats"),
    "WLOAD": LoopExpect(1, None, False, "the weight reader: a beat a cycle"),
    "RAW": LoopExpect(1, None, False, "the stem: raw input beats"),
    "SCAN": LoopExpect(1, None, False, "the stem: a column a cycle"),
    "STEM_WRITE": LoopExpect(1, None, False, "the stem: a unit a cycle from the row buffer"),
    "REST": LoopExpect(1, None, False, "the rest of a short frame"),
    "DRAIN": LoopExpect(1, None, False, "the beats after a long frame"),
    "LOGITS": LoopExpect(1, None, False, "the logits out of the GAP sums"),
    "LOGITS_OUT": LoopExpect(1, None, False, "the output stream"),
    "ERROR_FRAMES": LoopExpect(1, None, False, "error frames"),
    "FILL": LoopExpect(E.AXI_BURST_BEATS, None, False, "DDR ring fill: a burst of BL <= 16 beats an iteration"),
    "DDR_WRITE": LoopExpect(E.AXI_BURST_BEATS, None, False, "DDR writer: a burst of BL <= 16 beats an iteration"),
}


@dataclass
class Loop:
    module: str
    name: str
    ii: int | None
    depth: int | None
    trip_count: int | None
    latency: int | None
    pipelined: bool
    issue: str = ""          # IssueType / ViolationType of SummaryOfLoopViolations, when not "-"
    source: str = ""


def _num(text: str | None) -> int | None:
    if text is None:
        return None
    t = text.strip()
    try:
        return int(t)
    except ValueError:
        try:
            return int(float(t))
        except ValueError:
            return None      # "undef", "?", ranges


def _base_name(tag: str) -> str:
    """A loop's label from its element (Vitis numbers repeated ones ``NAME.2``)."""
    return tag.split(".")[0]


_LOOP_FIELDS = {"Name", "Slack", "TripCount", "Latency", "AbsoluteTimeLatency", "IterationLatency", "PipelineII",
                "PipelineDepth", "PipelineType", "InstanceList", "unit"}


def _violations(perf: ET.Element | None) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    if perf is None:
        return out
    sv = perf.find("SummaryOfViolations/SummaryOfLoopViolations")
    if sv is None:
        return out

    def walk(el: ET.Element) -> None:
        for child in el:
            if child.tag in _LOOP_FIELDS or child.tag in ("IssueType", "ViolationType", "SourceLocation"):
                continue
            kinds = [k for k in (child.findtext("IssueType"), child.findtext("ViolationType"))
                     if k and k.strip() != "-"]
            out[child.findtext("Name") or child.tag] = (", ".join(k.strip() for k in kinds),
                                                        (child.findtext("SourceLocation") or "").strip())
            walk(child)
    walk(sv)
    return out


def _loops_of(module: str, perf: ET.Element | None) -> list[Loop]:
    """The loops of one PerformanceEstimates element (nested loops included)."""
    if perf is None:
        return []
    sol = perf.find("SummaryOfLoopLatency")
    if sol is None:
        return []
    viol = _violations(perf)
    out: list[Loop] = []

    def walk(el: ET.Element) -> None:
        for child in el:
            if child.tag in _LOOP_FIELDS:
                continue
            name = child.findtext("Name") or child.tag
            ii = _num(child.findtext("PipelineII"))
            depth = _num(child.findtext("PipelineDepth"))
            if depth is None:
                depth = _num(child.findtext("IterationLatency"))
            ptype = (child.findtext("PipelineType") or "").strip().lower()
            pipelined = ii is not None and ptype != "no"
            issue, src = viol.get(name, ("", ""))
            out.append(Loop(module, name, ii, depth, _num(child.findtext("TripCount")), _num(child.findtext("Latency")),
                            pipelined, issue, src))
            walk(child)
    walk(sol)
    return out


def report_files(path: Path) -> list[Path]:
    """The csynth XML files under ``path``: a csynth.xml, a report directory, or a `make hls` output
    directory (``zq_hls/solution1/syn/report``)."""
    path = Path(path)
    if path.is_file():
        return [path]
    for d in (path, path / "syn" / "report", path / "solution1" / "syn" / "report",
              path / "zq_hls" / "solution1" / "syn" / "report"):
        if d.is_dir():
            files = sorted(d.glob("*csynth.xml"))
            if files:
                return files
    return []


def parse(path: Path) -> dict:
    """Every loop of the csynth report(s) at ``path``, the top's clock figures; raises ``FileNotFoundError``
    (no report) or ``ValueError`` (not a csynth report) naming the file."""
    files = report_files(path)
    if not files:
        raise FileNotFoundError(f"{path}: no csynth.xml (run csynth_design: make hls, or hls.sh ... csynth)")
    loops: list[Loop] = []
    seen: set[tuple[str, str]] = set()
    clock = dict(target_ns=None, uncertainty_ns=None, estimated_ns=None, top=None)
    for f in files:
        try:
            root = ET.parse(f).getroot()
        except ET.ParseError as e:
            raise ValueError(f"{f}: not XML ({e})") from e
        if root.tag != "profile":
            raise ValueError(f"{f}: not a csynth report (root <{root.tag}>, expected <profile>)")
        ua = root.find("UserAssignments")
        top = (ua.findtext("TopModelName") if ua is not None else None) or f.name.replace("_csynth.xml", "")
        if f.name == "csynth.xml" or clock["top"] is None:
            if ua is not None:
                clock.update(target_ns=_float(ua.findtext("TargetClockPeriod")),
                             uncertainty_ns=_float(ua.findtext("ClockUncertainty")), top=top)
            clock["estimated_ns"] = _float(root.findtext("PerformanceEstimates/SummaryOfTimingAnalysis/"
                                                         "EstimatedClockPeriod")) or clock["estimated_ns"]
        found = _loops_of(top, root.find("PerformanceEstimates"))
        for m in root.findall("ModuleInformation/Module"):
            found += _loops_of(m.findtext("Name") or "?", m.find("PerformanceEstimates"))
        for lp in found:
            key = (lp.module, lp.name)
            if key not in seen:
                seen.add(key)
                loops.append(lp)
    return dict(files=[str(f) for f in files], clock=clock, loops=loops)


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def check(rep: dict, strict: bool = False) -> dict:
    """The checks of :data:`EXPECTED` on a parsed report: ``errors`` and ``warnings`` (each naming its loop)."""
    errors: list[str] = []
    warnings: list[str] = []
    by_label: dict[str, list[Loop]] = {}
    for lp in rep["loops"]:
        by_label.setdefault(_base_name(lp.name), []).append(lp)
    for label, want in EXPECTED.items():
        found = by_label.get(label, [])
        if not found:
            if want.required:
                errors.append(f"loop {label} ({want.doc}) is not in the report ({', '.join(rep['files'])}): "
                              "was it renamed, inlined away or not synthesized?")
            continue
        piped = [lp for lp in found if lp.pipelined]
        if want.ii is not None and not piped:
            lp = found[0]
            (errors if want.required or strict else warnings).append(
                f"loop {lp.name} (module {lp.module}): not pipelined (expected II={want.ii})")
            continue
        for lp in (piped if want.ii is not None else found):
            where = f"loop {lp.name} (module {lp.module})"
            why = f" [{lp.issue}{' at ' + lp.source if lp.source else ''}]" if lp.issue else ""
            hard = want.required or strict
            if want.ii is not None:
                if (lp.ii != want.ii) if label == "CORE" else (lp.ii > want.ii):
                    msg = f"{where}: II={lp.ii}, expected {want.ii}{why}"
                    if label == "CORE":
                        msg += (" -- two stores (or loads) of one RAM bank in a cycle, or a loop-carried path "
                                "longer than a cycle: see hls/README.md 'What to check in the csynth report'")
                    (errors if hard else warnings).append(msg)
            if want.depth_max is not None and lp.depth is not None and lp.depth > want.depth_max:
                errors.append(f"{where}: pipeline depth {lp.depth} exceeds what the guards allow ({want.depth_max}: "
                              f"AVAIL_GUARD = RELEASE_GUARD = {E.HLS_GUARD} iterations = 2 x HLS_CORE_DEPTH + 1); "
                              "raise spec HLS_CORE_DEPTH and regenerate (python -m zynqflow.spec.gen)")
            elif label == "CORE" and lp.depth is not None and lp.depth > E.HLS_CORE_DEPTH:
                warnings.append(f"{where}: pipeline depth {lp.depth} above the stated HLS_CORE_DEPTH="
                                f"{E.HLS_CORE_DEPTH} (within the guards' {CORE_DEPTH_ALLOWED}); the cycle model's "
                                f"depth_core is {lp.depth - E.HLS_CORE_DEPTH} short a layer")
            elif label == "CORE" and lp.depth is None:
                warnings.append(f"{where}: no pipeline depth in the report")
    c = rep["clock"]
    if c.get("estimated_ns") is not None and c.get("target_ns") is not None:
        budget = c["target_ns"] - (c.get("uncertainty_ns") or 0.0)
        if c["estimated_ns"] > budget:
            (errors if strict else warnings).append(
                f"estimated clock {c['estimated_ns']:.3f} ns above the target {c['target_ns']:.2f} ns less its "
                f"uncertainty ({budget:.2f} ns)")
    core = [asdict(lp) for lp in by_label.get("CORE", [])]
    return dict(ok=not errors, errors=errors, warnings=warnings, core=core, core_depth_stated=E.HLS_CORE_DEPTH,
                core_depth_allowed=CORE_DEPTH_ALLOWED, guard=E.HLS_GUARD, clock=c, files=rep["files"],
                loops=[asdict(lp) for lp in rep["loops"]])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("report", help="csynth.xml, its report directory, or the make hls output directory")
    ap.add_argument("--json", help="write the result here")
    ap.add_argument("--strict", action="store_true", help="every loop's II and the clock estimate are errors too")
    a = ap.parse_args(argv)
    try:
        res = check(parse(Path(a.report)), strict=a.strict)
    except (FileNotFoundError, ValueError) as e:
        print(f"csynth_check: {e}", file=sys.stderr)
        return 2
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(res, indent=2) + "\n")
    for lp in res["loops"]:
        ii, depth = ("-" if lp[k] is None else lp[k] for k in ("ii", "depth"))
        print(f"csynth_check: {lp['name']:<14} module {lp['module']:<34} II {ii:>3} depth {depth:>3}"
              f"{'  ' + lp['issue'] if lp['issue'] else ''}")
    for w in res["warnings"]:
        print(f"csynth_check: warning: {w}", file=sys.stderr)
    for e in res["errors"]:
        print(f"csynth_check: ERROR: {e}", file=sys.stderr)
    print(f"csynth_check: {'ok' if res['ok'] else 'FAILED'} ({len(res['errors'])} errors, {len(res['warnings'])} "
          f"warnings; CORE depth allowed {CORE_DEPTH_ALLOWED}, stated {E.HLS_CORE_DEPTH})")
    return 0 if res["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
