// zq_gap: the global-average-pool sums and the logits.
//
// The final conv writes one row of N_PE 32-bit sums per output-channel group
// (channels row*N_PE .. row*N_PE+N_PE-1; zq_core sums the group's pixels).
// The logit of class c is the rounded shift of its sum,
//   (gap[c] + 2^(GAP_SHIFT-1)) >>> GAP_SHIFT   (no rounding term when GAP_SHIFT = 0),
// read through rd_sel / rd_logit with a latency of 2 cycles (RAM, then shift).
`default_nettype none

module zq_gap #(
    parameter N_PE      = 16,
    parameter GAP_ROWS  = 1,
    parameter GAP_SHIFT = 4,
    parameter N_CLASSES = 10,
    parameter GR_W      = (GAP_ROWS > 1) ? $clog2(GAP_ROWS) : 1,
    parameter CLS_W     = (N_CLASSES > 1) ? $clog2(N_CLASSES) : 1
) (
    input  wire                 clk,
    input  wire                 wr_en,
    input  wire [GR_W-1:0]      wr_row,
    input  wire [N_PE*32-1:0]   wr_data,
    input  wire [CLS_W-1:0]     rd_sel,
    output logic [31:0]         rd_logit
);

    localparam LPE = $clog2(N_PE);

    logic [N_PE*32-1:0] q;
    logic [LPE-1:0]     lane;
    zq_ram_sdp #(.DATA_W(N_PE * 32), .DEPTH(GAP_ROWS), .OUT_REG(0), .ADDR_W(GR_W)) u_ram (
        .clk(clk), .wr_en(wr_en), .wr_addr(wr_row), .wr_data(wr_data),
        .rd_en(1'b1), .rd_addr(GR_W'(32'(rd_sel) >> LPE)), .rd_data(q)
    );
    always_ff @(posedge clk) lane <= LPE'(rd_sel);

    logic signed [32:0] s;
    always_comb begin
        s = 33'($signed(q[lane*32 +: 32]));
        if (GAP_SHIFT > 0) s = (s + (33'sd1 <<< (GAP_SHIFT > 0 ? GAP_SHIFT - 1 : 0))) >>> GAP_SHIFT;
    end
    always_ff @(posedge clk) rd_logit <= 32'(s);

endmodule

`default_nettype wire
