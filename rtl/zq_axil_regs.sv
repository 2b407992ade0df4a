// zq_axil_regs: the AXI4-Lite control slave. The register map is the engine
// specification's (offsets from rtl/zq_spec.svh, generated from spec/engine.py);
// the behaviour of AP_CTRL/GIE/IER/ISR and of the output registers is that of
// the s_axilite adapter Vitis HLS 2023.2 generates for ap_ctrl_hs:
//
//   ap_start      set by writing bit 0; cleared on ap_ready unless auto_restart
//                 (writing 0 does not clear it)
//   ap_done       sticky, cleared by any read of AP_CTRL; under auto_restart it
//                 is set only once auto_restart is cleared and the core goes idle
//   ap_ready      sticky, cleared by a read of AP_CTRL; masked under auto_restart
//   ap_idle       a registered copy of the core's ap_idle
//   ISR           bit 0 on every ap_done, bit 1 on every ap_ready (when enabled
//                 in IER), toggle on write; interrupt = GIE & |ISR, registered
//   outputs       data latched on the core's ap_vld, control word bit 0 = ap_vld,
//                 cleared on read
// Write: AW, then W, then B (one at a time); read: AR, then R. Responses OKAY.
`include "zq_spec.svh"
`default_nettype none

module zq_axil_regs #(
    parameter ADDR_W = `ZQ_REG_ADDR_BITS_RTL
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
    // block-level handshake with the core
    output logic              ap_start,
    input  wire               ap_done,
    input  wire               ap_idle,
    input  wire               ap_ready,
    // inputs
    output logic [63:0]       wts,
    output logic [63:0]       act,
    output logic [31:0]       layer_sel,
    // outputs (data, ap_vld)
    input  wire [31:0]        status,        input wire status_vld,
    input  wire [31:0]        frames_done,   input wire frames_done_vld,
    input  wire [31:0]        net_id,        input wire net_id_vld,
    input  wire [31:0]        build_params,  input wire build_params_vld,
    input  wire [31:0]        engine_info,   input wire engine_info_vld,
    input  wire [31:0]        cycles_last,   input wire cycles_last_vld,
    input  wire [31:0]        dram_stall_cycles, input wire dram_stall_cycles_vld,
    input  wire [31:0]        dram_rd_bytes, input wire dram_rd_bytes_vld,
    input  wire [31:0]        dram_wr_bytes, input wire dram_wr_bytes_vld,
    input  wire [31:0]        layer_cycles,  input wire layer_cycles_vld,
    input  wire [31:0]        layer_stalls,  input wire layer_stalls_vld
);

    localparam N_OUT = 11;
    localparam [ADDR_W-1:0]
        A_CTRL = ADDR_W'(`ZQ_REG_AP_CTRL), A_GIE = ADDR_W'(`ZQ_REG_GIE), A_IER = ADDR_W'(`ZQ_REG_IER),
        A_ISR = ADDR_W'(`ZQ_REG_ISR), A_WTS = ADDR_W'(`ZQ_REG_WTS), A_ACT = ADDR_W'(`ZQ_REG_ACT),
        A_LSEL = ADDR_W'(`ZQ_REG_LAYER_SEL);
    // output registers, in port order (a case, not a concatenation of casts: Yosys 0.23 mis-sizes
    // `N'(constant)` inside concatenations)
    function automatic [ADDR_W-1:0] a_out(input integer i);
        case (i)
            0:  a_out = `ZQ_REG_STATUS;
            1:  a_out = `ZQ_REG_FRAMES_DONE;
            2:  a_out = `ZQ_REG_NET_ID;
            3:  a_out = `ZQ_REG_BUILD_PARAMS;
            4:  a_out = `ZQ_REG_ENGINE_INFO;
            5:  a_out = `ZQ_REG_CYCLES_LAST;
            6:  a_out = `ZQ_REG_DRAM_STALL_CYCLES;
            7:  a_out = `ZQ_REG_DRAM_RD_BYTES;
            8:  a_out = `ZQ_REG_DRAM_WR_BYTES;
            9:  a_out = `ZQ_REG_LAYER_CYCLES;
            10: a_out = `ZQ_REG_LAYER_STALLS;
            default: a_out = '0;
        endcase
    endfunction
    wire [N_OUT*32-1:0] o_data = {layer_stalls, layer_cycles, dram_wr_bytes, dram_rd_bytes, dram_stall_cycles,
                                  cycles_last, engine_info, build_params, net_id, frames_done, status};
    wire [N_OUT-1:0]    o_vld  = {layer_stalls_vld, layer_cycles_vld, dram_wr_bytes_vld, dram_rd_bytes_vld,
                                  dram_stall_cycles_vld, cycles_last_vld, engine_info_vld, build_params_vld,
                                  net_id_vld, frames_done_vld, status_vld};

    // ---------------------------------------------------------------- AXI4-Lite write
    localparam [1:0] W_IDLE = 2'd0, W_DATA = 2'd1, W_RESP = 2'd2;
    logic [1:0]        wstate;
    logic [ADDR_W-1:0] waddr;
    assign s_axi_awready = (wstate == W_IDLE) && !rst;
    assign s_axi_wready  = (wstate == W_DATA);
    assign s_axi_bvalid  = (wstate == W_RESP);
    assign s_axi_bresp   = 2'b00;
    wire w_hs = s_axi_wvalid && s_axi_wready;
    always_ff @(posedge clk) begin
        if (rst) begin
            wstate <= W_IDLE;
        end else begin
            case (wstate)
                W_IDLE: if (s_axi_awvalid) begin
                    wstate <= W_DATA;
                    waddr  <= {s_axi_awaddr[ADDR_W-1:2], 2'b00};
                end
                W_DATA: if (s_axi_wvalid) wstate <= W_RESP;
                W_RESP: if (s_axi_bready) wstate <= W_IDLE;
                default: wstate <= W_IDLE;
            endcase
        end
    end
    wire [31:0] wmask = {{8{s_axi_wstrb[3]}}, {8{s_axi_wstrb[2]}}, {8{s_axi_wstrb[1]}}, {8{s_axi_wstrb[0]}}};
    function automatic [31:0] merge(input [31:0] old);
        merge = (s_axi_wdata & wmask) | (old & ~wmask);
    endfunction

    // ---------------------------------------------------------------- AXI4-Lite read
    assign s_axi_arready = !s_axi_rvalid && !rst;
    assign s_axi_rresp   = 2'b00;
    wire ar_hs = s_axi_arvalid && s_axi_arready;
    wire [ADDR_W-1:0] raddr = {s_axi_araddr[ADDR_W-1:2], 2'b00};

    // ---------------------------------------------------------------- control (Vitis 2023.2)
    logic       int_ap_start, int_task_ap_done, int_ap_idle, int_ap_ready, int_auto_restart;
    logic       auto_restart_status, int_gie;
    logic [1:0] int_ier, int_isr;
    wire auto_restart_done = auto_restart_status && (ap_idle && !int_ap_idle);
    wire task_ap_done  = (ap_done && !auto_restart_status) || auto_restart_done;
    wire task_ap_ready = ap_ready && !int_auto_restart;
    wire w_ctrl = w_hs && waddr == A_CTRL && s_axi_wstrb[0];
    wire r_ctrl = ar_hs && raddr == A_CTRL;
    assign ap_start = int_ap_start;

    always_ff @(posedge clk) begin
        if (rst) begin
            int_ap_start <= 1'b0; int_task_ap_done <= 1'b0; int_ap_idle <= 1'b0; int_ap_ready <= 1'b0;
            int_auto_restart <= 1'b0; auto_restart_status <= 1'b0; int_gie <= 1'b0; int_ier <= 2'b00;
            int_isr <= 2'b00; interrupt <= 1'b0;
        end else begin
            if (w_ctrl && s_axi_wdata[`ZQ_AP_AP_START]) int_ap_start <= 1'b1;
            else if (ap_ready)            int_ap_start <= int_auto_restart;
            if (task_ap_done)             int_task_ap_done <= 1'b1;
            else if (r_ctrl)              int_task_ap_done <= 1'b0;
            int_ap_idle <= ap_idle;
            if (task_ap_ready)            int_ap_ready <= 1'b1;
            else if (r_ctrl)              int_ap_ready <= 1'b0;
            if (w_ctrl)                   int_auto_restart <= s_axi_wdata[`ZQ_AP_AUTO_RESTART];
            if (int_auto_restart)         auto_restart_status <= 1'b1;
            else if (ap_idle)             auto_restart_status <= 1'b0;
            if (w_hs && waddr == A_GIE && s_axi_wstrb[0]) int_gie <= s_axi_wdata[0];
            if (w_hs && waddr == A_IER && s_axi_wstrb[0]) int_ier <= s_axi_wdata[1:0];
            if (int_ier[0] && ap_done)    int_isr[0] <= 1'b1;
            else if (w_hs && waddr == A_ISR && s_axi_wstrb[0]) int_isr[0] <= int_isr[0] ^ s_axi_wdata[0];
            if (int_ier[1] && ap_ready)   int_isr[1] <= 1'b1;
            else if (w_hs && waddr == A_ISR && s_axi_wstrb[0]) int_isr[1] <= int_isr[1] ^ s_axi_wdata[1];
            interrupt <= int_gie && (|int_isr);
        end
    end

    // ---------------------------------------------------------------- inputs
    always_ff @(posedge clk) begin
        if (rst) begin
            wts <= '0;
            act <= '0;
            layer_sel <= '0;
        end else if (w_hs) begin
            if (waddr == A_WTS)                   wts[31:0]  <= merge(wts[31:0]);
            if (waddr == A_WTS + ADDR_W'(4))      wts[63:32] <= merge(wts[63:32]);
            if (waddr == A_ACT)                   act[31:0]  <= merge(act[31:0]);
            if (waddr == A_ACT + ADDR_W'(4))      act[63:32] <= merge(act[63:32]);
            if (waddr == A_LSEL)                  layer_sel  <= merge(layer_sel);
        end
    end

    // ---------------------------------------------------------------- outputs
    // one register per output in a block of its own (a simulator then keeps each in a variable
    // of its own instead of updating an array through shadow copies every cycle); o_all holds them
    // for the read mux
    logic [N_OUT*32-1:0] o_all;
    logic [N_OUT-1:0]    o_valid;
    for (genvar i = 0; i < N_OUT; i++) begin : g_out
        logic [31:0] o_reg;
        logic        o_v;
        always_ff @(posedge clk) begin
            if (rst) begin
                o_reg <= '0;
                o_v   <= 1'b0;
            end else begin
                if (o_vld[i]) o_reg <= o_data[i*32 +: 32];
                if (o_vld[i]) o_v <= 1'b1;
                else if (ar_hs && raddr == a_out(i) + ADDR_W'(4)) o_v <= 1'b0;
            end
        end
        assign o_all[i*32 +: 32] = o_reg;
        assign o_valid[i] = o_v;
    end

    // ---------------------------------------------------------------- read data
    // (the read mux in the R register's load branch: a simulator evaluates it only for a read)
    always_ff @(posedge clk) begin
        if (rst) begin
            s_axi_rvalid <= 1'b0;
        end else begin
            if (ar_hs) begin
                logic [31:0] rd;
                rd = '0;
                if (raddr == A_CTRL) begin   // the AP_CTRL bits of the specification
                    rd[`ZQ_AP_AP_START]     = int_ap_start;
                    rd[`ZQ_AP_AP_DONE]      = int_task_ap_done;
                    rd[`ZQ_AP_AP_IDLE]      = int_ap_idle;
                    rd[`ZQ_AP_AP_READY]     = int_ap_ready;
                    rd[`ZQ_AP_AUTO_RESTART] = int_auto_restart;
                    rd[`ZQ_AP_INTERRUPT]    = interrupt;
                end else if (raddr == A_GIE) rd = {31'd0, int_gie};
                else if (raddr == A_IER) rd = {30'd0, int_ier};
                else if (raddr == A_ISR) rd = {30'd0, int_isr};
                else if (raddr == A_WTS) rd = wts[31:0];
                else if (raddr == A_WTS + ADDR_W'(4)) rd = wts[63:32];
                else if (raddr == A_ACT) rd = act[31:0];
                else if (raddr == A_ACT + ADDR_W'(4)) rd = act[63:32];
                else if (raddr == A_LSEL) rd = layer_sel;
                for (int i = 0; i < N_OUT; i++) begin
                    if (raddr == a_out(i)) rd = o_all[i*32 +: 32];
                    if (raddr == a_out(i) + ADDR_W'(4)) rd = {31'd0, o_valid[i]};
                end
                s_axi_rvalid <= 1'b1;
                s_axi_rdata  <= rd;
            end else if (s_axi_rvalid && s_axi_rready) begin
                s_axi_rvalid <= 1'b0;
            end
        end
    end

endmodule

`default_nettype wire
