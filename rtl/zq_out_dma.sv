// zq_out_dma: results bound for DDR -> AXI4 write bursts on m_axi_act.
//
// Units of N_PE bytes arrive with their byte address and the number of units
// left in their contiguous run (the rows of one channel group in one band).
// A burst takes as many units from the head of the FIFO as fit 16 beats, end
// before the next 128-byte boundary (so no burst crosses a 4 KiB page) and stay
// in the run; it is issued once those units are all in the FIFO. `full` asks
// the MAC array to stop issuing while a pipeline's worth of results could
// still overflow the FIFO. `idle`: nothing queued or in flight. `abort` drops
// the queued units that no burst has started on (a burst once issued completes).
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

    logic [4:0]  units_left;    // units of the current burst still to send
    wire         sending = units_left != '0;

    initial begin
        if (N_PE < 8 || N_PE % 8 != 0) $error("zq_out_dma: N_PE=%0d: units must be whole 64-bit beats", N_PE);
        if (MARGIN >= DEPTH) $error("zq_out_dma: MARGIN=%0d >= DEPTH=%0d", MARGIN, DEPTH);
    end

    // ---- unit FIFO ------------------------------------------------------------------
    logic              f_valid, f_pop;
    logic [31:0]       f_addr;
    logic [15:0]       f_left;
    logic [N_PE*8-1:0] f_data;
    logic [CNT_W-1:0]  f_count;
    zq_fifo #(.DATA_W(32 + 16 + N_PE * 8), .DEPTH(DEPTH)) u_fifo (
        .clk(clk), .rst(rst || (abort && !sending)), .in_valid(in_valid && !abort), .in_ready(),
        .in_data({in_addr, in_left, in_data}),
        .out_valid(f_valid), .out_ready(f_pop), .out_data({f_addr, f_left, f_data}), .count(f_count)
    );
    always_ff @(posedge clk) full <= f_count >= CNT_W'(DEPTH - MARGIN);

    // ---- burst formation ------------------------------------------------------------
    wire [7:0]  to_boundary = (8'd128 - {1'b0, f_addr[6:0]}) >> $clog2(N_PE);   // units before the 128-B line ends
    wire [15:0] lim0 = (to_boundary < 8'(UPB)) ? 16'(to_boundary) : 16'(UPB);
    wire [15:0] units = (f_left < lim0) ? f_left : lim0;
    wire        ready_burst = f_valid && (32'(f_count) >= 32'(units));

    logic        cmd_valid, cmd_ready;
    logic [4:0]  cmd_beats;
    logic [31:0] cmd_addr;
    logic [$clog2(BPU+1)-1:0] beat;

    logic        in_ready;
    assign cmd_valid = ready_burst && !sending && !abort;
    assign cmd_addr  = f_addr;
    assign cmd_beats = 5'(units * BPU);

    always_ff @(posedge clk) begin
        if (rst) begin
            units_left <= '0;
            beat       <= '0;
        end else if (cmd_valid && cmd_ready) begin
            units_left <= 5'(units);
            beat       <= '0;
        end else if (in_ready && sending) begin
            if (32'(beat) == BPU - 1) begin
                beat       <= '0;
                units_left <= units_left - 5'd1;
            end else begin
                beat <= beat + 1'b1;
            end
        end
    end
    assign f_pop = sending && in_ready && (32'(beat) == BPU - 1);

    logic wr_idle;
    zq_axi_wr #(.ADDR_W(32), .DATA_W(64), .MAX_OUT(MAX_OUT)) u_wr (
        .clk(clk), .rst(rst), .cmd_valid(cmd_valid), .cmd_ready(cmd_ready), .cmd_addr(cmd_addr),
        .cmd_beats(cmd_beats), .in_valid(sending), .in_ready(in_ready), .in_data(f_data[beat*64 +: 64]),
        .m_awvalid(m_awvalid), .m_awready(m_awready), .m_awaddr(m_awaddr), .m_awlen(m_awlen),
        .m_wvalid(m_wvalid), .m_wready(m_wready), .m_wdata(m_wdata), .m_wlast(m_wlast),
        .m_bvalid(m_bvalid), .m_bready(m_bready), .m_bresp(m_bresp), .err(err), .idle(wr_idle)
    );

    always_ff @(posedge clk) begin
        if (rst) bytes_written <= '0;
        else if (m_wvalid && m_wready) bytes_written <= bytes_written + 32'd8;
    end

    assign idle = wr_idle && !f_valid && !sending;

endmodule

`default_nettype wire
