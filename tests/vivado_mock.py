"""The Vivado scripts of board/ under tclsh with Vivado's commands stubbed (no Vivado here):
board/pynq_z2.tcl (the block design) and board/ip/package_rtl_ip.tcl (the RTL twin's IP).
Shared by tests/test_host.py and tests/test_board_scripts.py.

The log has one line per stubbed command (its arguments as a Tcl list), a
``PROP <key>=<value>`` line per ``set_property -dict`` pair, and ``EXIT <code>``.

The IP packager's commands (``ipx::*``) build an object model as Vivado's would, from the
real HDL top: ``ipx::package_project`` infers the top's ports and parameters (``MOCK_HDL``:
the port list and parameter names parsed from the wrapper by Verilator, tests/ip_check.py)
and, as Vivado does, bus interfaces, a memory map and address spaces of its own;
``ipx::get_ports`` / ``ipx::get_*_parameters`` find only what the HDL has; ``ipx::add_*`` of a
name that exists fails, as ``set_property`` on no object does (Vivado: Common 17-55). Objects
are ``<parent>|<kind>:<name>`` (``core|bus_interface:m_axi_wts|port_map:AWADDR``); the log
records ``ADD``, ``REMOVE`` and ``SET <object> <key> <value>`` lines (tab-separated), which
:func:`ip_model` turns into the IP's objects and properties.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from zynqflow.spec.paths import REPO

MOCK_VIVADO = r"""
set ::log [open $::env(MOCK_LOG) w]
rename exit real_exit
proc exit {{code 0}} { puts $::log "EXIT $code"; close $::log; real_exit $code }
proc env_or {name default} { expr {[info exists ::env($name)] ? $::env($name) : $default} }

# ---- the HDL top ipx::package_project packages: port dir left right / param name ----------
set ::hdl_ports [dict create]
set ::hdl_params {}
if {[info exists ::env(MOCK_HDL)]} {
    set fh [open $::env(MOCK_HDL)]
    foreach line [split [read $fh] "\n"] {
        switch -- [lindex $line 0] {
            port  { dict set ::hdl_ports [lindex $line 1] [lrange $line 2 end] }
            param { lappend ::hdl_params [lindex $line 1] }
        }
    }
    close $fh
}
set ::objs [dict create]
proc obj_add {h} {
    if {[dict exists $::objs $h]} {
        puts stderr "ERROR: \[IP_Flow 19-1\] '$h' already exists"
        error "'$h' already exists"
    }
    dict set ::objs $h 1
    puts $::log "ADD\t$h"
    return $h
}
proc obj_remove {h} {
    foreach k [dict keys $::objs] {
        if {$k eq $h || [string match "$h|*" $k]} { dict unset ::objs $k }
    }
    puts $::log "REMOVE\t$h"
}
proc obj_live {h} { expr {$h eq "core" || [dict exists $::objs $h]} }
# children of parent of a kind, by name (exact, or a glob pattern); "" when none
proc obj_find {parent kind pattern} {
    set out {}
    set pre "$parent|$kind:"
    foreach k [dict keys $::objs] {
        if {[string first $pre $k] != 0} continue
        set name [string range $k [string length $pre] end]
        if {[string first "|" $name] < 0 && ($pattern eq "" || [string match $pattern $name])} {
            lappend out $k
        }
    }
    return $out
}
# ipx::<verb>_<kind> [options] [name] [parent]: {name parent}
proc ipx_operands {argl} {
    set rest {}
    set parent core
    for {set i 0} {$i < [llength $argl]} {incr i} {
        set a [lindex $argl $i]
        if {$a in {-of_objects -of -filter -nocase -regexp}} {
            if {$a in {-of_objects -of}} { set parent [lindex $argl [incr i]] } elseif {$a ne "-regexp"} { incr i }
        } elseif {[string index $a 0] eq "-"} {
        } else { lappend rest $a }
    }
    if {[llength $rest] > 1} { set parent [lindex $rest 1] }
    return [list [lindex $rest 0] $parent]
}
proc ipx_cmd {cmd argl} {
    set verb [string range $cmd 5 end]
    lassign [ipx_operands $argl] name parent
    switch -glob -- $verb {
        package_project {
            obj_add core
            # what Vivado infers from the top: ports, parameters, and interfaces of its own
            dict for {p _} $::hdl_ports { obj_add "core|port:$p" }
            foreach p $::hdl_params { obj_add "core|user_parameter:$p"; obj_add "core|hdl_parameter:$p" }
            foreach b {s_axi_control m_axi_wts m_axi_act s_axis_in m_axis_out ap_clk ap_rst_n} {
                if {[dict exists $::hdl_ports ${b}] || [llength [dict filter $::hdl_ports key ${b}_*]]} {
                    obj_add "core|bus_interface:$b"
                }
            }
            obj_add "core|memory_map:s_axi_control"
            foreach a {m_axi_wts m_axi_act} { obj_add "core|address_space:$a" }
            return core
        }
        current_core { return core }
        remove_all_* {
            foreach h [obj_find $name [string range $verb 11 end] ""] { obj_remove $h }
            return ""
        }
        add_* {
            set kind [string range $verb 4 end]
            if {![obj_live $parent]} { error "ipx::$verb: no object '$parent'" }
            return [obj_add "$parent|$kind:$name"]
        }
        remove_* {
            obj_remove "$parent|[string range $verb 7 end]:$name"
            return ""
        }
        get_*s {
            return [obj_find $parent [string range $verb 4 end-1] $name]
        }
    }
    return ""
}

proc unknown {args} {
    puts $::log $args
    set cmd [lindex $args 0]
    if {[string match ipx::* $cmd]} { return [ipx_cmd $cmd [lrange $args 1 end]] }
    switch -glob -- $cmd {
        get_ipdefs { return [env_or MOCK_IPDEF "zynqflow.org:hls:zq_top:1.0"] }
        get_board_parts { return [env_or MOCK_BOARD ""] }
        get_timing_paths { return [expr {"-hold" in $args ? "hold_path" : "setup_path"}] }
        report_utilization { return [expr {"-return_string" in $args ? [env_or MOCK_UTIL ""] : ""}] }
        set_property {
            set objs [lindex $args end]
            if {[llength $objs] == 0} {
                puts stderr "ERROR: \[Common 17-55\] 'set_property' expects at least one object."
                error "set_property: no object ($args)"
            }
            if {[lindex $args 1] eq "-dict"} {
                set pairs [lindex $args 2]
                foreach {k v} $pairs { puts $::log "PROP $k=$v" }
            } else {
                set pairs [lrange $args 1 2]
            }
            foreach o $objs {
                if {[string match core* $o] && ![obj_live $o]} { error "set_property: no object '$o'" }
                foreach {k v} $pairs { puts $::log "SET\t$o\t[string tolower $k]\t$v" }
            }
        }
        get_property {
            set key [string toupper [lindex $args 1]]
            set obj [lindex $args 2]
            switch -- $key {
                PROGRESS { return "100%" }
                DIRECTORY { return $::env(MOCK_RUN_DIR) }
                SLACK { return [expr {$obj eq "hold_path" ? [env_or MOCK_WHS 0.05] : [env_or MOCK_WNS 0.5]}] }
                NAME { return [lindex [split $obj ":"] end] }
                SIZE_LEFT - SIZE_RIGHT {
                    if {[regexp {^core\|port:(.+)$} $obj -> p]} {
                        lassign [dict get $::hdl_ports $p] dir left right
                        return [expr {$key eq "SIZE_LEFT" ? $left : $right}]
                    }
                }
            }
            return ""
        }
        make_wrapper { return wrapper.v }
        current_* { return [string range $cmd 8 end] }
        get_* { return [lindex $args end] }
        create_bd_cell { return [lindex $args end] }
    }
    return ""
}
set argv $::env(MOCK_ARGS)
source $::env(MOCK_SCRIPT)
"""


def run_mock(tmp_path: Path, script: Path, args: list[str], **mock_env: str) -> tuple[subprocess.CompletedProcess, str]:
    """``script`` under tclsh with Vivado stubbed, ``argv`` = ``args``; returns the process and the log."""
    mock = tmp_path / "mock.tcl"
    mock.write_text(MOCK_VIVADO)
    log = tmp_path / "log"
    env = dict(os.environ, MOCK_LOG=str(log), MOCK_RUN_DIR=str(tmp_path / "run"), MOCK_SCRIPT=str(script),
               MOCK_ARGS=" ".join(f"{{{a}}}" for a in args), **mock_env)
    r = subprocess.run(["tclsh", str(mock)], capture_output=True, text=True, env=env, timeout=60)
    return r, log.read_text() if log.exists() else ""


def run_block_design(tmp_path: Path, engine: str | None = None, script: Path | None = None,
                     **mock_env: str) -> tuple[subprocess.CompletedProcess, str, Path]:
    """Run board/pynq_z2.tcl for zynqnet-mini under the mock; ``engine``: the ENGINE argument
    (``rtl``/``hls``; None: none given, the script takes the IP's); the mock's IP is that engine's
    (``MOCK_IPDEF`` overrides). ``mock_env``: MOCK_BOARD (board part), MOCK_WNS / MOCK_WHS (slack),
    MOCK_UTIL (report_utilization text). Returns the process, the log and the output directory."""
    (tmp_path / "ip").mkdir(exist_ok=True)
    (tmp_path / "ip" / "component.xml").write_text("<x/>")
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    (run / "zq_bd_wrapper.bit").write_bytes(b"bit")
    hh = tmp_path / "out" / "project" / "zq_pynq_z2.gen" / "sources_1" / "bd" / "zq_bd" / "hw_handoff"
    hh.mkdir(parents=True, exist_ok=True)
    (hh / "zq_bd.hwh").write_text("<hwh/>")
    mock_env.setdefault("MOCK_IPDEF", f"zynqflow.org:{engine or 'hls'}:zq_top:1.0")
    args = [str(tmp_path / "ip"), str(tmp_path / "out"), "zynqnet-mini", "2"] + ([engine] if engine else [])
    r, log = run_mock(tmp_path, script or REPO / "board" / "pynq_z2.tcl", args, **mock_env)
    return r, log, tmp_path / "out"


# ---- the IP packager ------------------------------------------------------------------------------
@dataclass
class IpObject:
    """One ipx object (``core|bus_interface:m_axi_wts``) and the properties set on it."""

    handle: str
    props: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.handle.rsplit(":", 1)[-1]


class IpModel:
    """The IP the packaging script built under the mock: live objects by handle, children by kind."""

    def __init__(self, log: str):
        self.objects: dict[str, IpObject] = {}
        for line in log.splitlines():
            f = line.split("\t")
            if f[0] == "ADD":
                self.objects[f[1]] = IpObject(f[1])
            elif f[0] == "REMOVE":
                for h in [h for h in self.objects if h == f[1] or h.startswith(f[1] + "|")]:
                    del self.objects[h]
            elif f[0] == "SET" and f[1] in self.objects:
                self.objects[f[1]].props[f[2]] = f[3]

    def children(self, parent: str, kind: str) -> dict[str, IpObject]:
        pre = f"{parent}|{kind}:"
        return {o.name: o for h, o in self.objects.items() if h.startswith(pre) and "|" not in h[len(pre):]}

    def core(self) -> IpObject:
        return self.objects["core"]

    def bus_interfaces(self) -> dict[str, IpObject]:
        return self.children("core", "bus_interface")

    def port_maps(self, bus: str) -> dict[str, str]:
        """{logical: physical} of a bus interface."""
        return {n: o.props.get("physical_name", "") for n, o in self.children(f"core|bus_interface:{bus}",
                                                                               "port_map").items()}

    def bus_parameters(self, bus: str) -> dict[str, str]:
        return {n: o.props.get("value", "") for n, o in self.children(f"core|bus_interface:{bus}",
                                                                      "bus_parameter").items()}

    def registers(self) -> dict[str, dict]:
        """The registers of s_axi_control's memory map in pynq's ``ip_dict`` form (what the .hwh carries)."""
        out = {}
        for mm in self.children("core", "memory_map").values():
            for ab in self.children(mm.handle, "address_block").values():
                for name, reg in self.children(ab.handle, "register").items():
                    fields = {fn: dict(bit_offset=int(f.props.get("bit_offset", -1)),
                                       bit_width=int(f.props.get("bit_width", 0)),
                                       access=f.props.get("access"), description=f.props.get("description"))
                              for fn, f in self.children(reg.handle, "field").items()}
                    out[name] = dict(address_offset=int(reg.props.get("address_offset", "-1"), 0),
                                     size=int(reg.props.get("size", 0)), access=reg.props.get("access"),
                                     description=reg.props.get("description"), fields=fields,
                                     block=ab.name, memory_map=mm.name)
        return out


def run_package_ip(tmp_path: Path, export_dir: Path, hdl_file: Path, script: Path | None = None,
                   ip_dir: Path | None = None) -> tuple[subprocess.CompletedProcess, str, IpModel]:
    """board/ip/package_rtl_ip.tcl (or ``script``, a copy of it) under the mock for ``export_dir``;
    ``hdl_file``: the wrapper's ports and parameters as ipx::package_project would find them
    (:func:`ip_check.mock_hdl_file`). Returns the process, the log and the IP model."""
    ip_dir = ip_dir or tmp_path / "rtl_ip"
    r, log = run_mock(tmp_path, script or REPO / "board" / "ip" / "package_rtl_ip.tcl",
                      [str(export_dir), str(ip_dir)], MOCK_HDL=str(hdl_file))
    return r, log, IpModel(log)
