// The stem process: the input frame from s_axis_in -> units of the first layer's input rows.
//
// The first layer reads the stem tensor: the im2col of the frame (STEM_IM2COL: lane
// j = (ky*K + kx)*IN_CH + c of pixel (oy, ox) = frame pixel (oy*S + ky - K/2, ox*S + kx - K/2),
// channel c; zero outside the frame and for j >= K*K*IN_CH) or else the channel-padded frame
// (K = S = 1). Its rows are built here from a ring of RAW_RR raw frame rows, which is filled
// from the stream as the rows are needed (rtl/zq_stem.sv does the same), at the RTL's rate:
// a beat per cycle into a byte buffer, a pixel per cycle out of it.
//
// Out: for every stem row ys, for every unit u (STEM_UNITS per pixel: WPG words each, one per
// bank), for every column x: one unit, the order in which the core fills any ring
// (row, unit, column). The stream's backpressure is the ring's flow control: the core takes a
// unit only when its ring slot is free. At the end the rest of the frame is taken up to its
// TLAST and the framing status goes to the output process.
#ifndef ZQ_STEM_H
#define ZQ_STEM_H

#include "zq_count.h"
#include "zq_framing.h"
#include "zq_layer.h"
#include "zq_stream.h"
#include "zq_types.h"

namespace zq {

// A raw pixel: its IN_CH bytes in one word (channel c in bits 8c+7..8c), as the RTL's raw rows.
typedef ap_uint<8 * P::IN_CH> pix_t;

inline byte_t pix_byte(const pix_t& p, int c) {
#pragma HLS INLINE
    return (byte_t)p.range(8 * c + 7, 8 * c).to_uint();
}

// RAW-loop iterations for the frame's first p pixels: an iteration takes at most one beat and
// writes at most one pixel, and a beat is taken only when the buffer holds less than a pixel,
// so max(p, ceil(p * IN_CH / 4)).
inline int raw_iters_to(int p) {
#pragma HLS INLINE
    return P::IN_CH <= 4 ? p : (p * P::IN_CH + 3) >> 2;
}

// One RAW step: take a beat when the byte buffer holds less than a pixel, and write a pixel
// (one word of IN_CH bytes into row slot `slot`, column x) when it holds one.
struct RawPos {
    int slot, x;  // where the next pixel goes
};
inline void raw_step(hls::stream<zq_axis_in>& s, InState& in, pix_t raw[P::RAW_RR][P::IN_SIZE], RawPos& at) {
#pragma HLS INLINE
    if (in.bcnt < P::IN_CH) {  // less than a pixel in the buffer: the next beat behind its bytes
        const ap_uint<8 * IN_BUF_BYTES> beat = take_beat(s, in);
        in.buf |= beat << (8 * in.bcnt);
        in.bcnt += 4;
    }
    if (in.bcnt >= P::IN_CH) {  // a pixel: IN_CH bytes to the raw ring
        raw[at.slot][at.x] = in.buf.range(8 * P::IN_CH - 1, 0);
        in.buf >>= 8 * P::IN_CH;
        in.bcnt -= P::IN_CH;
        if (at.x == P::IN_SIZE - 1) {
            at.x = 0;
            at.slot = (at.slot + 1) & (P::RAW_RR - 1);
        } else {
            at.x++;
        }
    }
}

// Raw frame rows [from, to) from the stream into their slots of the raw ring: one loop at II=1,
// a RAW step per iteration (the first stem row's rows, before its scan).
inline void read_raw_rows(hls::stream<zq_axis_in>& s, InState& in, pix_t raw[P::RAW_RR][P::IN_SIZE], int from,
                          int to) {
    const int n_iter = raw_iters_to(to * P::IN_SIZE) - raw_iters_to(from * P::IN_SIZE);
    RawPos at = {from & (P::RAW_RR - 1), 0};
    ZQ_COUNT_ENTRY(C_RAW, FRAME_ROW);
RAW:
    for (int i = 0; i < n_iter; i++) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=MAX_RAW_ITERS
        ZQ_COUNT(C_RAW, FRAME_ROW);
        raw_step(s, in, raw, at);
        ZQ_TICK();
    }
}

// The im2col words of one stem pixel from the K x K window: lane j = (ky*K + kx)*IN_CH + c.
inline act_word_t stem_word(const byte_t win[P::STEM_K][P::STEM_K][P::IN_CH], int w) {
#pragma HLS INLINE
    act_word_t wd = word_zero();
    for (int l = 0; l < N_CI; l++) {
#pragma HLS UNROLL
        const int j = w * N_CI + l;
        if (j < STEM_LANES) {
            const int tap = j / P::IN_CH, c = j % P::IN_CH;
            lane_set(wd, l, win[tap / P::STEM_K][tap % P::STEM_K][c]);
        }
    }
    return wd;
}

// Stem row ys: the column scan with a K x K window of pixels, one column per cycle, and beside
// it the raw rows [fill_from, fill_to) the next stem row needs, a RAW step per cycle (they go to
// row slots the window does not read: the ring holds RAW_RR >= K + S rows), as rtl/zq_stem.sv
// fills raw rows while its window builder scans. The loop runs max(NCOL, RAW steps) iterations.
// Each column is read from every bank (row slot) of the raw ring, one read per bank, and the
// window's K rows are selected from those (no bank is read twice in a cycle). A pixel of one unit
// goes out inside the scan; pixels of more units go to a row buffer, sent unit by unit after it.
inline void scan_row(hls::stream<zq_axis_in>& s, InState& in, pix_t raw[P::RAW_RR][P::IN_SIZE], int ys,
                     int fill_from, int fill_to, zq::stream<unit_t, STEM_FIFO>& out) {
    constexpr int K = P::STEM_K;
    const int n_fill = fill_to > fill_from ? raw_iters_to(fill_to * P::IN_SIZE) - raw_iters_to(fill_from * P::IN_SIZE)
                                           : 0;
    const int n_iter = cmax(STEM_NCOL, n_fill);
    RawPos at = {fill_from & (P::RAW_RR - 1), 0};
    const int iy0 = ys * P::STEM_S - STEM_PAD;
    act_word_t srow[P::STEM_SIZE][P::IN_WORDS];
#pragma HLS ARRAY_PARTITION variable=srow complete dim=2
    byte_t win[K][K][P::IN_CH];
#pragma HLS ARRAY_PARTITION variable=win complete dim=0
    bool row_ok[K];
    int sel[K];
#pragma HLS ARRAY_PARTITION variable=row_ok complete
#pragma HLS ARRAY_PARTITION variable=sel complete
    for (int ky = 0; ky < K; ky++) {
#pragma HLS UNROLL
        row_ok[ky] = iy0 + ky >= 0 && iy0 + ky < P::IN_SIZE;
        sel[ky] = (iy0 + ky) & (P::RAW_RR - 1);
        for (int kx = 0; kx < K; kx++) {
#pragma HLS UNROLL
            for (int c = 0; c < P::IN_CH; c++) {
#pragma HLS UNROLL
                win[ky][kx][c] = 0;
            }
        }
    }
    int phase = 0;  // (col - (K-1)) mod S once col >= K-1
    int ox = 0;
    ZQ_COUNT_ENTRY(C_SCAN, FRAME_ROW);
SCAN:
    for (int col = 0; col < n_iter; col++) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=STEM_NCOL max=MAX_RAW_ITERS
#pragma HLS DEPENDENCE variable=raw inter false
        ZQ_COUNT(C_SCAN, FRAME_ROW);
        if (col < n_fill) raw_step(s, in, raw, at);  // the next stem row's raw rows (other slots)
        const int ix = col - STEM_PAD;
        const bool col_ok = ix >= 0 && ix < P::IN_SIZE;
        pix_t colv[P::RAW_RR];  // column ix of every row slot: one read per bank
#pragma HLS ARRAY_PARTITION variable=colv complete
        for (int r = 0; r < P::RAW_RR; r++) {
#pragma HLS UNROLL
            colv[r] = raw[r][col_ok ? ix : 0];
        }
        for (int ky = 0; ky < K; ky++) {
#pragma HLS UNROLL
            for (int kx = 0; kx < K - 1; kx++) {
#pragma HLS UNROLL
                for (int c = 0; c < P::IN_CH; c++) {
#pragma HLS UNROLL
                    win[ky][kx][c] = win[ky][kx + 1][c];
                }
            }
            for (int c = 0; c < P::IN_CH; c++) {
#pragma HLS UNROLL
                win[ky][K - 1][c] = (col_ok && row_ok[ky]) ? pix_byte(colv[sel[ky]], c) : byte_t(0);
            }
        }
        if (col >= K - 1 && col < STEM_NCOL) {
            if (phase == 0) {
                if (STEM_UNITS == 1) {
                    unit_t u = unit_zero();
                    for (int w = 0; w < P::IN_WORDS; w++) {
#pragma HLS UNROLL
                        unit_set_word(u, w, stem_word(win, w));  // word w in bank w (IN_WORDS <= WPG)
                    }
                    out.write(u);
                } else {
                    for (int w = 0; w < P::IN_WORDS; w++) {
#pragma HLS UNROLL
                        srow[ox][w] = stem_word(win, w);
                    }
                }
                ox++;
            }
            phase = phase == P::STEM_S - 1 ? 0 : phase + 1;
        }
        ZQ_TICK();
    }
    if (STEM_UNITS == 1) return;

    // the row's units from the buffer, unit-major (the ring's fill order), one per cycle
    int px = 0, u = 0;
    ZQ_COUNT_ENTRY(C_STEM_WRITE, FRAME_ROW);
STEM_WRITE:
    for (int i = 0; i < P::STEM_SIZE * STEM_UNITS; i++) {
#pragma HLS PIPELINE II=1
        ZQ_COUNT(C_STEM_WRITE, FRAME_ROW);
        unit_t v = unit_zero();
        for (int b = 0; b < WPG; b++) {
#pragma HLS UNROLL
            const int w = u * WPG + b;
            if (w < P::IN_WORDS) unit_set_word(v, b, srow[px][w < P::IN_WORDS ? w : 0]);
        }
        out.write(v);
        if (px == P::STEM_SIZE - 1) {
            px = 0;
            u++;
        } else {
            px++;
        }
        ZQ_TICK();
    }
}

// The last raw row stem row ys needs.
inline int stem_last_raw(int ys) {
#pragma HLS INLINE
    return cmin(P::IN_SIZE - 1, ys * P::STEM_S - STEM_PAD + P::STEM_K - 1);
}

// The process: the first stem row's raw rows, then every stem row's scan beside the next one's
// raw rows; then the rest of the frame and the framing status.
inline void stem(hls::stream<zq_axis_in>& s_in, zq::stream<unit_t, STEM_FIFO>& out,
                 zq::stream<InStatus, 2>& status) {
#pragma HLS INLINE off
    static pix_t raw[P::RAW_RR][P::IN_SIZE];  // RAW_RR banks (row slots), a pixel per word
#pragma HLS ARRAY_PARTITION variable=raw complete dim=1
    InState in;
    in_start(in);
    int raw_avail = stem_last_raw(0) + 1;  // raw rows in the ring
    read_raw_rows(s_in, in, raw, 0, raw_avail);
STEM_ROWS:
    for (int ys = 0; ys < P::STEM_SIZE; ys++) {
        const int fill_to = ys + 1 < P::STEM_SIZE ? stem_last_raw(ys + 1) + 1 : raw_avail;
        scan_row(s_in, in, raw, ys, raw_avail, fill_to, out);
        raw_avail = cmax(raw_avail, fill_to);
    }
    in_finish(s_in, in);
    status.write(in_status(in));
}

}  // namespace zq

#endif  // ZQ_STEM_H
