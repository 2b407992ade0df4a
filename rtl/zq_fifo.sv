// zq_fifo: synchronous FIFO, first-word fall-through (out_data is valid while
// out_valid), with a registered occupancy count. Storage in LUT RAM or block
// RAM (DEPTH a power of two). `count` is the number of words held.
`default_nettype none

module zq_fifo #(
    parameter DATA_W = 32,
    parameter DEPTH  = 16,
    parameter CNT_W  = $clog2(DEPTH + 1)
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              in_valid,
    output logic             in_ready,
    input  wire [DATA_W-1:0] in_data,
    output logic             out_valid,
    input  wire              out_ready,
    output logic [DATA_W-1:0] out_data,
    output logic [CNT_W-1:0] count
);

    localparam AW = $clog2(DEPTH);

    // parameter checks, at elaboration
    if ((DEPTH & (DEPTH - 1)) != 0 || DEPTH < 2) begin : g_param_check0
        $error("zq_fifo: DEPTH=%0d must be a power of two >= 2", DEPTH);
    end

    logic [DATA_W-1:0] mem [0:DEPTH-1];
    logic [AW:0]       wp, rp;

    wire push = in_valid && in_ready;
    wire pop  = out_valid && out_ready;

    assign in_ready  = (wp - rp) != (AW+1)'(DEPTH);
    assign out_valid = wp != rp;
    assign out_data  = mem[rp[AW-1:0]];
    assign count     = CNT_W'(wp - rp);

    always_ff @(posedge clk) begin
        if (push) mem[wp[AW-1:0]] <= in_data;
        if (rst) begin
            wp <= '0;
            rp <= '0;
        end else begin
            if (push) wp <= wp + 1'b1;
            if (pop)  rp <= rp + 1'b1;
        end
    end

endmodule

`default_nettype wire
