// zq_mac_array: the N_PE x N_CI multiply-accumulate array.
//
// One step per cycle: every PE multiplies its N_CI weights with the same N_CI
// activations, sums the products and adds the sum to its 32-bit accumulator
// (or to its bias on the first step of an output pixel). Three register
// stages: products (P4), per-PE sums (P5), accumulators (P6).
//
//   cycle t   : in_* (activations, weights, flags)
//   cycle t+1 : products registered
//   cycle t+2 : sums registered; bias must be valid on `bias` in this cycle
//   cycle t+3 : acc registered; out_valid = 1 when the step was a pixel's last
//
// Activations are A_BITS wide, unsigned or (act_signed) two's complement;
// weights are signed W_BITS. Lane (pe, ci) of `wgt` is at bit (pe*N_CI+ci)*W_BITS.
`default_nettype none

module zq_mac_array #(
    parameter N_PE   = 16,
    parameter N_CI   = 8,
    parameter W_BITS = 8,
    parameter A_BITS = 8,
    parameter ACC_W  = 32
) (
    input  wire                        clk,
    input  wire                        rst,

    input  wire                        in_valid,
    input  wire                        in_first,
    input  wire                        in_last,
    input  wire                        act_signed,
    input  wire [N_CI*A_BITS-1:0]      act,
    input  wire [N_PE*N_CI*W_BITS-1:0] wgt,

    input  wire [N_PE*ACC_W-1:0]       bias,     // used in cycle t+2

    output logic                       out_valid,
    output logic [N_PE*ACC_W-1:0]      out_acc
);

    localparam PROD_W = W_BITS + A_BITS + 1;
    localparam SUM_W  = PROD_W + $clog2(N_CI) + 1;

    logic v1, f1, l1, v2, f2, l2;
    logic signed [PROD_W-1:0] prod [0:N_PE*N_CI-1];
    logic signed [SUM_W-1:0]  sum  [0:N_PE-1];
    logic signed [ACC_W-1:0]  acc  [0:N_PE-1];

    // stage 1: products
    genvar p, c;
    generate
        for (p = 0; p < N_PE; p = p + 1) begin : g_pe
            for (c = 0; c < N_CI; c = c + 1) begin : g_ci
                wire signed [W_BITS-1:0] w = wgt[(p*N_CI + c)*W_BITS +: W_BITS];
                wire signed [A_BITS:0]   a = {act_signed & act[c*A_BITS + A_BITS-1], act[c*A_BITS +: A_BITS]};
                always_ff @(posedge clk) prod[p*N_CI + c] <= w * a;
            end

            // stage 2: adder tree (one registered sum per PE)
            logic signed [SUM_W-1:0] s;
            integer i;
            always_comb begin
                s = '0;
                for (i = 0; i < N_CI; i = i + 1) s = s + SUM_W'(prod[p*N_CI + i]);
            end
            always_ff @(posedge clk) sum[p] <= s;

            // stage 3: accumulate
            always_ff @(posedge clk) begin
                if (v2) acc[p] <= (f2 ? $signed(bias[p*ACC_W +: ACC_W]) : acc[p]) + ACC_W'(sum[p]);
            end
            assign out_acc[p*ACC_W +: ACC_W] = acc[p];
        end
    endgenerate

    always_ff @(posedge clk) begin
        if (rst) begin
            v1 <= 1'b0; v2 <= 1'b0; out_valid <= 1'b0;
        end else begin
            v1 <= in_valid; v2 <= v1; out_valid <= v2 && l2;
        end
        f1 <= in_first; l1 <= in_last;
        f2 <= f1;       l2 <= l1;
    end

endmodule

`default_nettype wire
