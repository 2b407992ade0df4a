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

// A logit: (GAP sum + bias) >> GAP_SHIFT, the bias of the network's rounding GAP_ROUND
// (numerics.round_shift_mode; spec.engine.GAP_ROUNDINGS): h = 2^(GAP_SHIFT-1) ties toward +inf,
// 0 floor, h - 1 + bit GAP_SHIFT of the sum ties to even, h - sign ties away from zero.
static_assert(P::GAP_ROUND >= 0 && P::GAP_ROUND <= S::GAP_ROUND_HALF_AWAY, "GAP_ROUND");
inline logit_t logit_of(const gap_t& g) {
#pragma HLS INLINE
    constexpr int K = P::GAP_SHIFT > 0 ? P::GAP_SHIFT : 1;
    ap_int<S::GAP_BITS + 1> sum = g;
    if (P::GAP_SHIFT > 0) {
        ap_int<S::GAP_BITS + 1> bias = 1 << (K - 1);
        if (P::GAP_ROUND == S::GAP_ROUND_FLOOR) bias = 0;
        if (P::GAP_ROUND == S::GAP_ROUND_HALF_EVEN) bias = bias - 1 + ((sum >> K) & 1);
        if (P::GAP_ROUND == S::GAP_ROUND_HALF_AWAY) bias = bias - (sum < 0 ? 1 : 0);
        sum = (sum + bias) >> K;
    }
    return logit_t(sum);
}

}  // namespace zq

#endif  // ZQ_REQUANT_H
