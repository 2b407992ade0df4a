# Vivado block design and bitstream for the zq_top engine on a PYNQ-Z2
# (xc7z020clg400-1), either engine. Normally run by board/bitstream.sh:
#
#   vivado -mode batch -source board/pynq_z2.tcl -tclargs <ip_repo> <out_dir> <net> [jobs] [engine]
#
# ip_repo: the engine's IP for <net> (the directory holding component.xml):
#          engine rtl: the RTL twin packaged by board/ip/package_rtl_ip.tcl
#                      (build/<net>/rtl_ip, zynqflow.org:rtl:zq_top:1.0);
#          engine hls: the Vitis HLS IP export (build/<net>/hls/zq_hls/solution1/impl/ip,
#                      `make hls`, zynqflow.org:hls:zq_top:1.0)
# out_dir: Vivado project and results (<out_dir>/<net>_pynq-z2.bit and .hwh)
# engine:  rtl or hls; must be the IP's (its VLNV library); default: the IP's
#
# Written for Vivado 2023.2 (UG994, Designing IP Subsystems Using IP Integrator), not run
# here: tests/test_board_scripts.py runs it under tclsh with Vivado's commands stubbed.
#
# Both engines are wired identically: the same cell name (zq_top_0), interfaces
# (s_axi_control, m_axi_wts, m_axi_act, s_axis_in, m_axis_out), pins (ap_clk, ap_rst_n,
# interrupt), HP ports, protocol converters, DMA, interrupt controller and address map. Only
# the names of the engine's address spaces differ, and each is mapped by its own:
# Vitis HLS names them Data_m_axi_wts / Data_m_axi_act, the IP packager after the
# interfaces, m_axi_wts / m_axi_act.
#
# Design (block design "zq_bd"):
#
#   processing_system7 ps7 (PYNQ-Z2 DDR3/MIO settings, FCLK_CLK0 = 100 MHz)
#     M_AXI_GP0 -> ctrl_ic (AXI interconnect) -> zq_top_0/s_axi_control  (0x4000_0000, 64 KiB)
#                                             -> axi_dma_0/S_AXI_LITE    (0x4040_0000)
#                                             -> axi_intc_0/s_axi        (0x4180_0000)
#   zq_top_0's AXI4 masters (64-bit), each through its own AXI protocol converter (AXI4 -> AXI3,
#   TRANSLATION_MODE 0: the engines' bursts never exceed 16 beats, so no splitting logic; PG059) to
#   a PS7 high-performance port in 64-bit mode:
#     m_axi_wts (the weight image; path 2's DDR-tensor writes)   -> wts_pc  -> ps7/S_AXI_HP0
#     m_axi_act (the activation scratch: path 1, reads, writes)  -> act_pc  -> ps7/S_AXI_HP2
#     m_axi_act2 (path 2's DDR-tensor reads)                     -> act2_pc -> ps7/S_AXI_HP3
#     all see the DDR at 0x0000_0000, 512 MiB (the engine's window: spec.engine.DDR_WINDOW_BYTES)
#   axi_dma_0 (simple mode, no scatter-gather, 32-bit streams, 23-bit length)
#     M_AXIS_MM2S -> zq_top_0/s_axis_in      zq_top_0/m_axis_out -> S_AXIS_S2MM
#     M_AXI_MM2S, M_AXI_S2MM -> mem_sc (SmartConnect) -> ps7/S_AXI_HP1 (DDR)
#   interrupts: xlconcat irq_concat {zq_top_0/interrupt, mm2s_introut, s2mm_introut}
#     -> axi_intc_0/intr (AXI interrupt controller on GP0, 0x4180_0000), axi_intc_0/irq -> ps7/IRQ_F2P[0],
#     as PYNQ-Z2's base.tcl does: pynq finds interrupt pins only behind an axi_intc (Interrupt, wait_async)
#   one clock (FCLK_CLK0) and one reset (proc_sys_reset from FCLK_RESET0_N) for everything
#
# The PS settings: the TUL PYNQ-Z2 board preset when its board files are
# installed (tul.com.tw:pynq-z2:part0:*), else the explicit clock, DDR3 and MIO
# settings below, copied from the processing_system7 of PYNQ's own PYNQ-Z2 base
# overlay (Xilinx/PYNQ, boards/Pynq-Z2/base/base.tcl, v2.61 for Vivado 2020.1,
# commit ee6bd005b32d4e75e9f056281e86d3d2d0dc8530): DDR3 "Custom" part, 16-bit
# bus, 525 MHz, DDR3_1066F timings (CL 7, CWL 6, tRCD = tRP = 13.125 ns) and the
# board's trace delays; QSPI (MIO 1-6, 8), UART0 (14-15), ENET0 (16-27, MDIO
# 52-53, no reset pin), USB0 (28-39, no reset pin), SD0 (40-45, CD 47), I2C0
# (50-51); APU 650 MHz from a 50 MHz crystal. Not copied: base.tcl's PL-facing
# settings (EMIO GPIO and I2C1, FCLK1-3, GP1 and the other HP ports), which are
# that design's; this design's own are set after the preset.
#
# Timing: after implementation the worst setup (WNS) and hold (WHS) slack and the
# utilization (LUT, FF, BRAM, DSP) are printed and written to <out_dir>/timing.txt
# and utilization.txt (full reports: timing_summary.rpt, utilization.rpt). A
# negative slack fails the build (exit 3) and no <net>_pynq-z2.bit/.hwh is left
# in <out_dir>: a bitstream that misses timing computes wrong results on the board.

if {[llength $argv] < 3} {
    puts stderr "usage: vivado -mode batch -source pynq_z2.tcl -tclargs <ip_repo> <out_dir> <net> \[jobs\] \[rtl|hls\]"
    exit 2
}
set ip_repo [file normalize [lindex $argv 0]]
set out_dir [file normalize [lindex $argv 1]]
set net     [lindex $argv 2]
set jobs    [expr {[llength $argv] > 3 ? [lindex $argv 3] : 2}]
set engine  [lindex $argv 4]
set part    xc7z020clg400-1
set bd      zq_bd
# the engine specification (generated from spec/engine.py): the clock, the DDR window, the register maps
source [file join [file dirname [file normalize [info script]]] zq_spec.tcl]
set fclk_mhz $zq_spec(clock_mhz)
# each engine's address spaces of its DDR masters, by the names its IP gives them (both engines'
# second activation path reads through m_axi_act2)
array set zq_spaces {
    hls {wts Data_m_axi_wts act Data_m_axi_act act2 Data_m_axi_act2}
    rtl {wts m_axi_wts act m_axi_act act2 m_axi_act2}
}
# the engine's masters and the PS7 high-performance ports they reach
array set zq_hp {wts HP0 act HP2 act2 HP3}
# the control registers: one 64 KiB segment (the address block "Reg" of both IPs)
set zq_ctrl_base  0x40000000
set zq_ctrl_bytes $zq_spec(ctrl_segment_bytes)

if {$engine ni {"" rtl hls}} {
    puts stderr "pynq_z2.tcl: engine '$engine': rtl (the RTL twin) or hls (the Vitis HLS engine)"
    exit 2
}
if {![file exists [file join $ip_repo component.xml]]} {
    puts stderr "pynq_z2.tcl: $ip_repo has no component.xml (the zq_top IP: board/ip/package_rtl_ip.tcl for the\
        RTL twin, `make hls` for the HLS engine; board/bitstream.sh makes the one it needs)"
    exit 2
}
file mkdir $out_dir
create_project -force zq_pynq_z2 [file join $out_dir project] -part $part

# board files, if installed
set board_parts [get_board_parts -quiet -latest_file_version {*pynq-z2*}]
if {[llength $board_parts] > 0} {
    set_property board_part [lindex $board_parts 0] [current_project]
    puts "pynq_z2.tcl: board part [lindex $board_parts 0]"
} else {
    puts "pynq_z2.tcl: no PYNQ-Z2 board files installed; using explicit PS7 settings"
}

set_property ip_repo_paths [list $ip_repo] [current_project]
update_ip_catalog -rebuild
set zq_vlnv [lindex [get_ipdefs -filter {NAME == zq_top}] 0]
if {$zq_vlnv eq ""} {
    puts stderr "pynq_z2.tcl: no IP named zq_top in $ip_repo"
    exit 2
}
set zq_library [lindex [split $zq_vlnv :] 1]
if {$zq_library ni {rtl hls}} {
    puts stderr "pynq_z2.tcl: $zq_vlnv in $ip_repo is neither the RTL twin (zynqflow.org:rtl:zq_top) nor the HLS\
        engine (zynqflow.org:hls:zq_top)"
    exit 2
}
if {$engine eq ""} {
    set engine $zq_library
} elseif {$engine ne $zq_library} {
    puts stderr "pynq_z2.tcl: engine $engine asked for, but the IP in $ip_repo is the $zq_library engine's ($zq_vlnv)"
    exit 2
}
puts "pynq_z2.tcl: accelerator IP $zq_vlnv (engine $engine)"
if {$zq_spec(regmap_bytes,$engine) > $zq_ctrl_bytes} {
    puts stderr "pynq_z2.tcl: the $engine register map ($zq_spec(regmap_bytes,$engine) bytes) does not fit the\
        $zq_ctrl_bytes-byte control segment"
    exit 2
}

create_bd_design $bd

# ---- processing system ------------------------------------------------------------
set ps7 [create_bd_cell -type ip -vlnv xilinx.com:ip:processing_system7:5.5 ps7]
if {[llength $board_parts] > 0} {
    apply_bd_automation -rule xilinx.com:bd_rule:processing_system7 \
        -config {make_external "FIXED_IO, DDR" apply_board_preset "1" Master "Disable" Slave "Disable"} $ps7
} else {
    make_bd_intf_pins_external [get_bd_intf_pins ps7/DDR]
    make_bd_intf_pins_external [get_bd_intf_pins ps7/FIXED_IO]
    set_property -dict [list \
        CONFIG.PCW_CRYSTAL_PERIPHERAL_FREQMHZ {50} \
        CONFIG.PCW_APU_PERIPHERAL_FREQMHZ {650} \
        CONFIG.PCW_PRESET_BANK0_VOLTAGE {LVCMOS 3.3V} \
        CONFIG.PCW_PRESET_BANK1_VOLTAGE {LVCMOS 1.8V} \
        CONFIG.PCW_UIPARAM_DDR_ENABLE {1} \
        CONFIG.PCW_UIPARAM_DDR_MEMORY_TYPE {DDR 3} \
        CONFIG.PCW_UIPARAM_DDR_PARTNO {Custom} \
        CONFIG.PCW_UIPARAM_DDR_BUS_WIDTH {16 Bit} \
        CONFIG.PCW_UIPARAM_DDR_FREQ_MHZ {525} \
        CONFIG.PCW_UIPARAM_DDR_DRAM_WIDTH {16 Bits} \
        CONFIG.PCW_UIPARAM_DDR_DEVICE_CAPACITY {4096 MBits} \
        CONFIG.PCW_UIPARAM_DDR_SPEED_BIN {DDR3_1066F} \
        CONFIG.PCW_UIPARAM_DDR_CL {7} \
        CONFIG.PCW_UIPARAM_DDR_CWL {6} \
        CONFIG.PCW_UIPARAM_DDR_ROW_ADDR_COUNT {15} \
        CONFIG.PCW_UIPARAM_DDR_COL_ADDR_COUNT {10} \
        CONFIG.PCW_UIPARAM_DDR_BANK_ADDR_COUNT {3} \
        CONFIG.PCW_UIPARAM_DDR_BL {8} \
        CONFIG.PCW_UIPARAM_DDR_T_FAW {40.0} \
        CONFIG.PCW_UIPARAM_DDR_T_RAS_MIN {35.0} \
        CONFIG.PCW_UIPARAM_DDR_T_RC {50.625} \
        CONFIG.PCW_UIPARAM_DDR_T_RCD {13.125} \
        CONFIG.PCW_UIPARAM_DDR_T_RP {13.125} \
        CONFIG.PCW_UIPARAM_DDR_HIGH_TEMP {Normal (0-85)} \
        CONFIG.PCW_UIPARAM_DDR_USE_INTERNAL_VREF {0} \
        CONFIG.PCW_UIPARAM_DDR_TRAIN_WRITE_LEVEL {1} \
        CONFIG.PCW_UIPARAM_DDR_TRAIN_READ_GATE {1} \
        CONFIG.PCW_UIPARAM_DDR_TRAIN_DATA_EYE {1} \
        CONFIG.PCW_UIPARAM_DDR_BOARD_DELAY0 {0.223} \
        CONFIG.PCW_UIPARAM_DDR_BOARD_DELAY1 {0.212} \
        CONFIG.PCW_UIPARAM_DDR_BOARD_DELAY2 {0.085} \
        CONFIG.PCW_UIPARAM_DDR_BOARD_DELAY3 {0.092} \
        CONFIG.PCW_UIPARAM_DDR_DQS_TO_CLK_DELAY_0 {0.040} \
        CONFIG.PCW_UIPARAM_DDR_DQS_TO_CLK_DELAY_1 {0.058} \
        CONFIG.PCW_UIPARAM_DDR_DQS_TO_CLK_DELAY_2 {0.000} \
        CONFIG.PCW_UIPARAM_DDR_DQS_TO_CLK_DELAY_3 {0.000} \
        CONFIG.PCW_UIPARAM_DDR_CLOCK_0_LENGTH_MM {25.8} \
        CONFIG.PCW_UIPARAM_DDR_CLOCK_1_LENGTH_MM {25.8} \
        CONFIG.PCW_UIPARAM_DDR_DQS_0_LENGTH_MM {15.6} \
        CONFIG.PCW_UIPARAM_DDR_DQS_1_LENGTH_MM {18.8} \
        CONFIG.PCW_UIPARAM_DDR_DQ_0_LENGTH_MM {16.5} \
        CONFIG.PCW_UIPARAM_DDR_DQ_1_LENGTH_MM {18} \
        CONFIG.PCW_QSPI_PERIPHERAL_ENABLE {1} \
        CONFIG.PCW_QSPI_QSPI_IO {MIO 1 .. 6} \
        CONFIG.PCW_QSPI_GRP_SINGLE_SS_ENABLE {1} \
        CONFIG.PCW_QSPI_GRP_SINGLE_SS_IO {MIO 1 .. 6} \
        CONFIG.PCW_QSPI_GRP_FBCLK_ENABLE {1} \
        CONFIG.PCW_QSPI_GRP_FBCLK_IO {MIO 8} \
        CONFIG.PCW_SINGLE_QSPI_DATA_MODE {x4} \
        CONFIG.PCW_ENET0_PERIPHERAL_ENABLE {1} \
        CONFIG.PCW_ENET0_ENET0_IO {MIO 16 .. 27} \
        CONFIG.PCW_ENET0_GRP_MDIO_ENABLE {1} \
        CONFIG.PCW_ENET0_GRP_MDIO_IO {MIO 52 .. 53} \
        CONFIG.PCW_ENET0_PERIPHERAL_FREQMHZ {1000 Mbps} \
        CONFIG.PCW_ENET0_RESET_ENABLE {0} \
        CONFIG.PCW_SD0_PERIPHERAL_ENABLE {1} \
        CONFIG.PCW_SD0_SD0_IO {MIO 40 .. 45} \
        CONFIG.PCW_SD0_GRP_CD_ENABLE {1} \
        CONFIG.PCW_SD0_GRP_CD_IO {MIO 47} \
        CONFIG.PCW_SD0_GRP_WP_ENABLE {0} \
        CONFIG.PCW_SDIO_PERIPHERAL_FREQMHZ {50} \
        CONFIG.PCW_UART0_PERIPHERAL_ENABLE {1} \
        CONFIG.PCW_UART0_UART0_IO {MIO 14 .. 15} \
        CONFIG.PCW_UART0_BAUD_RATE {115200} \
        CONFIG.PCW_UART_PERIPHERAL_FREQMHZ {100} \
        CONFIG.PCW_USB0_PERIPHERAL_ENABLE {1} \
        CONFIG.PCW_USB0_USB0_IO {MIO 28 .. 39} \
        CONFIG.PCW_USB0_RESET_ENABLE {0} \
        CONFIG.PCW_USB_RESET_ENABLE {0} \
        CONFIG.PCW_I2C0_PERIPHERAL_ENABLE {1} \
        CONFIG.PCW_I2C0_I2C0_IO {MIO 50 .. 51} \
        CONFIG.PCW_GPIO_MIO_GPIO_ENABLE {0} \
    ] $ps7
}
# what this design needs on top of the preset
set_property -dict [list \
    CONFIG.PCW_FPGA0_PERIPHERAL_FREQMHZ $fclk_mhz \
    CONFIG.PCW_EN_CLK0_PORT {1} \
    CONFIG.PCW_EN_RST0_PORT {1} \
    CONFIG.PCW_USE_M_AXI_GP0 {1} \
    CONFIG.PCW_USE_S_AXI_HP0 {1} \
    CONFIG.PCW_S_AXI_HP0_DATA_WIDTH {64} \
    CONFIG.PCW_USE_S_AXI_HP1 {1} \
    CONFIG.PCW_S_AXI_HP1_DATA_WIDTH {64} \
    CONFIG.PCW_USE_S_AXI_HP2 {1} \
    CONFIG.PCW_S_AXI_HP2_DATA_WIDTH {64} \
    CONFIG.PCW_USE_FABRIC_INTERRUPT {1} \
    CONFIG.PCW_IRQ_F2P_INTR {1} \
] $ps7
if {[dict exists $zq_spaces($engine) act2]} {
    # the engine's second activation path reads through HP3 (HP2 and HP3 share a DDR controller port)
    set_property -dict [list CONFIG.PCW_USE_S_AXI_HP3 {1} CONFIG.PCW_S_AXI_HP3_DATA_WIDTH {64}] $ps7
}

set clk  [get_bd_pins ps7/FCLK_CLK0]
set rst  [create_bd_cell -type ip -vlnv xilinx.com:ip:proc_sys_reset:5.0 rst_fclk0]
connect_bd_net $clk [get_bd_pins rst_fclk0/slowest_sync_clk]
connect_bd_net [get_bd_pins ps7/FCLK_RESET0_N] [get_bd_pins rst_fclk0/ext_reset_in]
set aresetn [get_bd_pins rst_fclk0/peripheral_aresetn]

# ---- accelerator and DMA -------------------------------------------------------------
set zq  [create_bd_cell -type ip -vlnv $zq_vlnv zq_top_0]
set dma [create_bd_cell -type ip -vlnv xilinx.com:ip:axi_dma:7.1 axi_dma_0]
set_property -dict [list \
    CONFIG.c_include_sg {0} \
    CONFIG.c_sg_length_width {23} \
    CONFIG.c_include_mm2s {1} \
    CONFIG.c_include_s2mm {1} \
    CONFIG.c_m_axi_mm2s_data_width {32} \
    CONFIG.c_m_axis_mm2s_tdata_width {32} \
    CONFIG.c_m_axi_s2mm_data_width {32} \
    CONFIG.c_s_axis_s2mm_tdata_width {32} \
    CONFIG.c_mm2s_burst_size {16} \
    CONFIG.c_s2mm_burst_size {16} \
    CONFIG.c_include_mm2s_dre {0} \
    CONFIG.c_include_s2mm_dre {0} \
] $dma

connect_bd_intf_net [get_bd_intf_pins axi_dma_0/M_AXIS_MM2S] [get_bd_intf_pins zq_top_0/s_axis_in]
connect_bd_intf_net [get_bd_intf_pins zq_top_0/m_axis_out] [get_bd_intf_pins axi_dma_0/S_AXIS_S2MM]

# control: GP0 -> AXI interconnect -> {accelerator, DMA registers}
set ctrl_ic [create_bd_cell -type ip -vlnv xilinx.com:ip:axi_interconnect:2.1 ctrl_ic]
set_property -dict [list CONFIG.NUM_SI {1} CONFIG.NUM_MI {3}] $ctrl_ic
connect_bd_intf_net [get_bd_intf_pins ps7/M_AXI_GP0] [get_bd_intf_pins ctrl_ic/S00_AXI]
connect_bd_intf_net [get_bd_intf_pins ctrl_ic/M00_AXI] [get_bd_intf_pins zq_top_0/s_axi_control]
connect_bd_intf_net [get_bd_intf_pins ctrl_ic/M01_AXI] [get_bd_intf_pins axi_dma_0/S_AXI_LITE]

# the engine's DDR masters: m_axi_wts -> HP0, m_axi_act -> HP2, m_axi_act2 -> HP3
# (HP0/HP1 and HP2/HP3 share a DDR controller port each: weights and activations do not queue
# behind each other), each through an AXI protocol converter: the HP ports are AXI3, and the
# engines' bursts are at most 16 beats (spec.engine's AXI_BURST_BEATS; the HLS pragmas'
# max_*_burst_length=16), so TRANSLATION_MODE 0 ("unprotected", PG059) leaves out the splitting
# logic: a converter far lighter than a SmartConnect (the protocols propagate from the interfaces)
set zq_ports [dict keys $zq_spaces($engine)]
foreach port $zq_ports {
    set pc ${port}_pc
    set hp $zq_hp($port)
    create_bd_cell -type ip -vlnv xilinx.com:ip:axi_protocol_converter:2.1 $pc
    set_property -dict [list CONFIG.TRANSLATION_MODE {0}] [get_bd_cells $pc]
    connect_bd_intf_net [get_bd_intf_pins zq_top_0/m_axi_$port] [get_bd_intf_pins $pc/S_AXI]
    connect_bd_intf_net [get_bd_intf_pins $pc/M_AXI] [get_bd_intf_pins ps7/S_AXI_$hp]
    connect_bd_net $clk [get_bd_pins ps7/S_AXI_${hp}_ACLK]
    connect_bd_net $clk [get_bd_pins $pc/aclk]
    connect_bd_net $aresetn [get_bd_pins $pc/aresetn]
}

# data: DMA masters -> SmartConnect -> HP1
set mem_sc [create_bd_cell -type ip -vlnv xilinx.com:ip:smartconnect:1.0 mem_sc]
set_property -dict [list CONFIG.NUM_SI {2} CONFIG.NUM_MI {1}] $mem_sc
connect_bd_intf_net [get_bd_intf_pins axi_dma_0/M_AXI_MM2S] [get_bd_intf_pins mem_sc/S00_AXI]
connect_bd_intf_net [get_bd_intf_pins axi_dma_0/M_AXI_S2MM] [get_bd_intf_pins mem_sc/S01_AXI]
connect_bd_intf_net [get_bd_intf_pins mem_sc/M00_AXI] [get_bd_intf_pins ps7/S_AXI_HP1]

# interrupts -> axi_intc (on GP0) -> IRQ_F2P[0], as PYNQ-Z2's base.tcl: pynq discovers interrupt
# pins (overlay.interrupt_pins, DMA wait_async, pynq.Interrupt) only behind an AXI interrupt controller
set irq [create_bd_cell -type ip -vlnv xilinx.com:ip:xlconcat:2.1 irq_concat]
set_property CONFIG.NUM_PORTS {3} $irq
connect_bd_net [get_bd_pins zq_top_0/interrupt] [get_bd_pins irq_concat/In0]
connect_bd_net [get_bd_pins axi_dma_0/mm2s_introut] [get_bd_pins irq_concat/In1]
connect_bd_net [get_bd_pins axi_dma_0/s2mm_introut] [get_bd_pins irq_concat/In2]
set intc [create_bd_cell -type ip -vlnv xilinx.com:ip:axi_intc:4.1 axi_intc_0]
connect_bd_intf_net [get_bd_intf_pins ctrl_ic/M02_AXI] [get_bd_intf_pins axi_intc_0/s_axi]
connect_bd_net [get_bd_pins irq_concat/dout] [get_bd_pins axi_intc_0/intr]
connect_bd_net [get_bd_pins axi_intc_0/irq] [get_bd_pins ps7/IRQ_F2P]

# clocks and resets
foreach p {ps7/M_AXI_GP0_ACLK ps7/S_AXI_HP1_ACLK zq_top_0/ap_clk
           axi_dma_0/s_axi_lite_aclk axi_dma_0/m_axi_mm2s_aclk axi_dma_0/m_axi_s2mm_aclk mem_sc/aclk
           axi_intc_0/s_axi_aclk
           ctrl_ic/ACLK ctrl_ic/S00_ACLK ctrl_ic/M00_ACLK ctrl_ic/M01_ACLK ctrl_ic/M02_ACLK} {
    connect_bd_net $clk [get_bd_pins $p]
}
foreach p {zq_top_0/ap_rst_n axi_dma_0/axi_resetn mem_sc/aresetn
           axi_intc_0/s_axi_aresetn ctrl_ic/S00_ARESETN ctrl_ic/M00_ARESETN ctrl_ic/M01_ARESETN ctrl_ic/M02_ARESETN} {
    connect_bd_net $aresetn [get_bd_pins $p]
}
connect_bd_net [get_bd_pins rst_fclk0/interconnect_aresetn] [get_bd_pins ctrl_ic/ARESETN]

# addresses: the DDR (0x0000_0000, 512 MiB: the PYNQ-Z2's, and the engine's window) in every one of
# the engine's address spaces, each by the name the engine's IP gives it; the accelerator's registers
# (its address block "Reg" on s_axi_control), the DMA's and the interrupt controller's in GP0 (the
# controller where base.tcl puts it), all of DDR for the DMA
set ddr_range "[expr {$zq_spec(ddr_window_bytes) >> 20}]M"
foreach port $zq_ports {
    set hp $zq_hp($port)
    set space [dict get $zq_spaces($engine) $port]
    assign_bd_address -offset 0x00000000 -range $ddr_range -target_address_space \
        [get_bd_addr_spaces zq_top_0/$space] [get_bd_addr_segs ps7/S_AXI_$hp/${hp}_DDR_LOWOCM] -force
}
assign_bd_address -offset $zq_ctrl_base -range "[expr {$zq_ctrl_bytes >> 10}]K" \
    -target_address_space [get_bd_addr_spaces ps7/Data] \
    [get_bd_addr_segs zq_top_0/s_axi_control/Reg] -force
assign_bd_address
set seg_dma  [get_bd_addr_segs -of_objects [get_bd_addr_spaces ps7/Data] -filter {NAME =~ *axi_dma_0*}]
set seg_intc [get_bd_addr_segs -of_objects [get_bd_addr_spaces ps7/Data] -filter {NAME =~ *axi_intc_0*}]
if {$seg_dma ne ""}  { set_property offset 0x40400000 $seg_dma }
if {$seg_intc ne ""} { set_property offset 0x41800000 $seg_intc }

validate_bd_design
save_bd_design

# ---- synthesis, implementation, bitstream -----------------------------------------------
set bd_file [get_files $bd.bd]
generate_target all $bd_file
set wrapper [make_wrapper -files $bd_file -top]
add_files -norecurse $wrapper
set_property top ${bd}_wrapper [current_fileset]
update_compile_order -fileset sources_1

launch_runs impl_1 -to_step write_bitstream -jobs $jobs
wait_on_run impl_1
if {[get_property PROGRESS [get_runs impl_1]] ne "100%"} {
    puts stderr "pynq_z2.tcl: implementation did not complete (see [get_property DIRECTORY [get_runs impl_1]])"
    exit 1
}
open_run impl_1

# ---- timing and utilization: printed, written, and negative slack fails the build -----------
foreach f [list ${net}_pynq-z2.bit ${net}_pynq-z2.hwh timing.txt utilization.txt] {
    file delete -force [file join $out_dir $f]     ;# nothing stale survives a failed build
}
set wns [get_property SLACK [lindex [get_timing_paths -max_paths 1 -nworst 1 -setup] 0]]
set whs [get_property SLACK [lindex [get_timing_paths -max_paths 1 -nworst 1 -hold] 0]]
report_timing_summary -file [file join $out_dir timing_summary.rpt]
report_utilization -file [file join $out_dir utilization.rpt]

# | Site Type | Used | Fixed | [Prohibited |] Available | Util% |  ->  used available util%
proc util_row {report site} {
    foreach line [split $report "\n"] {
        if {[regexp "^\\|\\s*${site}\\*?\\s*\\|" $line]} {
            set f {}
            foreach x [split $line "|"] { lappend f [string trim $x] }
            return [list [lindex $f 2] [lindex $f end-2] [lindex $f end-1]]
        }
    }
    return [list ? ? ?]
}
set util_report [report_utilization -return_string]
set fh [open [file join $out_dir utilization.txt] w]
set util_line ""
foreach {key site} {lut {Slice LUTs} ff {Slice Registers} bram {Block RAM Tile} dsp {DSPs}} {
    lassign [util_row $util_report $site] used avail pct
    puts $fh "$key $used $avail $pct"
    append util_line " $key $used/$avail ($pct%)"
}
close $fh
set met [expr {[string is double -strict $wns] && [string is double -strict $whs] && $wns >= 0 && $whs >= 0}]
set fh [open [file join $out_dir timing.txt] w]
puts $fh "wns_ns $wns"
puts $fh "whs_ns $whs"
puts $fh "fclk_mhz $fclk_mhz"
puts $fh "timing_met $met"
close $fh
puts "pynq_z2.tcl: timing at $fclk_mhz MHz: worst setup slack (WNS) $wns ns, worst hold slack (WHS) $whs ns"
puts "pynq_z2.tcl: utilization:$util_line (reports: [file join $out_dir timing_summary.rpt], utilization.rpt)"
if {!$met} {
    puts stderr "pynq_z2.tcl: timing NOT met at $fclk_mhz MHz: WNS $wns ns, WHS $whs ns (negative or missing slack;\
        see [file join $out_dir timing_summary.rpt]). No bitstream written to $out_dir."
    exit 3
}

set run_dir [get_property DIRECTORY [get_runs impl_1]]
set bit [glob -nocomplain [file join $run_dir ${bd}_wrapper.bit]]
set hwh [lindex [glob -nocomplain \
    [file join $out_dir project zq_pynq_z2.gen sources_1 bd $bd hw_handoff $bd.hwh] \
    [file join $out_dir project zq_pynq_z2.srcs sources_1 bd $bd hw_handoff $bd.hwh]] 0]
if {$bit eq "" || $hwh eq ""} {
    puts stderr "pynq_z2.tcl: bitstream ($bit) or hardware handoff ($hwh) not found"
    exit 1
}
file copy -force $bit [file join $out_dir ${net}_pynq-z2.bit]
file copy -force $hwh [file join $out_dir ${net}_pynq-z2.hwh]
puts "pynq_z2.tcl: wrote [file join $out_dir ${net}_pynq-z2.bit] and .hwh"
exit 0
