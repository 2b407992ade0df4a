"""board/pynq_z2.tcl under tclsh with every Vivado command stubbed (no Vivado here).
Shared by tests/test_host.py and tests/test_board_scripts.py.

The log has one line per stubbed command (its arguments as a Tcl list), a
``PROP <key>=<value>`` line per ``set_property -dict`` pair, and ``EXIT <code>``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from zynqflow.spec.paths import REPO

MOCK_VIVADO = r"""
set ::log [open $::env(MOCK_LOG) w]
rename exit real_exit
proc exit {{code 0}} { puts $::log "EXIT $code"; close $::log; real_exit $code }
proc env_or {name default} { expr {[info exists ::env($name)] ? $::env($name) : $default} }
proc unknown {args} {
    puts $::log $args
    switch -- [lindex $args 0] {
        get_ipdefs { return "zynqflow.org:hls:zq_top:1.0" }
        get_board_parts { return [env_or MOCK_BOARD ""] }
        get_timing_paths { return [expr {"-hold" in $args ? "hold_path" : "setup_path"}] }
        report_utilization { return [expr {"-return_string" in $args ? [env_or MOCK_UTIL ""] : ""}] }
        set_property {
            if {[lindex $args 1] eq "-dict"} {
                foreach {k v} [lindex $args 2] { puts $::log "PROP $k=$v" }
            }
        }
        get_property {
            switch -- [lindex $args 1] {
                PROGRESS { return "100%" }
                DIRECTORY { return $::env(MOCK_RUN_DIR) }
                SLACK { return [expr {[lindex $args 2] eq "hold_path" ? [env_or MOCK_WHS 0.05]
                                                                      : [env_or MOCK_WNS 0.5]}] }
            }
            return ""
        }
        create_bd_cell - get_bd_pins - get_bd_intf_pins - get_bd_cells - get_bd_addr_spaces - get_bd_addr_segs {
            return [lindex $args end]
        }
        make_wrapper { return wrapper.v }
    }
    return ""
}
set argv $::env(MOCK_ARGS)
source $::env(MOCK_SCRIPT)
"""


def run_block_design(tmp_path: Path, **mock_env: str) -> tuple[subprocess.CompletedProcess, str, Path]:
    """Run board/pynq_z2.tcl for zynqnet-mini under the mock; ``mock_env``: MOCK_BOARD (board
    part), MOCK_WNS / MOCK_WHS (slack), MOCK_UTIL (report_utilization text). Returns the
    process, the log and the output directory."""
    (tmp_path / "ip").mkdir(exist_ok=True)
    (tmp_path / "ip" / "component.xml").write_text("<x/>")
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    (run / "zq_bd_wrapper.bit").write_bytes(b"bit")
    hh = tmp_path / "out" / "project" / "zq_pynq_z2.gen" / "sources_1" / "bd" / "zq_bd" / "hw_handoff"
    hh.mkdir(parents=True, exist_ok=True)
    (hh / "zq_bd.hwh").write_text("<hwh/>")
    (tmp_path / "mock.tcl").write_text(MOCK_VIVADO)
    env = dict(os.environ, MOCK_LOG=str(tmp_path / "log"), MOCK_RUN_DIR=str(run),
               MOCK_ARGS=f"{tmp_path / 'ip'} {tmp_path / 'out'} zynqnet-mini 2",
               MOCK_SCRIPT=str(REPO / "board" / "pynq_z2.tcl"), **mock_env)
    r = subprocess.run(["tclsh", str(tmp_path / "mock.tcl")], capture_output=True, text=True, env=env, timeout=60)
    return r, (tmp_path / "log").read_text(), tmp_path / "out"
