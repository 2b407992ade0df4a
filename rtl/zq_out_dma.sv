// zq_out_dma: results bound for DDR -> AXI4 write bursts on m_axi_act.
//
// Units of N_PE bytes arrive with their byte address and the number of units
// left in their contiguous run (the rows of one channel group in one band).
// Bursts are formed as the units arrive: a burst opens at a unit's address and
// takes as many units as fit 16 beats, end before the next 128-byte line
// (so no burst crosses a 4 KiB page) and stay in the run; when its last unit
// is in the data FIFO its command goes to the command FIFO. The writer
// (zq_axi_wr) issues the commands' AW as they come and sends their data back
// to back. `full` (registered) asks the MAC array to stop issuing while fewer
// than MARGIN units are free: a producer PIPE cycles deep that sees `full` a
// cycle late still delivers PIPE + 1 units, so MARGIN must cover them (checked
// at elaboration; zq_top's pipeline is the spec's RTL_PIPE_DEPTH). `idle`:
// nothing queued or in flight. `abort` stops new bursts; the bursts already
// issued are written out, then both FIFOs and a half-formed burst are dropped.
`include "zq_spec.svh"
`default_nettype none

module zq_out_dma #(
    parameter N_PE    = 16,                        // bytes per unit (whole beats)
    parameter DEPTH   = `ZQ_RTL_OUT_FIFO_UNITS,    // units
    parameter MARGIN  = `ZQ_RTL_OUT_FIFO_MARGIN,   // free units kept for results in flight
    parameter PIPE    = `ZQ_RTL_PIPE_DEPTH,        // cycles from a unit's issue to its arrival here
    parameter MAX_OUT = 8,
    parameter AW      = `ZQ_AXI_ADDR_BITS,
    parameter DW      = `ZQ_AXI_DATA_BITS
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              abort,
    input  wire              in_valid,
    input  wire [AW-1:0]     in_addr,
    input  wire [15:0]       in_left,
    input  wire [N_PE*8-1:0] in_data,
    output logic             full,
    output logic             m_awvalid,
    input  wire              m_awready,
    output logic [AW-1:0]    m_awaddr,
    output logic [7:0]       m_awlen,
    output logic             m_wvalid,
    input  wire              m_wready,
    output logic [DW-1:0]    m_wdata,
    output logic             m_wlast,
    input  wire              m_bvalid,
    output logic             m_bready,
    input  wire [1:0]        m_bresp,
    output logic             err,
    output logic             idle,
    output logic [31:0]      bytes_written
);

    localparam NB    = DW / 8;                    // bytes per beat
    localparam BPU   = N_PE / NB;                 // beats per unit
    localparam UPB   = `ZQ_AXI_BURST_BEATS / BPU; // units per burst
    localparam LINE  = `ZQ_AXI_LINE_BYTES;        // bursts end at a line (never across 4 KiB)
    localparam LINE_W = $clog2(LINE);
    localparam CNT_W = $clog2(DEPTH + 1);
    localparam BT_W  = (BPU > 1) ? $clog2(BPU) : 1;

    // parameter checks, at elaboration
    if (N_PE < NB || N_PE % NB != 0 || BPU > `ZQ_AXI_BURST_BEATS) begin : g_param_check0
        $error("zq_out_dma: N_PE=%0d: units must be 1..%0d whole %0d-bit beats", N_PE, `ZQ_AXI_BURST_BEATS, DW);
    end
    if (MARGIN >= DEPTH) begin : g_param_check1
        $error("zq_out_dma: MARGIN=%0d >= DEPTH=%0d", MARGIN, DEPTH);
    end
    if (MARGIN < PIPE + 1) begin : g_param_check2
        $error("zq_out_dma: MARGIN=%0d free units do not cover the %0d results a %0d-cycle pipeline still delivers",
               MARGIN, PIPE + 1, PIPE);
    end

    logic flush;                  // abort, once no issued burst has beats left

    // ---- burst formation at the input ------------------------------------------------------
    logic [4:0]  b_left;          // units still to come for the burst being formed (0: none open)
    logic [4:0]  b_units;
    logic [AW-1:0] b_addr;
    localparam LG_PE = $clog2(N_PE);
    wire [LINE_W-1:0] in_off = in_addr[LINE_W-1:0];
    wire [LINE_W-1:0] q      = in_off >> LG_PE;                        // the unit's index in its line
    wire              r_nz   = (in_off & LINE_W'(N_PE - 1)) != '0;     // a partial unit (units are aligned)
    // units before the line ends, (LINE - in_off) >> log2(N_PE) = LINE / N_PE - q - r_nz
    wire [7:0]  to_boundary = 8'(LINE / N_PE) - 8'(q) - 8'(r_nz);
    wire [4:0]  lim0  = (to_boundary < 8'(UPB)) ? 5'(to_boundary) : 5'(UPB);   // (UPB <= 16)
    wire        left_in = in_left[15:5] == '0 && in_left[4:0] < lim0;    // the run ends before the line
    wire [4:0]  n_new = left_in ? in_left[4:0] : lim0;
    // n_new - 1 (b_left of a burst opening here), each term minus 1 apart: no subtract after the mux
    wire [4:0]  n_new_m1 = left_in ? in_left[4:0] - 5'd1 : 5'(LINE / N_PE - 1) - 5'(q) - 5'(r_nz);
    // n_new == 1 from compares of the input bits (to_boundary 1 or 0: the unit's place in its line):
    // the command FIFO's push, the write enable of its LUT RAM, does not wait for n_new's arithmetic
    wire        tb_one  = q == (r_nz ? LINE_W'(LINE / N_PE - 2) : LINE_W'(LINE / N_PE - 1));
    wire        tb_zero = r_nz && q == LINE_W'(LINE / N_PE - 1);
    wire        one_new = (in_left == 16'd1 && !tb_zero) || (tb_one && in_left != '0);
    wire        take  = in_valid && !abort;
    logic        c_push;
    logic [AW-1:0] c_addr;
    logic [4:0]  c_units;
    always_comb begin
        c_push  = 1'b0;
        c_addr  = b_addr;
        c_units = b_units;
        if (take) begin
            if (b_left == '0) begin
                c_push  = one_new;
                c_addr  = in_addr;
                c_units = 5'd1;
            end else begin
                c_push  = b_left == 5'd1;
            end
        end
    end
    always_ff @(posedge clk) begin
        if (rst || flush || abort) begin
            b_left <= '0;
        end else if (take) begin
            if (b_left == '0) begin
                b_left  <= n_new_m1;
                b_units <= n_new;
                b_addr  <= in_addr;
            end else begin
                b_left <= b_left - 5'd1;
            end
        end
    end

    // ---- data and command FIFOs -------------------------------------------------------------
    logic              f_valid, f_pop;
    logic [N_PE*8-1:0] f_data;
    logic [CNT_W-1:0]  f_count;
    zq_fifo #(.DATA_W(N_PE * 8), .DEPTH(DEPTH)) u_data (
        .clk(clk), .rst(rst || flush), .in_valid(take), .in_ready(), .in_data(in_data),
        .out_valid(f_valid), .out_ready(f_pop), .out_data(f_data), .count(f_count)
    );
    always_ff @(posedge clk) full <= f_count >= CNT_W'(DEPTH - MARGIN);

    logic        cq_valid, cq_ready;
    logic [AW-1:0] cq_addr;
    logic [4:0]  cq_units;
    zq_fifo #(.DATA_W(AW + 5), .DEPTH(DEPTH)) u_cmd (
        .clk(clk), .rst(rst || flush), .in_valid(c_push), .in_ready(), .in_data({c_addr, c_units}),
        .out_valid(cq_valid), .out_ready(cq_ready && !abort), .out_data({cq_addr, cq_units}), .count()
    );

    // ---- writer --------------------------------------------------------------------------------
    logic          in_ready, wr_idle, w_busy;
    logic [BT_W-1:0] beat;
    always_ff @(posedge clk) begin
        if (rst || flush)                beat <= '0;
        else if (in_ready && f_valid)    beat <= (32'(beat) == BPU - 1) ? '0 : beat + 1'b1;
    end
    assign f_pop = in_ready && f_valid && (32'(beat) == BPU - 1);

    zq_axi_wr #(.ADDR_W(AW), .DATA_W(DW), .MAX_OUT(MAX_OUT)) u_wr (
        .clk(clk), .rst(rst), .cmd_valid(cq_valid && !abort), .cmd_ready(cq_ready), .cmd_addr(cq_addr),
        .cmd_beats(5'(cq_units * BPU)), .in_valid(f_valid), .in_ready(in_ready),
        .in_data(f_data[beat*DW +: DW]),
        .m_awvalid(m_awvalid), .m_awready(m_awready), .m_awaddr(m_awaddr), .m_awlen(m_awlen),
        .m_wvalid(m_wvalid), .m_wready(m_wready), .m_wdata(m_wdata), .m_wlast(m_wlast),
        .m_bvalid(m_bvalid), .m_bready(m_bready), .m_bresp(m_bresp), .err(err), .idle(wr_idle), .w_busy(w_busy)
    );
    assign flush = abort && !w_busy;

    always_ff @(posedge clk) begin
        if (rst) bytes_written <= '0;
        else if (m_wvalid && m_wready) bytes_written <= bytes_written + 32'(NB);
    end

    assign idle = wr_idle && !f_valid && !cq_valid && (b_left == '0);

endmodule

`default_nettype wire
