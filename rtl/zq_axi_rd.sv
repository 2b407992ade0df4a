// zq_axi_rd: AXI4 burst reader. One command = one INCR burst of `cmd_beats`
// beats (1..16) of DATA_W bits at `cmd_addr` (the caller keeps bursts inside a
// 4 KiB page). At most MAX_OUT bursts are outstanding; responses come back in
// order (one ID) and are handed on beat by beat through a register slice,
// each with `out_last` (last beat of its burst) and `out_err` (RRESP was
// SLVERR or DECERR). `idle` is high when no burst is outstanding.
//
// Reset: the PS's port does not see the PL's reset and answers the bursts in
// flight. At `rst` they become late bursts (a count that `rst` does not clear);
// their beats, which come first (one ID, in order), are taken and dropped, never
// handed on, and count against MAX_OUT until their last beat. A beat that no
// burst is owed is dropped too.
`default_nettype none

module zq_axi_rd #(
    parameter ADDR_W  = 32,
    parameter DATA_W  = 64,
    parameter MAX_OUT = 8
) (
    input  wire              clk,
    input  wire              rst,
    // commands
    input  wire              cmd_valid,
    output logic             cmd_ready,
    input  wire [ADDR_W-1:0] cmd_addr,
    input  wire [4:0]        cmd_beats,
    // AXI4 read address / data channels
    output logic             m_arvalid,
    input  wire              m_arready,
    output logic [ADDR_W-1:0] m_araddr,
    output logic [7:0]       m_arlen,
    input  wire              m_rvalid,
    output logic             m_rready,
    input  wire [DATA_W-1:0] m_rdata,
    input  wire              m_rlast,
    input  wire [1:0]        m_rresp,
    // data out
    output logic             out_valid,
    input  wire              out_ready,
    output logic [DATA_W-1:0] out_data,
    output logic             out_last,
    output logic             out_err,
    output logic             idle
);

    localparam OUT_W = $clog2(MAX_OUT + 1);

    // parameter checks, at elaboration
    if (DATA_W != 64 && DATA_W != 32 && DATA_W != 128) begin : g_param_check0
        $error("zq_axi_rd: DATA_W=%0d", DATA_W);
    end

    logic [OUT_W-1:0] outstanding;      // this epoch's bursts, AR handshake .. last beat
    logic [OUT_W-1:0] late;             // bursts of before the last reset still answering (rst keeps it)
    initial late = '0;                  // (its value after configuration)
    wire ar_hs = m_arvalid && m_arready;
    wire r_hs  = m_rvalid && m_rready;
    wire fwd   = (late == '0) && (outstanding != '0);   // the beats are this epoch's: handed on
    wire r_old = r_hs && m_rlast && (late != '0);
    wire r_end = r_hs && m_rlast && fwd;

    // address channel: one registered request
    assign cmd_ready = !m_arvalid && (32'(outstanding) + 32'(late) < MAX_OUT);
    always_ff @(posedge clk) begin
        if (rst) begin
            m_arvalid <= 1'b0;
        end else if (cmd_valid && cmd_ready) begin
            m_arvalid <= 1'b1;
            m_araddr  <= cmd_addr;
            m_arlen   <= 8'(cmd_beats - 5'd1);
        end else if (ar_hs) begin
            m_arvalid <= 1'b0;
        end
    end

    always_ff @(posedge clk) begin
        if (rst) begin
            late        <= late - OUT_W'(r_old) + outstanding + OUT_W'(ar_hs) - OUT_W'(r_end);
            outstanding <= '0;
        end else begin
            late        <= late - OUT_W'(r_old);
            outstanding <= outstanding + OUT_W'(ar_hs) - OUT_W'(r_end);
        end
    end

    // data channel: register slice (late beats, and beats owed to nothing, are taken and dropped)
    assign m_rready = !fwd || !out_valid || out_ready;
    always_ff @(posedge clk) begin
        if (rst) begin
            out_valid <= 1'b0;
        end else if (fwd && (!out_valid || out_ready)) begin
            out_valid <= m_rvalid;
            out_data  <= m_rdata;
            out_last  <= m_rlast;
            out_err   <= m_rresp[1];
        end else if (out_ready) begin
            out_valid <= 1'b0;
        end
    end

    assign idle = (outstanding == '0) && !m_arvalid;

endmodule

`default_nettype wire
