// C-simulation testbench of zq_top (also the Vitis HLS csim/cosim testbench).
//
//   tb_zq_top [export_dir [max_frames [protocol]]]
//
// export_dir defaults to $ZQ_EXPORT_DIR, else "."; it holds weights.bin and the
// test vectors vectors_in.bin / vectors_out.bin. max_frames (or $ZQ_TB_MAX_FRAMES)
// limits the test vectors used (RTL co-simulation of many frames is slow);
// default: all. protocol (or $ZQ_TB_PROTOCOL): 0 skips the protocol checks (their
// ten extra frames), so that a co-simulation runs exactly max_frames frames
// (run_hls.tcl passes ZQ_COSIM_FRAMES and ZQ_COSIM_PROTOCOL); default 1.
//
// A DDR array holds the weight image at a nonzero address and the activation
// scratch area (SCRATCH_BYTES of net_params.h; the manifest's memory.scratch_bytes
// must agree when manifest.json is there). The testbench streams every test frame through zq_top
// back to back and compares every logit with vectors_out.bin (int32 LE), checks
// TLAST and the registers (status, frames_done, net_id, build_params,
// engine_info), then the protocol errors: a short frame, a long frame, a frame
// whose TLAST is missing (it and the frame it runs into each get an error
// frame), a weight image of another network (a header byte flipped), each
// followed by a good frame that must be right.
// Exit status: 0 pass, 1 any mismatch, 2 missing or malformed files.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "net_params.h"
#include "zq_stream.h"
#include "zq_top.h"

namespace {

namespace S = zq_spec;

constexpr int IN_BEATS = zq_net::IN_BYTES / 4;
constexpr int N_CLASSES = zq_net::N_CLASSES;
constexpr size_t PAGE = S::ADDR_ALIGN;
constexpr size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }
constexpr size_t WTS_BASE = 3 * PAGE;  // byte addresses in the DDR array (nonzero, 4 KiB aligned)
constexpr size_t ACT_BASE = WTS_BASE + round_up(zq_net::IMAGE_BYTES, PAGE) + PAGE;
constexpr size_t SCRATCH = zq_net::SCRATCH_BYTES ? zq_net::SCRATCH_BYTES : 8;
constexpr size_t DDR_BYTES = ACT_BASE + round_up(SCRATCH, PAGE);

hls::stream<zq_axis_in> s_in("s_axis_in");
hls::stream<zq_axis_out> s_out("m_axis_out");
zq_reg_t r_status, r_done, r_net_id, r_build, r_info;
std::vector<ap_uint<64> > ddr(DDR_BYTES / 8);
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

void ddr_put(size_t addr, const uint8_t* data, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const size_t a = addr + i;
        const int sh = 8 * (int)(a % 8);
        const uint64_t w = ddr[a / 8].to_uint64();
        ddr[a / 8] = (w & ~(0xFFull << sh)) | ((uint64_t)data[i] << sh);
    }
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

uint32_t beat_of(const uint8_t* px, int i) {
    return (uint32_t)px[4 * i] | ((uint32_t)px[4 * i + 1] << 8) | ((uint32_t)px[4 * i + 2] << 16) |
           ((uint32_t)px[4 * i + 3] << 24);
}

void push_frame(const uint8_t* px, bool tlast = true) {
    for (int i = 0; i < IN_BEATS; i++) push_beat(beat_of(px, i), tlast && i == IN_BEATS - 1);
}

void call_top() {
#if !ZQ_HLS_STREAMS
    try {
#endif
        zq_top(s_in, s_out, ddr.data(), ddr.data(), ddr.data(), WTS_BASE, ACT_BASE, r_status, r_done, r_net_id, r_build,
               r_info);
#if !ZQ_HLS_STREAMS
    } catch (const zq_csim::Deadlock& e) {  // the project's C simulation: the watchdog's report
        printf("tb_zq_top: FAIL: %s\n", e.what());
        exit(1);
    }
#endif
}

// Read one output frame; checks its length and TLAST.
std::vector<int32_t> read_output(const char* when) {
    std::vector<int32_t> v;
    char what[160];
    for (int c = 0; c < N_CLASSES; c++) {
        if (s_out.empty()) {
            snprintf(what, sizeof what, "output beats of %s", when);
            error(what, c, N_CLASSES);
            break;
        }
        const zq_axis_out o = s_out.read();
        v.push_back((int32_t)o.data.to_uint());
        if ((o.last != 0) != (c == N_CLASSES - 1)) {
            snprintf(what, sizeof what, "TLAST on output beat %d of %s", c, when);
            error(what, o.last != 0, c == N_CLASSES - 1);
        }
    }
    return v;
}

void check_no_more_output(const char* when) {
    int extra = 0;
    while (!s_out.empty()) {
        s_out.read();
        extra++;
    }
    if (extra) {
        char what[160];
        snprintf(what, sizeof what, "extra output beats after %s", when);
        error(what, extra, 0);
    }
}

void check_regs(const char* when, uint32_t status, uint32_t frames_done) {
    const struct {
        const char* name;
        uint32_t got, want;
    } regs[] = {{"status", (uint32_t)r_status.to_uint(), status},
                {"frames_done", (uint32_t)r_done.to_uint(), frames_done},
                {"net_id", (uint32_t)r_net_id.to_uint(), zq_net::NET_ID},
                {"build_params", (uint32_t)r_build.to_uint(), zq_net::BUILD_PARAMS},
                {"engine_info", (uint32_t)r_info.to_uint(), zq_net::ENGINE_INFO_HLS}};
    for (const auto& r : regs) {
        if (r.got != r.want) {
            char what[200];
            snprintf(what, sizeof what, "%s after %s", r.name, when);
            error(what, (long)r.got, (long)r.want);
        }
    }
}

void check_error_frame(const char* when) {
    const std::vector<int32_t> v = read_output(when);
    for (size_t c = 0; c < v.size(); c++) {
        if (v[c] != S::ERROR_LOGIT) {
            char what[160];
            snprintf(what, sizeof what, "error frame of %s, beat %d", when, (int)c);
            error(what, v[c], S::ERROR_LOGIT);
        }
    }
}

// Compare one output frame with `expect`; returns 1 on a mismatch.
int check_logits(const char* when, const int32_t* expect) {
    const std::vector<int32_t> v = read_output(when);
    int bad = 0;
    for (size_t c = 0; c < v.size(); c++) {
        if (v[c] != expect[c]) {
            char what[160];
            snprintf(what, sizeof what, "%s, logit %d", when, (int)c);
            error(what, v[c], expect[c]);
            bad = 1;
        }
    }
    return bad;
}

}  // namespace

int main(int argc, char** argv) {
    const char* env = getenv("ZQ_EXPORT_DIR");
    const std::string dir = argc > 1 ? argv[1] : (env ? env : ".");
    std::vector<uint8_t> vin, vout, img;
    if (!read_file(dir + "/weights.bin", img)) {
        printf("tb_zq_top: cannot read %s/weights.bin (the weight image)\n", dir.c_str());
        return 2;
    }
    if (img.size() != zq_net::IMAGE_BYTES) {
        printf("tb_zq_top: %s/weights.bin has %zu bytes, net_params.h says IMAGE_BYTES=%u (stale export?)\n",
               dir.c_str(), img.size(), zq_net::IMAGE_BYTES);
        return 2;
    }
    std::vector<uint8_t> man;  // the manifest's memory.scratch_bytes must be this build's SCRATCH_BYTES
    if (read_file(dir + "/manifest.json", man)) {
        const std::string text(man.begin(), man.end());
        const size_t at = text.find("\"scratch_bytes\":");
        const unsigned long long scratch = at == std::string::npos ? 0 : strtoull(text.c_str() + at + 16, nullptr, 10);
        if (at != std::string::npos && scratch != zq_net::SCRATCH_BYTES) {
            printf("tb_zq_top: %s/manifest.json says scratch_bytes=%llu, net_params.h SCRATCH_BYTES=%u "
                   "(stale export?)\n", dir.c_str(), scratch, zq_net::SCRATCH_BYTES);
            return 2;
        }
    }
    if (!read_file(dir + "/vectors_in.bin", vin) || !read_file(dir + "/vectors_out.bin", vout)) {
        printf("tb_zq_top: cannot read %s/vectors_in.bin or %s/vectors_out.bin\n", dir.c_str(), dir.c_str());
        return 2;
    }
    if (vin.size() % zq_net::IN_BYTES != 0) {
        printf("tb_zq_top: %s/vectors_in.bin has %zu bytes, not a multiple of IN_BYTES=%d\n", dir.c_str(),
               vin.size(), zq_net::IN_BYTES);
        return 2;
    }
    const int n_file = (int)(vin.size() / zq_net::IN_BYTES);
    if (vout.size() != (size_t)n_file * N_CLASSES * 4) {
        printf("tb_zq_top: %s/vectors_out.bin has %zu bytes, expected %d frames x %d classes x 4\n", dir.c_str(),
               vout.size(), n_file, N_CLASSES);
        return 2;
    }
    const char* env_max = getenv("ZQ_TB_MAX_FRAMES");
    const char* arg_max = argc > 2 ? argv[2] : env_max;
    int n = n_file;
    if (arg_max && atoi(arg_max) >= 0 && atoi(arg_max) < n) n = atoi(arg_max);
    const char* env_proto = getenv("ZQ_TB_PROTOCOL");
    const char* arg_proto = argc > 3 ? argv[3] : env_proto;
    const bool protocol = !(arg_proto && atoi(arg_proto) == 0);
    std::vector<int32_t> expect((size_t)n_file * N_CLASSES);
    for (size_t i = 0; i < expect.size(); i++)
        expect[i] = (int32_t)((uint32_t)vout[4 * i] | ((uint32_t)vout[4 * i + 1] << 8) |
                              ((uint32_t)vout[4 * i + 2] << 16) | ((uint32_t)vout[4 * i + 3] << 24));
    ddr_put(WTS_BASE, img.data(), img.size());
    printf("tb_zq_top: network ID 0x%08x, %d test frames, N_PE=%d N_CI=%d, weight image %u B at 0x%zx, "
           "scratch %u B at 0x%zx\n",
           zq_net::NET_ID, n, zq_net::N_PE, zq_net::N_CI, zq_net::IMAGE_BYTES, WTS_BASE, zq_net::SCRATCH_BYTES,
           ACT_BASE);

    // 1) every test vector, back to back
    int bad_frames = 0;
    uint32_t done = 0;
    for (int f = 0; f < n; f++) {
        char when[64];
        snprintf(when, sizeof when, "frame %d", f);
        push_frame(&vin[(size_t)f * zq_net::IN_BYTES]);
        call_top();
        bad_frames += check_logits(when, &expect[(size_t)f * N_CLASSES]);
        check_no_more_output(when);
        check_regs(when, 0, ++done);
    }
    const int logit_errors = n_errors;
    printf("tb_zq_top: %d frames, %d mismatching frames, %d mismatches\n", n, bad_frames, logit_errors);

    if (!protocol) {
        printf("tb_zq_top: protocol checks skipped (protocol=0)\n");
        if (n_errors) {
            printf("tb_zq_top: FAIL (%d mismatches)\n", n_errors);
            return 1;
        }
        printf("tb_zq_top: PASS\n");
        return 0;
    }

    // 2) protocol errors, each followed by a good frame
    std::vector<uint8_t> zero(zq_net::IN_BYTES, 0);
    const uint8_t* good_px = n_file ? &vin[0] : zero.data();
    const uint8_t* other_px = n_file > 1 ? &vin[zq_net::IN_BYTES] : good_px;
    const int32_t* good_expect = n_file ? &expect[0] : nullptr;
    uint32_t err_frames = 0;
    auto good_frame = [&](const char* when) {
        push_frame(good_px);
        call_top();
        if (good_expect) check_logits(when, good_expect);
        else read_output(when);
        check_no_more_output(when);
        check_regs(when, err_frames << S::STATUS_ERRCNT_SHIFT, ++done);
    };
    auto error_frames = [&](const char* when, int count, uint32_t flags) {
        for (int i = 0; i < count; i++) check_error_frame(when);
        check_no_more_output(when);
        err_frames += count;
        done += count;
        check_regs(when, (err_frames << S::STATUS_ERRCNT_SHIFT) | flags, done);
        if (!s_in.empty()) error("input beats left after an error frame", (long)s_in.size(), 0);
    };
    if (IN_BEATS >= 2) {  // a short frame: TLAST halfway
        const int beats = IN_BEATS / 2;
        for (int i = 0; i < beats; i++) push_beat(0x01020304u * (uint32_t)i, i == beats - 1);
        call_top();
        error_frames("a short frame", 1, S::STATUS_SHORT_FRAME);
        good_frame("the good frame after a short frame");
    }
    if (IN_BEATS > 1) {  // a one-beat frame
        push_beat(0xFFFFFFFFu, true);
        call_top();
        error_frames("a one-beat frame", 1, S::STATUS_SHORT_FRAME);
        good_frame("the good frame after a one-beat frame");
    }
    // a long frame: 3 beats too many
    for (int i = 0; i < IN_BEATS + 3; i++) push_beat(0xA5A5A5A5u ^ (uint32_t)i, i == IN_BEATS + 2);
    call_top();
    error_frames("a long frame", 1, S::STATUS_LONG_FRAME);
    good_frame("the good frame after a long frame");
    // a missing TLAST: frame A without TLAST runs into frame B (TLAST at its end): two
    // error frames from one call (A, and B's beats drained), then frame C is right
    push_frame(other_px, false);
    push_frame(other_px, true);
    call_top();
    error_frames("a frame without TLAST and the frame it ran into", 2, S::STATUS_LONG_FRAME);
    good_frame("the good frame after a missing TLAST");
    // a weight image of another network (network ID byte flipped), then the right one again
    const size_t id_byte = WTS_BASE + 4 * S::HDR_NET_ID;
    const uint8_t orig = img[4 * S::HDR_NET_ID], flipped = orig ^ 0xFF;
    ddr_put(id_byte, &flipped, 1);
    push_frame(good_px);
    call_top();
    error_frames("a weight image of another network", 1, S::STATUS_WEIGHT_IMAGE);
    ddr_put(id_byte, &orig, 1);
    good_frame("the good frame after a foreign weight image");
    printf("tb_zq_top: protocol checks (short, one-beat, long, missing TLAST, foreign weight image): %d mismatches\n",
           n_errors - logit_errors);

    if (n_errors) {
        printf("tb_zq_top: FAIL (%d mismatches)\n", n_errors);
        return 1;
    }
    printf("tb_zq_top: PASS\n");
    return 0;
}
