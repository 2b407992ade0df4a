// zq_axis_out: the output frame on AXI4-Stream, one 32-bit beat per class,
// TLAST on beat N_CLASSES-1. Beat c carries class c's logit (read through
// sel / logit with a latency of LAT cycles), or ERR_VALUE sign-extended for
// every beat of an error frame. `done` pulses with the last beat's handshake.
`include "zq_spec.svh"
`default_nettype none

module zq_axis_out #(
    parameter N_CLASSES = 10,
    parameter ERR_VALUE = `ZQ_ERROR_LOGIT,
    parameter LAT       = 2,
    parameter CLS_W     = (N_CLASSES > 1) ? $clog2(N_CLASSES) : 1
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              start,      // begin a frame
    input  wire              err,        // with start: an error frame
    output logic [CLS_W-1:0] sel,
    input  wire  [31:0]      logit,
    output logic [31:0]      m_axis_tdata,
    output logic             m_axis_tvalid,
    input  wire              m_axis_tready,
    output logic             m_axis_tlast,
    output logic             done
);

    // reads run ahead of the beats through a small queue (LAT cycles of latency)
    localparam QD = 4;
    logic              active, err_q;
    logic [CLS_W:0]    req;       // next class to read
    logic [LAT:1]      rv;
    logic [CLS_W:0]    inflight;
    logic              q_valid, q_ready;
    logic [32:0]       q_data;
    logic [2:0]        q_count;

    wire issue = active && (req < (CLS_W+1)'(N_CLASSES)) && (32'(q_count) + 32'(inflight) < QD);
    assign sel = CLS_W'(req);

    always_ff @(posedge clk) begin
        if (rst || start) begin
            active <= start && !rst;
            err_q  <= err;
            req    <= '0;
            rv     <= '0;
        end else begin
            rv <= {rv[LAT-1:1], issue};
            if (issue) req <= req + 1'b1;
        end
    end
    always_comb begin
        inflight = '0;
        for (int i = 1; i <= LAT; i++) inflight = inflight + (CLS_W+1)'(rv[i]);
    end

    logic [CLS_W:0] nout;
    zq_fifo #(.DATA_W(33), .DEPTH(QD)) u_q (
        .clk(clk), .rst(rst || start), .in_valid(rv[LAT]), .in_ready(),
        .in_data({1'b0, err_q ? 32'(ERR_VALUE) : logit}), .out_valid(q_valid), .out_ready(q_ready),
        .out_data(q_data), .count(q_count)
    );

    assign q_ready = !m_axis_tvalid || m_axis_tready;
    always_ff @(posedge clk) begin
        if (rst || start) begin
            m_axis_tvalid <= 1'b0;
            m_axis_tlast  <= 1'b0;
            nout <= '0;
        end else if (q_ready) begin
            m_axis_tvalid <= q_valid;
            if (q_valid) begin
                m_axis_tdata <= q_data[31:0];
                m_axis_tlast <= nout == (CLS_W+1)'(N_CLASSES - 1);
                nout <= nout + 1'b1;
            end
        end
    end

    assign done = m_axis_tvalid && m_axis_tready && m_axis_tlast;
    wire unused_ok = q_data[32];

endmodule

`default_nettype wire
