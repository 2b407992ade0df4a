// The activation scratch area in DDR: the ring fill readers and the DDR writers of both paths.
//
// A DDR tensor is stored [channel group][y][x][N_PE bytes] (a unit of BPU beats per pixel
// and group). A ring-fed layer reads it in runs of one row of one channel group (W units),
// in the order (row, group, column) in which the core fills its ring; a layer writing DDR
// writes runs of one band of one output group (R rows of W units), in the order the core
// produces them (band, group, pixel).
//
// Bursts: every run is a power of two of beats, read or written in bursts of
// BL = min(16, run) beats. Each burst is one iteration of a pipelined loop over all the
// layer's bursts, its BL accesses unrolled and addressed from the burst's base pointer
// (`p = base + offset; p[k]`): Vitis infers a burst of BL beats per iteration and, the outer
// loop being pipelined (II = BL: BL beats on one port), issues the next burst's request
// while the current one's data arrive (UG1399, "AXI Burst Transfers": unroll the fixed-length
// inner loop, pipeline the outer one). The m_axi pragma's `latency=` tells the scheduler how
// early to issue the requests. So a read-bound layer reads one beat per cycle, as the RTL
// twin's zq_fill_dma does, not one run per read latency.
#ifndef ZQ_DDR_H
#define ZQ_DDR_H

#include "zq_count.h"
#include "zq_layer.h"
#include "zq_stream.h"
#include "zq_types.h"

namespace zq {

// Beats per burst for a run of 2^lg_run beats.
constexpr int burst_len(int lg_run) { return lg_run >= 4 ? BURST : 1 << lg_run; }
constexpr int fill_lg_run(const S::LayerRow& r) { return r.lg_in + LG_BPU; }
constexpr int write_lg_run(const S::LayerRow& r) { return r.lg_band + r.lg_out + LG_BPU; }
// Does any layer of the table read (write) DDR in bursts of bl beats? (No hardware for the others.)
constexpr bool fill_uses(int bl) {
    bool any = false;
    for (int l = 0; l < P::N_LAYERS; ++l)
        any = any || (P::LAYERS[l].src_kind == S::SRC_DDR && burst_len(fill_lg_run(P::LAYERS[l])) == bl);
    return any;
}
constexpr bool write_uses(int bl) {
    bool any = false;
    for (int l = 0; l < P::N_LAYERS; ++l)
        any = any || (P::LAYERS[l].dst_kind == S::DST_DDR && burst_len(write_lg_run(P::LAYERS[l])) == bl);
    return any;
}

// ---- the activation paths (spec PATH_1, PATH_2; the row fields src_path, dst_path) -------------
// Path 1 reads and writes through m_axi `act`; path 2 reads through m_axi `act2` and writes through
// m_axi `wts` (its write channel). Reads on both paths: even input rows on path 1, odd rows on path 2
// (a fill reader and a FIFO per path; the core takes units from both, hls/zq_core.h). Writes on both
// paths: the even 128-byte lines of a run on path 1, the odd ones on path 2 (a DDR writer and a FIFO
// per path; the core sends each result unit to its line's FIFO), when a run is two lines or more;
// a shorter run (a map of 4 x 4 or less) goes on path 1 whole (RTL: by its line's parity; the same
// bytes land at the same addresses, only its timing differs).
constexpr int LG_LINE_BEATS = 4;   // a 128-byte line: 16 beats, one burst
static_assert(S::AXI_LINE_BYTES == 8 << LG_LINE_BEATS, "a 128-byte line is 16 beats");
static_assert(BURST == 1 << LG_LINE_BEATS, "a write burst is one line");
static_assert(ACT_PATHS == 1 || ACT_PATHS == 2, "ACT_PATHS: 1 or 2");
// Does the layer split its reads over both paths? (ACT_PATHS = 1 builds path 1 alone.)
inline bool fill_split(const S::LayerRow& r) { return ACT_PATHS == 2 && r.src_path == S::PATH_BOTH; }
// The one path that reads a layer's input when it is not split (0: path 1, 1: path 2).
inline int fill_path(const S::LayerRow& r) { return ACT_PATHS == 2 && r.src_path == S::PATH_2 ? 1 : 0; }
// Does the layer split its writes by line over both paths (runs of two lines or more)?
inline bool write_split(const S::LayerRow& r) {
    return ACT_PATHS == 2 && r.dst_path == S::PATH_BOTH && write_lg_run(r) > LG_LINE_BEATS;
}
inline int write_path(const S::LayerRow& r) { return ACT_PATHS == 2 && r.dst_path == S::PATH_2 ? 1 : 0; }

// ---- the ring fill reader -------------------------------------------------------------------
// Path `path` of the layer's input: every row (one path), or the rows y = path, path + 2, .. (both).
template <int BL>
void fill_bursts(const ddr_t* act, int li, const Layer& L, int path, zq::stream<unit_t, FILL_FIFO>& out) {
    const int lg_in = L.r.lg_in;
    const int lg_run = lg_in + LG_BPU;
    const int per_run = (1 << lg_run) / BL;          // bursts per run (row of one group)
    const bool split = fill_split(P::LAYERS[li]);
    const int y0 = split ? path : 0, dy = split ? 2 : 1;
    const int rows = split ? ((int)L.in_h + 1 - path) >> 1 : (int)L.in_h;
    const int n = (rows * L.r.src_cgrps) * per_run;
    const ddr_t* base = act + ((unsigned)L.r.src_ddr >> 3);
    int y = y0, cg = 0, bi = 0;
    ZQ_COUNT_ENTRY(C_FILL, li);
FILL:
    for (int j = 0; j < n; j++) {
#pragma HLS PIPELINE
#pragma HLS LOOP_TRIPCOUNT min=1 max=MAX_DDR_BEATS
        const ddr_t* p = base + ((((cg << lg_in) + y) << lg_run) + bi * BL);  // the burst's base pointer
        for (int k = 0; k < BL / BPU; k++) {
#pragma HLS UNROLL
            unit_t u;
            for (int b = 0; b < BPU; b++) {
#pragma HLS UNROLL
                unit_set_beat(u, b, p[k * BPU + b]);
                ZQ_COUNT(C_FILL, li);
                ZQ_TICK();
            }
            out.write(u);
        }
        if (bi == per_run - 1) {
            bi = 0;
            if (cg == L.r.src_cgrps - 1) {
                cg = 0;
                y += dy;
            } else {
                cg++;
            }
        } else {
            bi++;
        }
    }
}

// The process of path `path` (0: m_axi act, 1: m_axi act2): a ring-fed layer's DDR input rows.
inline void fill_reader(int li, int path, const ddr_t* act, zq::stream<unit_t, FILL_FIFO>& out) {
#pragma HLS INLINE off
    const Layer L = decode(li);
    if (L.r.src_kind != S::SRC_DDR) return;
    if (!fill_split(P::LAYERS[li]) && fill_path(P::LAYERS[li]) != path) return;
    const int bl = burst_len(fill_lg_run(P::LAYERS[li]));
    if (fill_uses(16) && bl == 16) fill_bursts<16>(act, li, L, path, out);
    else if (fill_uses(8) && bl == 8) fill_bursts<8>(act, li, L, path, out);
    else if (fill_uses(4) && bl == 4) fill_bursts<4>(act, li, L, path, out);
    else if (fill_uses(2) && bl == 2) fill_bursts<2>(act, li, L, path, out);
    else if (fill_uses(1) && bl == 1) fill_bursts<1>(act, li, L, path, out);
}

// ---- the DDR writer ---------------------------------------------------------------------------
// Path `path` of the layer's results: every burst (one path), or the bursts (lines) 2 i + path of
// every run (both: BL = 16, a run of two lines or more).
template <int BL>
void write_bursts(ddr_t* act, int li, const Layer& L, int path, zq::stream<unit_t, OUT_FIFO>& in) {
    const int lg_out = L.r.lg_out;
    const int lg_run = write_lg_run(P::LAYERS[li]);
    const bool split = write_split(P::LAYERS[li]);
    const int per_run = ((1 << lg_run) / BL) >> (split ? 1 : 0);  // this path's bursts per run
    const int n_bands = 1 << (lg_out - L.r.lg_band);
    const int n = (n_bands * L.r.co_groups) * per_run;
    const int b0 = split ? path : 0, db = split ? 2 : 1;          // the run's bursts b0, b0 + db, ..
    ddr_t* base = act + ((unsigned)L.r.dst_ddr >> 3);
    int band = 0, g = 0, bi = 0;
    ZQ_COUNT_ENTRY(C_DDR_WRITE, li);
DDR_WRITE:
    for (int j = 0; j < n; j++) {
#pragma HLS PIPELINE
#pragma HLS LOOP_TRIPCOUNT min=1 max=MAX_DDR_BEATS
        // run (group dst_cg0 + g, rows [band*R, band*R + R)) is contiguous: [group][y][x]
        ddr_t* p = base + (((((L.r.dst_cg0 + g) << lg_out) + (band << L.r.lg_band)) << (lg_out + LG_BPU)) +
                           (b0 + db * bi) * BL);
        for (int k = 0; k < BL / BPU; k++) {
#pragma HLS UNROLL
            const unit_t u = in.read();
            for (int b = 0; b < BPU; b++) {
#pragma HLS UNROLL
                p[k * BPU + b] = unit_beat(u, b);
                ZQ_COUNT(C_DDR_WRITE, li);
                ZQ_TICK();
            }
        }
        if (bi == per_run - 1) {
            bi = 0;
            if (g == L.r.co_groups - 1) {
                g = 0;
                band++;
            } else {
                g++;
            }
        } else {
            bi++;
        }
    }
}

// The process of path `path` (0: m_axi act, 1: m_axi wts's write channel): a layer's results bound
// for DDR, in the order the core produces them.
inline void ddr_writer(int li, int path, ddr_t* act, zq::stream<unit_t, OUT_FIFO>& in) {
#pragma HLS INLINE off
    const Layer L = decode(li);
    if (L.r.dst_kind != S::DST_DDR) return;
    if (!write_split(P::LAYERS[li]) && write_path(P::LAYERS[li]) != path) return;
    const int bl = burst_len(write_lg_run(P::LAYERS[li]));
    if (write_uses(16) && bl == 16) write_bursts<16>(act, li, L, path, in);
    else if (write_uses(8) && bl == 8) write_bursts<8>(act, li, L, path, in);
    else if (write_uses(4) && bl == 4) write_bursts<4>(act, li, L, path, in);
    else if (write_uses(2) && bl == 2) write_bursts<2>(act, li, L, path, in);
    else if (write_uses(1) && bl == 1) write_bursts<1>(act, li, L, path, in);
}

}  // namespace zq

#endif  // ZQ_DDR_H
