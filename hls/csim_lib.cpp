// C-simulation library: zq_top behind an extern "C" API for Python (ctypes,
// zynqflow.hls.csim). Built together with zq_top.cpp:
//   g++ -O2 -std=c++14 -shared -fPIC -I<export_dir> -I<hls> -I<ap_types> zq_top.cpp csim_lib.cpp
#include <stdint.h>

#include "net_params.h"
#include "zq_top.h"

namespace {

constexpr int IN_BEATS = zq_net::IN_BYTES / 4;
constexpr int N_CLASSES = zq_net::N_CLASSES;

hls::stream<zq_axis_in> g_in("s_axis_in");
hls::stream<zq_axis_out> g_out("m_axis_out");
zq_reg_t g_regs[5];  // status, cycles_last, frames_done, net_id, build_params

void push_beat(uint32_t data, bool last) {
    zq_axis_in b;
    b.data = data;
    b.keep = 0xF;
    b.strb = 0xF;
    b.last = last ? 1 : 0;
    g_in.write(b);
}

void call_top() { zq_top(g_in, g_out, g_regs[0], g_regs[1], g_regs[2], g_regs[3], g_regs[4]); }

void copy_regs(uint32_t* regs_out) {
    if (!regs_out) return;
    for (int i = 0; i < 5; i++) regs_out[i] = (uint32_t)g_regs[i].to_uint();
}

void drain_streams() {
    while (!g_in.empty()) g_in.read();
    while (!g_out.empty()) g_out.read();
}

}  // namespace

extern "C" {

// Frame geometry of the compiled network (sanity checks from Python).
int zq_in_bytes() { return zq_net::IN_BYTES; }
int zq_n_classes() { return N_CLASSES; }
uint32_t zq_net_id() { return zq_net::NET_ID; }

// Stream n frames (uint8, HWC, frame after frame) through zq_top, one call
// per frame; logits_out gets n x N_CLASSES int32. regs_out (5 words, may be
// NULL) gets status, cycles_last, frames_done, net_id, build_params after
// the run. Returns 0, or -1 if an output frame was not N_CLASSES beats with
// TLAST on the last, -2 on bad arguments.
int zq_run(const uint8_t* frames, int n, int32_t* logits_out, uint32_t* regs_out) {
    if (n < 0 || (n > 0 && (!frames || !logits_out))) return -2;
    int rc = 0;
    for (int f = 0; f < n; f++) {
        const uint8_t* px = frames + (size_t)f * zq_net::IN_BYTES;
        for (int i = 0; i < IN_BEATS; i++) {
            const uint32_t d = (uint32_t)px[4 * i] | ((uint32_t)px[4 * i + 1] << 8) |
                               ((uint32_t)px[4 * i + 2] << 16) | ((uint32_t)px[4 * i + 3] << 24);
            push_beat(d, i == IN_BEATS - 1);
        }
        call_top();
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

// Send raw beats (data, TLAST flags): zq_top is called once per complete
// input frame, i.e. while a TLAST remains in the unread beats (beats after
// the last TLAST are discarded, as they would wait forever in hardware).
// Up to max_out output words are stored in out; returns the number of
// output words produced (may exceed max_out), or -2 on bad arguments.
int zq_send_raw(const uint32_t* beats, const uint8_t* last, int nbeats, int32_t* out, int max_out) {
    if (nbeats < 0 || (nbeats > 0 && (!beats || !last))) return -2;
    int n_last = 0;
    for (int i = 0; i < nbeats; i++) n_last += last[i] ? 1 : 0;
    for (int i = 0; i < nbeats; i++) push_beat(beats[i], last[i] != 0);
    int produced = 0;
    while (n_last > 0) {
        // zq_top consumes up to and including one TLAST: a short frame stops
        // at it, a long frame drains to it, a good frame ends on it.
        call_top();
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

// Registers after the last call (status, cycles_last, frames_done, net_id, build_params).
void zq_regs(uint32_t* regs_out) { copy_regs(regs_out); }

// Reset the engine's static state (counters and flags), as a hardware reset does.
void zq_reset() {
    zq_csim_reset();
    for (int i = 0; i < 5; i++) g_regs[i] = 0;
    drain_streams();
}

}  // extern "C"
