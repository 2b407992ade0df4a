# Package the RTL twin (rtl/*.sv) for one exported network as a Vivado IP,
# zynqflow.org:rtl:zq_top:1.0 -- the RTL counterpart of the Vitis HLS IP
# zynqflow.org:hls:zq_top:1.0 that `make hls` exports. Normally run by board/bitstream.sh:
#
#   vivado -mode batch -source board/ip/package_rtl_ip.tcl -tclargs <export_dir> <ip_dir>
#
# export_dir: the network's export (rtl_params.svh, manifest.json; `make export`)
# ip_dir:     the IP repository written (component.xml, hdl/, xgui/); emptied first
#
# Written for Vivado 2023.2 against UG1118 (Creating and Packaging Custom IP, v2023.2)
# and UG835 (Tcl command reference: ipx::*). Not run here: no Vivado where this was
# written. tests/test_board_scripts.py runs it under tclsh with Vivado's commands
# stubbed (tests/vivado_mock.py) and checks what it builds against the RTL itself.
#
# The IP, as UG1118 asks: a Verilog top (board/ip/zq_top_ip.v: every zq_top port and
# parameter passed through), packaged with ipx::package_project, then
#   * the bus interfaces declared explicitly (Vivado's own inference removed first):
#     s_axi_control (AXI4-Lite slave, decoding its whole 64 KiB segment), m_axi_wts,
#     m_axi_act and m_axi_act2 (AXI4 masters, 64-bit, each with its own address space of the
#     same name, 4 GiB), s_axis_in (AXI4-Stream slave), m_axis_out (AXI4-Stream master), ap_clk (clock
#     of all of them, FREQ_HZ the specification's clock), ap_rst_n (active-low reset),
#     interrupt (level-high); every port named by the interface naming Vitis HLS uses, so
#     the block design (board/pynq_z2.tcl) wires either engine the same way. The streams
#     carry no TSTRB (HAS_TSTRB 0), as the AXI DMA's have none (PG021): the engine ignores
#     s_axis_in_TSTRB, which is tied high when undriven (its driver value), and drives
#     m_axis_out_TSTRB high, a pin outside the interface;
#   * the sources: the .svh headers marked as include files (is_include) in both file
#     groups, as the project marks them Verilog Header;
#   * the memory map of s_axi_control: address block "Reg" (64 KiB, as Vitis HLS makes
#     it) with the RTL twin's registers and their fields from the engine specification
#     (board/zq_spec.tcl, generated from spec/engine.py), named as the driver reads them
#     from the .hwh (AP_CTRL ... wts, wts_hi ... cycles_last ...): the driver picks its
#     RTL register map from them (zynqflow.host.driver.engine_from_hwh);
#   * the parameters: the wrapper's, each set to the export's value (rtl_params.svh and
#     the specification's zq_spec.svh, the files the HDL includes) and read-only.
#
# One IP per network, as the HLS IP: the layer table (N_LAYERS x ROW_BITS bits: 7 398 for the
# full ZynqNet's 27 layers), the network ID and the engine's sizes are compiled into the
# engine, the IP's sources include the export's rtl_params.svh, and its parameters are
# locked to it. Why not one generic IP whose table and sizes the block design sets: the
# parameters fix the hardware at synthesis, so the bitstream serves one network either
# way and only this packaging (a minute of Vivado) would be saved; they must all come
# from one export as a set (RAM sizes, the weight image size and network ID the engine
# checks in DDR), which a generic IP would leave to whoever instantiates it; and with the
# values in the IP the block design sets nothing on the engine cell, for either engine.

proc zq_fail {msg {code 2}} {
    puts stderr "package_rtl_ip.tcl: $msg"
    exit $code
}

if {[llength $argv] < 2} {
    zq_fail "usage: vivado -mode batch -source board/ip/package_rtl_ip.tcl -tclargs <export_dir> <ip_dir>"
}
set export_dir [file normalize [lindex $argv 0]]
set ip_dir     [file normalize [lindex $argv 1]]
set here       [file dirname [file normalize [info script]]]
set repo       [file normalize [file join $here .. ..]]
set rtl_dir    [file join $repo rtl]
set wrapper    [file join $here zq_top_ip.v]
set top        zq_top_ip
set part       xc7z020clg400-1
source [file join $repo board zq_spec.tcl]

foreach f [list [file join $export_dir rtl_params.svh] [file join $export_dir manifest.json]] {
    if {![file exists $f]} {
        zq_fail "$f missing: export the network first (make export NET=...)"
    }
}

# ---- values: the export's and the specification's macros, the wrapper's parameters -------
proc zq_read {path} {
    set fh [open $path r]
    set text [read $fh]
    close $fh
    return $text
}

# `define NAME VALUE lines of a header -> dict
proc zq_defines {path} {
    set d [dict create]
    foreach line [split [zq_read $path] "\n"] {
        if {[regexp {^\s*`define\s+(\w+)\s+(.*)$} $line -> name value]} {
            dict set d $name [string trim $value]
        }
    }
    return $d
}

# the wrapper's parameters in order: {name default-text ...} from its `module <top> #( ... ) (`
proc zq_wrapper_parameters {path top} {
    set text [zq_read $path]
    regsub -all {/\*.*?\*/} $text "" text
    regsub -all {//[^\n]*} $text "" text
    if {![regexp "module\\s+$top\\s*#\\s*\\((\[^()\]*)\\)\\s*\\(" $text -> plist]} {
        zq_fail "$path: no `module $top #(...)` parameter list"
    }
    set out {}
    foreach item [split $plist ","] {
        if {[string trim $item] eq ""} continue
        if {![regexp {^\s*parameter\s+(?:\[[^\]]*\]\s*)?(\w+)\s*=\s*(.*)$} $item -> name default]} {
            zq_fail "$path: cannot read the parameter declaration '[string trim $item]'"
        }
        lappend out $name [string trim $default]
    }
    return $out
}

# a default: a macro of the export or the specification (resolved), or a literal
proc zq_resolve {text defines what} {
    for {set depth 0} {[regexp {^`(\w+)$} $text -> macro]} {incr depth} {
        if {![dict exists $defines $macro] || $depth > 8} {
            zq_fail "$what: `$macro is defined neither in the export's rtl_params.svh nor in rtl/zq_spec.svh"
        }
        set text [dict get $defines $macro]
    }
    return $text
}

# a Verilog literal -> {format value bit-string-length} for ipx parameters: an integer as
# long; a sized hexadecimal literal as a bit string of its width ("0x..." when the width is
# a multiple of 4, else the quoted binary digits: the two forms Vivado writes itself)
proc zq_ip_value {literal what} {
    if {[regexp {^-?[0-9]+$} $literal]} {
        return [list long $literal 0]
    }
    if {![regexp {^([0-9]+)'[hH]([0-9a-fA-F_]+)$} $literal -> width hex]} {
        zq_fail "$what: cannot use '$literal' as an IP parameter value (an integer or a sized hex literal)"
    }
    set hex [string toupper [string map {_ ""} $hex]]
    set bits ""
    foreach digit [split $hex ""] {
        append bits [zq_bin4 $digit]
    }
    set bits [string trimleft $bits 0]
    if {[string length $bits] > $width} {
        zq_fail "$what: '$literal' does not fit $width bits"
    }
    set bits [string repeat 0 [expr {$width - [string length $bits]}]]$bits
    if {$width % 4 == 0} {
        set digits [expr {$width / 4}]
        set hex [string trimleft $hex 0]
        return [list bitString 0x[string repeat 0 [expr {$digits - [string length $hex]}]]$hex $width]
    }
    return [list bitString "\"$bits\"" $width]
}

proc zq_bin4 {digit} {
    set v [expr 0x$digit]
    return [expr {($v >> 3) & 1}][expr {($v >> 2) & 1}][expr {($v >> 1) & 1}][expr {$v & 1}]
}

set defines [zq_defines [file join $rtl_dir zq_spec.svh]]
set defines [dict merge $defines [zq_defines [file join $export_dir rtl_params.svh]]]
set params {}
foreach {name default} [zq_wrapper_parameters $wrapper $top] {
    set literal [zq_resolve $default $defines "parameter $name ($default)"]
    lappend params $name [zq_ip_value $literal "parameter $name ($default = $literal)"]
}
set net_id [lindex [dict get $params NET_ID] 1]

# ---- the IP's sources: copied into <ip_dir>/hdl, so that the repository stands alone ------
if {[file exists $ip_dir] && [llength [glob -nocomplain -directory $ip_dir *]] > 0 \
        && ![file exists [file join $ip_dir component.xml]]} {
    zq_fail "$ip_dir is not empty and holds no component.xml: not emptying it (give an IP directory)"
}
file delete -force $ip_dir
set hdl [file join $ip_dir hdl]
file mkdir $hdl
set sources [lsort [glob -directory $rtl_dir *.sv]]
foreach f [concat $sources [list $wrapper [file join $rtl_dir zq_spec.svh] [file join $export_dir rtl_params.svh]]] {
    file copy -force $f $hdl
}

set proj_dir [file join [file dirname $ip_dir] rtl_ip_project]
create_project -force zq_rtl_ip $proj_dir -part $part
add_files -norecurse [lsort [glob -directory $hdl *.sv *.v *.svh]]
set_property file_type {Verilog Header} [get_files -of_objects [current_fileset] *.svh]
set_property include_dirs [list $hdl] [current_fileset]
set_property top $top [current_fileset]
update_compile_order -fileset [current_fileset]

ipx::package_project -root_dir $ip_dir -vendor zynqflow.org -library rtl -taxonomy /zynqflow -force
set core [ipx::current_core]
set_property name zq_top $core
set_property version 1.0 $core
set_property display_name {zq_top (zynqflow RTL twin)} $core
set_property description "The zynqflow CNN engine, RTL twin (rtl/zq_top.sv), for network ID $net_id\
    (export $export_dir); spec version $zq_spec(spec_version)" $core
set_property vendor_display_name zynqflow $core
set_property supported_families {zynq Production} $core

# ---- bus interfaces: Vivado's inference removed, each declared with its port map ----------
ipx::remove_all_bus_interface $core
foreach mm [ipx::get_memory_maps -quiet -of_objects $core] {
    ipx::remove_memory_map [get_property NAME $mm] $core
}
ipx::remove_all_address_space $core

# a port of the wrapper (refused if Vivado did not find it there), and its width
proc zq_port {core name} {
    set p [ipx::get_ports -quiet $name -of_objects $core]
    if {[llength $p] != 1} {
        zq_fail "the wrapper (board/ip/zq_top_ip.v) has no port $name: it must pass every zq_top port through"
    }
    return $p
}
proc zq_width {core name} {
    set p [zq_port $core $name]
    set left [get_property SIZE_LEFT $p]
    if {$left eq ""} {
        return 1
    }
    return [expr {abs($left - [get_property SIZE_RIGHT $p]) + 1}]
}

# a bus interface: {logical physical ...} port map, {key value ...} bus parameters
proc zq_bus {core name mode abstraction bus maps params} {
    set bi [ipx::add_bus_interface $name $core]
    set_property abstraction_type_vlnv xilinx.com:$abstraction $bi
    set_property bus_type_vlnv xilinx.com:$bus $bi
    set_property interface_mode $mode $bi
    foreach {logical physical} $maps {
        zq_port $core $physical
        set_property physical_name $physical [ipx::add_port_map $logical $bi]
    }
    foreach {key value} $params {
        set_property value $value [ipx::add_bus_parameter $key $bi]
    }
    return $bi
}
# the port map of a bus whose ports are <prefix><LOGICAL>, as Vitis HLS names them
proc zq_prefixed {prefix logicals} {
    set maps {}
    foreach logical $logicals {
        lappend maps $logical $prefix$logical
    }
    return $maps
}

set lite_ports {AWADDR AWVALID AWREADY WDATA WSTRB WVALID WREADY BRESP BVALID BREADY
                ARADDR ARVALID ARREADY RDATA RRESP RVALID RREADY}
set axi_ports {AWID AWADDR AWLEN AWSIZE AWBURST AWLOCK AWCACHE AWPROT AWQOS AWREGION AWUSER AWVALID AWREADY
               WID WDATA WSTRB WLAST WUSER WVALID WREADY
               BID BRESP BUSER BVALID BREADY
               ARID ARADDR ARLEN ARSIZE ARBURST ARLOCK ARCACHE ARPROT ARQOS ARREGION ARUSER ARVALID ARREADY
               RID RDATA RRESP RLAST RUSER RVALID RREADY}
# no TSTRB: the AXI DMA on the other end has none (PG021 Port Descriptions)
set axis_ports {TDATA TVALID TREADY TKEEP TLAST}
# bursts in flight per port: zq_axi_rd / zq_axi_wr's MAX_OUT as zq_top instantiates them (8),
# what the HP ports accept for reads (UG585); the interconnect sizes its buffers from these
set outstanding 8

# the widths the specification fixes, checked against the wrapper's ports
foreach {port want} [list s_axi_control_WDATA 32 s_axi_control_AWADDR $zq_spec(ctrl_addr_bits) \
                         m_axi_wts_RDATA $zq_spec(axi_data_bits) m_axi_act_WDATA $zq_spec(axi_data_bits) \
                         m_axi_wts_ARADDR $zq_spec(axi_addr_bits) m_axi_act_AWADDR $zq_spec(axi_addr_bits) \
                         m_axi_act2_RDATA $zq_spec(axi_data_bits) m_axi_act2_ARADDR $zq_spec(axi_addr_bits) \
                         s_axis_in_TDATA $zq_spec(stream_bits) m_axis_out_TDATA $zq_spec(stream_bits)] {
    if {[zq_width $core $port] != $want} {
        zq_fail "$port is [zq_width $core $port] bits in the wrapper, the engine specification says $want"
    }
}

zq_bus $core s_axi_control slave interface:aximm_rtl:1.0 interface:aximm:1.0 [zq_prefixed s_axi_control_ $lite_ports] \
    [list PROTOCOL AXI4LITE DATA_WIDTH [zq_width $core s_axi_control_WDATA] \
          ADDR_WIDTH [zq_width $core s_axi_control_AWADDR] READ_WRITE_MODE READ_WRITE]
foreach {p mode} {wts READ_WRITE act READ_WRITE act2 READ_ONLY} {
    # m_axi_wts reads the weights and writes activation path 2's DDR tensors; m_axi_act2 only
    # reads (path 2): zq_top ties its write channels off (AWVALID = WVALID = 0)
    zq_bus $core m_axi_$p master interface:aximm_rtl:1.0 interface:aximm:1.0 [zq_prefixed m_axi_${p}_ $axi_ports] \
        [list PROTOCOL AXI4 DATA_WIDTH [zq_width $core m_axi_${p}_WDATA] ADDR_WIDTH [zq_width $core m_axi_${p}_AWADDR] \
              ID_WIDTH [zq_width $core m_axi_${p}_AWID] AWUSER_WIDTH [zq_width $core m_axi_${p}_AWUSER] \
              ARUSER_WIDTH [zq_width $core m_axi_${p}_ARUSER] WUSER_WIDTH [zq_width $core m_axi_${p}_WUSER] \
              RUSER_WIDTH [zq_width $core m_axi_${p}_RUSER] BUSER_WIDTH [zq_width $core m_axi_${p}_BUSER] \
              READ_WRITE_MODE $mode MAX_BURST_LENGTH $zq_spec(axi_burst_beats) \
              NUM_READ_OUTSTANDING $outstanding NUM_WRITE_OUTSTANDING $outstanding]
}
foreach {name mode} {s_axis_in slave m_axis_out master} {
    zq_bus $core $name $mode interface:axis_rtl:1.0 interface:axis:1.0 [zq_prefixed ${name}_ $axis_ports] \
        [list TDATA_NUM_BYTES [expr {[zq_width $core ${name}_TDATA] / 8}] HAS_TREADY 1 HAS_TKEEP 1 HAS_TSTRB 0 \
              HAS_TLAST 1 TUSER_WIDTH 0 TID_WIDTH 0 TDEST_WIDTH 0]
}
# the TSTRB the DMA does not drive: all bytes data bytes (the AXI4-Stream default); m_axis_out_TSTRB
# (all ones in zq_top) stays a pin outside the interface
set_property driver_value [expr {(1 << [zq_width $core s_axis_in_TSTRB]) - 1}] [zq_port $core s_axis_in_TSTRB]
zq_port $core m_axis_out_TSTRB
# the clock: the specification's (FCLK_CLK0 in board/pynq_z2.tcl), so that IP integrator's
# validation compares it with its source (FREQ_HZ, as Xilinx's own RTL-kernel packaging sets it)
zq_bus $core ap_clk slave signal:clock_rtl:1.0 signal:clock:1.0 {CLK ap_clk} \
    [list ASSOCIATED_BUSIF s_axi_control:m_axi_wts:m_axi_act:m_axi_act2:s_axis_in:m_axis_out ASSOCIATED_RESET ap_rst_n \
          FREQ_HZ [expr {$zq_spec(clock_mhz) * 1000000}]]
zq_bus $core ap_rst_n slave signal:reset_rtl:1.0 signal:reset:1.0 {RST ap_rst_n} [list POLARITY ACTIVE_LOW]
zq_bus $core interrupt master signal:interrupt_rtl:1.0 signal:interrupt:1.0 {INTERRUPT interrupt} \
    [list SENSITIVITY LEVEL_HIGH]

# the masters' address spaces: all 2^32 bytes (the block design maps the DDR window into them)
proc zq_size {bytes} {
    foreach {suffix shift} {E 60 P 50 T 40 G 30 M 20 K 10} {
        if {$bytes >= (1 << $shift) && $bytes % (1 << $shift) == 0} {
            return "[expr {$bytes >> $shift}]$suffix"
        }
    }
    return $bytes
}
foreach p {wts act act2} {
    set as [ipx::add_address_space m_axi_$p $core]
    set_property range [zq_size [expr {1 << $zq_spec(axi_addr_bits)}]] $as
    set_property width $zq_spec(axi_data_bits) $as
    set_property master_address_space_ref m_axi_$p [ipx::get_bus_interfaces m_axi_$p -of_objects $core]
}

# ---- s_axi_control's registers (the engine specification's), as the .hwh will list them -----
set mm [ipx::add_memory_map s_axi_control $core]
set_property slave_memory_map_ref s_axi_control [ipx::get_bus_interfaces s_axi_control -of_objects $core]
set block [ipx::add_address_block Reg $mm]
set_property range $zq_spec(ctrl_segment_bytes) $block
set_property width 32 $block
set_property usage register $block
set_property access read-write $block
foreach r $zq_regs(rtl) {
    lassign $r name offset access description fields
    set reg [ipx::add_register $name $block]
    set_property address_offset $offset $reg
    set_property size 32 $reg
    set_property access $access $reg
    set_property description $description $reg
    foreach f $fields {
        lassign $f fname bit width faccess fdescription
        set field [ipx::add_field $fname $reg]
        set_property bit_offset $bit $field
        set_property bit_width $width $field
        set_property access $faccess $field
        set_property description $fdescription $field
    }
}

# ---- parameters: the export's values, read-only (the IP is this network's) ---------------
foreach {name value} $params {
    lassign $value format literal length
    foreach kind {user hdl} {
        set obj [ipx::get_${kind}_parameters -quiet $name -of_objects $core]
        if {[llength $obj] != 1} {
            zq_fail "Vivado found no $kind parameter $name on $top (board/ip/zq_top_ip.v declares it)"
        }
        set_property value_format $format $obj
        if {$format eq "bitString"} {
            set_property value_bit_string_length $length $obj
        }
        set_property value $literal $obj
    }
    set_property enablement_value false [ipx::get_user_parameters $name -of_objects $core]
}

# the headers: include files of both file groups (the project's Verilog Header files)
foreach group [ipx::get_file_groups -of_objects $core] {
    foreach f [ipx::get_files -of_objects $group *.svh] {
        set_property is_include true $f
    }
}
ipx::create_xgui_files $core
ipx::update_checksums $core
if {[catch {ipx::check_integrity $core} msg]} {
    zq_fail "ipx::check_integrity failed: $msg"
}
ipx::save_core $core
close_project
puts "package_rtl_ip.tcl: IP zynqflow.org:rtl:zq_top:1.0 for network ID $net_id in $ip_dir"
exit 0
