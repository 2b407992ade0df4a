// zq_fill_paths: the input ring of a layer that reads a DDR tensor, over one or two activation
// paths (the row field src_path, a mask of PATH_1 and PATH_2).
//
// Path 1 reads through m_axi_act (`m0_*`), path 2 through m_axi_act2 (`m1_*`), each with its own
// zq_fill_dma. One path: that DMA reads every row. Both: the path-1 DMA reads the even input rows,
// the path-2 DMA the odd ones, each into its own ring slots, so the two masters stream at once.
// Port B of the activation RAM takes one unit a cycle: with both paths it belongs to them in
// alternate cycles (a registered slot, so the data multiplexer's select is a flip-flop; a cycle
// in which the results take the RAM's write port does not count), and a DMA whose unit waits
// for its slot goes on assembling the next one. With units of two beats (N_PE = 16) the two
// paths fill port B: the results' writes then cost the fills their cycles. `rows_avail` counts the
// rows written in full from row 0: with both paths min(2 r0, 2 r1 + 1) of the DMAs' counts
// (registered: one cycle later than a single path's), else the one DMA's count (the DMA
// not enabled in a layer counts 0). PATHS = 1 builds path 1 alone (the path-2
// master's outputs are tied off).
`include "zq_spec.svh"
`default_nettype none

module zq_fill_paths #(
    parameter N_PE    = 16,
    parameter ROW_W   = 12,
    parameter PATHS   = 2,
    parameter MAX_OUT = 8,
    parameter AW      = `ZQ_AXI_ADDR_BITS,
    parameter DW      = `ZQ_AXI_DATA_BITS
) (
    input  wire               clk,
    input  wire               rst,
    input  wire               start,
    input  wire [`ZQ_ROW_SRC_PATH_W-1:0]    paths,    // with start
    input  wire               abort,
    input  wire [AW-1:0]      base,
    input  wire [`ZQ_ROW_LG_IN_W-1:0]       lg_w,
    input  wire [`ZQ_ROW_SRC_CGRPS_W-1:0]   cgrps,
    input  wire [ROW_W-1:0]   ring,
    input  wire [`ZQ_ROW_SRC_LG_ROWS_W-1:0] lg_rows,
    input  wire [10:0]        release_rows,
    output logic [10:0]       rows_avail,
    output logic              busy,
    output logic              b_valid,
    input  wire               b_ready,
    output logic [ROW_W-1:0]  b_row,
    output logic [N_PE*8-1:0] b_data,
    // path 1: m_axi_act reads
    output logic              m0_arvalid,
    input  wire               m0_arready,
    output logic [AW-1:0]     m0_araddr,
    output logic [7:0]        m0_arlen,
    input  wire               m0_rvalid,
    output logic              m0_rready,
    input  wire [DW-1:0]      m0_rdata,
    input  wire               m0_rlast,
    input  wire [1:0]         m0_rresp,
    // path 2: m_axi_act2 reads
    output logic              m1_arvalid,
    input  wire               m1_arready,
    output logic [AW-1:0]     m1_araddr,
    output logic [7:0]        m1_arlen,
    input  wire               m1_rvalid,
    output logic              m1_rready,
    input  wire [DW-1:0]      m1_rdata,
    input  wire               m1_rlast,
    input  wire [1:0]         m1_rresp,
    output logic              err,
    output logic [31:0]       bytes_read
);

    // parameter checks, at elaboration
    if (PATHS != 1 && PATHS != 2) begin : g_param_check0
        $error("zq_fill_paths: PATHS=%0d (1 or 2)", PATHS);
    end

    localparam [1:0] P1 = 2'(`ZQ_PATH_1), P2 = 2'(`ZQ_PATH_2), BOTH = 2'(`ZQ_PATH_BOTH);

    logic [1:0] c_paths;
    always_ff @(posedge clk) begin
        if (rst)        c_paths <= P1;
        else if (start) c_paths <= (PATHS == 2) ? paths : P1;
    end
    wire both = c_paths == BOTH;

    logic [10:0]       rows0, rows1;
    logic              busy0, busy1, bv0, bv1, br0, br1, err0, err1;
    logic [ROW_W-1:0]  row0, row1;
    logic [N_PE*8-1:0] data0, data1;
    logic [31:0]       bytes0, bytes1;

    zq_fill_dma #(.N_PE(N_PE), .ROW_W(ROW_W), .MAX_OUT(MAX_OUT), .AW(AW), .DW(DW)) u_fill0 (
        .clk(clk), .rst(rst), .start(start), .en(PATHS == 1 || paths[0]), .step2(PATHS == 2 && paths == BOTH),
        .phase(1'b0), .abort(abort), .base(base), .lg_w(lg_w), .cgrps(cgrps), .ring(ring), .lg_rows(lg_rows),
        .release_rows(release_rows), .rows_avail(rows0), .busy(busy0),
        .b_valid(bv0), .b_ready(br0), .b_row(row0), .b_data(data0),
        .m_arvalid(m0_arvalid), .m_arready(m0_arready), .m_araddr(m0_araddr), .m_arlen(m0_arlen),
        .m_rvalid(m0_rvalid), .m_rready(m0_rready), .m_rdata(m0_rdata), .m_rlast(m0_rlast), .m_rresp(m0_rresp),
        .err(err0), .bytes_read(bytes0)
    );

    generate
        if (PATHS == 2) begin : g_path2
            zq_fill_dma #(.N_PE(N_PE), .ROW_W(ROW_W), .MAX_OUT(MAX_OUT), .AW(AW), .DW(DW)) u_fill1 (
                .clk(clk), .rst(rst), .start(start), .en(paths[1]), .step2(paths == BOTH), .phase(paths == BOTH),
                .abort(abort), .base(base), .lg_w(lg_w), .cgrps(cgrps), .ring(ring), .lg_rows(lg_rows),
                .release_rows(release_rows), .rows_avail(rows1), .busy(busy1),
                .b_valid(bv1), .b_ready(br1), .b_row(row1), .b_data(data1),
                .m_arvalid(m1_arvalid), .m_arready(m1_arready), .m_araddr(m1_araddr), .m_arlen(m1_arlen),
                .m_rvalid(m1_rvalid), .m_rready(m1_rready), .m_rdata(m1_rdata), .m_rlast(m1_rlast),
                .m_rresp(m1_rresp), .err(err1), .bytes_read(bytes1)
            );
        end else begin : g_path1
            assign rows1 = '0;  assign busy1 = 1'b0;  assign bv1 = 1'b0;  assign row1 = '0;  assign data1 = '0;
            assign err1 = 1'b0; assign bytes1 = '0;
            assign m1_arvalid = 1'b0;  assign m1_araddr = '0;  assign m1_arlen = '0;  assign m1_rready = 1'b1;
            wire unused_ok = &{1'b0, m1_arready, m1_rvalid, m1_rdata, m1_rlast, m1_rresp, br1};
        end
    endgenerate

    // port B: the one path's, or each path's in alternate cycles in which it can write (a cycle
    // the results' port A takes from port B does not count, so each path loses at most one cycle
    // to it)
    logic slot;
    always_ff @(posedge clk) begin
        if (rst || start)  slot <= 1'b0;
        else if (b_ready)  slot <= !slot;
    end
    logic sel;                              // port B is path 2's this cycle
    always_comb sel = both ? slot : (c_paths == P2);
    assign b_valid = sel ? bv1 : bv0;
    assign b_row   = sel ? row1 : row0;
    assign b_data  = sel ? data1 : data0;
    assign br0 = b_ready && !sel;
    assign br1 = b_ready && sel;

    // rows written in full from row 0
    logic [10:0] rows_both;
    always_ff @(posedge clk) begin
        if (rst || start) rows_both <= '0;
        else              rows_both <= ({rows0, 1'b0} < {rows1, 1'b1}) ? 11'({rows0, 1'b0}) : 11'({rows1, 1'b1});
    end
    assign rows_avail = both ? rows_both : (rows0 | rows1);

    assign busy = busy0 || busy1;
    always_ff @(posedge clk) begin
        err <= err0 || err1;
        if (rst) bytes_read <= '0;
        else     bytes_read <= bytes0 + bytes1;
    end

endmodule

`default_nettype wire
