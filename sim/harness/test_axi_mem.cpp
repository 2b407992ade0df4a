// Unit test of axi_mem.h: this program is the AXI4 master, cycle by cycle, on the
// model's signal struct. Built and run by tests/test_rtl_fast.py (g++ -O1), which
// also checks the measured values it prints as one JSON object on stdout.
// Exit status: 0 when every check passed, 1 otherwise (the failures are listed).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "axi_mem.h"

using namespace zq;

static std::vector<std::string> failures;
static std::vector<std::pair<std::string, long long>> values;

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond)) {                                                       \
            char b_[256];                                                    \
            std::snprintf(b_, sizeof b_, __VA_ARGS__);                       \
            failures.push_back(std::string(__func__) + ": " + b_);           \
        }                                                                    \
    } while (0)

static void record(const std::string& k, long long v) { values.emplace_back(k, v); }

// One master on one memory: step() runs a clock cycle with the master's inputs
// set by `drive` (which sees the slave's outputs of the cycle) and returns the
// handshakes of that cycle.
struct Bench {
    AxiMem mem;
    AxiSignals s{};
    long long cycle = 0;
    bool r_waiting = false;          // R beat shown without RREADY last cycle
    uint64_t r_prev_data = 0;
    uint8_t r_prev_last = 0;

    explicit Bench(const AxiMemConfig& c) : mem(c) {}

    struct Hs { bool ar, r, aw, w, b; uint64_t rdata; uint8_t rresp, rlast, rid, bresp, bid; };

    Hs step(const std::function<void(AxiSignals&)>& drive) {
        mem.drive(s);
        drive(s);
        Hs h{};
        h.ar = s.arvalid && s.arready;
        h.r = s.rvalid && s.rready;
        h.aw = s.awvalid && s.awready;
        h.w = s.wvalid && s.wready;
        h.b = s.bvalid && s.bready;
        h.rdata = s.rdata; h.rresp = s.rresp; h.rlast = s.rlast; h.rid = s.rid;
        h.bresp = s.bresp; h.bid = s.bid;
        // AXI rule for the slave: RVALID stays, with the same beat, until RREADY
        if (r_waiting)
            CHECK(s.rvalid && s.rdata == r_prev_data && s.rlast == r_prev_last,
                  "cycle %lld: RVALID withdrawn or R beat changed before RREADY", cycle);
        r_waiting = s.rvalid && !s.rready;
        r_prev_data = s.rdata;
        r_prev_last = s.rlast;
        mem.tick(s);
        cycle++;
        return h;
    }
};

static AxiMemConfig cfg(uint32_t lr = 32, uint32_t lw = 16, uint32_t nr = 8, uint32_t nw = 8) {
    AxiMemConfig c = axi_mem_defaults();
    c.size = 1 << 20;
    c.read_latency = lr;
    c.write_latency = lw;
    c.max_reads = nr;
    c.max_writes = nw;
    c.accept_reads = nr;    // a port that back-pressures at its limits
    c.accept_writes = nw;
    return c;
}

static uint64_t pattern(uint64_t addr) { return addr * 0x9E3779B97F4A7C15ull + 0x1234; }

static void fill(AxiMem& m, uint64_t base, uint64_t bytes) {
    for (uint64_t a = base; a < base + bytes; a += 8) {
        uint64_t v = pattern(a);
        m.host_write(a, &v, 8);
    }
}

// A read burst of `beats` at `addr`: AR in cycle 0, then RREADY high.
static void test_read_latency_and_rlast() {
    Bench t(cfg(32));
    fill(t.mem, 0x1000, 256);
    long long ar_cycle = -1, first = -1, last_cycle = -1;
    int beats = 0, lasts = 0;
    bool arv = true;
    while (t.cycle < 200) {
        auto h = t.step([&](AxiSignals& s) {
            s.arvalid = arv; s.araddr = 0x1040; s.arlen = 7; s.arsize = 3; s.arburst = 1; s.arid = 1;
            s.rready = 1;
        });
        if (h.ar) { ar_cycle = t.cycle - 1; arv = false; }
        if (h.r) {
            if (first < 0) first = t.cycle - 1;
            CHECK(h.rdata == pattern(0x1040 + 8ull * beats), "beat %d data", beats);
            CHECK(h.rresp == AXI_OKAY && h.rid == 1, "beat %d resp %u id %u", beats, h.rresp, h.rid);
            lasts += h.rlast;
            CHECK(h.rlast == (beats == 7), "RLAST on beat %d", beats);
            beats++;
            last_cycle = t.cycle - 1;
        }
    }
    record("read_ar_cycle", ar_cycle);
    record("read_first_beat_latency", first - ar_cycle);
    record("read_burst_cycles", last_cycle - first + 1);
    record("read_beats", beats);
    CHECK(ar_cycle == 0, "AR handshake in cycle %lld, expected 0", ar_cycle);
    CHECK(first - ar_cycle == 32, "first R beat %lld cycles after AR, expected 32", first - ar_cycle);
    CHECK(beats == 8 && lasts == 1 && last_cycle - first == 7, "%d beats, %d RLAST, %lld cycles", beats, lasts,
          last_cycle - first + 1);
    CHECK(t.mem.stats().bytes_read == 64 && t.mem.stats().read_bursts == 1, "stats %llu bytes",
          (unsigned long long)t.mem.stats().bytes_read);
}

// 12 bursts issued back to back with N_r = 8: in order, and the 9th AR waits for a burst to finish.
static void test_read_outstanding_and_order() {
    Bench t(cfg(20, 16, 8));
    fill(t.mem, 0, 4096);
    int issued = 0, got_beats = 0;
    std::vector<long long> ar_cycles, last_beat_cycles;
    bool order_ok = true;
    while (t.cycle < 400) {
        auto h = t.step([&](AxiSignals& s) {
            s.arvalid = issued < 12; s.araddr = 0x100 * issued; s.arlen = 3; s.arsize = 3; s.arburst = 1;
            s.arid = issued & 1; s.rready = 1;
        });
        if (h.ar) { ar_cycles.push_back(t.cycle - 1); issued++; }
        if (h.r) {
            int burst = got_beats / 4, beat = got_beats % 4;
            if (h.rdata != pattern(0x100ull * burst + 8 * beat) || h.rid != (burst & 1)) order_ok = false;
            if (h.rlast) last_beat_cycles.push_back(t.cycle - 1);
            got_beats++;
        }
    }
    CHECK(issued == 12 && got_beats == 48, "%d bursts issued, %d beats", issued, got_beats);
    CHECK(order_ok, "bursts not answered in order with their data and IDs");
    record("read_max_outstanding", (long long)t.mem.stats().max_reads_outstanding);
    CHECK(t.mem.stats().max_reads_outstanding == 8, "max outstanding %llu",
          (unsigned long long)t.mem.stats().max_reads_outstanding);
    if (ar_cycles.size() == 12 && last_beat_cycles.size() == 12) {
        CHECK(ar_cycles[7] == 7, "8th AR in cycle %lld", ar_cycles[7]);
        // the 9th AR is accepted the cycle after the 1st burst's last beat is taken
        record("ar9_after_first_burst_done", ar_cycles[8] - last_beat_cycles[0]);
        CHECK(ar_cycles[8] == last_beat_cycles[0] + 1, "9th AR in cycle %lld, first burst done in %lld",
              ar_cycles[8], last_beat_cycles[0]);
        // pipelined bursts: beats back to back once the latency is covered
        CHECK(last_beat_cycles[1] == last_beat_cycles[0] + 4, "burst 2 not back to back");
    }
}

// A 4-beat write with partial strobes: B comes L_w cycles after the WLAST handshake.
static void test_write_and_bresp() {
    Bench t(cfg(32, 16));
    fill(t.mem, 0x2000, 64);
    int wbeat = 0;
    bool awv = true, bready = true;
    long long wlast_cycle = -1, b_cycle = -1;
    uint8_t bresp = 9, bid = 9;
    while (t.cycle < 100) {
        auto h = t.step([&](AxiSignals& s) {
            s.awvalid = awv; s.awaddr = 0x2000; s.awlen = 3; s.awsize = 3; s.awburst = 1; s.awid = 1;
            s.wvalid = wbeat < 4; s.wdata = 0x1111111111111111ull * (wbeat + 1); s.wstrb = wbeat == 2 ? 0x0F : 0xFF;
            s.wlast = wbeat == 3; s.bready = bready;
        });
        if (h.aw) awv = false;
        if (h.w) { if (wbeat == 3) wlast_cycle = t.cycle - 1; wbeat++; }
        if (h.b) { b_cycle = t.cycle - 1; bresp = h.bresp; bid = h.bid; bready = false; }
    }
    record("write_b_latency", b_cycle - wlast_cycle);
    CHECK(b_cycle - wlast_cycle == 16, "BVALID %lld cycles after WLAST, expected 16", b_cycle - wlast_cycle);
    CHECK(bresp == AXI_OKAY && bid == 1, "BRESP %u BID %u", bresp, bid);
    uint64_t v[4];
    t.mem.host_read(0x2000, v, 32);
    CHECK(v[0] == 0x1111111111111111ull && v[1] == 0x2222222222222222ull && v[3] == 0x4444444444444444ull,
          "written data");
    uint64_t keep = (pattern(0x2010) & 0xFFFFFFFF00000000ull) | 0x33333333ull;
    CHECK(v[2] == keep, "WSTRB 0x0F: got %016llx expected %016llx", (unsigned long long)v[2],
          (unsigned long long)keep);
    CHECK(t.mem.stats().bytes_written == 28 && t.mem.stats().write_bursts == 1, "stats: %llu bytes written",
          (unsigned long long)t.mem.stats().bytes_written);
}

// W beats before their AW, and the N_w limit with BREADY held low.
static void test_write_outstanding_and_w_first() {
    Bench t(cfg(32, 4, 8, 8));
    int aws = 0, ws = 0, bs = 0;
    long long ninth_aw = -1, first_b = -1;
    while (t.cycle < 300) {
        bool bready = t.cycle >= 100;
        auto h = t.step([&](AxiSignals& s) {
            // W runs 3 beats ahead of AW: AW of burst i only once its data are on the way
            s.awvalid = aws < 10 && ws >= aws * 2 + 2; s.awaddr = 0x3000 + 16 * aws; s.awlen = 1; s.awsize = 3;
            s.awburst = 1; s.awid = 0;
            s.wvalid = ws < 20; s.wdata = 0xA0 + ws; s.wstrb = 0xFF; s.wlast = ws & 1;
            s.bready = bready;
        });
        if (h.aw) { if (aws == 8) ninth_aw = t.cycle - 1; aws++; }
        if (h.w) ws++;
        if (h.b) { if (bs == 0) first_b = t.cycle - 1; bs++; }
    }
    CHECK(aws == 10 && ws == 20 && bs == 10, "%d AW, %d W, %d B", aws, ws, bs);
    record("write_max_outstanding", (long long)t.mem.stats().max_writes_outstanding);
    CHECK(t.mem.stats().max_writes_outstanding == 8, "max writes outstanding %llu",
          (unsigned long long)t.mem.stats().max_writes_outstanding);
    CHECK(first_b == 100 && ninth_aw == 101, "first B in %lld, 9th AW in %lld (expected 100, 101)", first_b,
          ninth_aw);
    bool ok = true;
    for (int i = 0; i < 20; ++i) {
        uint64_t v;
        t.mem.host_read(0x3000 + 8 * i, &v, 8);
        ok &= v == uint64_t(0xA0 + i);
    }
    CHECK(ok, "data written before its AW landed at the wrong place");
    CHECK(t.mem.stats().protocol_errors == 0, "%llu protocol errors", (unsigned long long)t.mem.stats().protocol_errors);
}

// Beats beyond the memory answer DECERR; an error range answers SLVERR; neither is written.
static void test_error_responses() {
    AxiMemConfig c = cfg(8, 4);
    c.size = 0xFF10;   // not a page multiple: the last two beats of a 4-beat burst at 0xFF00 are outside
    Bench t(c);
    t.mem.set_error_range(0x8000, 0x8100, true, true);
    fill(t.mem, 0xFF00, 0x10);
    std::vector<uint8_t> rresp;
    std::vector<uint8_t> bresp;
    int phase = 0, wb = 0;
    while (t.cycle < 200) {
        auto h = t.step([&](AxiSignals& s) {
            s.arvalid = phase == 0 || phase == 1;
            s.araddr = phase == 0 ? 0xFF00 : 0x80F8;   // 2 good + 2 out of range; 1 SLVERR + 1 good
            s.arlen = phase == 0 ? 3 : 1; s.arsize = 3; s.arburst = 1; s.rready = 1;
            s.awvalid = phase == 2 || phase == 3; s.awaddr = phase == 2 ? 0xFF08 : 0x8000; s.awlen = 1;
            s.awsize = 3; s.awburst = 1;
            s.wvalid = wb < 4; s.wdata = 0x5555555555555555ull; s.wstrb = 0xFF; s.wlast = wb & 1; s.bready = 1;
        });
        if (h.ar) phase++;
        if (h.r) rresp.push_back(h.rresp);
        if (h.aw) phase++;
        if (h.w) wb++;
        if (h.b) bresp.push_back(h.bresp);
    }
    std::vector<uint8_t> want_r = {0, 0, 3, 3, 2, 0};
    CHECK(rresp == want_r, "RRESP sequence wrong (%zu beats)", rresp.size());
    CHECK(bresp.size() == 2 && bresp[0] == AXI_DECERR && bresp[1] == AXI_SLVERR, "BRESP %u %u",
          bresp.size() > 0 ? bresp[0] : 9, bresp.size() > 1 ? bresp[1] : 9);
    uint64_t v;
    t.mem.host_read(0xFF08, &v, 8);
    CHECK(v == 0x5555555555555555ull, "in-range beat of the DECERR burst not written");
    t.mem.host_read(0x8000, &v, 8);
    CHECK(v == 0, "SLVERR beat written");
    record("decerr", (long long)t.mem.stats().decerr);
    record("slverr", (long long)t.mem.stats().slverr);
    CHECK(t.mem.stats().decerr == 3 && t.mem.stats().slverr == 2, "counters decerr %llu slverr %llu",
          (unsigned long long)t.mem.stats().decerr, (unsigned long long)t.mem.stats().slverr);
    CHECK(t.mem.stats().protocol_errors == 0, "protocol errors %llu", (unsigned long long)t.mem.stats().protocol_errors);
}

// A burst across a 4 KiB boundary, a wrong WLAST, a wrong size, a withdrawn ARVALID: protocol errors.
static void test_protocol_checks() {
    Bench t(cfg(4, 4));
    int step = 0, wb = 0;
    while (t.cycle < 60) {
        auto h = t.step([&](AxiSignals& s) {
            s.arvalid = step == 0 || step == 1; s.araddr = step == 0 ? 0x0FF8 : 0x2000; s.arlen = 1;
            s.arsize = step == 0 ? 3 : 2; s.arburst = 1; s.rready = 1;
            s.awvalid = step == 2; s.awaddr = 0x100; s.awlen = 2; s.awsize = 3; s.awburst = 1;
            s.wvalid = wb < 3; s.wdata = 1; s.wstrb = 0xFF; s.wlast = wb == 1;   // WLAST on beat 2 of 3
            s.bready = 1;
        });
        if (h.ar || h.aw) step++;
        if (h.w) wb++;
    }
    const auto& m = t.mem.messages();
    record("protocol_errors", (long long)t.mem.stats().protocol_errors);
    bool k4 = false, size = false, wlast = false;
    for (auto& s : m) {
        k4 |= s.find("crosses a 4 KiB boundary") != std::string::npos && s.find("0x00000ff8") != std::string::npos;
        size |= s.find("ARSIZE 2") != std::string::npos;
        wlast |= s.find("WLAST") != std::string::npos;
    }
    CHECK(k4 && size && wlast, "messages: 4K %d size %d wlast %d", k4, size, wlast);
    // WLAST set on beat 2 of 3 and missing on beat 3: two errors, plus 4K and size
    CHECK(t.mem.stats().protocol_errors == 4, "%llu protocol errors, expected 4",
          (unsigned long long)t.mem.stats().protocol_errors);
    // the AXI stability rule: ARVALID withdrawn before ARREADY
    AxiMemConfig c = cfg(4, 4, 1, 1);
    Bench u(c);
    while (u.cycle < 20) {
        u.step([&](AxiSignals& s) {
            s.arvalid = u.cycle <= 12;   // the 2nd AR waits (N_r = 1, RREADY low), then vanishes
            s.araddr = u.cycle < 1 ? 0 : 0x40; s.arlen = 0; s.arsize = 3; s.arburst = 1; s.rready = 0;
        });
    }
    bool withdrawn = false;
    for (auto& s : u.mem.messages()) withdrawn |= s.find("ARVALID withdrawn") != std::string::npos;
    CHECK(withdrawn, "ARVALID withdrawn before ARREADY not reported");
}

// Random RVALID / AWREADY / WREADY gaps and random RREADY: same data, more cycles.
static void test_random_gaps() {
    long long cycles[2] = {0, 0};
    uint64_t sum[2] = {0, 0};
    for (int g = 0; g < 2; ++g) {
        AxiMemConfig c = cfg(10, 5);
        if (g) {
            c.r_gap_p16 = c.aw_gap_p16 = c.w_gap_p16 = c.ar_gap_p16 = c.b_gap_p16 = 30000;
            c.stall_p32 = 1u << 26;   // 1/64 per cycle, up to 40 cycles
            c.stall_max = 40;
            c.seed = 77;
        }
        Bench t(c);
        fill(t.mem, 0, 8192);
        Lfsr master(5);
        int ars = 0, beats = 0, aws = 0, ws = 0, bs = 0;
        while (beats < 256 || bs < 8) {
            bool rr = g ? !master.stall(20000) : true;
            auto h = t.step([&](AxiSignals& s) {
                s.arvalid = ars < 16; s.araddr = 0x80 * ars; s.arlen = 15; s.arsize = 3; s.arburst = 1; s.rready = rr;
                s.awvalid = aws < 8; s.awaddr = 0x1000 + 0x80 * aws; s.awlen = 15; s.awsize = 3; s.awburst = 1;
                s.wvalid = ws < 128; s.wdata = ws; s.wstrb = 0xFF; s.wlast = (ws & 15) == 15; s.bready = 1;
            });
            if (h.ar) ars++;
            if (h.r) { sum[g] += h.rdata * (beats + 1); beats++; }
            if (h.aw) aws++;
            if (h.w) ws++;
            if (h.b) bs++;
            if (t.cycle > 100000) break;
        }
        cycles[g] = t.cycle;
        CHECK(beats == 256 && bs == 8, "gaps=%d: %d beats %d B", g, beats, bs);
        CHECK(t.mem.stats().protocol_errors == 0, "gaps=%d: protocol errors", g);
        CHECK(!g || t.mem.stats().stall_cycles > 0, "no stalls");
        uint64_t v;
        t.mem.host_read(0x1000 + 8 * 100, &v, 8);
        CHECK(v == 100, "gaps=%d: write data", g);
    }
    record("cycles_no_gaps", cycles[0]);
    record("cycles_gaps", cycles[1]);
    CHECK(sum[0] == sum[1], "read data differ with gaps");
    CHECK(cycles[1] > cycles[0] * 5 / 4, "gaps did not slow the transfers (%lld vs %lld)", cycles[1], cycles[0]);
}


// A read stream that always wants beats: `cycles` cycles of back-to-back 16-beat bursts.
struct Reader {
    int ars = 0, beats = 0;
    void drive(AxiSignals& s) {
        s.arvalid = 1; s.araddr = 0x80 * (ars % 64); s.arlen = 15; s.arsize = 3; s.arburst = 1; s.rready = 1;
    }
    void count(const Bench::Hs& h) { ars += h.ar; beats += h.r; }
};

// MemoryModel.port_bytes_per_cycle: 4 B/cycle on a 64-bit port is half a beat per cycle, after
// the full bucket (128 bytes = 16 beats) is spent; 8 B/cycle is no limit.
static void test_port_bandwidth() {
    for (double rate : {8.0, 4.0, 3.0}) {
        AxiMemConfig c = cfg(8, 4);
        c.port_bytes_per_cycle = rate;
        Bench t(c);
        Reader r;
        int first = -1;
        while (t.cycle < 4000) {
            auto h = t.step([&](AxiSignals& s) { r.drive(s); });
            if (h.r && first < 0) first = int(t.cycle - 1);
            r.count(h);
        }
        // beats in [first, 4000): at most the bucket plus the refill, and at least one beat less
        double span = 4000 - first, want = rate >= 8.0 ? span : (128.0 + rate * span) / 8.0;
        record(rate == 8.0 ? "port_beats_8" : rate == 4.0 ? "port_beats_4" : "port_beats_3", r.beats);
        CHECK(r.beats <= want + 1 && r.beats >= want - 2, "rate %.1f: %d beats in %.0f cycles, expected %.1f", rate,
              r.beats, span, want);
        CHECK(t.mem.stats().r_budget_cycles > 0 || rate >= 8.0, "rate %.1f: no budget stalls counted", rate);
    }
}

// One SharedBudget for two ports (and a charged stream): 12 B/cycle for both, each port free
// (8 B/cycle): together 1.5 beats per cycle after the full bucket, split evenly.
static void test_shared_budget() {
    AxiMemConfig c = cfg(8, 4);
    AxiMem a(c), b(c);
    SharedBudget sh;
    sh.configure(12.0, 128.0);
    a.attach_shared(&sh);
    b.attach_shared(&sh);
    AxiSignals sa{}, sb{};
    Reader ra, rb;
    long long n = 3000, first = -1;
    for (long long cyc = 0; cyc < n; ++cyc) {
        a.drive(sa);
        b.drive(sb);
        ra.drive(sa);
        rb.drive(sb);
        Bench::Hs ha{}, hb{};
        ha.ar = sa.arvalid && sa.arready; ha.r = sa.rvalid && sa.rready;
        hb.ar = sb.arvalid && sb.arready; hb.r = sb.rvalid && sb.rready;
        if ((ha.r || hb.r) && first < 0) first = cyc;
        a.tick(sa);
        b.tick(sb);
        if (cyc % 2 == 0) sh.charge_stream(4);   // a stream of 2 B/cycle
        sh.end_cycle();
        ra.count(ha);
        rb.count(hb);
    }
    double span = double(n - first), want = (128.0 + (12.0 - 2.0) * span) / 8.0;
    record("shared_beats", ra.beats + rb.beats);
    CHECK(ra.beats + rb.beats <= want + 2 && ra.beats + rb.beats >= want - 3,
          "%d + %d beats in %.0f cycles, expected %.1f in all", ra.beats, rb.beats, span, want);
    CHECK(std::abs(ra.beats - rb.beats) <= 1, "uneven split %d / %d", ra.beats, rb.beats);
    CHECK(sh.stream_bytes == 4 * (uint64_t(n) / 2), "stream bytes %llu", (unsigned long long)sh.stream_bytes);
}

// Refresh: no R beat and no WREADY in the cycles where cycle % interval < refresh_cycles.
static void test_refresh() {
    AxiMemConfig c = cfg(8, 4);
    c.refresh_interval = 100;
    c.refresh_cycles = 13;
    Bench t(c);
    Reader r;
    int bad = 0, wready_in_refresh = 0;
    while (t.cycle < 2000) {
        long long cyc = t.cycle;
        auto h = t.step([&](AxiSignals& s) {
            r.drive(s);
            s.awvalid = 0; s.wvalid = 0; s.bready = 1;
            if (cyc % 100 < 13 && s.wready) wready_in_refresh++;
        });
        if (h.r && cyc % 100 < 13) bad++;
        r.count(h);
    }
    record("refresh_cycles", (long long)t.mem.stats().refresh_cycles);
    CHECK(bad == 0 && wready_in_refresh == 0, "%d R beats and %d WREADY in refresh cycles", bad, wready_in_refresh);
    CHECK(t.mem.stats().refresh_cycles == 20 * 13, "%llu refresh cycles", (unsigned long long)t.mem.stats().refresh_cycles);
    CHECK(r.beats >= 2000 - 20 * 13 - 40, "%d beats", r.beats);
}

// aw_waits_for_w: a master that holds W until its AW handshake never gets AWREADY; one that
// sends W first completes.
static void test_aw_waits_for_w() {
    for (int w_first = 0; w_first < 2; ++w_first) {
        AxiMemConfig c = cfg(8, 4);
        c.aw_waits_for_w = 1;
        Bench t(c);
        bool aw_done = false;
        int ws = 0, bs = 0;
        while (t.cycle < 300) {
            auto h = t.step([&](AxiSignals& s) {
                s.awvalid = !aw_done; s.awaddr = 0x100; s.awlen = 3; s.awsize = 3; s.awburst = 1;
                s.wvalid = ws < 4 && (w_first || aw_done); s.wdata = ws; s.wstrb = 0xFF; s.wlast = ws == 3;
                s.bready = 1;
            });
            if (h.aw) aw_done = true;
            if (h.w) ws++;
            if (h.b) bs++;
        }
        record(w_first ? "aw_waits_w_first_b" : "aw_waits_w_after_b", bs);
        CHECK(w_first ? (aw_done && bs == 1) : (!aw_done && bs == 0), "w_first %d: AW %d, %d B", w_first, aw_done, bs);
    }
}

// The outstanding-limit checker: the slave accepts 16, the master may have 8; the 9th read
// burst (RREADY low) and the 9th write burst (BREADY low) are reported with cycle and channel.
static void test_outstanding_check() {
    AxiMemConfig c = cfg(8, 4);
    c.accept_reads = 16;
    c.accept_writes = 16;
    Bench t(c);
    int ars = 0, aws = 0, ws = 0;
    while (t.cycle < 100) {
        t.step([&](AxiSignals& s) {
            s.arvalid = ars < 9; s.araddr = 0x40 * ars; s.arlen = 0; s.arsize = 3; s.arburst = 1; s.rready = 0;
            s.awvalid = aws < 9; s.awaddr = 0x1000 + 0x40 * aws; s.awlen = 0; s.awsize = 3; s.awburst = 1;
            s.wvalid = ws < 9; s.wdata = 1; s.wstrb = 0xFF; s.wlast = 1; s.bready = 0;
        });
        ars = int(t.mem.stats().read_bursts);
        aws = int(t.mem.stats().write_bursts);
        ws = int(t.mem.stats().write_beats);
    }
    bool rd = false, wr = false;
    for (auto& m : t.mem.messages()) {
        rd |= m.find("cycle 8: AR burst at 0x00000200: 9 read bursts outstanding, more than 8") != std::string::npos;
        wr |= m.find("cycle 8: AW burst at 0x00001200: 9 write bursts outstanding, more than 8") != std::string::npos;
    }
    record("outstanding_errors", (long long)t.mem.stats().protocol_errors);
    CHECK(rd && wr && t.mem.stats().protocol_errors == 2, "read %d write %d, %llu errors", rd, wr,
          (unsigned long long)t.mem.stats().protocol_errors);
}

// A DUT reset with 4 read bursts in flight: by default they are dropped; with
// keep_reads_on_reset their beats still come (late), and they do not count against the
// master's limit afterwards.
static void test_reads_across_reset() {
    for (int keep = 0; keep < 2; ++keep) {
        AxiMemConfig c = cfg(20, 4, 4, 4);
        c.accept_reads = 8;
        c.keep_reads_on_reset = keep;
        Bench t(c);
        int ars = 0, beats = 0;
        bool in_reset = false;
        while (t.cycle < 200) {
            if (t.cycle == 6) { t.mem.dut_reset(true); in_reset = true; }
            if (t.cycle == 10) { t.mem.dut_reset(false); in_reset = false; }
            auto h = t.step([&](AxiSignals& s) {
                // 4 bursts before the reset, 4 more after it
                bool want = (t.cycle < 6 && ars < 4) || (t.cycle >= 12 && ars < 8);
                s.arvalid = want && !in_reset; s.araddr = 0x40 * ars; s.arlen = 3; s.arsize = 3; s.arburst = 1;
                s.rready = 1;
            });
            ars += h.ar;
            beats += h.r;
        }
        const AxiMemStats& st = t.mem.stats();
        record(keep ? "reset_keep_late_beats" : "reset_drop_late_beats", (long long)st.late_read_beats);
        CHECK(st.protocol_errors == 0, "keep %d: %llu protocol errors", keep, (unsigned long long)st.protocol_errors);
        CHECK(keep ? (beats == 32 && st.late_read_beats == 16) : (beats == 16 && st.late_read_beats == 0),
              "keep %d: %d beats, %llu late", keep, beats, (unsigned long long)st.late_read_beats);
    }
}

// The quiet fast path against the full model: a seeded random master (sparse reads and writes,
// W beats before or after their AW, RREADY/BREADY gaps, idle stretches, a DUT reset) drives a
// memory with the fast path and one without, each with its own shared budget charged by a
// stream, in lockstep; every output of every cycle, the counters, the shared budget and the
// contents must be equal, under refresh, halved and full port budgets, short latencies and
// AWREADY withheld until a W beat waits. The fast path must have been taken (and never by the
// full model's memory).
static void test_fast_path_same_as_full() {
    struct Case { uint32_t lr, lw, refresh_interval, refresh_cycles, aw_waits, keep; double port, shared; };
    const Case cases[] = {{2, 2, 780, 26, 0, 1, 4.0, 12.0}, {32, 16, 780, 26, 0, 1, 8.0, 15.75},
                          {1, 1, 0, 0, 1, 0, 3.0, 0.0}, {5, 3, 97, 9, 1, 1, 8.0, 6.0}};
    int k = 0;
    long long quiet_total = 0;
    for (const Case& cs : cases) {
        AxiMemConfig c = cfg(cs.lr, cs.lw, 4, 4);
        c.accept_reads = c.accept_writes = 8;
        c.refresh_interval = cs.refresh_interval;
        c.refresh_cycles = cs.refresh_cycles;
        c.aw_waits_for_w = cs.aw_waits;
        c.keep_reads_on_reset = cs.keep;
        c.port_bytes_per_cycle = cs.port;
        AxiMem fast(c), full(c);
        full.set_fast_path(false);
        SharedBudget sf, su;
        sf.configure(cs.shared, 128.0);
        su.configure(cs.shared, 128.0);
        fast.attach_shared(&sf);
        full.attach_shared(&su);
        AxiSignals a{}, b{};
        Lfsr rnd(1234u + k);
        int ar_out = 0, aw_out = 0, w_in_burst = 0;
        std::deque<int> w_bursts;   // beats of each issued AW burst whose W beats are not all sent
        bool ar_v = false, aw_v = false, w_v = false, bad = false;
        uint32_t ar_addr = 0, aw_addr = 0;
        uint8_t ar_len = 0, aw_len = 0;
        uint64_t w_data = 0;
        for (long long cyc = 0; cyc < 30000 && !bad; ++cyc) {
            const bool busy = (cyc / 700) % 2 == 0;   // 700 cycles of traffic, 700 idle
            const bool in_reset = cyc >= 15000 && cyc < 15005;
            if (cyc == 15000 || cyc == 15005) {
                fast.dut_reset(in_reset);
                full.dut_reset(in_reset);
                ar_v = aw_v = w_v = false;   // the master starts over
                ar_out = aw_out = w_in_burst = 0;
                w_bursts.clear();
            }
            fast.drive(a);
            full.drive(b);
            if (std::memcmp(&a, &b, sizeof a) != 0) {
                CHECK(false, "case %d, cycle %lld: outputs differ", k, cyc);
                bad = true;
            }
            // the master: a VALID stays, with its payload, until READY
            if (!ar_v && busy && !in_reset && ar_out < 4 && rnd.stall(6000)) {
                ar_v = true; ar_addr = 0x8000 + 0x80 * (rnd.next() % 256); ar_len = uint8_t(rnd.next() % 16);
            }
            if (!aw_v && busy && !in_reset && aw_out < 4 && w_bursts.size() < 4 && rnd.stall(4000)) {
                aw_v = true; aw_addr = 0x40000 + 0x80 * (rnd.next() % 256); aw_len = uint8_t(rnd.next() % 16);
                w_bursts.push_back(aw_len + 1);
            }
            if (!w_v && !w_bursts.empty() && rnd.stall(50000)) { w_v = true; w_data = 0x1234567800000000ull + uint64_t(cyc); }
            a.arvalid = ar_v; a.araddr = ar_addr; a.arlen = ar_len; a.arsize = 3; a.arburst = 1; a.arid = 0;
            a.awvalid = aw_v; a.awaddr = aw_addr; a.awlen = aw_len; a.awsize = 3; a.awburst = 1; a.awid = 0;
            a.wvalid = w_v; a.wdata = w_data; a.wstrb = 0xFF;
            a.wlast = w_v && w_in_burst + 1 == w_bursts.front();
            a.rready = !rnd.stall(16000);
            a.bready = !rnd.stall(16000);
            std::memcpy(&b, &a, sizeof a);   // the same master signals for both (outputs checked equal)
            const bool ar_hs = a.arvalid && a.arready, aw_hs = a.awvalid && a.awready, w_hs = a.wvalid && a.wready;
            const bool r_last = a.rvalid && a.rready && a.rlast, b_hs = a.bvalid && a.bready;
            fast.tick(a);
            full.tick(b);
            sf.charge_stream(cyc % 3 == 0 ? 4 : 0);
            su.charge_stream(cyc % 3 == 0 ? 4 : 0);
            sf.end_cycle();
            su.end_cycle();
            if (ar_hs) { ar_v = false; ar_out++; }
            if (r_last && ar_out > 0) ar_out--;
            if (aw_hs) { aw_v = false; aw_out++; }
            if (b_hs && aw_out > 0) aw_out--;
            if (w_hs) {
                w_v = false;
                if (++w_in_burst == w_bursts.front()) { w_bursts.pop_front(); w_in_burst = 0; }
            }
        }
        const AxiMemStats &x = fast.stats(), &y = full.stats();
        CHECK(std::memcmp(&x, &y, sizeof x) == 0, "case %d: counters differ (cycles %llu/%llu, read beats %llu/%llu)",
              k, (unsigned long long)x.cycles, (unsigned long long)y.cycles, (unsigned long long)x.read_beats,
              (unsigned long long)y.read_beats);
        CHECK(sf.level == su.level && sf.empty_cycles == su.empty_cycles, "case %d: shared budgets differ", k);
        std::vector<uint8_t> mf(0x10000), mu(0x10000);
        fast.host_read(0x40000, mf.data(), mf.size());
        full.host_read(0x40000, mu.data(), mu.size());
        CHECK(mf == mu, "case %d: written contents differ", k);
        CHECK(x.read_beats > 1000 && x.write_beats > 1000 && x.protocol_errors == 0,
              "case %d: %llu read and %llu write beats, %llu protocol errors", k, (unsigned long long)x.read_beats,
              (unsigned long long)x.write_beats, (unsigned long long)x.protocol_errors);
        CHECK(full.quiet_cycles() == 0 && fast.quiet_cycles() > 5000 && fast.quiet_cycles() < x.cycles,
              "case %d: %llu / %llu quiet cycles of %llu", k, (unsigned long long)fast.quiet_cycles(),
              (unsigned long long)full.quiet_cycles(), (unsigned long long)x.cycles);
        quiet_total += (long long)fast.quiet_cycles();
        k++;
    }
    record("fast_path_quiet_cycles", quiet_total);
}

int main() {
    test_read_latency_and_rlast();
    test_read_outstanding_and_order();
    test_write_and_bresp();
    test_write_outstanding_and_w_first();
    test_error_responses();
    test_protocol_checks();
    test_random_gaps();
    test_port_bandwidth();
    test_shared_budget();
    test_refresh();
    test_aw_waits_for_w();
    test_outstanding_check();
    test_reads_across_reset();
    test_fast_path_same_as_full();
    std::printf("{\"values\": {");
    for (size_t i = 0; i < values.size(); ++i)
        std::printf("%s\"%s\": %lld", i ? ", " : "", values[i].first.c_str(), values[i].second);
    std::printf("}, \"failures\": [");
    for (size_t i = 0; i < failures.size(); ++i) {
        std::string f;
        for (char ch : failures[i]) f += ch == '"' ? '\'' : ch;
        std::printf("%s\"%s\"", i ? ", " : "", f.c_str());
    }
    std::printf("]}\n");
    return failures.empty() ? 0 : 1;
}
