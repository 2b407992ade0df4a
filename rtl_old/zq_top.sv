// zq_top: the ZynqNet-style CNN engine, RTL twin of the Vitis HLS `zq_top`.
//
//   s_axis_in  (AXI4-Stream, 32-bit, 4 uint8 pixels per beat, HWC)
//      -> zq_axis_loader -> frame store -> zq_im2col -> buffer 0
//      -> zq_conv_engine (layer table, N_PE x N_CI MAC array, buffers 1..)
//      -> zq_gap (global average pool) -> zq_axis_out
//   m_axis_out (AXI4-Stream, 32-bit, one logit per beat, sign-extended)
//   s_axi_control (AXI4-Lite, ap_ctrl_hs + output scalars, rtl/regmap.json)
//
// One frame per ap_start (ap_ctrl_hs); with auto_restart frames run back to
// back. A frame whose TLAST comes early (short, status bit 0) or late (long,
// status bit 1) is not computed: the engine answers with an error frame of
// N_CLASSES beats of -32768. cycles_last counts the clock cycles from the one
// in which the frame's first input beat is accepted to the one in which its
// last output beat is accepted, both included.
//
// Network-specific parameters come from rtl_params.svh, generated from an
// export directory by `python -m zynqflow.sim.rtl_params`.
`include "rtl_params.svh"
`default_nettype none

module zq_top #(
    parameter N_PE          = `ZQ_N_PE,
    parameter N_CI          = `ZQ_N_CI,
    parameter W_BITS        = `ZQ_W_BITS,
    parameter A_BITS        = `ZQ_A_BITS,
    parameter OUT_BITS      = `ZQ_OUT_BITS,
    parameter N_LAYERS      = `ZQ_N_LAYERS,
    parameter IN_SIZE       = `ZQ_IN_SIZE,
    parameter IN_CH         = `ZQ_IN_CH,
    parameter IN_BYTES      = `ZQ_IN_BYTES,
    parameter IM2COL_K      = `ZQ_IM2COL_K,
    parameter IM2COL_STRIDE = `ZQ_IM2COL_STRIDE,
    parameter IM2COL_OUT    = `ZQ_IM2COL_OUT,
    parameter IM2COL_CH     = `ZQ_IM2COL_CH,
    parameter IN_WORDS      = `ZQ_IN_WORDS,
    parameter N_CLASSES     = `ZQ_N_CLASSES,
    parameter GAP_CH        = `ZQ_GAP_CH,
    parameter GAP_SHIFT     = `ZQ_GAP_SHIFT,
    parameter W_WORDS       = `ZQ_W_WORDS,
    parameter B_WORDS       = `ZQ_B_WORDS,
    parameter N_BUFS        = `ZQ_N_BUFS,
    parameter [15*32-1:0] BUF_WORDS = `ZQ_BUF_WORDS,
    parameter [31:0] NET_ID = `ZQ_NET_ID,
    parameter WEIGHTS_FILE  = `ZQ_WEIGHTS_FILE,
    parameter BIASES_FILE   = `ZQ_BIASES_FILE,
    parameter LAYERS_FILE   = `ZQ_LAYERS_FILE,
    parameter C_S_AXI_CONTROL_ADDR_WIDTH = `ZQ_REG_ADDR_WIDTH,
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

    output wire         interrupt
);

    // ---------------------------------------------------------------- derived sizes
    function automatic integer max_buf_words(input [15*32-1:0] words, input integer n);
        integer i;
        max_buf_words = 1;
        for (i = 0; i < n; i = i + 1)
            if (words[i*32 +: 32] > max_buf_words) max_buf_words = words[i*32 +: 32];
    endfunction

    localparam NB        = N_PE / N_CI;
    localparam ADDR_W    = $clog2(max_buf_words(BUF_WORDS, N_BUFS)) + 1;
    localparam IN_BEATS  = (IN_BYTES + 3) / 4;
    localparam BEAT_W    = (IN_BEATS > 1) ? $clog2(IN_BEATS) : 1;
    localparam NCH_W     = $clog2(N_PE + 1);
    localparam NW_W      = $clog2(NB + 1);
    localparam CLS_W     = (N_CLASSES > 1) ? $clog2(N_CLASSES) : 1;
    localparam [31:0] BUILD_PARAMS = (N_PE & 255) | ((N_CI & 255) << 8) | ((W_BITS & 255) << 16) | ((A_BITS & 255) << 24);

    // ---------------------------------------------------------------- reset
    logic rst;
    always_ff @(posedge ap_clk) rst <= !ap_rst_n;
    wire  rst_any = rst || !ap_rst_n;

    // ---------------------------------------------------------------- control registers
    logic        ap_start, ap_done, ap_idle, ap_ready;
    logic [31:0] status, cycles_last, frames_done, layer_sel, layer_cycles;
    logic        status_vld, id_vld, lcyc_vld;

    zq_axil_regs #(.ADDR_W(C_S_AXI_CONTROL_ADDR_WIDTH)) u_regs (
        .clk(ap_clk), .rst(rst_any),
        .s_axi_awaddr(s_axi_control_AWADDR), .s_axi_awvalid(s_axi_control_AWVALID), .s_axi_awready(s_axi_control_AWREADY),
        .s_axi_wdata(s_axi_control_WDATA), .s_axi_wstrb(s_axi_control_WSTRB), .s_axi_wvalid(s_axi_control_WVALID),
        .s_axi_wready(s_axi_control_WREADY), .s_axi_bresp(s_axi_control_BRESP), .s_axi_bvalid(s_axi_control_BVALID),
        .s_axi_bready(s_axi_control_BREADY), .s_axi_araddr(s_axi_control_ARADDR), .s_axi_arvalid(s_axi_control_ARVALID),
        .s_axi_arready(s_axi_control_ARREADY), .s_axi_rdata(s_axi_control_RDATA), .s_axi_rresp(s_axi_control_RRESP),
        .s_axi_rvalid(s_axi_control_RVALID), .s_axi_rready(s_axi_control_RREADY), .interrupt(interrupt),
        .ap_start(ap_start), .ap_done(ap_done), .ap_idle(ap_idle), .ap_ready(ap_ready),
        .status(status), .status_ap_vld(status_vld),
        .cycles_last(cycles_last), .cycles_last_ap_vld(status_vld),
        .frames_done(frames_done), .frames_done_ap_vld(status_vld),
        .net_id(NET_ID), .net_id_ap_vld(id_vld),
        .build_params(BUILD_PARAMS), .build_params_ap_vld(id_vld),
        .layer_sel(layer_sel), .layer_cycles(layer_cycles), .layer_cycles_ap_vld(lcyc_vld)
    );

    // ---------------------------------------------------------------- frame control
    localparam [2:0] T_IDLE = 3'd0, T_LOAD = 3'd1, T_IM2COL = 3'd2, T_CONV = 3'd3, T_OUT = 3'd4;
    logic [2:0]  state;
    logic        ld_done, ld_first, ld_err_short, ld_err_long;
    logic        im_done, cv_done, out_done;
    logic        cnt_run;
    logic [31:0] cnt;

    wire frame_start = (state == T_IDLE) && ap_start;

    assign ap_idle  = (state == T_IDLE) && !ap_start;
    assign ap_done  = out_done;
    assign ap_ready = out_done;
    assign id_vld   = frame_start;

    always_ff @(posedge ap_clk) begin
        status_vld <= 1'b0;
        lcyc_vld   <= 1'b0;
        if (rst_any) begin
            state       <= T_IDLE;
            cnt_run     <= 1'b0;
            cnt         <= '0;
            status      <= '0;
            cycles_last <= '0;
            frames_done <= '0;
        end else begin
            if (ld_first) begin
                cnt_run <= 1'b1;
                cnt     <= 32'd1;
            end else if (cnt_run) begin
                cnt <= cnt + 32'd1;
            end
            case (state)
                T_IDLE:   if (ap_start) state <= T_LOAD;
                T_LOAD:   if (ld_done) begin
                    status <= {30'd0, ld_err_long, ld_err_short};
                    state  <= (ld_err_long || ld_err_short) ? T_OUT : T_IM2COL;
                end
                T_IM2COL: if (im_done) state <= T_CONV;
                T_CONV:   if (cv_done) begin
                    state    <= T_OUT;
                    lcyc_vld <= 1'b1;
                end
                T_OUT:    if (out_done) begin
                    state       <= T_IDLE;
                    cnt_run     <= 1'b0;
                    cycles_last <= cnt + 32'd1;
                    frames_done <= frames_done + 32'd1;
                    status_vld  <= 1'b1;
                end
                default:  state <= T_IDLE;
            endcase
        end
    end

    // ---------------------------------------------------------------- input
    logic              fr_we;
    logic [BEAT_W-1:0] fr_addr;
    logic [31:0]       fr_data;

    zq_axis_loader #(.IN_BEATS(IN_BEATS)) u_loader (
        .clk(ap_clk), .rst(rst_any), .start(frame_start),
        .s_axis_tdata(s_axis_in_TDATA), .s_axis_tvalid(s_axis_in_TVALID),
        .s_axis_tready(s_axis_in_TREADY), .s_axis_tlast(s_axis_in_TLAST[0]),
        .fr_we(fr_we), .fr_addr(fr_addr), .fr_data(fr_data),
        .first(ld_first), .done(ld_done), .err_short(ld_err_short), .err_long(ld_err_long)
    );

    logic                   b0_en;
    logic [ADDR_W-1:0]      b0_addr;
    logic [N_CI*A_BITS-1:0] b0_data;

    zq_im2col #(
        .N_CI(N_CI), .A_BITS(A_BITS), .IN_SIZE(IN_SIZE), .IN_CH(IN_CH), .IN_BEATS(IN_BEATS),
        .K(IM2COL_K), .S(IM2COL_STRIDE), .OUT(IM2COL_OUT), .CH(IM2COL_CH), .IN_WORDS(IN_WORDS),
        .ADDR_W(ADDR_W)
    ) u_im2col (
        .clk(ap_clk), .rst(rst_any),
        .fr_we(fr_we), .fr_addr(fr_addr), .fr_data(fr_data),
        .start((state == T_LOAD) && ld_done && !ld_err_short && !ld_err_long), .done(im_done),
        .ld_en(b0_en), .ld_addr(b0_addr), .ld_data(b0_data)
    );

    // ---------------------------------------------------------------- engine and buffers
    logic                   rd_en, rd_zero, wr_en;
    logic [3:0]             rd_buf, wr_buf;
    logic [ADDR_W-1:0]      rd_addr, wr_addr;
    logic [N_CI*A_BITS-1:0] rd_data;
    logic [NW_W-1:0]        wr_nwords;
    logic [N_PE*A_BITS-1:0] wr_data;
    logic                   gap_en;
    logic [15:0]            gap_base;
    logic [NCH_W-1:0]       gap_n;
    logic [N_PE*OUT_BITS-1:0] gap_y;
    logic                   lc_valid;
    logic [15:0]            lc_layer;
    logic [31:0]            lc_cycles;
    logic                   cv_busy;

    zq_act_mem #(
        .N_BUFS(N_BUFS), .BUF_WORDS(BUF_WORDS), .WORD_W(N_CI*A_BITS), .NB(NB), .ADDR_W(ADDR_W)
    ) u_bufs (
        .clk(ap_clk),
        .rd_en(rd_en), .rd_buf(rd_buf), .rd_addr(rd_addr), .rd_zero(rd_zero), .rd_data(rd_data),
        .wr_en(wr_en), .wr_buf(wr_buf), .wr_addr(wr_addr), .wr_nwords(wr_nwords), .wr_data(wr_data),
        .ld_en(b0_en), .ld_addr(b0_addr), .ld_data(b0_data)
    );

    zq_conv_engine #(
        .N_PE(N_PE), .N_CI(N_CI), .W_BITS(W_BITS), .A_BITS(A_BITS), .OUT_W(OUT_BITS),
        .N_LAYERS(N_LAYERS), .W_WORDS(W_WORDS), .B_WORDS(B_WORDS), .ADDR_W(ADDR_W),
        .WEIGHTS_FILE(WEIGHTS_FILE), .BIASES_FILE(BIASES_FILE), .LAYERS_FILE(LAYERS_FILE)
    ) u_engine (
        .clk(ap_clk), .rst(rst_any), .start((state == T_IM2COL) && im_done), .done(cv_done), .busy(cv_busy),
        .rd_en(rd_en), .rd_buf(rd_buf), .rd_addr(rd_addr), .rd_zero(rd_zero), .rd_data(rd_data),
        .wr_en(wr_en), .wr_buf(wr_buf), .wr_addr(wr_addr), .wr_nwords(wr_nwords), .wr_data(wr_data),
        .gap_en(gap_en), .gap_base(gap_base), .gap_n(gap_n), .gap_y(gap_y),
        .lc_valid(lc_valid), .lc_layer(lc_layer), .lc_cycles(lc_cycles)
    );

    // per-layer cycle counts of the last computed frame, read through layer_sel
    localparam LI_W = (N_LAYERS > 1) ? $clog2(N_LAYERS) : 1;
    logic [31:0] lcyc [0:N_LAYERS-1];
    always_ff @(posedge ap_clk) begin
        if (lc_valid) lcyc[LI_W'(lc_layer)] <= lc_cycles;
    end
    assign layer_cycles = (layer_sel < N_LAYERS) ? lcyc[LI_W'(layer_sel)] : 32'd0;

    // ---------------------------------------------------------------- output
    logic [CLS_W-1:0] sel;
    logic [31:0]      logit;

    zq_gap #(
        .N_PE(N_PE), .OUT_W(OUT_BITS), .GAP_CH(GAP_CH), .N_CLASSES(N_CLASSES), .GAP_SHIFT(GAP_SHIFT)
    ) u_gap (
        .clk(ap_clk), .clear(rst_any || frame_start),
        .add_en(gap_en), .add_base(gap_base), .add_n(gap_n), .add_y(gap_y),
        .rd_sel(sel), .rd_logit(logit)
    );

    zq_axis_out #(.N_CLASSES(N_CLASSES)) u_out (
        .clk(ap_clk), .rst(rst_any),
        .start(((state == T_LOAD) && ld_done && (ld_err_short || ld_err_long)) || ((state == T_CONV) && cv_done)),
        .err(state == T_LOAD),
        .sel(sel), .logit(logit),
        .m_axis_tdata(m_axis_out_TDATA), .m_axis_tvalid(m_axis_out_TVALID), .m_axis_tready(m_axis_out_TREADY),
        .m_axis_tlast(m_axis_out_TLAST[0]), .done(out_done)
    );

    assign m_axis_out_TKEEP = 4'hF;
    assign m_axis_out_TSTRB = 4'hF;

    wire unused_ok = &{1'b0, s_axis_in_TKEEP, s_axis_in_TSTRB, cv_busy};

endmodule

`default_nettype wire
