// Requantization of an accumulator (docs/fixed-point.md): shift with rounding half up (or a
// left shift), ReLU, saturation to the output format; and the logits' rounding shift.
#ifndef ZQ_REQUANT_H
#define ZQ_REQUANT_H

#include "zq_layer.h"
#include "zq_types.h"

namespace zq {

inline y_t requantize(acc_t acc, const Layer& L) {
#pragma HLS INLINE
    const int shift_r = L.shift_r, shl = L.shl;
    const post_t lo = L.r.out_lo.to_int(), hi = L.r.out_hi.to_int();
    post_t v = acc;
    if (shift_r > 0) {
        v = (v + post_t(L.rnd)) >> shift_r;
    } else {
        v = v << shl;  // the exporter proves this fits the accumulator
    }
    if (L.r.relu && v < 0) v = 0;
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    return y_t(v);
}

// A logit: round_shift(GAP sum, GAP_SHIFT) (numerics.round_shift).
inline logit_t logit_of(const gap_t& g) {
#pragma HLS INLINE
    ap_int<S::GAP_BITS + 1> sum = g;
    if (P::GAP_SHIFT > 0) sum = (sum + (1 << (P::GAP_SHIFT > 0 ? P::GAP_SHIFT - 1 : 0))) >> P::GAP_SHIFT;
    return logit_t(sum);
}

}  // namespace zq

#endif  // ZQ_REQUANT_H
