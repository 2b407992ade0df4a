// zq_out_paths: results bound for DDR over one or two activation paths (the row field dst_path,
// a mask of PATH_1 and PATH_2).
//
// Path 1 writes through m_axi_act (`m0_*`), path 2 through the write channels of m_axi_wts
// (`m1_*`), each with its own zq_out_dma (data FIFO, burst former, writer). One path: every unit
// goes to its DMA. Both: a unit goes to path 1 when its address lies in an even 128-byte line,
// to path 2 in an odd one. Bursts never cross a line, so each DMA forms whole bursts of its lines
// (the unit's `in_left` still bounds a burst by its run) and the two masters write at once.
// `full` while either FIFO is short of room; `idle` when both are (a layer that reads DDR waits
// for both write-response streams: rd_wait). PATHS = 1 builds path 1 alone (the path-2 master's
// outputs are tied off).
`include "zq_spec.svh"
`default_nettype none

module zq_out_paths #(
    parameter N_PE    = 16,
    parameter PATHS   = 2,
    parameter MAX_OUT = 8,
    parameter AW      = `ZQ_AXI_ADDR_BITS,
    parameter DW      = `ZQ_AXI_DATA_BITS
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              abort,
    input  wire [`ZQ_ROW_DST_PATH_W-1:0] paths,   // the running layer's (held while it runs)
    input  wire              in_valid,
    input  wire [AW-1:0]     in_addr,
    input  wire [15:0]       in_left,
    input  wire [N_PE*8-1:0] in_data,
    output logic             full,
    // path 1: m_axi_act writes
    output logic             m0_awvalid,
    input  wire              m0_awready,
    output logic [AW-1:0]    m0_awaddr,
    output logic [7:0]       m0_awlen,
    output logic             m0_wvalid,
    input  wire              m0_wready,
    output logic [DW-1:0]    m0_wdata,
    output logic             m0_wlast,
    input  wire              m0_bvalid,
    output logic             m0_bready,
    input  wire [1:0]        m0_bresp,
    // path 2: m_axi_wts writes
    output logic             m1_awvalid,
    input  wire              m1_awready,
    output logic [AW-1:0]    m1_awaddr,
    output logic [7:0]       m1_awlen,
    output logic             m1_wvalid,
    input  wire              m1_wready,
    output logic [DW-1:0]    m1_wdata,
    output logic             m1_wlast,
    input  wire              m1_bvalid,
    output logic             m1_bready,
    input  wire [1:0]        m1_bresp,
    output logic             err,
    output logic             idle,
    output logic [31:0]      bytes_written
);

    // parameter checks, at elaboration
    if (PATHS != 1 && PATHS != 2) begin : g_param_check0
        $error("zq_out_paths: PATHS=%0d (1 or 2)", PATHS);
    end

    localparam LINE_W = $clog2(`ZQ_AXI_LINE_BYTES);
    localparam [1:0] P2 = 2'(`ZQ_PATH_2), BOTH = 2'(`ZQ_PATH_BOTH);

    // the path of each unit: the layer's one path, or the parity of its 128-byte line
    wire to2 = (PATHS == 2) && ((paths == BOTH) ? in_addr[LINE_W] : (paths == P2));

    logic        full0, full1, err0, err1, idle0, idle1;
    logic [31:0] bytes0, bytes1;

    zq_out_dma #(.N_PE(N_PE), .MAX_OUT(MAX_OUT), .AW(AW), .DW(DW)) u_out0 (
        .clk(clk), .rst(rst), .abort(abort), .in_valid(in_valid && !to2), .in_addr(in_addr), .in_left(in_left),
        .in_data(in_data), .full(full0),
        .m_awvalid(m0_awvalid), .m_awready(m0_awready), .m_awaddr(m0_awaddr), .m_awlen(m0_awlen),
        .m_wvalid(m0_wvalid), .m_wready(m0_wready), .m_wdata(m0_wdata), .m_wlast(m0_wlast),
        .m_bvalid(m0_bvalid), .m_bready(m0_bready), .m_bresp(m0_bresp), .err(err0), .idle(idle0),
        .bytes_written(bytes0)
    );

    generate
        if (PATHS == 2) begin : g_path2
            zq_out_dma #(.N_PE(N_PE), .MAX_OUT(MAX_OUT), .AW(AW), .DW(DW)) u_out1 (
                .clk(clk), .rst(rst), .abort(abort), .in_valid(in_valid && to2), .in_addr(in_addr),
                .in_left(in_left), .in_data(in_data), .full(full1),
                .m_awvalid(m1_awvalid), .m_awready(m1_awready), .m_awaddr(m1_awaddr), .m_awlen(m1_awlen),
                .m_wvalid(m1_wvalid), .m_wready(m1_wready), .m_wdata(m1_wdata), .m_wlast(m1_wlast),
                .m_bvalid(m1_bvalid), .m_bready(m1_bready), .m_bresp(m1_bresp), .err(err1), .idle(idle1),
                .bytes_written(bytes1)
            );
        end else begin : g_path1
            assign full1 = 1'b0;  assign err1 = 1'b0;  assign idle1 = 1'b1;  assign bytes1 = '0;
            assign m1_awvalid = 1'b0;  assign m1_awaddr = '0;  assign m1_awlen = '0;
            assign m1_wvalid = 1'b0;   assign m1_wdata = '0;   assign m1_wlast = 1'b0;  assign m1_bready = 1'b1;
            wire unused_ok = &{1'b0, m1_awready, m1_wready, m1_bvalid, m1_bresp};
        end
    endgenerate

    assign full = full0 || full1;
    assign idle = idle0 && idle1;
    assign err  = err0 || err1;
    always_ff @(posedge clk) begin
        if (rst) bytes_written <= '0;
        else     bytes_written <= bytes0 + bytes1;
    end

endmodule

`default_nettype wire
