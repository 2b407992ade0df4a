// Constants and data types of one engine build (the export's net_params.h).
//
// The engine is one N_PE x N_CI MAC array reused by every layer (spec/engine.py,
// docs/ARCHITECTURE.md). Memories and their layouts, shared with the RTL twin (rtl/):
//
// * activation RAM act[WPG][ACT_ROWS] of N_CI 8-bit lanes: channel word cw of row y,
//   column x of a region at `base` lives in bank cw mod WPG, row
//   base + ((cw / WPG) << (lg_rows + lg_w)) + ((y mod 2^lg_rows) << lg_w) + x
//   (a whole tensor has lg_rows = lg_size; a ring fewer rows, slot y mod 2^lg_rows);
// * weight RAM wbuf[WBUF_DEPTH][BPW] of N_PE x N_CI int8 words in 64-bit beats: image
//   word i in slot i mod 2^WR_W (ring), or slot i when the whole image is cached;
//   block = bias word (N_PE int32) then k*k*ci_chunks weight words, byte pe*N_CI + ci;
// * DDR tensors at act + src_ddr / dst_ddr, [channel group][y][x][N_PE bytes];
// * GAP sums gap[GAP_ROWS][N_PE]; logits = round_shift(sum, GAP_SHIFT).
//
// C-simulation speed-up: with -DZQ_CSIM_NATIVE (never under synthesis) the datapath's
// RAMs hold native bytes and the MAC array computes in int64 (the same packed-DSP
// arithmetic, zq_dsp.h, the same bits: the exporter's overflow proof bounds every sum
// by 2^31). The Vitis flow and the C testbench build without it (exact HLS types).
#ifndef ZQ_TYPES_H
#define ZQ_TYPES_H

#ifndef ZQ_NET_PARAMS_H
#error "include the export's net_params.h before the engine headers"
#endif

#include <stdint.h>

#include <ap_int.h>

#include "zq_spec.h"

#if defined(ZQ_CSIM_NATIVE) && !defined(__SYNTHESIS__)
#define ZQ_NATIVE 1
#else
#define ZQ_NATIVE 0
#endif

namespace zq {

namespace P = zq_net;
namespace S = zq_spec;

constexpr int cmax(int a, int b) { return a > b ? a : b; }
constexpr int cmin(int a, int b) { return a < b ? a : b; }
constexpr bool is_pow2(long n) { return n > 0 && (n & (n - 1)) == 0; }
constexpr int clog2(long n) {  // ceil(log2(n)); a loop, not recursion
    int b = 0;
    while ((1L << b) < n) ++b;
    return b;
}

// ---- constants of this build ---------------------------------------------------------
constexpr int N_PE = P::N_PE;
constexpr int N_CI = P::N_CI;
constexpr int HALF = N_PE / 2;            // lane pairs per input lane (output channels pe, pe + HALF)
constexpr int DSP_PAIRS = P::DSP_PAIRS;   // lane pairs j * N_CI + ci below it on a DSP48E1, the rest on LUTs
constexpr int ACT_PATHS = P::ACT_PATHS;   // activation paths built: 1 (act), 2 (also act2 reads, wts writes)
constexpr int WPG = N_PE / N_CI;          // channel words per output group (banks)
constexpr int LG_WPG = clog2(WPG);
constexpr int LG_PE = clog2(N_PE);
constexpr int LG_CI = clog2(N_CI);
constexpr int WORD_BYTES = N_PE * N_CI;   // a weight word
constexpr int BPW = WORD_BYTES / 8;       // 64-bit beats per weight word
constexpr int BPU = cmax(1, N_PE / 8);    // beats per unit (N_PE bytes: a pixel's channel group)
constexpr int LG_BPU = clog2(BPU);
constexpr int HDR_BEATS = P::HEADER_BYTES / 8;
constexpr int IN_BEATS = P::IN_BYTES / 4;
constexpr int WRING = 1 << P::WR_W;       // ring slots (words)
constexpr int WBUF = P::WBUF_DEPTH;       // words of the weight RAM
constexpr int ACT_ROWS = P::ACT_ROWS;
constexpr int IMAGE_BEATS = P::IMAGE_WORDS * BPW;
constexpr int STEM_K = P::STEM_K;
constexpr int STEM_PAD = P::STEM_K / 2;
constexpr int STEM_LANES = P::STEM_K * P::STEM_K * P::IN_CH;
constexpr int STEM_NCOL = (P::STEM_SIZE - 1) * P::STEM_S + P::STEM_K;  // columns scanned per stem row
constexpr int STEM_UNITS = (P::IN_WORDS + WPG - 1) / WPG;             // units (activation-RAM rows) per stem pixel
constexpr int GAP_ROWS = P::GAP_ROWS;
constexpr int OUT_W = 18;                 // requantized values (<= 16 bits, either sign) and out_lo/out_hi
constexpr int BURST = S::AXI_BURST_BEATS;  // the longest AXI burst (16 beats: 128 bytes)

// ---- stream depths (items); the cycle model (spec/cycles_hls.py) reads these names ---------
constexpr int W_FIFO = 64;     // weight beats: the reader runs ahead of the weight RAM's free slots
constexpr int STEM_FIFO = 32;  // stem units
constexpr int FILL_FIFO = 32;  // DDR ring units
constexpr int OUT_FIFO = 64;   // result units bound for DDR (as the RTL's zq_out_dma FIFO)
constexpr int LOGIT_FIFO = 16;
// Guards of the core's free-running loop (iterations), see zq_core.h: twice the stated depth of
// its pipeline, plus one (spec HLS_CORE_DEPTH, HLS_GUARD). A C-simulation build may shorten them
// (-DZQ_CSIM_GUARD=n, never under synthesis) to show what they guard (the hazard modes fail).
#if defined(ZQ_CSIM_GUARD) && !defined(__SYNTHESIS__)
constexpr int AVAIL_GUARD = ZQ_CSIM_GUARD;
constexpr int RELEASE_GUARD = ZQ_CSIM_GUARD;
#else
constexpr int AVAIL_GUARD = S::HLS_GUARD;    // a ring row or weight word stored is read this many iterations later
constexpr int RELEASE_GUARD = S::HLS_GUARD;  // a weight-RAM slot released is stored to this many iterations later
#endif
// A ring row's slot needs no such guard: its units reach the activation RAM through the one store
// per bank that also writes the step's result, so that store comes after the step's reads in the
// pipeline whatever Vitis's schedule, and a released row is overwritten at the earliest in the
// next iteration (a weight beat's store does not depend on the reads: it may precede them).
constexpr int ROW_RELEASE_GUARD = 1;
static_assert(AVAIL_GUARD >= 1 && RELEASE_GUARD >= 1, "guards of at least one iteration");

// ---- types ------------------------------------------------------------------------------
typedef ap_uint<64> ddr_t;            // an m_axi beat
#if ZQ_NATIVE
typedef uint64_t wbeat_t;             // a beat of a weight word in the weight RAM
typedef uint8_t byte_t;
struct act_word_t {                   // N_CI lanes of the activation RAM
    uint8_t b[N_CI];
};
struct unit_t {                       // N_PE bytes: WPG words, one per bank
    uint8_t b[N_PE];
};
typedef int64_t acc_t;                // accumulators (|acc| < 2^31 by the exporter's proof)
typedef int64_t post_t;
typedef int32_t y_t;
typedef int64_t gap_t;
#else
typedef ap_uint<64> wbeat_t;
typedef ap_uint<8> byte_t;
typedef ap_uint<8 * N_CI> act_word_t;
typedef ap_uint<8 * N_PE> unit_t;
typedef ap_int<S::ACC_BITS> acc_t;
typedef ap_int<S::ACC_BITS + 2> post_t;  // acc + rounding constant, shifted
typedef ap_int<OUT_W> y_t;
typedef ap_int<S::GAP_BITS> gap_t;
#endif
constexpr int SUM_W = 18 + LG_CI + 1;     // a PE's sum of N_CI split products
typedef ap_int<SUM_W> sum_t;
typedef ap_int<32> logit_t;

// ---- lanes and bytes -----------------------------------------------------------------------
inline unsigned lane_get(const act_word_t& w, int l) {
#pragma HLS INLINE
#if ZQ_NATIVE
    return w.b[l];
#else
    return w.range(8 * l + 7, 8 * l).to_uint();
#endif
}
inline void lane_set(act_word_t& w, int l, unsigned v) {
#pragma HLS INLINE
#if ZQ_NATIVE
    w.b[l] = (uint8_t)v;
#else
    w.range(8 * l + 7, 8 * l) = v & 0xFF;
#endif
}
inline act_word_t word_zero() {
#pragma HLS INLINE
    act_word_t w;
#if ZQ_NATIVE
    for (int l = 0; l < N_CI; l++) w.b[l] = 0;
#else
    w = 0;
#endif
    return w;
}
inline unit_t unit_zero() {
#pragma HLS INLINE
    unit_t u;
#if ZQ_NATIVE
    for (int k = 0; k < N_PE; k++) u.b[k] = 0;
#else
    u = 0;
#endif
    return u;
}
inline unsigned unit_byte(const unit_t& u, int k) {
#pragma HLS INLINE
#if ZQ_NATIVE
    return u.b[k];
#else
    return u.range(8 * k + 7, 8 * k).to_uint();
#endif
}
inline void unit_set_byte(unit_t& u, int k, unsigned v) {
#pragma HLS INLINE
#if ZQ_NATIVE
    u.b[k] = (uint8_t)v;
#else
    u.range(8 * k + 7, 8 * k) = v & 0xFF;
#endif
}
// Word b (N_CI lanes, bytes b*N_CI ..) of a unit, and the reverse.
inline act_word_t unit_word(const unit_t& u, int b) {
#pragma HLS INLINE
    act_word_t w;
#if ZQ_NATIVE
    for (int l = 0; l < N_CI; l++) w.b[l] = u.b[b * N_CI + l];
#else
    w = u.range(8 * N_CI * (b + 1) - 1, 8 * N_CI * b);
#endif
    return w;
}
inline void unit_set_word(unit_t& u, int b, const act_word_t& w) {
#pragma HLS INLINE
#if ZQ_NATIVE
    for (int l = 0; l < N_CI; l++) u.b[b * N_CI + l] = w.b[l];
#else
    u.range(8 * N_CI * (b + 1) - 1, 8 * N_CI * b) = w;
#endif
}
// Beat k (bytes 8k .. 8k+7) of a unit, and the reverse (a unit is BPU beats in DDR).
inline ddr_t unit_beat(const unit_t& u, int k) {
#pragma HLS INLINE
    ddr_t d = 0;
    for (int j = 0; j < 8; j++) {
#pragma HLS UNROLL
        if (8 * k + j < N_PE) d.range(8 * j + 7, 8 * j) = unit_byte(u, 8 * k + j);
    }
    return d;
}
inline void unit_set_beat(unit_t& u, int k, const ddr_t& d) {
#pragma HLS INLINE
    for (int j = 0; j < 8; j++) {
#pragma HLS UNROLL
        if (8 * k + j < N_PE) unit_set_byte(u, 8 * k + j, d.range(8 * j + 7, 8 * j).to_uint());
    }
}
inline wbeat_t to_wbeat(const ddr_t& d) {
#pragma HLS INLINE
#if ZQ_NATIVE
    return d.to_uint64();
#else
    return d;
#endif
}
inline unsigned beat_byte(const wbeat_t& b, int k) {  // byte k (0..7) of a 64-bit beat
#pragma HLS INLINE
#if ZQ_NATIVE
    return (unsigned)(b >> (8 * k)) & 0xFF;
#else
    return b.range(8 * k + 7, 8 * k).to_uint();
#endif
}

}  // namespace zq

#endif  // ZQ_TYPES_H
