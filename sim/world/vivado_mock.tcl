# Vivado's Tcl commands for a script run under tclsh: zynqflow.sim.world.vivado loads this after a
# preamble that sets the vendor reference (::CMD, ::IP, ::CLASS, ::IPX, ::BUS, ::FAMILIES, from
# sim/world/vivado_ref/*.toml) and the IP catalog of the engine (::IP additions), then sources the
# script (MOCK_SCRIPT) with argv = MOCK_ARGS.
#
# Every command the reference lists is a proc that checks its arguments against UG835 (options,
# their values, the number of arguments) and then acts on a model of the project: the block
# design's cells (an IP's VLNV, CONFIG.* names and values, its pins and interface pins in that
# configuration), nets, address spaces and segments; the IP packager's objects (ipx::). Anything
# else, an unknown command, option, property, parameter, pin, bus parameter or logical port, is a
# problem, reported with the script's file and line: a `PROBLEM` line in the log (MOCK_LOG) and on
# stderr. The script goes on (all problems are listed, none hides behind a `catch`); its exit code
# becomes 1 when it would have been 0. validate_bd_design adds what Vivado's validation checks:
# unconnected clock and reset inputs, clock frequencies that disagree with their source, AXI4-Stream
# interfaces whose signals differ, address segments a master reaches but does not map.
#
# The log: one line per command (its arguments as a Tcl list), `PROP <key>=<value>` per
# set_property -dict pair, `ADD`/`REMOVE`/`SET` lines for the IP packager's objects, and at the end
# the block design's state: `CELL`, `CFG`, `NET`, `INTF`, `EXT`, `ADDR` lines (tab-separated),
# then `EXIT <code>`.

set ::log [open $::env(MOCK_LOG) w]
set ::mock_file [file normalize [info script]]
set ::nproblems 0
rename exit real_exit
rename unknown tcl_unknown
proc env_or {name default} { expr {[info exists ::env($name)] ? $::env($name) : $default} }

# ---- problems, where they are ----------------------------------------------------------------
proc rel_path {path} {
    set root [env_or MOCK_ROOT ""]
    if {$root ne "" && [string first "$root/" $path] == 0} { return [string range $path [string length $root]+1 end] }
    return $path
}
# the script's line the command is on; inside a proc of the script, also the script's line that
# called it (the innermost frame outside any proc)
proc where {} {
    set w ""
    for {set l [info frame]} {$l > 0} {incr l -1} {
        set f [info frame $l]
        if {![dict exists $f file] || [dict get $f file] eq $::mock_file} continue
        set here "[rel_path [dict get $f file]]:[dict get $f line]"
        if {$w eq ""} {
            set w $here
            if {![dict exists $f proc]} { return $w }
        } elseif {![dict exists $f proc]} {
            return "$w (called at $here)"
        }
    }
    return [expr {$w eq "" ? "?" : $w}]
}
proc problem {msg} {
    incr ::nproblems
    set w [where]
    puts $::log "PROBLEM\t$w\t$msg"
    puts stderr "mock Vivado: $w: $msg"
}
proc src_of {table key} {
    if {[dict exists [set ::$table] $key src]} { return " ([dict get [set ::$table] $key src])" }
    return ""
}
proc in_ci {value list} {
    foreach v $list { if {[string equal -nocase $v $value]} { return 1 } }
    return 0
}

# ---- arguments against UG835 -------------------------------------------------------------------
proc vv_parse {cmd argl} {
    set spec [dict get $::CMD $cmd]
    set flags [dict get $spec flags]
    set options [dict get $spec options]
    set named [dict get $spec named]
    set all [concat $flags $options [lmap n $named {string cat - $n}]]
    set opts [dict create]
    set pos {}
    for {set i 0} {$i < [llength $argl]} {incr i} {
        set a [lindex $argl $i]
        if {[string index $a 0] eq "-" && [string length $a] > 1 && ![string is double -strict $a]} {
            set match [lsearch -all -inline -exact $all $a]
            if {$match eq ""} { set match [lsearch -all -inline -glob $all "[string map {* \\* ? \\? [ \\[} $a]*"] }
            if {[llength $match] == 0} {
                problem "$cmd: unknown option '$a' ($cmd takes [join $all {, }]; [dict get $spec src])"
                continue
            }
            if {[llength $match] > 1} {
                problem "$cmd: option '$a' is ambiguous: [join $match {, }]"
                continue
            }
            set o [lindex $match 0]
            if {$o in $flags} {
                dict set opts $o 1
                continue
            }
            if {$i + 1 >= [llength $argl]} {
                problem "$cmd: option $o needs a value"
                break
            }
            set v [lindex $argl [incr i]]
            if {[string range $o 1 end] in $named} {
                lappend pos $v
                continue
            }
            dict set opts $o $v
            if {[dict exists $spec values $o] && ![in_ci $v [dict get $spec values $o]]} {
                problem "$cmd $o '$v': not one of [join [dict get $spec values $o] {, }] ([dict get $spec src])"
            }
        } else {
            lappend pos $a
        }
    }
    lassign [dict get $spec args] lo hi
    if {[dict exists $opts -dict] && [dict exists $spec args_with_dict]} { lassign [dict get $spec args_with_dict] lo hi }
    set n [llength $pos]
    if {$n < $lo || ($hi >= 0 && $n > $hi)} {
        set want [expr {$hi < 0 ? "at least $lo" : ($lo == $hi ? "$lo" : "$lo to $hi")}]
        problem "$cmd: $n argument(s) [list $pos], UG835 gives $want ([dict get $spec src])"
    }
    return [list $opts $pos]
}

proc vv_call {cmd argl} {
    puts $::log [linsert $argl 0 $cmd]
    lassign [vv_parse $cmd $argl] opts pos
    return [vv_impl $cmd $opts $pos]
}
proc opt {opts name {default ""}} { expr {[dict exists $opts $name] ? [dict get $opts $name] : $default} }

foreach cmd [dict keys $::CMD] {
    if {[string match ipx::* $cmd]} { namespace eval ipx {} }
    proc ::$cmd {args} "vv_call [list $cmd] \$args"
}

proc unknown {args} {
    set cmd [lindex $args 0]
    if {[info exists ::auto_index($cmd)]} { return [uplevel 1 [list tcl_unknown {*}$args]] }
    puts $::log $args
    problem "unknown command '$cmd': not a Vivado command (UG835) nor an IP packager command this reference knows"
    return ""
}

proc exit {{code 0}} {
    vv_dump
    if {$code == 0 && $::nproblems > 0} { set code 1 }
    puts $::log "EXIT $code"
    close $::log
    real_exit $code
}

# ---- the project -------------------------------------------------------------------------------
set ::project ""
set ::project_dir ""
set ::files {}             ;# files added to the project (normalized)
set ::file_props [dict create]
set ::bd ""
set ::runs {synth_1 impl_1}
set ::top ""               ;# the sources fileset's top
proc need_project {cmd} {
    if {$::project eq ""} { problem "$cmd: no project is open (create_project first)" }
}
proc obj_class {o} {
    if {[string match core* $o]} { return ipx }
    if {$o eq $::project && $o ne ""} { return project }
    if {$o in {sources_1 sim_1 constrs_1 utils_1}} { return fileset }
    if {$o in $::files} { return file }
    if {$o in $::runs} { return run }
    if {$o in {setup_path hold_path}} { return timing_path }
    if {[dict exists $::cells $o]} { return bd_cell }
    if {[string match /*/SEG_* $o]} { return bd_addr_seg }
    return ""
}

# ---- the block design ----------------------------------------------------------------------------
set ::cells [dict create]         ;# name -> vlnv
set ::cfg [dict create]           ;# name -> {PARAM value ...} (upper-case names)
set ::nets {}                     ;# list of lists of "cell/pin"
set ::intf [dict create]          ;# "cell/intf" -> the other end
set ::ext {}                      ;# interface pins made external
set ::addr [dict create]          ;# "space|seg" -> {offset range}

proc cfg_get {cell param} {
    set P [string toupper $param]
    if {[dict exists $::cfg $cell $P]} { return [dict get $::cfg $cell $P] }
    set vlnv [dict get $::cells $cell]
    if {[dict exists $::IP $vlnv defaults $P]} { return [dict get $::IP $vlnv defaults $P] }
    return ""
}
proc when_ok {cell spec} {
    foreach c [dict get $spec when] {
        if {[regexp {^(\w+)>=(\d+)$} $c -> p n]} {
            if {![string is integer -strict [cfg_get $cell $p]] || [cfg_get $cell $p] < $n} { return 0 }
        } elseif {[regexp {^(\w+)=(.*)$} $c -> p v]} {
            if {![string equal -nocase [cfg_get $cell $p] $v]} { return 0 }
        }
    }
    return 1
}
# the items of one kind (pins intf_pins addr_spaces segments) a cell has in its configuration:
# name -> spec
proc cell_items {cell kind} {
    set out [dict create]
    set vlnv [dict get $::cells $cell]
    if {![dict exists $::IP $vlnv $kind]} { return $out }
    foreach spec [dict get $::IP $vlnv $kind] {
        if {![when_ok $cell $spec]} continue
        if {[dict get $spec count] ne ""} {
            set n [cfg_get $cell [dict get $spec count]]
            if {![string is integer -strict $n]} continue
            for {set i 0} {$i < $n} {incr i} {
                foreach p [dict get $spec names] { dict set out [format $p $i] $spec }
            }
        } else {
            foreach p [dict get $spec names] { dict set out $p $spec }
        }
    }
    return $out
}
proc all_items {cell kind} {
    # every item of any configuration (for a helpful message)
    set vlnv [dict get $::cells $cell]
    set out {}
    foreach spec [dict get $::IP $vlnv $kind] {
        foreach p [dict get $spec names] {
            lappend out [expr {[dict get $spec count] ne "" ? [string map {%02d NN %d N} $p] : $p}]
        }
    }
    return $out
}
# "cell/item" handles of a get_bd_* pattern; a name that matches nothing is a problem
proc bd_lookup {cmd kind patterns opts {what ""}} {
    set out {}
    foreach pat $patterns {
        set pat [string trimleft $pat /]
        if {![regexp {^([^/]+)/(.+)$} $pat -> cell item]} {
            if {![dict exists $opts -quiet]} { problem "$cmd: '$pat' names no cell/$what" }
            continue
        }
        if {![dict exists $::cells $cell]} {
            if {![dict exists $opts -quiet]} { problem "$cmd $pat: the block design has no cell '$cell'" }
            continue
        }
        set have [cell_items $cell $kind]
        set hit [lsearch -all -inline -glob [dict keys $have] $item]
        if {$hit eq ""} {
            if {![dict exists $opts -quiet]} {
                set vlnv [dict get $::cells $cell]
                set also [lsearch -inline -exact [all_items $cell $kind] $item]
                set why [expr {$also ne "" ? "$cell does not have it in its configuration (a parameter disables it)" \
                                            : "$vlnv has no $what '$item'"}]
                problem "$cmd $pat: $why; in this configuration $cell has [join [lsort [dict keys $have]] {, }][src_of IP $vlnv]"
            }
            continue
        }
        foreach h $hit { lappend out "$cell/$h" }
    }
    return $out
}
proc item_spec {handle kind} {
    regexp {^([^/]+)/(.+)$} $handle -> cell item
    return [dict get [cell_items $cell $kind] $item]
}

proc set_cell_config {cell key value} {
    set vlnv [dict get $::cells $cell]
    set P [string toupper [string range $key 7 end]]
    if {![in_ci $P [dict get $::IP $vlnv config]]} {
        problem "set_property $key on $cell: $vlnv has no parameter $P[src_of IP $vlnv]"
        return
    }
    if {[dict exists $::IP $vlnv values $P] && ![in_ci $value [dict get $::IP $vlnv values $P]]} {
        problem "set_property $key {$value} on $cell: not one of [join [dict get $::IP $vlnv values $P] {, }][src_of IP $vlnv]"
    }
    dict set ::cfg $cell $P $value
}

proc pin_dir {handle} {
    set spec [item_spec $handle pins]
    return [dict get $spec dir]
}
proc net_of {pin} {
    set i 0
    foreach n $::nets {
        if {$pin in $n} { return $i }
        incr i
    }
    return -1
}
proc connect_net {pins} {
    set merged {}
    set keep {}
    foreach n $::nets {
        set hit 0
        foreach p $pins { if {$p in $n} { set hit 1 } }
        if {$hit} { set merged [concat $merged $n] } else { lappend keep $n }
    }
    set net [lsort -unique [concat $merged $pins]]
    set drivers [lmap p $net { expr {[pin_dir $p] eq "O" ? $p : [continue]} }]
    if {[llength $drivers] > 1} {
        problem "connect_bd_net: [join $drivers { and }] are outputs, now on one net"
    }
    lappend keep $net
    set ::nets $keep
}

# the interface pins of masters that issue into an address space
proc space_intfs {space} {
    regexp {^([^/]+)/(.+)$} $space -> cell name
    set spec [dict get [cell_items $cell addr_spaces] $name]
    return [lmap i [dict get $spec intf] { string cat $cell/$i }]
}
# the slave segments the master interface pins reach through the interconnects
proc reachable {starts} {
    set seen {}
    set todo $starts
    set segs {}
    while {[llength $todo]} {
        set todo [lassign $todo p]
        if {$p in $seen || ![dict exists $::intf $p]} continue
        lappend seen $p
        set q [dict get $::intf $p]
        regexp {^([^/]+)/(.+)$} $q -> cell name
        set vlnv [dict get $::cells $cell]
        if {[dict exists $::IP $vlnv passthrough] && [dict get $::IP $vlnv passthrough]} {
            foreach m [dict keys [cell_items $cell intf_pins]] {
                if {[dict get [dict get [cell_items $cell intf_pins] $m] mode] eq "master"} { lappend todo $cell/$m }
            }
            continue
        }
        dict for {s spec} [cell_items $cell segments] {
            if {$name in [dict get $spec intf]} { lappend segs $cell/$s }
        }
    }
    return [lsort -unique $segs]
}
proc size_bytes {text} {
    if {[regexp {^(\d+)([KMGT]?)$} $text -> n u]} {
        return [expr {wide($n) << (10 * [lsearch {"" K M G T} $u])}]
    }
    if {[string is wide -strict $text]} { return [expr {wide($text)}] }
    return -1
}
proc map_segment {space seg offset range how} {
    set r [size_bytes $range]
    if {$r <= 0 || ($r & ($r - 1))} {
        problem "$how: range '$range' of $seg in $space is not a power of two"
    } elseif {$r < 4096} {
        problem "$how: range $range of $seg in $space is below 4K"
    } elseif {[expr {wide($offset) % $r}]} {
        problem "$how: $seg at [format 0x%08X $offset] in $space is not aligned to its range $range"
    }
    dict for {k v} $::addr {
        lassign [split $k |] sp sg
        lassign $v o rr
        if {$sp eq $space && $sg ne $seg && $offset < $o + $rr && $o < $offset + $r} {
            problem "$how: $seg at [format 0x%08X $offset] overlaps $sg at [format 0x%08X $o] in $space"
        }
    }
    dict set ::addr "$space|$seg" [list [expr {wide($offset)}] $r]
}
proc seg_handle {space seg} {
    regexp {^([^/]+)/(.+)/([^/]+)$} $seg -> cell intf block
    return "/$space/SEG_${cell}_$block"
}

# ---- the IP packager's objects ------------------------------------------------------------------
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
set ::props [dict create]          ;# handle -> {prop value}
set ::core_open 0
proc obj_add {h} {
    if {[dict exists $::objs $h]} {
        problem "'$h' already exists (Vivado: IP_Flow 19-1)"
        return $h
    }
    dict set ::objs $h 1
    puts $::log "ADD\t$h"
    return $h
}
proc obj_remove {h} {
    foreach k [dict keys $::objs] {
        if {$k eq $h || [string match "$h|*" $k]} { dict unset ::objs $k; dict unset ::props $k }
    }
    puts $::log "REMOVE\t$h"
}
proc obj_live {h} { expr {$h eq "core" ? $::core_open : [dict exists $::objs $h]} }
proc obj_kind {h} { expr {$h eq "core" ? "core" : [lindex [split [lindex [split $h |] end] :] 0]} }
proc obj_name {h} { lindex [split [lindex [split $h |] end] :] 1 }
proc obj_parent {h} { join [lrange [split $h |] 0 end-1] | }
proc obj_find {parent kind pattern} {
    set out {}
    set pre "$parent|$kind:"
    foreach k [dict keys $::objs] {
        if {[string first $pre $k] != 0} continue
        set name [string range $k [string length $pre] end]
        if {[string first "|" $name] < 0 && ($pattern eq "" || [string match $pattern $name])} { lappend out $k }
    }
    return $out
}
proc prop_get {h p} { expr {[dict exists $::props $h $p] ? [dict get $::props $h $p] : ""} }
# the bus definition (key of ::BUS) of a bus interface, "" when its VLNV is not set or unknown
proc bus_of {bi} {
    set v [prop_get $bi bus_type_vlnv]
    if {[dict exists $::BUS_BY_VLNV $v]} { return [dict get $::BUS_BY_VLNV $v] }
    return ""
}
# a child of a kind under a parent of the right kind
set ::ipx_parent {bus_interface core port_map bus_interface bus_parameter bus_interface address_space core
                  memory_map core address_block memory_map register address_block field register
                  user_parameter core hdl_parameter core port core file_group core file file_group}
proc ipx_check_name {kind name parent} {
    if {$kind eq "port_map"} {
        set bus [bus_of $parent]
        if {$bus ne "" && ![in_ci $name [dict get $::BUS $bus ports]]} {
            problem "ipx::add_port_map $name: [dict get $::BUS $bus abstraction] has no logical port $name ([join [dict get $::BUS $bus ports] {, }])[src_of BUS $bus]"
        }
    } elseif {$kind eq "bus_parameter"} {
        set bus [bus_of $parent]
        if {$bus ne "" && ![in_ci $name [dict get $::BUS $bus params]]} {
            problem "ipx::add_bus_parameter $name: the [dict get $::BUS $bus vlnv] bus has no parameter $name[src_of BUS $bus]"
        }
    }
}
proc ipx_set {h key value} {
    set kind [obj_kind $h]
    set k [string tolower $key]
    if {![dict exists $::IPX $kind]} { problem "set_property $key: no IP packager object '$h'"; return }
    if {![in_ci $k [dict get $::IPX $kind props]]} {
        problem "set_property $key on $kind [obj_name $h]: an IP packager $kind has no property $key[src_of IPX $kind]"
        return
    }
    if {[dict exists $::IPX $kind values $k] && ![in_ci $value [dict get $::IPX $kind values $k]]} {
        problem "set_property $key {$value} on $kind [obj_name $h]: not one of [join [dict get $::IPX $kind values $k] {, }][src_of IPX $kind]"
    }
    switch -- $kind/$k {
        core/supported_families {
            if {[llength $value] % 2} { problem "set_property supported_families {$value}: a list of <family> <life cycle> pairs" }
            foreach {fam life} $value {
                if {$fam ni $::FAMILIES} {
                    problem "set_property supported_families: unknown family '$fam' (Vivado's: [join $::FAMILIES {, }])[src_of REFSRC families]"
                }
                if {$life ne "" && $life ni $::LIFECYCLES} {
                    problem "set_property supported_families: life cycle '$life' of $fam is not one of [join $::LIFECYCLES {, }][src_of REFSRC families]"
                }
            }
        }
        bus_interface/bus_type_vlnv {
            if {![dict exists $::BUS_BY_VLNV $value]} { problem "set_property bus_type_vlnv $value: no such bus definition" }
        }
        bus_interface/abstraction_type_vlnv {
            if {![dict exists $::BUS_BY_ABS $value]} { problem "set_property abstraction_type_vlnv $value: no such abstraction definition" }
        }
        port_map/physical_name {
            if {![obj_live "core|port:$value"]} { problem "set_property physical_name $value: the IP has no port $value" }
        }
        bus_parameter/value {
            set bus [bus_of [obj_parent $h]]
            set P [string toupper [obj_name $h]]
            if {$bus ne "" && [dict exists $::BUS $bus values $P] && ![in_ci $value [dict get $::BUS $bus values $P]]} {
                problem "set_property value {$value} on bus parameter $P: not one of [join [dict get $::BUS $bus values $P] {, }][src_of BUS $bus]"
            }
        }
    }
    dict set ::props $h $k $value
    puts $::log "SET\t$h\t$k\t$value"
}
# what ipx::check_integrity / ipx::save_core find: references that name nothing, interfaces
# without a bus type, bus parameters and logical ports their bus type does not define
proc ipx_integrity {cmd} {
    foreach bi [obj_find core bus_interface ""] {
        set name [obj_name $bi]
        if {[bus_of $bi] eq ""} { problem "$cmd: bus interface $name has no known bus_type_vlnv"; continue }
        set bus [bus_of $bi]
        if {[prop_get $bi abstraction_type_vlnv] ne [dict get $::BUS $bus abstraction]} {
            problem "$cmd: bus interface $name: abstraction '[prop_get $bi abstraction_type_vlnv]' is not [dict get $::BUS $bus abstraction]"
        }
        foreach pm [obj_find $bi port_map ""] {
            if {![in_ci [obj_name $pm] [dict get $::BUS $bus ports]]} { problem "$cmd: bus interface $name maps [obj_name $pm], not a logical port of $bus" }
            if {![obj_live "core|port:[prop_get $pm physical_name]"]} { problem "$cmd: bus interface $name: [obj_name $pm] -> '[prop_get $pm physical_name]', no such port" }
        }
        foreach bp [obj_find $bi bus_parameter ""] {
            if {![in_ci [obj_name $bp] [dict get $::BUS $bus params]]} { problem "$cmd: bus interface $name: $bus has no bus parameter [obj_name $bp]" }
        }
        set as [prop_get $bi master_address_space_ref]
        if {$as ne "" && ![obj_live "core|address_space:$as"]} { problem "$cmd: bus interface $name: master_address_space_ref $as names no address space" }
        set mm [prop_get $bi slave_memory_map_ref]
        if {$mm ne "" && ![obj_live "core|memory_map:$mm"]} { problem "$cmd: bus interface $name: slave_memory_map_ref $mm names no memory map" }
    }
}
proc ipx_impl {cmd opts pos} {
    set verb [string range $cmd 5 end]
    switch -glob -- $verb {
        package_project {
            need_project $cmd
            if {$::core_open} { problem "$cmd: a core is already open" }
            set root [opt $opts -root_dir]
            if {$root eq ""} { problem "$cmd: no -root_dir" }
            set ::core_open 1
            puts $::log "ADD\tcore"
            foreach {k v} [list vendor [opt $opts -vendor] library [opt $opts -library] taxonomy [opt $opts -taxonomy] \
                               root_dir [file normalize $root]] {
                dict set ::props core $k $v
                puts $::log "SET\tcore\t$k\t$v"
            }
            # what Vivado infers from the top: ports, parameters, interfaces of its own
            dict for {p _} $::hdl_ports { obj_add "core|port:$p" }
            foreach p $::hdl_params { obj_add "core|user_parameter:$p"; obj_add "core|hdl_parameter:$p" }
            # (by the port names' prefixes, as its interface inference does: <if>_AWADDR, <if>_TDATA, ...)
            set found {}
            dict for {p _} $::hdl_ports {
                if {[regexp {^((?:m|s)_axis?_[A-Za-z0-9]+)_[A-Z]+$} $p -> b] && $b ni $found} { lappend found $b }
                if {$p in {ap_clk ap_rst_n}} { lappend found $p }
            }
            foreach b $found {
                obj_add "core|bus_interface:$b"
                if {[string match s_axi_* $b] && ![string match s_axis_* $b]} { obj_add "core|memory_map:$b" }
                if {[string match m_axi_* $b] && ![string match m_axis_* $b]} { obj_add "core|address_space:$b" }
            }
            # the project's sources in the two file groups it makes, by file name extension; the
            # packager marks nothing an include file (the script must: is_include)
            foreach g {xilinx_anylanguagesynthesis xilinx_anylanguagebehavioralsimulation} {
                set gh [obj_add "core|file_group:$g"]
                foreach f $::files {
                    set rel [expr {[string first "$root/" $f] == 0 ? [string range $f [string length $root]+1 end] : $f}]
                    set fh [obj_add "$gh|file:$rel"]
                    set type [dict get {.v verilogSource .sv systemVerilogSource .svh systemVerilogSource .vhd vhdlSource} \
                                  [file extension $f]]
                    dict set ::props $fh type $type
                    dict set ::props $fh is_include false
                    puts $::log "SET\t$fh\ttype\t$type"
                    puts $::log "SET\t$fh\tis_include\tfalse"
                }
            }
            return core
        }
        current_core {
            if {!$::core_open} { problem "$cmd: no IP is being packaged (ipx::package_project first)" }
            return core
        }
        remove_all_* {
            set kind [string range $verb 11 end]
            foreach h [obj_find [lindex $pos 0] $kind ""] { obj_remove $h }
            return ""
        }
        add_* {
            lassign $pos name parent
            set kind [string range $verb 4 end]
            if {![obj_live $parent]} { problem "$cmd $name: no object '$parent'"; return "" }
            if {[dict exists $::ipx_parent $kind] && [obj_kind $parent] ne [dict get $::ipx_parent $kind]} {
                problem "$cmd $name: a $kind belongs to a [dict get $::ipx_parent $kind], not to [obj_kind $parent] [obj_name $parent]"
            }
            ipx_check_name $kind $name $parent
            return [obj_add "$parent|$kind:$name"]
        }
        remove_* {
            lassign $pos name parent
            obj_remove "$parent|[string range $verb 7 end]:$name"
            return ""
        }
        get_*s {
            set parent [opt $opts -of_objects core]
            return [obj_find $parent [string range $verb 4 end-1] [lindex $pos 0]]
        }
        check_integrity - save_core {
            ipx_integrity $cmd
            if {$verb eq "save_core"} { mock_output [file join [prop_get core root_dir] component.xml] }
            return ""
        }
    }
    return ""
}

# ---- the commands --------------------------------------------------------------------------------
proc vv_impl {cmd opts pos} {
    if {[string match ipx::* $cmd]} { return [ipx_impl $cmd $opts $pos] }
    switch -- $cmd {
        create_project {
            set ::project [lindex $pos 0]
            set ::project_dir [file normalize [expr {[llength $pos] > 1 ? [lindex $pos 1] : "."}]]
            set part [opt $opts -part]
            if {$part ne "" && ![in_ci $part $::PARTS]} {
                problem "create_project -part $part: not a part this reference knows ([join $::PARTS {, }])"
            }
            return $::project
        }
        close_project { set ::project ""; return "" }
        current_project { need_project $cmd; return $::project }
        current_fileset {
            need_project $cmd
            if {[dict exists $opts -simset]} { return sim_1 }
            if {[dict exists $opts -constrset]} { return constrs_1 }
            return sources_1
        }
        add_files {
            need_project $cmd
            set out {}
            foreach f [concat {*}$pos] {
                set f [file normalize $f]
                if {![file exists $f]} { problem "add_files: $f does not exist" }
                if {$f ni $::files} { lappend ::files $f }
                lappend out $f
            }
            return $out
        }
        get_files {
            set pool $::files
            if {$::bd ne ""} { lappend pool $::bd_file }
            if {[llength $pos] == 0} { return $pool }
            set out {}
            foreach pat $pos {
                foreach f $pool {
                    if {[string match $pat $f] || [string match $pat [file tail $f]]} { lappend out $f }
                }
            }
            return [lsort -unique $out]
        }
        update_compile_order {
            set fs [opt $opts -fileset sources_1]
            if {$fs ni {sources_1 sim_1}} { problem "update_compile_order -fileset $fs: no such fileset" }
            return ""
        }
        update_ip_catalog { return "" }
        get_ipdefs { return [env_or MOCK_IPDEF "zynqflow.org:hls:zq_top:1.0"] }
        get_board_parts { return [env_or MOCK_BOARD ""] }
        set_property {
            set objs [lindex $pos end]
            if {[dict exists $opts -dict]} {
                set pairs [dict get $opts -dict]
                foreach {k v} $pairs { puts $::log "PROP $k=$v" }
            } else {
                set pairs [lrange $pos 0 1]
            }
            if {[llength $objs] == 0} {
                problem "set_property [lindex $pairs 0]: no object (Vivado: Common 17-55 'set_property' expects at least one object)"
                return ""
            }
            foreach o $objs {
                set class [obj_class $o]
                foreach {k v} $pairs {
                    if {$class eq "ipx"} {
                        if {![obj_live $o]} { problem "set_property $k: no object '$o'"; continue }
                        ipx_set $o $k $v
                        continue
                    }
                    puts $::log "SET\t$o\t[string tolower $k]\t$v"
                    if {$class eq ""} { problem "set_property $k: '$o' is no object of the design"; continue }
                    if {$class eq "bd_cell" && [string match -nocase CONFIG.* $k]} { set_cell_config $o $k $v; continue }
                    if {![in_ci $k [dict get $::CLASS $class props]]} {
                        problem "set_property $k on $class $o: a $class has no property $k[src_of CLASS $class]"
                        continue
                    }
                    set K [string toupper $k]
                    if {[dict exists $::CLASS $class values $K] && ![in_ci $v [dict get $::CLASS $class values $K]]} {
                        problem "set_property $k {$v} on $class $o: not one of [join [dict get $::CLASS $class values $K] {, }][src_of CLASS $class]"
                    }
                    if {$class eq "file"} { dict set ::file_props $o $K $v }
                    if {$class eq "fileset" && $K eq "TOP"} { set ::top $v }
                    if {$class eq "bd_addr_seg" && $K eq "OFFSET"} {
                        foreach key [dict keys $::addr] {
                            lassign [split $key |] sp sg
                            if {[seg_handle $sp $sg] eq $o} {
                                set r [lindex [dict get $::addr $key] 1]
                                dict unset ::addr $key
                                map_segment $sp $sg $v $r "set_property offset"
                            }
                        }
                    }
                }
            }
            return ""
        }
        get_property {
            lassign $pos key obj
            set K [string toupper $key]
            set class [obj_class $obj]
            if {$class eq "ipx"} {
                if {$K eq "NAME"} { return [obj_name $obj] }
                if {$K in {SIZE_LEFT SIZE_RIGHT} && [regexp {^core\|port:(.+)$} $obj -> p]} {
                    lassign [dict get $::hdl_ports $p] dir left right
                    return [expr {$K eq "SIZE_LEFT" ? $left : $right}]
                }
                return [prop_get $obj [string tolower $key]]
            }
            if {$class eq ""} { problem "get_property $key: '$obj' is no object of the design"; return "" }
            if {$class eq "bd_cell" && [string match CONFIG.* $K]} { return [cfg_get $obj [string range $K 7 end]] }
            if {![in_ci $K [dict get $::CLASS $class props]]} {
                problem "get_property $key on $class $obj: a $class has no property $key[src_of CLASS $class]"
                return ""
            }
            switch -- $K {
                PROGRESS { return "100%" }
                DIRECTORY { return [run_dir $obj] }
                SLACK { return [expr {$obj eq "hold_path" ? [env_or MOCK_WHS 0.05] : [env_or MOCK_WNS 0.5]}] }
                NAME { return $obj }
            }
            return ""
        }
        create_bd_design {
            need_project $cmd
            set ::bd [lindex $pos 0]
            set ::bd_file [file join $::project_dir $::project.srcs sources_1 bd $::bd $::bd.bd]
            return $::bd
        }
        create_bd_cell {
            set name [lindex $pos 0]
            set vlnv [opt $opts -vlnv]
            if {$::bd eq ""} { problem "create_bd_cell: no block design (create_bd_design first)" }
            if {![string equal -nocase [opt $opts -type IP] ip]} { problem "create_bd_cell -type [opt $opts -type]: only IP cells are modelled"; return $name }
            if {![dict exists $::IP $vlnv]} {
                problem "create_bd_cell -vlnv $vlnv: not in the IP catalog (known: [join [lsort [dict keys $::IP]] {, }])"
                return $name
            }
            if {[dict exists $::cells $name]} { problem "create_bd_cell: a cell '$name' exists already" }
            dict set ::cells $name $vlnv
            dict set ::cfg $name [dict create]
            return $name
        }
        apply_bd_automation {
            set rule [opt $opts -rule]
            if {$rule ni $::RULES} { problem "apply_bd_automation -rule $rule: not a rule this reference knows ([join $::RULES {, }])" }
            foreach {k v} [opt $opts -config] {
                if {$k ni {make_external apply_board_preset Master Slave}} {
                    problem "apply_bd_automation -config: $rule takes make_external, apply_board_preset, Master, Slave, not '$k'"
                }
            }
            foreach o $pos {
                if {![dict exists $::cells $o]} { problem "apply_bd_automation: no cell '$o'"; continue }
                foreach p {DDR FIXED_IO} { lappend ::ext "$o/$p" }
            }
            return ""
        }
        make_bd_intf_pins_external {
            foreach o [concat {*}$pos] {
                if {$o eq ""} { problem "make_bd_intf_pins_external: no object"; continue }
                lappend ::ext $o
            }
            return ""
        }
        get_bd_cells {
            set out {}
            foreach pat $pos {
                set hit [lsearch -all -inline -glob [dict keys $::cells] [string trimleft $pat /]]
                if {$hit eq "" && ![dict exists $opts -quiet]} { problem "get_bd_cells $pat: no such cell" }
                lappend out {*}$hit
            }
            return $out
        }
        get_bd_pins { return [bd_lookup $cmd pins $pos $opts pin] }
        get_bd_intf_pins { return [bd_lookup $cmd intf_pins $pos $opts "interface pin"] }
        get_bd_addr_spaces { return [bd_lookup $cmd addr_spaces $pos $opts "address space"] }
        get_bd_addr_segs {
            if {[dict exists $opts -of_objects]} {
                set out {}
                set filt [opt $opts -filter]
                foreach sp [dict get $opts -of_objects] {
                    foreach key [dict keys $::addr] {
                        lassign [split $key |] s sg
                        if {$s ne $sp} continue
                        set h [seg_handle $s $sg]
                        if {$filt ne "" && [regexp {NAME\s*=~\s*(\S+)} $filt -> g] && ![string match $g [file tail $h]]} continue
                        lappend out $h
                    }
                }
                return $out
            }
            return [bd_lookup $cmd segments $pos $opts "address segment"]
        }
        connect_bd_net {
            set pins [concat {*}$pos]
            foreach p $pins {
                if {$p eq ""} continue
                if {[catch {item_spec $p pins}]} { problem "connect_bd_net: '$p' is not a pin"; return "" }
            }
            if {[llength $pins] < 2 || "" in $pins} {
                problem "connect_bd_net: [llength [lsearch -all -inline -not -exact $pins {}]] object(s): a net needs two pins ([dict get $::CMD $cmd src])"
                return ""
            }
            connect_net $pins
            return ""
        }
        connect_bd_intf_net {
            lassign $pos a b
            if {$a eq "" || $b eq ""} { problem "connect_bd_intf_net: an object is empty"; return "" }
            foreach p [list $a $b] {
                if {[catch {item_spec $p intf_pins}]} { problem "connect_bd_intf_net: '$p' is not an interface pin"; return "" }
                if {[dict exists $::intf $p]} { problem "connect_bd_intf_net: $p is connected already (to [dict get $::intf $p])" }
            }
            set sa [item_spec $a intf_pins]
            set sb [item_spec $b intf_pins]
            if {[lsort [list [dict get $sa mode] [dict get $sb mode]]] ne {master slave}} {
                problem "connect_bd_intf_net $a $b: a [dict get $sa mode] and a [dict get $sb mode] (one master, one slave)"
            }
            if {[dict get $sa bus] ne [dict get $sb bus]} {
                problem "connect_bd_intf_net $a $b: a [dict get $sa bus] and a [dict get $sb bus] interface"
            }
            dict set ::intf $a $b
            dict set ::intf $b $a
            return ""
        }
        assign_bd_address {
            if {[llength $pos] == 0 && ![dict exists $opts -target_address_space]} {
                # every unmapped segment a master reaches, as Vivado's automatic assignment does
                foreach cell [dict keys $::cells] {
                    foreach s [dict keys [cell_items $cell addr_spaces]] {
                        set sp $cell/$s
                        set next [expr {0x40000000}]
                        foreach seg [reachable [space_intfs $sp]] {
                            if {[dict exists $::addr "$sp|$seg"]} continue
                            set spec [item_spec $seg segments]
                            if {[dict get $spec range] ne ""} {
                                map_segment $sp $seg [dict get $spec offset] [dict get $spec range] "assign_bd_address"
                                puts $::log "AUTO\t$sp\t$seg"
                                continue
                            }
                            while {1} {
                                set clash 0
                                dict for {k v} $::addr {
                                    lassign [split $k |] s2
                                    lassign $v o r
                                    if {$s2 eq $sp && $next < $o + $r && $o < $next + 65536} { set clash 1 }
                                }
                                if {!$clash} break
                                incr next 65536
                            }
                            map_segment $sp $seg $next 65536 "assign_bd_address"
                            puts $::log "AUTO\t$sp\t$seg"
                        }
                    }
                }
                return ""
            }
            set sp [opt $opts -target_address_space]
            set off [opt $opts -offset 0]
            set rng [opt $opts -range 4K]
            foreach seg [concat {*}$pos] {
                if {$sp eq "" || $seg eq ""} { problem "assign_bd_address: no address space or segment"; continue }
                if {$seg ni [reachable [space_intfs $sp]]} {
                    problem "assign_bd_address: $sp does not reach $seg (its masters are not connected to it)"
                }
                if {[dict exists $::addr "$sp|$seg"] && ![dict exists $opts -force]} {
                    problem "assign_bd_address: $seg is mapped in $sp already (-force to replace)"
                }
                dict unset ::addr "$sp|$seg"
                map_segment $sp $seg $off $rng "assign_bd_address"
            }
            return ""
        }
        validate_bd_design { vv_validate; return "" }
        save_bd_design { return "" }
        generate_target {
            # a block design's targets include its hardware handoff (the .hwh pynq reads)
            foreach f [concat {*}[lindex $pos 1]] {
                if {[file extension $f] eq ".bd" && $::bd ne ""} {
                    mock_output [file join $::project_dir $::project.gen sources_1 bd $::bd hw_handoff $::bd.hwh]
                }
            }
            return ""
        }
        make_wrapper {
            # Vivado writes the wrapper into the project's generated sources
            set f [file join $::project_dir $::project.gen sources_1 bd $::bd hdl ${::bd}_wrapper.v]
            file mkdir [file dirname $f]
            close [open $f w]
            return $f
        }
        launch_runs {
            # what the run leaves in its directory: the bitstream of the fileset's top
            if {"impl_1" in $pos && [opt $opts -to_step] eq "write_bitstream"} {
                if {$::top eq ""} { problem "launch_runs impl_1: the sources fileset has no top" }
                mock_output [file join [run_dir impl_1] $::top.bit]
            }
            return ""
        }
        wait_on_run - wait_on_runs { return "" }
        get_runs {
            foreach r $pos { if {$r ni $::runs} { problem "get_runs $r: no such run" } }
            return $pos
        }
        open_run { return "" }
        get_timing_paths { return [expr {[dict exists $opts -hold] ? "hold_path" : "setup_path"}] }
        report_timing_summary - report_utilization {
            set text [expr {$cmd eq "report_utilization" ? [env_or MOCK_UTIL ""] : ""}]
            if {[dict exists $opts -file]} { mock_output [dict get $opts -file] $text }
            return [expr {[dict exists $opts -return_string] ? $text : ""}]
        }
    }
    return ""
}

# a file Vivado would write, as a placeholder (kept when it exists: a test's own stands in)
proc mock_output {path {text ""}} {
    if {[file exists $path]} return
    file mkdir [file dirname $path]
    set fh [open $path w]
    puts -nonewline $fh [expr {$text ne "" ? $text : "written by the Vivado mock (sim/world/vivado_mock.tcl), not by Vivado\n"}]
    close $fh
}
proc run_dir {run} {
    if {[info exists ::env(MOCK_RUN_DIR)]} { return $::env(MOCK_RUN_DIR) }
    return [file join $::project_dir $::project.runs $run]
}

# ---- validate_bd_design: what Vivado's validation reports ---------------------------------------------
proc vv_validate {} {
    # clock and reset inputs left open (BD 41-758, BD 41-1348)
    dict for {cell vlnv} $::cells {
        dict for {p spec} [cell_items $cell pins] {
            set req [expr {[dict get $spec clock] || [dict get $spec reset] || [dict get $spec required]}]
            if {$req && [dict get $spec dir] eq "I" && [net_of $cell/$p] < 0} {
                problem "validate_bd_design: $cell/$p ([expr {[dict get $spec clock] ? "clock" : "reset"}] input) is not connected[src_of IP $vlnv]"
            }
        }
    }
    # a clock input's FREQ_HZ against its source (BD 41-238)
    foreach net $::nets {
        set src ""
        foreach p $net {
            set spec [item_spec $p pins]
            if {[dict get $spec freq_mhz] ne ""} {
                regexp {^([^/]+)/} $p -> c
                set src [list $p [expr {round([cfg_get $c [dict get $spec freq_mhz]] * 1e6)}]]
            }
        }
        if {$src eq ""} continue
        lassign $src sp hz
        foreach p $net {
            set f [dict get [item_spec $p pins] freq_hz]
            if {$f ne "" && $f != $hz} {
                problem "validate_bd_design: FREQ_HZ does not match between $p ($f) and $sp ($hz) (Vivado: BD 41-238)"
            }
        }
    }
    # AXI4-Stream: data width, and a slave input the master does not drive (BD 41-237)
    dict for {a b} $::intf {
        set sa [item_spec $a intf_pins]
        set sb [item_spec $b intf_pins]
        if {[dict get $sa bus] ne "axis" || [dict get $sa mode] ne "master"} continue
        regexp {^([^/]+)/} $a -> ca
        regexp {^([^/]+)/} $b -> cb
        set wa [axis_bytes $ca $sa]
        set wb [axis_bytes $cb $sb]
        if {$wa ne "" && $wb ne "" && $wa != $wb} {
            problem "validate_bd_design: TDATA_NUM_BYTES does not match between $a ($wa) and $b ($wb)"
        }
        foreach sig {TKEEP TSTRB TLAST} {
            set ha [dict get $sa has $sig]
            set hb [dict get $sb has $sig]
            if {$hb eq "1" && $ha eq "0" && ![dict exists [dict get $sb driven] $sig]} {
                problem "validate_bd_design: $b has $sig (HAS_$sig 1) but $a has none (HAS_$sig 0): the input is left undriven (no driver value)"
            }
        }
    }
    # segments a master reaches but that are not mapped (BD 41-1356)
    dict for {cell vlnv} $::cells {
        foreach s [dict keys [cell_items $cell addr_spaces]] {
            foreach seg [reachable [space_intfs $cell/$s]] {
                if {![dict exists $::addr "$cell/$s|$seg"]} {
                    problem "validate_bd_design: $seg is reachable from $cell/$s but not mapped in it (Vivado: BD 41-1356)"
                }
            }
        }
    }
}
proc axis_bytes {cell spec} {
    set e [dict get $spec tdata_bytes]
    if {$e eq ""} { return "" }
    if {[string is integer -strict $e]} { return $e }
    if {[regexp {^(\w+)/8$} $e -> p]} { return [expr {[cfg_get $cell $p] / 8}] }
    return ""
}

# ---- the state, for the checks ----------------------------------------------------------------------
proc vv_dump {} {
    dict for {c v} $::cells {
        puts $::log "CELL\t$c\t$v"
        dict for {k val} [dict get $::cfg $c] { puts $::log "CFG\t$c\t$k\t$val" }
    }
    foreach n $::nets { puts $::log "NET\t[join $n \t]" }
    dict for {a b} $::intf { if {$a < $b} { puts $::log "INTF\t$a\t$b" } }
    foreach e $::ext { puts $::log "EXT\t$e" }
    dict for {k v} $::addr {
        lassign [split $k |] sp sg
        lassign $v o r
        puts $::log "ADDR\t$sp\t$sg\t[format 0x%08X $o]\t$r"
    }
    dict for {f ps} $::file_props { dict for {k v} $ps { puts $::log "FILEPROP\t$f\t$k\t$v" } }
}

set argv $::env(MOCK_ARGS)
set ::argc [llength $argv]
if {[catch {uplevel #0 [list source $::env(MOCK_SCRIPT)]} msg erropts]} {
    set line [expr {[dict exists $erropts -errorline] ? [dict get $erropts -errorline] : "?"}]
    incr ::nproblems
    puts $::log "PROBLEM\t[file tail $::env(MOCK_SCRIPT)]:?\tTcl error: $msg"
    puts stderr "mock Vivado: Tcl error: $msg\n[dict get $erropts -errorinfo]"
    exit 1
}
exit 0
