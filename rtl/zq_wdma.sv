// zq_wdma: the weight DMA. At the start of a frame it reads the weight image
// header at `base` and checks it against this engine (magic, spec version,
// network ID, word size, word count, header size); then it streams the image's
// words, in order, into the weight ring: word i goes to ring address i mod
// 2^WR_W and may be written once i < release + 2^WR_W (the MAC loop has released
// the words it overwrites). Bursts are 16 beats (128 bytes, never across a
// 4 KiB page: the header and every burst are 128-byte aligned); the last one ends
// with the image (8 beats when 64-byte words come in an odd number).
//
// Weight cache: when the whole image fits the ring (CACHE=1), the words stay
// valid across frames. Every frame still reads and checks the header: a cached
// frame reads only the header (`loaded` is the image size at once, so compute
// does not wait for it), and a header that fails the check, or a read error,
// drops the cache (the frame is answered with an error frame). The network ID
// in the header is a checksum of every integer of the network, so an image
// whose header passes holds the same words. (The HLS engine keys its cache the
// same way: it cannot see the address behind its m_axi pointer.)
`include "zq_spec.svh"
`default_nettype none

module zq_wdma #(
    parameter WORD_BYTES = 128,     // N_PE * N_CI
    parameter WR_W       = 9,       // ring address bits
    parameter N_WORDS    = 1024,    // weight words of the image
    parameter HDR_BYTES  = 256,
    parameter [31:0] NET_ID = 32'h0,
    parameter CACHE      = 0,
    parameter MAX_OUT    = 8
) (
    input  wire               clk,
    input  wire               rst,
    input  wire               start,        // frame start
    input  wire               abort,
    input  wire [`ZQ_AXI_ADDR_BITS-1:0] base,
    input  wire [23:0]        release_words,
    output logic [23:0]       loaded,       // words in the ring (image index of the next word)
    output logic              hdr_ok,       // the header of this frame checked out
    output logic              hdr_bad,      // the header is not this engine's
    output logic              err,          // an AXI read error
    output logic              busy,
    // weight ring write port
    output logic              w_wr_en,
    output logic [WR_W-1:0]   w_wr_addr,
    output logic [WORD_BYTES*8-1:0] w_wr_data,
    // AXI4 read
    output logic              m_arvalid,
    input  wire               m_arready,
    output logic [`ZQ_AXI_ADDR_BITS-1:0] m_araddr,
    output logic [7:0]        m_arlen,
    input  wire               m_rvalid,
    output logic              m_rready,
    input  wire [`ZQ_AXI_DATA_BITS-1:0] m_rdata,
    input  wire               m_rlast,
    input  wire [1:0]         m_rresp,
    output logic [31:0]       bytes_read
);

    localparam DW       = `ZQ_AXI_DATA_BITS;
    localparam NB       = DW / 8;                    // bytes per beat
    localparam LINE     = `ZQ_AXI_LINE_BYTES;
    localparam BPW      = WORD_BYTES / NB;           // beats per word
    localparam HDR_BEATS = HDR_BYTES / NB;
    localparam BURST    = `ZQ_AXI_BURST_BEATS;
    localparam [31:0] IMG_BEATS = HDR_BEATS + N_WORDS * BPW;

    // parameter checks, at elaboration
    if (WORD_BYTES % LINE != 0 && WORD_BYTES != LINE / 2) begin : g_param_check0
        $error("zq_wdma: WORD_BYTES=%0d", WORD_BYTES);
    end
    if (HDR_BYTES % LINE != 0) begin : g_param_check1
        $error("zq_wdma: HDR_BYTES=%0d must be a multiple of %0d", HDR_BYTES, LINE);
    end

    logic        cached;          // the ring holds the whole image (CACHE builds)
    logic        hdr_only;        // this frame reads the header only (the image is cached)
    logic        active;
    logic [31:0] c_base;
    logic [31:0] q_beat;          // next beat to request
    logic [31:0] p_beat;          // next beat to receive
    logic        p_words;         // p_beat >= HDR_BEATS: the beats are weight words (a flag, not a
                                  // compare: it enables the word registers, thousands of flip-flops)
    logic        cmd_ready;
    // A burst is requested once the ring slots of every word it touches are free. The burst's end
    // and the room check are registered (two cycles behind q_beat; `settle` holds requests until
    // they are current); the released count only grows, so a room check is never too generous.
    wire  [31:0] last_beat = hdr_only ? HDR_BEATS : IMG_BEATS;
    logic [31:0] q_end;           // end of the next burst (registered from q_beat)
    logic        room;
    logic [1:0]  settle;
    wire  [31:0] q_word_end = (q_end <= HDR_BEATS) ? 32'd0 : ((q_end - HDR_BEATS + BPW - 1) / BPW);
    always_ff @(posedge clk) begin
        q_end <= (last_beat - q_beat < BURST) ? last_beat : q_beat + BURST;
        room  <= CACHE != 0 || (q_word_end <= {8'd0, release_words} + (32'd1 << WR_W));
    end
    wire         cmd_valid = active && !abort && settle == 2'd0 && (q_beat < last_beat) && room &&
                             (q_beat < HDR_BEATS || hdr_ok);

    always_ff @(posedge clk) begin
        if (rst) cached <= 1'b0;
        else if (CACHE != 0 && active && !hdr_only && p_beat == IMG_BEATS && hdr_ok && !err_seen) cached <= 1'b1;
        else if (err_seen || hdr_bad) cached <= 1'b0;
    end

    logic err_seen;
    always_ff @(posedge clk) begin
        if (rst) begin
            active  <= 1'b0;
            q_beat  <= '0;
        end else if (start) begin
            active   <= 1'b1;
            hdr_only <= cached;
            c_base   <= base;
            q_beat   <= '0;
            settle   <= 2'd2;
        end else begin
            if (cmd_valid && cmd_ready) begin
                q_beat <= q_end;
                settle <= 2'd2;
            end else if (settle != 2'd0) begin
                settle <= settle - 2'd1;
            end
            if (abort || (p_beat == last_beat && rd_idle)) active <= 1'b0;
        end
    end

    logic        rd_valid, rd_last, rd_err, rd_idle;
    logic [DW-1:0] rd_data;
    zq_axi_rd #(.ADDR_W(`ZQ_AXI_ADDR_BITS), .DATA_W(DW), .MAX_OUT(MAX_OUT)) u_rd (
        .clk(clk), .rst(rst), .cmd_valid(cmd_valid), .cmd_ready(cmd_ready), .cmd_addr(c_base + q_beat * NB),
        .cmd_beats(5'(q_end - q_beat)),
        .m_arvalid(m_arvalid), .m_arready(m_arready), .m_araddr(m_araddr), .m_arlen(m_arlen),
        .m_rvalid(m_rvalid), .m_rready(m_rready), .m_rdata(m_rdata), .m_rlast(m_rlast), .m_rresp(m_rresp),
        .out_valid(rd_valid), .out_ready(1'b1), .out_data(rd_data), .out_last(rd_last), .out_err(rd_err),
        .idle(rd_idle)
    );

    // ---- responses: header words, then weight words --------------------------------
    logic [BPW*DW-1:0] word;
    logic [31:0]       hdr [0:`ZQ_HDR_WORDS-1];
    logic [$clog2(BPW+1)-1:0] wbeat;
    always_ff @(posedge clk) begin
        w_wr_en <= 1'b0;
        if (rst || start) begin
            p_beat   <= '0;
            p_words  <= HDR_BEATS == 0;
            wbeat    <= '0;
            loaded   <= (start && cached) ? 24'(N_WORDS) : 24'd0;
            hdr_ok   <= 1'b0;
            hdr_bad  <= 1'b0;
            err_seen <= 1'b0;
        end else if (rd_valid) begin
            p_beat <= p_beat + 32'd1;
            if (p_beat == HDR_BEATS - 1) p_words <= 1'b1;
            if (rd_err) err_seen <= 1'b1;
            if (p_beat < `ZQ_HDR_WORDS / 2) begin   // two 32-bit header words per beat
                hdr[2*p_beat]     <= rd_data[31:0];
                hdr[2*p_beat + 1] <= rd_data[63:32];
            end
            if (p_beat == HDR_BEATS - 1) begin
                if (hdr[`ZQ_HDR_MAGIC] == `ZQ_HEADER_MAGIC && hdr[`ZQ_HDR_SPEC_VERSION] == `ZQ_SPEC_VERSION &&
                    hdr[`ZQ_HDR_NET_ID] == NET_ID && hdr[`ZQ_HDR_WORD_BYTES] == WORD_BYTES &&
                    hdr[`ZQ_HDR_N_WORDS] == N_WORDS && hdr[`ZQ_HDR_HEADER_BYTES] == HDR_BYTES && !err_seen && !rd_err)
                    hdr_ok <= 1'b1;
                else
                    hdr_bad <= !(err_seen || rd_err);
            end
            if (p_words) begin
                if (32'(wbeat) == BPW - 1) begin
                    wbeat     <= '0;
                    w_wr_en   <= 1'b1;
                    loaded    <= loaded + 24'd1;
                end else begin
                    wbeat <= wbeat + 1'b1;
                end
            end
        end
    end
    // the word being assembled and the ring's write port: data, used only with w_wr_en, so neither
    // reset nor start gates their enables (thousands of flip-flops: a short enable path)
    always_ff @(posedge clk) begin
        if (rd_valid && p_words) begin
            logic [BPW*DW-1:0] nxt;   // (the new word formed once: a simulator keeps no shadow copy)
            nxt = {rd_data, word[BPW*DW-1:DW]};
            word <= nxt;
            if (32'(wbeat) == BPW - 1) begin
                w_wr_addr <= WR_W'(loaded);
                w_wr_data <= nxt;
            end
        end
    end
    assign err = err_seen;

    always_ff @(posedge clk) begin
        if (rst) bytes_read <= '0;
        else if (rd_valid) bytes_read <= bytes_read + 32'(NB);
    end

    assign busy = active || !rd_idle;
    wire unused_ok = rd_last;

endmodule

`default_nettype wire
