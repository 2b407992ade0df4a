// The output process: the logits, or the error frames of a frame with a framing error.
//
// It waits for the stem's framing status of the frame (the stem has taken the whole frame
// by then), takes the core's N_CLASSES logits, and sends one logit per beat (int32, TLAST on
// beat N_CLASSES - 1), or 1 + drain_frames error frames of N_CLASSES beats of ERROR_LOGIT.
#ifndef ZQ_OUTPUT_H
#define ZQ_OUTPUT_H

#include <hls_stream.h>

#include "zq_axis.h"
#include "zq_count.h"
#include "zq_framing.h"
#include "zq_stream.h"
#include "zq_types.h"

namespace zq {

// One output beat: value v, TLAST when it is its frame's last.
inline zq_axis_out out_beat(const logit_t& v, bool last) {
#pragma HLS INLINE
    zq_axis_out o;
    o.data = ap_uint<32>(v);
    o.keep = -1;
    o.strb = -1;
    o.last = last;
    return o;
}

// n_frames error frames (the answer to a rejected frame and the frames it ran into).
inline void error_frames(hls::stream<zq_axis_out>& m_out, int n_frames) {
    int c = 0;
ERROR_FRAMES:
    for (int i = 0; i < n_frames * P::N_CLASSES; i++) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=P::N_CLASSES max=P::N_CLASSES
        ZQ_COUNT(C_OUT, FRAME_ROW);
        m_out.write(out_beat(logit_t(S::ERROR_LOGIT), c == P::N_CLASSES - 1));
        c = c == P::N_CLASSES - 1 ? 0 : c + 1;
        ZQ_TICK();
    }
}

// The process. flags: the frame's status flags; n_out: frames answered.
inline void output(zq::stream<logit_t, LOGIT_FIFO>& lq, zq::stream<InStatus, 2>& sq, hls::stream<zq_axis_out>& m_out,
                   ap_uint<8>& flags, int& n_out) {
#pragma HLS INLINE off
    const InStatus st = sq.read();
    const bool ok = st.flags == 0;
    ZQ_COUNT_ENTRY(C_OUT, FRAME_ROW);
LOGITS_OUT:
    for (int k = 0; k < P::N_CLASSES; k++) {
#pragma HLS PIPELINE II=1
        const logit_t v = lq.read();
        if (ok) {
            ZQ_COUNT(C_OUT, FRAME_ROW);
            m_out.write(out_beat(v, k == P::N_CLASSES - 1));
        }
        ZQ_TICK();
    }
    if (!ok) error_frames(m_out, 1 + (int)st.drain_frames);
    flags = st.flags;
    n_out = ok ? 1 : 1 + (int)st.drain_frames;
}

}  // namespace zq

#endif  // ZQ_OUTPUT_H
