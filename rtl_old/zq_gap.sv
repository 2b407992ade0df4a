// zq_gap: global-average-pool accumulators and the logits.
//
// The final conv (is_last rows of the layer table) adds its requantized
// outputs into GAP_CH accumulators: channel add_base + pe gets add_y[pe] for
// pe < add_n. The logit of class c is the rounded shift of its sum:
//   logit[c] = (gap[c] + 2^(GAP_SHIFT-1)) >>> GAP_SHIFT   (no rounding term if GAP_SHIFT = 0)
// read combinationally through rd_sel / rd_logit (32 bits, sign-extended).
`default_nettype none

module zq_gap #(
    parameter N_PE      = 16,
    parameter OUT_W     = 16,
    parameter GAP_CH    = 10,
    parameter N_CLASSES = 10,
    parameter GAP_SHIFT = 4,
    parameter GAP_W     = 32,
    parameter NCH_W     = $clog2(N_PE + 1),
    parameter CLS_W     = (N_CLASSES > 1) ? $clog2(N_CLASSES) : 1
) (
    input  wire                   clk,
    input  wire                   clear,
    input  wire                   add_en,
    input  wire [15:0]            add_base,
    input  wire [NCH_W-1:0]       add_n,
    input  wire [N_PE*OUT_W-1:0]  add_y,
    input  wire [CLS_W-1:0]       rd_sel,
    output logic [31:0]           rd_logit
);

    logic signed [GAP_W-1:0] gap [0:GAP_CH-1];

    genvar ch;
    generate
        for (ch = 0; ch < GAP_CH; ch = ch + 1) begin : g_ch
            logic signed [GAP_W-1:0] inc;
            always_comb begin
                inc = '0;
                for (int pe = 0; pe < N_PE; pe++)
                    if ((add_base + 16'(pe) == 16'(ch)) && (NCH_W'(pe) < add_n))
                        inc = GAP_W'($signed(add_y[pe*OUT_W +: OUT_W]));
            end
            always_ff @(posedge clk) begin
                if (clear)       gap[ch] <= '0;
                else if (add_en) gap[ch] <= gap[ch] + inc;
            end
        end
    endgenerate

    logic signed [GAP_W:0] s;
    always_comb begin
        s = (GAP_W+1)'(gap[rd_sel]);
        if (GAP_SHIFT > 0) s = (s + ((GAP_W+1)'(1) <<< (GAP_SHIFT > 0 ? GAP_SHIFT - 1 : 0))) >>> GAP_SHIFT;
        rd_logit = 32'(s);
    end

endmodule

`default_nettype wire
