// harness.cpp: the free-running C++ driver of the Verilator model of zq_top.
//
// sim/harness/rtl_fast.py verilates the RTL without VPI or public signals and links this
// file with the model into a shared library, which Python drives through ctypes
// (the zqh_* functions below). One call of zqh_run pushes a whole batch of input
// beats through s_axis_in (TVALID high, or gated by a seeded LFSR), takes
// m_axis_out (TREADY high, or LFSR backpressure), and reads the registers the
// caller names through s_axi_control after every frame, all without returning to
// Python. Register offsets always come from the caller.
//
// Build defines:
//   ZQ_MAXI=1      the top has the AXI4 master ports m_axi_wts, m_axi_act and m_axi_act2
//                  (Vitis naming, 64-bit data): each gets an AxiMem slave (axi_mem.h), all
//                  three over one DDR's contents, and the zqh_mem_* functions work; with
//                  ZQ_MAXI=0 they return ZQH_NO_MAXI.
//   ZQ_PROBE=1     the top is the engine's zq_top: its layer index and control state are
//                  public (sim/harness/probe.vlt) and a time-out names them (zqh_probe).
//   VL_USER_FATAL, VL_USER_WARN, VL_USER_STOP (given by the build for every file):
//                  Verilator's fatal errors, $stop/$fatal and warnings end up here as
//                  C++ exceptions / messages instead of exit().
//
// Clock cycle: set the inputs, evaluate with ap_clk low (combinational outputs
// settle, e.g. a TREADY that depends on TVALID), sample every handshake, evaluate
// with ap_clk high (the rising edge). Cycle numbers count rising edges since the
// harness was created; a handshake "in cycle c" is sampled before edge c+1.
//
// Memory model (ZQ_MAXI=1): each port's AxiMem and one SharedBudget for every port and,
// with charge_streams (no DMA simulated here), every accepted s_axis_in and m_axis_out byte
// (4 per beat), refilled once per cycle after both memories' ticks (spec/engine.py MemoryModel).
// The ports are listed once, in ZQ_MAXI_PORTS (name, index): a new master port is one line
// there (and its name in rtl_fast.py's MAXI_PORTS). A quiet port (axi_mem.h: nothing in flight,
// no random gaps) takes the memory model's fast path, and the harness then drives only its
// READY signals (the other inputs still hold the quiet values it wrote before) and samples only
// its AR/AW/W VALIDs; zqh_mem_fast_path(h, 0) turns both off (the tests compare the two).
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>

#include "Vzq_top.h"
#include "verilated.h"

#include "lfsr.h"

#ifndef ZQ_MAXI
#define ZQ_MAXI 0
#endif
#if ZQ_MAXI
#include "axi_mem.h"
// the DUT's AXI4 master ports: X(name in m_axi_<name>_*, index of zqh_mem_*'s port)
#define ZQ_MAXI_PORTS(X) X(wts, 0) X(act, 1) X(act2, 2)
constexpr int N_MAXI = 3;
#endif
#ifndef ZQ_PROBE
#define ZQ_PROBE 0
#endif
#if ZQ_PROBE
#include "Vzq_top___024root.h"
#endif

#define ZQH_ABI 2

enum {
    ZQH_OK = 0,
    ZQH_TIMEOUT = 1,    // the DUT stopped producing output (cycle budget)
    ZQH_ERROR = -1,     // see zqh_error()
    ZQH_NO_MAXI = -2,   // this build has no AXI4 master ports
};

// per-frame flags (zq_run_args.flags)
enum {
    FLAG_OUT_SHORT = 1,   // TLAST before n_classes output beats (missing logits are 0)
    FLAG_OUT_LONG = 2,    // more than n_classes beats before TLAST (extra beats dropped)
    FLAG_REGS_LATE = 4,   // the next frame ended before this frame's register reads were done
    FLAG_AXIL_RESP = 8,   // a register read answered other than OKAY
};

// ---- Verilator's error hooks ---------------------------------------------------------
namespace {
struct SimFatal : std::runtime_error {
    using std::runtime_error::runtime_error;
};
thread_local std::string g_warnings;

std::string where(const char* file, int line) {
    return std::string(file ? file : "?") + ":" + std::to_string(line);
}
}  // namespace

void vl_fatal(const char* file, int line, const char* hier, const char* msg) {
    (void)hier;
    Verilated::threadContextp()->gotError(true);
    Verilated::threadContextp()->gotFinish(true);
    throw SimFatal("Verilator fatal error at " + where(file, line) + ": " + msg);
}

void vl_stop(const char* file, int line, const char* hier) {
    (void)hier;
    Verilated::threadContextp()->gotError(true);
    Verilated::threadContextp()->gotFinish(true);
    throw SimFatal("Verilog $stop/$fatal at " + where(file, line));
}

void vl_warn(const char* file, int line, const char* hier, const char* msg) {
    (void)hier;
    if (g_warnings.size() < 4096) g_warnings += "%Warning " + where(file, line) + ": " + msg + "\n";
}

// ---- the run arguments (ctypes mirrors this layout; zqh_run_args_size() checks it) --------
struct zq_run_args {
    // in
    const uint32_t* in_data;       // n_beats TDATA words
    const uint8_t* in_last;        // n_beats TLAST flags
    uint64_t n_beats;
    uint32_t n_frames;             // output frames to wait for (one per TLAST-terminated input frame)
    uint32_t n_classes;            // beats per output frame
    const uint32_t* reg_offsets;   // registers read through s_axi_control after every frame
    uint32_t n_regs;
    uint32_t reg_delay;            // cycles after a frame's last output beat before its reads start
    uint32_t in_stall_p16;         // P(no TVALID in a cycle) * 65536 (never withdrawn once shown)
    uint32_t out_stall_p16;        // P(TREADY low in a cycle) * 65536
    uint32_t seed;                 // of the two stream LFSRs
    uint32_t reserved;
    uint64_t frame_budget;         // cycles without a completed output frame before ZQH_TIMEOUT
    // out (arrays sized by the caller)
    int32_t* logits;               // n_frames * n_classes
    uint32_t* regs;                // n_frames * n_regs
    uint64_t* in_first;            // n_frames: cycle of the frame's first input handshake
    uint64_t* out_last;            // n_frames: cycle of the frame's last output handshake
    uint32_t* flags;               // n_frames: FLAG_*
    // out (scalars)
    uint64_t cycles;               // cycles this call ran
    uint64_t beats_in;             // input beats accepted
    uint64_t start_cycle;          // harness cycle at the start of the call
    uint32_t frames_out;           // output frames completed
    uint32_t axil_errors;          // register accesses answered other than OKAY
};

namespace {

struct AxilOp {
    uint32_t addr, data;
    bool write;
    uint32_t* dst;        // read result
    uint32_t* flag;       // where a non-OKAY response is flagged (may be null)
    uint64_t not_before;  // cycle
    int64_t frame;        // the frame whose registers this reads (-1: none)
};

class Harness {
public:
    Harness() : ctx_(new VerilatedContext), top_(new Vzq_top(ctx_.get(), "TOP")) {
        g_warnings.clear();
        idle_inputs();
        top_->ap_rst_n = 0;
        top_->ap_clk = 0;
        top_->eval();   // initial blocks: $readmemh of the ROM images
        if (g_warnings.find("$readmem") != std::string::npos)
            throw SimFatal("loading the ROM images failed:\n" + g_warnings);
#if ZQ_MAXI
        for (auto& m : mem) m.attach_shared(&shared);
        for (int k = 1; k < N_MAXI; ++k) mem[k].share_store(mem[0]);
#endif
        reset(8);
    }

    // Verilator's scopes unregister themselves from the calling thread's current context
    // (Verilated::threadContextp(), the one most recently made or used), not from their model's:
    // with a second harness made and destroyed in this process, that would be a freed context
    // (a lock on freed memory: the destructor hangs). Make this model's context current first.
    ~Harness() {
        Verilated::threadContextp(ctx_.get());
        top_.reset();
    }

    std::string error;
    std::string warnings() const { return g_warnings; }
    uint64_t cycle() const { return cycle_; }

    void reset(uint32_t cycles) {
        axil_.clear();
        aw_done_ = w_done_ = ar_done_ = false;
        in_frame_start_ = true;
        out_beat_ = 0;
        idle_inputs();
        top_->ap_rst_n = 0;
#if ZQ_MAXI
        for (auto& m : mem) m.dut_reset(true);
#endif
        for (uint32_t i = 0; i < cycles; ++i) clock();
        top_->ap_rst_n = 1;
#if ZQ_MAXI
        for (auto& m : mem) m.dut_reset(false);
#endif
        for (int i = 0; i < 4; ++i) clock();
    }

    // Where the engine is (ZQ_PROBE builds): its layer index and control state.
    bool probe(uint32_t* layer, uint32_t* state) const {
#if ZQ_PROBE
        *layer = top_->rootp->zq_top__DOT__li;
        *state = top_->rootp->zq_top__DOT__state;
        return true;
#else
        (void)layer; (void)state;
        return false;
#endif
    }


    // Blocking register access with both streams stalled; false after max_cycles.
    bool reg_access(bool write, uint32_t addr, uint32_t data, uint32_t* out, uint32_t max_cycles = 1000) {
        uint32_t dummy = 0, resp_flag = 0;
        axil_.push_back(AxilOp{addr, data, write, out ? out : &dummy, &resp_flag, 0, -1});
        for (uint32_t i = 0; i < max_cycles && !axil_.empty(); ++i) {
            top_->s_axis_in_TVALID = 0;
            top_->m_axis_out_TREADY = 0;
            axil_drive();
            low();
            axil_sample();
            high();
            axil_commit();
        }
        if (!axil_.empty()) {
            axil_.clear();
            aw_done_ = w_done_ = ar_done_ = false;
            error = std::string("AXI-Lite ") + (write ? "write to" : "read of") + " offset 0x" + hex(addr) +
                    " not answered within " + std::to_string(max_cycles) + " cycles";
            return false;
        }
        if (resp_flag) {
            error = std::string("AXI-Lite ") + (write ? "write to" : "read of") + " offset 0x" + hex(addr) +
                    " answered " + (write ? "BRESP" : "RRESP") + " != OKAY";
            return false;
        }
        return true;
    }

    int run(zq_run_args* a) {
        const uint32_t nc = a->n_classes, nf = a->n_frames, nr = a->n_regs;
        for (uint32_t f = 0; f < nf; ++f) {
            a->flags[f] = 0;
            a->in_first[f] = a->out_last[f] = ~0ull;
            for (uint32_t k = 0; k < nr; ++k) a->regs[f * nr + k] = 0;
        }
        std::memset(a->logits, 0, sizeof(int32_t) * nf * nc);
        zq::Lfsr lin(a->seed), lout(a->seed * 2654435761u + 0x6A09E667u);
        const uint64_t t0 = cycle_;
        uint64_t beat = 0, progress = cycle_;
        uint32_t fbegun = 0, fout = 0;
        bool in_valid = false;
        a->start_cycle = t0;
        axil_errors_ = 0;
        while (fout < nf || !axil_.empty()) {
            if (!in_valid && beat < a->n_beats) in_valid = !lin.stall(a->in_stall_p16);
            const bool out_ready = !lout.stall(a->out_stall_p16);
            top_->s_axis_in_TVALID = in_valid;
            if (in_valid) {
                top_->s_axis_in_TDATA = a->in_data[beat];
                top_->s_axis_in_TLAST = a->in_last[beat];
            }
            top_->m_axis_out_TREADY = out_ready;
            axil_drive();
            low();
            const bool in_fire = in_valid && top_->s_axis_in_TREADY;
            const bool out_fire = out_ready && top_->m_axis_out_TVALID;
            const uint32_t od = top_->m_axis_out_TDATA;
            const bool olast = top_->m_axis_out_TLAST;
            axil_sample();
            high(4u * (uint32_t(in_fire) + uint32_t(out_fire)));
            const uint64_t c = cycle_ - 1;
            if (in_fire) {
                if (in_frame_start_ && fbegun < nf) a->in_first[fbegun++] = c;
                else if (in_frame_start_) fbegun++;
                in_frame_start_ = a->in_last[beat] != 0;
                beat++;
                in_valid = false;
            }
            if (out_fire) {
                if (fout < nf) {
                    if (out_beat_ < nc) a->logits[uint64_t(fout) * nc + out_beat_] = int32_t(od);
                    else a->flags[fout] |= FLAG_OUT_LONG;
                }
                out_beat_++;
                if (olast) {
                    if (fout < nf) {
                        if (out_beat_ < nc) a->flags[fout] |= FLAG_OUT_SHORT;
                        a->out_last[fout] = c;
                        for (const AxilOp& op : axil_)
                            if (fout > 0 && op.frame == int64_t(fout) - 1) a->flags[fout - 1] |= FLAG_REGS_LATE;
                        for (uint32_t k = 0; k < nr; ++k)
                            axil_.push_back(AxilOp{a->reg_offsets[k], 0, false, &a->regs[uint64_t(fout) * nr + k],
                                                   &a->flags[fout], c + a->reg_delay, int64_t(fout)});
                    }
                    fout++;
                    out_beat_ = 0;
                    progress = c;
                }
            }
            axil_commit();
            if (cycle_ - progress > a->frame_budget) {
                a->cycles = cycle_ - t0;
                a->beats_in = beat;
                a->frames_out = fout;
                axil_.clear();
                aw_done_ = w_done_ = ar_done_ = false;
                error = "no output frame for " + std::to_string(a->frame_budget) + " cycles: waiting for frame " +
                        std::to_string(fout) + " of " + std::to_string(nf) + " (cycle " + std::to_string(cycle_) +
                        "; " + std::to_string(beat) + " of " + std::to_string(a->n_beats) +
                        " input beats accepted, " + std::to_string(out_beat_) + " beats of the frame out)";
                return ZQH_TIMEOUT;
            }
        }
        a->cycles = cycle_ - t0;
        a->beats_in = beat;
        a->frames_out = fout;
        a->axil_errors = axil_errors_;
        if (beat < a->n_beats) {
            error = std::to_string(a->n_beats - beat) + " input beats left over after " + std::to_string(nf) +
                    " output frames (more TLAST-terminated frames sent than expected?)";
            return ZQH_ERROR;
        }
        return ZQH_OK;
    }

#if ZQ_MAXI
    zq::AxiMem mem[N_MAXI];   // in ZQ_MAXI_PORTS order: 0 m_axi_wts, 1 m_axi_act, 2 m_axi_act2 (one DDR)
    zq::AxiSignals sig[N_MAXI] = {};
    zq::SharedBudget shared;      // every master's budget (off until configured)
    bool charge_streams = false;  // accepted stream bytes draw on it (no DMA simulated)

    // The memories' quiet fast path (axi_mem.h) and the harness's with it: on by default.
    void set_fast_path(bool on) {
        for (auto& m : mem) m.set_fast_path(on);
        for (bool& q : driven_quiet_) q = false;   // the next cycle drives every input again
    }
#endif

private:
    static std::string hex(uint32_t v) {
        char b[16];
        std::snprintf(b, sizeof b, "%02x", v);
        return b;
    }

    void idle_inputs() {
        top_->s_axis_in_TVALID = 0;
        top_->s_axis_in_TDATA = 0;
        top_->s_axis_in_TLAST = 0;
        top_->s_axis_in_TKEEP = 0xF;
        top_->s_axis_in_TSTRB = 0xF;
        top_->m_axis_out_TREADY = 0;
        top_->s_axi_control_AWVALID = 0;
        top_->s_axi_control_WVALID = 0;
        top_->s_axi_control_ARVALID = 0;
        top_->s_axi_control_BREADY = 1;
        top_->s_axi_control_RREADY = 1;
        top_->s_axi_control_WSTRB = 0xF;
    }

    // ---- one clock cycle in two halves -------------------------------------------------
    void low() {
#if ZQ_MAXI
        maxi_drive();
#endif
        top_->ap_clk = 0;
        top_->eval();
#if ZQ_MAXI
        maxi_sample();
#endif
    }
    // the rising edge; stream_bytes: bytes accepted on s_axis_in and m_axis_out in this cycle
    void high(uint32_t stream_bytes = 0) {
        top_->ap_clk = 1;
        top_->eval();
        cycle_++;
#if ZQ_MAXI
        for (int k = 0; k < N_MAXI; ++k) mem[k].tick(sig[k]);
        if (charge_streams && stream_bytes) shared.charge_stream(stream_bytes);
        shared.end_cycle();
#else
        (void)stream_bytes;
#endif
    }
    void clock() {
        low();
        high();
    }

#if ZQ_MAXI
    // the memory models' outputs -> the DUT's inputs; a port quiet in this cycle and the last
    // one only changes its READYs (every other input holds the quiet value written before)
#define ZQ_MAXI_DRIVE(P, I)                                                                         \
    if (!(driven_quiet_[I] && mem[I].quiet())) {                                                    \
        top_->m_axi_##P##_BVALID = sig[I].bvalid;                                                   \
        top_->m_axi_##P##_BRESP = sig[I].bresp;                                                     \
        top_->m_axi_##P##_BID = sig[I].bid;                                                         \
        top_->m_axi_##P##_BUSER = 0;                                                                \
        top_->m_axi_##P##_RVALID = sig[I].rvalid;                                                   \
        top_->m_axi_##P##_RDATA = sig[I].rdata;                                                     \
        top_->m_axi_##P##_RLAST = sig[I].rlast;                                                     \
        top_->m_axi_##P##_RRESP = sig[I].rresp;                                                     \
        top_->m_axi_##P##_RID = sig[I].rid;                                                         \
        top_->m_axi_##P##_RUSER = 0;                                                                \
    }                                                                                               \
    top_->m_axi_##P##_AWREADY = sig[I].awready;                                                     \
    top_->m_axi_##P##_WREADY = sig[I].wready;                                                       \
    top_->m_axi_##P##_ARREADY = sig[I].arready;                                                     \
    driven_quiet_[I] = mem[I].quiet();
    // the DUT's master outputs -> the memory models' view of this cycle (a quiet port without
    // an AR, AW or W VALID needs nothing else: its tick takes the fast path)
#define ZQ_MAXI_SAMPLE(P, I)                                                                        \
    sig[I].arvalid = top_->m_axi_##P##_ARVALID;                                                     \
    sig[I].awvalid = top_->m_axi_##P##_AWVALID;                                                     \
    sig[I].wvalid = top_->m_axi_##P##_WVALID;                                                       \
    if (!mem[I].quiet() || sig[I].arvalid || sig[I].awvalid || sig[I].wvalid) {                      \
        sig[I].awaddr = top_->m_axi_##P##_AWADDR;                                                   \
        sig[I].awid = top_->m_axi_##P##_AWID;                                                       \
        sig[I].awlen = top_->m_axi_##P##_AWLEN;                                                     \
        sig[I].awsize = top_->m_axi_##P##_AWSIZE;                                                   \
        sig[I].awburst = top_->m_axi_##P##_AWBURST;                                                 \
        sig[I].wdata = top_->m_axi_##P##_WDATA;                                                     \
        sig[I].wstrb = top_->m_axi_##P##_WSTRB;                                                     \
        sig[I].wlast = top_->m_axi_##P##_WLAST;                                                     \
        sig[I].bready = top_->m_axi_##P##_BREADY;                                                   \
        sig[I].araddr = top_->m_axi_##P##_ARADDR;                                                   \
        sig[I].arid = top_->m_axi_##P##_ARID;                                                       \
        sig[I].arlen = top_->m_axi_##P##_ARLEN;                                                     \
        sig[I].arsize = top_->m_axi_##P##_ARSIZE;                                                   \
        sig[I].arburst = top_->m_axi_##P##_ARBURST;                                                 \
        sig[I].rready = top_->m_axi_##P##_RREADY;                                                   \
    }

    void maxi_drive() {
        for (int i = 0; i < N_MAXI; ++i) mem[i].drive(sig[i]);
        ZQ_MAXI_PORTS(ZQ_MAXI_DRIVE)
    }
    void maxi_sample() { ZQ_MAXI_PORTS(ZQ_MAXI_SAMPLE) }
    bool driven_quiet_[N_MAXI] = {};   // the port's inputs hold the quiet values
#endif

    // ---- AXI4-Lite master: one access at a time from a queue --------------------------
    bool axil_active() const { return !axil_.empty() && axil_.front().not_before <= cycle_; }

    void axil_drive() {
        const bool act = axil_active();
        const AxilOp* op = act ? &axil_.front() : nullptr;
        top_->s_axi_control_AWVALID = act && op->write && !aw_done_;
        top_->s_axi_control_WVALID = act && op->write && !w_done_;
        top_->s_axi_control_ARVALID = act && !op->write && !ar_done_;
        if (act) {
            top_->s_axi_control_AWADDR = op->addr;
            top_->s_axi_control_ARADDR = op->addr;
            top_->s_axi_control_WDATA = op->data;
        }
    }
    void axil_sample() {
        aw_f_ = top_->s_axi_control_AWVALID && top_->s_axi_control_AWREADY;
        w_f_ = top_->s_axi_control_WVALID && top_->s_axi_control_WREADY;
        ar_f_ = top_->s_axi_control_ARVALID && top_->s_axi_control_ARREADY;
        b_f_ = top_->s_axi_control_BVALID;   // BREADY and RREADY are always high
        r_f_ = top_->s_axi_control_RVALID;
        bresp_ = top_->s_axi_control_BRESP;
        rresp_ = top_->s_axi_control_RRESP;
        rdata_ = top_->s_axi_control_RDATA;
    }
    void axil_commit() {
        if (axil_.empty()) return;
        AxilOp& op = axil_.front();
        bool done = false, bad = false;
        if (op.write) {
            aw_done_ |= aw_f_;
            w_done_ |= w_f_;
            if (b_f_ && aw_done_ && w_done_) { done = true; bad = bresp_ != 0; }
        } else {
            if (r_f_ && ar_done_) { *op.dst = rdata_; done = true; bad = rresp_ != 0; }
            ar_done_ |= ar_f_;
        }
        if (done) {
            if (bad) {
                axil_errors_++;
                if (op.flag) *op.flag |= op.frame >= 0 ? FLAG_AXIL_RESP : 1;
            }
            axil_.pop_front();
            aw_done_ = w_done_ = ar_done_ = false;
        }
    }

    std::unique_ptr<VerilatedContext> ctx_;
    std::unique_ptr<Vzq_top> top_;
    uint64_t cycle_ = 0;
    std::deque<AxilOp> axil_;
    bool aw_done_ = false, w_done_ = false, ar_done_ = false;
    bool aw_f_ = false, w_f_ = false, ar_f_ = false, b_f_ = false, r_f_ = false;
    uint8_t bresp_ = 0, rresp_ = 0;
    uint32_t rdata_ = 0, axil_errors_ = 0;
    bool in_frame_start_ = true;   // the next input beat begins a frame
    uint32_t out_beat_ = 0;        // beats of the current output frame so far
};

thread_local std::string g_create_error;

template <class F>
int guarded(Harness* h, F&& f) {
    try {
        return f();
    } catch (const std::exception& e) {
        h->error = e.what();
        return ZQH_ERROR;
    }
}

}  // namespace

// ---- the C API (sim/harness/rtl_fast.py) -------------------------------------------------------
extern "C" {

uint32_t zqh_abi(void) { return ZQH_ABI; }
uint32_t zqh_maxi(void) { return ZQ_MAXI; }
uint32_t zqh_run_args_size(void) { return sizeof(zq_run_args); }

// A new model, reset; null on failure (zqh_create_error() says why).
void* zqh_create(void) {
    try {
        return new Harness();
    } catch (const std::exception& e) {
        g_create_error = e.what();
        return nullptr;
    }
}
const char* zqh_create_error(void) { return g_create_error.c_str(); }
void zqh_destroy(void* h) { delete static_cast<Harness*>(h); }
const char* zqh_error(void* h) { return static_cast<Harness*>(h)->error.c_str(); }
const char* zqh_warnings(void* h) {
    static thread_local std::string w;
    w = static_cast<Harness*>(h)->warnings();
    return w.c_str();
}
uint64_t zqh_cycle(void* h) { return static_cast<Harness*>(h)->cycle(); }
// The engine's layer index and control state (ZQ_PROBE builds; ZQH_NO_MAXI otherwise).
int zqh_probe(void* hp, uint32_t* layer, uint32_t* state) {
    return static_cast<Harness*>(hp)->probe(layer, state) ? ZQH_OK : ZQH_NO_MAXI;
}

int zqh_reset(void* hp, uint32_t cycles) {
    Harness* h = static_cast<Harness*>(hp);
    return guarded(h, [&] { h->reset(cycles); return ZQH_OK; });
}
int zqh_reg_write(void* hp, uint32_t addr, uint32_t data) {
    Harness* h = static_cast<Harness*>(hp);
    return guarded(h, [&] { return h->reg_access(true, addr, data, nullptr) ? ZQH_OK : ZQH_ERROR; });
}
int zqh_reg_read(void* hp, uint32_t addr, uint32_t* data) {
    Harness* h = static_cast<Harness*>(hp);
    return guarded(h, [&] { return h->reg_access(false, addr, 0, data) ? ZQH_OK : ZQH_ERROR; });
}
int zqh_run(void* hp, zq_run_args* a) {
    Harness* h = static_cast<Harness*>(hp);
    return guarded(h, [&] { return h->run(a); });
}

// ---- AXI4 slave memories (ZQ_MAXI builds); port 0 = m_axi_wts, 1 = m_axi_act, 2 = m_axi_act2 --
#if ZQ_MAXI
#define ZQH_PORT(hp, port)                         \
    Harness* h = static_cast<Harness*>(hp);        \
    if (port >= N_MAXI) {                          \
        h->error = "no AXI4 master port " + std::to_string(port); \
        return ZQH_ERROR;                          \
    }                                              \
    zq::AxiMem& m = h->mem[port];

uint32_t zqh_mem_config_size(void) { return sizeof(zq::AxiMemConfig); }
uint32_t zqh_mem_stats_size(void) { return sizeof(zq::AxiMemStats); }
int zqh_mem_config(void* hp, uint32_t port, const void* cfg) {
    ZQH_PORT(hp, port)
    if (!m.configure(*static_cast<const zq::AxiMemConfig*>(cfg))) {
        h->error = "invalid memory configuration for port " + std::to_string(port);
        return ZQH_ERROR;
    }
    return ZQH_OK;
}
static int mem_host_io(void* hp, uint32_t port, uint64_t addr, void* buf, uint64_t n, bool write) {
    ZQH_PORT(hp, port)
    if (write ? m.host_write(addr, buf, n) : m.host_read(addr, buf, n)) return ZQH_OK;
    h->error = std::string("memory ") + (write ? "write" : "read") + " of " + std::to_string(n) + " bytes at " +
               std::to_string(addr) + " leaves the memory of port " + std::to_string(port);
    return ZQH_ERROR;
}
int zqh_mem_write(void* hp, uint32_t port, uint64_t addr, const void* data, uint64_t n) {
    return mem_host_io(hp, port, addr, const_cast<void*>(data), n, true);
}
int zqh_mem_read(void* hp, uint32_t port, uint64_t addr, void* out, uint64_t n) {
    return mem_host_io(hp, port, addr, out, n, false);
}
int zqh_mem_error_range(void* hp, uint32_t port, uint64_t lo, uint64_t hi, uint32_t reads, uint32_t writes) {
    ZQH_PORT(hp, port)
    m.set_error_range(lo, hi, reads != 0, writes != 0);
    return ZQH_OK;
}
int zqh_mem_stats(void* hp, uint32_t port, void* out) {
    ZQH_PORT(hp, port)
    *static_cast<zq::AxiMemStats*>(out) = m.stats();
    return ZQH_OK;
}
// The shared budget of every port (rate 0: none) and whether stream bytes are charged to it;
// starts full.
int zqh_shared_config(void* hp, double rate, double depth, uint32_t charge_streams) {
    Harness* h = static_cast<Harness*>(hp);
    if (rate < 0.0 || (rate > 0.0 && !(depth > 0.0))) {
        h->error = "invalid shared budget: rate " + std::to_string(rate) + ", depth " + std::to_string(depth);
        return ZQH_ERROR;
    }
    h->shared = zq::SharedBudget{};
    h->shared.configure(rate, depth);
    h->charge_streams = charge_streams != 0;
    return ZQH_OK;
}
// [level, stream bytes charged, cycles that began with the bucket empty]
int zqh_shared_stats(void* hp, double* level, uint64_t* stream_bytes, uint64_t* empty_cycles) {
    Harness* h = static_cast<Harness*>(hp);
    *level = h->shared.level;
    *stream_bytes = h->shared.stream_bytes;
    *empty_cycles = h->shared.empty_cycles;
    return ZQH_OK;
}
// The quiet fast path of the memories and the harness (on: the default; off: every cycle
// through the full model, for comparing the two); and the cycles a port took it.
int zqh_mem_fast_path(void* hp, uint32_t on) {
    static_cast<Harness*>(hp)->set_fast_path(on != 0);
    return ZQH_OK;
}
int zqh_mem_quiet_cycles(void* hp, uint32_t port, uint64_t* out) {
    ZQH_PORT(hp, port)
    *out = m.quiet_cycles();
    return ZQH_OK;
}
// The protocol error messages, one per line, into buf (truncated to n bytes).
int zqh_mem_messages(void* hp, uint32_t port, char* buf, uint32_t n) {
    ZQH_PORT(hp, port)
    std::string s;
    for (const auto& x : m.messages()) s += x + "\n";
    if (n) {
        std::strncpy(buf, s.c_str(), n - 1);
        buf[n - 1] = 0;
    }
    return ZQH_OK;
}
#else
uint32_t zqh_mem_config_size(void) { return 0; }
uint32_t zqh_mem_stats_size(void) { return 0; }
int zqh_mem_config(void*, uint32_t, const void*) { return ZQH_NO_MAXI; }
int zqh_mem_write(void*, uint32_t, uint64_t, const void*, uint64_t) { return ZQH_NO_MAXI; }
int zqh_mem_read(void*, uint32_t, uint64_t, void*, uint64_t) { return ZQH_NO_MAXI; }
int zqh_mem_error_range(void*, uint32_t, uint64_t, uint64_t, uint32_t, uint32_t) { return ZQH_NO_MAXI; }
int zqh_mem_stats(void*, uint32_t, void*) { return ZQH_NO_MAXI; }
int zqh_shared_config(void*, double, double, uint32_t) { return ZQH_NO_MAXI; }
int zqh_shared_stats(void*, double*, uint64_t*, uint64_t*) { return ZQH_NO_MAXI; }
int zqh_mem_messages(void*, uint32_t, char*, uint32_t) { return ZQH_NO_MAXI; }
int zqh_mem_fast_path(void*, uint32_t) { return ZQH_NO_MAXI; }
int zqh_mem_quiet_cycles(void*, uint32_t, uint64_t*) { return ZQH_NO_MAXI; }
#endif

}  // extern "C"
