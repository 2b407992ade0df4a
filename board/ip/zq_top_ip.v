// zq_top_ip: the Verilog top of the RTL twin's Vivado IP (board/ip/package_rtl_ip.tcl).
//
// UG1118 (Vivado Design Suite User Guide: Creating and Packaging Custom IP) takes a
// Verilog or VHDL top for the IP packager, not a SystemVerilog one. This module is that
// top: Verilog-2001, every parameter and every port of rtl/zq_top.sv passed through
// unchanged (same names, same widths, same defaults, but for the control port's address
// width, below), so the packaged IP has the Vitis HLS IP's interface names (s_axi_control,
// m_axi_wts, m_axi_act, s_axis_in, m_axis_out, ap_clk, ap_rst_n, interrupt) and one block
// design takes either engine.
//
// The parameter defaults are the export's (rtl_params.svh, `include path: the export
// directory) and the specification's (zq_spec.svh, rtl/); the packaging script sets the
// IP's parameters to the same values. tests/test_board_scripts.py checks this file
// against rtl/zq_top.sv (Verilator's parse of both): a port or parameter of zq_top that
// is missing here, renamed, or of another width or direction fails it.
`include "zq_spec.svh"
`include "rtl_params.svh"
`default_nettype none

module zq_top_ip #(
    parameter N_PE        = `ZQ_N_PE,
    parameter N_CI        = `ZQ_N_CI,
    parameter N_LAYERS    = `ZQ_N_LAYERS,
    parameter ACT_ROWS    = `ZQ_ACT_ROWS,
    parameter WR_W        = `ZQ_WR_W,
    parameter WBUF_DEPTH  = `ZQ_WBUF_DEPTH,
    parameter CACHE       = `ZQ_WEIGHT_CACHE,
    parameter N_WORDS     = `ZQ_IMAGE_WORDS,
    parameter HDR_BYTES   = `ZQ_HEADER_BYTES,
    parameter [31:0] IMAGE_BYTES   = `ZQ_IMAGE_BYTES,
    parameter [31:0] SCRATCH_BYTES = `ZQ_SCRATCH_BYTES,
    parameter IN_SIZE     = `ZQ_IN_SIZE,
    parameter IN_CH       = `ZQ_IN_CH,
    parameter STEM_K      = `ZQ_STEM_K,
    parameter STEM_S      = `ZQ_STEM_S,
    parameter STEM_SIZE   = `ZQ_STEM_SIZE,
    parameter IN_WORDS    = `ZQ_IN_WORDS,
    parameter RAW_RR      = `ZQ_RAW_RR,
    parameter N_CLASSES   = `ZQ_N_CLASSES,
    parameter GAP_ROWS    = `ZQ_GAP_ROWS,
    parameter GAP_SHIFT   = `ZQ_GAP_SHIFT,
    parameter GAP_ROUND   = `ZQ_GAP_ROUND,
    parameter [31:0] NET_ID       = `ZQ_NET_ID,
    parameter [31:0] BUILD_PARAMS = `ZQ_BUILD_PARAMS,
    parameter [31:0] ENGINE_INFO  = `ZQ_ENGINE_INFO,
    parameter [N_LAYERS*`ZQ_ROW_BITS-1:0] LAYER_TABLE = `ZQ_LAYER_TABLE,
    // the one default that differs from zq_top's: the control port decodes the whole 64 KiB
    // segment the block design maps it to (spec.engine.CTRL_ADDR_BITS), not only the register
    // map's 256 bytes, so that no register answers again at +0x100 (zq_axil_regs decodes every
    // bit of its port: an address outside the map reads 0 and changes nothing)
    parameter C_S_AXI_CONTROL_ADDR_WIDTH = `ZQ_CTRL_ADDR_BITS,
    parameter C_S_AXI_CONTROL_DATA_WIDTH = 32
) (
    input  wire         ap_clk,
    input  wire         ap_rst_n,

    input  wire  [31:0] s_axis_in_TDATA,
    input  wire         s_axis_in_TVALID,
    output wire         s_axis_in_TREADY,
    input  wire  [3:0]  s_axis_in_TKEEP,
    input  wire  [3:0]  s_axis_in_TSTRB,
    input  wire  [0:0]  s_axis_in_TLAST,

    output wire  [31:0] m_axis_out_TDATA,
    output wire         m_axis_out_TVALID,
    input  wire         m_axis_out_TREADY,
    output wire  [3:0]  m_axis_out_TKEEP,
    output wire  [3:0]  m_axis_out_TSTRB,
    output wire  [0:0]  m_axis_out_TLAST,

    input  wire  [C_S_AXI_CONTROL_ADDR_WIDTH-1:0] s_axi_control_AWADDR,
    input  wire         s_axi_control_AWVALID,
    output wire         s_axi_control_AWREADY,
    input  wire  [C_S_AXI_CONTROL_DATA_WIDTH-1:0] s_axi_control_WDATA,
    input  wire  [C_S_AXI_CONTROL_DATA_WIDTH/8-1:0] s_axi_control_WSTRB,
    input  wire         s_axi_control_WVALID,
    output wire         s_axi_control_WREADY,
    output wire  [1:0]  s_axi_control_BRESP,
    output wire         s_axi_control_BVALID,
    input  wire         s_axi_control_BREADY,
    input  wire  [C_S_AXI_CONTROL_ADDR_WIDTH-1:0] s_axi_control_ARADDR,
    input  wire         s_axi_control_ARVALID,
    output wire         s_axi_control_ARREADY,
    output wire  [C_S_AXI_CONTROL_DATA_WIDTH-1:0] s_axi_control_RDATA,
    output wire  [1:0]  s_axi_control_RRESP,
    output wire         s_axi_control_RVALID,
    input  wire         s_axi_control_RREADY,

    // m_axi_wts: reads only (its write channels are tied off)
    output wire         m_axi_wts_AWVALID, input wire m_axi_wts_AWREADY, output wire [31:0] m_axi_wts_AWADDR,
    output wire [0:0]   m_axi_wts_AWID, output wire [7:0] m_axi_wts_AWLEN, output wire [2:0] m_axi_wts_AWSIZE,
    output wire [1:0]   m_axi_wts_AWBURST, output wire [0:0] m_axi_wts_AWLOCK, output wire [3:0] m_axi_wts_AWCACHE,
    output wire [2:0]   m_axi_wts_AWPROT, output wire [3:0] m_axi_wts_AWQOS, output wire [3:0] m_axi_wts_AWREGION,
    output wire [0:0]   m_axi_wts_AWUSER,
    output wire         m_axi_wts_WVALID, input wire m_axi_wts_WREADY, output wire [63:0] m_axi_wts_WDATA,
    output wire [7:0]   m_axi_wts_WSTRB, output wire m_axi_wts_WLAST, output wire [0:0] m_axi_wts_WID,
    output wire [0:0]   m_axi_wts_WUSER,
    output wire         m_axi_wts_ARVALID, input wire m_axi_wts_ARREADY, output wire [31:0] m_axi_wts_ARADDR,
    output wire [0:0]   m_axi_wts_ARID, output wire [7:0] m_axi_wts_ARLEN, output wire [2:0] m_axi_wts_ARSIZE,
    output wire [1:0]   m_axi_wts_ARBURST, output wire [0:0] m_axi_wts_ARLOCK, output wire [3:0] m_axi_wts_ARCACHE,
    output wire [2:0]   m_axi_wts_ARPROT, output wire [3:0] m_axi_wts_ARQOS, output wire [3:0] m_axi_wts_ARREGION,
    output wire [0:0]   m_axi_wts_ARUSER,
    input  wire         m_axi_wts_RVALID, output wire m_axi_wts_RREADY, input wire [63:0] m_axi_wts_RDATA,
    input  wire         m_axi_wts_RLAST, input wire [0:0] m_axi_wts_RID, input wire [0:0] m_axi_wts_RUSER,
    input  wire [1:0]   m_axi_wts_RRESP,
    input  wire         m_axi_wts_BVALID, output wire m_axi_wts_BREADY, input wire [1:0] m_axi_wts_BRESP,
    input  wire [0:0]   m_axi_wts_BID, input wire [0:0] m_axi_wts_BUSER,

    // m_axi_act: reads (input rings) and writes (DDR tensors)
    output wire         m_axi_act_AWVALID, input wire m_axi_act_AWREADY, output wire [31:0] m_axi_act_AWADDR,
    output wire [0:0]   m_axi_act_AWID, output wire [7:0] m_axi_act_AWLEN, output wire [2:0] m_axi_act_AWSIZE,
    output wire [1:0]   m_axi_act_AWBURST, output wire [0:0] m_axi_act_AWLOCK, output wire [3:0] m_axi_act_AWCACHE,
    output wire [2:0]   m_axi_act_AWPROT, output wire [3:0] m_axi_act_AWQOS, output wire [3:0] m_axi_act_AWREGION,
    output wire [0:0]   m_axi_act_AWUSER,
    output wire         m_axi_act_WVALID, input wire m_axi_act_WREADY, output wire [63:0] m_axi_act_WDATA,
    output wire [7:0]   m_axi_act_WSTRB, output wire m_axi_act_WLAST, output wire [0:0] m_axi_act_WID,
    output wire [0:0]   m_axi_act_WUSER,
    output wire         m_axi_act_ARVALID, input wire m_axi_act_ARREADY, output wire [31:0] m_axi_act_ARADDR,
    output wire [0:0]   m_axi_act_ARID, output wire [7:0] m_axi_act_ARLEN, output wire [2:0] m_axi_act_ARSIZE,
    output wire [1:0]   m_axi_act_ARBURST, output wire [0:0] m_axi_act_ARLOCK, output wire [3:0] m_axi_act_ARCACHE,
    output wire [2:0]   m_axi_act_ARPROT, output wire [3:0] m_axi_act_ARQOS, output wire [3:0] m_axi_act_ARREGION,
    output wire [0:0]   m_axi_act_ARUSER,
    input  wire         m_axi_act_RVALID, output wire m_axi_act_RREADY, input wire [63:0] m_axi_act_RDATA,
    input  wire         m_axi_act_RLAST, input wire [0:0] m_axi_act_RID, input wire [0:0] m_axi_act_RUSER,
    input  wire [1:0]   m_axi_act_RRESP,
    input  wire         m_axi_act_BVALID, output wire m_axi_act_BREADY, input wire [1:0] m_axi_act_BRESP,
    input  wire [0:0]   m_axi_act_BID, input wire [0:0] m_axi_act_BUSER,

    output wire         interrupt
);

    zq_top #(
        .N_PE(N_PE), .N_CI(N_CI), .N_LAYERS(N_LAYERS), .ACT_ROWS(ACT_ROWS), .WR_W(WR_W),
        .WBUF_DEPTH(WBUF_DEPTH), .CACHE(CACHE), .N_WORDS(N_WORDS), .HDR_BYTES(HDR_BYTES),
        .IMAGE_BYTES(IMAGE_BYTES), .SCRATCH_BYTES(SCRATCH_BYTES), .IN_SIZE(IN_SIZE), .IN_CH(IN_CH),
        .STEM_K(STEM_K), .STEM_S(STEM_S), .STEM_SIZE(STEM_SIZE), .IN_WORDS(IN_WORDS), .RAW_RR(RAW_RR),
        .N_CLASSES(N_CLASSES), .GAP_ROWS(GAP_ROWS), .GAP_SHIFT(GAP_SHIFT), .GAP_ROUND(GAP_ROUND), .NET_ID(NET_ID),
        .BUILD_PARAMS(BUILD_PARAMS), .ENGINE_INFO(ENGINE_INFO), .LAYER_TABLE(LAYER_TABLE),
        .C_S_AXI_CONTROL_ADDR_WIDTH(C_S_AXI_CONTROL_ADDR_WIDTH),
        .C_S_AXI_CONTROL_DATA_WIDTH(C_S_AXI_CONTROL_DATA_WIDTH)
    ) u_zq_top (
        .ap_clk(ap_clk), .ap_rst_n(ap_rst_n), .s_axis_in_TDATA(s_axis_in_TDATA),
        .s_axis_in_TVALID(s_axis_in_TVALID), .s_axis_in_TREADY(s_axis_in_TREADY),
        .s_axis_in_TKEEP(s_axis_in_TKEEP), .s_axis_in_TSTRB(s_axis_in_TSTRB),
        .s_axis_in_TLAST(s_axis_in_TLAST), .m_axis_out_TDATA(m_axis_out_TDATA),
        .m_axis_out_TVALID(m_axis_out_TVALID), .m_axis_out_TREADY(m_axis_out_TREADY),
        .m_axis_out_TKEEP(m_axis_out_TKEEP), .m_axis_out_TSTRB(m_axis_out_TSTRB),
        .m_axis_out_TLAST(m_axis_out_TLAST), .s_axi_control_AWADDR(s_axi_control_AWADDR),
        .s_axi_control_AWVALID(s_axi_control_AWVALID), .s_axi_control_AWREADY(s_axi_control_AWREADY),
        .s_axi_control_WDATA(s_axi_control_WDATA), .s_axi_control_WSTRB(s_axi_control_WSTRB),
        .s_axi_control_WVALID(s_axi_control_WVALID), .s_axi_control_WREADY(s_axi_control_WREADY),
        .s_axi_control_BRESP(s_axi_control_BRESP), .s_axi_control_BVALID(s_axi_control_BVALID),
        .s_axi_control_BREADY(s_axi_control_BREADY), .s_axi_control_ARADDR(s_axi_control_ARADDR),
        .s_axi_control_ARVALID(s_axi_control_ARVALID), .s_axi_control_ARREADY(s_axi_control_ARREADY),
        .s_axi_control_RDATA(s_axi_control_RDATA), .s_axi_control_RRESP(s_axi_control_RRESP),
        .s_axi_control_RVALID(s_axi_control_RVALID), .s_axi_control_RREADY(s_axi_control_RREADY),
        .m_axi_wts_AWVALID(m_axi_wts_AWVALID), .m_axi_wts_AWREADY(m_axi_wts_AWREADY),
        .m_axi_wts_AWADDR(m_axi_wts_AWADDR), .m_axi_wts_AWID(m_axi_wts_AWID),
        .m_axi_wts_AWLEN(m_axi_wts_AWLEN), .m_axi_wts_AWSIZE(m_axi_wts_AWSIZE),
        .m_axi_wts_AWBURST(m_axi_wts_AWBURST), .m_axi_wts_AWLOCK(m_axi_wts_AWLOCK),
        .m_axi_wts_AWCACHE(m_axi_wts_AWCACHE), .m_axi_wts_AWPROT(m_axi_wts_AWPROT),
        .m_axi_wts_AWQOS(m_axi_wts_AWQOS), .m_axi_wts_AWREGION(m_axi_wts_AWREGION),
        .m_axi_wts_AWUSER(m_axi_wts_AWUSER), .m_axi_wts_WVALID(m_axi_wts_WVALID),
        .m_axi_wts_WREADY(m_axi_wts_WREADY), .m_axi_wts_WDATA(m_axi_wts_WDATA),
        .m_axi_wts_WSTRB(m_axi_wts_WSTRB), .m_axi_wts_WLAST(m_axi_wts_WLAST), .m_axi_wts_WID(m_axi_wts_WID),
        .m_axi_wts_WUSER(m_axi_wts_WUSER), .m_axi_wts_ARVALID(m_axi_wts_ARVALID),
        .m_axi_wts_ARREADY(m_axi_wts_ARREADY), .m_axi_wts_ARADDR(m_axi_wts_ARADDR),
        .m_axi_wts_ARID(m_axi_wts_ARID), .m_axi_wts_ARLEN(m_axi_wts_ARLEN),
        .m_axi_wts_ARSIZE(m_axi_wts_ARSIZE), .m_axi_wts_ARBURST(m_axi_wts_ARBURST),
        .m_axi_wts_ARLOCK(m_axi_wts_ARLOCK), .m_axi_wts_ARCACHE(m_axi_wts_ARCACHE),
        .m_axi_wts_ARPROT(m_axi_wts_ARPROT), .m_axi_wts_ARQOS(m_axi_wts_ARQOS),
        .m_axi_wts_ARREGION(m_axi_wts_ARREGION), .m_axi_wts_ARUSER(m_axi_wts_ARUSER),
        .m_axi_wts_RVALID(m_axi_wts_RVALID), .m_axi_wts_RREADY(m_axi_wts_RREADY),
        .m_axi_wts_RDATA(m_axi_wts_RDATA), .m_axi_wts_RLAST(m_axi_wts_RLAST), .m_axi_wts_RID(m_axi_wts_RID),
        .m_axi_wts_RUSER(m_axi_wts_RUSER), .m_axi_wts_RRESP(m_axi_wts_RRESP),
        .m_axi_wts_BVALID(m_axi_wts_BVALID), .m_axi_wts_BREADY(m_axi_wts_BREADY),
        .m_axi_wts_BRESP(m_axi_wts_BRESP), .m_axi_wts_BID(m_axi_wts_BID), .m_axi_wts_BUSER(m_axi_wts_BUSER),
        .m_axi_act_AWVALID(m_axi_act_AWVALID), .m_axi_act_AWREADY(m_axi_act_AWREADY),
        .m_axi_act_AWADDR(m_axi_act_AWADDR), .m_axi_act_AWID(m_axi_act_AWID),
        .m_axi_act_AWLEN(m_axi_act_AWLEN), .m_axi_act_AWSIZE(m_axi_act_AWSIZE),
        .m_axi_act_AWBURST(m_axi_act_AWBURST), .m_axi_act_AWLOCK(m_axi_act_AWLOCK),
        .m_axi_act_AWCACHE(m_axi_act_AWCACHE), .m_axi_act_AWPROT(m_axi_act_AWPROT),
        .m_axi_act_AWQOS(m_axi_act_AWQOS), .m_axi_act_AWREGION(m_axi_act_AWREGION),
        .m_axi_act_AWUSER(m_axi_act_AWUSER), .m_axi_act_WVALID(m_axi_act_WVALID),
        .m_axi_act_WREADY(m_axi_act_WREADY), .m_axi_act_WDATA(m_axi_act_WDATA),
        .m_axi_act_WSTRB(m_axi_act_WSTRB), .m_axi_act_WLAST(m_axi_act_WLAST), .m_axi_act_WID(m_axi_act_WID),
        .m_axi_act_WUSER(m_axi_act_WUSER), .m_axi_act_ARVALID(m_axi_act_ARVALID),
        .m_axi_act_ARREADY(m_axi_act_ARREADY), .m_axi_act_ARADDR(m_axi_act_ARADDR),
        .m_axi_act_ARID(m_axi_act_ARID), .m_axi_act_ARLEN(m_axi_act_ARLEN),
        .m_axi_act_ARSIZE(m_axi_act_ARSIZE), .m_axi_act_ARBURST(m_axi_act_ARBURST),
        .m_axi_act_ARLOCK(m_axi_act_ARLOCK), .m_axi_act_ARCACHE(m_axi_act_ARCACHE),
        .m_axi_act_ARPROT(m_axi_act_ARPROT), .m_axi_act_ARQOS(m_axi_act_ARQOS),
        .m_axi_act_ARREGION(m_axi_act_ARREGION), .m_axi_act_ARUSER(m_axi_act_ARUSER),
        .m_axi_act_RVALID(m_axi_act_RVALID), .m_axi_act_RREADY(m_axi_act_RREADY),
        .m_axi_act_RDATA(m_axi_act_RDATA), .m_axi_act_RLAST(m_axi_act_RLAST), .m_axi_act_RID(m_axi_act_RID),
        .m_axi_act_RUSER(m_axi_act_RUSER), .m_axi_act_RRESP(m_axi_act_RRESP),
        .m_axi_act_BVALID(m_axi_act_BVALID), .m_axi_act_BREADY(m_axi_act_BREADY),
        .m_axi_act_BRESP(m_axi_act_BRESP), .m_axi_act_BID(m_axi_act_BID), .m_axi_act_BUSER(m_axi_act_BUSER),
        .interrupt(interrupt)
    );

endmodule

`default_nettype wire
