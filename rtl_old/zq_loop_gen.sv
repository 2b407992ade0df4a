// zq_loop_gen: the loop nest of one layer, one MAC-array step per cycle.
//
//   for g in co_groups: for oy, ox in out_size^2: for ky, kx in k*k: for c in ci_chunks
//
// All addresses are kept incrementally (adders only, no multipliers):
//   input word  = (iy*in_size + ix)*ci_chunks + c,  iy = oy*stride + ky - k/2,
//                 ix = ox*stride + kx - k/2 (flagged out of bounds -> zero)
//   weight word = w_base + (g*k*k + ky*k + kx)*ci_chunks + c
//   bias word   = b_base + g
//   output word = (oy*out_size + ox)*dst_words + dst_word_off + g*N_PE/N_CI
//   GAP channel = dst_word_off + g*N_PE   (is_last layers)
// in_size must be a power of two (design rule), stride 1 or 2, k 1 or 3.
//
// `start` latches the layer fields; steps are issued from the next cycle on,
// one per cycle, as registered outputs (step_*). `busy` falls with the last.
`default_nettype none

module zq_loop_gen #(
    parameter N_PE    = 16,
    parameter N_CI    = 8,
    parameter ADDR_W  = 12,   // activation word address width
    parameter WADDR_W = 11,   // weight ROM address width
    parameter BADDR_W = 6,    // bias ROM address width
    parameter NCH_W   = $clog2(N_PE + 1)
) (
    input  wire               clk,
    input  wire               rst,
    input  wire               start,
    input  wire [15:0]        in_size,
    input  wire [15:0]        out_size,
    input  wire [15:0]        k,
    input  wire [15:0]        stride,
    input  wire [15:0]        ci_chunks,
    input  wire [15:0]        co_groups,
    input  wire [15:0]        cout,
    input  wire [15:0]        dst_word_off,
    input  wire [15:0]        dst_words,
    input  wire [15:0]        w_base,
    input  wire [15:0]        b_base,

    output logic              busy,
    output logic              step_valid,
    output logic              step_first,   // first step of an output pixel
    output logic              step_last,    // last step of an output pixel
    output logic              step_inb,     // input tap inside the map
    output logic [ADDR_W-1:0] step_addr,
    output logic [WADDR_W-1:0] step_waddr,
    output logic [BADDR_W-1:0] step_baddr,
    output logic [ADDR_W-1:0] step_oaddr,   // destination word of PE 0 (with step_last)
    output logic [NCH_W-1:0]  step_nch,     // channels present in this group
    output logic [15:0]       step_gbase    // GAP channel of PE 0
);

    localparam NB = N_PE / N_CI;

    function automatic [4:0] lg2(input [15:0] x);
        integer i;
        lg2 = 5'd0;
        for (i = 0; i < 16; i = i + 1) if (x[i]) lg2 = 5'(i);
    endfunction

    // layer constants
    logic [15:0] l_in, l_out, l_k, l_cc, l_groups, l_dst_words, l_dst_off;
    logic        l_s2;                    // stride 2
    logic [15:0] l_pad;                   // k/2
    logic [ADDR_W-1:0] row_words;         // in_size * ci_chunks
    // loop counters
    logic [15:0] c, kx, ky, ox, oy, g;
    logic signed [16:0] ix0, iy0;         // ox*s - pad, oy*s - pad
    // incremental addresses
    logic [ADDR_W-1:0]  a_row0, a_col0, a_trow, a_tcol;
    logic [WADDR_W-1:0] w_addr, w_grp;
    logic [BADDR_W-1:0] b_addr;
    logic [ADDR_W-1:0]  o_pix, o_grp;
    logic [15:0]        g_ch;
    logic signed [16:0] rem;

    wire last_c  = (c  == l_cc - 16'd1);
    wire last_kx = (kx == l_k - 16'd1);
    wire last_ky = (ky == l_k - 16'd1);
    wire last_ox = (ox == l_out - 16'd1);
    wire last_oy = (oy == l_out - 16'd1);
    wire last_g  = (g  == l_groups - 16'd1);
    wire last_tap = last_c && last_kx && last_ky;

    wire signed [16:0] ix = ix0 + $signed({1'b0, kx});
    wire signed [16:0] iy = iy0 + $signed({1'b0, ky});
    wire inb = (ix >= 0) && (ix < $signed({1'b0, l_in})) && (iy >= 0) && (iy < $signed({1'b0, l_in}));

    wire [ADDR_W-1:0] s_row_words = ADDR_W'(ci_chunks) << lg2(in_size);
    wire [15:0]       s_pad       = k >> 1;

    always_ff @(posedge clk) begin
        step_valid <= 1'b0;
        if (rst) begin
            busy <= 1'b0;
        end else if (start) begin
            busy        <= 1'b1;
            l_in        <= in_size;
            l_out       <= out_size;
            l_k         <= k;
            l_cc        <= ci_chunks;
            l_groups    <= co_groups;
            l_dst_words <= dst_words;
            l_dst_off   <= dst_word_off;
            l_s2        <= (stride == 16'd2);
            l_pad       <= s_pad;
            row_words   <= s_row_words;
            c <= '0; kx <= '0; ky <= '0; ox <= '0; oy <= '0; g <= '0;
            ix0    <= -$signed({1'b0, s_pad});
            iy0    <= -$signed({1'b0, s_pad});
            a_row0 <= (s_pad != 0) ? -s_row_words : '0;
            a_col0 <= (s_pad != 0) ? -(ADDR_W'(ci_chunks)) : '0;
            a_trow <= '0;
            a_tcol <= '0;
            w_addr <= WADDR_W'(w_base);
            w_grp  <= WADDR_W'(w_base);
            b_addr <= BADDR_W'(b_base);
            o_pix  <= ADDR_W'(dst_word_off);
            o_grp  <= ADDR_W'(dst_word_off);
            g_ch   <= '0;
            rem    <= $signed({1'b0, cout});
        end else if (busy) begin
            // ---- issue the current step
            step_valid <= 1'b1;
            step_first <= (c == 0) && (kx == 0) && (ky == 0);
            step_last  <= last_tap;
            step_inb   <= inb;
            step_addr  <= a_row0 + a_col0 + a_trow + a_tcol + ADDR_W'(c);
            step_waddr <= w_addr;
            step_baddr <= b_addr;
            step_oaddr <= o_pix;
            step_nch   <= (rem > N_PE) ? NCH_W'(N_PE) : NCH_W'(rem);
            step_gbase <= l_dst_off + g_ch;

            // ---- advance: c, kx, ky, ox, oy, g
            w_addr <= w_addr + 1'b1;
            if (!last_c) begin
                c <= c + 16'd1;
            end else begin
                c <= '0;
                if (!last_kx) begin
                    kx <= kx + 16'd1;
                    a_tcol <= a_tcol + ADDR_W'(l_cc);
                end else begin
                    kx <= '0;
                    a_tcol <= '0;
                    if (!last_ky) begin
                        ky <= ky + 16'd1;
                        a_trow <= a_trow + row_words;
                    end else begin
                        // output pixel done
                        ky <= '0;
                        a_trow <= '0;
                        w_addr <= w_grp;
                        o_pix  <= o_pix + ADDR_W'(l_dst_words);
                        if (!last_ox) begin
                            ox <= ox + 16'd1;
                            ix0 <= ix0 + (l_s2 ? 17'sd2 : 17'sd1);
                            a_col0 <= a_col0 + (l_s2 ? ADDR_W'(l_cc) << 1 : ADDR_W'(l_cc));
                        end else begin
                            ox <= '0;
                            ix0 <= -$signed({1'b0, l_pad});
                            a_col0 <= (l_pad != 0) ? -(ADDR_W'(l_cc)) : '0;
                            if (!last_oy) begin
                                oy <= oy + 16'd1;
                                iy0 <= iy0 + (l_s2 ? 17'sd2 : 17'sd1);
                                a_row0 <= a_row0 + (l_s2 ? row_words << 1 : row_words);
                            end else begin
                                oy <= '0;
                                iy0 <= -$signed({1'b0, l_pad});
                                a_row0 <= (l_pad != 0) ? -row_words : '0;
                                // channel group done
                                w_addr <= w_addr + 1'b1;
                                w_grp  <= w_addr + 1'b1;
                                b_addr <= b_addr + 1'b1;
                                o_grp  <= o_grp + ADDR_W'(NB);
                                o_pix  <= o_grp + ADDR_W'(NB);
                                g_ch   <= g_ch + 16'(N_PE);
                                rem    <= rem - 17'(N_PE);
                                if (!last_g) g <= g + 16'd1;
                                else         busy <= 1'b0;
                            end
                        end
                    end
                end
            end
        end
    end

endmodule

`default_nettype wire
