// zq_act_mem: the on-chip activation RAM. WPG = N_PE/N_CI banks of ROWS words
// of N_CI 8-bit lanes; channel word cw of a region lives in bank cw % WPG (the
// engines compute the row; see spec.engine and docs/ARCHITECTURE.md).
//
// Ports
//   read    rd_en / rd_bank / rd_row -> rd_data three cycles later (RAM, its
//           output register, bank select); rd_zero forces the word to 0 (a tap
//           outside the map) and also travels three cycles.
//   write A (the MAC array's results): per bank an enable and a row, one cycle.
//           Always accepted.
//   write B (ring fills from DDR, stem rows): one row, a word per bank and a
//           bank mask, valid/ready; accepted in cycles without an A write.
`default_nettype none

module zq_act_mem #(
    parameter WPG    = 2,     // banks (power of two)
    parameter ROWS   = 1024,  // rows per bank
    parameter WORD_W = 64,    // N_CI * 8
    parameter ROW_W  = (ROWS > 1) ? $clog2(ROWS) : 1,
    parameter BANK_W = (WPG > 1) ? $clog2(WPG) : 1
) (
    input  wire                    clk,
    input  wire                    rd_en,
    input  wire [BANK_W-1:0]       rd_bank,
    input  wire [ROW_W-1:0]        rd_row,
    input  wire                    rd_zero,
    output logic [WORD_W-1:0]      rd_data,

    input  wire [WPG-1:0]          a_en,
    input  wire [WPG*ROW_W-1:0]    a_row,
    input  wire [WPG*WORD_W-1:0]   a_data,

    input  wire                    b_valid,
    output logic                   b_ready,
    input  wire [ROW_W-1:0]        b_row,
    input  wire [WPG-1:0]          b_mask,
    input  wire [WPG*WORD_W-1:0]   b_data
);

    // parameter checks, at elaboration
    if ((WPG & (WPG - 1)) != 0) begin : g_param_check0
        $error("zq_act_mem: WPG=%0d must be a power of two", WPG);
    end

    wire a_any = |a_en;
    assign b_ready = !a_any;
    wire b_go = b_valid && !a_any;

    logic [WORD_W-1:0] q [0:WPG-1];
    logic [BANK_W-1:0] bank1, bank2;
    logic              zero1, zero2;

    genvar b;
    generate
        for (b = 0; b < WPG; b = b + 1) begin : g_bank
            wire              we = a_en[b] || (b_go && b_mask[b]);
            wire [ROW_W-1:0]  wa = a_en[b] ? a_row[b*ROW_W +: ROW_W] : b_row;
            wire [WORD_W-1:0] wd = a_en[b] ? a_data[b*WORD_W +: WORD_W] : b_data[b*WORD_W +: WORD_W];
            zq_ram_sdp #(.DATA_W(WORD_W), .DEPTH(ROWS), .OUT_REG(1), .ADDR_W(ROW_W)) u_ram (
                .clk(clk), .wr_en(we), .wr_addr(wa), .wr_data(wd),
                .rd_en(rd_en && (WPG == 1 || rd_bank == BANK_W'(b))), .rd_addr(rd_row), .rd_data(q[b])
            );
        end
    endgenerate

    always_ff @(posedge clk) begin
        bank1 <= rd_bank;
        zero1 <= rd_zero || !rd_en;
        bank2 <= bank1;
        zero2 <= zero1;
        rd_data <= zero2 ? '0 : q[WPG > 1 ? bank2 : 0];
    end

endmodule

`default_nettype wire
