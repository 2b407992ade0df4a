// AXI4-Stream beat types of the zq_top ports (s_axis_in, m_axis_out).
//
// Under synthesis (or with -DZQ_USE_AP_AXI, which the Vitis HLS flow in
// hls/scripts/run_hls.tcl passes to the design *and* the testbench so that
// C simulation, co-simulation and synthesis see one type) the beats are
// Vitis's ap_axiu<32,0,0,0> from ap_axi_sdata.h. Otherwise (plain g++ with
// the hls4ml ap_types headers, which have no ap_axi_sdata.h) a struct with the
// same member names is used, so engine code and testbenches compile unchanged.
//
// Beat format: 32-bit TDATA. Input: 4 pixels per beat, little endian (byte 0 =
// first pixel in HWC order), TLAST on beat IN_BYTES/4-1. Output: one logit per
// beat, sign-extended to 32 bits, TLAST on beat N_CLASSES-1. TKEEP/TSTRB are
// driven all-ones on the output and ignored on the input.
#ifndef ZQ_AXIS_H
#define ZQ_AXIS_H

#include <ap_int.h>

#if defined(__SYNTHESIS__) || defined(ZQ_USE_AP_AXI)
#include <ap_axi_sdata.h>
typedef ap_axiu<32, 0, 0, 0> zq_axis_in;
typedef ap_axiu<32, 0, 0, 0> zq_axis_out;
#else
struct zq_axis_beat {
    ap_uint<32> data;
    ap_uint<4> keep;
    ap_uint<4> strb;
    ap_uint<1> last;
};
typedef zq_axis_beat zq_axis_in;
typedef zq_axis_beat zq_axis_out;
#endif

#endif  // ZQ_AXIS_H
