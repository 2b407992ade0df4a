// zq_top: the DDR-streaming CNN engine's top function (Vitis HLS).
// Implemented in zq_top.cpp for the network whose net_params.h is on the
// include path; the engine is in zq_frame.h and the headers it includes (one per
// process or function), the specification in zq_spec.h.
#ifndef ZQ_TOP_H
#define ZQ_TOP_H

#include <ap_int.h>
#include <hls_stream.h>

#include "zq_axis.h"
#include "zq_spec.h"

typedef ap_uint<32> zq_reg_t;
typedef ap_uint<64> zq_addr_t;  // a DDR byte address register (the `wts` and `act` of the register map)

// One call = one frame: the input frame from s_axis_in (4 bytes per beat, HWC,
// TLAST on the last beat), the logits (N_CLASSES beats, one int32 each, TLAST on
// the last) or error frames to m_axis_out.
//   wts: the weight image in DDR (m_axi, 64-bit beats), its byte address in
//        the register `wts` (spec offset 0x10);
//   act: the activation scratch area in DDR (m_axi; manifest memory.scratch_bytes),
//        its byte address in the register `act` (0x1C);
//   status, frames_done, net_id, build_params, engine_info: the read-only
//        registers of the spec's register map (docs/engine-spec.md).
void zq_top(hls::stream<zq_axis_in>& s_axis_in, hls::stream<zq_axis_out>& m_axis_out, ap_uint<64>* wts_mem,
            ap_uint<64>* act_mem, const ap_uint<64>* act2_mem, zq_addr_t wts, zq_addr_t act, zq_reg_t& status, zq_reg_t& frames_done, zq_reg_t& net_id, zq_reg_t& build_params,
            zq_reg_t& engine_info);

#ifndef __SYNTHESIS__
// C simulation only: clear the static counters and the weight cache, as a
// hardware reset (ap_rst_n) does; takes effect at the next call.
void zq_csim_reset();
// C simulation only: the core's guards in this build (0: AVAIL_GUARD, 1: RELEASE_GUARD).
int zq_csim_guard(int which);
#endif

#if defined(ZQ_COUNT_ITERATIONS) && !defined(__SYNTHESIS__)
// C simulation built with -DZQ_COUNT_ITERATIONS: the counts of zq_count.h,
// [layer 0..N_LAYERS][counter][iterations, entries] flattened (row N_LAYERS: the
// frame-level processes), at most max_n into out (may be NULL); clear: zero them
// after the copy. Returns the number of values.
int zq_csim_loop_counts(long long* out, int max_n, bool clear);
#endif

#endif  // ZQ_TOP_H
