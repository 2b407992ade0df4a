// zq_conv_engine: runs every layer of the layer table on the MAC array.
//
// Layer sequence (per layer i, state machine):
//   FETCH  read row i of the layer table ROM                    1 cycle
//   SETUP  latch the fields, start the loop generator           1 cycle
//   RUN    one MAC-array step per cycle                          co_groups*out_size^2*k^2*ci_chunks
//   DRAIN  wait until the last result is written               8 cycles
// so a layer costs exactly its MAC-array cycles + LAYER_OVERHEAD cycles
// (LAYER_OVERHEAD = 11: FETCH, SETUP, the RUN cycle that sees the loop
// generator finish, and 8 DRAIN cycles); the count is reported on lc_*.
//
// Step pipeline (cycle after issue):
//   P1 loop generator outputs: addresses, flags
//   P2 activation bank / weight ROM read
//   P3 activation word selected and zero-masked, weight word registered
//   P4 products          (zq_mac_array)   bias ROM read addressed here
//   P5 per-PE sums       bias word valid
//   P6 accumulators      (pixel done when the step was its last)
//   P7 requantizer stage 1 (round/shift)
//   P8 requantizer stage 2 (ReLU, clamp)  -> buffer write / GAP add
//
// Layer table row: 18 fields of 16 bits, field 0 in the least significant
// bits, in the order of zynqflow.model.export.LAYER_FIELDS.
`default_nettype none

module zq_conv_engine #(
    parameter N_PE         = 16,
    parameter N_CI         = 8,
    parameter W_BITS       = 8,
    parameter A_BITS       = 8,
    parameter OUT_W        = 16,
    parameter N_LAYERS     = 14,
    parameter W_WORDS      = 1464,
    parameter B_WORDS      = 42,
    parameter ADDR_W       = 12,
    parameter WEIGHTS_FILE = "weights.mem",
    parameter BIASES_FILE  = "biases.mem",
    parameter LAYERS_FILE  = "layers.mem",
    parameter NB           = N_PE / N_CI,
    parameter NW_W         = $clog2(NB + 1),
    parameter NCH_W        = $clog2(N_PE + 1)
) (
    input  wire                    clk,
    input  wire                    rst,
    input  wire                    start,      // run all layers (buffer 0 holds the input)
    output logic                   done,       // pulse: last layer written
    output logic                   busy,

    // activation buffers: read port (data 2 cycles after the address)
    output logic                   rd_en,
    output logic [3:0]             rd_buf,
    output logic [ADDR_W-1:0]      rd_addr,
    output logic                   rd_zero,
    input  wire  [N_CI*A_BITS-1:0] rd_data,
    // activation buffers: write port
    output logic                   wr_en,
    output logic [3:0]             wr_buf,
    output logic [ADDR_W-1:0]      wr_addr,
    output logic [NW_W-1:0]        wr_nwords,
    output logic [N_PE*A_BITS-1:0] wr_data,
    // global-average-pool accumulators
    output logic                   gap_en,
    output logic [15:0]            gap_base,
    output logic [NCH_W-1:0]       gap_n,
    output logic [N_PE*OUT_W-1:0]  gap_y,
    // profiling: cycles of each layer
    output logic                   lc_valid,
    output logic [15:0]            lc_layer,
    output logic [31:0]            lc_cycles
);

    localparam ACC_W      = 32;
    localparam WADDR_W    = (W_WORDS > 1) ? $clog2(W_WORDS) : 1;
    localparam BADDR_W    = (B_WORDS > 1) ? $clog2(B_WORDS) : 1;
    localparam LADDR_W    = (N_LAYERS > 1) ? $clog2(N_LAYERS) : 1;
    localparam ROW_W      = 18 * 16;

    // ---------------------------------------------------------------- layer table
    logic               lt_en;
    logic [LADDR_W-1:0] lt_addr;
    logic [ROW_W-1:0]   lt_row;
    zq_rom #(.DATA_W(ROW_W), .DEPTH(N_LAYERS), .INIT_FILE(LAYERS_FILE), .OUT_REG(0)) u_layers (
        .clk(clk), .en(lt_en), .addr(lt_addr), .data(lt_row)
    );
    function automatic [15:0] fld(input [ROW_W-1:0] row, input integer i);
        fld = row[i*16 +: 16];
    endfunction
    wire row_out_signed = lt_row[16*16 + 15];   // out_lo < 0: the layer writes signed values

    // layer constants used by the datapath
    logic               l_relu, l_is_last, l_src_signed;
    logic signed [15:0] l_shift, l_out_lo, l_out_hi;
    logic [3:0]         l_src_buf, l_dst_buf;
    logic [15:0]        buf_signed;      // buffer b holds signed activations (b = 15: GAP, unused)

    // ---------------------------------------------------------------- control
    localparam [2:0] E_IDLE = 3'd0, E_FETCH = 3'd1, E_SETUP = 3'd2, E_RUN = 3'd3, E_DRAIN = 3'd4;
    logic [2:0]  state;
    logic [15:0] layer;
    logic [31:0] cyc;
    logic        lg_start, lg_busy, pipe_busy;

    assign busy = (state != E_IDLE);

    always_comb begin
        lt_en    = (state == E_FETCH);
        lt_addr  = LADDR_W'(layer);
        lg_start = (state == E_SETUP);
    end

    always_ff @(posedge clk) begin
        done     <= 1'b0;
        lc_valid <= 1'b0;
        if (rst) begin
            state      <= E_IDLE;
            layer      <= '0;
            cyc        <= '0;
            buf_signed <= '0;
        end else begin
            case (state)
                E_IDLE: if (start) begin
                    state <= E_FETCH;
                    layer <= '0;
                    cyc   <= '0;
                end
                E_FETCH: begin
                    state <= E_SETUP;
                    cyc   <= cyc + 1;
                end
                E_SETUP: begin
                    state        <= E_RUN;
                    cyc          <= cyc + 1;
                    l_relu       <= fld(lt_row, 7) != 0;
                    l_shift      <= fld(lt_row, 8);
                    l_src_buf    <= 4'(fld(lt_row, 9));
                    l_dst_buf    <= 4'(fld(lt_row, 10));
                    l_is_last    <= fld(lt_row, 15) != 0;
                    l_out_lo     <= fld(lt_row, 16);
                    l_out_hi     <= fld(lt_row, 17);
                    l_src_signed <= buf_signed[4'(fld(lt_row, 9))];
                    buf_signed[4'(fld(lt_row, 10))] <= row_out_signed;
                end
                E_RUN: begin
                    cyc <= cyc + 1;
                    if (!lg_busy) state <= E_DRAIN;
                end
                E_DRAIN: begin
                    cyc <= cyc + 1;
                    if (!pipe_busy) begin
                        lc_valid  <= 1'b1;
                        lc_layer  <= layer;
                        lc_cycles <= cyc + 1;
                        cyc       <= '0;
                        layer     <= layer + 16'd1;
                        if (layer == 16'(N_LAYERS - 1)) begin
                            state <= E_IDLE;
                            done  <= 1'b1;
                        end else begin
                            state <= E_FETCH;
                        end
                    end
                end
                default: state <= E_IDLE;
            endcase
        end
    end

    // ---------------------------------------------------------------- P1: loop generator
    logic               s1_v, s1_first, s1_last, s1_inb;
    logic [ADDR_W-1:0]  s1_addr, s1_oaddr;
    logic [WADDR_W-1:0] s1_waddr;
    logic [BADDR_W-1:0] s1_baddr;
    logic [NCH_W-1:0]   s1_nch;
    logic [15:0]        s1_gbase;

    zq_loop_gen #(.N_PE(N_PE), .N_CI(N_CI), .ADDR_W(ADDR_W), .WADDR_W(WADDR_W), .BADDR_W(BADDR_W)) u_loop (
        .clk(clk), .rst(rst), .start(lg_start),
        .in_size(fld(lt_row, 0)), .out_size(fld(lt_row, 1)), .k(fld(lt_row, 2)), .stride(fld(lt_row, 3)),
        .ci_chunks(fld(lt_row, 4)), .co_groups(fld(lt_row, 5)), .cout(fld(lt_row, 6)),
        .dst_word_off(fld(lt_row, 11)), .dst_words(fld(lt_row, 12)),
        .w_base(fld(lt_row, 13)), .b_base(fld(lt_row, 14)),
        .busy(lg_busy),
        .step_valid(s1_v), .step_first(s1_first), .step_last(s1_last), .step_inb(s1_inb),
        .step_addr(s1_addr), .step_waddr(s1_waddr), .step_baddr(s1_baddr),
        .step_oaddr(s1_oaddr), .step_nch(s1_nch), .step_gbase(s1_gbase)
    );

    always_comb begin
        rd_en   = s1_v && s1_inb;
        rd_buf  = l_src_buf;
        rd_addr = s1_addr;
        rd_zero = !s1_inb;
    end

    // weight ROM: P1 address -> P3 data (block RAM + output register)
    logic [N_PE*N_CI*W_BITS-1:0] w_word;
    zq_rom #(.DATA_W(N_PE*N_CI*W_BITS), .DEPTH(W_WORDS), .INIT_FILE(WEIGHTS_FILE), .OUT_REG(1)) u_weights (
        .clk(clk), .en(s1_v), .addr(s1_waddr), .data(w_word)
    );

    // ---------------------------------------------------------------- P2..P8 control pipeline
    // per step: valid, first, last; per pixel: output address, channels, GAP base
    localparam META_W = ADDR_W + NCH_W + 16;
    logic [8:2] pv, pl;
    logic [3:2] pf;
    logic [BADDR_W-1:0] p_baddr [2:4];
    logic [META_W-1:0]  pmeta   [2:8];

    always_ff @(posedge clk) begin
        if (rst) pv <= '0;
        else     pv <= {pv[7:2], s1_v};
        pf <= {pf[2], s1_first};
        pl <= {pl[7:2], s1_last};
        p_baddr[2] <= s1_baddr;
        p_baddr[3] <= p_baddr[2];
        p_baddr[4] <= p_baddr[3];
        pmeta[2] <= {s1_oaddr, s1_nch, s1_gbase};
        for (int i = 3; i <= 8; i++) pmeta[i] <= pmeta[i-1];
    end

    assign pipe_busy = s1_v || (pv != '0);

    // bias ROM: P4 address -> P5 data
    logic [N_PE*ACC_W-1:0] b_word;
    zq_rom #(.DATA_W(N_PE*ACC_W), .DEPTH(B_WORDS), .INIT_FILE(BIASES_FILE), .OUT_REG(0)) u_biases (
        .clk(clk), .en(pv[4]), .addr(p_baddr[4]), .data(b_word)
    );

    // ---------------------------------------------------------------- P3..P6 MAC array
    logic                  acc_valid;
    logic [N_PE*ACC_W-1:0] acc;
    zq_mac_array #(.N_PE(N_PE), .N_CI(N_CI), .W_BITS(W_BITS), .A_BITS(A_BITS), .ACC_W(ACC_W)) u_mac (
        .clk(clk), .rst(rst),
        .in_valid(pv[3]), .in_first(pf[3]), .in_last(pl[3]), .act_signed(l_src_signed),
        .act(rd_data), .wgt(w_word), .bias(b_word),
        .out_valid(acc_valid), .out_acc(acc)
    );

    // ---------------------------------------------------------------- P7..P8 requantizers
    logic [N_PE*OUT_W-1:0] y;
    genvar p;
    generate
        for (p = 0; p < N_PE; p = p + 1) begin : g_rq
            zq_requant #(.ACC_W(ACC_W), .OUT_W(OUT_W)) u_rq (
                .clk(clk), .acc(acc[p*ACC_W +: ACC_W]),
                .shift(l_shift), .relu(l_relu), .out_lo(l_out_lo), .out_hi(l_out_hi),
                .y(y[p*OUT_W +: OUT_W])
            );
        end
    endgenerate

    // ---------------------------------------------------------------- P8: write back
    wire               res_v = pv[8] && pl[8];
    wire [ADDR_W-1:0]  res_oaddr;
    wire [NCH_W-1:0]   res_nch;
    wire [15:0]        res_gbase;
    assign {res_oaddr, res_nch, res_gbase} = pmeta[8];

    always_comb begin
        wr_en     = res_v && !l_is_last;
        wr_buf    = l_dst_buf;
        wr_addr   = res_oaddr;
        wr_nwords = NW_W'(((NCH_W+1)'(res_nch) + (NCH_W+1)'(N_CI - 1)) >> $clog2(N_CI));
        for (int i = 0; i < N_PE; i++)
            wr_data[i*A_BITS +: A_BITS] = (NCH_W'(i) < res_nch) ? y[i*OUT_W +: A_BITS] : '0;
        gap_en   = res_v && l_is_last;
        gap_base = res_gbase;
        gap_n    = res_nch;
        gap_y    = y;
    end

    wire unused_ok = acc_valid;   // P6 "pixel done" (the write-back uses the P8 copy)

endmodule

`default_nettype wire
