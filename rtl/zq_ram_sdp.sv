// zq_ram_sdp: simple dual-port RAM, one write port and one synchronous read
// port with an optional output register (OUT_REG=1: the block RAM's DOB_REG).
// Read latency: 1 + OUT_REG cycles. Read-during-write to the same address
// returns the old word. Maps to block RAM (or LUT RAM when small).
`default_nettype none

module zq_ram_sdp #(
    parameter DATA_W  = 64,                              // word width
    parameter DEPTH   = 512,                             // words
    parameter OUT_REG = 1,                               // extra output register
    parameter ADDR_W  = (DEPTH > 1) ? $clog2(DEPTH) : 1  // address width
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
    logic [DATA_W-1:0] q;

    always_ff @(posedge clk) begin
        if (wr_en) mem[wr_addr] <= wr_data;
        if (rd_en) q <= mem[rd_addr];
    end

    generate
        if (OUT_REG != 0) begin : g_oreg
            always_ff @(posedge clk) rd_data <= q;
        end else begin : g_noreg
            always_comb rd_data = q;
        end
    endgenerate

endmodule

`default_nettype wire
