// zq_axi_wr: AXI4 burst writer. One command = one INCR burst of `cmd_beats`
// beats (1..16) at `cmd_addr` (inside a 4 KiB page); its data follows on the
// `in_*` beat stream (all bytes written), in command order.
//
// The address and data channels run apart (AXI A3.3.1: a master must not wait
// for AWREADY before it offers WVALID, and a slave may hold AWREADY until it sees
// WVALID). A command is taken when fewer than MAX_OUT bursts are owed their write
// response, no AW waits on the channel and the W queue (W_QUEUE deep) has room:
// its AW goes on the address channel and its beat count into the W queue. The W
// channel sends the queued bursts back to back (the first beat of the next burst
// in the cycle after the last beat of the one before), whether or not their AW
// handshake is done. `err` pulses for a response of SLVERR or DECERR; `idle` is
// high when no burst is issued, queued, in flight or awaiting its response.
// `w_busy`: an issued burst still has beats to send or its AW to hand over.
//
// Reset: the PS's port does not see the PL's reset. A burst whose AW and last W
// beat were both handed over gets its B response even after `rst`; those late
// responses are taken and dropped (a count that `rst` does not clear), and never
// taken for this epoch's bursts. A burst cut off by the reset is the slave's to drop.
`include "zq_spec.svh"
`default_nettype none

module zq_axi_wr #(
    parameter ADDR_W  = `ZQ_AXI_ADDR_BITS,
    parameter DATA_W  = `ZQ_AXI_DATA_BITS,
    parameter MAX_OUT = 8,
    parameter W_QUEUE = 4
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              cmd_valid,
    output logic             cmd_ready,
    input  wire [ADDR_W-1:0] cmd_addr,
    input  wire [4:0]        cmd_beats,
    input  wire              in_valid,
    output logic             in_ready,
    input  wire [DATA_W-1:0] in_data,
    output logic             m_awvalid,
    input  wire              m_awready,
    output logic [ADDR_W-1:0] m_awaddr,
    output logic [7:0]       m_awlen,
    output logic             m_wvalid,
    input  wire              m_wready,
    output logic [DATA_W-1:0] m_wdata,
    output logic             m_wlast,
    input  wire              m_bvalid,
    output logic             m_bready,
    input  wire [1:0]        m_bresp,
    output logic             err,
    output logic             idle,
    output logic             w_busy
);

    localparam OUT_W = $clog2(MAX_OUT + 2);
    localparam Q_W   = $clog2(W_QUEUE + 1);

    wire cmd_hs = cmd_valid && cmd_ready;
    wire aw_hs  = m_awvalid && m_awready;
    wire w_hs   = m_wvalid && m_wready;
    wire b_hs   = m_bvalid && m_bready;

    // ---- W queue: beat counts of the bursts taken, in order --------------------------------
    logic       wq_valid, wq_ready, wq_in_ready;
    logic [4:0] wq_beats;
    logic [Q_W-1:0] wq_count;
    zq_fifo #(.DATA_W(5), .DEPTH(W_QUEUE)) u_wq (
        .clk(clk), .rst(rst), .in_valid(cmd_hs), .in_ready(wq_in_ready), .in_data(cmd_beats),
        .out_valid(wq_valid), .out_ready(wq_ready), .out_data(wq_beats), .count(wq_count)
    );

    // ---- AW channel: one burst at a time -----------------------------------------------------
    logic [OUT_W-1:0] pending;   // bursts taken whose B has not come (this epoch)
    logic [OUT_W-1:0] b_late;        // B owed to bursts of before the last reset (rst keeps it)
    initial b_late = '0;             // (its value after configuration)
    always_ff @(posedge clk) begin
        if (rst) begin
            m_awvalid <= 1'b0;
        end else if (cmd_hs) begin
            m_awvalid <= 1'b1;
            m_awaddr  <= cmd_addr;
            m_awlen   <= 8'(cmd_beats - 5'd1);
        end else if (aw_hs) begin
            m_awvalid <= 1'b0;
        end
    end

    // ---- W channel: the queued bursts back to back, apart from AW --------------------------------
    logic [4:0] w_left;          // beats left in the burst being written (0: none)
    wire w_active = w_left != '0;
    wire w_load   = wq_valid && (!w_active || (w_left == 5'd1 && w_hs));
    assign wq_ready = w_load;
    assign m_wvalid = w_active && in_valid;
    assign in_ready = w_active && m_wready;
    assign m_wdata  = in_data;
    assign m_wlast  = w_left == 5'd1;
    always_ff @(posedge clk) begin
        if (rst)         w_left <= '0;
        else if (w_load) w_left <= wq_beats;
        else if (w_hs)   w_left <= w_left - 5'd1;
    end
    assign w_busy = w_active || wq_valid || m_awvalid;

    // ---- responses ------------------------------------------------------------------------------
    // A burst is complete at the slave once its AW and its last W beat are both handed over
    // (in either order; bursts complete in order, at most one a cycle). Its B is owed from then.
    // A last W beat is counted a cycle after its handshake (wl_q: the W data comes from the
    // output FIFO, a long path), so a burst's B may come in the cycle it is counted (`done`).
    logic             wl_q;            // a last W beat was handed over in the cycle before
    logic             wl_late_q;       // ... in a reset cycle, completing a burst of before the reset
    initial wl_late_q = 1'b0;          // (b_late counts it: its value after configuration)
    logic [OUT_W-1:0] aw_ahead;        // AW handshakes whose burst's last W beat has not been counted
    logic [OUT_W-1:0] wl_ahead;        // last W beats counted whose burst's AW handshake has not happened
    logic [OUT_W-1:0] b_owed;          // complete bursts of this epoch awaiting B
    wire [OUT_W-1:0] aw_n = aw_ahead + OUT_W'(aw_hs);
    wire [OUT_W-1:0] wl_n = wl_ahead + OUT_W'(wl_q);
    wire [OUT_W-1:0] late_n = b_late + OUT_W'(wl_late_q);
    assign cmd_ready = !m_awvalid && (32'(pending) + 32'(late_n) < MAX_OUT) && (32'(wq_count) < W_QUEUE);
    wire             done = (aw_n != '0) && (wl_n != '0);
    wire             b_old  = b_hs && (late_n != '0);                      // a late response: dropped
    wire             b_live = b_hs && (late_n == '0) && (b_owed != '0 || done);   // (owed to nothing: dropped)
    always_ff @(posedge clk) begin
        wl_q      <= !rst && w_hs && m_wlast;
        // in a reset cycle the burst of a last W beat is complete if its AW went before (an AW
        // left over once `done` has taken its pair): its B is owed to the old epoch
        wl_late_q <= rst && w_hs && m_wlast && (aw_n - OUT_W'(done) != '0);
        if (rst) begin
            b_late   <= late_n - OUT_W'(b_old) + b_owed + OUT_W'(done) - OUT_W'(b_live);
            aw_ahead <= '0;
            wl_ahead <= '0;
            b_owed   <= '0;
            pending  <= '0;
        end else begin
            b_late   <= late_n - OUT_W'(b_old);
            aw_ahead <= aw_n - OUT_W'(done);
            wl_ahead <= wl_n - OUT_W'(done);
            b_owed   <= b_owed + OUT_W'(done) - OUT_W'(b_live);
            pending  <= pending + OUT_W'(cmd_hs) - OUT_W'(b_live);
        end
    end
    assign m_bready = 1'b1;
    always_ff @(posedge clk) err <= !rst && b_live && m_bresp[1];

    assign idle = (pending == '0) && !w_busy;

    wire unused_ok = &{1'b0, wq_in_ready};

endmodule

`default_nettype wire
