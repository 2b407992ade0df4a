// The activation scratch area in DDR (m_axi `act`): the ring fill reader and the DDR writer.
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

// ---- the ring fill reader -------------------------------------------------------------------
template <int BL>
void fill_bursts(const ddr_t* act, int li, const Layer& L, zq::stream<unit_t, FILL_FIFO>& out) {
    const int lg_in = L.r.lg_in;
    const int lg_run = lg_in + LG_BPU;
    const int per_run = (1 << lg_run) / BL;          // bursts per run (row of one group)
    const int n = (L.in_h * L.r.src_cgrps) * per_run;
    const ddr_t* base = act + ((unsigned)L.r.src_ddr >> 3);
    int y = 0, cg = 0, bi = 0;
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
                y++;
            } else {
                cg++;
            }
        } else {
            bi++;
        }
    }
}

// The process: a ring-fed layer's DDR input, every row of every channel group.
inline void fill_reader(int li, const ddr_t* act, zq::stream<unit_t, FILL_FIFO>& out) {
#pragma HLS INLINE off
    const Layer L = decode(li);
    if (L.r.src_kind != S::SRC_DDR) return;
    const int bl = burst_len(fill_lg_run(P::LAYERS[li]));
    if (fill_uses(16) && bl == 16) fill_bursts<16>(act, li, L, out);
    else if (fill_uses(8) && bl == 8) fill_bursts<8>(act, li, L, out);
    else if (fill_uses(4) && bl == 4) fill_bursts<4>(act, li, L, out);
    else if (fill_uses(2) && bl == 2) fill_bursts<2>(act, li, L, out);
    else if (fill_uses(1) && bl == 1) fill_bursts<1>(act, li, L, out);
}

// ---- the DDR writer ---------------------------------------------------------------------------
template <int BL>
void write_bursts(ddr_t* act, int li, const Layer& L, zq::stream<unit_t, OUT_FIFO>& in) {
    const int lg_out = L.r.lg_out;
    const int lg_run = write_lg_run(P::LAYERS[li]);
    const int per_run = (1 << lg_run) / BL;          // bursts per run (band of one group)
    const int n_bands = 1 << (lg_out - L.r.lg_band);
    const int n = (n_bands * L.r.co_groups) * per_run;
    ddr_t* base = act + ((unsigned)L.r.dst_ddr >> 3);
    int band = 0, g = 0, bi = 0;
    ZQ_COUNT_ENTRY(C_DDR_WRITE, li);
DDR_WRITE:
    for (int j = 0; j < n; j++) {
#pragma HLS PIPELINE
#pragma HLS LOOP_TRIPCOUNT min=1 max=MAX_DDR_BEATS
        // run (group dst_cg0 + g, rows [band*R, band*R + R)) is contiguous: [group][y][x]
        ddr_t* p = base + (((((L.r.dst_cg0 + g) << lg_out) + (band << L.r.lg_band)) << (lg_out + LG_BPU)) + bi * BL);
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

// The process: a layer's results bound for DDR, in the order the core produces them.
inline void ddr_writer(int li, ddr_t* act, zq::stream<unit_t, OUT_FIFO>& in) {
#pragma HLS INLINE off
    const Layer L = decode(li);
    if (L.r.dst_kind != S::DST_DDR) return;
    const int bl = burst_len(write_lg_run(P::LAYERS[li]));
    if (write_uses(16) && bl == 16) write_bursts<16>(act, li, L, in);
    else if (write_uses(8) && bl == 8) write_bursts<8>(act, li, L, in);
    else if (write_uses(4) && bl == 4) write_bursts<4>(act, li, L, in);
    else if (write_uses(2) && bl == 2) write_bursts<2>(act, li, L, in);
    else if (write_uses(1) && bl == 1) write_bursts<1>(act, li, L, in);
}

}  // namespace zq

#endif  // ZQ_DDR_H
