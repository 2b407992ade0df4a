// zq_top: the engine (zq_frame.h and the headers it includes) for one exported network.
//
// Build: the export directory (net_params.h) and hls/ on the include path,
// e.g.  g++ -O2 -std=c++14 -I build/<net>/export -I hls -isystem <ap_types> ...
// (sim/csim/runner.py and hls/scripts/run_hls.tcl do this; the C simulation also compiles
// hls/csim/zq_csim.cpp).
#include "net_params.h"

#include "zq_frame.h"
#include "zq_top.h"

namespace {

namespace P = zq_net;
namespace S = zq_spec;
using zq::N_PE;
using zq::N_CI;
using zq::WPG;

// ---- compile-time checks of the build constants and the layer table ----------------
constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }

// 0 = the layer table runs on this engine, else 100*(layer+1) + the failed check
// (1 when the weight offsets are not the image in order).
constexpr int layer_table_error() {
    int w = 0;
    for (int l = 0; l < P::N_LAYERS; ++l) {
        const S::LayerRow& r = P::LAYERS[l];
        const int e = 100 * (l + 1);
        const int k = r.k3 ? 3 : 1;
        if (r.lg_in > 15 || r.lg_out != r.lg_in - r.s2 || r.lg_out < 0) return e + 1;
        if (r.ci_chunks < 1 || r.co_groups < 1 || r.co_last < 1 || r.co_last > N_PE) return e + 2;
        if (r.lg_band > r.lg_out) return e + 3;
        if (r.shift < -31 || r.shift > 31 || r.out_lo > r.out_hi) return e + 4;
        if (r.src_kind > S::SRC_DDR || r.dst_kind > S::DST_GAP) return e + 5;
        if ((l == 0) != (r.src_kind == S::SRC_STEM)) return e + 6;  // only the first layer reads the stem
        if (r.src_kind == S::SRC_STEM &&
            (r.ci_chunks != P::IN_WORDS || (1 << r.lg_in) != P::STEM_SIZE || r.src_signed ||
             (P::STEM_IM2COL && (r.k3 || r.s2))))
            return e + 7;
        if (r.src_kind == S::SRC_ACT && r.src_lg_rows != r.lg_in) return e + 8;
        const int src_words = r.src_kind == S::SRC_STEM ? P::IN_WORDS
                              : r.src_kind == S::SRC_ACT ? r.ci_chunks
                                                         : r.src_cgrps * WPG;
        if (r.ci_chunks > src_words) return e + 9;
        if (r.src_base + (ceil_div(src_words, WPG) << (r.src_lg_rows + r.lg_in)) > P::ACT_ROWS) return e + 10;
        if (r.src_kind == S::SRC_DDR &&
            (N_PE % 8 || (long)r.src_ddr + ((long)r.src_cgrps << (2 * r.lg_in)) * N_PE > (long)P::SCRATCH_BYTES))
            return e + 11;
        if (r.dst_kind == S::DST_ACT) {
            const int last_cw = r.dst_cw0 + (r.co_groups - 1) * WPG + ceil_div(r.co_last, N_CI) - 1;
            if (r.dst_base + (((last_cw / WPG) + 1) << (2 * r.lg_out)) > P::ACT_ROWS) return e + 12;
        }
        if (r.dst_kind == S::DST_DDR &&
            (N_PE % 8 || (long)r.dst_ddr + ((long)(r.dst_cg0 + r.co_groups) << (2 * r.lg_out)) * N_PE >
                             (long)P::SCRATCH_BYTES))
            return e + 13;
        if (r.dst_kind == S::DST_GAP && (r.dst_cg0 + r.co_groups > P::GAP_ROWS || 2 * r.lg_out != P::GAP_SHIFT))
            return e + 14;
        if (r.w_blk != 1 + k * k * r.ci_chunks || r.w_off != w) return e + 15;
        if (!P::WEIGHT_CACHE && (r.w_blk > zq::WRING || (r.w_res && r.co_groups * r.w_blk > zq::WRING)))
            return e + 16;
        if (r.src_kind != S::SRC_ACT && r.src_lg_rows < 1) return e + 17;
        // a layer never reads the region it writes (the core's RAMs are declared free of
        // dependences between its reads and writes): activation-RAM rows, then DDR bytes
        if (r.dst_kind == S::DST_ACT) {
            const long src0 = r.src_base, src1 = r.src_base + (long)(ceil_div(src_words, WPG) << (r.src_lg_rows + r.lg_in));
            const int last_cw = r.dst_cw0 + (r.co_groups - 1) * WPG + ceil_div(r.co_last, N_CI) - 1;
            const long dst0 = r.dst_base + ((long)(r.dst_cw0 / WPG) << (2 * r.lg_out));
            const long dst1 = r.dst_base + ((long)(last_cw / WPG + 1) << (2 * r.lg_out));
            if (src0 < dst1 && dst0 < src1) return e + 18;
        }
        if (r.src_kind == S::SRC_DDR && r.dst_kind == S::DST_DDR) {
            const long src0 = (long)(unsigned)r.src_ddr, src1 = src0 + ((long)r.src_cgrps << (2 * r.lg_in)) * N_PE;
            const long dst0 = (long)(unsigned)r.dst_ddr + ((long)r.dst_cg0 << (2 * r.lg_out)) * N_PE;
            const long dst1 = (long)(unsigned)r.dst_ddr + ((long)(r.dst_cg0 + r.co_groups) << (2 * r.lg_out)) * N_PE;
            if (src0 < dst1 && dst0 < src1) return e + 19;
        }
        w += r.co_groups * r.w_blk;
    }
    return w == P::IMAGE_WORDS ? 0 : 1;
}

static_assert(zq::is_pow2(N_PE) && zq::is_pow2(N_CI), "N_PE and N_CI must be powers of two");
static_assert(N_PE % N_CI == 0, "N_PE must be a multiple of N_CI (an output group is whole channel words)");
static_assert(N_CI >= 4, "N_CI < 4: a weight word must hold the N_PE 32-bit biases");
static_assert(N_PE % 2 == 0, "N_PE must be even (two output channels share a DSP48E1)");
static_assert(zq::WORD_BYTES % 8 == 0 && P::HEADER_BYTES % 8 == 0, "weight words and header are whole 64-bit beats");
static_assert(P::HEADER_BYTES >= 4 * S::HDR_WORDS, "the header holds the HEADER fields");
static_assert(P::IMAGE_BYTES == (unsigned)(P::HEADER_BYTES + P::IMAGE_WORDS * zq::WORD_BYTES),
              "IMAGE_BYTES != HEADER_BYTES + IMAGE_WORDS * N_PE * N_CI");
static_assert(P::WEIGHT_CACHE ? P::WBUF_DEPTH == P::IMAGE_WORDS && P::IMAGE_WORDS <= zq::WRING
                              : P::WBUF_DEPTH == zq::WRING,
              "WBUF_DEPTH must be IMAGE_WORDS (cache) or 2^WR_W (ring)");
static_assert(P::SCRATCH_BYTES == 0 || N_PE % 8 == 0, "DDR tensors need N_PE >= 8 (whole 64-bit beats per unit)");
static_assert(P::SCRATCH_BYTES % 8 == 0, "the scratch area is whole beats");
static_assert(P::IN_BYTES % 4 == 0, "input frames must be whole 32-bit beats (IN_BYTES % 4 == 0)");
static_assert(P::IN_BYTES == P::IN_SIZE * P::IN_SIZE * P::IN_CH, "IN_BYTES != IN_SIZE^2 * IN_CH");
static_assert(P::STEM_SIZE * P::STEM_S == P::IN_SIZE, "STEM_SIZE * STEM_S != IN_SIZE");
static_assert(P::IN_WORDS * N_CI >= zq::STEM_LANES, "IN_WORDS * N_CI < STEM_K^2 * IN_CH");
static_assert(zq::is_pow2(P::RAW_RR) && P::RAW_RR >= P::STEM_K + P::STEM_S, "RAW_RR: a power of two >= K + S");
static_assert(P::STEM_IM2COL || (P::STEM_K == 1 && P::STEM_S == 1), "a stem that is not im2col'ed has K = S = 1");
static_assert(P::N_CLASSES >= 1 && P::N_CLASSES <= P::GAP_ROWS * N_PE, "N_CLASSES > GAP_ROWS * N_PE");
static_assert(P::GAP_SHIFT >= 0 && P::GAP_SHIFT < 31, "GAP_SHIFT");
static_assert(P::W_BITS <= S::W_BITS_MAX && P::A_BITS <= S::LANE_BITS && P::OUT_BITS <= S::OUT_BITS_MAX,
              "weights of at most 8 bits, activations in 8-bit lanes, logits of at most 16 bits");
static_assert(P::BUILD_PARAMS == ((unsigned)N_PE | (unsigned)N_CI << 8 | (unsigned)P::W_BITS << 16 |
                                  (unsigned)P::A_BITS << 24),
              "BUILD_PARAMS != N_PE | N_CI << 8 | W_BITS << 16 | A_BITS << 24");
static_assert((P::ENGINE_INFO_HLS & 0xFF) == (unsigned)S::SPEC_VERSION,
              "net_params.h was exported for another spec version than zq_spec.h: re-export");
static_assert((P::ENGINE_INFO_HLS & S::INFO_RTL_TWIN) == 0, "ENGINE_INFO_HLS has the rtl_twin bit");
static_assert(((P::ENGINE_INFO_HLS & S::INFO_WEIGHT_CACHE) != 0) == (P::WEIGHT_CACHE != 0),
              "ENGINE_INFO_HLS weight_cache bit != WEIGHT_CACHE");
// The table's check, with its value in the compiler's message ("LayerTableCheck<118>": layer 1
// (0-based), check 18: the layer's source and destination regions overlap).
template <int ERROR>
struct LayerTableCheck {
    static_assert(ERROR == 0, "layer table inconsistent: see LayerTableCheck<100*(layer+1) + check> and the "
                              "checks of layer_table_error() in zq_top.cpp");
    static constexpr bool ok = ERROR == 0;
};
static_assert(LayerTableCheck<layer_table_error()>::ok, "layer table inconsistent");

static_assert(zq::W_FIFO >= 2 && zq::STEM_FIFO >= 2 && zq::FILL_FIFO >= 2 && zq::OUT_FIFO >= zq::BURST,
              "stream depths: at least 2 (a beat per cycle), the DDR writer's at least one burst");

// m_axi depths for C/RTL co-simulation (beats): the weight image, the scratch area.
constexpr int WTS_DEPTH = (int)(P::IMAGE_BYTES / 8);
constexpr int ACT_DEPTH = P::SCRATCH_BYTES ? (int)(P::SCRATCH_BYTES / 8) : 1;
static_assert(S::ADDR_ALIGN % S::AXI_LINE_BYTES == 0, "DDR tensors start on a 128-byte line (path 2's line parity)");

#ifndef __SYNTHESIS__
bool g_reset_pending = false;  // zq_csim_reset(): the next call starts from the reset state
#endif

}  // namespace

#define ZQ_XPRAGMA(x) ZQ_PRAGMA(x)  // expands macro arguments before _Pragma
#ifndef ZQ_WTS_DEPTH
#define ZQ_WTS_DEPTH WTS_DEPTH
#endif
#ifndef ZQ_ACT_DEPTH
#define ZQ_ACT_DEPTH ACT_DEPTH
#endif
// The masters address the DDR from 0 (offset=off), so co-simulation's depth is the testbench's DDR
// array (hls/tb/tb_zq_top.cpp: three pages, the image, a page, the scratch area) in beats.
#define ZQ_PAGE_BEATS (S::ADDR_ALIGN / 8)
#define ZQ_BEATS_UP(n) (((n) + ZQ_PAGE_BEATS - 1) / ZQ_PAGE_BEATS * ZQ_PAGE_BEATS)
#define ZQ_MEM_DEPTH (4 * ZQ_PAGE_BEATS + ZQ_BEATS_UP(ZQ_WTS_DEPTH) + ZQ_BEATS_UP(ZQ_ACT_DEPTH))
// The m_axi adapters' expected read latency (cycles; UG1399 `latency=`): requests are issued
// this early, so bursts follow one another without a gap (spec MemoryModel.read_latency on the
// pynq-z2 preset, plus the HP port's interconnect).
#ifndef ZQ_MAXI_LATENCY
#define ZQ_MAXI_LATENCY 40
#endif

// The register map stays the spec's (docs/engine-spec.md, the RTL twin's): the `wts` and `act`
// registers are 64-bit scalar arguments at their offsets, and the three masters (offset=off) are
// indexed by byte address / 8, so path 2 reads (act2) and writes (wts) the scratch area at `act`,
// as the RTL twin's masters do; no `act2` register (hls/README.md, "The second path").
void zq_top(hls::stream<zq_axis_in>& s_axis_in, hls::stream<zq_axis_out>& m_axis_out, ap_uint<64>* wts_mem,
            ap_uint<64>* act_mem, const ap_uint<64>* act2_mem, zq_addr_t wts, zq_addr_t act, zq_reg_t& status,
            zq_reg_t& frames_done, zq_reg_t& net_id, zq_reg_t& build_params, zq_reg_t& engine_info) {
#pragma HLS INTERFACE mode=axis port=s_axis_in register_mode=both
#pragma HLS INTERFACE mode=axis port=m_axis_out register_mode=both
    ZQ_XPRAGMA(HLS INTERFACE mode=m_axi port=wts_mem bundle=wts offset=off max_read_burst_length=16 \
               max_write_burst_length=16 num_read_outstanding=8 num_write_outstanding=8 \
               latency=ZQ_MAXI_LATENCY depth=ZQ_MEM_DEPTH)
    ZQ_XPRAGMA(HLS INTERFACE mode=m_axi port=act_mem bundle=act offset=off max_read_burst_length=16 \
               max_write_burst_length=16 num_read_outstanding=8 num_write_outstanding=8 \
               latency=ZQ_MAXI_LATENCY depth=ZQ_MEM_DEPTH)
    ZQ_XPRAGMA(HLS INTERFACE mode=m_axi port=act2_mem bundle=act2 offset=off max_read_burst_length=16 \
               num_read_outstanding=8 latency=ZQ_MAXI_LATENCY depth=ZQ_MEM_DEPTH)
    ZQ_AXILITE_PRAGMAS
#pragma HLS INTERFACE mode=ap_ctrl_hs port=return

    // counters since reset and the weight cache's state (ap_rst_n clears them)
    static ap_uint<16> err_frames = 0;
    static ap_uint<32> frames = 0;
    static bool cached = false;
#pragma HLS RESET variable=err_frames
#pragma HLS RESET variable=frames
#pragma HLS RESET variable=cached

#ifndef __SYNTHESIS__
    if (g_reset_pending) {
        err_frames = 0;
        frames = 0;
        cached = false;
        g_reset_pending = false;
    }
#endif

    net_id = P::NET_ID;
    build_params = P::BUILD_PARAMS;
    engine_info = P::ENGINE_INFO_HLS;

    // the masters' views: the image (wts), the scratch area on path 1 (act) and on path 2 (act2
    // reads, wts writes); byte addresses / 8 (the host's addresses are 8-byte aligned)
    const zq::ddr_t* image = wts_mem + (unsigned)(wts >> 3);
    zq::ddr_t* scratch = act_mem + (unsigned)(act >> 3);
    const zq::ddr_t* scratch2_rd = act2_mem + (unsigned)(act >> 3);
    zq::ddr_t* scratch2_wr = wts_mem + (unsigned)(act >> 3);

    // the weight image's header, every frame; a frame with a foreign image computes nothing
    ap_uint<8> flags = 0;
    int n_out = 1;
    if (zq::header_ok(image)) {
        const bool load = P::WEIGHT_CACHE ? !cached : true;  // a cache build loads its cache once
        zq::run_frame(s_axis_in, m_axis_out, image, scratch, scratch2_rd, scratch2_wr, load, flags, n_out);
        cached = P::WEIGHT_CACHE != 0;
#if !ZQ_HLS_STREAMS
        if (zq_csim::mode() == zq_csim::MODE_LOCKSTEP) ZQ_COUNT_SET(C_SPAN, zq::FRAME_ROW, zq_csim::last_run_cycles(), 0);
#endif
    } else {
        cached = false;
        flags = S::STATUS_WEIGHT_IMAGE;
        zq::reject_frame(s_axis_in, m_axis_out, n_out);
    }

    frames += n_out;
    if (flags != 0) err_frames = (int)err_frames + n_out > S::STATUS_ERRCNT_MAX ? ap_uint<16>(S::STATUS_ERRCNT_MAX)
                                                                              : ap_uint<16>(err_frames + n_out);
    status = (zq_reg_t(err_frames) << S::STATUS_ERRCNT_SHIFT) | zq_reg_t(flags);
    frames_done = frames;
}

#ifndef __SYNTHESIS__
void zq_csim_reset() { g_reset_pending = true; }
int zq_csim_guard(int which) { return which == 0 ? zq::AVAIL_GUARD : zq::RELEASE_GUARD; }
#endif

#if defined(ZQ_COUNT_ITERATIONS) && !defined(__SYNTHESIS__)
int zq_csim_loop_counts(long long* out, int max_n, bool clear) {
    zq::Counts& c = zq::g_counts;
    const int n = (P::N_LAYERS + 1) * zq::C_N * 2;
    if (out) {
        const long long* flat = &c.n[0][0][0];
        for (int i = 0; i < n && i < max_n; i++) out[i] = flat[i];
    }
    if (clear) {
        long long* flat = &c.n[0][0][0];
        for (int i = 0; i < n; i++) flat[i] = 0;
    }
    return n;
}
#endif
