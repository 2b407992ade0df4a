// One row of the layer table (spec.engine.ROW, net_params.h LAYERS[]) decoded once per
// layer, and the figures of the whole table that bound the loops (trip counts).
#ifndef ZQ_LAYER_H
#define ZQ_LAYER_H

#include "zq_types.h"

namespace zq {

// ---- counter types: the spec's widths (zq_spec.h ROW_*_BITS), and the table's largest map -------
// ap_uint<W> under synthesis and in the exact C simulation; the native C simulation (-DZQ_CSIM_NATIVE,
// never synthesized) counts in int: the same values, since no counter wraps (each is sized for its
// largest value; a ring's slot wraps by an explicit mask) -- the exact builds check the widths.
#if ZQ_NATIVE
template <int W>
struct ctr { typedef int u; typedef int s; };
#else
template <int W>
struct ctr { typedef ap_uint<W> u; typedef ap_int<W> s; };
#endif
constexpr int max_lg_map() {  // log2 of the largest map a layer reads (the table check bounds it by 15)
    int m = 0;
    for (int l = 0; l < P::N_LAYERS; ++l) m = P::LAYERS[l].lg_in > m ? P::LAYERS[l].lg_in : m;
    return m;
}
constexpr int MAP_BITS = max_lg_map() + 1;                    // a coordinate or row count, 0 .. the map's size
typedef ctr<MAP_BITS>::u map_t;
typedef ctr<MAP_BITS + 2>::s coord_t;                          // an input coordinate, -pad .. 2 x the size
typedef ctr<MAP_BITS + 2>::u band_lim_t;                       // a band limit before its clamp (< 4 x the size)
typedef ctr<2 * max_lg_map() + 1>::u opix_t;                  // an output pixel oy * W + ox, 0 .. W * H
typedef ctr<cmax(1, clog2(P::ACT_ROWS))>::u act_addr_t;       // an activation-RAM row
typedef ctr<S::ROW_W_OFF_BITS + 1>::u word_t;                 // a weight-image word index, 0 .. IMAGE_WORDS (+ ring)
typedef ctr<cmax(1, clog2(WBUF))>::u wslot_t;                 // a weight-RAM slot
typedef ctr<cmax(1, clog2(BPW))>::u wbeat_idx_t;              // a beat of a weight word
typedef ctr<cmax(1, LG_WPG)>::u bank_t;                       // an activation-RAM bank
typedef ctr<cmax(S::ROW_SRC_CGRPS_BITS, clog2(STEM_UNITS + 1))>::u units_t;  // a ring unit of a pixel
typedef ctr<S::ROW_CO_GROUPS_BITS>::u grp_t;                  // an output group
typedef ctr<S::ROW_CI_CHUNKS_BITS>::u chunk_t;                // an input channel word of a pixel
typedef ctr<S::ROW_W_BLK_BITS>::u step_t;                     // a step of a pixel (< w_blk)
typedef ctr<S::ROW_CO_LAST_BITS>::u nvalid_t;                 // valid output channels of a group
typedef ctr<S::ROW_LG_IN_BITS + 1>::u lg_t;                   // a log2 of sizes (and their sums)
typedef ctr<2>::u tap_t;                                      // ky, kx of a 3x3 kernel
typedef ctr<cmax(1, clog2(GAP_ROWS))>::u gap_row_t;
static_assert(P::IMAGE_WORDS + WRING < (1L << (S::ROW_W_OFF_BITS + 1)), "weight-word counters: the image is too large");
static_assert(max_lg_map() <= 15, "a map of more than 2^15 rows (the table check refuses it)");
static_assert(N_PE < (1 << S::ROW_CO_LAST_BITS), "N_PE does not fit the row's co_last");

// The next weight-RAM slot (a ring's wraps).
inline wslot_t next_slot(const wslot_t& s) {
#pragma HLS INLINE
    return P::WEIGHT_CACHE ? wslot_t(s + 1) : wslot_t((s + 1) & (WRING - 1));
}
inline wslot_t slot_of(const word_t& i) {
#pragma HLS INLINE
    return P::WEIGHT_CACHE ? wslot_t(i) : wslot_t(i & (WRING - 1));
}

struct Layer {
    S::LayerRegs r;         // the row, every field in its spec width
    tap_t k;                // kernel 1 or 3
    tap_t pad;              // padding k/2
    ap_uint<5> shift_r;     // requantization: (acc + rnd) >> shift_r when shift > 0, else acc << shl
    ap_uint<5> shl;
    acc_t rnd;
    map_t in_h;             // input rows (the stem's size for the first layer)
    units_t n_units;        // ring-fed: units per input row and column (stem units or channel groups)
    bool ring_fed;          // the input arrives row by row into a ring (the stem, a DDR tensor)
};

inline Layer decode(int li) {
#pragma HLS INLINE
    Layer L;
    const S::LayerRow& r = P::LAYERS[li];
    L.r = S::layer_regs(r);
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

// The band limits (rtl/zq_loop_gen need_rows and rows_release, spec/cycles.py _need_rows and
// _released_rows). With R = 2^lg_band output rows per band and stride S, band b needs the input
// rows up to   need(b) = min(in_h, ((b + 1) R - 1) S + k - pad)   and releases after it the rows
// below       rel(b)  = min(in_h, (b + 1) R S - pad).
// Both grow by R S from one band to the next: the core keeps the next band's raw values (a band
// ahead) and adds R S, so its next-state logic is a register copy and a constant add.
inline band_lim_t band_step(const Layer& L) {
#pragma HLS INLINE
    return band_lim_t(1) << (int)(L.r.lg_band + L.r.s2);
}
inline band_lim_t need_raw0(const Layer& L) {  // need(0) before the clamp
#pragma HLS INLINE
    return (((band_lim_t(1) << (int)L.r.lg_band) - 1) << (int)L.r.s2) + L.k - L.pad;
}
inline band_lim_t rel_raw0(const Layer& L) {  // rel(0) before the clamp (R S >= 1 >= pad)
#pragma HLS INLINE
    return band_step(L) - L.pad;
}
inline map_t clamp_rows(const Layer& L, const band_lim_t& raw) {
#pragma HLS INLINE
    return raw < L.in_h ? map_t(raw) : L.in_h;
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
