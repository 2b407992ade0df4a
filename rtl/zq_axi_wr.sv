// zq_axi_wr: AXI4 burst writer. One command = one INCR burst of `cmd_beats`
// beats (1..16) at `cmd_addr` (inside a 4 KiB page); its data follows on the
// `in_*` beat stream (all bytes written), in command order.
//
// The address and data channels run apart: a command's AW is issued as soon as
// fewer than MAX_OUT bursts await their write response and the queue of bursts
// whose data is still to go (W_QUEUE deep) has room; the W channel sends the
// bursts of that queue back to back (the first beat of the next burst in the
// cycle after the last beat of the one before). A burst's W beats never start
// before its AW handshake. `err` pulses for a response of SLVERR or DECERR;
// `idle` is high when no burst is issued, queued, in flight or awaiting its
// response. `w_busy`: an issued burst still has beats to send.
`default_nettype none

module zq_axi_wr #(
    parameter ADDR_W  = 32,
    parameter DATA_W  = 64,
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

    logic [OUT_W-1:0] pending;   // bursts whose AW was issued and whose B has not come
    logic [4:0]       aw_beats;  // beats of the burst on the AW channel

    wire aw_hs = m_awvalid && m_awready;
    wire w_hs  = m_wvalid && m_wready;
    wire b_hs  = m_bvalid && m_bready;

    // ---- W queue: beat counts of bursts whose AW handshake is done ------------------------
    logic       wq_valid, wq_ready, wq_in_ready;
    logic [4:0] wq_beats;
    logic [$clog2(W_QUEUE + 1)-1:0] wq_count;
    zq_fifo #(.DATA_W(5), .DEPTH(W_QUEUE)) u_wq (
        .clk(clk), .rst(rst), .in_valid(aw_hs), .in_ready(wq_in_ready), .in_data(aw_beats),
        .out_valid(wq_valid), .out_ready(wq_ready), .out_data(wq_beats), .count(wq_count)
    );

    // ---- AW channel ---------------------------------------------------------------------------
    // one burst on AW at a time; room for it in the W queue; fewer than MAX_OUT responses owed
    assign cmd_ready = !m_awvalid && (pending < OUT_W'(MAX_OUT)) && (32'(wq_count) < W_QUEUE);
    always_ff @(posedge clk) begin
        if (rst) begin
            m_awvalid <= 1'b0;
        end else if (cmd_valid && cmd_ready) begin
            m_awvalid <= 1'b1;
            m_awaddr  <= cmd_addr;
            m_awlen   <= 8'(cmd_beats - 5'd1);
            aw_beats  <= cmd_beats;
        end else if (aw_hs) begin
            m_awvalid <= 1'b0;
        end
    end

    // ---- W channel: the queued bursts back to back ----------------------------------------
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

    // ---- responses ----------------------------------------------------------------------------
    always_ff @(posedge clk) begin
        if (rst) pending <= '0;
        else     pending <= pending + OUT_W'(aw_hs) - OUT_W'(b_hs);
    end
    assign m_bready = 1'b1;
    always_ff @(posedge clk) err <= !rst && b_hs && m_bresp[1];

    assign idle = (pending == '0) && !w_busy;

    wire unused_ok = &{1'b0, wq_in_ready};

endmodule

`default_nettype wire
