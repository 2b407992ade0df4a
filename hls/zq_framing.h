// The input frame on s_axis_in: framing state, one beat at a time, and the rest of a frame.
//
// Framing (spec STATUS_BITS, rtl/zq_stem.sv): 4 bytes per beat, TLAST on beat IN_BYTES/4 - 1;
// TLAST earlier = short frame (the frame ends there); no TLAST on that beat = long frame
// (beats are dropped up to the next TLAST; every IN_BYTES/4 dropped beats count as one more
// frame owed an error frame, `drain_frames`). A frame with an error is answered with
// 1 + drain_frames error frames.
#ifndef ZQ_FRAMING_H
#define ZQ_FRAMING_H

#ifndef __SYNTHESIS__
#include <stdio.h>
#endif

#include <hls_stream.h>

#include "zq_axis.h"
#include "zq_count.h"
#include "zq_stream.h"
#include "zq_types.h"

namespace zq {

constexpr int IN_BUF_BYTES = P::IN_CH + 3;  // bytes not yet in a pixel: at most IN_CH - 1 plus one beat

struct InState {
    int nbeat;                      // beats taken of this frame (<= IN_BEATS)
    ap_uint<8 * IN_BUF_BYTES> buf;  // bytes taken and not yet assembled into pixels (byte 0 first)
    int bcnt;                       // bytes in buf
    bool done;                      // the frame's beats are all taken (its end or an early TLAST)
    bool err_short;
    bool err_long;                  // no TLAST on the last beat: drain to the next TLAST (in_finish)
    ap_uint<16> drain_frames;       // whole frames of beats dropped after a long frame (16 bits, as the RTL)
};

// What the stem tells the output process at the end of a frame.
struct InStatus {
    ap_uint<8> flags;               // STATUS_SHORT_FRAME | STATUS_LONG_FRAME
    ap_uint<16> drain_frames;
};

inline void in_start(InState& st) {
#pragma HLS INLINE
    st.nbeat = 0;
    st.buf = 0;
    st.bcnt = 0;
    st.done = false;
    st.err_short = false;
    st.err_long = false;
    st.drain_frames = 0;
}

inline InStatus in_status(const InState& st) {
#pragma HLS INLINE
    InStatus s;
    s.flags = (st.err_short ? S::STATUS_SHORT_FRAME : 0u) | (st.err_long ? S::STATUS_LONG_FRAME : 0u);
    s.drain_frames = st.drain_frames;
    return s;
}

// The frame's next beat (its framing checked); 0 once the frame has ended (a short frame's
// missing beats read as zeros: the frame is computed on them and answered with an error frame).
inline ap_uint<32> take_beat(hls::stream<zq_axis_in>& s, InState& st) {
#pragma HLS INLINE
    if (st.done) return 0;
    const zq_axis_in b = s.read();
    st.nbeat++;
    if (st.nbeat == IN_BEATS) {
        st.done = true;
        if (!b.last) st.err_long = true;
    } else if (b.last) {
        st.done = true;
        st.err_short = true;
    }
    return b.data;
}

// The rest of the frame up to its TLAST (beats the stem did not need, or all of them when
// the frame is rejected), then, after a long frame, the drain to the next TLAST.
inline void in_finish(hls::stream<zq_axis_in>& s, InState& st) {
    ZQ_COUNT_ENTRY(C_REST, FRAME_ROW);
REST:
    for (int i = 0; i < IN_BEATS; i++) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=0 max=IN_BEATS
        if (st.done) break;
        ZQ_COUNT(C_REST, FRAME_ROW);
        take_beat(s, st);
        ZQ_TICK();
    }
    if (st.err_long) {
        int dbeat = 0;
        bool last = false;
        ZQ_COUNT_ENTRY(C_DRAIN, FRAME_ROW);
    DRAIN:
        while (!last) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=IN_BEATS
#ifndef __SYNTHESIS__
            if (s.empty()) {  // C simulation: the hardware would wait for the TLAST
                fprintf(stderr, "zq_top: input stream ended without the TLAST of a long frame\n");
                break;
            }
#endif
            ZQ_COUNT(C_DRAIN, FRAME_ROW);
            const zq_axis_in b = s.read();
            last = b.last != 0;
            if (dbeat == IN_BEATS - 1) {
                dbeat = 0;
                st.drain_frames++;
            } else {
                dbeat++;
            }
            ZQ_TICK();
        }
    }
    st.buf = 0;
    st.bcnt = 0;
}

}  // namespace zq

#endif  // ZQ_FRAMING_H
