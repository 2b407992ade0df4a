// One step of the MAC array: N_PE x N_CI products of the lanes x and one weight word, two
// output channels (pe, pe + N_PE/2) per lane pair, summed per PE and added to the accumulators,
// which start from the biases at a pixel's first step. Lane pair j * N_CI + ci is a DSP48E1 (the
// packed pair of zq_dsp.h) below DSP_PAIRS, else two LUT multipliers (lut_mul_exact, bound to
// fabric), as the RTL twin's zq_mac_array / zq_lut_mul: the same products either way.
#ifndef ZQ_MAC_H
#define ZQ_MAC_H

#include "zq_dsp.h"
#include "zq_types.h"

namespace zq {

// The N_PE 32-bit biases of a bias word (int32 little endian at bytes 4*pe .. 4*pe + 3).
inline void bias_of(const wbeat_t word[BPW], acc_t bias[N_PE]) {
#pragma HLS INLINE
    for (int pe = 0; pe < N_PE; pe++) {
#pragma HLS UNROLL
        const int byte0 = 4 * pe;
        uint32_t v = 0;
        for (int k = 0; k < 4; k++) {
#pragma HLS UNROLL
            v |= (uint32_t)beat_byte(word[(byte0 + k) >> 3], (byte0 + k) & 7) << (8 * k);
        }
        bias[pe] = (acc_t)(int32_t)v;
    }
}

inline void mac_step(const act_word_t& xw, bool inb, bool sgn, const wbeat_t wword[BPW], bool first,
                     const acc_t bias[N_PE], acc_t acc[N_PE]) {
#pragma HLS INLINE
#if ZQ_NATIVE
    int x[N_CI];
    for (int l = 0; l < N_CI; l++) {
        const int v = inb ? (int)xw.b[l] : 0;
        x[l] = (sgn && v >= 128) ? v - 256 : v;
    }
    int8_t w[WORD_BYTES];
    for (int b = 0; b < BPW; b++)
        for (int k = 0; k < 8; k++) w[8 * b + k] = (int8_t)(uint8_t)(wword[b] >> (8 * k));
    for (int j = 0; j < HALF; j++) {
        int64_t s_lo = 0, s_hi = 0;
        for (int ci = 0; ci < N_CI; ci++) {
            int lo, hi;
            if (j * N_CI + ci < DSP_PAIRS) {
                dsp_pair_native(w[j * N_CI + ci], w[(j + HALF) * N_CI + ci], x[ci], lo, hi);
            } else {  // a LUT pair: two plain products
                lo = w[j * N_CI + ci] * x[ci];
                hi = w[(j + HALF) * N_CI + ci] * x[ci];
            }
            s_lo += lo;
            s_hi += hi;
        }
        acc[j] = (first ? bias[j] : acc[j]) + s_lo;
        acc[j + HALF] = (first ? bias[j + HALF] : acc[j + HALF]) + s_hi;
    }
#else
    x9_t x[N_CI];
#pragma HLS ARRAY_PARTITION variable=x complete
    for (int l = 0; l < N_CI; l++) {
#pragma HLS UNROLL
        const ap_uint<8> v = inb ? ap_uint<8>(lane_get(xw, l)) : ap_uint<8>(0);
        x[l] = sgn ? x9_t(ap_int<8>(v)) : x9_t(v);
    }
    prod_t prod[N_PE][N_CI];
#pragma HLS ARRAY_PARTITION variable=prod complete dim=0
    for (int j = 0; j < HALF; j++) {
#pragma HLS UNROLL
        for (int ci = 0; ci < N_CI; ci++) {
#pragma HLS UNROLL
            const int blo = j * N_CI + ci, bhi = (j + HALF) * N_CI + ci;
            const w8_t w_lo = ap_int<8>(wword[blo >> 3].range(8 * (blo & 7) + 7, 8 * (blo & 7)));
            const w8_t w_hi = ap_int<8>(wword[bhi >> 3].range(8 * (bhi & 7) + 7, 8 * (bhi & 7)));
            if (blo < DSP_PAIRS) {  // lane pair blo: a DSP48E1
                dsp_pair_exact(w_lo, w_hi, x[ci], prod[j][ci], prod[j + HALF][ci]);
            } else {                // two LUT lanes
                prod[j][ci] = lut_mul_exact(w_lo, x[ci]);
                prod[j + HALF][ci] = lut_mul_exact(w_hi, x[ci]);
            }
        }
    }
    for (int pe = 0; pe < N_PE; pe++) {
#pragma HLS UNROLL
        sum_t s = 0;
        for (int ci = 0; ci < N_CI; ci++) {
#pragma HLS UNROLL
            s += prod[pe][ci];
        }
        acc[pe] = (first ? bias[pe] : acc[pe]) + s;
    }
#endif
}

}  // namespace zq

#endif  // ZQ_MAC_H
