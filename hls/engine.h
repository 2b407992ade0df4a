// The DDR-streaming engine, Vitis HLS C++ (synthesizable subset of UG1399:
// static sizes from net_params.h, no heap, no recursion, every loop bounded).
// It runs the layer table of spec/engine.py exactly as the word-level model
// sim/engine_model.py does (the reference for the algorithm and every address)
// and as the RTL twin rtl/ does, with the same memories and layouts:
//
// * the activation RAM act[WPG][ACT_ROWS] of N_CI 8-bit lanes: channel word cw
//   of row y, column x of a region at `base` lives in bank cw mod WPG, row
//   base + ((cw / WPG) << (lg_rows + lg_w)) + ((y mod 2^lg_rows) << lg_w) + x;
//   a whole tensor has lg_rows = lg_size, a ring (the stem's, or a DDR tensor's
//   input rows) fewer rows, slot y mod 2^lg_rows;
// * the weight ring wbuf[WBUF_DEPTH] of N_PE x N_CI int8 words (64-bit beats in
//   BPW banks): image word i in slot i mod 2^WR_W, or the whole image when
//   WEIGHT_CACHE (read once, see below); block = bias word (N_PE int32) then
//   k*k*ci_chunks weight words, byte pe*N_CI + ci = w[pe][ci];
// * DDR tensors at act + src_ddr / dst_ddr, stored [channel group][y][x][N_PE bytes];
// * the GAP sums gap[GAP_ROWS][N_PE], logits = round_shift(sum, GAP_SHIFT).
//
// Data movement (sequential: the HLS engine does not overlap DMA with compute
// the way the RTL twin does): per frame, the weight image header is read and
// checked (and the whole image when it is cached and the cache is empty); per
// layer and band of output rows, first the band's new input rows are loaded
// into the ring (from the stream through the stem, or from DDR), then for each
// output-channel group its weight block is read into the ring when it is not
// there yet (as many words as the ring may hold, like the model), the MAC loop
// runs (one N_PE x N_CI step per cycle, II=1), and the outputs go to the
// activation RAM (inside the MAC loop), to DDR (a burst per pass of output
// rows, after the MAC loop) or to the GAP sums.
//
// The stem: the first layer reads the stem tensor, the im2col of the frame
// (STEM_IM2COL: lane j = (ky*K + kx)*IN_CH + c of pixel (oy, ox) = frame pixel
// (oy*S + ky - K/2, ox*S + kx - K/2), channel c; zero outside the frame and for
// j >= K*K*IN_CH) or else the channel-padded frame (K = S = 1). Its rows are
// built on demand from a ring of RAW_RR raw frame rows, which is filled from
// s_axis_in as the rows are needed (rtl/zq_stem.sv does the same), at the RTL's
// rate: a beat per cycle into a byte buffer, a pixel per cycle out of it.
//
// Framing (spec STATUS_BITS, rtl/zq_stem.sv): 4 bytes per beat, TLAST on beat
// IN_BYTES/4 - 1; TLAST earlier = short frame (the frame ends there); no TLAST on
// that beat = long frame (beats are dropped up to the next TLAST; every IN_BYTES/4
// dropped beats count as one more frame owed an error frame, `drain_frames`).
// Any error aborts the frame: the rest of the frame is taken up to its TLAST and
// the answer is 1 + drain_frames error frames of N_CLASSES beats of ERROR_LOGIT.
#ifndef ZQ_ENGINE_H
#define ZQ_ENGINE_H

#ifndef ZQ_NET_PARAMS_H
#error "include the export's net_params.h before engine.h"
#endif

#include <stdint.h>
#ifndef __SYNTHESIS__
#include <stdio.h>
#endif

#include <ap_int.h>
#include <hls_stream.h>

#include "zq_axis.h"
#include "zq_dsp.h"
#include "zq_spec.h"

// C-simulation speed-up: with -DZQ_CSIM_NATIVE (never under synthesis) the
// on-chip RAMs of the MAC datapath hold native bytes and words and the MAC
// array computes in int64 (the same packed-DSP arithmetic, zq_dsp.h); the
// values are the same bits (the exporter's overflow proof bounds every sum by
// 2^31). The Vitis flow and the C testbench build without it (exact HLS types).
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

// ---- constants of this engine build -------------------------------------------
constexpr int N_PE = P::N_PE;
constexpr int N_CI = P::N_CI;
constexpr int HALF = N_PE / 2;            // DSP pairs per input lane
constexpr int WPG = N_PE / N_CI;          // channel words per output group (banks)
constexpr int LG_WPG = clog2(WPG);
constexpr int LG_PE = clog2(N_PE);
constexpr int LG_CI = clog2(N_CI);
constexpr int WORD_BYTES = N_PE * N_CI;   // a weight word
constexpr int BPW = WORD_BYTES / 8;       // 64-bit beats per weight word
constexpr int BPU = cmax(1, N_PE / 8);    // beats per DDR unit (a pixel's channel group)
constexpr int LG_BPU = clog2(BPU);
constexpr int HDR_BEATS = P::HEADER_BYTES / 8;
constexpr int IN_BEATS = P::IN_BYTES / 4;
constexpr int WRING = 1 << P::WR_W;       // ring slots (words)
constexpr int WBUF = P::WBUF_DEPTH;       // words of the weight RAM
constexpr int ACT_ROWS = P::ACT_ROWS;
constexpr int STEM_PAD = P::STEM_K / 2;
constexpr int STEM_LANES = P::STEM_K * P::STEM_K * P::IN_CH;
constexpr int STEM_NCOL = (P::STEM_SIZE - 1) * P::STEM_S + P::STEM_K;  // columns scanned per stem row
constexpr int STEM_UNITS = (P::IN_WORDS + WPG - 1) / WPG;             // activation-RAM rows per stem pixel
constexpr int GAP_ROWS = P::GAP_ROWS;
constexpr int OUT_W = 18;                 // requantized values (<= 16 bits, either sign) and out_lo/out_hi

// ---- figures of the layer table (loop bounds, buffer sizes) --------------------
constexpr int row_k(const S::LayerRow& r) { return r.k3 ? 3 : 1; }

constexpr bool any_ddr_dst() {
    bool any = false;
    for (int l = 0; l < P::N_LAYERS; ++l) any = any || P::LAYERS[l].dst_kind == S::DST_DDR;
    return any;
}
constexpr int max_lg_out_ddr_dst() {
    int m = 0;
    for (int l = 0; l < P::N_LAYERS; ++l)
        if (P::LAYERS[l].dst_kind == S::DST_DDR) m = cmax(m, P::LAYERS[l].lg_out);
    return m;
}
// DDR outputs are written a pass of output rows at a time from an on-chip
// buffer of OBUF_PIX pixels: at least one output row, 256 pixels when rows are short.
constexpr int LG_OBUF = any_ddr_dst() ? cmax(8, max_lg_out_ddr_dst()) : 0;
constexpr int OBUF_PIX = 1 << LG_OBUF;

constexpr int lg_pass(const S::LayerRow& r) {
    return r.dst_kind == S::DST_DDR ? cmin(r.lg_band, cmax(0, LG_OBUF - r.lg_out)) : r.lg_band;
}
constexpr long mac_iters(const S::LayerRow& r) {  // MAC-loop trip count of one pass
    return (1L << (lg_pass(r) + r.lg_out)) * row_k(r) * row_k(r) * r.ci_chunks;
}
constexpr long max_mac_iters() {
    long m = 1;
    for (int l = 0; l < P::N_LAYERS; ++l) m = mac_iters(P::LAYERS[l]) > m ? mac_iters(P::LAYERS[l]) : m;
    return m;
}
constexpr int max_lg_in() {
    int m = 0;
    for (int l = 0; l < P::N_LAYERS; ++l) m = cmax(m, P::LAYERS[l].lg_in);
    return m;
}
constexpr int max_groups() {
    int m = 1;
    for (int l = 0; l < P::N_LAYERS; ++l) m = cmax(m, P::LAYERS[l].co_groups);
    return m;
}
constexpr int max_bands() {
    int m = 1;
    for (int l = 0; l < P::N_LAYERS; ++l) m = cmax(m, 1 << (P::LAYERS[l].lg_out - P::LAYERS[l].lg_band));
    return m;
}
constexpr int max_src_cgrps() {
    int m = 1;
    for (int l = 0; l < P::N_LAYERS; ++l) m = cmax(m, P::LAYERS[l].src_cgrps);
    return m;
}
constexpr int max_ring_rows() {  // input rows one fill may load: a ring's rows
    int m = 1;
    for (int l = 0; l < P::N_LAYERS; ++l)
        if (P::LAYERS[l].src_kind != S::SRC_ACT) m = cmax(m, 1 << P::LAYERS[l].src_lg_rows);
    return m;
}
constexpr int max_passes() {
    int m = 1;
    for (int l = 0; l < P::N_LAYERS; ++l) m = cmax(m, 1 << (P::LAYERS[l].lg_band - lg_pass(P::LAYERS[l])));
    return m;
}
constexpr int MAX_MAC_ITERS = (int)max_mac_iters();
constexpr int MAX_RING_ROWS = max_ring_rows();
constexpr int MAX_PASSES = max_passes();
constexpr int MAX_RAW_ROWS = P::STEM_K + P::STEM_S;      // raw frame rows read for one stem row
constexpr int MAX_RAW_ITERS =                            // RAW-loop iterations for them (see raw_iters_to)
    MAX_RAW_ROWS * cmax(P::IN_SIZE, (P::IN_SIZE * P::IN_CH + 3) / 4 + 1);
constexpr int MAX_IN_SIZE = 1 << max_lg_in();
constexpr int MAX_GROUPS = max_groups();
constexpr int MAX_BANDS = max_bands();
constexpr int MAX_CGRPS = max_src_cgrps();
constexpr int MAX_FILL_BEATS = MAX_IN_SIZE * BPU;        // one row of one channel group of a DDR tensor
constexpr int MAX_PASS_BEATS = OBUF_PIX * BPU;
constexpr int MAX_WLOAD_BEATS = cmax(WBUF, WRING) * BPW;

// ---- types ------------------------------------------------------------------------
typedef ap_uint<64> ddr_t;            // an m_axi beat
#if ZQ_NATIVE
typedef uint64_t wbeat_t;             // a beat of a weight word in the weight RAM
typedef uint8_t byte_t;
struct act_word_t {                   // N_CI lanes of the activation RAM
    uint8_t b[N_CI];
};
typedef int64_t acc_t;                // accumulators (|acc| < 2^31 by the exporter's proof)
typedef int64_t post_t;
typedef int32_t y_t;
typedef int64_t gap_t;
#else
typedef ap_uint<64> wbeat_t;
typedef ap_uint<8> byte_t;
typedef ap_uint<8 * N_CI> act_word_t;
typedef ap_int<S::ACC_BITS> acc_t;
typedef ap_int<S::ACC_BITS + 2> post_t;  // acc + rounding constant, shifted
typedef ap_int<OUT_W> y_t;
typedef ap_int<S::GAP_BITS> gap_t;
#endif
constexpr int SUM_W = 18 + LG_CI + 1;     // a PE's sum of N_CI split products
typedef ap_int<SUM_W> sum_t;

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
inline unsigned ddr_byte(const ddr_t& b, int k) {
#pragma HLS INLINE
    return b.range(8 * k + 7, 8 * k).to_uint();
}

// The weight-RAM slot of image word i.
inline int wslot(int i) {
#pragma HLS INLINE
    return P::WEIGHT_CACHE ? i : (i & (WRING - 1));
}

#ifndef __SYNTHESIS__
// C simulation only: a plan the engine cannot run (a ring deadlock, an address out
// of range) is reported on stderr; a valid export never triggers it.
inline void plan_error(const char* what, int layer, long a, long b) {
    fprintf(stderr, "zq_top: layer %d: %s (%ld, %ld): the layer table cannot run on this engine\n", layer, what, a,
            b);
}
#define ZQ_PLAN_CHECK(cond, what, layer, a, b) \
    do {                                         \
        if (!(cond)) plan_error(what, layer, a, b); \
    } while (0)
#else
#define ZQ_PLAN_CHECK(cond, what, layer, a, b) \
    do {                                         \
    } while (0)
#endif

// ---------------------------------------------------------------------------------
// Loop counts (C simulation only, -DZQ_COUNT_ITERATIONS): every pipelined loop of
// the schedule counts its entries and its iterations, per layer (row N_LAYERS: the
// frame-level loops), for the cross-check of the HLS cycle model
// (spec/cycles_hls.py; read back through csim_lib.cpp's zq_counts). The phase
// order is PHASES in sim/csim.py.
enum Phase { PH_HEADER, PH_WLOAD, PH_RAW, PH_SCAN, PH_STEM_WRITE, PH_FILL, PH_MAC, PH_DDR_WRITE, PH_REST, PH_DRAIN,
             PH_OUT, PH_N };
#if defined(ZQ_COUNT_ITERATIONS) && !defined(__SYNTHESIS__)
struct LoopCounts {
    long long n[P::N_LAYERS + 1][PH_N][2];  // [layer][phase]: iterations, entries
    int layer;                              // the layer running (N_LAYERS outside the layers)
};
// internal linkage (not a static in an inline function, which g++ makes one object
// per process: every network's library loaded in one process would share it)
static LoopCounts g_loop_counts;
#define ZQ_COUNT_ITER(ph) (::zq::g_loop_counts.n[::zq::g_loop_counts.layer][::zq::ph][0]++)
#define ZQ_COUNT_ENTRY(ph) (::zq::g_loop_counts.n[::zq::g_loop_counts.layer][::zq::ph][1]++)
#define ZQ_COUNT_LAYER(l) (::zq::g_loop_counts.layer = (l))
#else
#define ZQ_COUNT_ITER(ph) \
    do {                  \
    } while (0)
#define ZQ_COUNT_ENTRY(ph) \
    do {                   \
    } while (0)
#define ZQ_COUNT_LAYER(l) \
    do {                  \
    } while (0)
#endif

// ---------------------------------------------------------------------------------
// The input stream: framing state of one frame, and the byte buffer that turns
// 32-bit beats into pixels of IN_CH bytes (rtl/zq_stem.sv: a beat is taken when
// the buffer holds less than a pixel, a pixel leaves it every cycle it holds one:
// one pixel per cycle for IN_CH <= 4, one beat per cycle for IN_CH > 4).
constexpr int IN_BUF_BYTES = P::IN_CH + 3;  // at most IN_CH - 1 bytes left plus one beat

struct InState {
    int nbeat;              // beats taken of this frame (<= IN_BEATS)
    ap_uint<8 * IN_BUF_BYTES> buf;  // bytes taken and not yet assembled into pixels (byte 0 first)
    int bcnt;               // bytes in buf
    bool done;              // the frame's beats are all taken (its end or an early TLAST)
    bool err_short;
    bool err_long;          // no TLAST on the last beat: drain to the next TLAST (in_finish)
    ap_uint<16> drain_frames;  // whole frames of beats dropped after a long frame (16 bits, as the RTL)
};

inline void in_start(InState& st) {
#pragma HLS INLINE
    st.nbeat = 0;
    st.buf = 0;
    st.bcnt = 0;
    st.done = false;
    st.err_short = false;
    st.err_long = false;
    st.drain_frames = 0;
}

inline bool in_error(const InState& st) {
#pragma HLS INLINE
    return st.err_short || st.err_long;
}

// The frame's next beat (its framing checked); 0 once the frame has ended.
inline ap_uint<32> take_beat(hls::stream<zq_axis_in>& s, InState& st) {
#pragma HLS INLINE
    if (st.done) return 0;
    const zq_axis_in b = s.read();
    st.nbeat++;
    if (st.nbeat == IN_BEATS) {
        st.done = true;
        if (!b.last) st.err_long = true;
    } else if (b.last) {
        st.done = true;
        st.err_short = true;
    }
    return b.data;
}

// The rest of the frame up to its TLAST (beats the engine did not need, or all of
// them after an abort), then, after a long frame, the drain to the next TLAST.
inline void in_finish(hls::stream<zq_axis_in>& s, InState& st) {
    ZQ_COUNT_ENTRY(PH_REST);
REST:
    for (int i = 0; i < IN_BEATS; i++) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=0 max=IN_BEATS
        if (st.done) break;
        ZQ_COUNT_ITER(PH_REST);
        take_beat(s, st);
    }
    if (st.err_long) {
        int dbeat = 0;
        bool last = false;
        ZQ_COUNT_ENTRY(PH_DRAIN);
    DRAIN:
        while (!last) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=IN_BEATS
#ifndef __SYNTHESIS__
            if (s.empty()) {  // C simulation: the hardware would wait for the TLAST
                fprintf(stderr, "zq_top: input stream ended without the TLAST of a long frame\n");
                break;
            }
#endif
            ZQ_COUNT_ITER(PH_DRAIN);
            const zq_axis_in b = s.read();
            last = b.last != 0;
            if (dbeat == IN_BEATS - 1) {
                dbeat = 0;
                st.drain_frames++;
            } else {
                dbeat++;
            }
        }
    }
    st.buf = 0;
    st.bcnt = 0;
}

// ---------------------------------------------------------------------------------
// Weights: the header check, the ring (or cache) loads.
struct WState {
    int loaded;    // image words in the weight RAM (index of the next word to load)
    int released;  // words the ring may overwrite
};

// Field f of the specification's HEADER (32-bit fields): beat f / 2, low or high half.
inline unsigned header_field(const ddr_t h[S::HDR_WORDS / 2], int f) {
    return (f & 1) ? h[f / 2].range(63, 32).to_uint() : h[f / 2].range(31, 0).to_uint();
}

// The weight image header at wts (spec HEADER): true when it is this engine's.
inline bool header_ok(const ddr_t* wts) {
    ddr_t h[S::HDR_WORDS / 2];   // two 32-bit header fields per 64-bit beat
#pragma HLS ARRAY_PARTITION variable=h complete
    ZQ_COUNT_ENTRY(PH_HEADER);
HEADER:
    for (int i = 0; i < S::HDR_WORDS / 2; i++) {
#pragma HLS PIPELINE II=1
        ZQ_COUNT_ITER(PH_HEADER);
        h[i] = wts[i];
    }
    return header_field(h, S::HDR_MAGIC) == S::HEADER_MAGIC &&
           header_field(h, S::HDR_SPEC_VERSION) == (unsigned)S::SPEC_VERSION &&
           header_field(h, S::HDR_NET_ID) == P::NET_ID &&
           header_field(h, S::HDR_WORD_BYTES) == (unsigned)WORD_BYTES &&
           header_field(h, S::HDR_N_WORDS) == (unsigned)P::IMAGE_WORDS &&
           header_field(h, S::HDR_HEADER_BYTES) == (unsigned)P::HEADER_BYTES;
}

// Image words [from, to) into their slots: one burst-read loop, one beat per cycle.
inline void load_words(const ddr_t* wts, wbeat_t wbuf[WBUF][BPW], int from, int to) {
    const int n = (to - from) * BPW;
    const int off = HDR_BEATS + from * BPW;
    int slot = wslot(from), b = 0;
    ZQ_COUNT_ENTRY(PH_WLOAD);
WLOAD:
    for (int i = 0; i < n; i++) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=MAX_WLOAD_BEATS
        ZQ_COUNT_ITER(PH_WLOAD);
        wbuf[slot][b] = to_wbeat(wts[off + i]);
        if (b == BPW - 1) {
            b = 0;
            slot = P::WEIGHT_CACHE ? slot + 1 : ((slot + 1) & (WRING - 1));
        } else {
            b++;
        }
    }
}

// Make image words up to `need` (exclusive) resident: load as many words as the
// ring may hold (the model's weight DMA), or nothing when they are there.
inline void ensure_words(const ddr_t* wts, wbeat_t wbuf[WBUF][BPW], WState& ws, int need, int layer) {
    if (need <= ws.loaded) return;
    const int target = cmin(P::IMAGE_WORDS, ws.released + WRING);
    ZQ_PLAN_CHECK(need <= target, "weight words needed beyond the ring (deadlock)", layer, need, target);
    load_words(wts, wbuf, ws.loaded, target);
    ws.loaded = target;
}

// ---------------------------------------------------------------------------------
// One layer: its row and the constants derived from it once.
struct Layer {
    S::LayerRow r;
    int index;
    int k, pad;                    // kernel 1 or 3, padding k/2
    int lg_pass;                   // log2 of the output rows per MAC-loop pass
    int shift_r, rnd, shl;         // requantization: (acc + rnd) >> shift_r when shift > 0, else acc << shl
    int in_h;                      // input rows (the stem's size for the first layer)
};

inline Layer decode(int li) {
#pragma HLS INLINE
    Layer L;
    L.r = P::LAYERS[li];
    const S::LayerRow& r = L.r;
    L.index = li;
    L.k = r.k3 ? 3 : 1;
    L.pad = r.k3;
    L.lg_pass = lg_pass(r);
    L.shift_r = r.shift > 0 ? r.shift : 0;
    L.rnd = r.shift > 0 ? (1 << (r.shift - 1)) : 0;
    L.shl = r.shift > 0 ? 0 : -r.shift;
    L.in_h = r.src_kind == S::SRC_STEM ? P::STEM_SIZE : (1 << r.lg_in);
    return L;
}

// ---------------------------------------------------------------------------------
// The stem: raw frame rows from the stream, stem rows into the first layer's ring.
struct StemState {
    int raw_avail;  // raw frame rows read from the stream
};

// RAW-loop iterations for the frame's first p pixels: an iteration takes at most
// one beat and writes at most one pixel, and a beat is taken only when the buffer
// holds less than a pixel, so max(p, ceil(p * IN_CH / 4)).
inline int raw_iters_to(int p) {
#pragma HLS INLINE
    return P::IN_CH <= 4 ? p : (p * P::IN_CH + 3) >> 2;
}

// Raw frame rows [from, to) from the stream into their slots of the raw ring: one
// loop at II=1 over the rows' pixels; an iteration takes a beat when the byte
// buffer holds less than a pixel and writes the pixel when it holds one (its
// IN_CH bytes to the channel banks of row slot r mod RAW_RR at once).
inline void read_raw_rows(hls::stream<zq_axis_in>& s, InState& in, byte_t raw[P::RAW_RR][P::IN_SIZE][P::IN_CH],
                          int from, int to) {
    const int n_iter = raw_iters_to(to * P::IN_SIZE) - raw_iters_to(from * P::IN_SIZE);
    int slot = from & (P::RAW_RR - 1), x = 0;
    ZQ_COUNT_ENTRY(PH_RAW);
RAW:
    for (int i = 0; i < n_iter; i++) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=MAX_RAW_ITERS
        ZQ_COUNT_ITER(PH_RAW);
        if (in.bcnt < P::IN_CH) {  // less than a pixel in the buffer: the next beat behind its bytes
            const ap_uint<8 * IN_BUF_BYTES> beat = take_beat(s, in);
            in.buf |= beat << (8 * in.bcnt);
            in.bcnt += 4;
        }
        if (in.bcnt >= P::IN_CH) {  // a pixel: IN_CH bytes to the raw ring
            for (int c = 0; c < P::IN_CH; c++) {
#pragma HLS UNROLL
                raw[slot][x][c] = (byte_t)in.buf.range(8 * c + 7, 8 * c).to_uint();
            }
            in.buf >>= 8 * P::IN_CH;
            in.bcnt -= P::IN_CH;
            if (x == P::IN_SIZE - 1) {
                x = 0;
                slot = (slot + 1) & (P::RAW_RR - 1);
            } else {
                x++;
            }
        }
    }
}

// Stem row ys (an output row of the first layer when the stem is im2col'ed, else
// a frame row) into ring slot ys mod 2^lg_rows of the region at `base`: the raw
// rows it needs that are not in the raw ring yet (at most K + S), then the column
// scan with a K x K window, one column per cycle; a pixel's words go to the
// activation RAM as units of WPG words (one word per bank), inside the scan when a
// pixel is one unit (STEM_UNITS = 1; at most one pixel per column), else from a
// row buffer after it, one unit per cycle.
inline void stem_row(hls::stream<zq_axis_in>& s, InState& in, StemState& st,
                     byte_t raw[P::RAW_RR][P::IN_SIZE][P::IN_CH], act_word_t act[WPG][ACT_ROWS], const Layer& L,
                     int ys) {
    constexpr int K = P::STEM_K;
    const int iy0 = ys * P::STEM_S - STEM_PAD;
    const int last_raw = cmin(P::IN_SIZE - 1, iy0 + K - 1);
    if (st.raw_avail <= last_raw) {
        read_raw_rows(s, in, raw, st.raw_avail, last_raw + 1);
        st.raw_avail = last_raw + 1;
    }

    const int lg_w = L.r.lg_in;
    const int rbase = L.r.src_base + ((ys & ((1 << L.r.src_lg_rows) - 1)) << lg_w);
    // scan columns ix = -PAD .. (SIZE-1)*S - PAD + K - 1 with a K x K window of pixels
    act_word_t srow[P::STEM_SIZE][P::IN_WORDS];
#pragma HLS ARRAY_PARTITION variable=srow complete dim=2
    byte_t win[K][K][P::IN_CH];
#pragma HLS ARRAY_PARTITION variable=win complete dim=0
    bool row_ok[K];
    int slot[K];
#pragma HLS ARRAY_PARTITION variable=row_ok complete
#pragma HLS ARRAY_PARTITION variable=slot complete
    for (int ky = 0; ky < K; ky++) {
#pragma HLS UNROLL
        row_ok[ky] = iy0 + ky >= 0 && iy0 + ky < P::IN_SIZE;
        slot[ky] = (iy0 + ky) & (P::RAW_RR - 1);
    }
    for (int ky = 0; ky < K; ky++) {
#pragma HLS UNROLL
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
    ZQ_COUNT_ENTRY(PH_SCAN);
SCAN:
    for (int col = 0; col < STEM_NCOL; col++) {
#pragma HLS PIPELINE II=1
        ZQ_COUNT_ITER(PH_SCAN);
        const int ix = col - STEM_PAD;
        const bool col_ok = ix >= 0 && ix < P::IN_SIZE;
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
                win[ky][K - 1][c] = (col_ok && row_ok[ky]) ? raw[slot[ky]][col_ok ? ix : 0][c] : byte_t(0);
            }
        }
        if (col >= K - 1) {
            if (phase == 0) {
                for (int w = 0; w < P::IN_WORDS; w++) {
#pragma HLS UNROLL
                    act_word_t wd = word_zero();
                    for (int l = 0; l < N_CI; l++) {
#pragma HLS UNROLL
                        const int j = w * N_CI + l;  // lane j = (ky*K + kx)*IN_CH + c
                        if (j < STEM_LANES) {
                            const int tap = j / P::IN_CH, c = j % P::IN_CH;
                            lane_set(wd, l, win[tap / K][tap % K][c]);
                        }
                    }
                    if (STEM_UNITS == 1) {
                        act[w & (WPG - 1)][rbase + ox] = wd;  // word w in bank w (IN_WORDS <= WPG)
                    } else {
                        srow[ox][w] = wd;
                    }
                }
                ox++;
            }
            phase = phase == P::STEM_S - 1 ? 0 : phase + 1;
        }
    }
    if (STEM_UNITS == 1) return;

    // the row's words into the ring, a unit of WPG words (one per bank) per cycle
    int px = 0, u = 0;
    ZQ_COUNT_ENTRY(PH_STEM_WRITE);
STEM_WRITE:
    for (int i = 0; i < P::STEM_SIZE * STEM_UNITS; i++) {
#pragma HLS PIPELINE II=1
        ZQ_COUNT_ITER(PH_STEM_WRITE);
        const int row = rbase + (u << (L.r.src_lg_rows + lg_w)) + px;
        for (int b = 0; b < WPG; b++) {
#pragma HLS UNROLL
            const int w = u * WPG + b;
            if (w < P::IN_WORDS) act[b][row] = srow[px][w < P::IN_WORDS ? w : 0];
        }
        if (u == STEM_UNITS - 1) {
            u = 0;
            px++;
        } else {
            u++;
        }
    }
}

// Input rows [from, to) of a DDR tensor into the layer's ring: per row and channel
// group a burst of W*N_PE bytes; each N_PE-byte unit goes to every bank.
inline void fill_ddr_rows(const ddr_t* act_ddr, act_word_t act[WPG][ACT_ROWS], const Layer& L, int from, int to) {
    const int lg_w = L.r.lg_in;
    const int w = 1 << lg_w;
FILL_ROWS:
    for (int y = from; y < to; y++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=MAX_RING_ROWS
        for (int cg = 0; cg < L.r.src_cgrps; cg++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=MAX_CGRPS
            const unsigned off = ((unsigned)L.r.src_ddr >> 3) + ((unsigned)((cg << lg_w) + y) << (lg_w + LG_BPU));
            const int rbase =
                L.r.src_base + (cg << (L.r.src_lg_rows + lg_w)) + ((y & ((1 << L.r.src_lg_rows) - 1)) << lg_w);
            ddr_t unit[BPU];
#pragma HLS ARRAY_PARTITION variable=unit complete
            int x = 0, b = 0;
            ZQ_COUNT_ENTRY(PH_FILL);
        FILL:
            for (int i = 0; i < (w << LG_BPU); i++) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=MAX_FILL_BEATS
                ZQ_COUNT_ITER(PH_FILL);
                unit[b] = act_ddr[off + i];
                if (b == BPU - 1) {
                    for (int bank = 0; bank < WPG; bank++) {
#pragma HLS UNROLL
                        act_word_t wd = word_zero();
                        for (int l = 0; l < N_CI; l++) {
#pragma HLS UNROLL
                            const int byte = bank * N_CI + l;  // byte of the unit
                            lane_set(wd, l, ddr_byte(unit[byte >> 3], byte & 7));
                        }
                        act[bank][rbase + x] = wd;
                    }
                    b = 0;
                    x++;
                } else {
                    b++;
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Requantization (docs/fixed-point.md): shift (rounding half up), ReLU, saturation.
inline y_t requantize(acc_t acc, const Layer& L) {
#pragma HLS INLINE
    post_t v = acc;
    if (L.shift_r > 0) {
        v = (v + L.rnd) >> L.shift_r;
    } else {
        v = v << L.shl;  // the exporter proves this fits the accumulator
    }
    if (L.r.relu && v < 0) v = 0;
    if (v < L.r.out_lo) v = L.r.out_lo;
    if (v > L.r.out_hi) v = L.r.out_hi;
    return y_t(v);
}

// One MAC-array step: N_PE x N_CI products of the lanes x and the weight word,
// two output channels (pe, pe + N_PE/2) per DSP48E1, added to the accumulators
// (which start from the biases at a pixel's first step).
inline void mac_step(const act_word_t& xw, bool inb, bool sgn, const wbeat_t wword[BPW], bool first,
                     const acc_t bias[N_PE], acc_t acc[N_PE]) {
#pragma HLS INLINE
#if ZQ_NATIVE
    int x[N_CI];
    for (int l = 0; l < N_CI; l++) {
        const int v = inb ? (int)xw.b[l] : 0;
        x[l] = (sgn && v >= 128) ? v - 256 : v;
    }
    int8_t w[WORD_BYTES];
    for (int b = 0; b < BPW; b++)
        for (int k = 0; k < 8; k++) w[8 * b + k] = (int8_t)(uint8_t)(wword[b] >> (8 * k));
    for (int j = 0; j < HALF; j++) {
        int64_t s_lo = 0, s_hi = 0;
        for (int ci = 0; ci < N_CI; ci++) {
            int lo, hi;
            dsp_pair_native(w[j * N_CI + ci], w[(j + HALF) * N_CI + ci], x[ci], lo, hi);
            s_lo += lo;
            s_hi += hi;
        }
        acc[j] = (first ? bias[j] : acc[j]) + s_lo;
        acc[j + HALF] = (first ? bias[j + HALF] : acc[j + HALF]) + s_hi;
    }
#else
    x9_t x[N_CI];
#pragma HLS ARRAY_PARTITION variable=x complete
    for (int l = 0; l < N_CI; l++) {
#pragma HLS UNROLL
        const ap_uint<8> v = inb ? ap_uint<8>(lane_get(xw, l)) : ap_uint<8>(0);
        x[l] = sgn ? x9_t(ap_int<8>(v)) : x9_t(v);
    }
    prod_t prod[N_PE][N_CI];
#pragma HLS ARRAY_PARTITION variable=prod complete dim=0
    for (int j = 0; j < HALF; j++) {
#pragma HLS UNROLL
        for (int ci = 0; ci < N_CI; ci++) {
#pragma HLS UNROLL
            const int blo = j * N_CI + ci, bhi = (j + HALF) * N_CI + ci;
            const w8_t w_lo = ap_int<8>(wword[blo >> 3].range(8 * (blo & 7) + 7, 8 * (blo & 7)));
            const w8_t w_hi = ap_int<8>(wword[bhi >> 3].range(8 * (bhi & 7) + 7, 8 * (bhi & 7)));
            dsp_pair_exact(w_lo, w_hi, x[ci], prod[j][ci], prod[j + HALF][ci]);
        }
    }
    for (int pe = 0; pe < N_PE; pe++) {
#pragma HLS UNROLL
        sum_t s = 0;
        for (int ci = 0; ci < N_CI; ci++) {
#pragma HLS UNROLL
            s += prod[pe][ci];
        }
        acc[pe] = (first ? bias[pe] : acc[pe]) + s;
    }
#endif
}

// The MAC loop of one pass: output rows [oy0, oy0 + 2^lg_pass) of group g, all
// (ky, kx, chunk) steps of every pixel, flattened into one loop at II=1 with
// incremental counters and shifts. At a pixel's last step the outputs are
// requantized and written (activation RAM), buffered (DDR) or summed (GAP).
inline void mac_pass(const Layer& L, int g, int oy0, int w_first, const acc_t bias[N_PE],
                     act_word_t act[WPG][ACT_ROWS], const wbeat_t wbuf[WBUF][BPW], ddr_t obuf[OBUF_PIX][BPU],
                     gap_t gsum[N_PE]) {
    const int lg_in = L.r.lg_in, lg_out = L.r.lg_out;
    const int isz = 1 << lg_in, osz = 1 << lg_out;
    const int rmask = (1 << L.r.src_lg_rows) - 1;
    const int lg_cstride = L.r.src_lg_rows + lg_in;     // rows between channel-word rows of the source
    const int taps_chunks = L.k * L.k * L.r.ci_chunks;       // steps per pixel (outside the loop: one multiply)
    const int n_iter = taps_chunks << (L.lg_pass + lg_out);
    const int valid = g == L.r.co_groups - 1 ? L.r.co_last : N_PE;
    const bool sgn = L.r.src_signed != 0;

    // destination rows of this group's words (DST_ACT), per bank
    const int cw0g = L.r.dst_cw0 + (g << LG_WPG);
    const int nwords = (valid + N_CI - 1) >> LG_CI;
    int dst_row[WPG];
    int dst_w[WPG];
    bool dst_en[WPG];
#pragma HLS ARRAY_PARTITION variable=dst_row complete
#pragma HLS ARRAY_PARTITION variable=dst_w complete
#pragma HLS ARRAY_PARTITION variable=dst_en complete
    for (int b = 0; b < WPG; b++) {
#pragma HLS UNROLL
        const int w = (b - L.r.dst_cw0) & (WPG - 1);
        const int cw = cw0g + w;
        dst_w[b] = w;
        dst_en[b] = w < nwords;
        dst_row[b] = L.r.dst_base + ((cw >> LG_WPG) << (2 * lg_out));
    }

    acc_t acc[N_PE];
#pragma HLS ARRAY_PARTITION variable=acc complete
    int ox = 0, oy = oy0, ky = 0, kx = 0, c = 0, step = 0;
    int wslot_i = wslot(w_first);
    int opix = 0;                  // pixel of the pass (DDR buffer index)
    int pix_dst = oy0 << lg_out;   // (oy << lg_out) + ox
    ZQ_COUNT_ENTRY(PH_MAC);
MAC:
    for (int i = 0; i < n_iter; i++) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=MAX_MAC_ITERS
        ZQ_COUNT_ITER(PH_MAC);
        // a layer never reads the region it writes (the plan gives them distinct rows)
#pragma HLS DEPENDENCE variable=act inter false
#pragma HLS DEPENDENCE variable=act intra false
        const bool first = step == 0;
        const bool last = step == taps_chunks - 1;
        // the input word: pixel (oy*s + ky - pad, ox*s + kx - pad), channel word c; zero outside
        const int iy = (oy << L.r.s2) + ky - L.pad;
        const int ix = (ox << L.r.s2) + kx - L.pad;
        const bool inb = iy >= 0 && iy < L.in_h && ix >= 0 && ix < isz;
        const int row = L.r.src_base + ((c >> LG_WPG) << lg_cstride) + ((iy & rmask) << lg_in) + (ix & (isz - 1));
        const act_word_t xw = act[c & (WPG - 1)][inb ? row : 0];
        mac_step(xw, inb, sgn, wbuf[wslot_i], first, bias, acc);

        if (last) {
            y_t y[N_PE];
#pragma HLS ARRAY_PARTITION variable=y complete
            for (int pe = 0; pe < N_PE; pe++) {
#pragma HLS UNROLL
                y[pe] = pe < valid ? requantize(acc[pe], L) : y_t(0);
            }
            if (L.r.dst_kind == S::DST_ACT) {
                for (int b = 0; b < WPG; b++) {
#pragma HLS UNROLL
                    act_word_t wd = word_zero();
                    for (int l = 0; l < N_CI; l++) {
#pragma HLS UNROLL
                        lane_set(wd, l, (unsigned)(int)y[dst_w[b] * N_CI + l] & 0xFF);
                    }
                    if (dst_en[b]) act[b][dst_row[b] + pix_dst] = wd;
                }
            } else if (L.r.dst_kind == S::DST_DDR) {
                for (int b = 0; b < BPU; b++) {
#pragma HLS UNROLL
                    ddr_t beat = 0;
                    for (int k = 0; k < 8; k++) {
#pragma HLS UNROLL
                        if (8 * b + k < N_PE) beat.range(8 * k + 7, 8 * k) = (unsigned)(int)y[8 * b + k] & 0xFF;
                    }
                    obuf[opix][b] = beat;
                }
            } else {
                for (int pe = 0; pe < N_PE; pe++) {
#pragma HLS UNROLL
                    gsum[pe] += y[pe];
                }
            }
        }

        // advance: chunk fastest, then kx, ky; then ox, oy
        if (last) {
            step = 0;
            wslot_i = wslot(w_first);
            opix++;
            pix_dst++;  // (oy << lg_out) + ox
            if (ox == osz - 1) {
                ox = 0;
                oy++;
            } else {
                ox++;
            }
        } else {
            step++;
            wslot_i = P::WEIGHT_CACHE ? wslot_i + 1 : ((wslot_i + 1) & (WRING - 1));
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
    }
}

// DDR outputs of a pass (rows [oy0, oy0 + 2^lg_pass) of channel group dst_cg0 + g):
// one contiguous run of the tensor, written in bursts.
inline void write_pass(ddr_t* act_ddr, const ddr_t obuf[OBUF_PIX][BPU], const Layer& L, int g, int oy0) {
    const int lg_out = L.r.lg_out;
    const unsigned run = (unsigned)(((L.r.dst_cg0 + g) << lg_out) + oy0);  // (group, first row) of the pass
    const unsigned off = ((unsigned)L.r.dst_ddr >> 3) + (run << (lg_out + LG_BPU));
    const int n = 1 << (L.lg_pass + lg_out + LG_BPU);
    int p = 0, b = 0;
    ZQ_COUNT_ENTRY(PH_DDR_WRITE);
DDR_WRITE:
    for (int i = 0; i < n; i++) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=MAX_PASS_BEATS
        ZQ_COUNT_ITER(PH_DDR_WRITE);
        act_ddr[off + i] = obuf[p][b];
        if (b == BPU - 1) {
            b = 0;
            p++;
        } else {
            b++;
        }
    }
}

// ---------------------------------------------------------------------------------
// One layer of the table. Returns false when the frame was aborted (a framing
// error while the stem read the stream).
inline bool run_layer(int li, hls::stream<zq_axis_in>& s, InState& in, StemState& stem, const ddr_t* wts,
                      ddr_t* act_ddr, act_word_t act[WPG][ACT_ROWS], wbeat_t wbuf[WBUF][BPW],
                      byte_t raw[P::RAW_RR][P::IN_SIZE][P::IN_CH], gap_t gap[GAP_ROWS][N_PE],
                      ddr_t obuf[OBUF_PIX][BPU], WState& ws) {
    const Layer L = decode(li);
    const int R = 1 << L.r.lg_band;
    const int n_bands = 1 << (L.r.lg_out - L.r.lg_band);
    const int n_passes = 1 << (L.r.lg_band - L.lg_pass);
    const int ring = 1 << L.r.src_lg_rows;
    const bool ring_fed = L.r.src_kind != S::SRC_ACT;
    int loaded = 0, released = 0;  // input rows in the ring / rows the ring may overwrite
BANDS:
    for (int band = 0; band < n_bands; band++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=MAX_BANDS
        const int oyb = band << L.r.lg_band;
        if (ring_fed) {
            const int new_loaded = cmin(L.in_h, released + ring);
            const int last_row = cmin(L.in_h - 1, ((oyb + R - 1) << L.r.s2) - L.pad + L.k - 1);
            ZQ_PLAN_CHECK(last_row < new_loaded, "input row needed beyond the ring (deadlock)", li, last_row,
                          new_loaded);
            if (new_loaded > loaded) {
                if (L.r.src_kind == S::SRC_STEM) {
                STEM_ROWS:
                    for (int ys = loaded; ys < new_loaded; ys++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=MAX_RING_ROWS
                        stem_row(s, in, stem, raw, act, L, ys);
                    }
                } else {
                    fill_ddr_rows(act_ddr, act, L, loaded, new_loaded);
                }
                loaded = new_loaded;
            }
            if (in_error(in)) return false;  // a short or long frame: abort
        }
        int start = L.r.w_off;
    GROUPS:
        for (int g = 0; g < L.r.co_groups; g++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=MAX_GROUPS
            ensure_words(wts, wbuf, ws, start + L.r.w_blk, li);
            acc_t bias[N_PE];
#pragma HLS ARRAY_PARTITION variable=bias complete
            const int bslot = wslot(start);
            for (int pe = 0; pe < N_PE; pe++) {
#pragma HLS UNROLL
                const int byte0 = 4 * pe;  // int32, little endian, at bytes 4*pe .. 4*pe + 3
                uint32_t v = 0;
                for (int k = 0; k < 4; k++) {
#pragma HLS UNROLL
                    v |= (uint32_t)beat_byte(wbuf[bslot][(byte0 + k) >> 3], (byte0 + k) & 7) << (8 * k);
                }
                bias[pe] = (acc_t)(int32_t)v;
            }
            gap_t gsum[N_PE];
#pragma HLS ARRAY_PARTITION variable=gsum complete
            for (int pe = 0; pe < N_PE; pe++) {
#pragma HLS UNROLL
                gsum[pe] = 0;
            }
        PASSES:
            for (int p = 0; p < n_passes; p++) {
#pragma HLS LOOP_TRIPCOUNT min=1 max=MAX_PASSES
                const int oy0 = oyb + (p << L.lg_pass);
                mac_pass(L, g, oy0, start + 1, bias, act, wbuf, obuf, gsum);
                if (L.r.dst_kind == S::DST_DDR) write_pass(act_ddr, obuf, L, g, oy0);
            }
            if (L.r.dst_kind == S::DST_GAP) {
                for (int pe = 0; pe < N_PE; pe++) {
#pragma HLS UNROLL
                    gap[L.r.dst_cg0 + g][pe] = gsum[pe];
                }
            }
            if (!L.r.w_res) ws.released = start + L.r.w_blk;
            start += L.r.w_blk;
        }
        released = cmin(L.in_h, cmax(0, (((band + 1) << L.r.lg_band) << L.r.s2) - L.pad));
    }
    if (L.r.w_res) ws.released = L.r.w_off + L.r.co_groups * L.r.w_blk;
    return true;
}

}  // namespace zq

#endif  // ZQ_ENGINE_H
