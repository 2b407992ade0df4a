# The Vitis HLS flow (its Tcl commands) for the zq_top engine of one exported network.
#
#   vitis_hls -f hls/scripts/run_hls.tcl -tclargs <export_dir> [out_dir] [steps]      # Vitis HLS 2023.2
#   ZQ_HLS_EXPORT=<export_dir> vitis-run --mode hls --tcl hls/scripts/run_hls.tcl     # Vitis 2024.2, 2025.1
#
# export_dir: the exporter's output (net_params.h, weights.bin, vectors_in/out.bin)
#             (argument 1, else $ZQ_HLS_EXPORT)
# out_dir:    where the Vitis project goes (argument 2, else $ZQ_HLS_OUT, else <export_dir>/../hls)
# steps:      comma- or space-separated subset of csim,csynth,cosim,export
#             (argument 3, else $ZQ_HLS_STEPS, else all four, in that order)
# Environment: ZQ_HLS_PART (default xc7z020clg400-1, PYNQ-Z2),
#              ZQ_HLS_CLOCK (ns, default 10),
#              ZQ_COSIM_FRAMES (test vectors co-simulated, default 1; the C simulation runs all),
#              ZQ_COSIM_PROTOCOL (1: the co-simulation also runs the testbench's protocol checks, ten
#              more frames; default 0, so that it runs exactly ZQ_COSIM_FRAMES frames),
#              ZQ_CSYNTH_CHECK (a command run on the csynth report after csynth_design, with the report
#              directory and `--json <out_dir>/csynth_check.json`; make hls: zynqflow.bench.csynth_check).
# The m_axi depths for co-simulation (ZQ_WTS_DEPTH, ZQ_ACT_DEPTH: 64-bit beats of the weight
# image and of the scratch area) are computed here from weights.bin and net_params.h and
# passed as defines; zq_top.cpp derives from them the depth of its three offset=off masters,
# the testbench's whole DDR array (ZQ_MEM_DEPTH). Normally run through hls/scripts/hls.sh, which finds the tool first.

set script_dir [file dirname [file normalize [info script]]]
set hls_dir [file dirname $script_dir]

proc arg_or_env {i var dflt} {
    global argv
    if {[llength $argv] > $i} { return [lindex $argv $i] }
    if {[info exists ::env($var)] && $::env($var) ne ""} { return $::env($var) }
    return $dflt
}

set export_arg [arg_or_env 0 ZQ_HLS_EXPORT ""]
if {$export_arg eq ""} {
    puts stderr "usage: vitis_hls -f run_hls.tcl -tclargs <export_dir> \[out_dir\] \[steps\] (or ZQ_HLS_EXPORT=<export_dir>)"
    exit 2
}
set export_dir [file normalize $export_arg]
foreach f {net_params.h weights.bin} {
    if {![file exists [file join $export_dir $f]]} {
        puts stderr "run_hls.tcl: $export_dir has no $f (run the exporter first)"
        exit 2
    }
}
set out_dir [file normalize [arg_or_env 1 ZQ_HLS_OUT [file join $export_dir .. hls]]]
set steps_arg [arg_or_env 2 ZQ_HLS_STEPS "csim,csynth,cosim,export"]
set steps [regexp -all -inline {[a-z_]+} [string tolower $steps_arg]]
foreach s $steps {
    if {[lsearch -exact {csim csynth cosim export} $s] < 0} {
        puts stderr "run_hls.tcl: unknown step '$s' (csim, csynth, cosim, export)"
        exit 2
    }
}
set part xc7z020clg400-1
if {[info exists ::env(ZQ_HLS_PART)]} { set part $::env(ZQ_HLS_PART) }
set clock 10
if {[info exists ::env(ZQ_HLS_CLOCK)]} { set clock $::env(ZQ_HLS_CLOCK) }

file mkdir $out_dir
cd $out_dir
puts "run_hls.tcl: export $export_dir -> $out_dir, steps: $steps, part $part, clock ${clock} ns"

# m_axi depths (64-bit beats) for co-simulation: the weight image and the scratch area
set wts_depth [expr {[file size [file join $export_dir weights.bin]] / 8}]
set fh [open [file join $export_dir net_params.h] r]
set params [read $fh]
close $fh
if {![regexp {SCRATCH_BYTES = (0x[0-9a-fA-F]+|[0-9]+)u?;} $params -> scratch]} {
    puts stderr "run_hls.tcl: no SCRATCH_BYTES in [file join $export_dir net_params.h] (stale export?)"
    exit 2
}
set act_depth [expr {max(1, $scratch / 8)}]

# ZQ_USE_AP_AXI: the design and the testbench both use Vitis's ap_axiu beats (hls/zq_axis.h);
# ZQ_VITIS: Vitis's own hls::stream and plain dataflow calls (hls/zq_stream.h), in its C
# simulation too, so that csim, cosim and synthesis see one design.
set cflags "-std=c++14 -I$export_dir -I$hls_dir -DZQ_USE_AP_AXI -DZQ_VITIS -DZQ_WTS_DEPTH=$wts_depth -DZQ_ACT_DEPTH=$act_depth"
puts "run_hls.tcl: m_axi depths for co-simulation: wts $wts_depth beats, act $act_depth beats"

open_project -reset zq_hls
set_top zq_top
add_files [file join $hls_dir zq_top.cpp] -cflags $cflags
foreach h [lsort [glob -directory $hls_dir *.h]] {
    add_files $h -cflags $cflags
}
add_files -tb [file join $hls_dir tb tb_zq_top.cpp] -cflags $cflags
open_solution -reset solution1 -flow_target vivado
set_part $part
create_clock -period $clock -name default
# 64-bit m_axi addresses: the register map (zq_spec.h, docs/engine-spec.md) has the 64-bit
# `wts` offset register at 0x10-0x17 and `act` at 0x1C. UG1399 gives the default of
# m_axi_addr64 for the Vivado IP flow differently across releases, so it is set here.
config_interface -m_axi_addr64

set cosim_frames 1
if {[info exists ::env(ZQ_COSIM_FRAMES)]} { set cosim_frames $::env(ZQ_COSIM_FRAMES) }
set cosim_protocol 0
if {[info exists ::env(ZQ_COSIM_PROTOCOL)]} { set cosim_protocol $::env(ZQ_COSIM_PROTOCOL) }

# The testbench takes the vectors directory, a frame limit and the protocol switch as arguments.
if {[lsearch -exact $steps csim] >= 0} {
    csim_design -O -argv $export_dir
}
if {[lsearch -exact $steps csynth] >= 0} {
    csynth_design
    file mkdir [file join $out_dir reports]
    foreach rpt [glob -nocomplain [file join $out_dir zq_hls solution1 syn report *.rpt]] {
        file copy -force $rpt [file join $out_dir reports]
    }
    # The csynth report's check (make hls sets ZQ_CSYNTH_CHECK to `python -m zynqflow.bench.csynth_check`):
    # the core's loop CORE at II=1 with a depth the guards allow, or the flow stops here, before the
    # co-simulation; the result in <out_dir>/csynth_check.json.
    if {[info exists ::env(ZQ_CSYNTH_CHECK)] && $::env(ZQ_CSYNTH_CHECK) ne ""} {
        set report_dir [file join $out_dir zq_hls solution1 syn report]
        set check_json [file join $out_dir csynth_check.json]
        if {[catch {exec {*}$::env(ZQ_CSYNTH_CHECK) $report_dir --json $check_json >@ stdout 2>@ stderr} err]} {
            puts stderr "run_hls.tcl: the csynth report check failed ($err): $check_json"
            exit 1
        }
    }
}
if {[lsearch -exact $steps cosim] >= 0} {
    puts "run_hls.tcl: co-simulation of $cosim_frames frame(s), protocol checks [expr {$cosim_protocol ? {on} : {off}}]"
    cosim_design -argv "$export_dir $cosim_frames $cosim_protocol" -rtl verilog
}
if {[lsearch -exact $steps export] >= 0} {
    export_design -format ip_catalog -rtl verilog -vendor zynqflow.org -library hls -version 1.0 \
        -description "ZynqNet-style DDR-streaming CNN engine" -display_name zq_top
    puts "run_hls.tcl: IP catalog archive in [file join $out_dir zq_hls solution1 impl ip]"
}
exit 0
