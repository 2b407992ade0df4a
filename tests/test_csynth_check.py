"""`make hls`'s check of the csynth report (zynqflow.bench.csynth_check) on reports laid out as Vitis HLS
writes them: the core's loop CORE at II=1 with a pipeline depth the guards allow, or the check fails
naming the loop; the other loops' II and the clock estimate as warnings; and run_hls.tcl running it
between csynth and co-simulation.

The fixtures follow the csynth.xml of Vitis HLS 2023.2 (UG1399's Synthesis Summary, as XML): the
layout of a stored public report (kangaroo-0000/systolic-array-hls, solution1/syn/report/csynth.xml,
`<Version>2023.2</Version>`): ``profile/UserAssignments``, ``profile/PerformanceEstimates``,
``profile/ModuleInformation/Module`` with ``Name``, ``Loops`` and ``PerformanceEstimates/
SummaryOfLoopLatency/<LOOP>/{Name, Slack, TripCount, Latency, AbsoluteTimeLatency, PipelineII,
PipelineDepth, PipelineType, InstanceList}`` and ``SummaryOfViolations/SummaryOfLoopViolations/<LOOP>/
{Name, IssueType, ViolationType, SourceLocation}``; a pipelined loop is a module
``<function>_Pipeline_<LABEL>``. The older per-module file (``<module>_csynth.xml`` with
``profile/PerformanceEstimates/SummaryOfLoopLatency/<LOOP>/{TripCount, Latency, IterationLatency,
PipelineII, PipelineDepth}``) is the layout other public parsers read (hls4ml's report reader among them).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from zynqflow.bench import csynth_check as cc
from zynqflow.spec import engine as E

# (module, loop label, II, depth, trip count) of the engine, as Vitis 2023.2 would name them
ENGINE_LOOPS = [
    ("core_Pipeline_CORE", "CORE", 1, E.HLS_CORE_DEPTH, "undef"),
    ("core_Pipeline_LOGITS", "LOGITS", 1, 3, 10),
    ("weight_reader_Pipeline_WLOAD", "WLOAD", 1, 4, 4224),
    ("header_ok_Pipeline_HEADER", "HEADER", 1, 4, 3),
    ("read_raw_rows_Pipeline_RAW", "RAW", 1, 3, "undef"),
    ("scan_row_Pipeline_SCAN", "SCAN", 1, 4, "undef"),
    ("scan_row_Pipeline_STEM_WRITE", "STEM_WRITE", 1, 3, "undef"),
    ("fill_bursts_16_s", "FILL", 16, 22, "undef"),
    ("write_bursts_16_s", "DDR_WRITE", 16, 21, "undef"),
    ("output_Pipeline_LOGITS_OUT", "LOGITS_OUT", 1, 2, 10),
]


def _module(name: str, loop: str, ii, depth, trip, issue: str = "-", violation: str = "-") -> str:
    return f"""        <Module>
            <Name>{name}</Name>
            <Loops>
                <{loop}/>
            </Loops>
            <PerformanceEstimates>
                <SummaryOfTimingAnalysis>
                    <TargetClockPeriod>10.00</TargetClockPeriod>
                    <ClockUncertainty>2.70</ClockUncertainty>
                    <EstimatedClockPeriod>7.003</EstimatedClockPeriod>
                </SummaryOfTimingAnalysis>
                <SummaryOfOverallLatency>
                    <Best-caseLatency>undef</Best-caseLatency>
                    <Average-caseLatency>undef</Average-caseLatency>
                    <Worst-caseLatency>undef</Worst-caseLatency>
                    <PipelineInitiationInterval>undef</PipelineInitiationInterval>
                    <PipelineType>no</PipelineType>
                </SummaryOfOverallLatency>
                <SummaryOfLoopLatency>
                    <{loop}>
                        <Name>{loop}</Name>
                        <Slack>7.30</Slack>
                        <TripCount>{trip}</TripCount>
                        <Latency>undef</Latency>
                        <AbsoluteTimeLatency>undef</AbsoluteTimeLatency>
                        <PipelineII>{ii}</PipelineII>
                        <PipelineDepth>{depth}</PipelineDepth>
                        <PipelineType>yes</PipelineType>
                        <InstanceList/>
                    </{loop}>
                </SummaryOfLoopLatency>
                <SummaryOfViolations>
                    <IssueType>{issue}</IssueType>
                    <ViolationType>{violation}</ViolationType>
                    <SourceLocation>hls/zq_core.h:1</SourceLocation>
                    <SummaryOfLoopViolations>
                        <{loop}>
                            <Name>{loop}</Name>
                            <IssueType>{issue}</IssueType>
                            <ViolationType>{violation}</ViolationType>
                            <SourceLocation>hls/zq_core.h:321</SourceLocation>
                        </{loop}>
                    </SummaryOfLoopViolations>
                </SummaryOfViolations>
            </PerformanceEstimates>
            <AreaEstimates>
                <Resources>
                    <FF>1</FF>
                    <LUT>1</LUT>
                    <BRAM_18K>0</BRAM_18K>
                    <DSP>0</DSP>
                    <URAM>0</URAM>
                </Resources>
            </AreaEstimates>
        </Module>
"""


def csynth_xml(loops=ENGINE_LOOPS, estimated: float = 8.106, violations: dict | None = None) -> str:
    """A csynth.xml of the engine in the Vitis HLS 2023.2 layout; violations: {label: (IssueType, ViolationType)}."""
    violations = violations or {}
    mods = "".join(_module(m, lp, ii, d, t, *violations.get(lp, ("-", "-"))) for m, lp, ii, d, t in loops)
    return f"""<profile>
    <ReportVersion>
        <Version>2023.2</Version>
    </ReportVersion>
    <UserAssignments>
        <unit>ns</unit>
        <ProductFamily>zynq</ProductFamily>
        <Part>xc7z020-clg400-1</Part>
        <TopModelName>zq_top</TopModelName>
        <TargetClockPeriod>10.00</TargetClockPeriod>
        <ClockUncertainty>2.70</ClockUncertainty>
        <FlowTarget>vivado</FlowTarget>
    </UserAssignments>
    <PerformanceEstimates>
        <PipelineType>no</PipelineType>
        <SummaryOfTimingAnalysis>
            <unit>ns</unit>
            <EstimatedClockPeriod>{estimated}</EstimatedClockPeriod>
        </SummaryOfTimingAnalysis>
        <SummaryOfOverallLatency>
            <unit>clock cycles</unit>
            <Best-caseLatency>undef</Best-caseLatency>
            <Worst-caseLatency>undef</Worst-caseLatency>
            <Interval-min>undef</Interval-min>
            <Interval-max>undef</Interval-max>
        </SummaryOfOverallLatency>
        <SummaryOfLoopLatency>
            <LAYERS>
                <Slack>7.30</Slack>
                <TripCount>27</TripCount>
                <Latency>undef</Latency>
                <AbsoluteTimeLatency>undef</AbsoluteTimeLatency>
                <IterationLatency>undef</IterationLatency>
                <InstanceList/>
            </LAYERS>
        </SummaryOfLoopLatency>
    </PerformanceEstimates>
    <ModuleInformation>
{mods}    </ModuleInformation>
</profile>
"""


def _report(tmp_path: Path, **kw) -> Path:
    d = tmp_path / "zq_hls" / "solution1" / "syn" / "report"
    d.mkdir(parents=True, exist_ok=True)
    (d / "csynth.xml").write_text(csynth_xml(**kw))
    return tmp_path


def _with(label: str, **change):
    return [(m, lp, change.get("ii", ii), change.get("depth", d), t) if lp == label else (m, lp, ii, d, t)
            for m, lp, ii, d, t in ENGINE_LOOPS]


def test_good_report(tmp_path, capsys):
    out = _report(tmp_path)
    res = cc.check(cc.parse(out))
    assert res["ok"] and res["errors"] == [], res["errors"]
    core = res["core"]
    assert len(core) == 1 and core[0]["module"] == "core_Pipeline_CORE" and core[0]["ii"] == 1
    assert core[0]["depth"] == E.HLS_CORE_DEPTH and core[0]["pipelined"]
    by = {lp["name"]: lp for lp in res["loops"]}
    assert by["FILL"]["ii"] == 16 and by["WLOAD"]["trip_count"] == 4224 and by["LAYERS"]["pipelined"] is False
    assert res["clock"] == dict(target_ns=10.0, uncertainty_ns=2.7, estimated_ns=8.106, top="zq_top")
    assert any("estimated clock 8.106 ns" in w for w in res["warnings"])   # above 10 - 2.7, a warning
    assert cc.main([str(out), "--json", str(tmp_path / "c.json")]) == 0
    assert json.loads((tmp_path / "c.json").read_text())["core_depth_allowed"] == 2 * E.HLS_CORE_DEPTH
    assert "CORE" in capsys.readouterr().out


def test_core_ii_fails_naming_the_loop(tmp_path, capsys):
    out = _report(tmp_path, loops=_with("CORE", ii=2), estimated=7.0,
                  violations={"CORE": ("II Violation", "Memory Dependency")})
    res = cc.check(cc.parse(out))
    assert not res["ok"] and len(res["errors"]) == 1
    e = res["errors"][0]
    assert "loop CORE (module core_Pipeline_CORE): II=2, expected 1" in e
    assert "Memory Dependency" in e and "hls/zq_core.h:321" in e
    assert cc.main([str(out)]) == 1
    assert "ERROR: loop CORE" in capsys.readouterr().err


def test_core_depth_against_the_guards(tmp_path):
    allowed = 2 * E.HLS_CORE_DEPTH
    res = cc.check(cc.parse(_report(tmp_path / "a", loops=_with("CORE", depth=allowed + 1), estimated=7.0)))
    assert not res["ok"]
    assert f"loop CORE (module core_Pipeline_CORE): pipeline depth {allowed + 1} exceeds what the guards allow " \
           f"({allowed}" in res["errors"][0]
    res = cc.check(cc.parse(_report(tmp_path / "b", loops=_with("CORE", depth=allowed), estimated=7.0)))
    assert res["ok"] and any(f"above the stated HLS_CORE_DEPTH={E.HLS_CORE_DEPTH}" in w for w in res["warnings"])
    res = cc.check(cc.parse(_report(tmp_path / "c", estimated=7.0)))
    assert res["ok"] and res["warnings"] == []


def test_missing_or_unpipelined_core(tmp_path):
    res = cc.check(cc.parse(_report(tmp_path / "a", loops=[x for x in ENGINE_LOOPS if x[1] != "CORE"])))
    assert not res["ok"] and "loop CORE" in res["errors"][0] and "not in the report" in res["errors"][0]
    xml = csynth_xml().replace("<PipelineII>1</PipelineII>\n                        <PipelineDepth>15</PipelineDepth>\n"
                               "                        <PipelineType>yes</PipelineType>",
                               "<PipelineII>undef</PipelineII>\n                        <PipelineDepth>undef"
                               "</PipelineDepth>\n                        <PipelineType>no</PipelineType>", 1)
    d = tmp_path / "b"
    d.mkdir()
    (d / "csynth.xml").write_text(xml)
    res = cc.check(cc.parse(d))
    assert not res["ok"] and "loop CORE (module core_Pipeline_CORE): not pipelined" in res["errors"][0]


def test_other_loops_warn_unless_strict(tmp_path):
    out = _report(tmp_path, loops=_with("FILL", ii=32), estimated=7.0)
    res = cc.check(cc.parse(out))
    assert res["ok"] and any("loop FILL (module fill_bursts_16_s): II=32, expected 16" in w for w in res["warnings"])
    res = cc.check(cc.parse(out), strict=True)
    assert not res["ok"] and "loop FILL" in res["errors"][0]
    assert cc.main([str(out), "--strict"]) == 1


def test_per_module_report_files(tmp_path):
    """The older layout: one <module>_csynth.xml per module, loops under profile/PerformanceEstimates."""
    d = tmp_path / "report"
    d.mkdir()
    (d / "core_Pipeline_CORE_csynth.xml").write_text(f"""<profile>
<UserAssignments><TopModelName>core_Pipeline_CORE</TopModelName><TargetClockPeriod>10.00</TargetClockPeriod>
<ClockUncertainty>2.70</ClockUncertainty></UserAssignments>
<PerformanceEstimates>
  <SummaryOfTimingAnalysis><EstimatedClockPeriod>6.917</EstimatedClockPeriod></SummaryOfTimingAnalysis>
  <SummaryOfLoopLatency>
    <CORE>
      <TripCount>undef</TripCount><Latency>undef</Latency>
      <IterationLatency>{2 * E.HLS_CORE_DEPTH + 5}</IterationLatency>
      <PipelineII>1</PipelineII>
    </CORE>
  </SummaryOfLoopLatency>
</PerformanceEstimates>
</profile>
""")
    res = cc.check(cc.parse(d))
    assert res["core"][0]["module"] == "core_Pipeline_CORE" and res["core"][0]["depth"] == 2 * E.HLS_CORE_DEPTH + 5
    assert not res["ok"] and "exceeds what the guards allow" in res["errors"][0]


def test_not_a_report(tmp_path, capsys):
    assert cc.main([str(tmp_path)]) == 2
    assert "no csynth.xml" in capsys.readouterr().err
    (tmp_path / "csynth.xml").write_text("<html></html>")
    assert cc.main([str(tmp_path)]) == 2
    assert "not a csynth report" in capsys.readouterr().err


def test_readme_states_every_expected_loop():
    """hls/README.md states the expected II and depth of every loop the check knows, and the check knows
    every labelled pipelined loop of hls/."""
    from zynqflow.sim.csim.runner import HLS_DIR

    readme = (HLS_DIR / "README.md").read_text()
    for label in cc.EXPECTED:
        assert f"| `{label}` |" in readme, label
    labels = set()
    for h in [*HLS_DIR.glob("*.h"), *HLS_DIR.glob("*.cpp")]:
        lines = h.read_text().splitlines()
        for i, line in enumerate(lines):
            s = line.strip()
            if s.endswith(":") and s[:-1].isupper() and any("PIPELINE" in x and "off" not in x
                                                           for x in lines[i + 1:i + 4]):
                labels.add(s[:-1])
    assert labels and labels <= set(cc.EXPECTED), labels - set(cc.EXPECTED)


# ---- run_hls.tcl: the check between csynth and co-simulation ------------------------------------
@pytest.mark.parametrize("good", [True, False])
def test_run_hls_tcl_runs_the_check(tmp_path, good):
    """run_hls.tcl (under tclsh, Vitis's commands stubbed) runs $ZQ_CSYNTH_CHECK on the csynth report
    after csynth_design: a good report goes on to the co-simulation and the IP export, a bad one stops
    the flow there with exit 1 and the check's message naming the loop."""
    from test_hls_csim import _mock_run_hls

    from zynqflow.export import fixtures

    d = fixtures.random_export("zynqnet-tiny")
    out = _report(tmp_path / "hls", **({} if good else dict(loops=_with("CORE", ii=2))))
    rc, log, text = _mock_run_hls(tmp_path, d, out,
                                  env=dict(ZQ_CSYNTH_CHECK=f"{sys.executable} -m zynqflow.bench.csynth_check"))
    cmds = [line.split()[0] for line in log]
    res = json.loads((out / "csynth_check.json").read_text())
    if good:
        assert rc == 0 and res["ok"], text
        assert cmds.index("csynth_design") < cmds.index("cosim_design") < cmds.index("export_design")
    else:
        assert rc == 1 and not res["ok"], text
        assert "loop CORE (module core_Pipeline_CORE): II=2" in text
        assert "csynth_design" in cmds and "cosim_design" not in cmds and "export_design" not in cmds
