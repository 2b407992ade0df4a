// zq_requant: one PE's requantizer (docs/fixed-point.md), two register stages.
//
//   s > 0 : v = (acc + 2^(s-1)) >>> s        (round half up)
//   s <= 0: v = acc << -s
//   relu  : v = max(v, 0)
//   y     = clamp(v, out_lo, out_hi)
//
// Exact for every legal layer: the exporter guarantees 0 < s <= 31 or a left
// shift that cannot overflow 32 bits, and an output of at most OUT_W bits. A
// left shift is capped at OUT_W + 1 places, where any non-zero accumulator is
// already beyond the OUT_W-bit range (so the clamp gives the same result).
`default_nettype none

module zq_requant #(
    parameter ACC_W = 32,
    parameter OUT_W = 16
) (
    input  wire                    clk,
    input  wire signed [ACC_W-1:0] acc,     // cycle t
    input  wire signed [15:0]      shift,   // layer constants (stable)
    input  wire                    relu,
    input  wire signed [15:0]      out_lo,
    input  wire signed [15:0]      out_hi,
    output logic signed [OUT_W-1:0] y       // cycle t+2
);

    localparam SHL_MAX = OUT_W + 1;
    localparam V_W     = ACC_W + SHL_MAX + 1;

    logic signed [ACC_W+1:0] rnd;
    logic signed [V_W-1:0]   v_d, v_q;
    logic [4:0]              sr;
    logic [5:0]              sl;

    always_comb begin
        sr  = shift[4:0];
        sl  = (-shift > 16'(SHL_MAX)) ? 6'(SHL_MAX) : 6'(-shift);
        rnd = (ACC_W+2)'(acc) + ((ACC_W+2)'(1) <<< (sr - 5'd1));
        if (shift > 0)
            v_d = V_W'(rnd >>> sr);
        else
            v_d = V_W'(acc) <<< sl;
    end

    always_ff @(posedge clk) v_q <= v_d;

    logic signed [V_W-1:0] r;
    always_comb begin
        r = (relu && v_q < 0) ? '0 : v_q;
        if (r < V_W'(out_lo))      r = V_W'(out_lo);
        else if (r > V_W'(out_hi)) r = V_W'(out_hi);
    end

    always_ff @(posedge clk) y <= OUT_W'(r);

endmodule

`default_nettype wire
