// axi_mem.h: a cycle-level AXI4 slave memory (64-bit data, 32-bit addresses,
// 1-bit IDs, INCR bursts), one instance per AXI4 master port of the DUT.
//
// Each clock cycle the harness calls
//     mem.drive(sig);   // the slave's outputs for this cycle (they depend on state only)
//     ... evaluate the DUT, copy the master's outputs into sig ...
//     mem.tick(sig);    // the rising edge: every handshake of this cycle takes effect
//
// Timing (defaults in axi_mem_defaults(); the Python side passes its own):
//   reads   the first R beat of a burst is valid read_latency cycles after the cycle of
//           its AR handshake, then one beat per cycle (RVALID can have seeded random gaps,
//           r_gap_p16 / 65536 per cycle, never withdrawn once shown); bursts are answered
//           in order; at most max_reads bursts outstanding (AR handshake .. last R beat
//           taken), ARREADY is low beyond that.
//   writes  AW and W beats are accepted one per cycle (seeded random gaps on AWREADY and
//           WREADY: aw_gap_p16, w_gap_p16); W beats may come before their AW (a FIFO of
//           W_FIFO_BEATS); BVALID comes write_latency cycles after the cycle in which the
//           burst's last beat was matched with its AW (the WLAST handshake when AW came
//           first); at most max_writes bursts outstanding (AW handshake .. B taken).
// Responses: a beat with any byte outside [0, size) answers DECERR (and is not written);
//   a beat overlapping the configured error range of its direction answers SLVERR;
//   a write burst's BRESP is its worst beat.
// Protocol checks (counted, the first MAX_MESSAGES kept as text): a burst crossing a 4 KiB
//   boundary, AxSIZE != 3, AxBURST != INCR, more than max_burst beats, WLAST on the wrong
//   beat, VALID withdrawn or payload changed before READY (AR, AW, W).
#pragma once

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "lfsr.h"

namespace zq {

enum AxiResp : uint8_t { AXI_OKAY = 0, AXI_EXOKAY = 1, AXI_SLVERR = 2, AXI_DECERR = 3 };

// One AXI4 port as the slave sees it: the master drives the fields marked (m),
// AxiMem::drive sets the ones marked (s).
struct AxiSignals {
    // write address
    uint8_t awvalid, awid, awlen, awsize, awburst;  // (m)
    uint32_t awaddr;                                // (m)
    uint8_t awready;                                // (s)
    // write data
    uint8_t wvalid, wlast, wstrb;                   // (m)
    uint64_t wdata;                                 // (m)
    uint8_t wready;                                 // (s)
    // write response
    uint8_t bready;                                 // (m)
    uint8_t bvalid, bresp, bid;                     // (s)
    // read address
    uint8_t arvalid, arid, arlen, arsize, arburst;  // (m)
    uint32_t araddr;                                // (m)
    uint8_t arready;                                // (s)
    // read data
    uint8_t rready;                                 // (m)
    uint8_t rvalid, rlast, rresp, rid;              // (s)
    uint64_t rdata;                                 // (s)
};

// Plain C layout: the Python side (ctypes) fills it.
struct AxiMemConfig {
    uint64_t size;           // bytes; addresses [0, size) answer, the rest DECERR (at most 4 GiB)
    uint32_t read_latency;   // cycles, AR handshake -> first R beat (>= 1)
    uint32_t write_latency;  // cycles, last W beat -> BVALID (>= 1)
    uint32_t max_reads;      // read bursts outstanding (>= 1)
    uint32_t max_writes;     // write bursts outstanding (>= 1)
    uint32_t r_gap_p16;      // P(RVALID gap) * 65536 per cycle
    uint32_t aw_gap_p16;     // P(AWREADY low) * 65536 per cycle
    uint32_t w_gap_p16;      // P(WREADY low) * 65536 per cycle
    uint32_t max_burst;      // beats; longer bursts are protocol errors (AXI4 INCR allows 256)
    uint32_t seed;           // of the gap LFSR
    uint32_t reserved;
};

inline AxiMemConfig axi_mem_defaults() {
    AxiMemConfig c{};
    c.size = 512ull << 20;
    c.read_latency = 32;
    c.write_latency = 16;
    c.max_reads = 8;
    c.max_writes = 8;
    c.max_burst = 16;
    c.seed = 1;
    return c;
}

// Plain C layout (ctypes mirrors it).
struct AxiMemStats {
    uint64_t bytes_read;      // bytes of R beats answered OKAY
    uint64_t bytes_written;   // strobed bytes of W beats written (OKAY)
    uint64_t read_bursts;     // AR handshakes
    uint64_t write_bursts;    // AW handshakes
    uint64_t read_beats;      // R handshakes
    uint64_t write_beats;     // W handshakes
    uint64_t protocol_errors;
    uint64_t decerr;          // R beats + B responses answered DECERR
    uint64_t slverr;          // R beats + B responses answered SLVERR
    uint64_t max_reads_outstanding;
    uint64_t max_writes_outstanding;
    uint64_t cycles;          // tick() calls
};

class AxiMem {
public:
    static constexpr unsigned PAGE_BITS = 16;
    static constexpr uint64_t PAGE = 1ull << PAGE_BITS;
    static constexpr size_t W_FIFO_BEATS = 64;
    static constexpr size_t MAX_MESSAGES = 32;

    explicit AxiMem(const AxiMemConfig& c = axi_mem_defaults()) { configure(c); }

    // New timing and size; drops the contents and any transaction in flight.
    // Returns false (and keeps the old configuration) for an invalid one.
    bool configure(const AxiMemConfig& c) {
        if (c.size == 0 || c.size > (1ull << 32) || c.read_latency < 1 || c.write_latency < 1 ||
            c.max_reads < 1 || c.max_writes < 1 || c.max_burst < 1 || c.max_burst > 256 ||
            c.r_gap_p16 > 65535 || c.aw_gap_p16 > 65535 || c.w_gap_p16 > 65535)
            return false;
        cfg_ = c;
        pages_.clear();
        pages_.resize((c.size + PAGE - 1) >> PAGE_BITS);
        lfsr_ = Lfsr(c.seed);
        reset();
        stats_ = AxiMemStats{};
        messages_.clear();
        return true;
    }
    const AxiMemConfig& config() const { return cfg_; }

    // The DUT was reset: forget transactions in flight (contents stay).
    void reset() {
        rq_.clear();
        awq_.clear();
        wq_.clear();
        bq_.clear();
        r_show_ = r_hold_ = b_show_ = false;
        prev_ar_ = prev_aw_ = prev_w_ = Pending{};
    }

    // Reads (reads=true) and/or writes in [lo, hi) answer SLVERR; hi <= lo clears the range.
    void set_error_range(uint64_t lo, uint64_t hi, bool reads, bool writes) {
        if (reads) { err_r_lo_ = lo; err_r_hi_ = hi; }
        if (writes) { err_w_lo_ = lo; err_w_hi_ = hi; }
    }

    // Host access (the weight image in, results out); false if [addr, addr+n) leaves [0, size).
    bool host_write(uint64_t addr, const void* data, uint64_t n) {
        if (addr > cfg_.size || n > cfg_.size - addr) return false;
        const uint8_t* p = static_cast<const uint8_t*>(data);
        while (n) {
            uint64_t off = addr & (PAGE - 1), k = PAGE - off < n ? PAGE - off : n;
            std::memcpy(page(addr) + off, p, k);
            addr += k; p += k; n -= k;
        }
        return true;
    }
    bool host_read(uint64_t addr, void* out, uint64_t n) const {
        if (addr > cfg_.size || n > cfg_.size - addr) return false;
        uint8_t* p = static_cast<uint8_t*>(out);
        while (n) {
            uint64_t off = addr & (PAGE - 1), k = PAGE - off < n ? PAGE - off : n;
            const uint8_t* pg = pages_[addr >> PAGE_BITS].get();
            if (pg) std::memcpy(p, pg + off, k); else std::memset(p, 0, k);
            addr += k; p += k; n -= k;
        }
        return true;
    }

    // ---- the clock cycle ------------------------------------------------------------
    void drive(AxiSignals& s) {
        // R: a shown beat stays until taken; a new one may be held back by a random gap
        if (!r_hold_) r_show_ = !rq_.empty() && now_ >= rq_.front().ready_at && !lfsr_.stall(cfg_.r_gap_p16);
        s.rvalid = r_show_;
        if (r_show_) {
            const Burst& b = rq_.front();
            uint64_t a = beat_addr(b, b.beat);
            uint8_t resp = beat_resp(a, false);
            s.rdata = resp == AXI_OKAY ? load64(a) : 0;
            s.rresp = resp;
            s.rlast = b.beat == b.len;
            s.rid = b.id;
        } else {
            s.rdata = 0; s.rresp = 0; s.rlast = 0; s.rid = 0;
        }
        s.arready = rq_.size() < cfg_.max_reads;
        s.awready = awq_.size() + bq_.size() < cfg_.max_writes && !lfsr_.stall(cfg_.aw_gap_p16);
        s.wready = wq_.size() < W_FIFO_BEATS && !lfsr_.stall(cfg_.w_gap_p16);
        b_show_ = !bq_.empty() && now_ >= bq_.front().ready_at;
        s.bvalid = b_show_;
        s.bresp = b_show_ ? bq_.front().resp : 0;
        s.bid = b_show_ ? bq_.front().id : 0;
    }

    void tick(const AxiSignals& s) {
        check_stable(prev_ar_, s.arvalid, s.arready, s.araddr, s.arlen, s.arid, s.arsize, s.arburst, 0, "AR");
        check_stable(prev_aw_, s.awvalid, s.awready, s.awaddr, s.awlen, s.awid, s.awsize, s.awburst, 0, "AW");
        check_stable(prev_w_, s.wvalid, s.wready, s.wstrb, s.wlast, 0, 0, 0, s.wdata, "W");
        // read address / data
        if (s.rvalid && s.rready) {
            Burst& b = rq_.front();
            uint64_t a = beat_addr(b, b.beat);
            uint8_t resp = beat_resp(a, false);
            count_resp(resp);
            stats_.read_beats++;
            if (resp == AXI_OKAY) stats_.bytes_read += 8;
            if (b.beat++ == b.len) rq_.pop_front();
        }
        r_hold_ = s.rvalid && !s.rready;
        if (s.arvalid && s.arready) {
            Burst b{};
            b.addr = s.araddr; b.len = s.arlen; b.id = s.arid; b.ready_at = now_ + cfg_.read_latency;
            check_burst("AR", s.araddr, s.arlen, s.arsize, s.arburst);
            rq_.push_back(b);
            stats_.read_bursts++;
            if (rq_.size() > stats_.max_reads_outstanding) stats_.max_reads_outstanding = rq_.size();
        }
        // write response / address / data
        if (s.bvalid && s.bready) bq_.pop_front();
        if (s.awvalid && s.awready) {
            Burst b{};
            b.addr = s.awaddr; b.len = s.awlen; b.id = s.awid; b.resp = AXI_OKAY;
            check_burst("AW", s.awaddr, s.awlen, s.awsize, s.awburst);
            awq_.push_back(b);
            stats_.write_bursts++;
            uint64_t out = awq_.size() + bq_.size();
            if (out > stats_.max_writes_outstanding) stats_.max_writes_outstanding = out;
        }
        if (s.wvalid && s.wready) {
            wq_.push_back(WBeat{s.wdata, s.wstrb, s.wlast});
            stats_.write_beats++;
        }
        while (!awq_.empty() && !wq_.empty()) {   // match W beats with their bursts, in order
            Burst& b = awq_.front();
            WBeat w = wq_.front();
            wq_.pop_front();
            uint64_t a = beat_addr(b, b.beat);
            uint8_t resp = beat_resp(a, true);
            if (resp == AXI_OKAY) {
                for (int j = 0; j < 8; ++j)
                    if (w.strb >> j & 1) {
                        page(a + j)[(a + j) & (PAGE - 1)] = uint8_t(w.data >> (8 * j));
                        stats_.bytes_written++;
                    }
            } else if (severity(resp) > severity(b.resp)) {
                b.resp = resp;
            }
            bool last = b.beat == b.len;
            if (w.last != last)
                error("W burst at 0x%08llx: WLAST %s on beat %u of %u", (unsigned long long)b.addr,
                      w.last ? "set" : "missing", b.beat + 1, b.len + 1u);
            if (last) {
                b.ready_at = now_ + cfg_.write_latency;
                count_resp(b.resp);
                bq_.push_back(b);
                awq_.pop_front();
            } else {
                b.beat++;
            }
        }
        now_++;
        stats_.cycles++;
    }

    bool idle() const { return rq_.empty() && awq_.empty() && wq_.empty() && bq_.empty(); }
    const AxiMemStats& stats() const { return stats_; }
    const std::vector<std::string>& messages() const { return messages_; }
    uint64_t cycle() const { return now_; }

private:
    struct Burst {
        uint64_t addr = 0, ready_at = 0;
        uint32_t beat = 0;
        uint8_t len = 0, id = 0, resp = 0;
    };
    struct WBeat {
        uint64_t data;
        uint8_t strb, last;
    };
    struct Pending {   // last cycle's VALID-without-READY payload of a channel
        bool waiting = false;
        uint64_t a = 0, b = 0, c = 0, d = 0, e = 0, f = 0;
    };

    static int severity(uint8_t r) { return r == AXI_DECERR ? 2 : r == AXI_SLVERR ? 1 : 0; }
    static uint64_t beat_addr(const Burst& b, uint32_t beat) { return (b.addr & ~7ull) + 8ull * beat; }

    uint8_t beat_resp(uint64_t a, bool write) const {
        if (a + 8 > cfg_.size) return AXI_DECERR;
        uint64_t lo = write ? err_w_lo_ : err_r_lo_, hi = write ? err_w_hi_ : err_r_hi_;
        if (hi > lo && a < hi && a + 8 > lo) return AXI_SLVERR;
        return AXI_OKAY;
    }
    void count_resp(uint8_t r) {
        if (r == AXI_DECERR) stats_.decerr++;
        else if (r == AXI_SLVERR) stats_.slverr++;
    }
    uint8_t* page(uint64_t a) {
        auto& p = pages_[a >> PAGE_BITS];
        if (!p) {
            p.reset(new uint8_t[PAGE]);
            std::memset(p.get(), 0, PAGE);
        }
        return p.get();
    }
    uint64_t load64(uint64_t a) const {
        uint8_t b[8];
        host_read(a, b, 8);
        uint64_t v = 0;
        for (int j = 7; j >= 0; --j) v = v << 8 | b[j];
        return v;
    }
    void check_burst(const char* ch, uint32_t addr, uint8_t len, uint8_t size, uint8_t burst) {
        uint64_t first = addr, last = (addr & ~7ull) + 8ull * (len + 1u) - 1;
        if ((first >> 12) != (last >> 12))
            error("%s burst at 0x%08x, %u beats, crosses a 4 KiB boundary", ch, addr, len + 1u);
        if (size != 3) error("%s burst at 0x%08x: %sSIZE %u (a 64-bit port: 3)", ch, addr, ch, size);
        if (burst != 1) error("%s burst at 0x%08x: %sBURST %u (INCR = 1 only)", ch, addr, ch, burst);
        if (len + 1u > cfg_.max_burst)
            error("%s burst at 0x%08x: %u beats, more than %u", ch, addr, len + 1u, cfg_.max_burst);
    }
    void check_stable(Pending& p, uint8_t valid, uint8_t ready, uint64_t a, uint64_t b, uint64_t c, uint64_t d,
                      uint64_t e, uint64_t f, const char* ch) {
        if (p.waiting) {
            if (!valid) error("%sVALID withdrawn before %sREADY", ch, ch);
            else if (p.a != a || p.b != b || p.c != c || p.d != d || p.e != e || p.f != f)
                error("%s payload changed while %sVALID waited for %sREADY", ch, ch, ch);
        }
        p.waiting = valid && !ready;
        p.a = a; p.b = b; p.c = c; p.d = d; p.e = e; p.f = f;
    }
    void error(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
        stats_.protocol_errors++;
        if (messages_.size() >= MAX_MESSAGES) return;
        char buf[256];
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        messages_.push_back("cycle " + std::to_string(now_) + ": " + buf);
    }

    AxiMemConfig cfg_{};
    AxiMemStats stats_{};
    std::vector<std::unique_ptr<uint8_t[]>> pages_;
    std::vector<std::string> messages_;
    std::deque<Burst> rq_, awq_, bq_;
    std::deque<WBeat> wq_;
    Pending prev_ar_, prev_aw_, prev_w_;
    Lfsr lfsr_;
    uint64_t now_ = 0;
    uint64_t err_r_lo_ = 0, err_r_hi_ = 0, err_w_lo_ = 0, err_w_hi_ = 0;
    bool r_show_ = false, r_hold_ = false, b_show_ = false;
};

}  // namespace zq
