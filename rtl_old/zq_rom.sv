// zq_rom: read-only memory initialised from a $readmemh image (one word per
// line, lane 0 in the least significant bits), synchronous read with an
// optional second output register (OUT_REG=1, the block RAM output latch).
// Latency from addr to data: 1 + OUT_REG cycles.
`default_nettype none

module zq_rom #(
    parameter DATA_W    = 32,
    parameter DEPTH     = 16,
    parameter INIT_FILE = "rom.mem",
    parameter OUT_REG   = 0,
    parameter ADDR_W    = (DEPTH > 1) ? $clog2(DEPTH) : 1
) (
    input  wire              clk,
    input  wire              en,
    input  wire [ADDR_W-1:0] addr,
    output logic [DATA_W-1:0] data
);

    logic [DATA_W-1:0] mem [0:DEPTH-1];
    logic [DATA_W-1:0] q;

    initial $readmemh(INIT_FILE, mem);

    always_ff @(posedge clk) begin
        if (en) q <= mem[addr];
    end

    generate
        if (OUT_REG != 0) begin : g_oreg
            always_ff @(posedge clk) data <= q;
        end else begin : g_noreg
            always_comb data = q;
        end
    endgenerate

endmodule

`default_nettype wire
