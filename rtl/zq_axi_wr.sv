// zq_axi_wr: AXI4 burst writer. One command = one INCR burst of `cmd_beats`
// beats (1..16) at `cmd_addr` (inside a 4 KiB page); its data follows on the
// `in_*` beat stream (all bytes written). At most MAX_OUT bursts await their
// write response; `err` pulses for a response of SLVERR or DECERR; `idle` is
// high when no burst is in flight or awaiting its response.
`default_nettype none

module zq_axi_wr #(
    parameter ADDR_W  = 32,
    parameter DATA_W  = 64,
    parameter MAX_OUT = 8
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
    output logic             idle
);

    localparam OUT_W = $clog2(MAX_OUT + 2);

    logic [OUT_W-1:0] pending;   // bursts whose AW was issued and whose B has not come
    logic [4:0]       w_left;    // beats left in the burst being written (0: none)
    logic [4:0]       w_next;    // beats of the next burst (AW issued, data not started)
    logic             w_queued;

    wire aw_hs = m_awvalid && m_awready;
    wire w_hs  = m_wvalid && m_wready;
    wire b_hs  = m_bvalid && m_bready;

    // one command at a time: its AW is issued, then its W beats stream out
    assign cmd_ready = !m_awvalid && !w_queued && (pending < OUT_W'(MAX_OUT));
    always_ff @(posedge clk) begin
        if (rst) begin
            m_awvalid <= 1'b0;
            w_queued  <= 1'b0;
        end else begin
            if (cmd_valid && cmd_ready) begin
                m_awvalid <= 1'b1;
                m_awaddr  <= cmd_addr;
                m_awlen   <= 8'(cmd_beats - 5'd1);
                w_queued  <= 1'b1;
                w_next    <= cmd_beats;
            end else if (aw_hs) begin
                m_awvalid <= 1'b0;
            end
            if (w_queued && w_left == '0 && !m_awvalid) begin
                w_queued <= 1'b0;
            end
        end
    end

    // W channel: beats of the current burst, from the input stream
    wire w_active = w_left != '0;
    assign m_wvalid = w_active && in_valid;
    assign in_ready = w_active && m_wready;
    assign m_wdata  = in_data;
    assign m_wlast  = w_left == 5'd1;
    always_ff @(posedge clk) begin
        if (rst) begin
            w_left <= '0;
        end else if (!w_active && w_queued && !m_awvalid) begin
            w_left <= w_next;
        end else if (w_hs) begin
            w_left <= w_left - 5'd1;
        end
    end

    always_ff @(posedge clk) begin
        if (rst) pending <= '0;
        else     pending <= pending + OUT_W'(aw_hs) - OUT_W'(b_hs);
    end
    assign m_bready = 1'b1;
    always_ff @(posedge clk) err <= !rst && b_hs && m_bresp[1];

    assign idle = (pending == '0) && !m_awvalid && !w_queued && !w_active;

endmodule

`default_nettype wire
