// zq_top: the layer-sequential CNN engine's top function (Vitis HLS).
// Implemented in zq_top.cpp for the network whose net_params.h is on the
// include path; the templates are in engine.h.
#ifndef ZQ_TOP_H
#define ZQ_TOP_H

#include <ap_int.h>
#include <hls_stream.h>

#include "zq_axis.h"

typedef ap_uint<32> zq_reg_t;

// Status register bits.
#define ZQ_STATUS_SHORT 0x1u        // last frame was short (TLAST before beat IN_BYTES/4-1)
#define ZQ_STATUS_LONG 0x2u         // last frame was long (no TLAST on beat IN_BYTES/4-1)
#define ZQ_STATUS_ERRCNT_SHIFT 16   // bits 31:16: error frames since reset (saturating)
#define ZQ_ERROR_LOGIT (-32768)     // every beat of an error frame (int16 minimum, sign-extended)

// One call = one input frame in, one output frame (N_CLASSES beats) out.
// Registers (s_axilite, read-only): status, cycles_last, frames_done, net_id, build_params.
void zq_top(hls::stream<zq_axis_in>& s_axis_in, hls::stream<zq_axis_out>& m_axis_out,
            zq_reg_t& status, zq_reg_t& cycles_last, zq_reg_t& frames_done, zq_reg_t& net_id,
            zq_reg_t& build_params);

#ifndef __SYNTHESIS__
// C simulation only: clear the static counters and flags, as a hardware reset does.
void zq_csim_reset();
#endif

#endif  // ZQ_TOP_H
