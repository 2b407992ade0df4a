"""The board/ scripts under the vendor-reference mock of Vivado (zynqflow.sim.world.vivado), as
tests/test_board_scripts.py and tests/test_host.py run them: board/pynq_z2.tcl (the block design)
and board/ip/package_rtl_ip.tcl (the RTL twin's IP).

The mock knows each command the scripts use with its options (UG835), each IP's CONFIG.*
parameters and pins (its product guide), the IP packager's objects and bus definitions; anything
else is a problem naming the script's line (``PROBLEM`` lines of the log, :func:`problems`). The
log has one line per command (its arguments as a Tcl list), ``PROP <key>=<value>`` per
``set_property -dict`` pair, the IP packager's ``ADD``/``REMOVE``/``SET`` lines, the block
design's state (``CELL``, ``CFG``, ``NET``, ``INTF``, ``ADDR`` ...) and ``EXIT <code>``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from zynqflow.sim.world import vivado as V
from zynqflow.sim.world.vivado import BlockDesign, IpModel, Problem  # noqa: F401 (BlockDesign, Problem: for the tests)
from zynqflow.spec.paths import REPO


def problems(log: str) -> list[str]:
    """The mock's problems in a log, as ``<script>:<line>: <message>``."""
    return [str(p) for p in V.problems_of(log)]


def run_mock(tmp_path: Path, script: Path, args: list[str], extra_ips: dict | None = None,
             **mock_env: str) -> tuple[subprocess.CompletedProcess, str]:
    """``script`` under the mock, ``argv`` = ``args``; returns the process and the log."""
    r = V.run_mock(tmp_path, script, args, extra_ips=extra_ips, **mock_env)
    return r.proc, r.log


def run_block_design(tmp_path: Path, engine: str | None = None, script: Path | None = None,
                     rtl_entry: dict | None = None, **mock_env: str) -> tuple[subprocess.CompletedProcess, str, Path]:
    """Run board/pynq_z2.tcl for zynqnet-mini under the mock; ``engine``: the ENGINE argument
    (``rtl``/``hls``; None: none given, the script takes the IP's); the catalog holds the HLS IP
    (from hls/'s pragmas) and, given ``rtl_entry`` (:func:`sim.world.vivado.rtl_ip_entry` of a
    packaging run), the RTL twin's; the IP repository's is that engine's (``MOCK_IPDEF``
    overrides). ``mock_env``: MOCK_BOARD (board part), MOCK_WNS / MOCK_WHS (slack), MOCK_UTIL
    (report_utilization text). Returns the process, the log and the output directory."""
    (tmp_path / "ip").mkdir(exist_ok=True)
    (tmp_path / "ip" / "component.xml").write_text("<x/>")
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    (run / "zq_bd_wrapper.bit").write_bytes(b"bit")
    hh = tmp_path / "out" / "project" / "zq_pynq_z2.gen" / "sources_1" / "bd" / "zq_bd" / "hw_handoff"
    hh.mkdir(parents=True, exist_ok=True)
    (hh / "zq_bd.hwh").write_text("<hwh/>")
    mock_env.setdefault("MOCK_IPDEF", f"zynqflow.org:{engine or 'hls'}:zq_top:1.0")
    ips = dict(V.engine_entry("hls"), **({V.RTL_VLNV: rtl_entry} if rtl_entry else {}))
    args = [str(tmp_path / "ip"), str(tmp_path / "out"), "zynqnet-mini", "2"] + ([engine] if engine else [])
    r, log = run_mock(tmp_path, script or REPO / "board" / "pynq_z2.tcl", args, extra_ips=ips,
                      MOCK_RUN_DIR=str(run), **mock_env)
    return r, log, tmp_path / "out"


def run_package_ip(tmp_path: Path, export_dir: Path, hdl_file: Path, script: Path | None = None,
                   ip_dir: Path | None = None) -> tuple[subprocess.CompletedProcess, str, IpModel]:
    """board/ip/package_rtl_ip.tcl (or ``script``, a copy of it) under the mock for ``export_dir``;
    ``hdl_file``: the wrapper's ports and parameters as ipx::package_project would find them
    (:func:`zynqflow.bench.board_check.mock_hdl_file`). Returns the process, the log and the IP model."""
    ip_dir = ip_dir or tmp_path / "rtl_ip"
    r, log = run_mock(tmp_path, script or REPO / "board" / "ip" / "package_rtl_ip.tcl",
                      [str(export_dir), str(ip_dir)], MOCK_HDL=str(hdl_file))
    return r, log, IpModel(log)
