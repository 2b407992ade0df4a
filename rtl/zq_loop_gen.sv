// zq_loop_gen: one layer's loop nest, one MAC step per cycle when data is ready.
//
//   for band:  [ring-fed layers: wait until the ring holds the band's last input row]
//     for g:   [wait until the weight ring holds block g; issue its bias step]
//       for oy in band, ox, ky, kx, c:   one MAC step
//       [streamed weights: release block g]
//     [ring-fed: release the input rows the next band no longer needs]
//   [resident weights: release the layer's blocks]
//
// Addresses use counters, shifts and masks only (every map size is a power of two):
//   input  iy = oy*s + ky - k/2, ix = ox*s + kx - k/2 (outside the map: a zero word);
//          bank = c % WPG, row = src_base + ((c / WPG) << (lg_rows + lg_in))
//                                 + ((iy mod 2^lg_rows) << lg_in) + ix
//   weight ring word = (w_off + g*w_blk + 1 + (ky*k + kx)*ci_chunks + c) mod 2^WR_W
//          (the bias step reads word w_off + g*w_blk)
// Step outputs are registered (stage S0); the address path has three stages
// (L1 taps and bounds, L2 partial sums, S0 the row), so the counters run three
// cycles ahead of S0. Outputs for the write-back travel with each step:
// the group, the output pixel (oy << lg_out | ox), and flags. The layer constants have the
// layer-table row's widths (zq_spec.svh); RTL_PIPE_ADDR is these three address stages.
`include "zq_spec.svh"
`default_nettype none

module zq_loop_gen #(
    parameter N_PE   = 16,
    parameter WPG    = 2,       // N_PE / N_CI
    parameter ROW_W  = 12,      // activation-RAM row bits
    parameter WR_W   = 9,       // weight-ring word address bits (ring of 2^WR_W words)
    parameter BANK_W = (WPG > 1) ? $clog2(WPG) : 1,
    parameter NV_W   = $clog2(N_PE + 1),
    parameter REL_DELAY = 4         // cycles from the loop passing a row / word to its release
) (
    input  wire               clk,
    input  wire               rst,
    input  wire               frame_start,  // a new frame: no weight-ring word is released yet
    input  wire               start,        // layer constants below are valid from here on
    input  wire               abort,
    output logic              busy,         // steps still to issue or in the address stages (until S0)
    // layer constants
    input  wire [`ZQ_ROW_LG_IN_W-1:0]       lg_in,
    input  wire [`ZQ_ROW_LG_OUT_W-1:0]      lg_out,
    input  wire               k3,
    input  wire               s2,
    input  wire [`ZQ_ROW_CI_CHUNKS_W-1:0]   ci_chunks,
    input  wire [`ZQ_ROW_CO_GROUPS_W-1:0]   co_groups,
    input  wire [`ZQ_ROW_CO_LAST_W-1:0]     co_last,
    input  wire [`ZQ_ROW_LG_BAND_W-1:0]     lg_band,
    input  wire               ring_fed,     // SRC_STEM or SRC_DDR
    input  wire [ROW_W-1:0]   src_base,
    input  wire [`ZQ_ROW_SRC_LG_ROWS_W-1:0] src_lg_rows,
    input  wire [10:0]        in_rows,      // input rows of the layer's source (H)
    input  wire [`ZQ_ROW_W_OFF_W-1:0]       w_off,
    input  wire [`ZQ_ROW_W_BLK_W-1:0]       w_blk,
    input  wire               w_res,
    // flow control
    input  wire [10:0]        rows_avail,   // input rows in the ring (ring-fed layers)
    output logic [10:0]       rows_release, // input rows the ring may overwrite (REL_DELAY after the loop)
    input  wire [`ZQ_ROW_W_OFF_W-1:0] w_loaded,   // weight-image words in the ring
    output logic [`ZQ_ROW_W_OFF_W-1:0] w_release, // weight-image words the ring may overwrite
    input  wire               out_full,     // the output path cannot take more results
    output logic              stall_mem,    // a cycle without a step, waiting for memory
    // step (S0)
    output logic              s_valid,      // a MAC step
    output logic              s_bias,       // the bias step of a block
    output logic              s_first,      // first step of a pixel
    output logic              s_last,       // last step of a pixel
    output logic              s_blk_last,   // last step of the block's last pixel
    output logic [BANK_W-1:0] s_bank,
    output logic [ROW_W-1:0]  s_row,
    output logic              s_zero,       // the tap is outside the map
    output logic [WR_W-1:0]   s_waddr,
    output logic [`ZQ_ROW_CO_GROUPS_W-1:0] s_g,
    output logic [19:0]       s_pix,
    output logic [NV_W-1:0]   s_nvalid      // valid output channels of the group
);

    localparam LWPG = (WPG > 1) ? $clog2(WPG) : 0;

    // a release is a promise that no step still reads the row or word: it must not leave before
    // the last step reading it has passed the address stages (S0 presents the RAM read)
    if (REL_DELAY < `ZQ_RTL_PIPE_ADDR) begin : g_param_check0
        $error("zq_loop_gen: REL_DELAY=%0d releases before the %0d address stages are passed", REL_DELAY,
               `ZQ_RTL_PIPE_ADDR);
    end

    // ---- layer constants, latched at start ------------------------------------
    logic [`ZQ_ROW_LG_IN_W-1:0]       c_lg_in;
    logic [`ZQ_ROW_LG_OUT_W-1:0]      c_lg_out;
    logic [`ZQ_ROW_SRC_LG_ROWS_W-1:0] c_lg_rows;
    logic [`ZQ_ROW_LG_BAND_W-1:0]     c_lg_band;
    logic        c_k3, c_s2, c_ring, c_res;
    logic [`ZQ_ROW_CI_CHUNKS_W-1:0]   c_chunks;
    logic [`ZQ_ROW_CO_GROUPS_W-1:0]   c_groups;
    logic [`ZQ_ROW_CO_LAST_W-1:0]     c_last;
    logic [ROW_W-1:0] c_base;
    logic [10:0] c_in_rows;
    logic [`ZQ_ROW_W_BLK_W-1:0]       c_blk;
    logic [10:0] c_out, c_band_rows;
    logic [11:0] c_lr_off;         // (R-1)*s - k/2 + k - 1: last input row of a band minus band*R*s

    // ---- counters ---------------------------------------------------------------
    localparam [2:0] G_IDLE = 3'd0, G_BAND = 3'd1, G_BLK = 3'd2, G_RUN = 3'd3, G_END = 3'd4, G_PREP = 3'd5;
    logic [2:0]  state;
    logic        running;           // counters running (until the last step is issued)
    logic [10:0] band, r, ox;       // band index, row within band, output column
    logic [`ZQ_ROW_CO_GROUPS_W-1:0] g;
    logic [`ZQ_ROW_CI_CHUNKS_W-1:0] c;
    logic [1:0]  ky, kx;
    logic [`ZQ_ROW_W_OFF_W-1:0] blk_base;   // image word of block g's bias
    logic [10:0] band_row0;         // band * R * s (input row of the band's first output row before padding)
    logic [10:0] band_oy0;          // band * R: the band's first output row
    logic [10:0] oy;                // the output row: band_oy0 + r (a counter, not an add)
    logic [WR_W-1:0] w_addr;
    logic [10:0] n_bands;           // bands of the layer (out >> lg_band), set in G_PREP
    logic [11:0] band_step;         // input rows from one band to the next (R << s), set in G_PREP
    logic [10:0] need_r;            // input rows the current band waits for
    logic [10:0] need_next;         // ... and the next band (from band_row0, a cycle behind it)
    logic [10:0] rel_rows_q;        // releases as the loop makes them; the outputs follow REL_DELAY later
    logic [`ZQ_ROW_W_OFF_W-1:0] rel_w_q;

    wire [1:0]  kmax    = c_k3 ? 2'd2 : 2'd0;
    wire        last_c  = c == c_chunks - `ZQ_ROW_CI_CHUNKS_W'(1);
    wire        last_kx = kx == kmax;
    wire        last_ky = ky == kmax;
    wire        last_ox = ox == c_out - 11'd1;
    wire        last_r  = r == c_band_rows - 11'd1;
    wire        last_g  = g == c_groups - `ZQ_ROW_CO_GROUPS_W'(1);
    wire        last_band = (band + 11'd1) == n_bands;
    wire        last_tap  = last_c && last_kx && last_ky;
    wire        blk_done  = last_tap && last_ox && last_r;

    // band waits: the band's last input row + 1, clamped to the map. need_r is set when the band
    // starts, from need_next, which follows band_row0 one cycle behind (a band lasts 3 cycles or more)
    function automatic [10:0] need_of(input [11:0] row0, input [11:0] lr_off, input [10:0] rows);
        logic [11:0] last;
        last = row0 + lr_off;
        need_of = (last >= {1'b0, rows}) ? rows : last[10:0] + 11'd1;
    endfunction
    always_ff @(posedge clk) need_next <= need_of({1'b0, band_row0} + band_step, c_lr_off, c_in_rows);
    wire        rows_ok = !c_ring || (rows_avail >= need_r);
    wire [`ZQ_ROW_W_OFF_W-1:0] blk_end = blk_base + `ZQ_ROW_W_OFF_W'(c_blk);
    wire        w_ok = w_loaded >= blk_end;
    wire        issue = (state == G_RUN) && !out_full;

    // a band's end, a band ahead: the next band's first input row (band+1)*R*s, a register behind
    // band_row0, and the input rows released after the band, (band+1)*R*s - k/2 clamped at 0 and at
    // the map, a register behind that (a band lasts three cycles or more: G_BAND, G_BLK, a step)
    logic [11:0] row0_next;
    logic [10:0] rel_next;
    wire  [11:0] rel_rows = (row0_next < {11'd0, c_k3}) ? 12'd0 : row0_next - {11'd0, c_k3};
    always_ff @(posedge clk) begin
        row0_next <= {1'b0, band_row0} + band_step;
        rel_next  <= rel_rows > {1'b0, c_in_rows} ? c_in_rows : rel_rows[10:0];
    end

    always_ff @(posedge clk) begin
        if (rst || abort || frame_start) begin
            state <= G_IDLE;
            running <= 1'b0;
            rel_rows_q <= '0;
            rel_w_q <= '0;
        end else begin
            case (state)
                G_IDLE: if (start) begin
                    c_lg_in <= lg_in;   c_lg_out <= lg_out;   c_lg_rows <= src_lg_rows;  c_lg_band <= lg_band;
                    c_k3 <= k3;         c_s2 <= s2;           c_ring <= ring_fed;        c_res <= w_res;
                    c_chunks <= ci_chunks;  c_groups <= co_groups;  c_last <= co_last;
                    c_base <= src_base; c_in_rows <= in_rows; c_blk <= w_blk;
                    c_out <= 11'd1 << lg_out;
                    c_band_rows <= 11'd1 << lg_band;
                    c_lr_off <= ((12'd1 << lg_band) - 12'd1 << s2) + {10'd0, k3, 1'b0} - {11'd0, k3};
                    band <= '0; g <= '0; r <= '0; ox <= '0; ky <= '0; kx <= '0; c <= '0;
                    band_row0 <= '0;
                    band_oy0 <= '0;
                    oy <= '0;
                    blk_base <= w_off;
                    rel_rows_q <= '0;
                    running <= 1'b1;
                    state <= G_PREP;
                end
                G_PREP: begin                          // per-layer terms from the latched constants
                    n_bands   <= c_out >> c_lg_band;
                    band_step <= {1'b0, c_band_rows} << c_s2;
                    need_r    <= need_of(12'd0, c_lr_off, c_in_rows);
                    state     <= G_BAND;
                end
                G_BAND: if (rows_ok) state <= G_BLK;
                G_BLK:  if (w_ok) state <= G_RUN;       // the bias step issues in this transition
                G_RUN: if (issue) begin
                    if (blk_done) begin
                        if (!c_res) rel_w_q <= blk_end;
                        r <= '0; ox <= '0; ky <= '0; kx <= '0; c <= '0;
                        if (!last_g) begin
                            g <= g + `ZQ_ROW_CO_GROUPS_W'(1);
                            blk_base <= blk_end;
                            oy <= band_oy0;
                            state <= G_BLK;
                        end else begin
                            g <= '0;
                            blk_base <= w_off;
                            rel_rows_q <= rel_next;
                            band_row0 <= row0_next[10:0];
                            band_oy0 <= band_oy0 + c_band_rows;
                            oy <= band_oy0 + c_band_rows;
                            need_r <= need_next;
                            if (!last_band) begin
                                band <= band + 11'd1;
                                state <= G_BAND;
                            end else begin
                                if (c_res) rel_w_q <= blk_end;   // the layer's last block ends the layer
                                state <= G_END;
                            end
                        end
                    end else if (last_tap) begin
                        ky <= '0; kx <= '0; c <= '0;
                        if (last_ox) begin
                            ox <= '0;
                            r <= r + 11'd1;
                            oy <= oy + 11'd1;
                        end else begin
                            ox <= ox + 11'd1;
                        end
                    end else if (last_c) begin
                        c <= '0;
                        if (last_kx) begin
                            kx <= '0;
                            ky <= ky + 2'd1;
                        end else begin
                            kx <= kx + 2'd1;
                        end
                    end else begin
                        c <= c + `ZQ_ROW_CI_CHUNKS_W'(1);
                    end
                end
                G_END: begin
                    running <= 1'b0;
                    state <= G_IDLE;
                end
                default: state <= G_IDLE;
            endcase
        end
    end

    // ---- releases: REL_DELAY cycles after the loop passes them, so that the last steps reading
    // a row or a weight word (up to S0 + the RAM reads, a few cycles behind the counters) are done
    // with it whatever the DMA's latency; cleared at a layer start (rows) and a frame start
    logic [10:0] rel_rows_d [1:REL_DELAY];
    logic [`ZQ_ROW_W_OFF_W-1:0] rel_w_d [1:REL_DELAY];
    always_ff @(posedge clk) begin
        if (rst || abort || frame_start) begin
            for (int i = 1; i <= REL_DELAY; i++) begin
                rel_rows_d[i] <= '0;
                rel_w_d[i]    <= '0;
            end
        end else begin
            rel_rows_d[1] <= (state == G_IDLE && start) ? '0 : rel_rows_q;
            rel_w_d[1]    <= rel_w_q;
            for (int i = 2; i <= REL_DELAY; i++) begin
                rel_rows_d[i] <= (state == G_IDLE && start) ? '0 : rel_rows_d[i-1];
                rel_w_d[i]    <= rel_w_d[i-1];
            end
        end
    end
    assign rows_release = rel_rows_d[REL_DELAY];
    assign w_release    = rel_w_d[REL_DELAY];

    // ---- address pipeline --------------------------------------------------------
    // L1: taps and bounds
    logic        l1_v, l1_b, l1_first, l1_last, l1_blast, l1_inb;
    logic [11:0] l1_iy;
    logic [10:0] l1_ix;
    logic [`ZQ_ROW_CI_CHUNKS_W-1:0] l1_c;
    logic [`ZQ_ROW_CO_GROUPS_W-1:0] l1_g;
    logic [19:0] l1_pix;
    logic [WR_W-1:0] l1_w;
    logic [NV_W-1:0] l1_nv;
    wire signed [12:0] iy_s = $signed({1'b0, ({1'b0, oy} << c_s2)}) + $signed({11'd0, ky}) - $signed({12'd0, c_k3});
    wire signed [12:0] ix_s = $signed({2'b0, (ox << c_s2)}) + $signed({11'd0, kx}) - $signed({12'd0, c_k3});
    wire bias_now = (state == G_BLK) && w_ok;
    wire first_step = (c == '0) && (kx == '0) && (ky == '0);

    always_ff @(posedge clk) begin
        if (rst || abort) begin
            l1_v <= 1'b0;
            l1_b <= 1'b0;
        end else begin
            l1_v <= issue;
            l1_b <= bias_now;
        end
        l1_first <= first_step;
        l1_last  <= last_tap;
        l1_blast <= blk_done;
        l1_inb   <= (iy_s >= 0) && (iy_s < $signed({2'b0, c_in_rows})) &&
                    (ix_s >= 0) && (ix_s < $signed({2'b0, 11'd1 << c_lg_in}));
        l1_iy    <= 12'(iy_s);
        l1_ix    <= 11'(ix_s);
        l1_c     <= c;
        l1_g     <= g;
        l1_pix   <= (20'(oy) << c_lg_out) | 20'(ox);
        l1_nv    <= last_g ? NV_W'(c_last) : NV_W'(N_PE);
        l1_w     <= WR_W'(bias_now ? blk_base : blk_base + `ZQ_ROW_W_OFF_W'(1) + `ZQ_ROW_W_OFF_W'(w_addr));
    end

    // w_addr: the step's offset inside its block, (ky*k + kx)*chunks + c, counted
    always_ff @(posedge clk) begin
        if (rst || abort || state != G_RUN) w_addr <= '0;
        else if (issue) w_addr <= last_tap ? '0 : w_addr + WR_W'(1);
    end

    // L2: the row terms
    logic        l2_v, l2_b, l2_first, l2_last, l2_blast, l2_inb;
    logic [ROW_W-1:0] l2_sum, l2_slot;
    logic [BANK_W-1:0] l2_bank;
    logic [`ZQ_ROW_CO_GROUPS_W-1:0] l2_g;
    logic [19:0] l2_pix;
    logic [WR_W-1:0] l2_w;
    logic [NV_W-1:0] l2_nv;
    wire [ROW_W-1:0] l1_cterm = ROW_W'(l1_c >> LWPG) << (c_lg_rows + c_lg_in);
    wire [11:0]      l1_slot  = l1_iy & ((12'd1 << c_lg_rows) - 12'd1);
    always_ff @(posedge clk) begin
        if (rst || abort) begin
            l2_v <= 1'b0;
            l2_b <= 1'b0;
        end else begin
            l2_v <= l1_v;
            l2_b <= l1_b;
        end
        l2_first <= l1_first; l2_last <= l1_last; l2_blast <= l1_blast; l2_inb <= l1_inb;
        l2_sum   <= c_base + l1_cterm + ROW_W'(l1_ix);
        l2_slot  <= ROW_W'(l1_slot) << c_lg_in;
        l2_bank  <= BANK_W'(l1_c & `ZQ_ROW_CI_CHUNKS_W'(WPG - 1));
        l2_g <= l1_g; l2_pix <= l1_pix; l2_w <= l1_w; l2_nv <= l1_nv;
    end

    // S0: the step
    always_ff @(posedge clk) begin
        if (rst || abort) begin
            s_valid <= 1'b0;
            s_bias  <= 1'b0;
        end else begin
            s_valid <= l2_v;
            s_bias  <= l2_b;
        end
        s_first <= l2_first; s_last <= l2_last; s_blk_last <= l2_blast;
        s_zero  <= !l2_inb;
        s_row   <= l2_sum + l2_slot;
        s_bank  <= l2_bank;
        s_waddr <= l2_w;
        s_g <= l2_g; s_pix <= l2_pix; s_nvalid <= l2_nv;
    end

    // busy until the last step has left the address stages: a step issued after a long wait (for
    // output room, say) is in L1/L2/S0 alone, and zq_core's stages see it only from S1 on
    assign busy = running || l1_v || l1_b || l2_v || l2_b || s_valid || s_bias;

    // a cycle of a running layer without a step, while waiting for rows, weights or room
    always_ff @(posedge clk) begin
        stall_mem <= !rst && ((state == G_BAND && !rows_ok) || (state == G_BLK && !w_ok) ||
                              (state == G_RUN && out_full));
    end

endmodule

`default_nettype wire
