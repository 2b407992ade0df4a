// zq_mac_array: the N_PE x N_CI multiply-accumulate array, two 8-bit MACs per
// DSP48E1 (the INT8 packing of Xilinx WP486, adapted to the 25x18 multiplier).
//
// Output channels pe and pe + N_PE/2 share one DSP per input lane ci: the
// pre-adder forms AD = (w_hi << 17) + w_lo (25 bits, wrapping) from the two
// signed 8-bit weights, B is the lane's activation (9-bit signed: an unsigned
// or signed 8-bit lane), and P = AD * B = w_hi*x * 2^17 + w_lo*x. Every
// product of an 8-bit weight and a 9-bit activation lies in [-2^16, 2^16), so
//   lo = P[16:0] (signed)              and   hi = (P >>> 17) + P[16]
// recover both products exactly. AD cannot hold w_hi*2^17 + w_lo when
// w_hi = -128 and w_lo < 0 (it wraps by 2^25); then P carries 2^25*x more and
// the split gives 128*x instead of w_hi*x = -128*x, so hi is negated (the
// `wrap` flag travels beside the DSP). No guard bits remain, so products are
// split every cycle and summed in fabric adder trees. The DSP's post-adder adds 2^16 (its C
// input, a constant), so that hi is P's top bits alone (the carry of bit 16 comes for free) and
// lo is P's low 17 bits with bit 16 inverted; a lane holds an unsigned or signed 8-bit value, so
// both products lie in [-32640, 16384] and 16 bits of each suffice: lo = P[15:0], hi = P[32:17].
// The split costs the fabric no adder but the negation of the wrap, which the adder tree
// completes (a complemented product, and a count).
//
// Mixed lanes: the first DSP_PAIRS lane pairs (pair index j * N_CI + ci) are DSP48E1 pairs as
// above; each of the others is two exact LUT multipliers (zq_lut_mul, w_lo * x and w_hi * x),
// pipelined to the same latency (their product at t+4, as P), so the products, the adder trees
// and the accumulators are the same for both kinds. DSP_PAIRS defaults to every pair; the
// exporter sets it to the DSP48E1 the part has left (spec: EngineParams.dsp_pairs).
//
// Pipeline (cycle after the inputs at t): t+1 DSP input registers (A, D, B1),
// t+2 pre-adder (AD) and B2, t+3 M, t+4 P, t+5 split, t+6 partial sums of 4
// lanes, t+7 PE sums, t+8 accumulators. A step with `in_first` starts a pixel
// from the bias; the bias words arrive as `in_bias` steps (their `wgt` holds
// N_PE int32 in the low bits) in order with the MAC steps and are applied at
// the accumulator stage, so any number of blocks may be in flight.
`include "zq_spec.svh"
`default_nettype none

module zq_mac_array #(
    parameter N_PE  = 16,
    parameter N_CI  = 8,
    parameter DSP_PAIRS = N_PE / 2 * N_CI,        // lane pairs on DSP48E1; the rest in LUTs
    parameter ACC_W = `ZQ_ACC_BITS
) (
    input  wire                    clk,
    input  wire                    rst,
    input  wire                    in_valid,     // a MAC step
    input  wire                    in_first,     // first step of a pixel: start from the bias
    input  wire                    in_bias,      // a bias step (no MAC): wgt[N_PE*32-1:0] are the biases
    input  wire                    act_signed,   // lanes are signed (held for the whole layer)
    input  wire [N_CI*`ZQ_LANE_BITS-1:0]        act,
    input  wire [N_PE*N_CI*`ZQ_W_BITS_MAX-1:0] wgt,
    output logic                   out_valid,    // accumulators updated by a MAC step (t+8)
    output logic [N_PE*ACC_W-1:0]  out_acc
);

    localparam HALF   = N_PE / 2;
    localparam GROUPS = (N_CI + 3) / 4;           // partial sums of 4 lanes
    // A product of an 8-bit weight and a lane (signed [-128, 127] or unsigned [0, 255]) lies in
    // [-32640, 16384], and so do hi before the wrap's negation (128 x, less a borrow) and the
    // complements the adder tree takes: 16 bits. Sums of 4 and of N_CI of them: 2 and clog2(N_CI)
    // bits more (the PE sum's real value fits; its partial terms wrap harmlessly).
    localparam PROD_W = 16;
    localparam PART_W = PROD_W + 2;
    localparam SUM_W  = PROD_W + ((N_CI > 1) ? $clog2(N_CI) : 1);

    // parameter checks, at elaboration
    if (N_PE % 2 != 0) begin : g_param_check0
        $error("zq_mac_array: N_PE=%0d must be even (two channels per DSP)", N_PE);
    end
    if (N_CI < 1) begin : g_param_check1
        $error("zq_mac_array: N_CI=%0d", N_CI);
    end
    if (DSP_PAIRS < 0 || DSP_PAIRS > HALF * N_CI) begin : g_param_check2
        $error("zq_mac_array: DSP_PAIRS=%0d of %0d lane pairs", DSP_PAIRS, HALF * N_CI);
    end
    // the control pipeline below (v, f, bs: 8 stages) and the bias registers bq1..bq7 are written
    // for the spec's MAC depth; export/resources.py counts those registers from it
    if (`ZQ_RTL_PIPE_MAC != 8) begin : g_param_check3
        $error("zq_mac_array: written for 8 pipeline stages, the spec has ZQ_RTL_PIPE_MAC=%0d", `ZQ_RTL_PIPE_MAC);
    end

    // ---- control pipeline ------------------------------------------------------
    logic [8:1] v, f, bs;
    always_ff @(posedge clk) begin
        if (rst) begin
            v  <= '0;
            bs <= '0;
        end else begin
            v  <= {v[7:1], in_valid};
            bs <= {bs[7:1], in_bias};
        end
        f <= {f[7:1], in_first};
    end

    // bias words, carried in order beside the pipeline until their step reaches the accumulators:
    // stage k holds the bias word of the in_bias step k cycles back and moves only with its token
    // (bs), so any spacing of bias steps keeps its order. Flip-flops with per-stage enables: no LUT
    // RAM, and no shift register that synthesis would pack into SRLs (one LUT per bit).
    localparam BW = N_PE * 32;
    // (seven named registers rather than one vector or an array: each is a variable of its own to a
    // simulator, and never a memory to synthesis)
    logic [BW-1:0] bq1, bq2, bq3, bq4, bq5, bq6, bq7, bias;
    always_ff @(posedge clk) begin
        if (in_bias) bq1 <= wgt[BW-1:0];
        if (bs[1]) bq2 <= bq1;
        if (bs[2]) bq3 <= bq2;
        if (bs[3]) bq4 <= bq3;
        if (bs[4]) bq5 <= bq4;
        if (bs[5]) bq6 <= bq5;
        if (bs[6]) bq7 <= bq6;
        if (bs[7]) bias <= bq7;
    end

    // ---- DSP pairs and the split; LUT pairs ---------------------------------------------
    logic signed [PROD_W-1:0] prod [0:N_PE-1][0:N_CI-1] /* verilator split_var */;   // t+5
    logic                     neg  [0:N_PE-1][0:N_CI-1] /* verilator split_var */;   // t+5: the product is -(prod + ... ): ~prod + 1

    genvar j, c, g;
    generate
        for (j = 0; j < HALF; j = j + 1) begin : g_pair
            for (c = 0; c < N_CI; c = c + 1) begin : g_lane
                wire signed [7:0] w_lo = wgt[(j * N_CI + c) * 8 +: 8];
                wire signed [7:0] w_hi = wgt[((j + HALF) * N_CI + c) * 8 +: 8];
                wire signed [8:0] x    = {act_signed & act[c * 8 + 7], act[c * 8 +: 8]};
                if (j * N_CI + c < DSP_PAIRS) begin : g_dsp
                    logic signed [24:0] d_r, a_r, ad;
                    logic signed [8:0]  b1, b2;
                    logic signed [33:0] m, p;
                    logic [4:1]         wrap;
                    always_ff @(posedge clk) begin
                        d_r <= {w_hi, 17'd0};
                        a_r <= 25'(w_lo);
                        b1  <= x;
                        ad  <= d_r + a_r;       // 25 bits: wraps when w_hi = -128 and w_lo < 0
                        b2  <= b1;
                        m   <= ad * b2;
                        p   <= m + 34'sd65536;      // the post-adder: + 2^16 (C), so P>>>17 rounds
                        wrap <= {wrap[3:1], (w_hi == -8'sd128) && w_lo[7]};
                    end
                    // t+5: split P = AD*B + 2^16 into the two products: hi = P>>>17 (= (AD*B >>> 17) +
                    // bit 16 of AD*B, the borrow of a negative lo), lo = AD*B[16:0] = P[16:0] - 2^16,
                    // which is P[15:0] in 16 bits; the wrap's negation of hi is left to the adder tree
                    // (~hi there, +1 in the PE's count)
                    always_ff @(posedge clk) begin
                        prod[j][c]        <= $signed(p[15:0]);
                        prod[j + HALF][c] <= $signed(p[17+PROD_W-1:17]);
                        neg[j + HALF][c]  <= wrap[4];
                    end
                    assign neg[j][c] = 1'b0;   // the low product is never negated
                end else begin : g_lut
                    logic signed [16:0] p_lo, p_hi;   // t+4
                    zq_lut_mul u_lo (.clk(clk), .w(w_lo), .x(x), .p(p_lo));
                    zq_lut_mul u_hi (.clk(clk), .w(w_hi), .x(x), .p(p_hi));
                    always_ff @(posedge clk) begin    // t+5
                        prod[j][c]        <= PROD_W'(p_lo);
                        prod[j + HALF][c] <= PROD_W'(p_hi);
                    end
                    assign neg[j][c]        = 1'b0;   // exact products: never negated
                    assign neg[j + HALF][c] = 1'b0;
                end
            end
        end
    endgenerate

    // ---- adder trees: 4 lanes per partial sum (t+6), then the PE sum (t+7) -------
    // A negated product enters its partial sum complemented (the XOR sits in the adder's LUTs) and
    // the PE's count of them (t+6) completes the negations in the PE sum (t+7).
    localparam CNT_W = $clog2(N_CI + 1);
    logic signed [PART_W-1:0] part [0:N_PE-1][0:GROUPS-1];
    logic signed [SUM_W-1:0] sum  [0:N_PE-1];
    logic [CNT_W-1:0]        cnt  [0:N_PE-1];
    // (every product and flag read at a constant index: a simulator may keep each in a variable
    // of its own, split_var, instead of updating the arrays through shadow copies every cycle)
    function automatic signed [PART_W-1:0] term(input signed [PROD_W-1:0] pr, input ng);
        term = PART_W'(pr) ^ {PART_W{ng}};
    endfunction
    generate
        for (j = 0; j < N_PE; j = j + 1) begin : g_tree
            for (g = 0; g < GROUPS; g = g + 1) begin : g_part
                localparam int I0 = 4 * g;
                localparam int I1 = (4 * g + 1 < N_CI) ? 4 * g + 1 : I0;
                localparam int I2 = (4 * g + 2 < N_CI) ? 4 * g + 2 : I0;
                localparam int I3 = (4 * g + 3 < N_CI) ? 4 * g + 3 : I0;
                always_ff @(posedge clk)
                    part[j][g] <= term(prod[j][I0], neg[j][I0])
                                  + ((I1 != I0) ? term(prod[j][I1], neg[j][I1]) : PART_W'(0))
                                  + ((I2 != I0) ? term(prod[j][I2], neg[j][I2]) : PART_W'(0))
                                  + ((I3 != I0) ? term(prod[j][I3], neg[j][I3]) : PART_W'(0));
            end
            wire [N_CI-1:0] negs;
            for (c = 0; c < N_CI; c = c + 1) begin : g_neg
                assign negs[c] = neg[j][c];
            end
            always_ff @(posedge clk) begin
                logic [CNT_W-1:0] n;
                n = '0;
                for (int i = 0; i < N_CI; i++) n = n + CNT_W'(negs[i]);
                cnt[j] <= n;
            end
            always_ff @(posedge clk) begin
                logic signed [SUM_W-1:0] s;
                s = SUM_W'(cnt[j]);
                for (int i = 0; i < GROUPS; i++) s = s + SUM_W'(part[j][i]);
                sum[j] <= s;
            end
            // t+8: accumulate
            always_ff @(posedge clk) begin
                if (v[7] && !bs[7])
                    out_acc[j*ACC_W +: ACC_W] <= (f[7] ? $signed(bias[j*32 +: 32]) : $signed(out_acc[j*ACC_W +: ACC_W]))
                                                 + ACC_W'(sum[j]);
            end
        end
    endgenerate

    always_ff @(posedge clk) begin
        if (rst) out_valid <= 1'b0;
        else     out_valid <= v[7] && !bs[7];
    end

endmodule

`default_nettype wire
