// The core process: one free-running loop per layer at II=1 that owns the activation RAM, the
// weight RAM (ring or cache) and the GAP sums, and pulls from the streamed producers.
//
// Each iteration (one cycle) it may, independently:
//  * take one weight beat from the weight reader into its word's slot, when the slot is free
//    (the word index is below the released words + the ring's size; a cached image is
//    never released);
//  * issue one step of the MAC array: a block's bias step, when the band's input rows and the
//    block's words are in (checked once per block, as rtl/zq_loop_gen does), or one MAC
//    step (N_PE x N_CI products), whose pixel's last step requantizes and writes the
//    result: to the activation RAM, to the DDR writer's stream (blocking when full), or to
//    the GAP sums;
//  * take one unit of the layer's input ring (from the stem or the DDR fill reader) into its
//    row, when the row's slot is free and no result takes the RAM's write port this cycle
//    (the RTL's port-B rule).
// This is the ring flow control of the RTL twin (zq_loop_gen, zq_wdma, zq_fill_dma, zq_stem):
// the same rings, the same release points (a block's words after its last step unless the
// layer is resident, the rows a band no longer needs after the band), the same memory layout.
//
// Hazards. The loop is pipelined and declares the RAMs free of inter-iteration dependences
// (DEPENDENCE inter false): its reads of ring rows and weight words must never see a write
// still in flight, and its writes must never overtake a read of the slot's old contents. So a
// row or word becomes readable AVAIL_GUARD iterations after its last write was issued (more
// than the pipeline's depth from the write's stage to the read's), and a slot is reusable
// RELEASE_GUARD iterations after its release: two delay lines of counters. A layer never
// reads the region it writes (layer_table_error() in zq_top.cpp and the exporter refuse
// tables where a layer's source and destination regions overlap).
#ifndef ZQ_CORE_H
#define ZQ_CORE_H

#ifndef __SYNTHESIS__
#include <stdio.h>

#include <string>
#endif

#include "zq_count.h"
#include "zq_layer.h"
#include "zq_mac.h"
#include "zq_requant.h"
#include "zq_stream.h"
#include "zq_types.h"

namespace zq {

// A counter delayed by N iterations (a shift register of its past values; a ring of them in
// C simulation, which is the same and cheaper there).
template <int N>
struct Delayed {
    int v[N];
#ifndef __SYNTHESIS__
    int head;  // v[head] is the oldest value
#endif
    void reset(int x) {
#pragma HLS INLINE
        for (int i = 0; i < N; i++) {
#pragma HLS UNROLL
            v[i] = x;
        }
#ifndef __SYNTHESIS__
        head = 0;
#endif
    }
    int out() const {
#pragma HLS INLINE
#ifndef __SYNTHESIS__
        return v[head];
#else
        return v[N - 1];
#endif
    }
    // shift in the current value; true while an older value is still on its way
    bool shift(int x) {
#pragma HLS INLINE
        const bool moving = out() != x;
#ifndef __SYNTHESIS__
        v[head] = x;
        head = head == N - 1 ? 0 : head + 1;
#else
        for (int i = N - 1; i > 0; i--) {
#pragma HLS UNROLL
            v[i] = v[i - 1];
        }
        v[0] = x;
#endif
        return moving;
    }
};

inline void core(int li, bool load, zq::stream<wbeat_t, W_FIFO>& wq, zq::stream<unit_t, STEM_FIFO>& sq,
                 zq::stream<unit_t, FILL_FIFO>& fq, zq::stream<unit_t, OUT_FIFO>& oq,
                 zq::stream<logit_t, LOGIT_FIFO>& lq) {
    // on-chip memories, kept across layers (and across frames: the weight cache)
    static act_word_t act_ram[WPG][ACT_ROWS];
#pragma HLS ARRAY_PARTITION variable=act_ram complete dim=1
#pragma HLS BIND_STORAGE variable=act_ram type=ram_s2p impl=bram latency=2
    static wbeat_t wbuf[WBUF][BPW];
#pragma HLS ARRAY_PARTITION variable=wbuf complete dim=2
#pragma HLS BIND_STORAGE variable=wbuf type=ram_s2p impl=bram latency=2
    static gap_t gap[GAP_ROWS][N_PE];
#pragma HLS ARRAY_PARTITION variable=gap complete dim=2
    // the weight RAM's state across the layers of a frame
    static int w_words;   // image words complete in the weight RAM
    static int w_beat;    // beats of word w_words taken
    static int w_rel;     // words the ring may overwrite
    if (li == 0) {
        w_words = (P::WEIGHT_CACHE && !load) ? P::IMAGE_WORDS : 0;
        w_beat = 0;
        w_rel = 0;
    }

    const Layer L = decode(li);
    const int lg_in = L.r.lg_in, lg_out = L.r.lg_out;
    const int isz = 1 << lg_in, osz = 1 << lg_out;
    const int rmask = (1 << L.r.src_lg_rows) - 1;
    const int ring = 1 << L.r.src_lg_rows;
    const int lg_cstride = L.r.src_lg_rows + lg_in;        // rows between channel-word rows of the source
    const int taps_chunks = L.k * L.k * L.r.ci_chunks;     // steps per pixel (outside the loop: one multiply)
    const int n_bands = 1 << (lg_out - L.r.lg_band);
    const bool sgn = L.r.src_signed != 0;
    const bool from_stem = L.r.src_kind == S::SRC_STEM;
    const bool to_act = L.r.dst_kind == S::DST_ACT, to_ddr = L.r.dst_kind == S::DST_DDR;

    // the MAC sequence: band, group (block), then pixel, ky, kx, chunk
    int band = 0, g = 0, start = L.r.w_off;
    bool in_block = false, steps_done = false;
    int need = need_rows(L, 0);
    int ox = 0, oy = 0, ky = 0, kx = 0, c = 0, step = 0, wsl = 0, pix_dst = 0, valid = N_PE;
    acc_t acc[N_PE], bias[N_PE];
    gap_t gsum[N_PE];
#pragma HLS ARRAY_PARTITION variable=acc complete
#pragma HLS ARRAY_PARTITION variable=bias complete
#pragma HLS ARRAY_PARTITION variable=gsum complete
    int dst_row[WPG], dst_w[WPG];
    bool dst_en[WPG];
#pragma HLS ARRAY_PARTITION variable=dst_row complete
#pragma HLS ARRAY_PARTITION variable=dst_w complete
#pragma HLS ARRAY_PARTITION variable=dst_en complete
    for (int pe = 0; pe < N_PE; pe++) {
#pragma HLS UNROLL
        acc[pe] = 0;
        bias[pe] = 0;
        gsum[pe] = 0;
    }
    for (int b = 0; b < WPG; b++) {
#pragma HLS UNROLL
        dst_row[b] = 0;
        dst_w[b] = 0;
        dst_en[b] = false;
    }

    // the input ring: the next unit (row f_y, unit f_u, column f_x)
    int f_y = 0, f_u = 0, f_x = 0;
    int rows_in = 0;     // rows complete in the ring
    int rows_rel = 0;    // rows the ring may overwrite
    Delayed<AVAIL_GUARD> rows_ok, words_ok;
    Delayed<RELEASE_GUARD> rows_free, words_free;
    rows_ok.reset(0);
    words_ok.reset(w_words);
    rows_free.reset(0);
    words_free.reset(w_rel);

    ZQ_COUNT_ENTRY(C_CORE, li);
CORE:
    for (;;) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=MAX_LAYER_STEPS
#pragma HLS DEPENDENCE variable=act_ram inter false
#pragma HLS DEPENDENCE variable=wbuf inter false
        ZQ_COUNT(C_CORE, li);
        bool progress = false;

        // ---- 1. a weight beat into its word's slot --------------------------------------------
        if (w_words < P::IMAGE_WORDS && (P::WEIGHT_CACHE || w_words < words_free.out() + WRING)) {
            wbeat_t wb;
            if (wq.read_nb(wb)) {
                wbuf[wslot(w_words)][w_beat] = wb;
                ZQ_COUNT(C_W_BEATS, li);
                if (w_beat == BPW - 1) {
                    w_beat = 0;
                    w_words++;
                } else {
                    w_beat++;
                }
                progress = true;
            }
        }

        // ---- 2. the MAC array: a block's bias step, or a MAC step -------------------------------
        bool res_act = false;           // a result takes the activation RAM's write port
        act_word_t res_word[WPG];
#pragma HLS ARRAY_PARTITION variable=res_word complete
        if (!steps_done && !in_block) {
            const bool rows_there = !L.ring_fed || need <= rows_ok.out();
            const bool words_there = start + L.r.w_blk <= words_ok.out();
            if (rows_there && words_there) {
                ZQ_COUNT(C_BIAS, li);
                bias_of(wbuf[wslot(start)], bias);
                valid = g == L.r.co_groups - 1 ? L.r.co_last : N_PE;
                const int nwords = (valid + N_CI - 1) >> LG_CI;
                const int cw0g = L.r.dst_cw0 + (g << LG_WPG);
                for (int b = 0; b < WPG; b++) {
#pragma HLS UNROLL
                    const int w = (b - L.r.dst_cw0) & (WPG - 1);
                    dst_w[b] = w;
                    dst_en[b] = w < nwords;
                    dst_row[b] = L.r.dst_base + (((cw0g + w) >> LG_WPG) << (2 * lg_out));
                }
                for (int pe = 0; pe < N_PE; pe++) {
#pragma HLS UNROLL
                    gsum[pe] = 0;
                }
                in_block = true;
                oy = band << L.r.lg_band;
                ox = ky = kx = c = step = 0;
                wsl = wslot(start + 1);
                pix_dst = oy << lg_out;
                progress = true;
            } else if (!rows_there) {
                ZQ_COUNT(C_WAIT_ROWS, li);
            } else {
                ZQ_COUNT(C_WAIT_WEIGHTS, li);
            }
        } else if (!steps_done) {
            ZQ_COUNT(C_MAC, li);
            const bool first = step == 0;
            const bool last = step == taps_chunks - 1;
            // the input word: pixel (oy*s + ky - pad, ox*s + kx - pad), channel word c; zero outside
            const int iy = (oy << L.r.s2) + ky - L.pad;
            const int ix = (ox << L.r.s2) + kx - L.pad;
            const bool inb = iy >= 0 && iy < L.in_h && ix >= 0 && ix < isz;
            const int row = L.r.src_base + ((c >> LG_WPG) << lg_cstride) + ((iy & rmask) << lg_in) + (ix & (isz - 1));
            const act_word_t xw = act_ram[c & (WPG - 1)][inb ? row : 0];
            mac_step(xw, inb, sgn, wbuf[wsl], first, bias, acc);

            if (last) {
                ZQ_COUNT(C_RESULTS, li);
                y_t y[N_PE];
#pragma HLS ARRAY_PARTITION variable=y complete
                for (int pe = 0; pe < N_PE; pe++) {
#pragma HLS UNROLL
                    y[pe] = pe < valid ? requantize(acc[pe], L) : y_t(0);
                }
                if (to_act) {
                    res_act = true;
                    for (int b = 0; b < WPG; b++) {
#pragma HLS UNROLL
                        act_word_t wd = word_zero();
                        for (int l = 0; l < N_CI; l++) {
#pragma HLS UNROLL
                            lane_set(wd, l, (unsigned)(int)y[(dst_w[b] * N_CI + l) & (N_PE - 1)] & 0xFF);
                        }
                        res_word[b] = wd;
                    }
                } else if (to_ddr) {
                    unit_t u = unit_zero();
                    for (int pe = 0; pe < N_PE; pe++) {
#pragma HLS UNROLL
                        unit_set_byte(u, pe, (unsigned)(int)y[pe] & 0xFF);
                    }
                    oq.write(u);  // blocks while the DDR writer's FIFO is full
                } else {
                    for (int pe = 0; pe < N_PE; pe++) {
#pragma HLS UNROLL
                        gsum[pe] += y[pe];
                    }
                }
            }
            if (res_act) {  // the result's rows before the counters move on (pix_dst of this pixel)
                for (int b = 0; b < WPG; b++) {
#pragma HLS UNROLL
                    if (dst_en[b]) act_ram[b][dst_row[b] + pix_dst] = res_word[b];
                }
            }

            // advance: chunk fastest, then kx, ky; then ox, oy; then the block, group, band
            const bool block_end = last && ox == osz - 1 && oy == ((band + 1) << L.r.lg_band) - 1;
            if (last) {
                step = 0;
                wsl = wslot(start + 1);
                pix_dst++;
                if (ox == osz - 1) {
                    ox = 0;
                    oy++;
                } else {
                    ox++;
                }
            } else {
                step++;
                wsl = P::WEIGHT_CACHE ? wsl + 1 : ((wsl + 1) & (WRING - 1));
            }
            if (c == L.r.ci_chunks - 1) {
                c = 0;
                if (kx == L.k - 1) {
                    kx = 0;
                    ky = ky == L.k - 1 ? 0 : ky + 1;
                } else {
                    kx++;
                }
            } else {
                c++;
            }
            if (block_end) {
                in_block = false;
                if (L.r.dst_kind == S::DST_GAP) {
                    for (int pe = 0; pe < N_PE; pe++) {
#pragma HLS UNROLL
                        gap[L.r.dst_cg0 + g][pe] = gsum[pe];
                    }
                }
                if (!L.r.w_res) w_rel = start + L.r.w_blk;
                if (g == L.r.co_groups - 1) {
                    g = 0;
                    start = L.r.w_off;
                    rows_rel = released_rows(L, band);
                    if (band == n_bands - 1) {
                        steps_done = true;
                    } else {
                        band++;
                        need = need_rows(L, band);
                    }
                } else {
                    g++;
                    start += L.r.w_blk;
                }
            }
            progress = true;
        }

        // ---- 3. a unit of the input ring into its row (when no result takes the write port) ----
        if (L.ring_fed && f_y < L.in_h && f_y < rows_free.out() + ring) {
            if (res_act) {
                ZQ_COUNT(C_PORT_BUSY, li);
            } else {
                unit_t u;
                const bool got = from_stem ? sq.read_nb(u) : fq.read_nb(u);
                if (got) {
                    ZQ_COUNT(C_UNITS, li);
                    const int frow = L.r.src_base + (f_u << lg_cstride) + ((f_y & rmask) << lg_in) + f_x;
                    for (int b = 0; b < WPG; b++) {
#pragma HLS UNROLL
                        if (!from_stem || f_u * WPG + b < P::IN_WORDS) act_ram[b][frow] = unit_word(u, b);
                    }
                    if (f_x == isz - 1) {
                        f_x = 0;
                        if (f_u == L.n_units - 1) {
                            f_u = 0;
                            f_y++;
                            rows_in = f_y;
                        } else {
                            f_u++;
                        }
                    } else {
                        f_x++;
                    }
                    progress = true;
                }
            }
        }

        // ---- 4. the guards' delay lines; the end; a cycle that changed nothing ------------------
        const bool moving = rows_ok.shift(rows_in) | words_ok.shift(w_words) | rows_free.shift(rows_rel) |
                            words_free.shift(w_rel);
        if (steps_done && (!L.ring_fed || f_y == L.in_h)) break;
        if (steps_done) ZQ_COUNT(C_TAIL, li);
#ifndef __SYNTHESIS__
        if (!progress && !moving) {
            ZQ_IDLE(([&]() -> std::string {
                        char buf[300];
                        snprintf(buf, sizeof buf,
                                 "layer %d: %s block %d of band %d needs input rows 0..%d (%d in the ring, "
                                 "%d released, next unit is row %d) and weight words up to %d (%d in the "
                                 "weight RAM, %d released, %d slots)",
                                 li, steps_done ? "done, taking the ring's last units;" : "before", g, band,
                                 need - 1, rows_in, rows_rel, f_y, start + L.r.w_blk, w_words, w_rel, WRING);
                        return std::string(buf);
                    }),
                    &wq, &sq, &fq, &oq);
            continue;
        }
#endif
        ZQ_TICK();
    }
    if (L.r.w_res) w_rel = L.r.w_off + L.r.co_groups * L.r.w_blk;  // a resident layer's blocks, at its end

    // ---- after the last layer: the logits ----------------------------------------------------------
    if (li == P::N_LAYERS - 1) {
    LOGITS:
        for (int k = 0; k < P::N_CLASSES; k++) {
#pragma HLS PIPELINE II=1
            ZQ_COUNT(C_LOGITS, li);
            lq.write(logit_of(gap[k >> LG_PE][k & (N_PE - 1)]));
            ZQ_TICK();
        }
    }
}

}  // namespace zq

#endif  // ZQ_CORE_H
