// zq_maxi_echo: a small test DUT with the port list of the DDR-streaming zq_top
// (s_axis_in, m_axis_out, s_axi_control, interrupt, and the AXI4 masters
// m_axi_wts / m_axi_act / m_axi_act2 in Vitis naming, 64-bit data, 32-bit addresses, 1-bit IDs).
// tests/test_rtl_fast.py builds the harness on it with ZQ_MAXI=1 to exercise the
// memory models through a real Verilator model. Per frame (ap_ctrl_hs, auto_restart):
//   1. take IN_BEATS input beats (32-bit) into a buffer;
//   2. write them to the act base over m_axi_act: bursts of up to 16 beats, two
//      input words per 64-bit beat (word 2i in the low half), one burst at a time;
//   3. read N_CLASSES words back from the act base over m_axi_act2 (the engine's second
//      activation path: one DDR behind every port) and N_CLASSES words from the wts base
//      over m_axi_wts (one burst on each port, both in flight at once);
//   4. answer N_CLASSES beats, out[c] = act[c] + wts[c] (mod 2^32), TLAST on the last.
// A write burst's AW and its first W beat are offered together (AXI A3.3.1: W does not wait for
// AWREADY), so a slave that holds AWREADY until it sees WVALID works.
// Registers: a subset of the engine's map, from the specification (zq_spec.svh):
//   AP_CTRL (ap_start, ap_idle, auto_restart), WTS / ACT base (low/high word),
//   STATUS (axi_read_error: a read answered SLVERR/DECERR, axi_write_error: a write did;
//   last frame), FRAMES_DONE, CYCLES_LAST (first input beat .. last output beat, both included)
//
// The broken master: a test-only FAULT register (at LAYER_SEL's offset, which the echo does not
// otherwise implement; 0 after reset = a correct master) makes every frame break one AXI rule,
// so that the protocol checkers of the memory models can be proven to fire (cocotb:
// tests/test_rtl_memory.py; the C++ AxiMem). One build serves every fault:
//    1 FAULT_AR_LEN      the wts read burst has 17 beats (ARLEN 16)
//    2 FAULT_AW_4K       the frame is written from act + 4096 - 64 (and read back from there):
//                        the first write burst crosses a 4 KiB boundary
//    3 FAULT_AR_SIZE     ARSIZE 2 (4-byte beats) on the wts read
//    4 FAULT_AW_BURST    AWBURST FIXED (0) on every act write burst
//    5 FAULT_WLAST       WLAST missing on the last beat of the frame's first write burst
//    6 FAULT_AR_VALID    ARVALID (act2) withdrawn in the second cycle it waits for ARREADY
//    7 FAULT_AW_VALID    AWVALID withdrawn in the second cycle it waits for AWREADY
//    8 FAULT_W_VALID     WVALID withdrawn in the second cycle a beat waits for WREADY
//    9 FAULT_AR_PAYLOAD  ARADDR (act2) + 8 from the second cycle it waits for ARREADY
//   10 FAULT_AW_PAYLOAD  AWADDR + 8 from the second cycle it waits for AWREADY
//   11 FAULT_W_PAYLOAD   WDATA bit 0 flipped from the second cycle a beat waits for WREADY
//   12 FAULT_RD_OUT      the wts read burst is issued FAULT_BURSTS (9) times without waiting for
//                        data: one more than the engine's limit of read bursts outstanding
//   13 FAULT_WR_OUT      one-beat write bursts, FAULT_BURSTS (9) of them issued before their B
//                        responses are taken (BREADY low meanwhile): more than 8 write bursts outstanding
//   14 FAULT_W_AFTER_AW  not a checker fault: W waits for the AW handshake (the old writer), which
//                        deadlocks against a slave that holds AWREADY until it sees WVALID
// 6-11 need a slave that keeps READY low for two cycles or more on that channel; 12 and 13 a
// slave that accepts more than 8 bursts. Every R and B beat is taken (the frame still ends).
`include "zq_spec.svh"
`include "rtl_params.svh"
`default_nettype none

// The ports of one AXI4 master in Vitis naming (64-bit data, 32-bit addresses, 1-bit IDs).
`define ZQ_MAXI_PORTS(P) \
    output wire         m_axi_``P``_AWVALID,  input wire m_axi_``P``_AWREADY, \
    output wire  [31:0] m_axi_``P``_AWADDR,   output wire [0:0] m_axi_``P``_AWID, \
    output wire  [7:0]  m_axi_``P``_AWLEN,    output wire [2:0] m_axi_``P``_AWSIZE, \
    output wire  [1:0]  m_axi_``P``_AWBURST,  output wire [1:0] m_axi_``P``_AWLOCK, \
    output wire  [3:0]  m_axi_``P``_AWCACHE,  output wire [2:0] m_axi_``P``_AWPROT, \
    output wire  [3:0]  m_axi_``P``_AWQOS,    output wire [3:0] m_axi_``P``_AWREGION, \
    output wire  [0:0]  m_axi_``P``_AWUSER, \
    output wire         m_axi_``P``_WVALID,   input wire m_axi_``P``_WREADY, \
    output wire  [63:0] m_axi_``P``_WDATA,    output wire [7:0] m_axi_``P``_WSTRB, \
    output wire         m_axi_``P``_WLAST,    output wire [0:0] m_axi_``P``_WID, \
    output wire  [0:0]  m_axi_``P``_WUSER, \
    output wire         m_axi_``P``_ARVALID,  input wire m_axi_``P``_ARREADY, \
    output wire  [31:0] m_axi_``P``_ARADDR,   output wire [0:0] m_axi_``P``_ARID, \
    output wire  [7:0]  m_axi_``P``_ARLEN,    output wire [2:0] m_axi_``P``_ARSIZE, \
    output wire  [1:0]  m_axi_``P``_ARBURST,  output wire [1:0] m_axi_``P``_ARLOCK, \
    output wire  [3:0]  m_axi_``P``_ARCACHE,  output wire [2:0] m_axi_``P``_ARPROT, \
    output wire  [3:0]  m_axi_``P``_ARQOS,    output wire [3:0] m_axi_``P``_ARREGION, \
    output wire  [0:0]  m_axi_``P``_ARUSER, \
    input  wire         m_axi_``P``_RVALID,   output wire m_axi_``P``_RREADY, \
    input  wire  [63:0] m_axi_``P``_RDATA,    input wire m_axi_``P``_RLAST, \
    input  wire  [0:0]  m_axi_``P``_RID,      input wire [0:0] m_axi_``P``_RUSER, \
    input  wire  [1:0]  m_axi_``P``_RRESP, \
    input  wire         m_axi_``P``_BVALID,   output wire m_axi_``P``_BREADY, \
    input  wire  [1:0]  m_axi_``P``_BRESP,    input wire [0:0] m_axi_``P``_BID, \
    input  wire  [0:0]  m_axi_``P``_BUSER

// Constant attributes: INCR bursts of 8-byte beats, ID 0, AxCACHE 0b0011 (normal non-cacheable bufferable).
`define ZQ_MAXI_ATTRS(P) \
    assign m_axi_``P``_AWID = 1'b0;   assign m_axi_``P``_ARID = 1'b0;   assign m_axi_``P``_WID = 1'b0; \
    assign m_axi_``P``_AWSIZE = 3'd3; assign m_axi_``P``_ARBURST = 2'd1; \
    assign m_axi_``P``_AWLOCK = '0; assign m_axi_``P``_AWCACHE = 4'd3; assign m_axi_``P``_AWPROT = '0; \
    assign m_axi_``P``_AWQOS = '0;  assign m_axi_``P``_AWREGION = '0;  assign m_axi_``P``_AWUSER = '0; \
    assign m_axi_``P``_ARLOCK = '0; assign m_axi_``P``_ARCACHE = 4'd3; assign m_axi_``P``_ARPROT = '0; \
    assign m_axi_``P``_ARQOS = '0;  assign m_axi_``P``_ARREGION = '0;  assign m_axi_``P``_ARUSER = '0; \
    assign m_axi_``P``_WUSER = '0;

module zq_maxi_echo #(
    parameter IN_BEATS  = (`ZQ_IN_BYTES + 3) / 4,
    parameter N_CLASSES = `ZQ_N_CLASSES
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

    input  wire  [`ZQ_REG_ADDR_BITS_RTL-1:0] s_axi_control_AWADDR,
    input  wire         s_axi_control_AWVALID,
    output wire         s_axi_control_AWREADY,
    input  wire  [31:0] s_axi_control_WDATA,
    input  wire  [3:0]  s_axi_control_WSTRB,
    input  wire         s_axi_control_WVALID,
    output wire         s_axi_control_WREADY,
    output wire  [1:0]  s_axi_control_BRESP,
    output logic        s_axi_control_BVALID,
    input  wire         s_axi_control_BREADY,
    input  wire  [`ZQ_REG_ADDR_BITS_RTL-1:0] s_axi_control_ARADDR,
    input  wire         s_axi_control_ARVALID,
    output wire         s_axi_control_ARREADY,
    output logic [31:0] s_axi_control_RDATA,
    output wire  [1:0]  s_axi_control_RRESP,
    output logic        s_axi_control_RVALID,
    input  wire         s_axi_control_RREADY,

    output wire         interrupt,

    // m_axi_wts: weight image (reads only; AW/W/B stay idle); m_axi_act: activation scratch
    // (writes; AR/R stay idle); m_axi_act2: the scratch read back (AW/W/B stay idle)
    `ZQ_MAXI_PORTS(wts),
    `ZQ_MAXI_PORTS(act),
    `ZQ_MAXI_PORTS(act2)
);
    localparam WBEATS = IN_BEATS / 2;              // 64-bit beats of a frame
    localparam BURST  = `ZQ_AXI_BURST_BEATS;
    localparam [3:0] FAULT_NONE = 4'd0, FAULT_AR_LEN = 4'd1, FAULT_AW_4K = 4'd2, FAULT_AR_SIZE = 4'd3,
                     FAULT_AW_BURST = 4'd4, FAULT_WLAST = 4'd5, FAULT_AR_VALID = 4'd6, FAULT_AW_VALID = 4'd7,
                     FAULT_W_VALID = 4'd8, FAULT_AR_PAYLOAD = 4'd9, FAULT_AW_PAYLOAD = 4'd10,
                     FAULT_W_PAYLOAD = 4'd11, FAULT_RD_OUT = 4'd12, FAULT_WR_OUT = 4'd13, FAULT_W_AFTER_AW = 4'd14;
    localparam FAULT_BURSTS = 9;                   // FAULT_RD_OUT: wts read bursts issued at once
    localparam RBEATS = (N_CLASSES + 1) / 2;       // 64-bit beats read back per port
    localparam IB_W   = $clog2(IN_BEATS + 1);
    localparam CL_W   = $clog2(N_CLASSES + 1);
    wire rst = !ap_rst_n;

    // ---------------------------------------------------------------- registers
    logic        ap_start, auto_restart;
    logic [63:0] wts_base, act_base;
    logic [31:0] status, frames_done, cycles_last;
    logic        aw_ok, w_ok;
    logic [`ZQ_REG_ADDR_BITS_RTL-1:0] waddr;
    logic [31:0] wdata;
    logic        frame_done;   // pulse: last output beat accepted
    logic        idle;
    logic [3:0]  fault;        // the broken master's fault (0: none)

    assign s_axi_control_AWREADY = !aw_ok;
    assign s_axi_control_WREADY  = !w_ok;
    assign s_axi_control_BRESP   = 2'b00;
    assign s_axi_control_ARREADY = !s_axi_control_RVALID;
    assign s_axi_control_RRESP   = 2'b00;
    assign interrupt = 1'b0;

    always_ff @(posedge ap_clk) begin
        if (rst) begin
            aw_ok <= 1'b0; w_ok <= 1'b0; s_axi_control_BVALID <= 1'b0; s_axi_control_RVALID <= 1'b0;
            ap_start <= 1'b0; auto_restart <= 1'b0; wts_base <= '0; act_base <= '0; fault <= FAULT_NONE;
        end else begin
            if (s_axi_control_AWVALID && !aw_ok) begin aw_ok <= 1'b1; waddr <= s_axi_control_AWADDR; end
            if (s_axi_control_WVALID && !w_ok) begin w_ok <= 1'b1; wdata <= s_axi_control_WDATA; end
            if (s_axi_control_BVALID && s_axi_control_BREADY) s_axi_control_BVALID <= 1'b0;
            if (aw_ok && w_ok && !s_axi_control_BVALID) begin
                aw_ok <= 1'b0; w_ok <= 1'b0; s_axi_control_BVALID <= 1'b1;
                case (waddr)
                    `ZQ_REG_AP_CTRL: begin
                        ap_start <= wdata[`ZQ_AP_AP_START]; auto_restart <= wdata[`ZQ_AP_AUTO_RESTART];
                    end
                    `ZQ_REG_WTS:     wts_base[31:0]  <= wdata;
                    `ZQ_REG_WTS + 4: wts_base[63:32] <= wdata;
                    `ZQ_REG_ACT:     act_base[31:0]  <= wdata;
                    `ZQ_REG_ACT + 4: act_base[63:32] <= wdata;
                    `ZQ_REG_LAYER_SEL: fault <= wdata[3:0];
                    default: ;
                endcase
            end else if (frame_done && !auto_restart) begin
                ap_start <= 1'b0;
            end
            if (s_axi_control_RVALID && s_axi_control_RREADY) s_axi_control_RVALID <= 1'b0;
            if (s_axi_control_ARVALID && !s_axi_control_RVALID) begin
                s_axi_control_RVALID <= 1'b1;
                case (s_axi_control_ARADDR)
                    `ZQ_REG_AP_CTRL: begin
                        s_axi_control_RDATA <= 32'd0;
                        s_axi_control_RDATA[`ZQ_AP_AP_START]     <= ap_start;
                        s_axi_control_RDATA[`ZQ_AP_AP_IDLE]      <= idle;
                        s_axi_control_RDATA[`ZQ_AP_AUTO_RESTART] <= auto_restart;
                    end
                    `ZQ_REG_WTS:         s_axi_control_RDATA <= wts_base[31:0];
                    `ZQ_REG_WTS + 4:     s_axi_control_RDATA <= wts_base[63:32];
                    `ZQ_REG_ACT:         s_axi_control_RDATA <= act_base[31:0];
                    `ZQ_REG_ACT + 4:     s_axi_control_RDATA <= act_base[63:32];
                    `ZQ_REG_STATUS:      s_axi_control_RDATA <= status;
                    `ZQ_REG_FRAMES_DONE: s_axi_control_RDATA <= frames_done;
                    `ZQ_REG_CYCLES_LAST: s_axi_control_RDATA <= cycles_last;
                    `ZQ_REG_LAYER_SEL:   s_axi_control_RDATA <= {28'd0, fault};
                    default: s_axi_control_RDATA <= 32'd0;
                endcase
            end
        end
    end

    // ---------------------------------------------------------------- frame engine
    typedef enum logic [2:0] {S_IDLE, S_LOAD, S_WR, S_B, S_AR, S_R, S_OUT} state_t;
    state_t state;
    logic [31:0] buffer [0:IN_BEATS-1];
    logic [31:0] act_rd [0:2*RBEATS-1];
    logic [31:0] wts_rd [0:2*RBEATS-1];
    logic [IB_W-1:0] n_in;
    logic [IB_W-1:0] wbeat;          // 64-bit beats written so far
    logic [4:0]      bbeat;          // beat within the current write burst
    logic [4:0]      blen;           // beats of the current write burst
    logic            aw_done;        // the current write burst's AW handshake is done
    logic            first_burst;    // the frame's first write burst
    logic [IB_W:0]   b_owed;         // write bursts whose B has not been taken
    logic [CL_W-1:0] ract, rwts, ocls;
    logic            ar_act_done, ar_wts_done, r_act_done;
    logic [3:0]      ar_wts_n;       // wts read bursts issued
    logic [3:0]      r_wts_n;        // wts read bursts whose last beat came
    logic [1:0]      ar_wait, aw_wait, w_wait;   // cycles the AR (act) / AW / W beat has waited (saturating)
    logic            rd_err, wr_err;
    logic [31:0]     cnt;
    logic            counting;

    assign idle = state == S_IDLE && !ap_start;
    assign s_axis_in_TREADY = state == S_LOAD;
    wire in_fire = s_axis_in_TVALID && s_axis_in_TREADY;
    wire out_fire = m_axis_out_TVALID && m_axis_out_TREADY;
    assign frame_done = out_fire && m_axis_out_TLAST[0];

    wire [IB_W-1:0] w_left  = IB_W'(WBEATS) - wbeat;
    wire [IB_W-1:0] max_len = (fault == FAULT_WR_OUT) ? IB_W'(1) : IB_W'(BURST);
    wire [4:0]      next_len  = (w_left > max_len) ? 5'(max_len) : 5'(w_left);
    // the frame's first burst (wbeat still holds the last frame's count when the input ends)
    wire [4:0]      first_len = (IB_W'(WBEATS) > max_len) ? 5'(max_len) : 5'(WBEATS);
    wire [31:0]     act_off   = (fault == FAULT_AW_4K) ? 32'(`ZQ_ADDR_ALIGN - 64) : 32'd0;
    wire [3:0]      wts_bursts = (fault == FAULT_RD_OUT) ? 4'(FAULT_BURSTS) : 4'd1;
    wire aw_fire = m_axi_act_AWVALID && m_axi_act_AWREADY;
    wire w_fire  = m_axi_act_WVALID && m_axi_act_WREADY;
    wire b_fire  = m_axi_act_BVALID && m_axi_act_BREADY;
    wire ar_act_fire = m_axi_act2_ARVALID && m_axi_act2_ARREADY;
    wire ar_wts_fire = m_axi_wts_ARVALID && m_axi_wts_ARREADY;
    wire r_act_fire  = m_axi_act2_RVALID && m_axi_act2_RREADY;
    wire r_wts_fire  = m_axi_wts_RVALID && m_axi_wts_RREADY;
    wire w_pending   = state == S_WR && bbeat != blen && (aw_done || fault != FAULT_W_AFTER_AW);
    wire burst_end   = (aw_done || aw_fire) && ((bbeat == blen) || (w_fire && bbeat == blen - 1'b1));
    wire [IB_W:0] b_owed_next = b_owed + (IB_W+1)'(aw_fire) - (IB_W+1)'(b_fire);

    always_ff @(posedge ap_clk) begin
        if (rst) begin
            state <= S_IDLE; frames_done <= '0; status <= '0; cycles_last <= '0; counting <= 1'b0; cnt <= '0;
            b_owed <= '0;
        end else begin
            if (in_fire && !counting) begin counting <= 1'b1; cnt <= 32'd1; end
            else if (counting) cnt <= cnt + 32'd1;
            b_owed <= b_owed_next;
            case (state)
                S_IDLE: if (ap_start) begin state <= S_LOAD; n_in <= '0; rd_err <= 1'b0; wr_err <= 1'b0; end
                S_LOAD: if (in_fire) begin
                    buffer[n_in[IB_W-1:0]] <= s_axis_in_TDATA;
                    n_in <= n_in + 1'b1;
                    if (n_in == IB_W'(IN_BEATS - 1)) begin
                        state <= S_WR; wbeat <= '0; bbeat <= '0; blen <= first_len; aw_done <= 1'b0;
                        first_burst <= 1'b1; aw_wait <= '0; w_wait <= '0;
                    end
                end
                // a write burst: AW and W together (FAULT_W_AFTER_AW: W after the AW handshake)
                S_WR: begin
                    if (aw_fire) aw_done <= 1'b1;
                    else if (!aw_done && aw_wait != 2'd3) aw_wait <= aw_wait + 2'd1;
                    if (w_fire) begin
                        bbeat <= bbeat + 1'b1;
                        wbeat <= wbeat + 1'b1;
                        w_wait <= '0;
                    end else if (w_pending && w_wait != 2'd3) begin
                        w_wait <= w_wait + 2'd1;
                    end
                    if (burst_end) begin
                        first_burst <= 1'b0;
                        if (fault == FAULT_WR_OUT && wbeat + IB_W'(w_fire) != IB_W'(WBEATS) &&
                            b_owed_next < (IB_W+1)'(FAULT_BURSTS)) begin   // the next burst at once
                            bbeat <= '0; blen <= next_len; aw_done <= 1'b0; aw_wait <= '0;
                        end else begin
                            state <= S_B;
                        end
                    end
                end
                S_B: begin
                    if (b_fire && m_axi_act_BRESP != 2'b00) wr_err <= 1'b1;
                    if (b_owed_next == '0) begin
                        if (wbeat == IB_W'(WBEATS)) begin
                            state <= S_AR; ar_act_done <= 1'b0; ar_wts_done <= 1'b0; ar_wts_n <= '0; ar_wait <= '0;
                        end else begin
                            state <= S_WR; bbeat <= '0; blen <= next_len; aw_done <= 1'b0; aw_wait <= '0;
                        end
                    end
                end
                S_AR: begin
                    if (ar_act_fire) ar_act_done <= 1'b1;
                    else if (!ar_act_done && ar_wait != 2'd3) ar_wait <= ar_wait + 2'd1;
                    if (ar_wts_fire) begin
                        ar_wts_n <= ar_wts_n + 4'd1;
                        if (ar_wts_n + 4'd1 == wts_bursts) ar_wts_done <= 1'b1;
                    end
                    if ((ar_act_done || ar_act_fire) && (ar_wts_done || (ar_wts_fire && ar_wts_n + 4'd1 == wts_bursts))) begin
                        state <= S_R; ract <= '0; rwts <= '0; r_act_done <= 1'b0; r_wts_n <= '0;
                    end
                end
                // every beat of every burst is taken; the first 2*RBEATS words of each port are kept
                S_R: begin
                    if (r_act_fire) begin
                        if (ract < CL_W'(2 * RBEATS)) begin
                            act_rd[ract] <= m_axi_act2_RDATA[31:0];
                            act_rd[ract + 1'b1] <= m_axi_act2_RDATA[63:32];
                            ract <= ract + CL_W'(2);
                        end
                        if (m_axi_act2_RRESP != 2'b00) rd_err <= 1'b1;
                        if (m_axi_act2_RLAST) r_act_done <= 1'b1;
                    end
                    if (r_wts_fire) begin
                        if (rwts < CL_W'(2 * RBEATS)) begin
                            wts_rd[rwts] <= m_axi_wts_RDATA[31:0];
                            wts_rd[rwts + 1'b1] <= m_axi_wts_RDATA[63:32];
                            rwts <= rwts + CL_W'(2);
                        end
                        if (m_axi_wts_RRESP != 2'b00) rd_err <= 1'b1;
                        if (m_axi_wts_RLAST) r_wts_n <= r_wts_n + 4'd1;
                    end
                    if ((r_act_done || (r_act_fire && m_axi_act2_RLAST)) &&
                        (r_wts_n + 4'((r_wts_fire && m_axi_wts_RLAST) ? 1 : 0) == wts_bursts)) begin
                        state <= S_OUT; ocls <= '0;
                    end
                end
                S_OUT: if (out_fire) begin
                    ocls <= ocls + 1'b1;
                    if (m_axis_out_TLAST[0]) begin
                        state <= S_IDLE;
                        frames_done <= frames_done + 32'd1;
                        status <= 32'd0;
                        status[`ZQ_STATUS_AXI_READ_ERROR]  <= rd_err;
                        status[`ZQ_STATUS_AXI_WRITE_ERROR] <= wr_err;
                        cycles_last <= cnt + 32'd1;
                        counting <= 1'b0;
                    end
                end
                default: state <= S_IDLE;
            endcase
        end
    end

    assign m_axis_out_TVALID = state == S_OUT;
    assign m_axis_out_TDATA  = act_rd[ocls] + wts_rd[ocls];
    assign m_axis_out_TLAST  = ocls == CL_W'(N_CLASSES - 1);
    assign m_axis_out_TKEEP  = 4'hF;
    assign m_axis_out_TSTRB  = 4'hF;

    // m_axi_act: writes of the frame; m_axi_act2: one read burst of them
    wire [IB_W-1:0] aw_beat = wbeat - IB_W'(bbeat);     // the burst's first beat
    assign m_axi_act_AWVALID = state == S_WR && !aw_done && !(fault == FAULT_AW_VALID && aw_wait == 2'd1);
    assign m_axi_act_AWADDR  = act_base[31:0] + act_off + {aw_beat, 3'b000} +
                               ((fault == FAULT_AW_PAYLOAD && aw_wait != 2'd0) ? 32'd8 : 32'd0);
    assign m_axi_act_AWLEN   = {3'd0, blen - 1'b1};
    assign m_axi_act_WVALID  = w_pending && !(fault == FAULT_W_VALID && w_wait == 2'd1);
    assign m_axi_act_WDATA   = {buffer[{wbeat, 1'b1}],
                                buffer[{wbeat, 1'b0}] ^ ((fault == FAULT_W_PAYLOAD && w_wait != 2'd0) ? 32'd1 : 32'd0)};
    assign m_axi_act_WSTRB   = 8'hFF;
    assign m_axi_act_WLAST   = bbeat == blen - 1'b1 && !(fault == FAULT_WLAST && first_burst);
    assign m_axi_act_BREADY  = state == S_B;
    assign m_axi_act2_ARVALID = state == S_AR && !ar_act_done && !(fault == FAULT_AR_VALID && ar_wait == 2'd1);
    assign m_axi_act2_ARADDR  = act_base[31:0] + act_off +
                                ((fault == FAULT_AR_PAYLOAD && ar_wait != 2'd0) ? 32'd8 : 32'd0);
    assign m_axi_act2_ARLEN   = 8'(RBEATS - 1);
    assign m_axi_act2_RREADY  = state == S_R;
    assign m_axi_act_ARVALID  = 1'b0;
    assign m_axi_act_ARADDR   = '0;
    assign m_axi_act_ARLEN    = '0;
    assign m_axi_act_RREADY   = 1'b1;
    assign m_axi_act2_AWVALID = 1'b0;
    assign m_axi_act2_AWADDR  = '0;
    assign m_axi_act2_AWLEN   = '0;
    assign m_axi_act2_WVALID  = 1'b0;
    assign m_axi_act2_WDATA   = '0;
    assign m_axi_act2_WSTRB   = '0;
    assign m_axi_act2_WLAST   = 1'b0;
    assign m_axi_act2_BREADY  = 1'b1;
    assign m_axi_act2_AWBURST = 2'd1;
    assign m_axi_act2_ARSIZE  = 3'd3;
    // m_axi_wts: one read burst (FAULT_RD_OUT: FAULT_BURSTS of them)
    assign m_axi_wts_ARVALID = state == S_AR && !ar_wts_done;
    assign m_axi_wts_ARADDR  = wts_base[31:0];
    assign m_axi_wts_ARLEN   = (fault == FAULT_AR_LEN) ? 8'(BURST) : 8'(RBEATS - 1);
    assign m_axi_wts_RREADY  = state == S_R;
    assign m_axi_wts_AWVALID = 1'b0;
    assign m_axi_wts_AWADDR  = '0;
    assign m_axi_wts_AWLEN   = '0;
    assign m_axi_wts_WVALID  = 1'b0;
    assign m_axi_wts_WDATA   = '0;
    assign m_axi_wts_WSTRB   = '0;
    assign m_axi_wts_WLAST   = 1'b0;
    assign m_axi_wts_BREADY  = 1'b1;
    assign m_axi_wts_AWBURST = 2'd1;
    assign m_axi_act_ARSIZE  = 3'd3;
    `ZQ_MAXI_ATTRS(act)
    `ZQ_MAXI_ATTRS(wts)
    `ZQ_MAXI_ATTRS(act2)
    // the broken master's attribute faults (AxSIZE 3 and AxBURST INCR otherwise)
    assign m_axi_act_AWBURST = (fault == FAULT_AW_BURST) ? 2'd0 : 2'd1;
    assign m_axi_wts_ARSIZE  = (fault == FAULT_AR_SIZE) ? 3'd2 : 3'd3;

    wire unused_ok = &{1'b0, s_axis_in_TKEEP, s_axis_in_TSTRB, s_axis_in_TLAST, s_axi_control_WSTRB,
                       m_axi_act_RLAST, m_axi_act_RID, m_axi_act_RUSER, m_axi_act_BID, m_axi_act_BUSER,
                       m_axi_wts_RLAST, m_axi_wts_RID, m_axi_wts_RUSER, m_axi_wts_BID, m_axi_wts_BUSER,
                       m_axi_wts_AWREADY, m_axi_wts_WREADY, m_axi_wts_BVALID, m_axi_wts_BRESP,
                       m_axi_act_ARREADY, m_axi_act_RVALID, m_axi_act_RDATA, m_axi_act_RRESP,
                       m_axi_act2_RLAST, m_axi_act2_RID, m_axi_act2_RUSER, m_axi_act2_BID, m_axi_act2_BUSER,
                       m_axi_act2_AWREADY, m_axi_act2_WREADY, m_axi_act2_BVALID, m_axi_act2_BRESP};
endmodule

`default_nettype wire
