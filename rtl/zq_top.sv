// zq_top: the ZynqNet-style CNN engine, RTL twin of the Vitis HLS `zq_top`.
//
//   s_axis_in  (AXI4-Stream, 32-bit, 4 uint8 bytes per beat, HWC)  -> zq_stem
//   m_axis_out (AXI4-Stream, 32-bit, one logit per beat)            <- zq_gap, zq_axis_out
//   s_axi_control (AXI4-Lite; the engine specification's register map) -> zq_axil_regs
//   m_axi_wts  (AXI4 master, 64-bit): reads the weight image          -> zq_wdma
//              writes DDR tensors on activation path 2                -> zq_out_paths
//   m_axi_act  (AXI4 master, 64-bit, reads and writes): DDR tensors,
//              activation path 1                                      -> zq_fill_paths, zq_out_paths
//   m_axi_act2 (AXI4 master, 64-bit): reads DDR tensors on path 2     -> zq_fill_paths (writes tied off)
//
// One frame per ap_start (ap_ctrl_hs), back to back with auto_restart. A frame:
// check the two base addresses; start the weight DMA (header check, then the
// image into the weight ring) and the stem (the frame into the first layer's
// input ring); run the layers of the layer table one after the other (zq_core;
// zq_fill_dma for a layer that reads a DDR tensor, after every DDR write of
// earlier layers has completed); read the logits out of the GAP RAM. Any
// error (short or long frame, AXI read or write error, a base address out of
// range, a weight image that is not this engine's) aborts the frame: the
// datapath stops, the DMAs finish the bursts they issued, the rest of the input
// frame is taken up to its TLAST, and the answer is an error frame of
// N_CLASSES beats of -32768. The next frame runs normally.
//
// Network-specific parameters come from rtl_params.svh, which the exporter
// writes from the hardware plan (zynqflow.export); the spec's constants from
// zq_spec.svh (zynqflow.spec.gen).
`include "zq_spec.svh"
`include "rtl_params.svh"
`default_nettype none

module zq_top #(
    parameter N_PE        = `ZQ_N_PE,
    parameter N_CI        = `ZQ_N_CI,
    parameter DSP_PAIRS   = `ZQ_DSP_PAIRS,     // MAC lane pairs on DSP48E1 (the rest: LUT multipliers)
    parameter ACT_PATHS   = `ZQ_ACT_PATHS,     // activation paths built (2: m_axi_act2 and m_axi_wts's writes)
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
    parameter C_S_AXI_CONTROL_ADDR_WIDTH = `ZQ_REG_ADDR_BITS_RTL,
    parameter C_S_AXI_CONTROL_DATA_WIDTH = 32
) (
    input  wire         ap_clk,
    input  wire         ap_rst_n,

    input  wire  [`ZQ_STREAM_BITS-1:0] s_axis_in_TDATA,
    input  wire         s_axis_in_TVALID,
    output wire         s_axis_in_TREADY,
    input  wire  [`ZQ_STREAM_BITS/8-1:0]  s_axis_in_TKEEP,
    input  wire  [`ZQ_STREAM_BITS/8-1:0]  s_axis_in_TSTRB,
    input  wire  [0:0]  s_axis_in_TLAST,

    output wire  [`ZQ_STREAM_BITS-1:0] m_axis_out_TDATA,
    output wire         m_axis_out_TVALID,
    input  wire         m_axis_out_TREADY,
    output wire  [`ZQ_STREAM_BITS/8-1:0]  m_axis_out_TKEEP,
    output wire  [`ZQ_STREAM_BITS/8-1:0]  m_axis_out_TSTRB,
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

    // m_axi_wts: weight reads; DDR-tensor writes of activation path 2 (tied off with ACT_PATHS = 1)
    output wire         m_axi_wts_AWVALID, input wire m_axi_wts_AWREADY, output wire [`ZQ_AXI_ADDR_BITS-1:0] m_axi_wts_AWADDR,
    output wire [0:0]   m_axi_wts_AWID, output wire [7:0] m_axi_wts_AWLEN, output wire [2:0] m_axi_wts_AWSIZE,
    output wire [1:0]   m_axi_wts_AWBURST, output wire [0:0] m_axi_wts_AWLOCK, output wire [3:0] m_axi_wts_AWCACHE,
    output wire [2:0]   m_axi_wts_AWPROT, output wire [3:0] m_axi_wts_AWQOS, output wire [3:0] m_axi_wts_AWREGION,
    output wire [0:0]   m_axi_wts_AWUSER,
    output wire         m_axi_wts_WVALID, input wire m_axi_wts_WREADY, output wire [`ZQ_AXI_DATA_BITS-1:0] m_axi_wts_WDATA,
    output wire [`ZQ_AXI_DATA_BITS/8-1:0] m_axi_wts_WSTRB, output wire m_axi_wts_WLAST, output wire [0:0] m_axi_wts_WID,
    output wire [0:0]   m_axi_wts_WUSER,
    output wire         m_axi_wts_ARVALID, input wire m_axi_wts_ARREADY, output wire [`ZQ_AXI_ADDR_BITS-1:0] m_axi_wts_ARADDR,
    output wire [0:0]   m_axi_wts_ARID, output wire [7:0] m_axi_wts_ARLEN, output wire [2:0] m_axi_wts_ARSIZE,
    output wire [1:0]   m_axi_wts_ARBURST, output wire [0:0] m_axi_wts_ARLOCK, output wire [3:0] m_axi_wts_ARCACHE,
    output wire [2:0]   m_axi_wts_ARPROT, output wire [3:0] m_axi_wts_ARQOS, output wire [3:0] m_axi_wts_ARREGION,
    output wire [0:0]   m_axi_wts_ARUSER,
    input  wire         m_axi_wts_RVALID, output wire m_axi_wts_RREADY, input wire [`ZQ_AXI_DATA_BITS-1:0] m_axi_wts_RDATA,
    input  wire         m_axi_wts_RLAST, input wire [0:0] m_axi_wts_RID, input wire [0:0] m_axi_wts_RUSER,
    input  wire [1:0]   m_axi_wts_RRESP,
    input  wire         m_axi_wts_BVALID, output wire m_axi_wts_BREADY, input wire [1:0] m_axi_wts_BRESP,
    input  wire [0:0]   m_axi_wts_BID, input wire [0:0] m_axi_wts_BUSER,

    // m_axi_act: reads (input rings) and writes (DDR tensors)
    output wire         m_axi_act_AWVALID, input wire m_axi_act_AWREADY, output wire [`ZQ_AXI_ADDR_BITS-1:0] m_axi_act_AWADDR,
    output wire [0:0]   m_axi_act_AWID, output wire [7:0] m_axi_act_AWLEN, output wire [2:0] m_axi_act_AWSIZE,
    output wire [1:0]   m_axi_act_AWBURST, output wire [0:0] m_axi_act_AWLOCK, output wire [3:0] m_axi_act_AWCACHE,
    output wire [2:0]   m_axi_act_AWPROT, output wire [3:0] m_axi_act_AWQOS, output wire [3:0] m_axi_act_AWREGION,
    output wire [0:0]   m_axi_act_AWUSER,
    output wire         m_axi_act_WVALID, input wire m_axi_act_WREADY, output wire [`ZQ_AXI_DATA_BITS-1:0] m_axi_act_WDATA,
    output wire [`ZQ_AXI_DATA_BITS/8-1:0] m_axi_act_WSTRB, output wire m_axi_act_WLAST, output wire [0:0] m_axi_act_WID,
    output wire [0:0]   m_axi_act_WUSER,
    output wire         m_axi_act_ARVALID, input wire m_axi_act_ARREADY, output wire [`ZQ_AXI_ADDR_BITS-1:0] m_axi_act_ARADDR,
    output wire [0:0]   m_axi_act_ARID, output wire [7:0] m_axi_act_ARLEN, output wire [2:0] m_axi_act_ARSIZE,
    output wire [1:0]   m_axi_act_ARBURST, output wire [0:0] m_axi_act_ARLOCK, output wire [3:0] m_axi_act_ARCACHE,
    output wire [2:0]   m_axi_act_ARPROT, output wire [3:0] m_axi_act_ARQOS, output wire [3:0] m_axi_act_ARREGION,
    output wire [0:0]   m_axi_act_ARUSER,
    input  wire         m_axi_act_RVALID, output wire m_axi_act_RREADY, input wire [`ZQ_AXI_DATA_BITS-1:0] m_axi_act_RDATA,
    input  wire         m_axi_act_RLAST, input wire [0:0] m_axi_act_RID, input wire [0:0] m_axi_act_RUSER,
    input  wire [1:0]   m_axi_act_RRESP,
    input  wire         m_axi_act_BVALID, output wire m_axi_act_BREADY, input wire [1:0] m_axi_act_BRESP,
    input  wire [0:0]   m_axi_act_BID, input wire [0:0] m_axi_act_BUSER,

    // m_axi_act2: reads (input rings) of activation path 2; its write channels are tied off
    output wire         m_axi_act2_AWVALID, input wire m_axi_act2_AWREADY, output wire [`ZQ_AXI_ADDR_BITS-1:0] m_axi_act2_AWADDR,
    output wire [0:0]   m_axi_act2_AWID, output wire [7:0] m_axi_act2_AWLEN, output wire [2:0] m_axi_act2_AWSIZE,
    output wire [1:0]   m_axi_act2_AWBURST, output wire [0:0] m_axi_act2_AWLOCK, output wire [3:0] m_axi_act2_AWCACHE,
    output wire [2:0]   m_axi_act2_AWPROT, output wire [3:0] m_axi_act2_AWQOS, output wire [3:0] m_axi_act2_AWREGION,
    output wire [0:0]   m_axi_act2_AWUSER,
    output wire         m_axi_act2_WVALID, input wire m_axi_act2_WREADY, output wire [`ZQ_AXI_DATA_BITS-1:0] m_axi_act2_WDATA,
    output wire [`ZQ_AXI_DATA_BITS/8-1:0] m_axi_act2_WSTRB, output wire m_axi_act2_WLAST, output wire [0:0] m_axi_act2_WID,
    output wire [0:0]   m_axi_act2_WUSER,
    output wire         m_axi_act2_ARVALID, input wire m_axi_act2_ARREADY, output wire [`ZQ_AXI_ADDR_BITS-1:0] m_axi_act2_ARADDR,
    output wire [0:0]   m_axi_act2_ARID, output wire [7:0] m_axi_act2_ARLEN, output wire [2:0] m_axi_act2_ARSIZE,
    output wire [1:0]   m_axi_act2_ARBURST, output wire [0:0] m_axi_act2_ARLOCK, output wire [3:0] m_axi_act2_ARCACHE,
    output wire [2:0]   m_axi_act2_ARPROT, output wire [3:0] m_axi_act2_ARQOS, output wire [3:0] m_axi_act2_ARREGION,
    output wire [0:0]   m_axi_act2_ARUSER,
    input  wire         m_axi_act2_RVALID, output wire m_axi_act2_RREADY, input wire [`ZQ_AXI_DATA_BITS-1:0] m_axi_act2_RDATA,
    input  wire         m_axi_act2_RLAST, input wire [0:0] m_axi_act2_RID, input wire [0:0] m_axi_act2_RUSER,
    input  wire [1:0]   m_axi_act2_RRESP,
    input  wire         m_axi_act2_BVALID, output wire m_axi_act2_BREADY, input wire [1:0] m_axi_act2_BRESP,
    input  wire [0:0]   m_axi_act2_BID, input wire [0:0] m_axi_act2_BUSER,

    output wire         interrupt
);

    localparam RB      = `ZQ_ROW_BITS;
    localparam WPG     = N_PE / N_CI;
    localparam ROW_W   = (ACT_ROWS > 1) ? $clog2(ACT_ROWS) : 1;
    localparam BANK_W  = (WPG > 1) ? $clog2(WPG) : 1;
    localparam GR_W    = (GAP_ROWS > 1) ? $clog2(GAP_ROWS) : 1;
    localparam CLS_W   = (N_CLASSES > 1) ? $clog2(N_CLASSES) : 1;
    localparam LI_W    = (N_LAYERS > 1) ? $clog2(N_LAYERS) : 1;
    localparam DDR_OUT = (N_PE >= 8) ? 1 : 0;

    // ---- parameter checks at elaboration -------------------------------------------
    // parameter checks, at elaboration
    if ((N_PE & (N_PE - 1)) != 0 || (N_CI & (N_CI - 1)) != 0) begin : g_param_check0
        $error("zq_top: N_PE=%0d and N_CI=%0d must be powers of two", N_PE, N_CI);
    end
    if (N_PE % N_CI != 0) begin : g_param_check1
        $error("zq_top: N_PE=%0d must be a multiple of N_CI=%0d", N_PE, N_CI);
    end
    if (N_CI < 4) begin : g_param_check2
        $error("zq_top: N_CI=%0d < 4: a weight word must hold the N_PE biases", N_CI);
    end
    if (N_PE % 2 != 0) begin : g_param_check3
        $error("zq_top: N_PE=%0d must be even", N_PE);
    end
    if (WBUF_DEPTH > (1 << WR_W)) begin : g_param_check4
        $error("zq_top: WBUF_DEPTH=%0d > 2^WR_W=%0d", WBUF_DEPTH, 1 << WR_W);
    end
    if (HDR_BYTES % `ZQ_AXI_LINE_BYTES != 0) begin : g_param_check5
        $error("zq_top: HDR_BYTES=%0d", HDR_BYTES);
    end
    if (`ZQ_SPEC_VERSION != (ENGINE_INFO & 255)) begin : g_param_check6
        $error("zq_top: ENGINE_INFO spec version differs from zq_spec.svh");
    end
    if (`ZQ_RTL_LAYER_DRAIN < `ZQ_RTL_PIPE_WRITEBACK) begin : g_param_check7
        $error("zq_top: a drain of %0d cycles does not cover the write-back", `ZQ_RTL_LAYER_DRAIN);
    end

    // ---- reset ----------------------------------------------------------------------
    // ap_rst_n as it comes and for one cycle after it rises (registered), for each block from its
    // own copy of the register: no one net drives the reset of every flip-flop of the engine.
    // The copies are kept (synthesis would merge equal registers): Yosys by the block's keep,
    // Vivado by the signal's.
    localparam int RST_REGS = 0, RST_CTRL = 1, RST_STEM = 2, RST_WDMA = 3, RST_FILL = 4, RST_OUT = 5,
                   RST_CORE = 6, RST_AXIS = 7, RST_CNT = 8, N_RST = 9;
    logic [N_RST-1:0] rst_any;
    for (genvar k = 0; k < N_RST; k++) begin : g_rst
        (* keep = "true" *) logic rst;
        (* keep *) always_ff @(posedge ap_clk) rst <= !ap_rst_n;
        assign rst_any[k] = rst || !ap_rst_n;
    end

    // ---- registers ------------------------------------------------------------------
    logic        ap_start, ap_done, ap_idle, ap_ready;
    logic [63:0] r_wts, r_act;
    logic [31:0] r_layer_sel;
    logic [31:0] o_status, o_frames, o_cycles, o_stalls, o_rd, o_wr, o_lcyc, o_lstall;
    logic        v_end, v_start;

    zq_axil_regs #(.ADDR_W(C_S_AXI_CONTROL_ADDR_WIDTH)) u_regs (
        .clk(ap_clk), .rst(rst_any[RST_REGS]),
        .s_axi_awaddr(s_axi_control_AWADDR), .s_axi_awvalid(s_axi_control_AWVALID), .s_axi_awready(s_axi_control_AWREADY),
        .s_axi_wdata(s_axi_control_WDATA), .s_axi_wstrb(s_axi_control_WSTRB), .s_axi_wvalid(s_axi_control_WVALID),
        .s_axi_wready(s_axi_control_WREADY), .s_axi_bresp(s_axi_control_BRESP), .s_axi_bvalid(s_axi_control_BVALID),
        .s_axi_bready(s_axi_control_BREADY), .s_axi_araddr(s_axi_control_ARADDR), .s_axi_arvalid(s_axi_control_ARVALID),
        .s_axi_arready(s_axi_control_ARREADY), .s_axi_rdata(s_axi_control_RDATA), .s_axi_rresp(s_axi_control_RRESP),
        .s_axi_rvalid(s_axi_control_RVALID), .s_axi_rready(s_axi_control_RREADY), .interrupt(interrupt),
        .ap_start(ap_start), .ap_done(ap_done), .ap_idle(ap_idle), .ap_ready(ap_ready),
        .wts(r_wts), .act(r_act), .layer_sel(r_layer_sel),
        .status(o_status), .status_vld(v_end), .frames_done(o_frames), .frames_done_vld(v_end),
        .net_id(NET_ID), .net_id_vld(v_start), .build_params(BUILD_PARAMS), .build_params_vld(v_start),
        .engine_info(ENGINE_INFO), .engine_info_vld(v_start),
        .cycles_last(o_cycles), .cycles_last_vld(v_end), .dram_stall_cycles(o_stalls), .dram_stall_cycles_vld(v_end),
        .dram_rd_bytes(o_rd), .dram_rd_bytes_vld(v_end), .dram_wr_bytes(o_wr), .dram_wr_bytes_vld(v_end),
        .layer_cycles(o_lcyc), .layer_cycles_vld(1'b1), .layer_stalls(o_lstall), .layer_stalls_vld(1'b1)
    );

    // ---- frame and layer control ------------------------------------------------------
    localparam [3:0] T_IDLE = 4'd0, T_CHECK = 4'd1, T_FETCH = 4'd2, T_DECODE = 4'd3, T_WAITWR = 4'd4,
                     T_RUN = 4'd5, T_DRAIN = 4'd6, T_INPUT = 4'd7, T_OUT = 4'd8, T_ABORT = 4'd9;
    logic [3:0]    state;
    logic [LI_W:0] li;
    logic [RB-1:0] row;
    logic          layer_start, frame_start, abort;
    // status: the flag bits of this frame below, the saturating error-frame count from ERRCNT_SHIFT up
    localparam int ERRF_W = $clog2(`ZQ_STATUS_FLAGS_MASK + 1);
    localparam int ERRC_W = 32 - `ZQ_STATUS_ERRCNT_SHIFT;
    localparam int ALIGN_LG = $clog2(`ZQ_ADDR_ALIGN);
    logic [ERRF_W-1:0] err_flags;      // the status bits of this frame
    logic [ERRC_W-1:0] err_frames;
    wire               err_count = err_flags != 0 && err_frames != ERRC_W'(`ZQ_STATUS_ERRCNT_MAX);
    wire [ERRC_W-1:0]  err_frames_next = err_count ? err_frames + ERRC_W'(1) : err_frames;
    logic [31:0]   frames;
    localparam DRAIN_W = $clog2(`ZQ_RTL_LAYER_DRAIN + 1);
    logic [DRAIN_W-1:0] drain_cnt;
    logic [31:0]   wts_base, act_base;

    `define ZQ_ROW_FUNCTIONS
    `include "zq_spec.svh"

    // decoded layer constants (registered in T_DECODE)
    logic [4:0]  c_lg_in, c_lg_out, c_lg_band, c_src_lg_rows;
    logic        c_k3, c_s2, c_relu, c_src_signed, c_w_res, c_rd_wait, c_ring, c_src_ddr;
    logic [9:0]  c_chunks, c_groups, c_dst_cw0;
    logic [6:0]  c_co_last;
    logic [1:0]  c_dst_kind, c_src_path, c_dst_path;
    logic [ROW_W-1:0] c_src_base, c_dst_base;
    logic [7:0]  c_dst_cg0, c_src_cgrps;
    logic [10:0] c_in_rows;
    logic [31:0] c_src_addr, c_dst_addr;
    logic [23:0] c_w_off;
    logic [11:0] c_w_blk;
    logic signed [31:0] c_rnd;
    logic        c_shr;
    logic [4:0]  c_sh;
    logic signed [17:0] c_lo, c_hi;

    // sub-block status
    logic core_busy, fill_busy, wdma_busy, out_idle, stem_in_done, stem_first;
    logic stem_short, stem_long, wdma_hdr_bad, wdma_err, fill_err, out_err, out_done;
    logic [15:0] drain_frames, extra_left;   // error frames still owed for beats dropped after a long frame
    logic stall_mem;

    // the base addresses out of the DDR window or misaligned, registered: T_CHECK reads the check
    // of the values T_IDLE latched (wts_base, act_base). base + size > window is base > window - size
    // (a compare with a constant), or always when the image is larger than the window.
    localparam [63:0] WINDOW   = 64'(`ZQ_DDR_WINDOW_BYTES);
    localparam [63:0] WTS_LAST = WINDOW - 64'(IMAGE_BYTES);     // the highest base that fits
    localparam [63:0] ACT_LAST = WINDOW - 64'(SCRATCH_BYTES);
    localparam        WTS_FITS = 64'(IMAGE_BYTES) <= WINDOW, ACT_FITS = 64'(SCRATCH_BYTES) <= WINDOW;
    logic addr_bad;
    always_ff @(posedge ap_clk)
        addr_bad <= (r_wts[63:32] != 0) || (r_wts[ALIGN_LG-1:0] != 0) || !WTS_FITS || ({32'd0, r_wts[31:0]} > WTS_LAST) ||
                    ((SCRATCH_BYTES != 0) && ((r_act[63:32] != 0) || (r_act[ALIGN_LG-1:0] != 0) || !ACT_FITS ||
                                              ({32'd0, r_act[31:0]} > ACT_LAST)));
    wire new_err = stem_short || stem_long || wdma_hdr_bad || wdma_err || fill_err || out_err;
    wire quiet = !core_busy && !fill_busy && !wdma_busy && out_idle;

    assign ap_idle  = (state == T_IDLE) && !ap_start;
    wire last_out = out_done && (extra_left == '0);   // the frame's last output frame
    assign ap_done  = last_out;
    assign ap_ready = last_out;

    always_ff @(posedge ap_clk) begin
        layer_start <= 1'b0;
        frame_start <= 1'b0;
        v_start     <= 1'b0;
        v_end       <= 1'b0;
        if (rst_any[RST_CTRL]) begin
            state      <= T_IDLE;
            extra_left <= '0;
            abort      <= 1'b0;
            err_flags  <= '0;
            err_frames <= '0;
            frames     <= '0;
            o_status   <= '0;
            o_frames   <= '0;
        end else begin
            // errors of the running frame (the sub-blocks clear theirs with frame_start, in T_CHECK)
            if (state != T_IDLE && state != T_CHECK) begin
                if (stem_short)   err_flags[`ZQ_STATUS_SHORT_FRAME]   <= 1'b1;
                if (stem_long)    err_flags[`ZQ_STATUS_LONG_FRAME]    <= 1'b1;
                if (wdma_err || fill_err) err_flags[`ZQ_STATUS_AXI_READ_ERROR] <= 1'b1;
                if (out_err)      err_flags[`ZQ_STATUS_AXI_WRITE_ERROR] <= 1'b1;
                if (wdma_hdr_bad) err_flags[`ZQ_STATUS_WEIGHT_IMAGE]  <= 1'b1;
            end
            case (state)
                T_IDLE: if (ap_start) begin
                    state       <= T_CHECK;
                    frame_start <= 1'b1;
                    err_flags   <= '0;
                    abort       <= 1'b0;
                    v_start     <= 1'b1;
                    wts_base    <= r_wts[31:0];
                    act_base    <= r_act[31:0];
                end
                T_CHECK: begin
                    li <= '0;
                    if (addr_bad) begin
                        err_flags[`ZQ_STATUS_ADDRESS_RANGE] <= 1'b1;
                        abort <= 1'b1;
                        state <= T_ABORT;
                    end else begin
                        state <= T_FETCH;
                    end
                end
                T_FETCH: begin
                    for (int i = 0; i < N_LAYERS; i++)      // a mux over the rows (no li * RB multiply)
                        if (li == (LI_W+1)'(i)) row <= LAYER_TABLE[i*RB +: RB];
                    state <= T_DECODE;
                end
                T_DECODE: begin
                    c_lg_in <= row_lg_in(row);   c_lg_out <= row_lg_out(row);   c_lg_band <= row_lg_band(row);
                    c_k3 <= row_k3(row) != 0;    c_s2 <= row_s2(row) != 0;      c_relu <= row_relu(row) != 0;
                    c_chunks <= row_ci_chunks(row);  c_groups <= row_co_groups(row);  c_co_last <= row_co_last(row);
                    c_src_signed <= row_src_signed(row) != 0;
                    c_src_base <= ROW_W'(row_src_base(row));  c_src_lg_rows <= row_src_lg_rows(row);
                    c_ring <= row_src_kind(row) != 2'(`ZQ_SRC_ACT);
                    c_src_ddr <= row_src_kind(row) == 2'(`ZQ_SRC_DDR);
                    c_src_cgrps <= row_src_cgrps(row);  c_src_path <= row_src_path(row);
                    c_src_addr <= act_base + row_src_ddr(row);
                    c_in_rows <= (row_src_kind(row) == 2'(`ZQ_SRC_STEM)) ? 11'(STEM_SIZE) : (11'd1 << row_lg_in(row));
                    c_dst_kind <= row_dst_kind(row);  c_dst_base <= ROW_W'(row_dst_base(row));
                    c_dst_cw0 <= row_dst_cw0(row);    c_dst_cg0 <= row_dst_cg0(row);  c_dst_path <= row_dst_path(row);
                    c_dst_addr <= act_base + row_dst_ddr(row);
                    c_w_off <= row_w_off(row);  c_w_blk <= row_w_blk(row);  c_w_res <= row_w_res(row) != 0;
                    c_rd_wait <= row_rd_wait(row) != 0;
                    c_shr <= row_shift(row) > 0;
                    c_sh  <= (row_shift(row) > 0) ? 5'(row_shift(row)) : 5'(-row_shift(row));
                    c_rnd <= (row_shift(row) > 0) ? (32'sd1 <<< (row_shift(row) - 1)) : 32'sd0;
                    c_lo  <= row_out_lo(row);
                    c_hi  <= row_out_hi(row);
                    state <= T_WAITWR;
                end
                T_WAITWR: if (!c_rd_wait || out_idle) begin
                    layer_start <= 1'b1;
                    state <= T_RUN;
                end
                // the layer ends when its last result is in the write-back registers and its input
                // DMA is done: a layer that does not read its source's last rows (a 1x1 stride-2
                // conv) finishes before the DMA has them, and the next layer's DMA must not take
                // their beats
                T_RUN: if (!layer_start && !core_busy && !fill_busy) begin
                    drain_cnt <= DRAIN_W'(`ZQ_RTL_LAYER_DRAIN - 1);
                    state <= T_DRAIN;
                end
                T_DRAIN: begin                       // the last result's write-back, then the next row
                    drain_cnt <= drain_cnt - DRAIN_W'(1);
                    if (drain_cnt == '0) begin
                        if (li == (LI_W+1)'(N_LAYERS - 1)) state <= T_INPUT;
                        else begin
                            li <= li + 1'b1;
                            state <= T_FETCH;
                        end
                    end
                end
                T_INPUT: if (stem_in_done && !new_err) begin   // a long frame shows here
                    extra_left <= '0;
                    state <= T_OUT;
                end
                T_ABORT: if (quiet && stem_in_done) begin
                    extra_left <= drain_frames;
                    state <= T_OUT;
                end
                T_OUT: if (out_done) begin      // the status is written with ap_done
                    frames <= frames + 32'd1;
                    err_frames <= err_frames_next;
                    if (extra_left != '0) begin
                        extra_left <= extra_left - 16'd1;        // another error frame follows
                    end else begin
                        o_status <= (32'(err_frames_next) << `ZQ_STATUS_ERRCNT_SHIFT) | 32'(err_flags);
                        o_frames <= frames + 32'd1;
                        v_end <= 1'b1;
                        abort <= 1'b0;
                        state <= T_IDLE;
                    end
                end
                default: state <= T_IDLE;
            endcase
            // any error before the output phase aborts the frame
            if (new_err && state != T_IDLE && state != T_ABORT && state != T_OUT && state != T_CHECK) begin
                abort <= 1'b1;
                state <= T_ABORT;
            end
        end
    end
    wire out_start = (state == T_INPUT && stem_in_done && !new_err) || (state == T_ABORT && quiet && stem_in_done) ||
                     (state == T_OUT && out_done && extra_left != '0);
    wire out_err_frame = state == T_ABORT || state == T_OUT;

    // ---- memories -----------------------------------------------------------------------
    logic              act_rd_en, act_rd_zero;
    logic [BANK_W-1:0] act_rd_bank;
    logic [ROW_W-1:0]  act_rd_row;
    logic [N_CI*8-1:0] act_rd_data;
    logic [WPG-1:0]    act_a_en;
    logic [WPG*ROW_W-1:0] act_a_row;
    logic [N_PE*8-1:0] act_a_data;
    logic              act_b_valid, act_b_ready;
    logic [ROW_W-1:0]  act_b_row;
    logic [WPG-1:0]    act_b_mask;
    logic [N_PE*8-1:0] act_b_data;

    zq_act_mem #(.WPG(WPG), .ROWS(ACT_ROWS), .WORD_W(N_CI * 8), .ROW_W(ROW_W)) u_act (
        .clk(ap_clk), .rd_en(act_rd_en), .rd_bank(act_rd_bank), .rd_row(act_rd_row), .rd_zero(act_rd_zero),
        .rd_data(act_rd_data), .a_en(act_a_en), .a_row(act_a_row), .a_data(act_a_data),
        .b_valid(act_b_valid), .b_ready(act_b_ready), .b_row(act_b_row), .b_mask(act_b_mask), .b_data(act_b_data)
    );

    logic              w_rd_en, w_wr_en;
    logic [WR_W-1:0]   w_rd_addr, w_wr_addr;
    logic [N_PE*N_CI*8-1:0] w_rd_data, w_wr_data;
    localparam WB_AW = (WBUF_DEPTH > 1) ? $clog2(WBUF_DEPTH) : 1;
    zq_ram_sdp #(.DATA_W(N_PE * N_CI * 8), .DEPTH(WBUF_DEPTH), .OUT_REG(1), .ADDR_W(WB_AW)) u_wbuf (
        .clk(ap_clk), .wr_en(w_wr_en), .wr_addr(WB_AW'(w_wr_addr)), .wr_data(w_wr_data),
        .rd_en(w_rd_en), .rd_addr(WB_AW'(w_rd_addr)), .rd_data(w_rd_data)
    );

    // ---- the stem, the DMAs and the core ------------------------------------------------
    logic [10:0] rows_release, stem_rows, fill_rows;
    logic [23:0] w_loaded, w_release;
    logic        out_full;
    logic        ddr_valid;
    logic [31:0] ddr_addr;
    logic [15:0] ddr_left;
    logic [N_PE*8-1:0] ddr_data;
    logic        gap_wr_en;
    logic [GR_W-1:0]  gap_wr_row;
    logic [N_PE*32-1:0] gap_wr_data;
    logic        stem_b_valid, fill_b_valid, stem_b_ready, fill_b_ready;
    logic [ROW_W-1:0] stem_b_row, fill_b_row;
    logic [WPG-1:0]   stem_b_mask;
    logic [N_PE*8-1:0] stem_b_data, fill_b_data;
    logic [31:0] wdma_bytes, fill_bytes, out_bytes;
    logic        wdma_hdr_ok;

    // the first layer's ring comes from the stem, later rings from DDR: port B is one or the other
    wire layer0 = (li == '0);
    assign act_b_valid  = layer0 ? stem_b_valid : fill_b_valid;
    assign act_b_row    = layer0 ? stem_b_row : fill_b_row;
    assign act_b_mask   = layer0 ? stem_b_mask : {WPG{1'b1}};
    assign act_b_data   = layer0 ? stem_b_data : fill_b_data;
    assign stem_b_ready = layer0 && act_b_ready;
    assign fill_b_ready = !layer0 && act_b_ready;

    zq_stem #(.IN_SIZE(IN_SIZE), .IN_CH(IN_CH), .K(STEM_K), .S(STEM_S), .SIZE(STEM_SIZE), .IN_WORDS(IN_WORDS),
              .N_CI(N_CI), .WPG(WPG), .ROW_W(ROW_W), .RAW_RR(RAW_RR)) u_stem (
        .clk(ap_clk), .rst(rst_any[RST_STEM]), .start(frame_start), .abort(abort),
        .ring(ROW_W'(row_src_base(LAYER_TABLE[RB-1:0]))), .lg_rows(row_src_lg_rows(LAYER_TABLE[RB-1:0])),
        .release_rows(rows_release), .rows_avail(stem_rows),
        .s_tdata(s_axis_in_TDATA), .s_tvalid(s_axis_in_TVALID), .s_tready(s_axis_in_TREADY),
        .s_tlast(s_axis_in_TLAST[0]), .first_beat(stem_first), .in_done(stem_in_done),
        .err_short(stem_short), .err_long(stem_long), .drain_frames(drain_frames),
        .b_valid(stem_b_valid), .b_ready(stem_b_ready), .b_row(stem_b_row), .b_mask(stem_b_mask), .b_data(stem_b_data)
    );

    zq_wdma #(.WORD_BYTES(N_PE * N_CI), .WR_W(WR_W), .N_WORDS(N_WORDS), .HDR_BYTES(HDR_BYTES), .NET_ID(NET_ID),
              .CACHE(CACHE)) u_wdma (
        .clk(ap_clk), .rst(rst_any[RST_WDMA]), .start(frame_start && !addr_bad), .abort(abort),
        .base(wts_base), .release_words(w_release), .loaded(w_loaded), .hdr_ok(wdma_hdr_ok), .hdr_bad(wdma_hdr_bad),
        .err(wdma_err), .busy(wdma_busy), .w_wr_en(w_wr_en), .w_wr_addr(w_wr_addr), .w_wr_data(w_wr_data),
        .m_arvalid(m_axi_wts_ARVALID), .m_arready(m_axi_wts_ARREADY), .m_araddr(m_axi_wts_ARADDR),
        .m_arlen(m_axi_wts_ARLEN), .m_rvalid(m_axi_wts_RVALID), .m_rready(m_axi_wts_RREADY),
        .m_rdata(m_axi_wts_RDATA), .m_rlast(m_axi_wts_RLAST), .m_rresp(m_axi_wts_RRESP), .bytes_read(wdma_bytes)
    );

    zq_fill_paths #(.N_PE(N_PE), .ROW_W(ROW_W), .PATHS(ACT_PATHS)) u_fill (
        .clk(ap_clk), .rst(rst_any[RST_FILL]), .start(layer_start && c_src_ddr), .paths(c_src_path), .abort(abort),
        .base(c_src_addr), .lg_w(c_lg_in), .cgrps(c_src_cgrps), .ring(c_src_base), .lg_rows(c_src_lg_rows),
        .release_rows(rows_release), .rows_avail(fill_rows), .busy(fill_busy),
        .b_valid(fill_b_valid), .b_ready(fill_b_ready), .b_row(fill_b_row), .b_data(fill_b_data),
        .m0_arvalid(m_axi_act_ARVALID), .m0_arready(m_axi_act_ARREADY), .m0_araddr(m_axi_act_ARADDR),
        .m0_arlen(m_axi_act_ARLEN), .m0_rvalid(m_axi_act_RVALID), .m0_rready(m_axi_act_RREADY),
        .m0_rdata(m_axi_act_RDATA), .m0_rlast(m_axi_act_RLAST), .m0_rresp(m_axi_act_RRESP),
        .m1_arvalid(m_axi_act2_ARVALID), .m1_arready(m_axi_act2_ARREADY), .m1_araddr(m_axi_act2_ARADDR),
        .m1_arlen(m_axi_act2_ARLEN), .m1_rvalid(m_axi_act2_RVALID), .m1_rready(m_axi_act2_RREADY),
        .m1_rdata(m_axi_act2_RDATA), .m1_rlast(m_axi_act2_RLAST), .m1_rresp(m_axi_act2_RRESP),
        .err(fill_err), .bytes_read(fill_bytes)
    );

    zq_out_paths #(.N_PE(N_PE), .PATHS(ACT_PATHS)) u_out (
        .clk(ap_clk), .rst(rst_any[RST_OUT]), .abort(abort), .paths(c_dst_path), .in_valid(ddr_valid), .in_addr(ddr_addr),
        .in_left(ddr_left), .in_data(ddr_data), .full(out_full),
        .m0_awvalid(m_axi_act_AWVALID), .m0_awready(m_axi_act_AWREADY), .m0_awaddr(m_axi_act_AWADDR),
        .m0_awlen(m_axi_act_AWLEN), .m0_wvalid(m_axi_act_WVALID), .m0_wready(m_axi_act_WREADY),
        .m0_wdata(m_axi_act_WDATA), .m0_wlast(m_axi_act_WLAST), .m0_bvalid(m_axi_act_BVALID),
        .m0_bready(m_axi_act_BREADY), .m0_bresp(m_axi_act_BRESP),
        .m1_awvalid(m_axi_wts_AWVALID), .m1_awready(m_axi_wts_AWREADY), .m1_awaddr(m_axi_wts_AWADDR),
        .m1_awlen(m_axi_wts_AWLEN), .m1_wvalid(m_axi_wts_WVALID), .m1_wready(m_axi_wts_WREADY),
        .m1_wdata(m_axi_wts_WDATA), .m1_wlast(m_axi_wts_WLAST), .m1_bvalid(m_axi_wts_BVALID),
        .m1_bready(m_axi_wts_BREADY), .m1_bresp(m_axi_wts_BRESP),
        .err(out_err), .idle(out_idle), .bytes_written(out_bytes)
    );

    zq_core #(.N_PE(N_PE), .N_CI(N_CI), .DSP_PAIRS(DSP_PAIRS), .ROW_W(ROW_W), .WR_W(WR_W), .GAP_ROWS(GAP_ROWS)) u_core (
        .clk(ap_clk), .rst(rst_any[RST_CORE]), .frame_start(frame_start), .start(layer_start), .abort(abort), .busy(core_busy),
        .lg_in(c_lg_in), .lg_out(c_lg_out), .k3(c_k3), .s2(c_s2), .ci_chunks(c_chunks), .co_groups(c_groups),
        .co_last(c_co_last), .lg_band(c_lg_band), .ring_fed(c_ring), .src_signed(c_src_signed),
        .src_base(c_src_base), .src_lg_rows(c_src_lg_rows), .in_rows(c_in_rows), .dst_kind(c_dst_kind),
        .dst_base(c_dst_base), .dst_cw0(c_dst_cw0), .dst_cg0(c_dst_cg0), .dst_addr(c_dst_addr),
        .w_off(c_w_off), .w_blk(c_w_blk), .w_res(c_w_res), .rq_rnd(c_rnd), .rq_shr(c_shr), .rq_sh(c_sh),
        .relu(c_relu), .out_lo(c_lo), .out_hi(c_hi),
        .rows_avail(c_src_ddr ? fill_rows : stem_rows), .rows_release(rows_release), .w_loaded(w_loaded),
        .w_release(w_release), .out_full(out_full && DDR_OUT != 0), .stall_mem(stall_mem),
        .act_rd_en(act_rd_en), .act_rd_bank(act_rd_bank), .act_rd_row(act_rd_row), .act_rd_zero(act_rd_zero),
        .act_rd_data(act_rd_data), .act_wr_en(act_a_en), .act_wr_row(act_a_row), .act_wr_data(act_a_data),
        .w_rd_en(w_rd_en), .w_rd_addr(w_rd_addr), .w_rd_data(w_rd_data),
        .ddr_valid(ddr_valid), .ddr_addr(ddr_addr), .ddr_left(ddr_left), .ddr_data(ddr_data),
        .gap_wr_en(gap_wr_en), .gap_wr_row(gap_wr_row), .gap_wr_data(gap_wr_data)
    );

    // ---- logits ---------------------------------------------------------------------------
    logic [CLS_W-1:0] sel;
    logic [31:0]      logit;
    zq_gap #(.N_PE(N_PE), .GAP_ROWS(GAP_ROWS), .GAP_SHIFT(GAP_SHIFT), .GAP_ROUND(GAP_ROUND),
             .N_CLASSES(N_CLASSES)) u_gap (
        .clk(ap_clk), .wr_en(gap_wr_en), .wr_row(gap_wr_row), .wr_data(gap_wr_data), .rd_sel(sel), .rd_logit(logit)
    );
    zq_axis_out #(.N_CLASSES(N_CLASSES), .ERR_VALUE(`ZQ_ERROR_LOGIT), .LAT(2)) u_axis_out (
        .clk(ap_clk), .rst(rst_any[RST_AXIS]), .start(out_start), .err(out_err_frame), .sel(sel), .logit(logit),
        .m_axis_tdata(m_axis_out_TDATA), .m_axis_tvalid(m_axis_out_TVALID), .m_axis_tready(m_axis_out_TREADY),
        .m_axis_tlast(m_axis_out_TLAST[0]), .done(out_done)
    );
    assign m_axis_out_TKEEP = '1;
    assign m_axis_out_TSTRB = '1;

    // ---- measured figures (RTL twin only) -----------------------------------------------------
    logic        cnt_run;
    logic [31:0] cnt, stalls, rd0, wr0, lcyc, lstall;
    logic [31:0] lc_mem [0:N_LAYERS-1];
    logic [31:0] ls_mem [0:N_LAYERS-1];
    always_ff @(posedge ap_clk) begin
        if (rst_any[RST_CNT]) begin
            cnt_run <= 1'b0;
            o_cycles <= '0; o_stalls <= '0; o_rd <= '0; o_wr <= '0;
        end else begin
            if (stem_first && state != T_IDLE) begin     // (registered: the handshake was the cycle before)
                cnt_run <= 1'b1;
                cnt     <= 32'd2;
            end else if (cnt_run) begin
                cnt <= cnt + 32'd1;
            end
            if (frame_start) begin
                stalls <= '0;
                rd0 <= wdma_bytes + fill_bytes;
                wr0 <= out_bytes;
            end else if ((stall_mem && state == T_RUN) || (state == T_WAITWR && c_rd_wait && !out_idle)) begin
                stalls <= stalls + 32'd1;
            end
            // per layer: from its row fetch to the next row fetch (or the output phase)
            if (state == T_FETCH) begin
                lcyc <= 32'd1;
                lstall <= '0;
            end else begin
                lcyc <= lcyc + 32'd1;
                if ((stall_mem && state == T_RUN) || (state == T_WAITWR && c_rd_wait && !out_idle)) lstall <= lstall + 32'd1;
            end
            if (state == T_DRAIN && drain_cnt == '0) begin
                lc_mem[li[LI_W-1:0]] <= lcyc + 32'd1;
                ls_mem[li[LI_W-1:0]] <= lstall;
            end
            if (last_out) begin
                cnt_run  <= 1'b0;
                o_cycles <= cnt + 32'd1;
                o_stalls <= stalls;
                o_rd     <= wdma_bytes + fill_bytes - rd0;
                o_wr     <= out_bytes - wr0;
            end
        end
    end
    assign o_lcyc   = (r_layer_sel < N_LAYERS) ? lc_mem[LI_W'(r_layer_sel)] : 32'd0;
    assign o_lstall = (r_layer_sel < N_LAYERS) ? ls_mem[LI_W'(r_layer_sel)] : 32'd0;

    // ---- tied-off and constant AXI fields (full-width INCR beats, ID 0, AxCACHE 0011) ---------------
    localparam [2:0] AXSIZE = 3'($clog2(`ZQ_AXI_DATA_BITS / 8));
    assign m_axi_wts_AWID = '0; assign m_axi_wts_AWSIZE = AXSIZE; assign m_axi_wts_AWBURST = 2'd1;
    assign m_axi_wts_AWLOCK = '0; assign m_axi_wts_AWCACHE = 4'd3; assign m_axi_wts_AWPROT = '0;
    assign m_axi_wts_AWQOS = '0; assign m_axi_wts_AWREGION = '0; assign m_axi_wts_AWUSER = '0;
    assign m_axi_wts_WSTRB = '1; assign m_axi_wts_WID = '0; assign m_axi_wts_WUSER = '0;
    assign m_axi_wts_ARID = '0; assign m_axi_wts_ARSIZE = AXSIZE; assign m_axi_wts_ARBURST = 2'd1;
    assign m_axi_wts_ARLOCK = '0; assign m_axi_wts_ARCACHE = 4'd3; assign m_axi_wts_ARPROT = '0;
    assign m_axi_wts_ARQOS = '0; assign m_axi_wts_ARREGION = '0; assign m_axi_wts_ARUSER = '0;
    assign m_axi_act_AWID = '0; assign m_axi_act_AWSIZE = AXSIZE; assign m_axi_act_AWBURST = 2'd1;
    assign m_axi_act_AWLOCK = '0; assign m_axi_act_AWCACHE = 4'd3; assign m_axi_act_AWPROT = '0;
    assign m_axi_act_AWQOS = '0; assign m_axi_act_AWREGION = '0; assign m_axi_act_AWUSER = '0;
    assign m_axi_act_WSTRB = '1; assign m_axi_act_WID = '0; assign m_axi_act_WUSER = '0;
    assign m_axi_act_ARID = '0; assign m_axi_act_ARSIZE = AXSIZE; assign m_axi_act_ARBURST = 2'd1;
    assign m_axi_act_ARLOCK = '0; assign m_axi_act_ARCACHE = 4'd3; assign m_axi_act_ARPROT = '0;
    assign m_axi_act_ARQOS = '0; assign m_axi_act_ARREGION = '0; assign m_axi_act_ARUSER = '0;
    assign m_axi_act2_AWVALID = 1'b0; assign m_axi_act2_AWADDR = '0; assign m_axi_act2_AWID = '0;
    assign m_axi_act2_AWLEN = '0; assign m_axi_act2_AWSIZE = AXSIZE; assign m_axi_act2_AWBURST = 2'd1;
    assign m_axi_act2_AWLOCK = '0; assign m_axi_act2_AWCACHE = 4'd3; assign m_axi_act2_AWPROT = '0;
    assign m_axi_act2_AWQOS = '0; assign m_axi_act2_AWREGION = '0; assign m_axi_act2_AWUSER = '0;
    assign m_axi_act2_WVALID = 1'b0; assign m_axi_act2_WDATA = '0; assign m_axi_act2_WSTRB = '0;
    assign m_axi_act2_WLAST = 1'b0; assign m_axi_act2_WID = '0; assign m_axi_act2_WUSER = '0;
    assign m_axi_act2_BREADY = 1'b1;
    assign m_axi_act2_ARID = '0; assign m_axi_act2_ARSIZE = AXSIZE; assign m_axi_act2_ARBURST = 2'd1;
    assign m_axi_act2_ARLOCK = '0; assign m_axi_act2_ARCACHE = 4'd3; assign m_axi_act2_ARPROT = '0;
    assign m_axi_act2_ARQOS = '0; assign m_axi_act2_ARREGION = '0; assign m_axi_act2_ARUSER = '0;

    wire unused_ok = &{1'b0, s_axis_in_TKEEP, s_axis_in_TSTRB,
                       m_axi_wts_RID, m_axi_wts_RUSER, m_axi_wts_BID,
                       m_axi_wts_BUSER, m_axi_act_RID, m_axi_act_RUSER, m_axi_act_BID, m_axi_act_BUSER,
                       m_axi_act2_AWREADY, m_axi_act2_WREADY, m_axi_act2_RID, m_axi_act2_RUSER, m_axi_act2_BVALID,
                       m_axi_act2_BRESP, m_axi_act2_BID, m_axi_act2_BUSER,
                       wdma_hdr_ok, li[LI_W]};

endmodule

`default_nettype wire
