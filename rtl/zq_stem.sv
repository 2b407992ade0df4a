// zq_stem: the input frame, from s_axis_in to the first layer's input ring.
//
// 1. Stream: 32-bit beats of 4 uint8 pixels' bytes (HWC order), TLAST on beat
//    IN_BEATS-1. TLAST earlier is a short frame (err_short, input ends there);
//    no TLAST on beat IN_BEATS-1 is a long frame (err_long; beats are accepted
//    and dropped up to and including the next TLAST; every IN_BEATS beats
//    dropped count as one more frame, `drain_frames`, so that a frame whose
//    TLAST is missing and the frames it runs into each get an answer). Bytes are assembled into
//    pixels of IN_CH bytes, one per cycle, and written to a ring of RAW_RR raw
//    input rows (one RAM per row slot), row r into slot r mod RAW_RR once the
//    window builder has released the row it replaces.
// 2. Window builder: stem row ys (an output row of the first layer when it is
//    im2col'ed, else an input row) needs raw rows ys*S - PAD + ky, ky < K. It
//    scans the columns ix = -PAD .. (SIZE-1)*S - PAD + K - 1 one per cycle,
//    reading the K rows' pixels (zero outside the frame), keeps the last K
//    columns, and after column ox*S - PAD + K - 1 emits pixel ox: lanes
//    j = (ky*K + kx)*IN_CH + c of IN_WORDS words of N_CI lanes (zero for
//    j >= K*K*IN_CH). Words go to port B of the activation RAM as units of
//    WPG words (word w in bank w % WPG), at row
//    ring + ((w / WPG) << (lg_rows + lg_size)) + ((ys mod 2^lg_rows) << lg_size) + ox,
//    once the first layer has released the ring slot. `rows_avail` counts the
//    stem rows written.
// With K = S = 1 and PAD = 0 the same logic writes the channel-padded frame.
`include "zq_spec.svh"
`default_nettype none

module zq_stem #(
    parameter IN_SIZE  = 32,
    parameter IN_CH    = 1,
    parameter K        = 3,
    parameter S        = 2,
    parameter SIZE     = 16,        // stem rows and columns (IN_SIZE / S)
    parameter IN_WORDS = 2,
    parameter N_CI     = 8,
    parameter WPG      = 2,
    parameter ROW_W    = 12,
    parameter RAW_RR   = 8          // raw ring rows (a power of two >= K + S)
) (
    input  wire               clk,
    input  wire               rst,
    input  wire               start,        // frame start
    input  wire               abort,        // stop building; the stream is still drained to its TLAST
    // the first layer's input ring
    input  wire [ROW_W-1:0]   ring,
    input  wire [4:0]         lg_rows,
    input  wire [10:0]        release_rows,
    output logic [10:0]       rows_avail,
    // stream
    input  wire [`ZQ_STREAM_BITS-1:0] s_tdata,
    input  wire               s_tvalid,
    output logic              s_tready,
    input  wire               s_tlast,
    output logic              first_beat,   // pulse: the frame's first beat was accepted
    output logic              in_done,      // the frame's beats (up to its TLAST) are all taken
    output logic              err_short,
    output logic              err_long,
    output logic [15:0]       drain_frames, // whole frames of beats dropped after a long frame
    // activation RAM port B
    output logic              b_valid,
    input  wire               b_ready,
    output logic [ROW_W-1:0]  b_row,
    output logic [WPG-1:0]    b_mask,
    output logic [WPG*N_CI*8-1:0] b_data
);

    localparam PAD       = K / 2;
    localparam BB        = `ZQ_STREAM_BITS / 8;   // bytes (pixel channels) per beat
    localparam IN_BEATS  = IN_SIZE * IN_SIZE * IN_CH / BB;
    localparam PIX_W     = IN_CH * 8;
    localparam XW        = $clog2(IN_SIZE + 1);
    localparam RR_W      = $clog2(RAW_RR);
    localparam LANES     = K * K * IN_CH;
    localparam UNITS     = (IN_WORDS + WPG - 1) / WPG;
    localparam LWPG      = (WPG > 1) ? $clog2(WPG) : 0;
    localparam LSIZE     = $clog2(SIZE);
    localparam CAP       = IN_CH + BB;         // byte buffer
    localparam CAP_W     = $clog2(CAP + 1);
    localparam BW        = $clog2(IN_BEATS + 1);
    localparam NCOL      = (SIZE - 1) * S + K; // columns scanned per stem row

    // parameter checks, at elaboration
    if ((IN_SIZE * IN_SIZE * IN_CH) % BB != 0) begin : g_param_check0
        $error("zq_stem: the frame is not whole 32-bit beats");
    end
    if (RAW_RR < K + S || (RAW_RR & (RAW_RR - 1)) != 0) begin : g_param_check1
        $error("zq_stem: RAW_RR=%0d", RAW_RR);
    end
    if (IN_WORDS * N_CI < LANES) begin : g_param_check2
        $error("zq_stem: IN_WORDS*N_CI=%0d < K*K*IN_CH=%0d", IN_WORDS * N_CI, LANES);
    end
    if (SIZE * S != IN_SIZE) begin : g_param_check3
        $error("zq_stem: SIZE*S != IN_SIZE");
    end

    // ================================================================ stream -> pixels -> raw ring
    localparam [1:0] I_IDLE = 2'd0, I_RECV = 2'd1, I_DRAIN = 2'd2, I_DONE = 2'd3;
    logic              abort_q;         // the frame was aborted: drop the rest of its bytes
    logic [1:0]        istate;
    logic [BW-1:0]     nbeat;
    logic [BW-1:0]     dbeat;            // beats dropped, modulo IN_BEATS
    logic [CAP*8-1:0]  bbuf;            // byte buffer, byte 0 first
    logic [CAP_W-1:0]  bcnt;
    logic [CAP_W-1:0]  bcnt_m;          // bcnt - IN_CH (kept beside bcnt; used only when a pixel is ready)
    logic [10:0]       raw_y;           // raw row being written
    logic [XW-1:0]     raw_x;
    logic [10:0]       raw_avail;       // raw rows written in full
    logic [10:0]       raw_release;     // raw rows the builder no longer needs

    wire pix_ready = bcnt >= CAP_W'(IN_CH);
    // room in the raw ring, registered: it is computed for the row after this one, so it holds
    // one cycle later whatever happens (rows RAW_RR - 1 ahead of the builder's release at most)
    logic raw_room;
    always_ff @(posedge clk) raw_room <= !rst && !start && (raw_y + 11'd1 < raw_release + 11'(RAW_RR));
    wire emit_pix  = pix_ready && raw_room && (istate != I_DRAIN) && !abort_q;
    wire [CAP_W-1:0] bcnt_after = emit_pix ? bcnt_m : bcnt;
    // after an abort the rest of the frame is taken and dropped (its TLAST still ends the frame)
    assign s_tready = (istate == I_DRAIN) || ((istate == I_RECV) && (abort_q || (bcnt_after <= CAP_W'(CAP - BB))));
    wire beat = s_tvalid && s_tready;

    always_ff @(posedge clk) begin
        first_beat <= 1'b0;
        if (rst) begin
            istate <= I_IDLE;
            abort_q <= 1'b0;
        end else if (start) begin
            istate <= I_RECV;
            nbeat  <= '0;
            bcnt   <= '0;
            bcnt_m <= -CAP_W'(IN_CH);
            raw_y  <= '0;
            raw_x  <= '0;
            raw_avail <= '0;
            err_short <= 1'b0;
            err_long  <= 1'b0;
            abort_q   <= 1'b0;
            dbeat     <= '0;
            drain_frames <= '0;
        end else begin
            if (abort) abort_q <= 1'b1;
            // bytes in, a pixel out: the beat goes in at byte bcnt, or at bcnt - IN_CH when a
            // pixel leaves in the same cycle (both placements are formed, emit_pix selects)
            begin
                logic [CAP*8-1:0] nb_keep, nb_emit;
                nb_keep = bbuf;
                nb_emit = bbuf >> PIX_W;
                if (beat && istate == I_RECV && !abort_q) begin
                    for (int q = 0; q + BB <= CAP; q++) begin     // constant positions: decoded, no shifter
                        if (bcnt == CAP_W'(q))   nb_keep[q*8 +: BB*8] = s_tdata;
                        if (bcnt_m == CAP_W'(q)) nb_emit[q*8 +: BB*8] = s_tdata;
                    end
                end
                bbuf <= emit_pix ? nb_emit : nb_keep;
                bcnt   <= bcnt_after + ((beat && istate == I_RECV && !abort_q) ? CAP_W'(4) : '0);
                bcnt_m <= bcnt_after - CAP_W'(IN_CH) + ((beat && istate == I_RECV && !abort_q) ? CAP_W'(4) : '0);
            end
            if (emit_pix) begin
                if (raw_x == XW'(IN_SIZE - 1)) begin
                    raw_x <= '0;
                    raw_y <= raw_y + 11'd1;
                    raw_avail <= raw_y + 11'd1;
                end else begin
                    raw_x <= raw_x + 1'b1;
                end
            end
            if (beat) begin
                if (nbeat == '0 && istate == I_RECV) first_beat <= 1'b1;
                case (istate)
                    I_RECV: begin
                        nbeat <= nbeat + 1'b1;
                        if (nbeat == BW'(IN_BEATS - 1)) begin
                            if (s_tlast) istate <= I_DONE;
                            else begin
                                istate   <= I_DRAIN;
                                err_long <= 1'b1;
                            end
                        end else if (s_tlast) begin
                            istate    <= I_DONE;
                            err_short <= 1'b1;
                        end
                    end
                    I_DRAIN: begin
                        if (dbeat == BW'(IN_BEATS - 1)) begin
                            dbeat <= '0;
                            drain_frames <= drain_frames + 16'd1;
                        end else begin
                            dbeat <= dbeat + 1'b1;
                        end
                        if (s_tlast) istate <= I_DONE;
                    end
                    default: ;
                endcase
            end
        end
    end
    assign in_done = istate == I_DONE;

    wire [PIX_W-1:0] pix = bbuf[PIX_W-1:0];
    logic [PIX_W-1:0] raw_q [0:RAW_RR-1];
    logic [XW-1:0]    rd_col;
    genvar sl;
    generate
        for (sl = 0; sl < RAW_RR; sl = sl + 1) begin : g_raw
            zq_ram_sdp #(.DATA_W(PIX_W), .DEPTH(IN_SIZE), .OUT_REG(0)) u_row (
                .clk(clk), .wr_en(emit_pix && (raw_y[RR_W-1:0] == RR_W'(sl))),
                .wr_addr($clog2(IN_SIZE)'(raw_x)), .wr_data(pix),
                .rd_en(1'b1), .rd_addr($clog2(IN_SIZE)'(rd_col)), .rd_data(raw_q[sl])
            );
        end
    endgenerate

    // ================================================================ window builder
    localparam [1:0] B_IDLE = 2'd0, B_WAIT = 2'd1, B_SCAN = 2'd2, B_END = 2'd3;
    logic [1:0]  bstate;
    logic [10:0] ys;                      // stem row being built
    logic [11:0] col;                     // scan column index + PAD (0 .. NCOL-1)
    // counted per stem row (set at start, advanced at B_END): iy0 = ys*S - PAD, the row's first
    // raw row, and last_raw, its last one clamped to the frame
    logic signed [12:0] iy0;
    logic        [11:0] last_raw;
    function automatic [11:0] last_of(input signed [12:0] first);
        last_of = (32'(first) + K - 1 >= IN_SIZE) ? 12'(IN_SIZE - 1) : 12'(32'(first) + K - 1);
    endfunction
    wire  rows_in   = raw_avail > 11'(last_raw);
    wire  slot_free = ys < release_rows + (11'd1 << lg_rows);
    logic q_full;
    wire  scan = (bstate == B_SCAN) && !q_full;

    // L1: the column's K pixels read (raw RAM latency 1); L2: shifted into the window
    logic        c1_v, c1_emit;
    logic [11:0] c1_col;
    logic [K-1:0] c1_rowok;
    logic [RR_W-1:0] c1_slot [0:K-1];
    logic        c1_colok;
    logic [10:0] c1_ys;
    logic [LSIZE:0] c1_ox;
    assign rd_col = XW'(col - PAD);

    always_ff @(posedge clk) begin
        if (rst || start) begin
            bstate <= B_WAIT;
            ys <= '0;
            iy0 <= -13'(PAD);
            last_raw <= last_of(-13'(PAD));
            col <= '0;
            rows_avail <= '0;
            raw_release <= '0;
            c1_v <= 1'b0;
            if (rst) bstate <= B_IDLE;
        end else if (abort || abort_q) begin
            bstate <= B_IDLE;
            c1_v <= 1'b0;
        end else begin
            c1_v <= scan;
            case (bstate)
                B_WAIT: if (rows_in && slot_free && ys < 11'(SIZE)) begin
                    bstate <= B_SCAN;
                    col <= '0;
                end
                B_SCAN: if (!q_full) begin
                    if (col == 12'(NCOL - 1)) begin
                        bstate <= B_END;
                    end
                    col <= col + 12'd1;
                end
                B_END: if (!pending) begin        // the row's units are all in the queue
                    rows_avail  <= ys + 11'd1;
                    raw_release <= ((iy0 + S) < 0) ? 11'd0 : 11'(iy0 + S);   // (ys+1)*S - PAD
                    ys <= ys + 11'd1;
                    iy0 <= iy0 + 13'(S);
                    last_raw <= last_of(iy0 + 13'(S));
                    bstate <= B_WAIT;
                end
                default: ;
            endcase
        end
        c1_col   <= col;
        c1_colok <= (col >= 12'(PAD)) && (col < 12'(IN_SIZE + PAD));
        for (int ky = 0; ky < K; ky++) begin
            c1_rowok[ky] <= (iy0 + 13'(ky) >= 0) && (iy0 + 13'(ky) < 13'(IN_SIZE));
            c1_slot[ky]  <= RR_W'(iy0 + ky);
        end
        c1_emit <= (col >= 12'(K - 1)) && (((col - 12'(K - 1)) % S) == 0);
        c1_ys   <= ys;
        c1_ox   <= (LSIZE+1)'((32'(col) - (K - 1)) / S);
    end

    // the window: K columns of K pixels; column kx = K-1 is the newest
    logic [PIX_W-1:0] win [0:K-1][0:K-1];      // [ky][kx]
    logic [K*K*PIX_W-1:0] lanes_next;
    always_comb begin
        for (int ky = 0; ky < K; ky++)
            for (int kx = 0; kx < K; kx++) begin
                logic [PIX_W-1:0] pv;
                if (kx == K - 1) pv = (c1_colok && c1_rowok[ky]) ? raw_q[c1_slot[ky]] : '0;
                else             pv = win[ky][kx + 1];
                lanes_next[(ky * K + kx) * PIX_W +: PIX_W] = pv;
            end
    end
    always_ff @(posedge clk) begin
        if (c1_v) begin
            for (int ky = 0; ky < K; ky++)
                for (int kx = 0; kx < K; kx++)
                    win[ky][kx] <= lanes_next[(ky * K + kx) * PIX_W +: PIX_W];
        end
    end

    // emitted pixels: a small queue of (row, ox, lanes); units leave it for port B
    localparam QD = 4;
    logic             q_in;
    logic [10:0]      q_ys_h;
    logic [LSIZE:0]   q_ox_h;
    logic [IN_WORDS*N_CI*8-1:0] q_lanes_h;
    logic             q_valid;
    logic [$clog2(QD+1)-1:0] q_count;
    logic [$clog2(UNITS+1)-1:0] unit;
    logic             q_pop;
    wire [IN_WORDS*N_CI*8-1:0] emit_lanes = {{(IN_WORDS*N_CI*8 - K*K*PIX_W){1'b0}}, lanes_next};
    assign q_in = c1_v && c1_emit;
    zq_fifo #(.DATA_W(11 + LSIZE + 1 + IN_WORDS * N_CI * 8), .DEPTH(QD)) u_q (
        .clk(clk), .rst(rst || start || abort), .in_valid(q_in), .in_ready(),
        .in_data({c1_ys, c1_ox, emit_lanes}), .out_valid(q_valid), .out_ready(q_pop),
        .out_data({q_ys_h, q_ox_h, q_lanes_h}), .count(q_count)
    );
    // keep room for the pixels already in the L1 stage
    assign q_full = q_count >= ($clog2(QD+1))'(QD - 2);
    wire pending = q_valid || c1_v || b_valid;

    wire b_go = b_valid && b_ready;
    always_ff @(posedge clk) begin
        if (rst || start || abort) begin
            b_valid <= 1'b0;
            unit <= '0;
        end else begin
            if (b_go) b_valid <= 1'b0;
            if (q_valid && (!b_valid || b_go)) begin
                b_valid <= 1'b1;
                b_row   <= ring + ROW_W'((((32'(unit) << lg_rows) + 32'(q_ys_h & 11'((11'd1 << lg_rows) - 11'd1)))
                                          << LSIZE) + 32'(q_ox_h));
                for (int b = 0; b < WPG; b++) begin
                    b_mask[b] <= 32'(unit) * WPG + b < IN_WORDS;
                    b_data[b*N_CI*8 +: N_CI*8] <= (32'(unit) * WPG + b < IN_WORDS)
                        ? q_lanes_h[(32'(unit) * WPG + b) * N_CI * 8 +: N_CI * 8] : '0;
                end
                unit <= (unit == ($clog2(UNITS+1))'(UNITS - 1)) ? '0 : unit + 1'b1;
            end
        end
    end
    assign q_pop = q_valid && (!b_valid || b_go) && (unit == ($clog2(UNITS+1))'(UNITS - 1));

    wire unused_ok = &{1'b0, LWPG[0]};

endmodule

`default_nettype wire
