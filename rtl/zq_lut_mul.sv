// zq_lut_mul: an exact signed 8 x 9-bit multiplier in LUTs and carry chains, for the MAC
// lanes that do not fit the part's DSP48E1 (zq_mac_array's LUT lane pairs).
//
// p = w * x for every signed 8-bit weight w and 9-bit activation x (an unsigned or signed
// 8-bit lane widened by its sign flag): |p| <= 2^15, so 17 bits hold it.
//
// Radix-4 Booth recoding of w: w = d0 + 4 d1 + 16 d2 + 64 d3 with
// d_i = -2 w[2i+1] + w[2i] + w[2i-1] (w[-1] = 0) in {-2..2}. Row 0 (d0 in {0, 1, -1, -2})
// is selected exactly from x and nx = -x, six inputs a bit: one LUT6 per bit. Rows 1..3 are
// added to the running sum one per stage: row i's bits are (|d_i| x) or its complement when
// d_i < 0 (five inputs a bit, so Yosys and Vivado fold each into the adder's LUT next to the
// running sum: one LUT per bit of a carry chain), and the "+1" that completes a complement
// goes into the vacant low bits of the row's operand and the adder's carry-in:
//   4 neg1  = 2 + 1 + cin       (the bits below row 1 at weights 2, 1)
//   16 neg2 = 8 + 4 + 2 + 1 + cin
//   64 neg3 = 32 + ... + 1 + cin
// So no adder has more than two operands and no multiplier is inferred (a `*` would map to
// a DSP48E1). Checked exhaustively (all 2^8 x 2^9 operand pairs) by sim/rtl/tb/tb_zq_lut_mul.py.
//
// Pipeline (LAT = 4 = spec RTL_LUT_MUL_LAT, the DSP pair's t+4 P register): t+1 the operands and nx; t+2 row 0 plus
// row 1 (13 bits); t+3 plus row 2 (15 bits); t+4 plus row 3: the product. Each stage is one
// LUT and one carry chain of at most 17 bits. nx and the delayed copies of x depend on x only:
// synthesis shares them between the lanes of one input channel.
`include "zq_spec.svh"
`default_nettype none

module zq_lut_mul #(
    parameter LAT = `ZQ_RTL_LUT_MUL_LAT      // operands -> product (the four registers below)
) (
    input  wire               clk,
    input  wire signed [7:0]  w,
    input  wire signed [8:0]  x,
    output logic signed [16:0] p
);

    // one Booth row: |d| x (d in {-2..2} from bits b = {b2, b1, b0}) or its complement when d < 0
    function automatic [10:0] booth_row(input [8:0] xv, input [2:0] b);
        booth_row = ((b == 3'b000) || (b == 3'b111)) ? 11'd0 :
                    ((b == 3'b100) || (b == 3'b011)) ? {xv[8], xv, 1'b0} : {{2{xv[8]}}, xv};
        if (b[2] && !(b[1] && b[0])) booth_row = ~booth_row;
    endfunction
    function automatic booth_neg(input [2:0] b);
        booth_neg = b[2] && !(b[1] && b[0]);
    endfunction

    // t+1: operands
    logic [7:0]  w1;
    logic [8:0]  x1;
    logic [9:0]  nx1;
    always_ff @(posedge clk) begin
        w1  <= w;
        x1  <= x;
        nx1 <= 10'd0 - {x[8], x};
    end

    // t+2: row 0 (exact) + row 1
    logic [10:0] row0;
    always_comb begin
        case (w1[1:0])
            2'b00:   row0 = 11'd0;
            2'b01:   row0 = {{2{x1[8]}}, x1};
            2'b10:   row0 = {nx1, 1'b0};
            default: row0 = {nx1[9], nx1};
        endcase
    end
    wire [2:0]   b1 = w1[3:1];
    wire         n1 = booth_neg(b1);
    logic [12:0] s2;
    logic [7:2]  w2;
    logic [8:0]  x2;
    always_ff @(posedge clk) begin
        s2 <= {{2{row0[10]}}, row0} + {booth_row(x1, b1), n1, n1} + {12'd0, n1};
        w2 <= w1[7:2];
        x2 <= x1;
    end

    // t+3: + row 2
    wire [2:0]   b2 = w2[5:3];
    wire         n2 = booth_neg(b2);
    logic [14:0] s3;
    logic [7:5]  w3;
    logic [8:0]  x3;
    always_ff @(posedge clk) begin
        s3 <= {{2{s2[12]}}, s2} + {booth_row(x2, b2), {4{n2}}} + {14'd0, n2};
        w3 <= w2[7:5];
        x3 <= x2;
    end

    // t+4: + row 3
    wire [2:0] b3 = w3[7:5];
    wire       n3 = booth_neg(b3);
    always_ff @(posedge clk) begin
        p <= $signed({{2{s3[14]}}, s3} + {booth_row(x3, b3), {6{n3}}} + {16'd0, n3});
    end

    // parameter checks, at elaboration: the registers above are the spec's latency
    if (LAT != 4) begin : g_param_check0
        $error("zq_lut_mul: a product after 4 cycles, LAT=%0d", LAT);
    end

endmodule

`default_nettype wire
