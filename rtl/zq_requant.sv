// zq_requant: the requantizer of docs/fixed-point.md for all N_PE channels,
// five register stages (the spec's RTL_PIPE_REQUANT).
//
//   t+1  v = acc + rnd                  (rnd = 2^(s-1) for s > 0, else 0; precomputed per layer)
//   t+2  v = s > 0 ? v >>> (s & 24) : v << ((-s) & 24)       first half of the shift
//   t+3  v = s > 0 ? v >>> (s & 7)  : v << ((-s) & 7)        second half
//   t+4  r = relu ? max(v, 0) : v, and the compares r < lo, r > hi
//   t+5  y = r < lo ? lo : r > hi ? hi : r                   (the clamp's mux alone)
//
// Exact for every layer the exporter accepts (-31 <= s <= 31, |acc << -s| < 2^31 proven
// at export); intermediates are ACC_W + 2 bits. Each stage loads only when the value it takes is
// a pixel's result (in_valid, delayed with it): y holds the last result in between (the core reads
// it only then), no register toggles for the accumulators' partial sums, and a simulator skips the
// stages' logic in those cycles.
`include "zq_spec.svh"
`default_nettype none

module zq_requant #(
    parameter N_PE  = 16,
    parameter ACC_W = `ZQ_ACC_BITS,
    parameter OUT_W = 18
) (
    input  wire                       clk,
    input  wire                       in_valid,   // acc is a result to requantize (y 5 cycles later)
    input  wire [N_PE*ACC_W-1:0]      acc,
    // layer constants (stable while the layer runs)
    input  wire signed [ACC_W-1:0]    rnd,
    input  wire                       shr,        // s > 0
    input  wire [$clog2(ACC_W)-1:0]   sh,         // |s|
    input  wire                       relu,
    input  wire signed [OUT_W-1:0]    lo,
    input  wire signed [OUT_W-1:0]    hi,
    output logic [N_PE*OUT_W-1:0]     y
);

    localparam V_W = ACC_W + 2;

    // the stages' load enables: en[k] loads stage k + 1
    logic [4:1] en;
    always_ff @(posedge clk) en <= {en[3:1], in_valid};

    genvar p;
    generate
        for (p = 0; p < N_PE; p = p + 1) begin : g_pe
            logic signed [V_W-1:0] v1, v2, v3;
            logic                  below, above;
            logic [OUT_W-1:0]      r4;
            always_ff @(posedge clk) begin
                if (in_valid) v1 <= V_W'($signed(acc[p*ACC_W +: ACC_W])) + V_W'(rnd);
                if (en[1]) v2 <= shr ? (v1 >>> {sh[4:3], 3'b0}) : (v1 <<< {sh[4:3], 3'b0});
                if (en[2]) v3 <= shr ? (v2 >>> sh[2:0]) : (v2 <<< sh[2:0]);
                // t+4: ReLU and the clamp's compares; r keeps OUT_W bits (when neither compare
                // holds, lo <= r <= hi and r fits)
                if (en[3]) begin
                    logic signed [V_W-1:0] r;
                    r = (relu && v3 < 0) ? '0 : v3;
                    below <= r < V_W'(lo);
                    above <= r > V_W'(hi);
                    r4    <= OUT_W'(r);
                end
                if (en[4]) y[p*OUT_W +: OUT_W] <= below ? lo : above ? hi : r4;
            end
        end
    endgenerate

endmodule

`default_nettype wire
