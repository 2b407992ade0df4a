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
//
// Two activation paths (zq_fill_paths): with `step2` this DMA reads every other row, from row
// `phase` (0 or 1), and `rows_avail` counts those rows; a second instance on the other master
// reads the rest. A DMA not enabled (`en` low with start) reads nothing in that layer and counts
// no rows (its `rows_avail` is 0).
`include "zq_spec.svh"
`default_nettype none

module zq_fill_dma #(
    parameter N_PE    = 16,
    parameter ROW_W   = 12,
    parameter MAX_OUT = 8,
    parameter AW      = `ZQ_AXI_ADDR_BITS,
    parameter DW      = `ZQ_AXI_DATA_BITS
) (
    input  wire               clk,
    input  wire               rst,
    input  wire               start,        // layer constants valid
    input  wire               en,           // this DMA reads in this layer (with start; else it stays idle)
    input  wire               step2,        // read rows phase, phase + 2, ... (two paths; with start)
    input  wire               phase,        // the first row read (0 or 1; with start)
    input  wire               abort,        // stop issuing; outstanding bursts still drain
    input  wire [AW-1:0]      base,         // DDR byte address of the tensor
    input  wire [`ZQ_ROW_LG_IN_W-1:0]       lg_w,     // log2 of the map size (H = W)
    input  wire [`ZQ_ROW_SRC_CGRPS_W-1:0]   cgrps,    // channel groups
    input  wire [ROW_W-1:0]   ring,         // activation-RAM row of the ring
    input  wire [`ZQ_ROW_SRC_LG_ROWS_W-1:0] lg_rows,  // log2 of the ring's rows
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
    output logic [AW-1:0]     m_araddr,
    output logic [7:0]        m_arlen,
    input  wire               m_rvalid,
    output logic              m_rready,
    input  wire [DW-1:0]      m_rdata,
    input  wire               m_rlast,
    input  wire [1:0]         m_rresp,
    output logic              err,
    output logic [31:0]       bytes_read
);

    localparam NB   = DW / 8;                  // bytes per beat
    localparam BPU  = N_PE / NB;               // beats per unit
    localparam LINE = `ZQ_AXI_LINE_BYTES;      // bursts end at a line (never across 4 KiB)
    localparam LINE_W = $clog2(LINE);
    localparam CG_W = `ZQ_ROW_SRC_CGRPS_W;

    // parameter checks, at elaboration
    if (N_PE < NB || N_PE % NB != 0) begin : g_param_check0
        $error("zq_fill_dma: N_PE=%0d: units must be whole %0d-bit beats", N_PE, DW);
    end

    // ---- requests ----------------------------------------------------------------------
    // Addresses are counted, not computed: the next request's address and the bytes left in
    // its run advance by adds only; the burst length and the ring check are registered one
    // cycle behind them (`settle`; the reader takes a command every other cycle at most).
    logic        active;
    logic [`ZQ_ROW_LG_IN_W-1:0]       c_lg_w;
    logic [`ZQ_ROW_SRC_LG_ROWS_W-1:0] c_lg_rows;
    logic [CG_W-1:0] c_cgrps;
    logic [ROW_W-1:0] c_ring;
    logic [15:0] run_bytes;    // W * N_PE: one (row, channel group) run
    logic [AW-1:0] cg_skip;    // H * W * N_PE - run_bytes: from a run's end to the next group's run
    logic [10:0] h;            // H = W
    logic        c_step2, c_phase;
    logic [10:0] q_y;          // row being requested
    logic [CG_W-1:0] q_cg;
    logic [AW-1:0] q_addr;     // next request's address
    logic [AW-1:0] row_addr;   // address of row q_y's first run (channel group 0)
    logic [15:0] left;         // bytes left in the current run
    logic [15:0] chunk;        // the next burst's bytes (registered)
    logic        slot_free;    // row q_y's ring slot is free (registered)
    logic        settle;
    logic        cmd_ready;
    logic [10:0] p_y;          // row of the response unit being assembled
    wire         resp_done = p_y >= h;
    wire         cmd_valid = active && !settle && (q_y < h) && slot_free && !abort;
    wire  [LINE_W-1:0] q_off = q_addr[LINE_W-1:0];
    wire  [7:0]  to_line   = 8'(LINE - 32'(q_off));

    always_ff @(posedge clk) begin
        chunk     <= (left < 16'(to_line)) ? left : 16'(to_line);
        slot_free <= q_y < release_rows + (11'd1 << c_lg_rows);
    end

    // row q_y's first run is `row_step` bytes after the previous one's (one or two rows)
    wire [AW-1:0] row_first = base + (phase ? (AW'(N_PE) << lg_w) : AW'(0));
    wire [AW-1:0] row_step  = AW'(run_bytes) << c_step2;
    always_ff @(posedge clk) begin
        if (rst) begin
            active <= 1'b0;
        end else if (start) begin
            active    <= en;
            c_lg_w    <= lg_w;   c_lg_rows <= lg_rows;  c_cgrps <= cgrps;
            c_ring    <= ring;
            c_step2   <= step2;  c_phase <= phase;
            h         <= 11'd1 << lg_w;
            run_bytes <= 16'(N_PE) << lg_w;
            left      <= 16'(N_PE) << lg_w;
            cg_skip   <= (AW'(N_PE) << (lg_w + lg_w)) - (AW'(N_PE) << lg_w);
            q_y <= 11'(phase); q_cg <= '0;
            q_addr    <= row_first;
            row_addr  <= row_first;
            settle    <= 1'b1;
        end else if (cmd_valid && cmd_ready) begin
            settle <= 1'b1;
            if (chunk == left) begin                 // the run ends
                left <= run_bytes;
                if (q_cg == c_cgrps - CG_W'(1)) begin
                    q_cg     <= '0;
                    q_y      <= q_y + (c_step2 ? 11'd2 : 11'd1);
                    row_addr <= row_addr + row_step;
                    q_addr   <= row_addr + row_step;
                end else begin
                    q_cg   <= q_cg + CG_W'(1);
                    q_addr <= q_addr + AW'(chunk) + cg_skip;
                end
            end else begin
                left   <= left - chunk;
                q_addr <= q_addr + AW'(chunk);
            end
        end else begin
            settle <= 1'b0;
            if (abort || (q_y >= h && resp_done)) active <= 1'b0;
        end
    end

    logic        rd_valid, rd_last, rd_err, rd_idle;
    logic [DW-1:0] rd_data;
    logic        rd_ready;
    zq_axi_rd #(.ADDR_W(AW), .DATA_W(DW), .MAX_OUT(MAX_OUT)) u_rd (
        .clk(clk), .rst(rst), .cmd_valid(cmd_valid), .cmd_ready(cmd_ready), .cmd_addr(q_addr),
        .cmd_beats(5'(chunk >> 3)),
        .m_arvalid(m_arvalid), .m_arready(m_arready), .m_araddr(m_araddr), .m_arlen(m_arlen),
        .m_rvalid(m_rvalid), .m_rready(m_rready), .m_rdata(m_rdata), .m_rlast(m_rlast), .m_rresp(m_rresp),
        .out_valid(rd_valid), .out_ready(rd_ready), .out_data(rd_data), .out_last(rd_last), .out_err(rd_err),
        .idle(rd_idle)
    );

    // ---- responses: beats -> units -> ring rows -------------------------------------
    // The unit's activation-RAM row is counted too: p_slot0 = ring + (y mod R) * W, p_run0 =
    // p_slot0 + cg * R * W, p_row = p_run0 + x.
    logic [CG_W-1:0] p_cg;
    logic [10:0] p_x;
    logic [ROW_W-1:0] p_slot0, p_run0, p_row;
    logic [ROW_W-1:0] rw;      // R * W: from one channel group's ring to the next
    logic [$clog2(BPU+1)-1:0] p_beat;
    logic [N_PE*8-1:0] unit;   // beats of the unit being assembled
    logic        b_row_last;   // the unit on port B completes its row
    // a unit waiting for port B holds back only the last beat of the next one
    assign rd_ready = !b_valid || b_ready || (p_beat != ($clog2(BPU+1))'(BPU - 1));
    wire   unit_done = rd_valid && rd_ready && (p_beat == ($clog2(BPU+1))'(BPU - 1));
    wire   last_x    = p_x == h - 11'd1;
    wire   last_cg   = p_cg == c_cgrps - CG_W'(1);
    wire [10:0] p_next = p_y + (c_step2 ? 11'd2 : 11'd1);     // the next row this DMA reads
    wire   wrap_y    = (p_next & ((11'd1 << c_lg_rows) - 11'd1)) == 11'(c_phase);
    wire [ROW_W-1:0] slot_first = c_ring + (c_phase ? ROW_W'(h) : ROW_W'(0));   // row `phase`'s slot
    wire [ROW_W-1:0] slot_next  = p_slot0 + (ROW_W'(h) << c_step2);
    // beats shift in from the top: after BPU of them the first is in the low DW bits
    wire [N_PE*8-1:0] unit_next = (BPU > 1) ? {rd_data, unit[N_PE*8-1:DW]} : (N_PE*8)'(rd_data);

    always_ff @(posedge clk) begin
        if (rst || start) begin
            p_y <= 11'(phase); p_cg <= '0; p_x <= '0; p_beat <= '0;
            b_valid <= 1'b0;
            rows_avail <= '0;
            p_slot0 <= ring + (phase ? (ROW_W'(1) << lg_w) : ROW_W'(0));
            p_run0  <= ring + (phase ? (ROW_W'(1) << lg_w) : ROW_W'(0));
            p_row   <= ring + (phase ? (ROW_W'(1) << lg_w) : ROW_W'(0));
            rw      <= ROW_W'(1) << (lg_rows + lg_w);
        end else begin
            if (b_valid && b_ready) begin
                b_valid <= 1'b0;
                if (b_row_last) rows_avail <= rows_avail + 11'd1;
            end
            if (rd_valid && rd_ready) begin
                unit <= unit_next;
                if (unit_done) begin
                    p_beat     <= '0;
                    b_valid    <= 1'b1;
                    b_data     <= unit_next;
                    b_row      <= p_row;
                    b_row_last <= last_x && last_cg;
                    if (last_x) begin
                        p_x <= '0;
                        if (last_cg) begin
                            p_cg    <= '0;
                            p_y     <= p_next;
                            p_slot0 <= wrap_y ? slot_first : slot_next;
                            p_run0  <= wrap_y ? slot_first : slot_next;
                            p_row   <= wrap_y ? slot_first : slot_next;
                        end else begin
                            p_cg   <= p_cg + CG_W'(1);
                            p_run0 <= p_run0 + rw;
                            p_row  <= p_run0 + rw;
                        end
                    end else begin
                        p_x   <= p_x + 11'd1;
                        p_row <= p_row + ROW_W'(1);
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
        else if (rd_valid && rd_ready) bytes_read <= bytes_read + 32'(NB);
    end

    assign busy = active || !rd_idle || b_valid;
    wire unused_last = rd_last;

endmodule

`default_nettype wire
