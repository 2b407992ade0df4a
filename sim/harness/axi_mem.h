// axi_mem.h: a cycle-level AXI4 slave memory (64-bit data, 32-bit addresses,
// 1-bit IDs, INCR bursts), one instance per AXI4 master port of the DUT, with the
// memory presets of the engine specification (spec/engine.py, MemoryModel: its
// token-bucket and refresh rules are implemented here literally).
//
// The ports of one DDR share its contents: share_store(owner) makes a port read and write the
// owner's pages (the engine writes a tensor through one master and reads it through another).
//
// Each clock cycle the harness calls
//     mem.drive(sig);   // the slave's outputs for this cycle (they depend on state only)
//     ... evaluate the DUT, copy the master's outputs into sig ...
//     mem.tick(sig);    // the rising edge: every handshake of this cycle takes effect
//     shared.end_cycle();   // once per cycle, after every port's tick (and the stream charges)
//
// Timing (defaults in axi_mem_defaults(); the Python side passes its own):
//   reads   the first R beat of a burst is valid read_latency cycles after the cycle of
//           its AR handshake, then one beat per cycle; bursts are answered in order.
//           ARREADY is low while accept_reads bursts are outstanding (AR handshake .. last R
//           beat taken).
//   writes  AW and W beats are accepted one per cycle; W beats may come before their AW (a
//           FIFO of W_FIFO_BEATS); BVALID comes write_latency cycles after the cycle in which
//           the burst's last beat was matched with its AW (the WLAST handshake when AW came
//           first); AWREADY is low while accept_writes bursts are outstanding (AW handshake ..
//           B taken).
//   bandwidth  (MemoryModel) a token bucket per direction of the port (port_bytes_per_cycle)
//           and, when attached, one SharedBudget for every port and the charged streams: a
//           new R beat is shown, and WREADY is high, only if both buckets are positive at the
//           start of the cycle; each R and W handshake takes 8 bytes from both; every bucket
//           refills by its rate at the end of the cycle, capped at its depth.
//   refresh in the cycles where cycle % refresh_interval < refresh_cycles (the memory's own
//           cycles since it was created) no new R beat is shown and WREADY is low.
//   stress  seeded random gaps: ARREADY / AWREADY / WREADY low, a new RVALID / BVALID held back
//           (ar/aw/w/r/b_gap_p16 / 65536 per cycle; a shown VALID is never withdrawn); random
//           stalls of the whole port (a stall starts with probability stall_p32 / 2^32 per
//           cycle and lasts 1..stall_max cycles: no READY, no new VALID); aw_waits_for_w:
//           AWREADY only while an accepted W beat waits for its AW (A3.3.1 allows the slave to
//           wait for WVALID).
//   DUT reset  dut_reset(true) when the DUT's reset goes active, dut_reset(false) when it is
//           released. By default everything in flight is dropped at the release; with
//           keep_reads_on_reset the read bursts in flight keep being answered (the PS's HP
//           port does not see a PL reset), owed B responses still come, and write bursts
//           whose W beats had not all arrived are dropped.
// Responses: a beat with any byte outside [0, size) answers DECERR (and is not written);
//   a beat overlapping the configured error range of its direction answers SLVERR;
//   a write burst's BRESP is its worst beat.
// Quiet cycles: while nothing is in flight on a port (no burst queued or shown), no random gap
//   or stall is configured and the master shows no AR/AW/W VALID, drive() and tick() take a
//   fast path that does only what such a cycle changes (refresh, token buckets, counters): the
//   same outputs and the same state as the full model, cycle for cycle (tests/test_rtl_fast.py
//   compares the two on networks with and without DDR traffic). set_fast_path(false) sends
//   every cycle through the full model; quiet_cycles() counts the cycles that took the fast path
//   (since configure(), like the stats).
// Protocol checks (counted, the first MAX_MESSAGES kept as text, each with its cycle and
//   channel): a burst crossing a 4 KiB boundary, AxSIZE != 3, AxBURST != INCR, more than
//   max_burst beats, WLAST on the wrong beat, VALID withdrawn or payload changed before READY
//   (AR, AW, W), more than max_reads read / max_writes write bursts outstanding (bursts issued
//   before a DUT reset do not count against the master after it). No checks while the DUT is
//   in reset.
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

// Plain C layout: the Python side (ctypes) fills it (sim/harness/rtl_fast.py AxiMemConfig).
struct AxiMemConfig {
    uint64_t size;           // bytes; addresses [0, size) answer, the rest DECERR (at most 4 GiB)
    uint32_t read_latency;   // cycles, AR handshake -> first R beat (>= 1)
    uint32_t write_latency;  // cycles, last W beat -> BVALID (>= 1)
    uint32_t max_reads;      // read bursts a master may have outstanding (checked; >= 1)
    uint32_t max_writes;     // write bursts a master may have outstanding (checked; >= 1)
    uint32_t r_gap_p16;      // P(a new RVALID held back) * 65536 per cycle
    uint32_t aw_gap_p16;     // P(AWREADY low) * 65536 per cycle
    uint32_t w_gap_p16;      // P(WREADY low) * 65536 per cycle
    uint32_t max_burst;      // beats; longer bursts are protocol errors (AXI4 INCR allows 256)
    uint32_t seed;           // of the gap LFSR
    uint32_t accept_reads;   // read bursts the slave accepts (ARREADY low beyond); >= max_reads
    uint32_t accept_writes;  // write bursts the slave accepts (AWREADY low beyond); >= max_writes
    uint32_t ar_gap_p16;     // P(ARREADY low) * 65536 per cycle
    uint32_t b_gap_p16;      // P(a new BVALID held back) * 65536 per cycle
    uint32_t stall_p32;      // P(a stall of the port starts) * 2^32 per cycle
    uint32_t stall_max;      // cycles; a stall lasts 1..stall_max
    uint32_t refresh_interval;   // cycles (0: no refresh)
    uint32_t refresh_cycles;     // cycles of each interval without R beats and WREADY
    uint32_t aw_waits_for_w;     // AWREADY only while an accepted W beat waits for its AW
    uint32_t keep_reads_on_reset;  // reads in flight answered across a DUT reset
    double port_bytes_per_cycle;   // each direction's token bucket rate (8: no limit)
    double bucket_bytes;           // depth of every token bucket (one 16-beat burst: 128)
};

inline AxiMemConfig axi_mem_defaults() {
    AxiMemConfig c{};
    c.size = 512ull << 20;
    c.read_latency = 32;
    c.write_latency = 16;
    c.max_reads = 8;
    c.max_writes = 8;
    c.accept_reads = 8;
    c.accept_writes = 8;
    c.max_burst = 16;
    c.seed = 1;
    c.port_bytes_per_cycle = 8.0;
    c.bucket_bytes = 128.0;
    return c;
}

// A token bucket of the memory model: starts full, refills by `rate` at the end of every
// cycle up to `depth`; a transfer may start only while it is positive and may take it negative.
struct TokenBucket {
    double rate = 0.0, depth = 0.0, level = 0.0;
    bool on = false;

    void configure(double r, double d) { rate = r; depth = d; level = d; on = r > 0.0; }
    void off() { on = false; }
    bool positive() const { return !on || level > 0.0; }
    void take(double bytes) { if (on) level -= bytes; }
    void end_cycle() {
        if (!on) return;
        level += rate;
        if (level > depth) level = depth;
    }
};

// The budget every master shares (both ports of the engine and the charged streams):
// MemoryModel.shared_bytes_per_cycle * (1 - cpu_share).
struct SharedBudget : TokenBucket {
    uint64_t stream_bytes = 0;       // stream bytes charged
    uint64_t empty_cycles = 0;       // cycles that began with the bucket at or below 0

    void charge_stream(uint32_t bytes) { stream_bytes += bytes; take(bytes); }
    void end_cycle() {
        TokenBucket::end_cycle();
        if (on && level <= 0.0) empty_cycles++;
    }
};

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
    uint64_t r_budget_cycles;   // cycles an R beat was due but a token bucket was empty
    uint64_t w_budget_cycles;   // cycles WVALID waited while a token bucket was empty
    uint64_t refresh_cycles;    // refresh cycles
    uint64_t stall_cycles;      // cycles of random port stalls
    uint64_t late_read_beats;   // R beats of bursts issued before the last DUT reset
    uint64_t late_write_resps;  // B responses of bursts issued before the last DUT reset
    uint64_t dropped_writes;    // write bursts dropped at a DUT reset (W beats missing)
};

class AxiMem {
public:
    static constexpr unsigned PAGE_BITS = 16;
    static constexpr uint64_t PAGE = 1ull << PAGE_BITS;
    static constexpr size_t W_FIFO_BEATS = 64;
    static constexpr size_t MAX_MESSAGES = 32;
    static constexpr double BEAT_BYTES = 8.0;

    explicit AxiMem(const AxiMemConfig& c = axi_mem_defaults()) { configure(c); }

    // New timing and size; drops any transaction in flight and, on a port that owns its store, the
    // contents (the cycle count, which times refresh, goes on). Returns false (and keeps the old
    // configuration) for an invalid one.
    bool configure(const AxiMemConfig& c) {
        if (c.size == 0 || c.size > (1ull << 32) || c.read_latency < 1 || c.write_latency < 1 ||
            c.max_reads < 1 || c.max_writes < 1 || c.accept_reads < c.max_reads || c.accept_writes < c.max_writes ||
            c.max_burst < 1 || c.max_burst > 256 || c.r_gap_p16 > 65535 || c.aw_gap_p16 > 65535 ||
            c.w_gap_p16 > 65535 || c.ar_gap_p16 > 65535 || c.b_gap_p16 > 65535 ||
            (c.stall_p32 && c.stall_max < 1) || (c.refresh_interval && c.refresh_cycles >= c.refresh_interval) ||
            !(c.port_bytes_per_cycle > 0.0) || !(c.bucket_bytes > 0.0))
            return false;
        cfg_ = c;
        const size_t n = (c.size + PAGE - 1) >> PAGE_BITS;
        if (own_store_) {
            store_->clear();
            store_->resize(n);
        } else if (store_->size() < n) {
            store_->resize(n);
        }
        lfsr_ = Lfsr(c.seed);
        // no random gap or stall: a quiet cycle draws nothing from the LFSR
        plain_ = !c.r_gap_p16 && !c.aw_gap_p16 && !c.w_gap_p16 && !c.ar_gap_p16 && !c.b_gap_p16 && !c.stall_p32;
        // a rate of a beat per cycle or more is no limit: the bucket never empties
        rd_.configure(c.port_bytes_per_cycle, c.bucket_bytes);
        wr_.configure(c.port_bytes_per_cycle, c.bucket_bytes);
        drop_all();
        stats_ = AxiMemStats{};
        quiet_cycles_ = 0;
        messages_.clear();
        return true;
    }
    const AxiMemConfig& config() const { return cfg_; }

    // This port reads and writes the contents of `owner` (one DDR behind several ports); the owner's
    // configure() drops them.
    void share_store(AxiMem& owner) {
        store_ = owner.store_;
        own_store_ = false;
        if (store_->size() < ((cfg_.size + PAGE - 1) >> PAGE_BITS)) store_->resize((cfg_.size + PAGE - 1) >> PAGE_BITS);
    }

    // The budget shared with the other ports and the streams (null: none). Its owner calls
    // its end_cycle() once per cycle after every tick().
    void attach_shared(SharedBudget* b) { shared_ = b; }

    // The DUT's reset went active (true) or was released (false).
    void dut_reset(bool active) {
        in_reset_ = active;
        prev_ar_ = prev_aw_ = prev_w_ = Pending{};
        if (active) return;
        if (!cfg_.keep_reads_on_reset) { drop_all(); return; }
        // the HP port answers what it accepted: reads go on, owed responses come; write bursts
        // whose data had not all arrived can never complete
        stats_.dropped_writes += awq_.size();
        awq_.clear();
        wq_.clear();
        for (auto& b : rq_) b.stale = true;
        for (auto& b : bq_) b.stale = true;
    }
    // The old behaviour of a reset: forget every transaction in flight (contents stay).
    void reset() { drop_all(); }

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
            const size_t idx = addr >> PAGE_BITS;
            const uint8_t* pg = idx < store_->size() ? (*store_)[idx].get() : nullptr;
            if (pg) std::memcpy(p, pg + off, k); else std::memset(p, 0, k);
            addr += k; p += k; n -= k;
        }
        return true;
    }

    // ---- the clock cycle ------------------------------------------------------------
    void drive(AxiSignals& s) {
        refresh_ = cfg_.refresh_interval && now_ % cfg_.refresh_interval < cfg_.refresh_cycles;
        quiet_ = fast_ok_ && plain_ && !stall_left_ && rq_.empty() && awq_.empty() && wq_.empty() && bq_.empty();
        if (quiet_) {   // the full model below in this state: nothing shown, READY from the budget and refresh
            w_budget_ = wr_.positive() && (!shared_ || shared_->positive());
            r_blocked_ = r_show_ = b_show_ = false;
            s.rvalid = 0; s.rdata = 0; s.rresp = 0; s.rlast = 0; s.rid = 0;
            s.arready = 1;                            // accept_reads >= 1
            s.awready = !cfg_.aw_waits_for_w;         // accept_writes >= 1; no W beat waits
            s.wready = w_budget_ && !refresh_;
            s.bvalid = 0; s.bresp = 0; s.bid = 0;
            return;
        }
        if (!stall_left_ && lfsr_.chance32(cfg_.stall_p32)) stall_left_ = 1 + lfsr_.next() % cfg_.stall_max;
        const bool stalled = stall_left_ != 0;
        const bool shared_ok = !shared_ || shared_->positive();
        const bool r_budget = rd_.positive() && shared_ok;
        w_budget_ = wr_.positive() && shared_ok;
        // R: a shown beat stays until taken; a new one needs the budget, no refresh, no stall, no gap
        r_blocked_ = false;
        if (!r_hold_) {
            const bool due = !rq_.empty() && now_ >= rq_.front().ready_at;
            r_blocked_ = due && !r_budget;
            r_show_ = due && r_budget && !refresh_ && !stalled && !lfsr_.stall(cfg_.r_gap_p16);
        }
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
        s.arready = rq_.size() < cfg_.accept_reads && !stalled && !lfsr_.stall(cfg_.ar_gap_p16);
        s.awready = awq_.size() + bq_.size() < cfg_.accept_writes && !stalled &&
                    (!cfg_.aw_waits_for_w || !wq_.empty()) && !lfsr_.stall(cfg_.aw_gap_p16);
        s.wready = wq_.size() < W_FIFO_BEATS && w_budget_ && !refresh_ && !stalled && !lfsr_.stall(cfg_.w_gap_p16);
        if (!b_hold_) b_show_ = !bq_.empty() && now_ >= bq_.front().ready_at && !stalled &&
                                !lfsr_.stall(cfg_.b_gap_p16);
        s.bvalid = b_show_;
        s.bresp = b_show_ ? bq_.front().resp : 0;
        s.bid = b_show_ ? bq_.front().id : 0;
    }

    void tick(const AxiSignals& s) {
        if (quiet_ && !s.arvalid && !s.awvalid && !s.wvalid) {   // no handshake can happen
            prev_ar_.waiting = prev_aw_.waiting = prev_w_.waiting = false;
            r_hold_ = b_hold_ = false;
            if (refresh_) stats_.refresh_cycles++;
            rd_.end_cycle();
            wr_.end_cycle();
            now_++;
            stats_.cycles++;
            quiet_cycles_++;
            return;
        }
        if (in_reset_) {
            prev_ar_ = prev_aw_ = prev_w_ = Pending{};
        } else {
            check_stable(prev_ar_, s.arvalid, s.arready, s.araddr, s.arlen, s.arid, s.arsize, s.arburst, 0, "AR");
            check_stable(prev_aw_, s.awvalid, s.awready, s.awaddr, s.awlen, s.awid, s.awsize, s.awburst, 0, "AW");
            check_stable(prev_w_, s.wvalid, s.wready, s.wstrb, s.wlast, 0, 0, 0, s.wdata, "W");
        }
        if (stall_left_) { stall_left_--; stats_.stall_cycles++; }
        if (refresh_) stats_.refresh_cycles++;
        if (r_blocked_) stats_.r_budget_cycles++;
        if (s.wvalid && !s.wready && !w_budget_) stats_.w_budget_cycles++;
        // read address / data
        if (s.rvalid && s.rready) {
            Burst& b = rq_.front();
            uint64_t a = beat_addr(b, b.beat);
            uint8_t resp = beat_resp(a, false);
            count_resp(resp);
            stats_.read_beats++;
            if (b.stale) stats_.late_read_beats++;
            if (resp == AXI_OKAY) stats_.bytes_read += 8;
            take(rd_);
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
            size_t mine = count_fresh(rq_);
            if (mine > cfg_.max_reads)
                error("AR burst at 0x%08x: %zu read bursts outstanding, more than %u", s.araddr, mine,
                      cfg_.max_reads);
        }
        // write response / address / data
        b_hold_ = s.bvalid && !s.bready;
        if (s.bvalid && s.bready) {
            if (bq_.front().stale) stats_.late_write_resps++;
            bq_.pop_front();
        }
        if (s.awvalid && s.awready) {
            Burst b{};
            b.addr = s.awaddr; b.len = s.awlen; b.id = s.awid; b.resp = AXI_OKAY;
            check_burst("AW", s.awaddr, s.awlen, s.awsize, s.awburst);
            awq_.push_back(b);
            stats_.write_bursts++;
            uint64_t out = awq_.size() + bq_.size();
            if (out > stats_.max_writes_outstanding) stats_.max_writes_outstanding = out;
            size_t mine = awq_.size() + count_fresh(bq_);
            if (mine > cfg_.max_writes)
                error("AW burst at 0x%08x: %zu write bursts outstanding, more than %u", s.awaddr, mine,
                      cfg_.max_writes);
        }
        if (s.wvalid && s.wready) {
            wq_.push_back(WBeat{s.wdata, s.wstrb, s.wlast});
            stats_.write_beats++;
            take(wr_);
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
        rd_.end_cycle();
        wr_.end_cycle();
        now_++;
        stats_.cycles++;
    }

    bool idle() const { return rq_.empty() && awq_.empty() && wq_.empty() && bq_.empty(); }
    // This cycle's drive() found the port quiet: its outputs are the quiet ones (nothing shown).
    bool quiet() const { return quiet_; }
    void set_fast_path(bool on) { fast_ok_ = on; }
    uint64_t quiet_cycles() const { return quiet_cycles_; }
    const AxiMemStats& stats() const { return stats_; }
    const std::vector<std::string>& messages() const { return messages_; }
    uint64_t cycle() const { return now_; }

private:
    struct Burst {
        uint64_t addr = 0, ready_at = 0;
        uint32_t beat = 0;
        uint8_t len = 0, id = 0, resp = 0;
        bool stale = false;   // issued before the last DUT reset
    };
    struct WBeat {
        uint64_t data;
        uint8_t strb, last;
    };
    struct Pending {   // last cycle's VALID-without-READY payload of a channel
        bool waiting = false;
        uint64_t a = 0, b = 0, c = 0, d = 0, e = 0, f = 0;
    };

    void drop_all() {
        rq_.clear();
        awq_.clear();
        wq_.clear();
        bq_.clear();
        r_show_ = r_hold_ = b_show_ = b_hold_ = false;
        prev_ar_ = prev_aw_ = prev_w_ = Pending{};
    }
    // a beat moved: its bytes from the port's bucket of that direction and from the shared one
    void take(TokenBucket& port) {
        port.take(BEAT_BYTES);
        if (shared_) shared_->take(BEAT_BYTES);
    }
    static size_t count_fresh(const std::deque<Burst>& q) {
        size_t n = 0;
        for (const Burst& b : q) n += !b.stale;
        return n;
    }

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
        if ((a >> PAGE_BITS) >= store_->size()) store_->resize((a >> PAGE_BITS) + 1);
        auto& p = (*store_)[a >> PAGE_BITS];
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
    using Pages = std::vector<std::unique_ptr<uint8_t[]>>;
    std::shared_ptr<Pages> store_ = std::make_shared<Pages>();   // the DDR's contents (maybe shared)
    bool own_store_ = true;
    std::vector<std::string> messages_;
    std::deque<Burst> rq_, awq_, bq_;
    std::deque<WBeat> wq_;
    Pending prev_ar_, prev_aw_, prev_w_;
    Lfsr lfsr_;
    TokenBucket rd_, wr_;
    SharedBudget* shared_ = nullptr;
    uint64_t now_ = 0;
    uint64_t err_r_lo_ = 0, err_r_hi_ = 0, err_w_lo_ = 0, err_w_hi_ = 0;
    uint32_t stall_left_ = 0;
    bool r_show_ = false, r_hold_ = false, b_show_ = false, b_hold_ = false;
    bool refresh_ = false, w_budget_ = true, r_blocked_ = false, in_reset_ = false;
    bool plain_ = true, fast_ok_ = true, quiet_ = false;
    uint64_t quiet_cycles_ = 0;
};

}  // namespace zq
