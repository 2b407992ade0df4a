// zq_ram_sdp: simple dual-port RAM, one write port and one synchronous read
// port (read data registered, one cycle latency). Maps to block RAM (or
// LUT RAM when small). Read-during-write to the same address is undefined.
`default_nettype none

module zq_ram_sdp #(
    parameter DATA_W = 64,                              // word width
    parameter DEPTH  = 512,                             // words
    parameter ADDR_W = (DEPTH > 1) ? $clog2(DEPTH) : 1  // address width
) (
    input  wire              clk,
    input  wire              wr_en,
    input  wire [ADDR_W-1:0] wr_addr,
    input  wire [DATA_W-1:0] wr_data,
    input  wire              rd_en,
    input  wire [ADDR_W-1:0] rd_addr,
    output logic [DATA_W-1:0] rd_data
);

    logic [DATA_W-1:0] mem [0:DEPTH-1];

    always_ff @(posedge clk) begin
        if (wr_en) mem[wr_addr] <= wr_data;
        if (rd_en) rd_data <= mem[rd_addr];
    end

endmodule

`default_nettype wire
