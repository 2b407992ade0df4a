// zq_top: the engine of engine.h instantiated for one exported network.
//
// Build: the export directory (net_params.h) and hls/ on the include path,
// e.g.  g++ -O2 -std=c++14 -I build/<net>/export -I hls -I <ap_types> ...
// (hls/csim.py and hls/scripts/run_hls.tcl do this).
#include <type_traits>

#include "net_params.h"

#include "engine.h"
#include "zq_top.h"

// net_params.h defines BUF0_WORDS .. BUF{N_BUFS-1}_WORDS only. Qualified
// lookup of zq_net::BUFi_WORDS finds the generated constant when there is
// one and falls back to these zeros (namespaces nominated by a
// using-directive are searched only when the name is not declared in zq_net).
namespace zq_net_fallback {
constexpr int BUF1_WORDS = 0, BUF2_WORDS = 0, BUF3_WORDS = 0, BUF4_WORDS = 0, BUF5_WORDS = 0,
              BUF6_WORDS = 0, BUF7_WORDS = 0, BUF8_WORDS = 0, BUF9_WORDS = 0, BUF10_WORDS = 0,
              BUF11_WORDS = 0, BUF12_WORDS = 0, BUF13_WORDS = 0, BUF14_WORDS = 0;
}  // namespace zq_net_fallback
namespace zq_net {
using namespace zq_net_fallback;
}  // namespace zq_net

namespace {

namespace P = zq_net;

constexpr int BUF_WORDS[zq::MAX_BUFS] = {
    P::BUF0_WORDS,  P::BUF1_WORDS,  P::BUF2_WORDS,  P::BUF3_WORDS, P::BUF4_WORDS, P::BUF5_WORDS,
    P::BUF6_WORDS,  P::BUF7_WORDS,  P::BUF8_WORDS,  P::BUF9_WORDS, P::BUF10_WORDS, P::BUF11_WORDS,
    P::BUF12_WORDS, P::BUF13_WORDS, P::BUF14_WORDS, 0};

constexpr int WPG = P::N_PE / P::N_CI;

constexpr int round_words(int w) { return zq::cdiv(w, WPG) * WPG; }

// Base address of activation buffer b (1..N_BUFS-1) in the activation RAM;
// BUF0 is a separate memory and GAP_BUF is not a memory (both 0).
constexpr int buf_base_of(int b) {
    int base = 0;
    for (int i = 1; i < b; ++i) base += round_words(BUF_WORDS[i]);
    return (b <= 0 || b >= P::N_BUFS) ? 0 : base;
}

constexpr int act_words_total() {
    int total = 0;
    for (int i = 1; i < P::N_BUFS; ++i) total += round_words(BUF_WORDS[i]);
    return total;
}

const int BUF_BASE[zq::MAX_BUFS] = {
    buf_base_of(0),  buf_base_of(1),  buf_base_of(2),  buf_base_of(3),  buf_base_of(4),  buf_base_of(5),
    buf_base_of(6),  buf_base_of(7),  buf_base_of(8),  buf_base_of(9),  buf_base_of(10), buf_base_of(11),
    buf_base_of(12), buf_base_of(13), buf_base_of(14), buf_base_of(15)};

// Consistency of the generated layer table with the constants and with what
// the engine assumes. 0 = fine, else 100*(layer+1) + the failed check.
constexpr int layer_table_error() {
    long total = 0;
    for (int l = 0; l < P::N_LAYERS; ++l) {
        const zq::LayerDesc d = zq::layer_desc(P::LAYERS[l]);
        const int e = 100 * (l + 1);
        if (d.k != 1 && d.k != 3) return e + 1;
        if (d.stride != 1 && d.stride != 2) return e + 2;
        if (d.out_size != zq::cdiv(d.in_size, d.stride) || d.out_size < 1) return e + 3;
        if (d.ci_chunks < 1 || d.ci_chunks > P::MAX_CHUNKS) return e + 4;
        if (d.co_groups != zq::cdiv(d.cout, P::N_PE) || d.co_groups > P::MAX_GROUPS) return e + 5;
        if (d.shift > 31 || d.shift < -31) return e + 6;
        if (d.src_buf < 0 || d.src_buf >= P::N_BUFS) return e + 7;
        if (d.is_last != (d.dst_buf == zq::GAP_BUF ? 1 : 0)) return e + 8;
        if (!d.is_last && (d.dst_buf < 1 || d.dst_buf >= P::N_BUFS)) return e + 9;
        if (d.src_buf == d.dst_buf) return e + 10;
        if ((d.src_buf == 0) != (l == 0)) return e + 11;  // only the first layer reads BUF0
        if (d.in_size * d.in_size * d.ci_chunks > BUF_WORDS[d.src_buf]) return e + 12;
        if (!d.is_last && d.dst_word_off + zq::cdiv(d.cout, P::N_CI) > d.dst_words) return e + 13;
        if (!d.is_last && d.out_size * d.out_size * d.dst_words > BUF_WORDS[d.dst_buf]) return e + 14;
        if (d.is_last && (d.dst_word_off + d.cout > P::GAP_CH || d.out_size * d.out_size != (1 << P::GAP_SHIFT)))
            return e + 15;
        if (d.w_base + d.co_groups * d.k * d.k * d.ci_chunks > P::W_WORDS) return e + 16;
        if (d.b_base + d.co_groups > P::B_WORDS) return e + 17;
        if (d.out_lo > d.out_hi || d.out_lo < -32768 || d.out_hi > 65535) return e + 18;
        if (l == 0 && (d.in_size != P::IM2COL_OUT || d.ci_chunks != P::IN_WORDS)) return e + 19;
        if (l == 0 && P::IM2COL && (d.k != 1 || d.stride != 1)) return e + 20;
        if (d.in_size > P::MAX_SIZE || d.cycles() > P::MAX_CYCLES_LAYER) return e + 21;
        total += d.cycles();
    }
    if (total != P::TOTAL_CYCLES) return 1;
    return 0;
}

static_assert(P::IN_BYTES % 4 == 0, "input frames must be whole 32-bit beats (IN_BYTES % 4 == 0)");
static_assert(P::IN_BYTES == P::IN_SIZE * P::IN_SIZE * P::IN_CH, "IN_BYTES != IN_SIZE^2 * IN_CH");
static_assert(zq::is_pow2(P::N_PE) && zq::is_pow2(P::N_CI), "N_PE and N_CI must be powers of two");
static_assert(P::N_PE % P::N_CI == 0, "the engine writes whole words: N_PE must be a multiple of N_CI");
static_assert(P::W_BITS >= 2 && P::W_BITS <= 16 && P::A_BITS >= 2 && P::A_BITS <= 16, "bit widths 2..16");
static_assert(P::OUT_BITS >= 2 && P::OUT_BITS <= 16, "logits must fit 16 bits (error frames use -32768)");
static_assert(P::N_BUFS >= 1 && P::N_BUFS <= zq::GAP_BUF, "at most 14 activation buffers");
static_assert(P::BUF0_WORDS == P::IM2COL_OUT * P::IM2COL_OUT * P::IN_WORDS, "BUF0 size");
static_assert(P::IM2COL_CH <= P::IN_WORDS * P::N_CI, "IM2COL_CH > IN_WORDS * N_CI");
static_assert(P::IM2COL_CH == P::IM2COL_K * P::IM2COL_K * P::IN_CH, "IM2COL_CH != K*K*IN_CH");
static_assert(P::IM2COL_OUT == zq::cdiv(P::IN_SIZE, P::IM2COL_STRIDE), "IM2COL_OUT");
static_assert(P::N_CLASSES >= 1 && P::N_CLASSES <= P::GAP_CH, "N_CLASSES must be <= GAP_CH");
static_assert(P::GAP_SHIFT >= 0 && P::GAP_SHIFT < 31, "GAP_SHIFT");
static_assert(sizeof(P::WEIGHTS) / sizeof(P::WEIGHTS[0]) == (unsigned)P::W_WORDS, "WEIGHTS rows != W_WORDS");
static_assert(sizeof(P::BIASES) / sizeof(P::BIASES[0]) == (unsigned)P::B_WORDS, "BIASES rows != B_WORDS");
static_assert(layer_table_error() == 0, "layer table inconsistent (value: 100*(layer+1) + check in zq_top.cpp)");

// The engine configuration (hls4ml-style config struct).
struct Cfg {
    static constexpr int n_pe = P::N_PE;
    static constexpr int n_ci = P::N_CI;
    static constexpr int a_bits = P::A_BITS;
    static constexpr int w_bits = P::W_BITS;
    static constexpr int out_bits = P::OUT_BITS;
    static constexpr int n_layers = P::N_LAYERS;
    static constexpr int in_size = P::IN_SIZE;
    static constexpr int in_ch = P::IN_CH;
    static constexpr int in_bytes = P::IN_BYTES;
    static constexpr int im2col_k = P::IM2COL_K;
    static constexpr int im2col_stride = P::IM2COL_STRIDE;
    static constexpr int im2col_out = P::IM2COL_OUT;
    static constexpr int im2col_ch = P::IM2COL_CH;
    static constexpr int in_words = P::IN_WORDS;
    static constexpr int n_classes = P::N_CLASSES;
    static constexpr int gap_ch = P::GAP_CH;
    static constexpr int gap_shift = P::GAP_SHIFT;
    static constexpr int w_words = P::W_WORDS;
    static constexpr int b_words = P::B_WORDS;
    static constexpr int buf0_words = P::BUF0_WORDS;
    static constexpr int act_words = act_words_total();
    static constexpr int max_cycles_layer = P::MAX_CYCLES_LAYER;
    static constexpr unsigned net_id = P::NET_ID;
    typedef std::remove_cv<std::remove_all_extents<decltype(P::WEIGHTS)>::type>::type w_ctype;
};

}  // namespace

void zq_top(hls::stream<zq_axis_in>& s_axis_in, hls::stream<zq_axis_out>& m_axis_out, zq_reg_t& status,
            zq_reg_t& cycles_last, zq_reg_t& frames_done, zq_reg_t& net_id, zq_reg_t& build_params) {
#pragma HLS INTERFACE mode=axis port=s_axis_in register_mode=both
#pragma HLS INTERFACE mode=axis port=m_axis_out register_mode=both
#pragma HLS INTERFACE mode=s_axilite port=status bundle=control
#pragma HLS INTERFACE mode=s_axilite port=cycles_last bundle=control
#pragma HLS INTERFACE mode=s_axilite port=frames_done bundle=control
#pragma HLS INTERFACE mode=s_axilite port=net_id bundle=control
#pragma HLS INTERFACE mode=s_axilite port=build_params bundle=control
#pragma HLS INTERFACE mode=s_axilite port=return bundle=control
#pragma HLS INTERFACE mode=ap_ctrl_hs port=return
    // Three processes: load (stream -> BUF0), compute (layers + GAP),
    // write_out (stream + registers). BUF0 becomes a ping-pong buffer, so the
    // next frame is loaded while this one is computed. The register outputs
    // are written by write_out only (one writer per output, as DATAFLOW
    // requires); the counters are statics of that process.
#pragma HLS DATAFLOW
    hls::stream<zq::FrameInfo> info_load("info_load"), info_comp("info_comp");
#pragma HLS STREAM variable=info_load depth=2
#pragma HLS STREAM variable=info_comp depth=2
    hls::stream<zq::Types<Cfg>::logit_t> logits("logits");
#pragma HLS STREAM variable=logits depth=2
    zq::Types<Cfg>::in_word_t buf0[P::BUF0_WORDS];

    zq::load<Cfg>(s_axis_in, buf0, info_load);
    zq::compute<Cfg>(buf0, info_load, logits, info_comp, P::LAYERS, P::WEIGHTS, P::BIASES, BUF_BASE);
    zq::write_out<Cfg>(logits, info_comp, m_axis_out, status, cycles_last, frames_done, net_id, build_params);
}

#ifndef __SYNTHESIS__
void zq_csim_reset() { zq::csim_reset_flag() = true; }
#endif
