// zq_out_dma: results bound for DDR -> AXI4 write bursts on m_axi_act.
//
// Units of N_PE bytes arrive with their byte address and the number of units
// left in their contiguous run (the rows of one channel group in one band).
// Bursts are formed as the units arrive: a burst opens at a unit's address and
// takes as many units as fit 16 beats, end before the next 128-byte boundary
// (so no burst crosses a 4 KiB page) and stay in the run; when its last unit
// is in the data FIFO its command goes to the command FIFO. The writer
// (zq_axi_wr) issues the commands' AW as they come and sends their data back
// to back. `full` asks the MAC array to stop issuing while a pipeline's worth
// of results could still overflow the FIFO. `idle`: nothing queued or in
// flight. `abort` stops new bursts; the bursts already issued are written out,
// then both FIFOs and a half-formed burst are dropped.
`default_nettype none

module zq_out_dma #(
    parameter N_PE    = 16,       // bytes per unit (>= 8, a multiple of 8)
    parameter DEPTH   = 64,       // units
    parameter MARGIN  = 24,       // free units kept for results in flight
    parameter MAX_OUT = 8
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              abort,
    input  wire              in_valid,
    input  wire [31:0]       in_addr,
    input  wire [15:0]       in_left,
    input  wire [N_PE*8-1:0] in_data,
    output logic             full,
    output logic             m_awvalid,
    input  wire              m_awready,
    output logic [31:0]      m_awaddr,
    output logic [7:0]       m_awlen,
    output logic             m_wvalid,
    input  wire              m_wready,
    output logic [63:0]      m_wdata,
    output logic             m_wlast,
    input  wire              m_bvalid,
    output logic             m_bready,
    input  wire [1:0]        m_bresp,
    output logic             err,
    output logic             idle,
    output logic [31:0]      bytes_written
);

    localparam BPU   = N_PE / 8;                  // beats per unit
    localparam UPB   = 16 / BPU;                  // units per 16-beat burst
    localparam CNT_W = $clog2(DEPTH + 1);
    localparam BT_W  = (BPU > 1) ? $clog2(BPU) : 1;

    // parameter checks, at elaboration
    if (N_PE < 8 || N_PE % 8 != 0 || N_PE > 128) begin : g_param_check0
        $error("zq_out_dma: N_PE=%0d: units must be 1..16 whole 64-bit beats", N_PE);
    end
    if (MARGIN >= DEPTH) begin : g_param_check1
        $error("zq_out_dma: MARGIN=%0d >= DEPTH=%0d", MARGIN, DEPTH);
    end

    logic flush;                  // abort, once no issued burst has beats left

    // ---- burst formation at the input ------------------------------------------------------
    logic [4:0]  b_left;          // units still to come for the burst being formed (0: none open)
    logic [4:0]  b_units;
    logic [31:0] b_addr;
    wire [7:0]  to_boundary = (8'd128 - {1'b0, in_addr[6:0]}) >> $clog2(N_PE);   // units before the line ends
    wire [15:0] lim0  = (to_boundary < 8'(UPB)) ? 16'(to_boundary) : 16'(UPB);
    wire [4:0]  n_new = 5'((in_left < lim0) ? in_left : lim0);
    wire        take  = in_valid && !abort;
    logic        c_push;
    logic [31:0] c_addr;
    logic [4:0]  c_units;
    always_comb begin
        c_push  = 1'b0;
        c_addr  = b_addr;
        c_units = b_units;
        if (take) begin
            if (b_left == '0) begin
                c_push  = n_new == 5'd1;
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
                b_left  <= n_new - 5'd1;
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
    logic [31:0] cq_addr;
    logic [4:0]  cq_units;
    zq_fifo #(.DATA_W(32 + 5), .DEPTH(DEPTH)) u_cmd (
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

    zq_axi_wr #(.ADDR_W(32), .DATA_W(64), .MAX_OUT(MAX_OUT)) u_wr (
        .clk(clk), .rst(rst), .cmd_valid(cq_valid && !abort), .cmd_ready(cq_ready), .cmd_addr(cq_addr),
        .cmd_beats(5'(cq_units * BPU)), .in_valid(f_valid), .in_ready(in_ready),
        .in_data(f_data[beat*64 +: 64]),
        .m_awvalid(m_awvalid), .m_awready(m_awready), .m_awaddr(m_awaddr), .m_awlen(m_awlen),
        .m_wvalid(m_wvalid), .m_wready(m_wready), .m_wdata(m_wdata), .m_wlast(m_wlast),
        .m_bvalid(m_bvalid), .m_bready(m_bready), .m_bresp(m_bresp), .err(err), .idle(wr_idle), .w_busy(w_busy)
    );
    assign flush = abort && !w_busy;

    always_ff @(posedge clk) begin
        if (rst) bytes_written <= '0;
        else if (m_wvalid && m_wready) bytes_written <= bytes_written + 32'd8;
    end

    assign idle = wr_idle && !f_valid && !cq_valid && (b_left == '0);

endmodule

`default_nettype wire
