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
//  * take one unit of the layer's input ring (from the stem or a DDR fill reader: with both
//    activation paths, the even rows' reader or the odd rows', in turn when both have one) into
//    its row, when the row's slot is free and no result takes the RAM's write port this cycle
//    (the RTL's port-B rule, zq_fill_paths).
// This is the ring flow control of the RTL twin (zq_loop_gen, zq_wdma, zq_fill_dma, zq_stem):
// the same rings, the same release points (a block's words after its last step unless the
// layer is resident, the rows a band no longer needs after the band), the same memory layout.
//
// The loop body is two halves, as its pipeline is:
//  * the control (loop-carried: the counters, the takes, the releases, the guards) decides what
//    this iteration does and hands the datapath a StepOp; its next-state logic is short: every
//    counter is an ap_uint of its spec width (zq_layer.h), compared with registers (the band's
//    last output row, the next band's rows needed and released, computed a band ahead; the
//    block's last word), and the loop exits on registered flags (never through a stream read);
//  * the datapath (feed-forward but for the accumulators) executes the StepOp: ONE read of each
//    activation-RAM bank and ONE read of the weight RAM (a bias word or a weight word, the slot
//    muxed by the control), the MAC array, the requantization, and ONE store per activation-RAM
//    bank whose address and data are muxed between the step's result and the ring unit the
//    control took (they never come in one iteration). The weight RAM takes one store per
//    iteration (the weight beat), the GAP RAM one per block.
// So every RAM bank sees at most one read and one store per iteration: ram_s2p at II=1.
//
// Hazards. The loop declares the activation and weight RAMs free of inter-iteration dependences
// (DEPENDENCE inter false): its reads of ring rows and weight words must never see a store still
// in flight, and its stores must never overtake a read of the slot's old contents. So a row or
// word becomes readable AVAIL_GUARD iterations after its last store was issued, and a weight-RAM
// slot is reusable RELEASE_GUARD iterations after its release: delay lines of counters. Both
// guards are 2 * HLS_CORE_DEPTH + 1 (spec/engine.py: the loop's stated pipeline depth, with a
// margin of two), so any store may land up to twice the stated depth after a read of its
// iteration, or a weight beat's store that much before one. A ring row's slot is reusable the next
// iteration (ROW_RELEASE_GUARD): the unit's store is the result's, after the reads by construction.
// The pipeline-hazard C simulation (csim/zq_hazard.h, through ZQ_STORE / ZQ_PASS) runs the loop
// with every store and release, or every read, deferred by each such delay, bit-exact; with the
// guards at 1 it fails. A layer never reads the region it writes (layer_table_error()
// in zq_top.cpp and the exporter refuse tables where a layer's source and destination overlap).
#ifndef ZQ_CORE_H
#define ZQ_CORE_H

#ifndef __SYNTHESIS__
#include <stdio.h>

#include <string>
#endif

#include "zq_count.h"
#include "zq_ddr.h"
#include "zq_layer.h"
#include "zq_mac.h"
#include "zq_requant.h"
#include "zq_stream.h"
#include "zq_types.h"

// g++: the datapath inlined into the loop, as Vitis does (an out-of-line call hides from the
// optimizer that its arrays are the loop's own registers: the native C simulation ran 2x slower)
#if defined(__GNUC__) && !defined(__SYNTHESIS__)
#define ZQ_CSIM_INLINE inline __attribute__((always_inline))
#else
#define ZQ_CSIM_INLINE inline
#endif

namespace zq {

// A counter delayed by N iterations: a shift register of its past values (what Vitis
// synthesizes, and what every C simulation in exact types compiles). The native C simulation
// (-DZQ_CSIM_NATIVE, never synthesized) keeps a ring of them instead: the same values, cheaper.
template <typename T, int N>
struct Delayed {
    T v[N];
#if ZQ_NATIVE
    int head;  // v[head] is the oldest value
#endif
    void reset(T x) {
#pragma HLS INLINE
        for (int i = 0; i < N; i++) {
#pragma HLS UNROLL
            v[i] = x;
        }
#if ZQ_NATIVE
        head = 0;
#endif
    }
    T out() const {
#pragma HLS INLINE
#if ZQ_NATIVE
        return v[head];
#else
        return v[N - 1];
#endif
    }
    // shift in the current value; true while an older value is still on its way
    bool shift(T x) {
#pragma HLS INLINE
        const bool moving = out() != x;
#if ZQ_NATIVE
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

// What the control hands the datapath in one iteration (a pipeline register's contents).
struct StepOp {
    bool bias;            // a block's bias step: the biases from the weight word
    bool mac;             // a MAC step
    bool first, last;     // the pixel's first and last step (MAC)
    bool block_end;       // the block's last step (MAC): the GAP sums leave
    wslot_t wslot;        // the weight-RAM slot read: the bias word or the weight word
    act_addr_t row;       // the activation-RAM row read (in every bank)
    bank_t bank;          // the bank whose word enters the MAC array (channel word c mod WPG)
    bool inb;             // the tap is inside the map (else zero lanes)
    grp_t g;              // the output group
    nvalid_t valid;       // its valid output channels
    opix_t pix;           // the output pixel (oy * W + ox) of a last step
    bool out2;            // its result unit goes to DDR on path 2 (its line's parity; zq_ddr.h)
    bool unit;            // a ring unit taken: stored to unit_row of the banks it fills
    act_addr_t unit_row;
    units_t unit_u;       // its unit within the pixel (channel words unit_u * WPG ..)
    unit_t unit_data;
    StepOp()
        : bias(false), mac(false), first(false), last(false), block_end(false), wslot(0), row(0), bank(0),
          inb(false), out2(false), unit(false) {}
    bool any() const { return bias || mac || unit; }
};

// The datapath of one iteration: the step's reads, the MAC array, the result, the stores (one per
// activation-RAM bank: the result or the ring unit), the GAP sums. dst_w[b]: the group's channel
// word that bank b holds; dst_r0[b]: its row offset in channel-word rows of the destination.
template <typename Pipe>
ZQ_CSIM_INLINE void datapath(int li, const StepOp& op, const Layer& L, act_word_t act_ram[WPG][ACT_ROWS],
                     wbeat_t wbuf[WBUF][BPW], gap_t gap[GAP_ROWS][N_PE], acc_t acc[N_PE], acc_t bias[N_PE],
                     gap_t gsum[N_PE], const bank_t dst_w[WPG], const act_addr_t dst_r0[WPG],
                     zq::stream<unit_t, OUT_FIFO>& oq, zq::stream<unit_t, OUT_FIFO>& oq2, Pipe& pipe) {
#pragma HLS INLINE
    (void)pipe;
    (void)li;
    const bool to_act = L.r.dst_kind == S::DST_ACT, to_ddr = L.r.dst_kind == S::DST_DDR;
    const bool to_gap = L.r.dst_kind == S::DST_GAP, from_stem = L.r.src_kind == S::SRC_STEM;
    // the reads: one word of every activation-RAM bank at one row, one weight word (the native C
    // simulation reads the same words in place)
#if ZQ_NATIVE
    const wbeat_t* wword = wbuf[op.wslot];
    const act_word_t& xw = act_ram[op.bank][op.row];
#else
    act_word_t xw = word_zero();
    wbeat_t wword[BPW];
#pragma HLS ARRAY_PARTITION variable=wword complete
    if (op.mac || op.bias) {
        for (int k = 0; k < BPW; k++) {
#pragma HLS UNROLL
            wword[k] = wbuf[op.wslot][k];
        }
    }
    if (op.mac) {
        for (int b = 0; b < WPG; b++) {
#pragma HLS UNROLL
            const act_word_t x = act_ram[b][op.row];
            if (op.bank == b) xw = x;
        }
    }
#endif
    if (op.bias) {
        bias_of(wword, bias);
        for (int pe = 0; pe < N_PE; pe++) {
#pragma HLS UNROLL
            gsum[pe] = 0;
        }
    }
    const bool result = op.mac && op.last;
    y_t y[N_PE];
#pragma HLS ARRAY_PARTITION variable=y complete
    if (op.mac) {
        mac_step(xw, op.inb, L.r.src_signed != 0, wword, op.first, bias, acc);
        if (result) {
            ZQ_COUNT(C_RESULTS, li);
            for (int pe = 0; pe < N_PE; pe++) {
#pragma HLS UNROLL
                y[pe] = pe < op.valid ? requantize(acc[pe], L) : y_t(0);
            }
            if (to_ddr) {
                unit_t u = unit_zero();
                for (int pe = 0; pe < N_PE; pe++) {
#pragma HLS UNROLL
                    unit_set_byte(u, pe, (unsigned)(int)y[pe] & 0xFF);
                }
                if (op.out2) {
                    oq2.write(u);  // blocks while the path-2 writer's FIFO is full
                } else {
                    oq.write(u);   // blocks while the DDR writer's FIFO is full
                }
            } else if (to_gap) {
                for (int pe = 0; pe < N_PE; pe++) {
#pragma HLS UNROLL
                    gsum[pe] += y[pe];
                }
            }
        }
        if (op.block_end && to_gap) {
            const gap_row_t gr = gap_row_t(L.r.dst_cg0) + op.g;
            for (int pe = 0; pe < N_PE; pe++) {
#pragma HLS UNROLL
                ZQ_STORE(pipe, gap[gr][pe], gsum[pe]);
            }
        }
    }
    // one store per activation-RAM bank: the result's word (at the group's rows + the pixel) or the
    // ring unit's word (at its row); the control never issues both in one iteration
    const bool res_act = result && to_act;
    if (res_act || op.unit) {
        const nvalid_t nwords = (op.valid + N_CI - 1) >> LG_CI;  // the group's channel words written
        for (int b = 0; b < WPG; b++) {
#pragma HLS UNROLL
            act_word_t data;
            act_addr_t addr;
            bool en;
            if (res_act) {
                data = word_zero();
                for (int l = 0; l < N_CI; l++) {
#pragma HLS UNROLL
                    lane_set(data, l, (unsigned)(int)y[(dst_w[b] * N_CI + l) & (N_PE - 1)] & 0xFF);
                }
                addr = act_addr_t(L.r.dst_base) + (act_addr_t(dst_r0[b] + op.g) << (int)(2 * L.r.lg_out)) +
                       act_addr_t(op.pix);
                en = dst_w[b] < nwords;
            } else {
                data = unit_word(op.unit_data, b);
                addr = op.unit_row;
                en = !from_stem || op.unit_u * WPG + b < P::IN_WORDS;
            }
            if (en) ZQ_STORE(pipe, act_ram[b][addr], data);
        }
    }
}

inline void core(int li, bool load, zq::stream<wbeat_t, W_FIFO>& wq, zq::stream<unit_t, STEM_FIFO>& sq,
                 zq::stream<unit_t, FILL_FIFO>& fq, zq::stream<unit_t, FILL_FIFO>& fq2,
                 zq::stream<unit_t, OUT_FIFO>& oq, zq::stream<unit_t, OUT_FIFO>& oq2,
                 zq::stream<logit_t, LOGIT_FIFO>& lq) {
#pragma HLS INLINE off
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
    static word_t w_words;     // image words complete in the weight RAM
    static wbeat_idx_t w_beat;  // beats of word w_words taken
    static word_t w_rel;       // words the ring may overwrite
    if (li == 0) {
        w_words = (P::WEIGHT_CACHE && !load) ? P::IMAGE_WORDS : 0;
        w_beat = 0;
        w_rel = 0;
    }

    // ---- the layer's constants (registers of their widths) ---------------------------------------
    const Layer L = decode(li);
    const lg_t lg_in = L.r.lg_in, lg_out = L.r.lg_out, lg_band = L.r.lg_band, s2 = L.r.s2;
    const lg_t lg_cstride = L.r.src_lg_rows + lg_in;      // rows between channel-word rows of the source
    const map_t isz_m1 = (map_t(1) << lg_in) - 1, osz_m1 = (map_t(1) << lg_out) - 1;
    const map_t rmask = (map_t(1) << (int)L.r.src_lg_rows) - 1;
    const map_t ring = map_t(1) << (int)L.r.src_lg_rows;
    const map_t in_h_m1 = L.in_h - 1;
    const coord_t pad = L.pad;
    const tap_t k_m1 = L.k - 1;
    const chunk_t c_m1 = L.r.ci_chunks - 1;
    const step_t taps_m1 = L.r.w_blk - 2;                 // steps per pixel - 1 (k * k * ci_chunks - 1)
    const step_t w_blk = L.r.w_blk;
    const grp_t g_m1 = L.r.co_groups - 1;
    const nvalid_t co_last = L.r.co_last;
    const map_t band_rows = map_t(1) << lg_band;          // output rows per band (R)
    const map_t bands_m1 = (map_t(1) << (lg_out - lg_band)) - 1;
    const opix_t band_px = opix_t(band_rows) << lg_out;   // output pixels per band
    const band_lim_t rs = band_step(L);                  // input rows from one band to the next
    const act_addr_t src_base = L.r.src_base;
    const units_t units_m1 = L.n_units - 1;
    const bool ring_fed = L.ring_fed, from_stem = L.r.src_kind == S::SRC_STEM, w_res = L.r.w_res;
    const bool to_act = L.r.dst_kind == S::DST_ACT;
    // the activation paths (zq_ddr.h): reads split by row parity, results by their line's parity
    const bool f_split = !from_stem && fill_split(P::LAYERS[li]);
    const int f_one = from_stem ? 0 : fill_path(P::LAYERS[li]);  // the one reading path when not split
    const bool w_split = write_split(P::LAYERS[li]), w_two = write_path(P::LAYERS[li]) == 1;
    const map_t f_dy = f_split ? 2 : 1;                   // rows from one of a path's rows to its next
    const word_t w_off = L.r.w_off, w_first_end = w_off + w_blk;  // block 0's words [w_off, w_first_end)
    // the destination banks: bank b holds channel word dst_w[b] of a group, in rows dst_r0[b] + g
    bank_t dst_w[WPG];
    act_addr_t dst_r0[WPG];
#pragma HLS ARRAY_PARTITION variable=dst_w complete
#pragma HLS ARRAY_PARTITION variable=dst_r0 complete
    for (int b = 0; b < WPG; b++) {
#pragma HLS UNROLL
        dst_w[b] = (b - (int)L.r.dst_cw0) & (WPG - 1);
        dst_r0[b] = ((int)L.r.dst_cw0 + dst_w[b]) >> LG_WPG;
    }

    // ---- the control's state ----------------------------------------------------------------------
    // the MAC sequence: band, group (block), then pixel (oy, ox), ky, kx, chunk c
    map_t band = 0;
    grp_t g = 0;
    word_t start = w_off, blk_end = w_first_end;           // block g's words [start, blk_end)
    bool in_block = false, steps_done = false;
    bool g_last = g_m1 == 0, band_last = bands_m1 == 0;
    map_t ox = 0, oy = 0;
    tap_t ky = 0, kx = 0;
    chunk_t c = 0;
    step_t step = 0;
    wslot_t wsl = 0;                                       // the weight word of this step
    opix_t pix = 0, band_pix0 = 0;                         // the step's output pixel; the band's first
    map_t band_oy0 = 0, last_oy = band_rows - 1;           // the band's first and last output rows
    nvalid_t valid = g_last ? co_last : nvalid_t(N_PE);
    // the band limits, a band ahead (zq_layer.h)
    map_t need = clamp_rows(L, need_raw0(L));              // input rows this band needs
    map_t rel = clamp_rows(L, rel_raw0(L));                // input rows released after it
    band_lim_t need_nx = need_raw0(L) + rs, rel_nx = rel_raw0(L) + rs;  // the next band's, unclamped

    // the input ring: each path's next unit (row f_y[p], unit f_u[p], column f_x[p]); path 0 is the
    // stem or the DDR path 1, path 1 the DDR path 2; one path: every row, both: even rows on path 0,
    // odd rows on path 1 (a path with no rows is done from the start)
    map_t f_y[2], f_x[2];
    units_t f_u[2];
    bool f_done[2];
#pragma HLS ARRAY_PARTITION variable=f_y complete
#pragma HLS ARRAY_PARTITION variable=f_x complete
#pragma HLS ARRAY_PARTITION variable=f_u complete
#pragma HLS ARRAY_PARTITION variable=f_done complete
    for (int q = 0; q < 2; q++) {
#pragma HLS UNROLL
        f_done[q] = !ring_fed || (f_split ? map_t(q) > in_h_m1 : f_one != q);
        f_y[q] = f_done[q] ? L.in_h : f_split ? map_t(q) : map_t(0);  // a path done counts every row in
        f_x[q] = 0;
        f_u[q] = 0;
    }
    bool ring_done = !ring_fed;
    bool f_turn = false;   // both paths: path 1 goes first when both have a unit (then the other)
    map_t rows_in = 0;     // rows complete in the ring (from row 0: min of the paths' next rows)
    map_t rows_rel = 0;    // rows the ring may overwrite
    // the guards' delay lines: rows and words readable, ring and weight-RAM slots free (the limit)
    Delayed<map_t, AVAIL_GUARD> rows_ok;
    Delayed<word_t, AVAIL_GUARD> words_ok;
    Delayed<band_lim_t, ROW_RELEASE_GUARD> rows_lim;
    Delayed<word_t, RELEASE_GUARD> words_lim;
    rows_ok.reset(0);
    words_ok.reset(w_words);
    rows_lim.reset(ring);
    words_lim.reset(w_rel + WRING);

    // the datapath's state
    acc_t acc[N_PE], bias[N_PE];
    gap_t gsum[N_PE];
#pragma HLS ARRAY_PARTITION variable=acc complete
#pragma HLS ARRAY_PARTITION variable=bias complete
#pragma HLS ARRAY_PARTITION variable=gsum complete
    for (int pe = 0; pe < N_PE; pe++) {
#pragma HLS UNROLL
        acc[pe] = 0;
        bias[pe] = 0;
        gsum[pe] = 0;
    }
    ZQ_PIPE(StepOp, pipe);

    ZQ_COUNT_ENTRY(C_CORE, li);
CORE:
    for (;;) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=MAX_LAYER_STEPS
#pragma HLS DEPENDENCE variable=act_ram inter false
#pragma HLS DEPENDENCE variable=wbuf inter false
        ZQ_COUNT(C_CORE, li);
        bool progress = false;
        const bool ring_was_done = ring_done, steps_were_done = steps_done;
        StepOp op;

        // ---- 1. a weight beat for its word's slot ---------------------------------------------
        bool w_take = false;
        wbeat_t wb;
        const wslot_t w_slot = slot_of(w_words);
        const wbeat_idx_t w_at = w_beat;
        if (w_words < P::IMAGE_WORDS && (P::WEIGHT_CACHE || w_words < words_lim.out())) {
            if (wq.read_nb(wb)) {
                w_take = true;
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
        if (!steps_done && !in_block) {
            const bool rows_there = !ring_fed || need <= rows_ok.out();
            const bool words_there = blk_end <= words_ok.out();
            if (rows_there && words_there) {
                ZQ_COUNT(C_BIAS, li);
                op.bias = true;
                op.wslot = slot_of(start);
                op.g = g;
                op.valid = valid;
                in_block = true;
                oy = band_oy0;
                ox = ky = kx = 0;
                c = 0;
                step = 0;
                wsl = next_slot(op.wslot);
                pix = band_pix0;
                progress = true;
            } else if (!rows_there) {
                ZQ_COUNT(C_WAIT_ROWS, li);
            } else {
                ZQ_COUNT(C_WAIT_WEIGHTS, li);
            }
        } else if (!steps_done) {
            ZQ_COUNT(C_MAC, li);
            const bool last = step == taps_m1;
            const bool ox_last = ox == osz_m1;
            const bool block_end = last && ox_last && oy == last_oy;
            // the input word: pixel (oy*s + ky - pad, ox*s + kx - pad), channel word c; zero outside
            const coord_t iy = coord_t(oy << s2) + ky - pad;
            const coord_t ix = coord_t(ox << s2) + kx - pad;
            op.mac = true;
            op.first = step == 0;
            op.last = last;
            op.block_end = block_end;
            op.inb = iy >= 0 && iy <= in_h_m1 && ix >= 0 && ix <= isz_m1;
            op.row = op.inb ? act_addr_t(src_base + (act_addr_t(c >> LG_WPG) << lg_cstride) +
                                         (act_addr_t(map_t(iy) & rmask) << lg_in) + act_addr_t(map_t(ix) & isz_m1))
                            : act_addr_t(0);
            op.bank = c & (WPG - 1);
            op.wslot = wsl;
            op.g = g;
            op.valid = valid;
            op.pix = pix;
            // a result bound for DDR: path 2 for the odd 128-byte lines of its run (a run starts on an
            // even line, zq_ddr.h: the line is bit 4 - LG_BPU of the pixel), or when path 2 writes all
            op.out2 = w_split ? ((pix >> (LG_LINE_BEATS - LG_BPU)) & 1) != 0 : w_two;

            // advance: chunk fastest, then kx, ky; then ox, oy; then the block, group, band
            if (last) {
                step = 0;
                wsl = next_slot(slot_of(start));
                pix++;
                if (ox_last) {
                    ox = 0;
                    oy++;
                } else {
                    ox++;
                }
            } else {
                step++;
                wsl = next_slot(wsl);
            }
            if (c == c_m1) {
                c = 0;
                if (kx == k_m1) {
                    kx = 0;
                    ky = ky == k_m1 ? tap_t(0) : tap_t(ky + 1);
                } else {
                    kx++;
                }
            } else {
                c++;
            }
            if (block_end) {
                in_block = false;
                if (!w_res) ZQ_STORE(pipe, w_rel, blk_end);  // the block's words are released
                if (g_last) {
                    g = 0;
                    start = w_off;
                    blk_end = w_first_end;
                    ZQ_STORE(pipe, rows_rel, rel);  // the rows the next band no longer needs
                    if (band_last) {
                        steps_done = true;
                    } else {
                        band++;
                        band_last = band == bands_m1;
                        band_oy0 += band_rows;
                        last_oy += band_rows;
                        band_pix0 += band_px;
                        need = clamp_rows(L, need_nx);
                        rel = clamp_rows(L, rel_nx);
                        need_nx += rs;
                        rel_nx += rs;
                    }
                } else {
                    g++;
                    start = blk_end;
                    blk_end += w_blk;
                }
                g_last = g == g_m1;
                valid = g_last ? co_last : nvalid_t(N_PE);
            }
            progress = true;
        }

        // ---- 3. a unit of the input ring for its row (when no result takes the store port) -------
        const bool res_port = op.mac && op.last && to_act;
        const bool ok0 = !f_done[0] && f_y[0] < rows_lim.out(), ok1 = !f_done[1] && f_y[1] < rows_lim.out();
        if (ok0 || ok1) {
            if (res_port) {
                ZQ_COUNT(C_PORT_BUSY, li);
            } else {
                const bool has0 = ok0 && (from_stem ? !sq.empty() : !fq.empty());
                const bool has1 = ok1 && !fq2.empty();
                if (has0 || has1) {
                    const int q = has1 && (!has0 || f_turn) ? 1 : 0;  // the path whose unit is taken
                    const unit_t u = q ? fq2.read() : from_stem ? sq.read() : fq.read();
                    ZQ_COUNT(C_UNITS, li);
                    f_turn = q == 0;
                    const map_t fy = f_y[q], fx = f_x[q];
                    const units_t fu = f_u[q];
                    op.unit = true;
                    op.unit_row = src_base + (act_addr_t(fu) << lg_cstride) + (act_addr_t(fy & rmask) << lg_in) +
                                  act_addr_t(fx);
                    op.unit_u = fu;
                    op.unit_data = u;
                    if (fx == isz_m1) {
                        f_x[q] = 0;
                        if (fu == units_m1) {
                            f_u[q] = 0;
                            f_done[q] = fy + f_dy > in_h_m1;
                            f_y[q] = fy + f_dy;
                        } else {
                            f_u[q] = fu + 1;
                        }
                    } else {
                        f_x[q] = fx + 1;
                    }
                    ring_done = f_done[0] && f_done[1];
                    rows_in = f_y[0] < f_y[1] ? f_y[0] : f_y[1];
                    progress = true;
                }
            }
        }

        // ---- 4. the datapath, then the weight beat's store (one store per weight-RAM bank) ------
        datapath(li, ZQ_PASS(pipe, op), L, act_ram, wbuf, gap, acc, bias, gsum, dst_w, dst_r0, oq, oq2, pipe);
        if (w_take) ZQ_STORE(pipe, wbuf[w_slot][w_at], wb);  // bank w_at of the slot
        ZQ_END_ITERATION(pipe);

        // ---- 5. the guards' delay lines; the end (on registered flags); a cycle that changed nothing
        const bool moving = rows_ok.shift(rows_in) | words_ok.shift(w_words) | rows_lim.shift(rows_rel + ring) |
                            words_lim.shift(w_rel + WRING);
        if (steps_done && ring_was_done) break;
        if (steps_were_done) ZQ_COUNT(C_TAIL, li);
#ifndef __SYNTHESIS__
#if !ZQ_HLS_STREAMS
        const bool idle = !progress && !moving && !pipe.pending();
#else
        const bool idle = !progress && !moving;
#endif
        if (idle) {
            ZQ_IDLE(([&]() -> std::string {
                        char buf[300];
                        snprintf(buf, sizeof buf,
                                 "layer %d: %s block %d of band %d needs input rows 0..%d (%d in the ring, "
                                 "%d released, next unit is row %d) and weight words up to %d (%d in the "
                                 "weight RAM, %d released, %d slots)",
                                 li, steps_done ? "done, taking the ring's last units;" : "before", (int)g,
                                 (int)band, (int)need - 1, (int)rows_in, (int)rows_rel,
                                 (int)(f_y[0] < f_y[1] ? f_y[0] : f_y[1]),
                                 (int)blk_end,
                                 (int)w_words, (int)w_rel, WRING);
                        return std::string(buf);
                    }),
                    &wq, &sq, &fq, &fq2, &oq, &oq2);
            continue;
        }
#endif
        ZQ_TICK();
    }
#if !ZQ_HLS_STREAMS
    // the hazard C simulation: the steps and stores still in flight (the pipeline's drain)
    while (pipe.pending()) {
        datapath(li, pipe.pass(StepOp()), L, act_ram, wbuf, gap, acc, bias, gsum, dst_w, dst_r0, oq, oq2, pipe);
        pipe.end_iteration();
        ZQ_TICK();
    }
#endif
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
