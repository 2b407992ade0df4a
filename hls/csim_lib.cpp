// C-simulation library: zq_top behind an extern "C" API for Python (ctypes,
// zynqflow.sim.csim.runner). Built together with zq_top.cpp:
//   g++ -O2 -std=c++14 -shared -fPIC -I<export_dir> -I<hls> -isystem <ap_types> zq_top.cpp csim_lib.cpp
//
// The library holds a simulated DDR (64-bit words): the weight image from the
// export's weights.bin at WTS_BASE, a spare image slot after it (tests move the
// image there), and the activation scratch area (SCRATCH_BYTES of net_params.h,
// the manifest's memory.scratch_bytes) at ACT_BASE, with a spare page after it. zq_init(export_dir) loads
// the image; the base addresses passed to zq_top (the `wts` and `act`
// registers) can be moved with zq_set_bases.
//
// The engine's dataflow runs under the project's C-simulation scheduler (csim/zq_csim.h):
// zq_set_mode picks threads (default), lockstep or sequential; zq_set_stream_depth overrides
// a stream's depth; a deadlock fails the call (-4) and zq_last_error() holds the watchdog's
// report naming the blocked processes and streams.
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <string>
#include <vector>

#include "csim/zq_csim.h"
#include "net_params.h"
#include "zq_top.h"

// the ctypes API (the library is built with -fvisibility=hidden: nothing else is exported)
#define ZQ_API __attribute__((visibility("default")))

namespace {

constexpr int IN_BEATS = zq_net::IN_BYTES / 4;
constexpr int N_CLASSES = zq_net::N_CLASSES;
constexpr int N_REGS = 5;  // status, frames_done, net_id, build_params, engine_info
constexpr uint64_t PAGE = zq_spec::ADDR_ALIGN;

constexpr uint64_t round_up(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }
constexpr uint64_t IMG_SLOT = round_up(zq_net::IMAGE_BYTES, PAGE);
constexpr uint64_t WTS_BASE = PAGE;                        // the weight image (nonzero address)
constexpr uint64_t WTS_ALT = WTS_BASE + IMG_SLOT;          // a spare slot for a second image
constexpr uint64_t ACT_BASE = WTS_ALT + IMG_SLOT + PAGE;   // the activation scratch area
constexpr uint64_t DDR_BYTES = ACT_BASE + round_up(zq_net::SCRATCH_BYTES ? zq_net::SCRATCH_BYTES : 8, PAGE) + PAGE;

hls::stream<zq_axis_in> g_in("s_axis_in");
hls::stream<zq_axis_out> g_out("m_axis_out");
zq_reg_t g_regs[N_REGS];
std::vector<ap_uint<64> > g_ddr;
uint64_t g_wts = WTS_BASE, g_act = ACT_BASE;
std::string g_error;

void push_beat(uint32_t data, bool last) {
    zq_axis_in b;
    b.data = data;
    b.keep = 0xF;
    b.strb = 0xF;
    b.last = last ? 1 : 0;
    g_in.write(b);
}

// One call of the engine; false (and g_error set, the engine reset) when the simulation failed.
bool call_top() {
    try {
        zq_top(g_in, g_out, g_ddr.data(), g_ddr.data(), g_ddr.data(), g_wts, g_act, g_regs[0], g_regs[1], g_regs[2],
               g_regs[3], g_regs[4]);
    } catch (const zq_csim::Deadlock& e) {
        g_error = e.what();
        zq_csim_reset();
        return false;
    }
    return true;
}

void copy_regs(uint32_t* regs_out) {
    if (!regs_out) return;
    for (int i = 0; i < N_REGS; i++) regs_out[i] = (uint32_t)g_regs[i].to_uint();
}

void drain_streams() {
    while (!g_in.empty()) g_in.read();
    while (!g_out.empty()) g_out.read();
}

bool in_ddr(uint64_t addr, uint64_t n) { return addr <= DDR_BYTES && n <= DDR_BYTES - addr; }

void ddr_put(uint64_t addr, const uint8_t* data, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t a = addr + i;
        const int sh = 8 * (int)(a % 8);
        const uint64_t w = g_ddr[a / 8].to_uint64();
        g_ddr[a / 8] = (w & ~(0xFFull << sh)) | ((uint64_t)data[i] << sh);
    }
}

}  // namespace

extern "C" {

// Build figures of the compiled network (checked from Python).
ZQ_API int zq_in_bytes() { return zq_net::IN_BYTES; }
ZQ_API int zq_n_classes() { return N_CLASSES; }
ZQ_API uint32_t zq_net_id() { return zq_net::NET_ID; }
ZQ_API uint64_t zq_image_bytes() { return zq_net::IMAGE_BYTES; }
ZQ_API uint64_t zq_scratch_bytes() { return zq_net::SCRATCH_BYTES; }
ZQ_API uint64_t zq_ddr_bytes() { return DDR_BYTES; }
// The default addresses: weight image, spare image slot, scratch area.
ZQ_API void zq_default_bases(uint64_t* out3) {
    out3[0] = WTS_BASE;
    out3[1] = WTS_ALT;
    out3[2] = ACT_BASE;
}
ZQ_API const char* zq_last_error() { return g_error.c_str(); }

// Allocate the DDR and load <export_dir>/weights.bin at WTS_BASE; the bases are
// set to WTS_BASE / ACT_BASE and the engine is reset (counters, weight cache).
// Returns 0, or -1 (zq_last_error() says why).
ZQ_API int zq_init(const char* export_dir) {
    const std::string path = std::string(export_dir ? export_dir : ".") + "/weights.bin";
    FILE* f = fopen(path.c_str(), "rb");
    if (!f) {
        g_error = path + ": cannot open the weight image";
        return -1;
    }
    std::vector<uint8_t> img;
    uint8_t buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) img.insert(img.end(), buf, buf + n);
    fclose(f);
    if (img.size() != zq_net::IMAGE_BYTES) {
        g_error = path + ": " + std::to_string(img.size()) + " bytes, the engine was built for a weight image of " +
                  std::to_string(zq_net::IMAGE_BYTES) + " bytes (net_params.h IMAGE_BYTES): stale build or export";
        return -1;
    }
    g_ddr.assign(DDR_BYTES / 8, ap_uint<64>(0));
    ddr_put(WTS_BASE, img.data(), img.size());
    g_wts = WTS_BASE;
    g_act = ACT_BASE;
    g_error.clear();
    zq_csim_reset();
    for (int i = 0; i < N_REGS; i++) g_regs[i] = 0;
    drain_streams();
    return 0;
}

// Simulated DDR access (byte addresses). 0, or -2 out of range / not initialized.
ZQ_API int zq_ddr_write(uint64_t addr, const uint8_t* data, uint64_t n) {
    if (g_ddr.empty() || !in_ddr(addr, n) || (n && !data)) return -2;
    ddr_put(addr, data, n);
    return 0;
}
ZQ_API int zq_ddr_read(uint64_t addr, uint8_t* out, uint64_t n) {
    if (g_ddr.empty() || !in_ddr(addr, n) || (n && !out)) return -2;
    for (uint64_t i = 0; i < n; i++) {
        const uint64_t a = addr + i;
        out[i] = (uint8_t)(g_ddr[a / 8].to_uint64() >> (8 * (a % 8)));
    }
    return 0;
}

// The `wts` and `act` registers: byte addresses in the simulated DDR, 8-byte
// aligned, with room for the image / the scratch area. 0, or -2.
ZQ_API int zq_set_bases(uint64_t wts, uint64_t act) {
    const uint64_t scratch = zq_net::SCRATCH_BYTES ? zq_net::SCRATCH_BYTES : 8;
    if (g_ddr.empty() || wts % 8 || act % 8 || !in_ddr(wts, zq_net::IMAGE_BYTES) || !in_ddr(act, scratch)) return -2;
    g_wts = wts;
    g_act = act;
    return 0;
}
ZQ_API void zq_get_bases(uint64_t* out2) {
    out2[0] = g_wts;
    out2[1] = g_act;
}

// Stream n frames (uint8, HWC, frame after frame) through zq_top, one call
// per frame; logits_out gets n x N_CLASSES int32. regs_out (5 words, may be
// NULL) gets status, frames_done, net_id, build_params, engine_info after the
// run. Returns 0, -1 if an output frame was not N_CLASSES beats with TLAST on
// the last, -2 on bad arguments, -3 before zq_init.
ZQ_API int zq_run(const uint8_t* frames, int n, int32_t* logits_out, uint32_t* regs_out) {
    if (n < 0 || (n > 0 && (!frames || !logits_out))) return -2;
    if (g_ddr.empty()) return -3;
    int rc = 0;
    for (int f = 0; f < n; f++) {
        const uint8_t* px = frames + (size_t)f * zq_net::IN_BYTES;
        for (int i = 0; i < IN_BEATS; i++) {
            const uint32_t d = (uint32_t)px[4 * i] | ((uint32_t)px[4 * i + 1] << 8) |
                               ((uint32_t)px[4 * i + 2] << 16) | ((uint32_t)px[4 * i + 3] << 24);
            push_beat(d, i == IN_BEATS - 1);
        }
        if (!call_top()) {
            drain_streams();
            copy_regs(regs_out);
            return -4;
        }
        int32_t* lo = logits_out + (size_t)f * N_CLASSES;
        for (int c = 0; c < N_CLASSES; c++) {
            if (g_out.empty()) {
                rc = -1;
                lo[c] = 0;
                continue;
            }
            const zq_axis_out o = g_out.read();
            lo[c] = (int32_t)o.data.to_uint();
            if ((o.last != 0) != (c == N_CLASSES - 1)) rc = -1;
        }
        if (!g_out.empty()) rc = -1;
        drain_streams();
    }
    copy_regs(regs_out);
    return rc;
}

// Send raw beats (data, TLAST flags): zq_top is called once per TLAST in the
// beats (each call takes the beats of one frame up to and including a TLAST:
// a short frame stops at it, a long frame drains to it); beats after the last
// TLAST are discarded, as they would wait forever in hardware. Up to max_out
// output words go to out; returns the number of output words produced (may
// exceed max_out), -2 on bad arguments, -3 before zq_init, -4 when the simulation failed.
ZQ_API int zq_send_raw(const uint32_t* beats, const uint8_t* last, int nbeats, int32_t* out, int max_out) {
    if (nbeats < 0 || (nbeats > 0 && (!beats || !last))) return -2;
    if (g_ddr.empty()) return -3;
    int n_last = 0;
    for (int i = 0; i < nbeats; i++) n_last += last[i] ? 1 : 0;
    for (int i = 0; i < nbeats; i++) push_beat(beats[i], last[i] != 0);
    int produced = 0;
    while (n_last > 0 && !g_in.empty()) {
        if (!call_top()) {  // consumes exactly one TLAST
            drain_streams();
            return -4;
        }
        n_last--;
        while (!g_out.empty()) {
            const zq_axis_out o = g_out.read();
            if (out && produced < max_out) out[produced] = (int32_t)o.data.to_uint();
            produced++;
        }
    }
    drain_streams();
    return produced;
}

// Loop counts of the engine (builds with -DZQ_COUNT_ITERATIONS): up to max_n values
// [layer 0..N_LAYERS][phase][iterations, entries] into out (may be NULL), zeroed
// afterwards when clear != 0. Returns the number of values, -1 for a build without them.
ZQ_API int zq_loop_counts(int64_t* out, int max_n, int clear) {
#if defined(ZQ_COUNT_ITERATIONS)
    std::vector<long long> buf(zq_csim_loop_counts(nullptr, 0, false));
    const int n = zq_csim_loop_counts(buf.data(), (int)buf.size(), clear != 0);
    for (int i = 0; out && i < n && i < max_n; i++) out[i] = (int64_t)buf[i];
    return n;
#else
    (void)out;
    (void)max_n;
    (void)clear;
    return -1;
#endif
}
ZQ_API int zq_n_layers() { return zq_net::N_LAYERS; }

// The C simulation's mode: 0 threads (default), 1 lockstep, 2 sequential (Vitis csim's
// semantics). -2 for another value.
ZQ_API int zq_set_mode(int mode) {
    if (mode < 0 || mode > 2) return -2;
    zq_csim::set_mode((zq_csim::Mode)mode);
    return 0;
}
ZQ_API int zq_get_mode() { return (int)zq_csim::mode(); }

// The pipeline-hazard mode of the core's loop (csim/zq_hazard.h) for the following calls: 0 none,
// 1 late stores (every store and slot release `delay` iterations late), 2 late reads (the
// datapath's reads `delay` iterations late); delay 0 is mode 0. 0, or -2 for a bad argument.
ZQ_API int zq_set_hazard(int mode, int delay) {
    if (mode < 0 || mode > 2 || delay < 0) return -2;
    zq_csim::set_hazard((zq_csim::Hazard)mode, delay);
    return 0;
}
// The guards the library was built with: AVAIL_GUARD, RELEASE_GUARD (-DZQ_CSIM_GUARD shortens both).
ZQ_API void zq_guards(int* out2) {
    out2[0] = zq_csim_guard(0);
    out2[1] = zq_csim_guard(1);
}

// A stream named `name` gets `depth` (0: its declared depth again); NULL name: clear all.
ZQ_API void zq_set_stream_depth(const char* name, int depth) {
    if (!name) zq_csim::clear_depth_overrides();
    else zq_csim::set_depth_override(name, depth);
}

// The processes and streams of the calls since the last clear, as text lines
// "process <name> <iterations> <idle> <stall_full> <stall_empty> <stall_join> <start> <end>" and
// "stream <name> <depth> <items> <max_held>" (lockstep: stalls and cycles; other modes:
// iterations only). Returns the bytes needed (including the terminating 0); clear: forget them.
ZQ_API int zq_csim_stats(char* out, int max_bytes, int clear) {
    std::string t;
    char line[512];
    for (const zq_csim::ProcStats& p : zq_csim::process_stats()) {
        snprintf(line, sizeof line, "process %s %lld %lld %lld %lld %lld %lld %lld\n", p.name.c_str(), p.iterations,
                 p.idle, p.stall_full, p.stall_empty, p.stall_join, p.start, p.end);
        t += line;
    }
    for (const zq_csim::StreamStats& q : zq_csim::stream_stats()) {
        snprintf(line, sizeof line, "stream %s %d %lld %lld\n", q.name.c_str(), q.depth, q.items, q.max_held);
        t += line;
    }
    if (out && max_bytes > 0) {
        const size_t n = t.size() < (size_t)max_bytes - 1 ? t.size() : (size_t)max_bytes - 1;
        memcpy(out, t.data(), n);
        out[n] = 0;
    }
    if (clear) zq_csim::clear_stats();
    return (int)t.size() + 1;
}

// Registers after the last call (status, frames_done, net_id, build_params, engine_info).
ZQ_API void zq_regs(uint32_t* regs_out) { copy_regs(regs_out); }

// Reset the engine (counters, the weight cache), as ap_rst_n does; the DDR keeps its contents.
ZQ_API void zq_reset() {
    zq_csim_reset();
    for (int i = 0; i < N_REGS; i++) g_regs[i] = 0;
    drain_streams();
}

}  // extern "C"
