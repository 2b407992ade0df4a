// C-simulation testbench of zq_top (also the Vitis HLS csim/cosim testbench).
//
//   tb_zq_top [export_dir [max_frames]]
//
// export_dir defaults to $ZQ_EXPORT_DIR, else "."; max_frames (or
// $ZQ_TB_MAX_FRAMES) limits the test vectors used (RTL co-simulation of
// many frames is slow); default: all.
//
// Streams every frame of <export_dir>/vectors_in.bin through zq_top back to
// back and compares every logit with vectors_out.bin (int32 LE), checks
// TLAST, the registers (status, cycles_last, frames_done, net_id,
// build_params), then sends a short frame and a long frame and checks the
// error flags, the error frames and that the following good frames are right.
// Exit status: 0 pass, 1 any mismatch, 2 missing or malformed files.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "net_params.h"
#include "zq_top.h"

namespace {

constexpr int IN_BEATS = zq_net::IN_BYTES / 4;
constexpr int N_CLASSES = zq_net::N_CLASSES;
constexpr uint32_t BUILD_PARAMS =
    (uint32_t)zq_net::N_PE | ((uint32_t)zq_net::N_CI << 8) | ((uint32_t)zq_net::W_BITS << 16) |
    ((uint32_t)zq_net::A_BITS << 24);
constexpr uint32_t GOOD_CYCLES = (uint32_t)zq_net::TOTAL_CYCLES + IN_BEATS + N_CLASSES;

hls::stream<zq_axis_in> s_in("s_axis_in");
hls::stream<zq_axis_out> s_out("m_axis_out");
zq_reg_t r_status, r_cycles, r_done, r_net_id, r_build;
int n_errors = 0;

bool read_file(const std::string& path, std::vector<uint8_t>& out) {
    FILE* f = fopen(path.c_str(), "rb");
    if (!f) return false;
    out.clear();
    uint8_t buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.insert(out.end(), buf, buf + n);
    fclose(f);
    return true;
}

void error(const char* what, long a, long b) {
    if (n_errors < 20) printf("  MISMATCH %s: got %ld, expected %ld\n", what, a, b);
    n_errors++;
}

void push_beat(uint32_t data, bool last) {
    zq_axis_in b;
    b.data = data;
    b.keep = 0xF;
    b.strb = 0xF;
    b.last = last ? 1 : 0;
    s_in.write(b);
}

void push_frame(const uint8_t* px) {
    for (int i = 0; i < IN_BEATS; i++) {
        const uint32_t d = (uint32_t)px[4 * i] | ((uint32_t)px[4 * i + 1] << 8) | ((uint32_t)px[4 * i + 2] << 16) |
                           ((uint32_t)px[4 * i + 3] << 24);
        push_beat(d, i == IN_BEATS - 1);
    }
}

void call_top() { zq_top(s_in, s_out, r_status, r_cycles, r_done, r_net_id, r_build); }

// Read one output frame; checks its length and TLAST.
std::vector<int32_t> read_output() {
    std::vector<int32_t> v;
    for (int c = 0; c < N_CLASSES; c++) {
        if (s_out.empty()) {
            error("output beats", c, N_CLASSES);
            break;
        }
        const zq_axis_out o = s_out.read();
        v.push_back((int32_t)o.data.to_uint());
        if ((o.last != 0) != (c == N_CLASSES - 1)) error("TLAST on output beat", c, N_CLASSES - 1);
    }
    int extra = 0;
    while (!s_out.empty()) {
        s_out.read();
        extra++;
    }
    if (extra) error("extra output beats", extra, 0);
    return v;
}

void check_regs(const char* when, uint32_t status, uint32_t frames_done, bool good) {
    char what[160];
    snprintf(what, sizeof what, "status after %s", when);
    if ((uint32_t)r_status.to_uint() != status) error(what, r_status.to_uint(), status);
    snprintf(what, sizeof what, "frames_done after %s", when);
    if ((uint32_t)r_done.to_uint() != frames_done) error(what, r_done.to_uint(), frames_done);
    snprintf(what, sizeof what, "net_id after %s", when);
    if ((uint32_t)r_net_id.to_uint() != zq_net::NET_ID) error(what, r_net_id.to_uint(), zq_net::NET_ID);
    snprintf(what, sizeof what, "build_params after %s", when);
    if ((uint32_t)r_build.to_uint() != BUILD_PARAMS) error(what, r_build.to_uint(), BUILD_PARAMS);
    if (good && (uint32_t)r_cycles.to_uint() != GOOD_CYCLES) {
        snprintf(what, sizeof what, "cycles_last after %s", when);
        error(what, r_cycles.to_uint(), GOOD_CYCLES);
    }
}

void check_error_frame(const char* when) {
    const std::vector<int32_t> v = read_output();
    for (size_t c = 0; c < v.size(); c++) {
        if (v[c] != ZQ_ERROR_LOGIT) {
            char what[120];
            snprintf(what, sizeof what, "error frame after %s, beat %d", when, (int)c);
            error(what, v[c], ZQ_ERROR_LOGIT);
        }
    }
}

// Send frame `px`, compare with `expect` (or only the framing if NULL).
int check_good_frame(const uint8_t* px, const int32_t* expect, const char* when, uint32_t status,
                     uint32_t frames_done) {
    push_frame(px);
    call_top();
    const std::vector<int32_t> v = read_output();
    int bad = 0;
    if (expect) {
        for (size_t c = 0; c < v.size(); c++) {
            if (v[c] != expect[c]) {
                char what[120];
                snprintf(what, sizeof what, "%s, logit %d", when, (int)c);
                error(what, v[c], expect[c]);
                bad = 1;
            }
        }
    }
    check_regs(when, status, frames_done, true);
    return bad;
}

}  // namespace

int main(int argc, char** argv) {
    const char* env = getenv("ZQ_EXPORT_DIR");
    const std::string dir = argc > 1 ? argv[1] : (env ? env : ".");
    std::vector<uint8_t> vin, vout;
    if (!read_file(dir + "/vectors_in.bin", vin) || !read_file(dir + "/vectors_out.bin", vout)) {
        printf("tb_zq_top: cannot read %s/vectors_in.bin or vectors_out.bin\n", dir.c_str());
        return 2;
    }
    if (vin.size() % zq_net::IN_BYTES != 0) {
        printf("tb_zq_top: vectors_in.bin has %zu bytes, not a multiple of IN_BYTES=%d\n", vin.size(),
               zq_net::IN_BYTES);
        return 2;
    }
    const int n_file = (int)(vin.size() / zq_net::IN_BYTES);
    if (vout.size() != (size_t)n_file * N_CLASSES * 4) {
        printf("tb_zq_top: vectors_out.bin has %zu bytes, expected %d frames x %d classes x 4\n", vout.size(),
               n_file, N_CLASSES);
        return 2;
    }
    const char* env_max = getenv("ZQ_TB_MAX_FRAMES");
    const char* arg_max = argc > 2 ? argv[2] : env_max;
    int n = n_file;
    if (arg_max && atoi(arg_max) >= 0 && atoi(arg_max) < n) n = atoi(arg_max);
    std::vector<int32_t> expect((size_t)n_file * N_CLASSES);
    for (size_t i = 0; i < expect.size(); i++)
        expect[i] = (int32_t)((uint32_t)vout[4 * i] | ((uint32_t)vout[4 * i + 1] << 8) |
                              ((uint32_t)vout[4 * i + 2] << 16) | ((uint32_t)vout[4 * i + 3] << 24));
    printf("tb_zq_top: network ID 0x%08x, %d test frames, N_PE=%d N_CI=%d\n", zq_net::NET_ID, n, zq_net::N_PE,
           zq_net::N_CI);

    // 1) every test vector, back to back
    int bad_frames = 0;
    uint32_t done = 0;
    for (int f = 0; f < n; f++) {
        char when[64];
        snprintf(when, sizeof when, "frame %d", f);
        bad_frames += check_good_frame(&vin[(size_t)f * zq_net::IN_BYTES], &expect[(size_t)f * N_CLASSES], when, 0,
                                       ++done);
    }
    const int logit_errors = n_errors;
    printf("tb_zq_top: %d frames, %d mismatching frames, %d mismatches\n", n, bad_frames, logit_errors);

    // 2) protocol errors: a short frame, a good frame, a long frame, a good frame
    std::vector<uint8_t> zero(zq_net::IN_BYTES, 0);
    const uint8_t* good_px = n ? &vin[0] : zero.data();
    const int32_t* good_expect = n ? &expect[0] : nullptr;
    uint32_t err_frames = 0;
    if (IN_BEATS >= 2) {
        const int beats = IN_BEATS / 2;
        for (int i = 0; i < beats; i++) push_beat(0x01020304u * (uint32_t)i, i == beats - 1);
        call_top();
        check_error_frame("a short frame");
        ++err_frames;
        check_regs("a short frame", (err_frames << ZQ_STATUS_ERRCNT_SHIFT) | ZQ_STATUS_SHORT, ++done, false);
        check_good_frame(good_px, good_expect, "the good frame after a short frame", err_frames << ZQ_STATUS_ERRCNT_SHIFT,
                         ++done);
    }
    for (int i = 0; i < IN_BEATS + 3; i++) push_beat(0xA5A5A5A5u ^ (uint32_t)i, i == IN_BEATS + 2);
    call_top();
    check_error_frame("a long frame");
    ++err_frames;
    check_regs("a long frame", (err_frames << ZQ_STATUS_ERRCNT_SHIFT) | ZQ_STATUS_LONG, ++done, false);
    if (!s_in.empty()) error("input beats left after a long frame", (long)s_in.size(), 0);
    check_good_frame(good_px, good_expect, "the good frame after a long frame", err_frames << ZQ_STATUS_ERRCNT_SHIFT,
                     ++done);
    printf("tb_zq_top: protocol checks (short frame, long frame): %d mismatches\n", n_errors - logit_errors);

    if (n_errors) {
        printf("tb_zq_top: FAIL (%d mismatches)\n", n_errors);
        return 1;
    }
    printf("tb_zq_top: PASS\n");
    return 0;
}
