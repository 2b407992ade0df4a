// zq_axis_loader: accepts one input frame from AXI4-Stream (32-bit beats, 4
// pixels per beat) into the frame store and checks its length.
//
//   good frame : TLAST on beat IN_BEATS-1
//   short frame: TLAST on an earlier beat         -> err_short, stop there
//   long frame : no TLAST on beat IN_BEATS-1      -> err_long, keep accepting and
//                discard beats up to and including the next TLAST
// `done` pulses (with the error flags) in the cycle after the frame's last
// accepted beat; `first` pulses in the cycle of the first beat's handshake.
`default_nettype none

module zq_axis_loader #(
    parameter IN_BEATS = 256,
    parameter BEAT_W   = (IN_BEATS > 1) ? $clog2(IN_BEATS) : 1
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              start,
    input  wire [31:0]       s_axis_tdata,
    input  wire              s_axis_tvalid,
    output logic             s_axis_tready,
    input  wire              s_axis_tlast,

    output logic             fr_we,
    output logic [BEAT_W-1:0] fr_addr,
    output logic [31:0]      fr_data,

    output logic             first,
    output logic             done,
    output logic             err_short,
    output logic             err_long
);

    localparam [1:0] L_IDLE = 2'd0, L_RECV = 2'd1, L_DRAIN = 2'd2;
    logic [1:0]        state;
    logic [BEAT_W-1:0] idx;

    wire hs = s_axis_tvalid && s_axis_tready;
    assign s_axis_tready = (state == L_RECV) || (state == L_DRAIN);
    assign first   = hs && (state == L_RECV) && (idx == '0);
    assign fr_we   = hs && (state == L_RECV);
    assign fr_addr = idx;
    assign fr_data = s_axis_tdata;

    always_ff @(posedge clk) begin
        done <= 1'b0;
        if (rst) begin
            state     <= L_IDLE;
            idx       <= '0;
            err_short <= 1'b0;
            err_long  <= 1'b0;
        end else begin
            case (state)
                L_IDLE: if (start) begin
                    state     <= L_RECV;
                    idx       <= '0;
                    err_short <= 1'b0;
                    err_long  <= 1'b0;
                end
                L_RECV: if (hs) begin
                    idx <= idx + 1'b1;
                    if (idx == BEAT_W'(IN_BEATS - 1)) begin
                        if (s_axis_tlast) begin
                            state <= L_IDLE;
                            done  <= 1'b1;
                        end else begin
                            state    <= L_DRAIN;
                            err_long <= 1'b1;
                        end
                    end else if (s_axis_tlast) begin
                        state     <= L_IDLE;
                        done      <= 1'b1;
                        err_short <= 1'b1;
                    end
                end
                L_DRAIN: if (hs && s_axis_tlast) begin
                    state <= L_IDLE;
                    done  <= 1'b1;
                end
                default: state <= L_IDLE;
            endcase
        end
    end

endmodule

`default_nettype wire
