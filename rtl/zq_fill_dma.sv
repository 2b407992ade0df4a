// zq_fill_dma: the input ring of a layer that reads a DDR tensor, filled row by row.
//
// The tensor is stored [channel group][y][x][N_PE bytes] from `base`. Input
// row y (all channel groups, in order) may be read once y < release + 2^lg_rows,
// i.e. when its ring slot y mod 2^lg_rows is free; it is read as one run of
// W*N_PE bytes per channel group, in bursts of up to 16 beats that end at
// 128-byte boundaries. Each N_PE-byte unit goes to every bank of the
// activation RAM at row ring + (cg << (lg_rows + lg_w)) + ((y mod 2^lg_rows) << lg_w) + x.
// `rows_avail` counts the rows written in full. Responses come back in
// order (one ID), so a second set of counters follows them.
`default_nettype none

module zq_fill_dma #(
    parameter N_PE    = 16,
    parameter ROW_W   = 12,
    parameter MAX_OUT = 8
) (
    input  wire               clk,
    input  wire               rst,
    input  wire               start,        // layer constants valid
    input  wire               abort,        // stop issuing; outstanding bursts still drain
    input  wire [31:0]        base,         // DDR byte address of the tensor
    input  wire [4:0]         lg_w,         // log2 of the map size (H = W)
    input  wire [7:0]         cgrps,        // channel groups
    input  wire [ROW_W-1:0]   ring,         // activation-RAM row of the ring
    input  wire [4:0]         lg_rows,      // log2 of the ring's rows
    input  wire [10:0]        release_rows, // rows the ring may overwrite (from the MAC loop)
    output logic [10:0]       rows_avail,
    output logic              busy,         // rows still to read or responses in flight
    // activation RAM port B
    output logic              b_valid,
    input  wire               b_ready,
    output logic [ROW_W-1:0]  b_row,
    output logic [N_PE*8-1:0] b_data,
    // AXI4 read
    output logic              m_arvalid,
    input  wire               m_arready,
    output logic [31:0]       m_araddr,
    output logic [7:0]        m_arlen,
    input  wire               m_rvalid,
    output logic              m_rready,
    input  wire [63:0]        m_rdata,
    input  wire               m_rlast,
    input  wire [1:0]         m_rresp,
    output logic              err,
    output logic [31:0]       bytes_read
);

    localparam BPU = N_PE / 8;                 // beats per unit
    localparam LPE = $clog2(N_PE);

    // parameter checks, at elaboration
    if (N_PE < 8 || N_PE % 8 != 0) begin : g_param_check0
        $error("zq_fill_dma: N_PE=%0d: units must be whole 64-bit beats", N_PE);
    end

    // ---- requests ----------------------------------------------------------------------
    logic        active;
    logic [4:0]  c_lg_w, c_lg_rows;
    logic [7:0]  c_cgrps;
    logic [31:0] c_base;
    logic [ROW_W-1:0] c_ring;
    logic [10:0] q_y;          // row being requested
    logic [7:0]  q_cg;
    logic [15:0] q_byte;       // byte offset inside the (row, cg) run
    wire  [15:0] run_bytes = 16'(N_PE) << c_lg_w;
    wire  [15:0] left      = run_bytes - q_byte;
    wire  [31:0] q_addr    = c_base + (((32'(q_cg) << c_lg_w) + 32'(q_y)) << (32'(c_lg_w) + LPE)) + 32'(q_byte);
    wire  [7:0]  to_line   = 8'd128 - {1'b0, q_addr[6:0]};
    wire  [15:0] chunk     = (left < 16'(to_line)) ? left : 16'(to_line);
    wire  [10:0] h         = 11'd1 << c_lg_w;
    wire         slot_free = q_y < release_rows + (11'd1 << c_lg_rows);
    logic        cmd_ready;
    logic [10:0] p_y;          // row of the response unit being assembled
    wire         resp_done = p_y >= h;
    wire         cmd_valid = active && (q_y < h) && slot_free && !abort;

    always_ff @(posedge clk) begin
        if (rst) begin
            active <= 1'b0;
        end else if (start) begin
            active  <= 1'b1;
            c_lg_w  <= lg_w;   c_lg_rows <= lg_rows;  c_cgrps <= cgrps;
            c_base  <= base;   c_ring <= ring;
            q_y <= '0; q_cg <= '0; q_byte <= '0;
        end else if (cmd_valid && cmd_ready) begin
            if (chunk == left) begin
                q_byte <= '0;
                if (q_cg == c_cgrps - 8'd1) begin
                    q_cg <= '0;
                    q_y  <= q_y + 11'd1;
                end else begin
                    q_cg <= q_cg + 8'd1;
                end
            end else begin
                q_byte <= q_byte + chunk;
            end
        end else if (abort || (q_y >= h && resp_done)) begin
            active <= 1'b0;
        end
    end

    logic        rd_valid, rd_last, rd_err, rd_idle;
    logic [63:0] rd_data;
    logic        rd_ready;
    zq_axi_rd #(.ADDR_W(32), .DATA_W(64), .MAX_OUT(MAX_OUT)) u_rd (
        .clk(clk), .rst(rst), .cmd_valid(cmd_valid), .cmd_ready(cmd_ready), .cmd_addr(q_addr),
        .cmd_beats(5'(chunk >> 3)),
        .m_arvalid(m_arvalid), .m_arready(m_arready), .m_araddr(m_araddr), .m_arlen(m_arlen),
        .m_rvalid(m_rvalid), .m_rready(m_rready), .m_rdata(m_rdata), .m_rlast(m_rlast), .m_rresp(m_rresp),
        .out_valid(rd_valid), .out_ready(rd_ready), .out_data(rd_data), .out_last(rd_last), .out_err(rd_err),
        .idle(rd_idle)
    );

    // ---- responses: beats -> units -> ring rows -------------------------------------
    logic [7:0]  p_cg;
    logic [10:0] p_x;
    logic [$clog2(BPU+1)-1:0] p_beat;
    logic [N_PE*8-1:0] unit;   // beats of the unit being assembled
    logic        b_row_last;   // the unit on port B completes its row
    assign rd_ready = !b_valid || b_ready;
    wire   unit_done = rd_valid && rd_ready && (32'(p_beat) == BPU - 1);
    logic [N_PE*8-1:0] unit_next;
    always_comb begin
        unit_next = unit;
        unit_next[(BPU-1)*64 +: 64] = rd_data;
    end

    always_ff @(posedge clk) begin
        if (rst || start) begin
            p_y <= '0; p_cg <= '0; p_x <= '0; p_beat <= '0;
            b_valid <= 1'b0;
            rows_avail <= '0;
        end else begin
            if (b_valid && b_ready) begin
                b_valid <= 1'b0;
                if (b_row_last) rows_avail <= rows_avail + 11'd1;
            end
            if (rd_valid && rd_ready) begin
                unit[p_beat*64 +: 64] <= rd_data;
                if (unit_done) begin
                    p_beat     <= '0;
                    b_valid    <= 1'b1;
                    b_data     <= unit_next;
                    b_row      <= c_ring + ROW_W'(((32'(p_cg) << c_lg_rows) + 32'(p_y & 11'((11'd1 << c_lg_rows) - 11'd1)))
                                                  << c_lg_w) + ROW_W'(p_x);
                    b_row_last <= (p_x == h - 11'd1) && (p_cg == c_cgrps - 8'd1);
                    if (p_x == h - 11'd1) begin
                        p_x <= '0;
                        if (p_cg == c_cgrps - 8'd1) begin
                            p_cg <= '0;
                            p_y  <= p_y + 11'd1;
                        end else begin
                            p_cg <= p_cg + 8'd1;
                        end
                    end else begin
                        p_x <= p_x + 11'd1;
                    end
                end else begin
                    p_beat <= p_beat + 1'b1;
                end
            end
        end
    end

    always_ff @(posedge clk) err <= !rst && rd_valid && rd_ready && rd_err;
    always_ff @(posedge clk) begin
        if (rst) bytes_read <= '0;
        else if (rd_valid && rd_ready) bytes_read <= bytes_read + 32'd8;
    end

    assign busy = active || !rd_idle || b_valid;
    wire unused_last = rd_last;

endmodule

`default_nettype wire
