// zq_core: the compute datapath of one layer: loop generator, the activation
// and weight-ring reads, the MAC array, the requantizer and the write-back.
//
//   S0   step from zq_loop_gen (addresses, flags)
//   S3   activation word (zq_act_mem, 3 cycles) and weight word (ring RAM 2 cycles + a register)
//   S11  accumulators (zq_mac_array, 8 cycles)
//   S16  requantized outputs (zq_requant, 5 cycles)
//   S17  write-back: activation RAM (port A), the DDR output FIFO, or the GAP RAM
//
// The destination addresses of a step are computed at S1 from its group and
// pixel and travel with it. DDR results are N_PE-byte units with their byte
// address and the number of units left in their contiguous run (the band's
// rows of one channel group), which zq_out_dma turns into bursts.
//
// Widths of the layer constants are the layer-table row's (zq_spec.svh); the stage counts
// are the spec's RTL_PIPE_* (zq_mac_array and zq_requant have those latencies; their
// testbenches check them).
`include "zq_spec.svh"
`default_nettype none

module zq_core #(
    parameter N_PE    = 16,
    parameter N_CI    = 8,
    parameter DSP_PAIRS = N_PE / 2 * N_CI,   // MAC lane pairs on DSP48E1 (zq_mac_array)
    parameter ROW_W   = 12,
    parameter WR_W    = 9,
    parameter GAP_ROWS = 1,
    parameter WPG     = N_PE / N_CI,
    parameter BANK_W  = (WPG > 1) ? $clog2(WPG) : 1,
    parameter GR_W    = (GAP_ROWS > 1) ? $clog2(GAP_ROWS) : 1,
    parameter OUT_W   = 18
) (
    input  wire                   clk,
    input  wire                   rst,
    input  wire                   frame_start,    // a new frame (the weight ring's releases start over)
    input  wire                   start,          // layer constants valid: run the layer
    input  wire                   abort,
    output logic                  busy,           // steps still to issue or in flight
    // layer constants
    input  wire [`ZQ_ROW_LG_IN_W-1:0]  lg_in,
    input  wire [`ZQ_ROW_LG_OUT_W-1:0] lg_out,
    input  wire                   k3,
    input  wire                   s2,
    input  wire [`ZQ_ROW_CI_CHUNKS_W-1:0] ci_chunks,
    input  wire [`ZQ_ROW_CO_GROUPS_W-1:0] co_groups,
    input  wire [`ZQ_ROW_CO_LAST_W-1:0]   co_last,
    input  wire [`ZQ_ROW_LG_BAND_W-1:0]   lg_band,
    input  wire                   ring_fed,
    input  wire                   src_signed,
    input  wire [ROW_W-1:0]       src_base,
    input  wire [`ZQ_ROW_SRC_LG_ROWS_W-1:0] src_lg_rows,
    input  wire [10:0]            in_rows,
    input  wire [`ZQ_ROW_DST_KIND_W-1:0] dst_kind,
    input  wire [ROW_W-1:0]       dst_base,
    input  wire [`ZQ_ROW_DST_CW0_W-1:0] dst_cw0,
    input  wire [`ZQ_ROW_DST_CG0_W-1:0] dst_cg0,
    input  wire [`ZQ_AXI_ADDR_BITS-1:0] dst_addr, // DST_DDR: DDR byte address of the destination tensor
    input  wire [`ZQ_ROW_W_OFF_W-1:0]   w_off,
    input  wire [`ZQ_ROW_W_BLK_W-1:0]   w_blk,
    input  wire                   w_res,
    input  wire signed [`ZQ_ACC_BITS-1:0] rq_rnd,
    input  wire                   rq_shr,
    input  wire [$clog2(`ZQ_ACC_BITS)-1:0] rq_sh,
    input  wire                   relu,
    input  wire signed [OUT_W-1:0] out_lo,
    input  wire signed [OUT_W-1:0] out_hi,
    // flow control
    input  wire [10:0]            rows_avail,
    output logic [10:0]           rows_release,
    input  wire [`ZQ_ROW_W_OFF_W-1:0] w_loaded,
    output logic [`ZQ_ROW_W_OFF_W-1:0] w_release,
    input  wire                   out_full,
    output logic                  stall_mem,
    // activation RAM read and write port A
    output logic                  act_rd_en,
    output logic [BANK_W-1:0]     act_rd_bank,
    output logic [ROW_W-1:0]      act_rd_row,
    output logic                  act_rd_zero,
    input  wire [N_CI*`ZQ_LANE_BITS-1:0] act_rd_data,
    output logic [WPG-1:0]        act_wr_en,
    output logic [WPG*ROW_W-1:0]  act_wr_row,
    output logic [N_PE*`ZQ_LANE_BITS-1:0] act_wr_data,
    // weight ring read
    output logic                  w_rd_en,
    output logic [WR_W-1:0]       w_rd_addr,
    input  wire [N_PE*N_CI*`ZQ_W_BITS_MAX-1:0] w_rd_data,
    // DDR results
    output logic                  ddr_valid,
    output logic [`ZQ_AXI_ADDR_BITS-1:0] ddr_addr,
    output logic [15:0]           ddr_left,
    output logic [N_PE*`ZQ_LANE_BITS-1:0] ddr_data,
    // GAP RAM write
    output logic                  gap_wr_en,
    output logic [GR_W-1:0]       gap_wr_row,
    output logic [N_PE*`ZQ_GAP_BITS-1:0] gap_wr_data
);

    localparam NV_W = $clog2(N_PE + 1);
    localparam LWPG = (WPG > 1) ? $clog2(WPG) : 0;
    localparam LPE  = $clog2(N_PE);
    localparam RD   = `ZQ_RTL_PIPE_READ;                                      // S0 -> S3
    localparam LAT  = `ZQ_RTL_PIPE_READ + `ZQ_RTL_PIPE_MAC + `ZQ_RTL_PIPE_REQUANT; // S0 -> S16
    localparam ACC  = `ZQ_ACC_BITS;

    // parameter checks, at elaboration
    if (N_PE % N_CI != 0) begin : g_param_check0
        $error("zq_core: N_PE=%0d must be a multiple of N_CI=%0d", N_PE, N_CI);
    end
    if ((N_PE & (N_PE - 1)) != 0 || (N_CI & (N_CI - 1)) != 0) begin : g_param_check1
        $error("zq_core: N_PE, N_CI must be powers of two");
    end
    // the stages counted here, the address stages of zq_loop_gen and the write-back: the pipeline
    // the output FIFO's margin and zq_top's drain are sized for (spec RTL_PIPE_DEPTH)
    if (`ZQ_RTL_PIPE_ADDR + LAT + `ZQ_RTL_PIPE_WRITEBACK != `ZQ_RTL_PIPE_DEPTH) begin : g_param_check2
        $error("zq_core: pipeline of %0d stages, the spec says %0d", `ZQ_RTL_PIPE_ADDR + LAT + 1, `ZQ_RTL_PIPE_DEPTH);
    end

    // ---- the loop nest ------------------------------------------------------------
    logic              s_valid, s_bias, s_first, s_last, s_blk_last, s_zero;
    logic [BANK_W-1:0] s_bank;
    logic [ROW_W-1:0]  s_row;
    logic [WR_W-1:0]   s_waddr;
    logic [9:0]        s_g;
    logic [19:0]       s_pix;
    logic [NV_W-1:0]   s_nvalid;
    logic              lg_busy;

    zq_loop_gen #(.N_PE(N_PE), .WPG(WPG), .ROW_W(ROW_W), .WR_W(WR_W)) u_loop (
        .clk(clk), .rst(rst), .frame_start(frame_start), .start(start), .abort(abort), .busy(lg_busy),
        .lg_in(lg_in), .lg_out(lg_out), .k3(k3), .s2(s2), .ci_chunks(ci_chunks), .co_groups(co_groups),
        .co_last(co_last), .lg_band(lg_band), .ring_fed(ring_fed), .src_base(src_base), .src_lg_rows(src_lg_rows),
        .in_rows(in_rows), .w_off(w_off), .w_blk(w_blk), .w_res(w_res),
        .rows_avail(rows_avail), .rows_release(rows_release), .w_loaded(w_loaded), .w_release(w_release),
        .out_full(out_full), .stall_mem(stall_mem),
        .s_valid(s_valid), .s_bias(s_bias), .s_first(s_first), .s_last(s_last), .s_blk_last(s_blk_last),
        .s_bank(s_bank), .s_row(s_row), .s_zero(s_zero), .s_waddr(s_waddr), .s_g(s_g), .s_pix(s_pix),
        .s_nvalid(s_nvalid)
    );

    assign act_rd_en   = s_valid;
    assign act_rd_bank = s_bank;
    assign act_rd_row  = s_row;
    assign act_rd_zero = s_zero;
    assign w_rd_en     = s_valid || s_bias;
    assign w_rd_addr   = s_waddr;

    // ---- S3: weight word registered to meet the activation word --------------------
    logic [N_PE*N_CI*`ZQ_W_BITS_MAX-1:0] w3;
    always_ff @(posedge clk) w3 <= w_rd_data;

    logic [RD:1] v_s, b_s, f_s;     // S1..S3: the RAM reads
    always_ff @(posedge clk) begin
        if (rst || abort) begin
            v_s <= '0;
            b_s <= '0;
        end else begin
            v_s <= {v_s[RD-1:1], s_valid};
            b_s <= {b_s[RD-1:1], s_bias};
        end
        f_s <= {f_s[RD-1:1], s_first};
    end

    // ---- MAC array and requantizer ---------------------------------------------------
    logic [N_PE*ACC-1:0]   acc;
    logic                  acc_valid;
    logic [N_PE*OUT_W-1:0] y;
    zq_mac_array #(.N_PE(N_PE), .N_CI(N_CI), .DSP_PAIRS(DSP_PAIRS), .ACC_W(ACC)) u_mac (
        .clk(clk), .rst(rst || abort), .in_valid(v_s[RD]), .in_first(f_s[RD]), .in_bias(b_s[RD]),
        .act_signed(src_signed), .act(act_rd_data), .wgt(w3), .out_valid(acc_valid), .out_acc(acc)
    );
    // the requantizer loads a pixel's result only (mv below: the step's last MAC at S11)
    zq_requant #(.N_PE(N_PE), .ACC_W(ACC), .OUT_W(OUT_W)) u_rq (
        .clk(clk), .in_valid(mv[RD + `ZQ_RTL_PIPE_MAC]), .acc(acc), .rnd(rq_rnd), .shr(rq_shr), .sh(rq_sh), .relu(relu), .lo(out_lo), .hi(out_hi), .y(y)
    );

    // ---- metadata: flags at S1, destination addresses over S1..S4, all carried to S16 ----------
    // The addresses are products of variable shifts (map sizes are powers of two); they are
    // formed in stages: S1 word/group numbers and the pixel's offset in its run, S2 the shifts,
    // S3 the sums, S4 the DDR byte address.
    localparam META_W = 3 + NV_W + WPG + GR_W;
    localparam ADR_W  = WPG * ROW_W + 32 + 16;
    // (packed shift registers and vectors: Yosys 0.23 mis-optimizes unpacked arrays of registers here)
    logic [LAT*META_W-1:0]    meta;   // S1..S16, S1 in the low bits
    logic [(LAT-3)*ADR_W-1:0] ameta;  // S4..S16, S4 in the low bits
    logic [LAT:1]      mv;            // a MAC step's pixel result at this stage (last step)
    wire [NV_W:0]      nwords0 = ({1'b0, s_nvalid} + (NV_W+1)'(N_CI - 1)) >> $clog2(N_CI);
    // per-layer terms (the layer constants hold still while its steps are in flight)
    logic [4:0]  lg2;                 // log2 of the map's pixels
    logic [19:0] lo_mask, run_units;  // a band's pixels - 1, and its pixels (one run per group)
    always_ff @(posedge clk) begin
        lg2       <= lg_out + lg_out;
        run_units <= 20'd1 << (lg_band + lg_out);
        lo_mask   <= (20'd1 << (lg_band + lg_out)) - 20'd1;
    end
    // the GAP row of the step's group (a sized wire: no width casts inside the concatenation below)
    wire  [9:0]        grow_full = 10'(dst_cg0) + s_g;
    wire  [GR_W-1:0]   grow1 = grow_full[GR_W-1:0];
    logic [WPG-1:0]    m_en;
    logic [WPG*10-1:0] cw1;           // per bank: the destination channel word of the step's group
    always_comb begin
        for (int b = 0; b < WPG; b++) begin
            logic [9:0] w;
            w  = 10'((b - 32'(dst_cw0)) & (WPG - 1));
            cw1[b*10 +: 10] = dst_cw0 + (s_g << LWPG) + w;
            m_en[b] = w < 10'(nwords0);
        end
    end
    // S1
    logic [WPG*10-1:0] a1_cw;
    logic [19:0] a1_pix, a1_off;
    logic [`ZQ_AXI_ADDR_BITS-1:0] a1_g;
    // S2
    logic [WPG*ROW_W-1:0] a2_rsh;
    logic [19:0] a2_pix;
    logic [`ZQ_AXI_ADDR_BITS-1:0] a2_gsh;
    logic [15:0] a2_left;
    // S3
    logic [WPG*ROW_W-1:0] a3_rows;
    logic [`ZQ_AXI_ADDR_BITS-1:0] a3_unit;
    logic [15:0] a3_left;
    always_ff @(posedge clk) begin
        a1_cw  <= cw1;
        a1_pix <= s_pix;
        a1_off <= s_pix & lo_mask;
        a1_g   <= 32'(dst_cg0) + 32'(s_g);
        for (int b = 0; b < WPG; b++) a2_rsh[b*ROW_W +: ROW_W] <= ROW_W'(a1_cw[b*10 +: 10] >> LWPG) << lg2;
        a2_pix  <= a1_pix;
        a2_gsh  <= a1_g << lg2;
        a2_left <= 16'(run_units - a1_off);
        for (int b = 0; b < WPG; b++)
            a3_rows[b*ROW_W +: ROW_W] <= dst_base + a2_rsh[b*ROW_W +: ROW_W] + ROW_W'(a2_pix);
        a3_unit <= a2_gsh + 32'(a2_pix);
        a3_left <= a2_left;
        ameta <= {ameta[(LAT-4)*ADR_W-1:0], a3_rows, dst_addr + (a3_unit << LPE), a3_left};
    end
    always_ff @(posedge clk) begin
        if (rst || abort) mv <= '0;
        else              mv <= {mv[LAT-1:1], s_valid && s_last};
        meta <= {meta[(LAT-1)*META_W-1:0], s_blk_last, s_first, s_last, s_nvalid, m_en, grow1};
    end

    wire                  m_blk_last, m_first, m_last;
    wire [NV_W-1:0]       m_nvalid;
    wire [WPG-1:0]        m_en15;
    wire [WPG*ROW_W-1:0]  m_rows15;
    wire [`ZQ_AXI_ADDR_BITS-1:0] m_addr;
    wire [15:0]           m_left;
    wire [GR_W-1:0]       m_grow;
    assign {m_blk_last, m_first, m_last, m_nvalid, m_en15, m_grow} = meta[LAT*META_W-1 -: META_W];
    assign {m_rows15, m_addr, m_left} = ameta[(LAT-3)*ADR_W-1 -: ADR_W];

    // lanes of channels >= the group's valid count are written as 0; the GAP's sums. Formed in
    // the write-back's branches below (with mv[LAT] as the registers' enable), so that a simulator
    // evaluates them only for a result.
    localparam LB = `ZQ_LANE_BITS;
    localparam GB = `ZQ_GAP_BITS;

    // ---- S17: write-back ----------------------------------------------------------------
    logic              gap_fresh;
    logic [N_PE*GB-1:0] psum;

    always_ff @(posedge clk) begin
        act_wr_en <= '0;
        ddr_valid <= 1'b0;
        gap_wr_en <= 1'b0;
        if (rst || abort || start) begin
            gap_fresh <= 1'b1;
        end else if (mv[LAT]) begin
            case (dst_kind)
                `ZQ_ROW_DST_KIND_W'(`ZQ_DST_ACT): begin
                    logic [N_PE*LB-1:0] lanes;
                    for (int p = 0; p < N_PE; p++)
                        lanes[p*LB +: LB] = (NV_W'(p) < m_nvalid) ? y[p*OUT_W +: LB] : '0;
                    act_wr_en   <= m_en15;
                    act_wr_row  <= m_rows15;
                    for (int b = 0; b < WPG; b++) begin
                        // bank b holds word w = (b - dst_cw0) mod WPG of the group
                        act_wr_data[b*N_CI*LB +: N_CI*LB] <= lanes[((b - 32'(dst_cw0)) & (WPG - 1))*N_CI*LB +: N_CI*LB];
                    end
                end
                `ZQ_ROW_DST_KIND_W'(`ZQ_DST_DDR): begin
                    ddr_valid <= 1'b1;
                    ddr_addr  <= m_addr;
                    ddr_left  <= m_left;
                    for (int p = 0; p < N_PE; p++)
                        ddr_data[p*LB +: LB] <= (NV_W'(p) < m_nvalid) ? y[p*OUT_W +: LB] : '0;
                end
                default: begin  // DST_GAP: sum the group's pixels, write the sums after its last
                    logic [N_PE*GB-1:0] psum_next;
                    for (int p = 0; p < N_PE; p++)
                        psum_next[p*GB +: GB] = (gap_fresh ? GB'(0) : $signed(psum[p*GB +: GB])) +
                                                ((NV_W'(p) < m_nvalid) ? GB'($signed(y[p*OUT_W +: OUT_W])) : GB'(0));
                    psum      <= psum_next;
                    gap_fresh <= m_blk_last;
                    if (m_blk_last) begin
                        gap_wr_en   <= 1'b1;
                        gap_wr_row  <= m_grow;
                        gap_wr_data <= psum_next;
                    end
                end
            endcase
        end
    end

    assign busy = lg_busy || (|v_s) || (|b_s) || (|mv) || acc_valid;

    wire unused_ok = &{1'b0, m_first, m_last};

endmodule

`default_nettype wire
