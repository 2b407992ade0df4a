// zq_im2col: the input frame store and the writer of buffer 0.
//
// The loader writes the raw frame (uint8 HWC, 4 pixels per 32-bit word) into
// the frame store; then this module writes every word of buffer 0, one word
// (N_CI channels) per cycle, in address order:
//   word (oy*OUT + ox)*IN_WORDS + w, lane l holds channel j = w*N_CI + l:
//   j = (ky*K + kx)*IN_CH + c  ->  input pixel (oy*S + ky - K/2, ox*S + kx - K/2), channel c
//   (0 outside the image and for j >= CH).
// With K = S = 1, OUT = IN_SIZE, CH = IN_CH this is the plain (channel-padded)
// frame, so the same module serves networks that do not im2col their stem.
// The frame store is replicated per lane (N_CI read ports); it costs
// OUT*OUT*IN_WORDS + 2 cycles per frame.
`default_nettype none

module zq_im2col #(
    parameter N_CI     = 8,
    parameter A_BITS   = 8,
    parameter IN_SIZE  = 32,
    parameter IN_CH    = 1,
    parameter IN_BEATS = 256,
    parameter K        = 3,
    parameter S        = 2,
    parameter OUT      = 16,
    parameter CH       = 9,
    parameter IN_WORDS = 2,
    parameter ADDR_W   = 12,
    parameter BEAT_W   = (IN_BEATS > 1) ? $clog2(IN_BEATS) : 1
) (
    input  wire                    clk,
    input  wire                    rst,
    // frame store write (loader)
    input  wire                    fr_we,
    input  wire [BEAT_W-1:0]       fr_addr,
    input  wire [31:0]             fr_data,
    // buffer 0 writer
    input  wire                    start,
    output logic                   done,
    output logic                   ld_en,
    output logic [ADDR_W-1:0]      ld_addr,
    output logic [N_CI*A_BITS-1:0] ld_data
);

    localparam PAD   = K / 2;
    localparam BA_W  = $clog2(IN_BEATS * 4) + 1;   // byte address width
    localparam C_W   = 16;
    localparam WI_W  = (IN_WORDS > 1) ? $clog2(IN_WORDS) : 1;

    // constant multiply by shifts and adds (no DSP for address arithmetic)
    function automatic [BA_W-1:0] cmul(input [BA_W-1:0] x, input integer m);
        cmul = '0;
        for (int i = 0; i < 31; i++) if (((m >> i) & 1) != 0) cmul = cmul + (x << i);
    endfunction

    logic              busy;
    logic [15:0]       ox, oy;
    logic [WI_W-1:0]   w;
    logic [ADDR_W-1:0] waddr;

    wire last_w  = (w  == WI_W'(IN_WORDS - 1));
    wire last_ox = (ox == 16'(OUT - 1));
    wire last_oy = (oy == 16'(OUT - 1));

    // stage 1 registers
    logic              v1;
    logic [ADDR_W-1:0] a1;
    logic [N_CI*2-1:0] bsel1;
    logic [N_CI-1:0]   lv1;
    logic [31:0]       q [0:N_CI-1];

    genvar l, wi;
    generate
        for (l = 0; l < N_CI; l = l + 1) begin : g_lane
            // per-word constants of this lane
            logic [IN_WORDS-1:0]     t_valid;
            logic [IN_WORDS*8-1:0]   t_ky, t_kx;
            logic [IN_WORDS*C_W-1:0] t_c;
            for (wi = 0; wi < IN_WORDS; wi = wi + 1) begin : g_w
                localparam integer J   = wi * N_CI + l;
                localparam integer TAP = J / IN_CH;
                assign t_valid[wi]          = (J < CH);
                assign t_ky[wi*8 +: 8]      = 8'(TAP / K);
                assign t_kx[wi*8 +: 8]      = 8'(TAP % K);
                assign t_c[wi*C_W +: C_W]   = C_W'(J % IN_CH);
            end

            logic signed [17:0] iy, ix;
            logic               inb;
            logic [BA_W-1:0]    ba;
            always_comb begin
                iy  = $signed(18'(cmul(BA_W'(oy), S))) + $signed({10'd0, t_ky[w*8 +: 8]}) - 18'(PAD);
                ix  = $signed(18'(cmul(BA_W'(ox), S))) + $signed({10'd0, t_kx[w*8 +: 8]}) - 18'(PAD);
                inb = t_valid[w] && (iy >= 0) && (iy < IN_SIZE) && (ix >= 0) && (ix < IN_SIZE);
                ba  = cmul(cmul(BA_W'(iy), IN_SIZE) + BA_W'(ix), IN_CH) + BA_W'(t_c[w*C_W +: C_W]);
            end

            zq_ram_sdp #(.DATA_W(32), .DEPTH(IN_BEATS), .ADDR_W(BEAT_W)) u_frame (
                .clk(clk),
                .wr_en(fr_we), .wr_addr(fr_addr), .wr_data(fr_data),
                .rd_en(busy), .rd_addr(BEAT_W'(ba >> 2)), .rd_data(q[l])
            );

            always_ff @(posedge clk) begin
                lv1[l]            <= inb;
                bsel1[l*2 +: 2]   <= ba[1:0];
            end
            // stage 2: the lane's byte (zero-extended to A_BITS)
            always_comb ld_data[l*A_BITS +: A_BITS] = lv1[l] ? A_BITS'(q[l][bsel1[l*2 +: 2]*8 +: 8]) : '0;
        end
    endgenerate

    always_ff @(posedge clk) begin
        done <= 1'b0;
        if (rst) begin
            busy <= 1'b0;
            v1   <= 1'b0;
        end else begin
            v1 <= busy;
            a1 <= waddr;
            if (v1 && !busy) done <= 1'b1;
            if (start) begin
                busy  <= 1'b1;
                ox    <= '0;
                oy    <= '0;
                w     <= '0;
                waddr <= '0;
            end else if (busy) begin
                waddr <= waddr + 1'b1;
                if (!last_w) begin
                    w <= w + 1'b1;
                end else begin
                    w <= '0;
                    if (!last_ox) begin
                        ox <= ox + 16'd1;
                    end else begin
                        ox <= '0;
                        if (!last_oy) oy <= oy + 16'd1;
                        else          busy <= 1'b0;
                    end
                end
            end
        end
    end

    assign ld_en   = v1;
    assign ld_addr = a1;

endmodule

`default_nettype wire
