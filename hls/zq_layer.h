// One row of the layer table (spec.engine.ROW, net_params.h LAYERS[]) decoded once per
// layer, and the figures of the whole table that bound the loops (trip counts).
#ifndef ZQ_LAYER_H
#define ZQ_LAYER_H

#include "zq_types.h"

namespace zq {

struct Layer {
    S::LayerRow r;
    int k, pad;             // kernel 1 or 3, padding k/2
    int shift_r, rnd, shl;  // requantization: (acc + rnd) >> shift_r when shift > 0, else acc << shl
    int in_h;               // input rows (the stem's size for the first layer)
    int n_units;            // ring-fed: units per input row and column (stem units or channel groups)
    bool ring_fed;          // the input arrives row by row into a ring (the stem, a DDR tensor)
};

inline Layer decode(int li) {
#pragma HLS INLINE
    Layer L;
    L.r = P::LAYERS[li];
    const S::LayerRow& r = L.r;
    L.k = r.k3 ? 3 : 1;
    L.pad = r.k3;
    L.shift_r = r.shift > 0 ? r.shift : 0;
    L.rnd = r.shift > 0 ? (1 << (r.shift - 1)) : 0;
    L.shl = r.shift > 0 ? 0 : -r.shift;
    L.in_h = r.src_kind == S::SRC_STEM ? P::STEM_SIZE : (1 << r.lg_in);
    L.n_units = r.src_kind == S::SRC_STEM ? STEM_UNITS : r.src_cgrps;
    L.ring_fed = r.src_kind != S::SRC_ACT;
    return L;
}

// Input rows the core needs before band `band` (rtl/zq_loop_gen need_rows), and the rows it
// releases after it (rows_release): the same arithmetic as spec/cycles.py.
inline int need_rows(const Layer& L, int band) {
#pragma HLS INLINE
    const int last = ((((band + 1) << L.r.lg_band) - 1) << L.r.s2) + L.k - 1 - L.pad;
    return cmin(L.in_h, last + 1);
}
inline int released_rows(const Layer& L, int band) {
#pragma HLS INLINE
    return cmin(L.in_h, cmax(0, (((band + 1) << L.r.lg_band) << L.r.s2) - L.pad));
}

// ---- figures of the table (loop bounds for LOOP_TRIPCOUNT) -------------------------------
constexpr long layer_steps(const S::LayerRow& r) {  // the core's issues: bias steps + MAC steps
    return (1L << (r.lg_out - r.lg_band)) * r.co_groups *
           (1 + (1L << (r.lg_band + r.lg_out)) * (r.k3 ? 9 : 1) * r.ci_chunks);
}
constexpr long max_layer_steps() {
    long m = 1;
    for (int l = 0; l < P::N_LAYERS; ++l) m = layer_steps(P::LAYERS[l]) > m ? layer_steps(P::LAYERS[l]) : m;
    return m;
}
constexpr long ddr_read_beats(const S::LayerRow& r) {
    return r.src_kind == S::SRC_DDR ? ((long)r.src_cgrps << (2 * r.lg_in)) * BPU : 0;
}
constexpr long ddr_write_beats(const S::LayerRow& r) {
    return r.dst_kind == S::DST_DDR ? ((long)r.co_groups << (2 * r.lg_out)) * BPU : 0;
}
constexpr long max_ddr_beats() {
    long m = 1;
    for (int l = 0; l < P::N_LAYERS; ++l) {
        m = ddr_read_beats(P::LAYERS[l]) > m ? ddr_read_beats(P::LAYERS[l]) : m;
        m = ddr_write_beats(P::LAYERS[l]) > m ? ddr_write_beats(P::LAYERS[l]) : m;
    }
    return m;
}
constexpr int MAX_LAYER_STEPS = (int)max_layer_steps();
constexpr int MAX_DDR_BEATS = (int)max_ddr_beats();
constexpr int MAX_RAW_ROWS = P::STEM_K + P::STEM_S;      // raw frame rows read for one stem row
constexpr int MAX_RAW_ITERS =                            // RAW-loop iterations for them (raw_iters_to)
    MAX_RAW_ROWS * cmax(P::IN_SIZE, (P::IN_SIZE * P::IN_CH + 3) / 4 + 1);

}  // namespace zq

#endif  // ZQ_LAYER_H
