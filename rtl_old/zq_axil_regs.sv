// zq_axil_regs: the AXI4-Lite control slave, register for register the one
// Vitis HLS generates for `#pragma HLS interface s_axilite port=return
// bundle=control` (ap_ctrl_hs) with output scalars (ap_vld). The map is
// rtl/regmap.json:
//
//   0x00 AP_CTRL   bit0 ap_start (R/W/COH)  bit1 ap_done (R/COR)  bit2 ap_idle (R)
//                  bit3 ap_ready (R/COR)    bit7 auto_restart (R/W)  bit9 interrupt (R)
//   0x04 GIE       bit0 global interrupt enable
//   0x08 IER       bit0 ap_done, bit1 ap_ready interrupt enable
//   0x0C ISR       bit0 ap_done, bit1 ap_ready (R/TOW)
//   0x10 status         0x14 bit0 status_ap_vld (R/COR)
//   0x20 cycles_last    0x24 bit0 cycles_last_ap_vld
//   0x30 frames_done    0x34 bit0 frames_done_ap_vld
//   0x40 net_id         0x44 bit0 net_id_ap_vld
//   0x50 build_params   0x54 bit0 build_params_ap_vld
//   0x60 layer_sel (R/W)
//   0x70 layer_cycles   0x74 bit0 layer_cycles_ap_vld
//
// The offsets come from rtl/regmap.json through the ZQ_REG_* macros of the
// generated rtl_params.svh (zynqflow.sim.rtl_params), so the JSON file is the
// only place the map is written down.
// Writes need AW and W (taken in any order, one outstanding); reads answer one
// cycle after the AR handshake. Responses are always OKAY.
`include "rtl_params.svh"
`default_nettype none

module zq_axil_regs #(
    parameter ADDR_W = `ZQ_REG_ADDR_WIDTH
) (
    input  wire               clk,
    input  wire               rst,

    input  wire [ADDR_W-1:0]  s_axi_awaddr,
    input  wire               s_axi_awvalid,
    output logic              s_axi_awready,
    input  wire [31:0]        s_axi_wdata,
    input  wire [3:0]         s_axi_wstrb,
    input  wire               s_axi_wvalid,
    output logic              s_axi_wready,
    output logic [1:0]        s_axi_bresp,
    output logic              s_axi_bvalid,
    input  wire               s_axi_bready,
    input  wire [ADDR_W-1:0]  s_axi_araddr,
    input  wire               s_axi_arvalid,
    output logic              s_axi_arready,
    output logic [31:0]       s_axi_rdata,
    output logic [1:0]        s_axi_rresp,
    output logic              s_axi_rvalid,
    input  wire               s_axi_rready,
    output logic              interrupt,

    // block-level handshake
    output logic              ap_start,
    input  wire               ap_done,
    input  wire               ap_idle,
    input  wire               ap_ready,
    // output scalars
    input  wire [31:0]        status,
    input  wire               status_ap_vld,
    input  wire [31:0]        cycles_last,
    input  wire               cycles_last_ap_vld,
    input  wire [31:0]        frames_done,
    input  wire               frames_done_ap_vld,
    input  wire [31:0]        net_id,
    input  wire               net_id_ap_vld,
    input  wire [31:0]        build_params,
    input  wire               build_params_ap_vld,
    // profiling window
    output logic [31:0]       layer_sel,
    input  wire [31:0]        layer_cycles,
    input  wire               layer_cycles_ap_vld
);

    localparam [ADDR_W-1:0]
        A_AP_CTRL  = ADDR_W'(`ZQ_REG_AP_CTRL),      A_GIE      = ADDR_W'(`ZQ_REG_GIE),
        A_IER      = ADDR_W'(`ZQ_REG_IER),          A_ISR      = ADDR_W'(`ZQ_REG_ISR),
        A_STATUS   = ADDR_W'(`ZQ_REG_STATUS),       A_STATUS_C = ADDR_W'(`ZQ_REG_STATUS_CTRL),
        A_CYCLES   = ADDR_W'(`ZQ_REG_CYCLES_LAST),  A_CYCLES_C = ADDR_W'(`ZQ_REG_CYCLES_LAST_CTRL),
        A_FRAMES   = ADDR_W'(`ZQ_REG_FRAMES_DONE),  A_FRAMES_C = ADDR_W'(`ZQ_REG_FRAMES_DONE_CTRL),
        A_NETID    = ADDR_W'(`ZQ_REG_NET_ID),       A_NETID_C  = ADDR_W'(`ZQ_REG_NET_ID_CTRL),
        A_BUILD    = ADDR_W'(`ZQ_REG_BUILD_PARAMS), A_BUILD_C  = ADDR_W'(`ZQ_REG_BUILD_PARAMS_CTRL),
        A_LSEL     = ADDR_W'(`ZQ_REG_LAYER_SEL),    A_LCYC     = ADDR_W'(`ZQ_REG_LAYER_CYCLES),
        A_LCYC_C   = ADDR_W'(`ZQ_REG_LAYER_CYCLES_CTRL);

    // ---------------------------------------------------------------- registers
    logic        int_ap_start, int_ap_done, int_ap_idle, int_ap_ready, int_auto_restart;
    logic        int_gie;
    logic [1:0]  int_ier, int_isr;
    logic [31:0] int_status, int_cycles, int_frames, int_netid, int_build, int_lsel;
    logic        v_status, v_cycles, v_frames, v_netid, v_build, v_lcyc;

    assign ap_start  = int_ap_start;
    assign interrupt = int_gie && (int_isr != 2'b00);
    assign layer_sel = int_lsel;

    // ---------------------------------------------------------------- write channel
    logic              aw_ok, w_ok;
    logic [ADDR_W-1:0] waddr;
    logic [31:0]       wdata;
    logic [3:0]        wstrb;
    wire  w_do = aw_ok && w_ok && !s_axi_bvalid;

    assign s_axi_awready = !aw_ok;
    assign s_axi_wready  = !w_ok;
    assign s_axi_bresp   = 2'b00;

    always_ff @(posedge clk) begin
        if (rst) begin
            aw_ok        <= 1'b0;
            w_ok         <= 1'b0;
            s_axi_bvalid <= 1'b0;
        end else begin
            if (s_axi_awvalid && s_axi_awready) begin aw_ok <= 1'b1; waddr <= s_axi_awaddr; end
            if (s_axi_wvalid && s_axi_wready)   begin w_ok <= 1'b1;  wdata <= s_axi_wdata; wstrb <= s_axi_wstrb; end
            if (s_axi_bvalid && s_axi_bready) s_axi_bvalid <= 1'b0;
            if (w_do) begin
                aw_ok        <= 1'b0;
                w_ok         <= 1'b0;
                s_axi_bvalid <= 1'b1;
            end
        end
    end

    // ---------------------------------------------------------------- read channel
    wire  ar_hs = s_axi_arvalid && s_axi_arready;
    wire [ADDR_W-1:0] raddr = s_axi_araddr;
    assign s_axi_arready = !s_axi_rvalid;
    assign s_axi_rresp   = 2'b00;

    logic [31:0] rd;
    always_comb begin
        rd = '0;
        case ({raddr[ADDR_W-1:2], 2'b00})
            A_AP_CTRL:  rd = {22'd0, interrupt, 1'b0, int_auto_restart, 3'd0,
                              int_ap_ready, int_ap_idle, int_ap_done, int_ap_start};
            A_GIE:      rd = {31'd0, int_gie};
            A_IER:      rd = {30'd0, int_ier};
            A_ISR:      rd = {30'd0, int_isr};
            A_STATUS:   rd = int_status;
            A_STATUS_C: rd = {31'd0, v_status};
            A_CYCLES:   rd = int_cycles;
            A_CYCLES_C: rd = {31'd0, v_cycles};
            A_FRAMES:   rd = int_frames;
            A_FRAMES_C: rd = {31'd0, v_frames};
            A_NETID:    rd = int_netid;
            A_NETID_C:  rd = {31'd0, v_netid};
            A_BUILD:    rd = int_build;
            A_BUILD_C:  rd = {31'd0, v_build};
            A_LSEL:     rd = int_lsel;
            A_LCYC:     rd = layer_cycles;
            A_LCYC_C:   rd = {31'd0, v_lcyc};
            default:    rd = '0;
        endcase
    end

    always_ff @(posedge clk) begin
        if (rst) begin
            s_axi_rvalid <= 1'b0;
        end else begin
            if (s_axi_rvalid && s_axi_rready) s_axi_rvalid <= 1'b0;
            if (ar_hs) begin
                s_axi_rvalid <= 1'b1;
                s_axi_rdata  <= rd;
            end
        end
    end

    wire r_ctrl  = ar_hs && ({raddr[ADDR_W-1:2], 2'b00} == A_AP_CTRL);
    wire r_stat  = ar_hs && ({raddr[ADDR_W-1:2], 2'b00} == A_STATUS_C);
    wire r_cyc   = ar_hs && ({raddr[ADDR_W-1:2], 2'b00} == A_CYCLES_C);
    wire r_frm   = ar_hs && ({raddr[ADDR_W-1:2], 2'b00} == A_FRAMES_C);
    wire r_nid   = ar_hs && ({raddr[ADDR_W-1:2], 2'b00} == A_NETID_C);
    wire r_bld   = ar_hs && ({raddr[ADDR_W-1:2], 2'b00} == A_BUILD_C);
    wire r_lcyc  = ar_hs && ({raddr[ADDR_W-1:2], 2'b00} == A_LCYC_C);
    wire w_ctrl  = w_do && ({waddr[ADDR_W-1:2], 2'b00} == A_AP_CTRL) && wstrb[0];
    wire w_gie   = w_do && ({waddr[ADDR_W-1:2], 2'b00} == A_GIE) && wstrb[0];
    wire w_ier   = w_do && ({waddr[ADDR_W-1:2], 2'b00} == A_IER) && wstrb[0];
    wire w_isr   = w_do && ({waddr[ADDR_W-1:2], 2'b00} == A_ISR) && wstrb[0];
    wire w_lsel  = w_do && ({waddr[ADDR_W-1:2], 2'b00} == A_LSEL);

    // ---------------------------------------------------------------- register behaviour
    always_ff @(posedge clk) begin
        if (rst) begin
            int_ap_start     <= 1'b0;
            int_ap_done      <= 1'b0;
            int_ap_idle      <= 1'b0;
            int_ap_ready     <= 1'b0;
            int_auto_restart <= 1'b0;
            int_gie          <= 1'b0;
            int_ier          <= 2'b00;
            int_isr          <= 2'b00;
            int_status       <= '0;  v_status <= 1'b0;
            int_cycles       <= '0;  v_cycles <= 1'b0;
            int_frames       <= '0;  v_frames <= 1'b0;
            int_netid        <= '0;  v_netid  <= 1'b0;
            int_build        <= '0;  v_build  <= 1'b0;
            v_lcyc           <= 1'b0;
            int_lsel         <= '0;
        end else begin
            // AP_CTRL
            if (w_ctrl && wdata[0])  int_ap_start <= 1'b1;
            else if (ap_ready)       int_ap_start <= int_auto_restart;   // clear on handshake
            if (ap_done)             int_ap_done <= 1'b1;
            else if (r_ctrl)         int_ap_done <= 1'b0;                // clear on read
            int_ap_idle <= ap_idle;
            if (ap_ready)            int_ap_ready <= 1'b1;
            else if (r_ctrl)         int_ap_ready <= 1'b0;
            if (w_ctrl)              int_auto_restart <= wdata[7];
            // interrupts
            if (w_gie)               int_gie <= wdata[0];
            if (w_ier)               int_ier <= wdata[1:0];
            if (int_ier[0] && ap_done)   int_isr[0] <= 1'b1;
            else if (w_isr)              int_isr[0] <= int_isr[0] ^ wdata[0];   // toggle on write
            if (int_ier[1] && ap_ready)  int_isr[1] <= 1'b1;
            else if (w_isr)              int_isr[1] <= int_isr[1] ^ wdata[1];
            // output scalars: data latched with ap_vld, flag clear on read
            if (status_ap_vld)       int_status <= status;
            if (status_ap_vld)       v_status <= 1'b1;        else if (r_stat) v_status <= 1'b0;
            if (cycles_last_ap_vld)  int_cycles <= cycles_last;
            if (cycles_last_ap_vld)  v_cycles <= 1'b1;        else if (r_cyc)  v_cycles <= 1'b0;
            if (frames_done_ap_vld)  int_frames <= frames_done;
            if (frames_done_ap_vld)  v_frames <= 1'b1;        else if (r_frm)  v_frames <= 1'b0;
            if (net_id_ap_vld)       int_netid <= net_id;
            if (net_id_ap_vld)       v_netid <= 1'b1;         else if (r_nid)  v_netid <= 1'b0;
            if (build_params_ap_vld) int_build <= build_params;
            if (build_params_ap_vld) v_build <= 1'b1;         else if (r_bld)  v_build <= 1'b0;
            if (layer_cycles_ap_vld) v_lcyc <= 1'b1;          else if (r_lcyc) v_lcyc <= 1'b0;
            // input scalar
            if (w_lsel) begin
                if (wstrb[0]) int_lsel[7:0]   <= wdata[7:0];
                if (wstrb[1]) int_lsel[15:8]  <= wdata[15:8];
                if (wstrb[2]) int_lsel[23:16] <= wdata[23:16];
                if (wstrb[3]) int_lsel[31:24] <= wdata[31:24];
            end
        end
    end

endmodule

`default_nettype wire
