// Generic templates of the layer-sequential ZynqNet-style engine (Vitis HLS,
// synthesizable subset of UG1399: static sizes, no heap, no recursion, every
// loop bounded). Style of hls4ml's nnet_utils / finn-hlslib: everything here
// is parameterised by a small config struct C (built in zq_top.cpp from the
// generated net_params.h), so one engine serves every exported network.
//
// Microarchitecture (the RTL twin copies it literally):
//
//   s_axis_in --> load() --BUF0 (PIPO)--> compute() --logits--> write_out() --> m_axis_out
//                                           |  N_PE x N_CI MAC array, layer table,
//                                           |  activation RAM (BUF1..), GAP accumulators
//
// * load(): reads IN_BYTES/4 beats (4 pixels per beat, little endian) into a
//   frame store, checks TLAST (short / long frames), then writes BUF0 one
//   byte per cycle: the im2col of the frame when IM2COL==1 (channel
//   j = (ky*K + kx)*IN_CH + c of output pixel (oy,ox) = input pixel
//   (oy*S+ky-K/2, ox*S+kx-K/2, c), zero outside the image and for
//   j >= IM2COL_CH), else the frame itself, IN_WORDS words per pixel. (With
//   IM2COL==0 this is the same loop with K=1, S=1, OUT=IN_SIZE.)
// * compute(): for each row of the layer table, one flattened loop
//   `g, oy, ox, ky, kx, c` with II=1: one N_PE x N_CI MAC-array step per
//   iteration (co_groups * out_size^2 * k^2 * ci_chunks iterations), then the
//   requantization of each (g, oy, ox) and a write of up to N_PE/N_CI words
//   into the destination buffer (or an add into the GAP accumulators for
//   is_last rows). After the last layer: logits = GAP sums rounded >> GAP_SHIFT.
// * write_out(): N_CLASSES beats (or an error frame) and the registers.
//
// Storage:
// * BUF0 words are ap_uint<8*N_CI> (input pixels are 8-bit unsigned).
// * BUF1..BUF{N_BUFS-1} live in one activation RAM, each at a base address
//   (buf_base[], aligned to WPG = N_PE/N_CI words). A word is
//   ap_uint<N_CI*A_BITS>, lane ci in bits [ci*A_BITS, (ci+1)*A_BITS). The RAM
//   is split into WPG banks (word address a -> bank a % WPG, row a / WPG):
//   a layer output of WPG consecutive words goes to WPG distinct banks in one
//   cycle, and one word is read per cycle, so each bank needs one read and
//   one write port (simple dual-port BRAM).
// * Lanes are stored A_BITS wide without a sign; whether a buffer holds a
//   signed tensor is a per-buffer flag set when a layer writes it
//   (out_lo < 0). All writers of a tensor share one format (the exporter
//   checks it), and a buffer is only reused after its tensor's last read.
#ifndef ZQ_ENGINE_H
#define ZQ_ENGINE_H

#include <ap_int.h>
#include <hls_stream.h>

#include "zq_axis.h"

// C-simulation speed-up: with -DZQ_CSIM_NATIVE (and never under synthesis)
// the MAC datapath (lanes, products, dot products, accumulators) uses native
// ints instead of ap_int, about 10x faster with the hls4ml ap_types headers.
// The values are the same: lanes are exact, and the exporter's overflow proof
// (|bias| + k*k*cin*max|w|*max|x| < 2^31) bounds every product, dot product
// and partial sum, so neither an ap_int width nor a 32-bit int ever wraps.
// The Vitis flow and the C testbench build without it (exact HLS types).
#if defined(ZQ_CSIM_NATIVE) && !defined(__SYNTHESIS__)
#define ZQ_NATIVE_MAC 1
#else
#define ZQ_NATIVE_MAC 0
#endif

namespace zq {

constexpr int N_FIELDS = 18;     // fields of one layer-table row (LAYER_FIELDS in export.py)
constexpr int GAP_BUF = 15;      // dst_buf of the final conv: the GAP accumulators
constexpr int MAX_BUFS = 16;     // buffer ids are 4 bits
constexpr int ACC_BITS = 32;     // MAC accumulators (numerics.ACC_BITS)
constexpr int ERROR_LOGIT = -32768;

constexpr int cmax(int a, int b) { return a > b ? a : b; }
constexpr int cmin(int a, int b) { return a < b ? a : b; }
constexpr int cdiv(int a, int b) { return (a + b - 1) / b; }
constexpr bool is_pow2(int n) { return n > 0 && (n & (n - 1)) == 0; }
constexpr int clog2(int n) {  // ceil(log2(n)); loop, not recursion
    int b = 0;
    while ((1 << b) < n) ++b;
    return b;
}

// One row of the layer table (field order: LAYER_FIELDS in model/export.py).
struct LayerDesc {
    int in_size, out_size, k, stride, ci_chunks, co_groups, cout, relu, shift;
    int src_buf, dst_buf, dst_word_off, dst_words, w_base, b_base, is_last, out_lo, out_hi;

    // MAC-array cycles of the flattened loop nest (HwLayer.cycles()).
    constexpr int cycles() const { return co_groups * out_size * out_size * k * k * ci_chunks; }
};

constexpr LayerDesc layer_desc(const int row[N_FIELDS]) {
    return LayerDesc{row[0],  row[1],  row[2],  row[3],  row[4],  row[5],  row[6],  row[7],  row[8],
                     row[9],  row[10], row[11], row[12], row[13], row[14], row[15], row[16], row[17]};
}

#ifndef __SYNTHESIS__
// C simulation only: set by zq_csim_reset(), consumed by write_out().
inline bool& csim_reset_flag() {
    static bool flag = false;
    return flag;
}
#endif

// Per-frame side information passed between the dataflow processes.
struct FrameInfo {
    ap_uint<2> status;   // bit0 short frame, bit1 long frame (0: computed)
    ap_uint<32> cycles;  // modelled cycles so far (see write_out)
};

// Types derived from the config.
template <class C>
struct Types {
    static constexpr int WPG = C::n_pe / C::n_ci;  // words per output group
    static constexpr int LOG_WPG = clog2(WPG);
    static constexpr int LOG_PE = clog2(C::n_pe);
    static constexpr int X_BITS = cmax(C::a_bits, 8) + 1;  // any input or activation lane, signed
    static constexpr int DOT_BITS = C::w_bits + X_BITS + clog2(C::n_ci);
    static constexpr int ACT_ROWS = cmax(1, cdiv(C::act_words, WPG));
    static constexpr int GAP_ROWS = cdiv(C::gap_ch, C::n_pe);
    static constexpr int IN_BEATS = C::in_bytes / 4;

    typedef ap_uint<8 * C::n_ci> in_word_t;         // BUF0 word
    typedef ap_uint<C::a_bits * C::n_ci> act_word_t;  // activation word
#if ZQ_NATIVE_MAC
    typedef int x_t;
    typedef int w_t;
    typedef int dot_t;
    typedef int acc_t;
#else
    typedef ap_int<X_BITS> x_t;                     // one lane entering the MAC array
    typedef ap_int<C::w_bits> w_t;
    typedef ap_int<DOT_BITS> dot_t;                 // sum of N_CI products of one PE
    typedef ap_int<ACC_BITS> acc_t;
#endif
    typedef ap_int<ACC_BITS + 2> post_t;            // acc + rounding constant, shifted
    typedef ap_int<18> y_t;                         // requantized value (<= 16 bits, either sign)
    typedef ap_int<C::out_bits + C::gap_shift + 2> gap_t;
    typedef ap_int<32> logit_t;
};

// ---------------------------------------------------------------------------
// Requantization (model/numerics.py requantize): s = shift;
// y = s > 0 ? (acc + 2^(s-1)) >> s (arithmetic) : acc << -s; ReLU; clamp.
template <class C>
typename Types<C>::y_t requantize(typename Types<C>::acc_t acc, int shift, bool relu, int lo, int hi) {
#pragma HLS INLINE
    typedef typename Types<C>::post_t post_t;
    post_t v = acc;
    if (shift > 0) {
        v = (v + (post_t(1) << (shift - 1))) >> shift;
    } else {
        v = v << (-shift);  // the exporter proves this cannot overflow 32 bits
    }
    if (relu && v < 0) v = 0;
    if (v < lo) v = lo;
    if (v > hi) v = hi;
    return typename Types<C>::y_t(v);
}

// Lanes of one word (lane ci in bits [ci*B, (ci+1)*B)) into the MAC inputs,
// sign-extended when the buffer holds a signed tensor, else zero-extended.
template <class C, int B>
void unpack_lanes(const ap_uint<B * C::n_ci>& wd, bool sgn, typename Types<C>::x_t x[C::n_ci]) {
#pragma HLS INLINE
    typedef typename Types<C>::x_t x_t;
#if ZQ_NATIVE_MAC
    if (B * C::n_ci <= 64) {
        const unsigned long long v = wd.to_uint64();
        for (int ci = 0; ci < C::n_ci; ci++) {
            int l = (int)((v >> (B * ci)) & ((1ull << B) - 1));
            if (sgn && (l >> (B - 1))) l -= 1 << B;
            x[ci] = l;
        }
        return;
    }
#endif
    for (int ci = 0; ci < C::n_ci; ci++) {
#pragma HLS UNROLL
        const ap_uint<B> lane = ap_uint<B>(wd >> (B * ci));
        x[ci] = sgn ? x_t(ap_int<B>(lane)) : x_t(lane);
    }
}

// ---------------------------------------------------------------------------
// Input loader: stream -> frame store -> BUF0 (im2col or plain HWC words).
template <class C>
void gather_input(const ap_uint<32> frame[Types<C>::IN_BEATS],
                  typename Types<C>::in_word_t buf0[C::buf0_words]) {
    typedef typename Types<C>::in_word_t in_word_t;
    constexpr int K = C::im2col_k, S = C::im2col_stride, PAD = C::im2col_k / 2;
    constexpr int WORD_CH = C::in_words * C::n_ci;  // channels per BUF0 pixel (padded)
    constexpr int N = C::im2col_out * C::im2col_out * WORD_CH;
    int oy = 0, ox = 0;   // output pixel of the stem
    int j = 0;            // channel of the BUF0 pixel
    int c = 0, kx = 0, ky = 0;  // j = (ky*K + kx)*IN_CH + c
    int wa = 0;           // BUF0 word address
    in_word_t wr = 0;     // word being assembled (shift register, lane 0 first)
GATHER:
    for (int i = 0; i < N; i++) {
#pragma HLS PIPELINE II=1
        const int iy = oy * S + ky - PAD;
        const int ix = ox * S + kx - PAD;
        const bool inb = j < C::im2col_ch && iy >= 0 && iy < C::in_size && ix >= 0 && ix < C::in_size;
        ap_uint<8> byte = 0;
        if (inb) {
            const int a = (iy * C::in_size + ix) * C::in_ch + c;  // byte address in the frame
            const ap_uint<32> w = frame[a >> 2];
            byte = ap_uint<8>(w >> (8 * (a & 3)));
        }
        wr = (wr >> 8) | (in_word_t(byte) << (8 * C::n_ci - 8));
        if ((j & (C::n_ci - 1)) == C::n_ci - 1) {
            buf0[wa] = wr;
            wa++;
        }
        if (j == WORD_CH - 1) {
            j = 0;
            c = 0;
            kx = 0;
            ky = 0;
            if (ox == C::im2col_out - 1) {
                ox = 0;
                oy++;
            } else {
                ox++;
            }
        } else {
            j++;
            if (c == C::in_ch - 1) {
                c = 0;
                if (kx == K - 1) {
                    kx = 0;
                    ky++;
                } else {
                    kx++;
                }
            } else {
                c++;
            }
        }
    }
}

template <class C>
void load(hls::stream<zq_axis_in>& s_axis_in, typename Types<C>::in_word_t buf0[C::buf0_words],
          hls::stream<FrameInfo>& info_out) {
    constexpr int IN_BEATS = Types<C>::IN_BEATS;
    static ap_uint<32> frame[IN_BEATS];
    int nb = 0;
    bool got_last = false, is_short = false;
READ:
    for (int i = 0; i < IN_BEATS; i++) {
#pragma HLS PIPELINE II=1
        const zq_axis_in b = s_axis_in.read();
        frame[i] = b.data;
        nb++;
        if (b.last) {
            got_last = true;
            is_short = i != IN_BEATS - 1;
            break;
        }
    }
    const bool is_long = !got_last;
    if (is_long) {
        const int DRAIN_MAX = IN_BEATS;  // tripcount estimate only (a long frame is unbounded)
        (void)DRAIN_MAX;
    DRAIN:  // discard beats up to and including the next TLAST
        while (true) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=DRAIN_MAX
            const zq_axis_in b = s_axis_in.read();
            nb++;
            if (b.last) break;
        }
    }
    if (!is_short && !is_long) gather_input<C>(frame, buf0);
    FrameInfo fi;
    fi.status = (is_long ? 2 : 0) | (is_short ? 1 : 0);
    fi.cycles = nb;  // loader: one cycle per beat consumed
    info_out.write(fi);
}

// ---------------------------------------------------------------------------
// One layer: the flattened loop nest g, oy, ox, ky, kx, c at II=1.
template <class C>
void conv_layer(const LayerDesc& L, int src_base, int dst_base, bool src_signed,
                const typename Types<C>::in_word_t buf0[C::buf0_words],
                typename Types<C>::act_word_t act[Types<C>::WPG][Types<C>::ACT_ROWS],
                typename Types<C>::gap_t gap[Types<C>::GAP_ROWS][C::n_pe],
                const typename C::w_ctype weights[C::w_words][C::n_pe][C::n_ci],
                const int biases[C::b_words][C::n_pe]) {
    typedef Types<C> T;
    typedef typename T::in_word_t in_word_t;
    typedef typename T::act_word_t act_word_t;
    typedef typename T::x_t x_t;
    typedef typename T::w_t w_t;
    typedef typename T::dot_t dot_t;
    typedef typename T::acc_t acc_t;
    typedef typename T::y_t y_t;
    constexpr int N_PE = C::n_pe, N_CI = C::n_ci, A = C::a_bits, WPG = T::WPG;

    const int pad = L.k >> 1;
    const int taps_chunks = L.k * L.k * L.ci_chunks;  // iterations per output pixel
    const int n_iter = L.co_groups * L.out_size * L.out_size * taps_chunks;
    const bool from_input = L.src_buf == 0;
    const int MAX_ITER = C::max_cycles_layer;  // for LOOP_TRIPCOUNT
    (void)MAX_ITER;

    acc_t acc[N_PE];
#pragma HLS ARRAY_PARTITION variable=acc complete

    int g = 0, oy = 0, ox = 0, ky = 0, kx = 0, c = 0;
    int w_grp = L.w_base;  // weight word of (g, tap 0, chunk 0)
    int w_off = 0;         // tap*ci_chunks + c within the group

MAC:
    for (int i = 0; i < n_iter; i++) {
#pragma HLS PIPELINE II=1
#pragma HLS LOOP_TRIPCOUNT min=1 max=MAX_ITER
        // A layer never reads the buffer it writes (distinct tensors get
        // distinct physical buffers), so reads and writes are independent.
#pragma HLS DEPENDENCE variable=act inter false
#pragma HLS DEPENDENCE variable=act intra false
        const bool first = w_off == 0;
        const bool last = w_off == taps_chunks - 1;

        // -- input word: pixel (oy*stride + ky - pad, ox*stride + kx - pad), chunk c; zero outside
        const int iy = oy * L.stride + ky - pad;
        const int ix = ox * L.stride + kx - pad;
        const bool inb = iy >= 0 && iy < L.in_size && ix >= 0 && ix < L.in_size;
        const int addr = src_base + (iy * L.in_size + ix) * L.ci_chunks + c;
        x_t x[N_CI];
#pragma HLS ARRAY_PARTITION variable=x complete
        if (from_input) {
            in_word_t wd = 0;
            if (inb) wd = buf0[addr];
            unpack_lanes<C, 8>(wd, false, x);
        } else {
            act_word_t wd = 0;
            if (inb) wd = act[addr & (WPG - 1)][addr >> T::LOG_WPG];
            unpack_lanes<C, A>(wd, src_signed, x);
        }

        // -- the MAC array: N_PE dot products of N_CI lanes
        const int wa = w_grp + w_off;
        const int ba = L.b_base + g;
        for (int pe = 0; pe < N_PE; pe++) {
#pragma HLS UNROLL
            dot_t dot = 0;
            for (int ci = 0; ci < N_CI; ci++) {
#pragma HLS UNROLL
                dot += w_t(weights[wa][pe][ci]) * x[ci];
            }
            const acc_t prev = first ? acc_t(biases[ba][pe]) : acc[pe];
            acc[pe] = prev + dot;
        }

        // -- post-processing of (g, oy, ox) after the last (tap, chunk)
        if (last) {
            const int gch = g * N_PE;
            y_t y[N_PE];
#pragma HLS ARRAY_PARTITION variable=y complete
            for (int pe = 0; pe < N_PE; pe++) {
#pragma HLS UNROLL
                y[pe] = requantize<C>(acc[pe], L.shift, L.relu != 0, L.out_lo, L.out_hi);
            }
            const int valid = cmin(N_PE, L.cout - gch);  // PEs with a real output channel
            if (!L.is_last) {
                // words dst_word_off + g*WPG + w of pixel (oy, ox), w < ceil(valid/N_CI)
                const int nwords = (valid + N_CI - 1) / N_CI;
                const int a0 = dst_base + (oy * L.out_size + ox) * L.dst_words + L.dst_word_off + g * WPG;
                act_word_t words[WPG];
#pragma HLS ARRAY_PARTITION variable=words complete
                for (int w = 0; w < WPG; w++) {
#pragma HLS UNROLL
                    act_word_t wd = 0;
                    for (int ci = 0; ci < N_CI; ci++) {
#pragma HLS UNROLL
                        const int pe = w * N_CI + ci;
                        const ap_uint<A> lane = pe < valid ? ap_uint<A>(y[pe]) : ap_uint<A>(0);
                        wd |= act_word_t(lane) << (A * ci);
                    }
                    words[w] = wd;
                }
                // word a0 + w lives in bank (a0 + w) % WPG: one write per bank
                for (int b = 0; b < WPG; b++) {
#pragma HLS UNROLL
                    const int w = (b - a0) & (WPG - 1);
                    if (w < nwords) act[b][(a0 + w) >> T::LOG_WPG] = words[w];
                }
            } else {
                // GAP: channel dst_word_off + g*N_PE + pe; bank = channel % N_PE
                for (int b = 0; b < N_PE; b++) {
#pragma HLS UNROLL
                    const int pe = (b - L.dst_word_off) & (N_PE - 1);
                    const int ch = L.dst_word_off + gch + pe;
                    if (pe < valid) gap[ch >> T::LOG_PE][b] += y[pe];
                }
            }
        }

        // -- advance the counters (c fastest, then kx, ky, ox, oy, g)
        if (last) {
            w_off = 0;
            if (ox == L.out_size - 1) {
                ox = 0;
                if (oy == L.out_size - 1) {
                    oy = 0;
                    g++;
                    w_grp += taps_chunks;
                } else {
                    oy++;
                }
            } else {
                ox++;
            }
        } else {
            w_off++;
        }
        if (c == L.ci_chunks - 1) {
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

// ---------------------------------------------------------------------------
// Every layer of one frame, then the global average pool.
template <class C>
void compute(const typename Types<C>::in_word_t buf0[C::buf0_words], hls::stream<FrameInfo>& info_in,
             hls::stream<typename Types<C>::logit_t>& logits_out, hls::stream<FrameInfo>& info_out,
             const int layers[C::n_layers][N_FIELDS],
             const typename C::w_ctype weights[C::w_words][C::n_pe][C::n_ci],
             const int biases[C::b_words][C::n_pe], const int buf_base[MAX_BUFS]) {
    typedef Types<C> T;
    typedef typename T::gap_t gap_t;
    typedef typename T::logit_t logit_t;
#pragma HLS ARRAY_PARTITION variable=weights complete dim=2
#pragma HLS ARRAY_PARTITION variable=weights complete dim=3
#pragma HLS ARRAY_PARTITION variable=biases complete dim=2
    static typename T::act_word_t act[T::WPG][T::ACT_ROWS];
#pragma HLS ARRAY_PARTITION variable=act complete dim=1
#pragma HLS BIND_STORAGE variable=act type=ram_s2p impl=bram
    static gap_t gap[T::GAP_ROWS][C::n_pe];
#pragma HLS ARRAY_PARTITION variable=gap complete dim=0
    static bool buf_signed[MAX_BUFS];
#pragma HLS ARRAY_PARTITION variable=buf_signed complete

    FrameInfo fi = info_in.read();
    if (fi.status == 0) {
    GAP_CLEAR:
        for (int r = 0; r < T::GAP_ROWS; r++) {
#pragma HLS UNROLL
            for (int b = 0; b < C::n_pe; b++) {
#pragma HLS UNROLL
                gap[r][b] = 0;
            }
        }
        ap_uint<32> cycles = fi.cycles;
    LAYER:
        for (int l = 0; l < C::n_layers; l++) {
            const LayerDesc L = layer_desc(layers[l]);
            const int sb = L.src_buf & (MAX_BUFS - 1), db = L.dst_buf & (MAX_BUFS - 1);
            conv_layer<C>(L, buf_base[sb], buf_base[db], buf_signed[sb], buf0, act, gap, weights, biases);
            buf_signed[db] = L.out_lo < 0;
            cycles += L.cycles();
        }
        fi.cycles = cycles;
    }
    info_out.write(fi);
    if (fi.status == 0) {
    LOGITS:
        for (int c = 0; c < C::n_classes; c++) {
#pragma HLS PIPELINE II=1
            gap_t s = gap[c / C::n_pe][c % C::n_pe];
            if (C::gap_shift > 0) s = (s + (gap_t(1) << (C::gap_shift - 1))) >> C::gap_shift;
            logits_out.write(logit_t(s));
        }
    }
}

// ---------------------------------------------------------------------------
// Output stream and registers. cycles_last is MODELLED, not measured: the
// loader's beats (IN_BYTES/4 for a good frame) + the sum over layers of the
// MAC loop nests (co_groups*out_size^2*k^2*ci_chunks) + N_CLASSES output
// beats. It leaves out pipeline fill/drain, the BUF0 gather pass and the GAP
// readout. An error frame counts its consumed beats + N_CLASSES.
template <class C>
void write_out(hls::stream<typename Types<C>::logit_t>& logits_in, hls::stream<FrameInfo>& info_in,
               hls::stream<zq_axis_out>& m_axis_out, ap_uint<32>& status, ap_uint<32>& cycles_last,
               ap_uint<32>& frames_done, ap_uint<32>& net_id, ap_uint<32>& build_params) {
    static ap_uint<16> err_frames = 0;  // reset to 0 by the hardware reset
    static ap_uint<32> done = 0;
#ifndef __SYNTHESIS__
    if (csim_reset_flag()) {  // C simulation: zq_csim_reset() stands in for a reset
        err_frames = 0;
        done = 0;
        csim_reset_flag() = false;
    }
#endif
    const FrameInfo fi = info_in.read();
    const bool ok = fi.status == 0;
OUT:
    for (int c = 0; c < C::n_classes; c++) {
#pragma HLS PIPELINE II=1
        const ap_int<32> v = ok ? ap_int<32>(logits_in.read()) : ap_int<32>(ERROR_LOGIT);
        zq_axis_out o;
        o.data = ap_uint<32>(v);
        o.keep = -1;
        o.strb = -1;
        o.last = c == C::n_classes - 1;
        m_axis_out.write(o);
    }
    if (!ok && err_frames != 0xFFFF) err_frames++;
    done++;
    status = (ap_uint<32>(err_frames) << 16) | ap_uint<32>(fi.status);
    cycles_last = fi.cycles + C::n_classes;
    frames_done = done;
    net_id = C::net_id;
    build_params = ap_uint<32>(C::n_pe | (C::n_ci << 8) | (C::w_bits << 16) | (C::a_bits << 24));
}

}  // namespace zq

#endif  // ZQ_ENGINE_H
