// zq_act_mem: the activation buffers BUF0..BUF{N_BUFS-1}.
//
// Every buffer stores words of N_CI activations (WORD_W = N_CI * A_BITS bits)
// and is split into NB = N_PE / N_CI banks by the low address bits, so that
// the conv engine can write the NB consecutive words of one output pixel and
// channel group in a single cycle (at any word offset: concatenation) while
// reading one word per cycle at any address.
//
// Ports
//   read   rd_en/rd_buf/rd_addr/rd_zero -> rd_data two cycles later
//          (cycle 1: bank RAM read, cycle 2: bank/buffer select registered);
//          rd_zero forces the word to 0 (zero padding of out-of-bounds taps).
//   write  wr_en/wr_buf/wr_addr/wr_nwords/wr_data: words w < wr_nwords of
//          wr_data go to address wr_addr + w of buffer wr_buf.
//   load   ld_en/ld_addr/ld_data: one word into buffer 0 (the input loader).
`default_nettype none

module zq_act_mem #(
    parameter N_BUFS    = 3,
    parameter BUF_WORDS = {15{32'd16}},   // packed: words of buffer i at [i*32 +: 32]
    parameter WORD_W    = 64,
    parameter NB        = 2,              // banks (power of two)
    parameter ADDR_W    = 12,             // word address width (any buffer)
    parameter NW_W      = $clog2(NB + 1)  // width of wr_nwords
) (
    input  wire                  clk,

    input  wire                  rd_en,
    input  wire [3:0]            rd_buf,
    input  wire [ADDR_W-1:0]     rd_addr,
    input  wire                  rd_zero,
    output logic [WORD_W-1:0]    rd_data,

    input  wire                  wr_en,
    input  wire [3:0]            wr_buf,
    input  wire [ADDR_W-1:0]     wr_addr,
    input  wire [NW_W-1:0]       wr_nwords,
    input  wire [NB*WORD_W-1:0]  wr_data,

    input  wire                  ld_en,
    input  wire [ADDR_W-1:0]     ld_addr,
    input  wire [WORD_W-1:0]     ld_data
);

    localparam LG_NB  = $clog2(NB);
    localparam BANK_W = (LG_NB > 0) ? LG_NB : 1;
    localparam ROW_W  = (ADDR_W - LG_NB > 0) ? ADDR_W - LG_NB : 1;

    // read side: stage 1 = RAM outputs, select registered with them
    logic [3:0]        rd_buf_q;
    logic [BANK_W-1:0] rd_bank_q;
    logic              rd_zero_q;
    logic [WORD_W-1:0] bank_q [0:N_BUFS*NB-1];

    wire [ROW_W-1:0]  rd_row  = ROW_W'(rd_addr >> LG_NB);
    wire [BANK_W-1:0] rd_bank = BANK_W'(rd_addr & ADDR_W'(NB - 1));
    wire [BANK_W-1:0] wr_bank0 = BANK_W'(wr_addr & ADDR_W'(NB - 1));
    wire [BANK_W-1:0] ld_bank  = BANK_W'(ld_addr & ADDR_W'(NB - 1));
    wire [ROW_W-1:0]  ld_row   = ROW_W'(ld_addr >> LG_NB);

    genvar b, k;
    generate
        for (b = 0; b < N_BUFS; b = b + 1) begin : g_buf
            localparam integer WORDS = BUF_WORDS[b*32 +: 32];
            localparam integer DEPTH = ((WORDS + NB - 1) / NB > 0) ? (WORDS + NB - 1) / NB : 1;
            localparam integer RA_W  = (DEPTH > 1) ? $clog2(DEPTH) : 1;
            for (k = 0; k < NB; k = k + 1) begin : g_bank
                // which word of wr_data lands in this bank, and at which row
                wire [BANK_W-1:0] w_sel = BANK_W'(k - wr_bank0);
                wire [ADDR_W-1:0] w_adr = wr_addr + ADDR_W'(w_sel);
                wire              w_hit = wr_en && (wr_buf == 4'(b)) && (NW_W'(w_sel) < wr_nwords);
                wire              l_hit = (b == 0) && ld_en && (ld_bank == BANK_W'(k));
                logic              bwe;
                logic [ROW_W-1:0]  bwa;
                logic [WORD_W-1:0] bwd;
                always_comb begin
                    bwe = w_hit || l_hit;
                    bwa = l_hit ? ld_row : ROW_W'(w_adr >> LG_NB);
                    bwd = l_hit ? ld_data : wr_data[w_sel*WORD_W +: WORD_W];
                end
                zq_ram_sdp #(.DATA_W(WORD_W), .DEPTH(DEPTH), .ADDR_W(RA_W)) u_ram (
                    .clk(clk),
                    .wr_en(bwe), .wr_addr(RA_W'(bwa)), .wr_data(bwd),
                    .rd_en(rd_en && (rd_buf == 4'(b))), .rd_addr(RA_W'(rd_row)),
                    .rd_data(bank_q[b*NB + k])
                );
            end
        end
    endgenerate

    always_ff @(posedge clk) begin
        rd_buf_q  <= rd_buf;
        rd_bank_q <= rd_bank;
        rd_zero_q <= rd_zero || !rd_en;
    end

    // stage 2: select bank and buffer, apply the zero mask
    integer i;
    always_ff @(posedge clk) begin
        rd_data <= '0;
        for (i = 0; i < N_BUFS * NB; i = i + 1) begin
            if (!rd_zero_q && (4'(i / NB) == rd_buf_q) && (BANK_W'(i % NB) == rd_bank_q))
                rd_data <= bank_q[i];
        end
    end

endmodule

`default_nettype wire
