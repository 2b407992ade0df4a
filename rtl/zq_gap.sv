// zq_gap: the global-average-pool sums and the logits.
//
// The final conv writes one row of N_PE 32-bit sums per output-channel group
// (channels row*N_PE .. row*N_PE+N_PE-1; zq_core sums the group's pixels).
// The logit of class c is the rounded shift of its sum,
//   (gap[c] + bias) >>> GAP_SHIFT   (no rounding term when GAP_SHIFT = 0),
// with the bias of the network's rounding GAP_ROUND (spec.engine.GAP_ROUNDINGS): h = 2^(GAP_SHIFT-1)
// ties toward +inf (ZQ_GAP_ROUND_HALF_UP), 0 floor, h - 1 + bit GAP_SHIFT of the sum ties to even,
// h - the sign bit ties away from zero; read through rd_sel / rd_logit with a latency of 2 cycles
// (RAM, then shift). Sums are GAP_BITS wide, logits one m_axis_out beat (zq_spec.svh).
`include "zq_spec.svh"
`default_nettype none

module zq_gap #(
    parameter N_PE      = 16,
    parameter GAP_ROWS  = 1,
    parameter GAP_SHIFT = 4,
    parameter GAP_ROUND = `ZQ_GAP_ROUND_HALF_UP,
    parameter N_CLASSES = 10,
    parameter GR_W      = (GAP_ROWS > 1) ? $clog2(GAP_ROWS) : 1,
    parameter CLS_W     = (N_CLASSES > 1) ? $clog2(N_CLASSES) : 1
) (
    input  wire                 clk,
    input  wire                 wr_en,
    input  wire [GR_W-1:0]      wr_row,
    input  wire [N_PE*`ZQ_GAP_BITS-1:0] wr_data,
    input  wire [CLS_W-1:0]     rd_sel,
    output logic [`ZQ_STREAM_BITS-1:0]  rd_logit
);

    localparam LPE = $clog2(N_PE);
    localparam GB  = `ZQ_GAP_BITS;

    logic [N_PE*GB-1:0] q;
    logic [LPE-1:0]     lane;
    zq_ram_sdp #(.DATA_W(N_PE * GB), .DEPTH(GAP_ROWS), .OUT_REG(0), .ADDR_W(GR_W)) u_ram (
        .clk(clk), .wr_en(wr_en), .wr_addr(wr_row), .wr_data(wr_data),
        .rd_en(1'b1), .rd_addr(GR_W'(32'(rd_sel) >> LPE)), .rd_data(q)
    );
    always_ff @(posedge clk) lane <= LPE'(rd_sel);

    localparam K = (GAP_SHIFT > 0) ? GAP_SHIFT : 1;
    logic signed [GB:0] s, bias;
    always_comb begin
        s = (GB+1)'($signed(q[lane*GB +: GB]));
        bias = $signed((GB+1)'(1)) <<< (K - 1);
        if (GAP_ROUND == `ZQ_GAP_ROUND_FLOOR)     bias = '0;
        if (GAP_ROUND == `ZQ_GAP_ROUND_HALF_EVEN) bias = bias - (GB+1)'(1) + (GB+1)'(s[K]);
        if (GAP_ROUND == `ZQ_GAP_ROUND_HALF_AWAY) bias = bias - (GB+1)'(s[GB]);
        if (GAP_SHIFT > 0) s = (s + bias) >>> GAP_SHIFT;
    end
    always_ff @(posedge clk) rd_logit <= `ZQ_STREAM_BITS'(s);

endmodule

`default_nettype wire
