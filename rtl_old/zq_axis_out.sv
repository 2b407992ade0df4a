// zq_axis_out: the output frame on AXI4-Stream, one 32-bit beat per class,
// TLAST on beat N_CLASSES-1. Beat c carries sel=c's logit, or ERR_VALUE
// (sign-extended) for every beat of an error frame. `done` pulses in the cycle
// of the last beat's handshake.
`default_nettype none

module zq_axis_out #(
    parameter N_CLASSES = 10,
    parameter ERR_VALUE = -32768,
    parameter CLS_W     = (N_CLASSES > 1) ? $clog2(N_CLASSES) : 1
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              start,      // begin a frame
    input  wire              err,        // with start: an error frame
    output logic [CLS_W-1:0] sel,        // class whose logit is presented on `logit`
    input  wire  [31:0]      logit,
    output logic [31:0]      m_axis_tdata,
    output logic             m_axis_tvalid,
    input  wire              m_axis_tready,
    output logic             m_axis_tlast,
    output logic             done
);

    logic active, err_q;
    logic [CLS_W:0] idx;     // next beat to load

    assign sel = CLS_W'(idx);
    wire load = active && (!m_axis_tvalid || m_axis_tready);

    always_ff @(posedge clk) begin
        if (rst) begin
            active        <= 1'b0;
            m_axis_tvalid <= 1'b0;
            m_axis_tlast  <= 1'b0;
            idx           <= '0;
            err_q         <= 1'b0;
        end else begin
            if (m_axis_tvalid && m_axis_tready) m_axis_tvalid <= 1'b0;
            if (start) begin
                active <= 1'b1;
                idx    <= '0;
                err_q  <= err;
            end else if (load) begin
                m_axis_tvalid <= 1'b1;
                m_axis_tdata  <= err_q ? 32'(ERR_VALUE) : logit;
                m_axis_tlast  <= (idx == (CLS_W+1)'(N_CLASSES - 1));
                idx           <= idx + 1'b1;
                if (idx == (CLS_W+1)'(N_CLASSES - 1)) active <= 1'b0;
            end
        end
    end

    assign done = m_axis_tvalid && m_axis_tready && m_axis_tlast;

endmodule

`default_nettype wire
