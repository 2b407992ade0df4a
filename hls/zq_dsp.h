// Two 8-bit MACs in one DSP48E1 (the INT8 packing of Xilinx WP486, adapted to
// the 25x18 multiplier), exactly as the RTL twin's rtl/zq_mac_array.sv does it.
//
// Output channels pe and pe + N_PE/2 share one DSP per input lane: the
// pre-adder forms AD = (w_hi << 17) + w_lo in 25 bits (wrapping), the
// multiplier P = AD * x with x the lane's 9-bit signed value (an unsigned or a
// signed 8-bit activation), and
//     lo = P[16:0] (signed),   hi = (P >>> 17) + P[16]
// recover w_lo*x and w_hi*x: every product of an 8-bit weight and a 9-bit lane
// lies in [-2^16, 2^16). AD cannot hold w_hi*2^17 + w_lo when w_hi = -128 and
// w_lo < 0 (it wraps by 2^25, P carries 2^25*x more and the split gives 128*x),
// so hi is negated then. hls/tb/tb_packed_dsp.cpp proves both versions below
// equal the two plain products for every w_hi, w_lo in [-128, 127] and every
// lane value in [-128, 255].
//
// dsp_pair_exact: the HLS datapath (ap_int; the product is bound to a DSP with
// BIND_OP, latency=3: the DSP48E1's input, M and P registers, so that the MAC array
// meets 100 MHz as the RTL twin's registered DSPs do). dsp_pair_native: the same bits in int64 for fast C simulation
// (-DZQ_CSIM_NATIVE, never under synthesis).
//
// The lane pairs beyond DSP_PAIRS (issue 27's LUT lanes, the RTL's zq_lut_mul) are two plain
// products w * x on fabric: lut_mul_exact binds its multiply to LUTs (BIND_OP impl=fabric) with
// the DSP pair's latency, so both kinds of pair feed one adder tree in the same stage;
// tb_packed_dsp.cpp checks it exhaustively beside the packed pair.
#ifndef ZQ_DSP_H
#define ZQ_DSP_H

#include <stdint.h>

#include <ap_int.h>

namespace zq {

typedef ap_int<8> w8_t;     // a weight
typedef ap_int<9> x9_t;     // an activation lane entering the MAC array
typedef ap_int<18> prod_t;  // a split product (17 bits) and its negation

inline void dsp_pair_exact(w8_t w_lo, w8_t w_hi, x9_t x, prod_t& lo, prod_t& hi) {
#pragma HLS INLINE
    const ap_int<25> d = ap_int<25>(w_hi) << 17;   // -2^24 .. 127*2^17: fits 25 bits
    const ap_int<25> ad = d + ap_int<25>(w_lo);      // pre-adder, 25 bits, wraps
    ap_int<34> p = ad * x;
#pragma HLS BIND_OP variable=p op=mul impl=dsp latency=3
    const ap_int<17> p_lo = p;                       // P[16:0] as a signed number
    const ap_int<18> hi_raw = ap_int<18>(p >> 17) + ap_int<18>(ap_uint<1>(p[16]));
    const bool wrap = w_hi == -128 && w_lo < 0;
    lo = p_lo;
    hi = wrap ? prod_t(-hi_raw) : prod_t(hi_raw);
}

// One LUT lane: the exact product of an 8-bit weight and a 9-bit lane (|w x| <= 2^15: 17 bits),
// a multiplier on fabric pipelined to the DSP pair's latency (BIND_OP latency=3).
inline prod_t lut_mul_exact(w8_t w, x9_t x) {
#pragma HLS INLINE
    ap_int<17> p = w * x;
#pragma HLS BIND_OP variable=p op=mul impl=fabric latency=3
    return prod_t(p);
}

inline void dsp_pair_native(int w_lo, int w_hi, int x, int& lo, int& hi) {
    // 25-bit wrap of the pre-adder: sign-extend bit 24
    const int32_t ad = (int32_t)((uint32_t)(w_hi * 131072 + w_lo) << 7) >> 7;
    const int64_t p = (int64_t)ad * x;
    lo = (int32_t)((uint32_t)p << 15) >> 15;         // P[16:0], sign-extended
    const int32_t hi_raw = (int32_t)(p >> 17) + (int32_t)((p >> 16) & 1);
    hi = (w_hi == -128 && w_lo < 0) ? -hi_raw : hi_raw;
}

}  // namespace zq

#endif  // ZQ_DSP_H
