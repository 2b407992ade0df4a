// The project's C simulation of a Vitis HLS dataflow design (never compiled by Vitis).
//
// hls4ml's hls_stream.h (and Vitis's own C simulation) run the processes of a
// DATAFLOW region one after the other over streams that never fill, so a design
// that deadlocks in hardware passes there. Here:
//
// * every stream has its declared depth and blocks when full (and when empty);
// * the processes of a region run concurrently, in one of three modes:
//     lockstep  - the processes stepped in turn, one loop iteration per process and
//                 clock cycle (coroutines on one thread; the default): deterministic; a
//                 stream write is visible to its reader in the next cycle, a read frees its
//                 slot in the next cycle; each process's iterations and stall cycles are
//                 counted;
//     threads   - each process in its own thread;
//     sequential- Vitis's own C-simulation semantics (in program order, unbounded
//                 streams): what `csim_design` does, for comparison;
// * a deadlock (every live process blocked on a stream, idle, or waiting for its
//   sub-region) fails the run with zq_csim::Deadlock, whose message names each
//   process and the stream it is blocked on (name, full or empty, depth).
//
// The engine uses this through hls/zq_stream.h, which selects hls::stream and plain
// sequential calls under Vitis (synthesis, or -DZQ_VITIS) and this otherwise.
#ifndef ZQ_CSIM_H
#define ZQ_CSIM_H

#if defined(__SYNTHESIS__)
#error "zq_csim.h is the C-simulation model: never include it under synthesis"
#endif

#include <atomic>
#include <deque>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

namespace zq_csim {

enum Mode { MODE_THREADS = 0, MODE_LOCKSTEP = 1, MODE_SEQUENTIAL = 2 };

// The mode of the regions run from now on (not while one runs); initially $ZQ_CSIM_MODE
// (threads, lockstep or sequential), else lockstep.
void set_mode(Mode m);
Mode mode();
const char* mode_name(Mode m);

// A stream constructed with this name gets `depth` instead of its declared depth
// (0: the declared one again); for tests of FIFO sizing.
void set_depth_override(const char* name, int depth);
void clear_depth_overrides();

// The pipeline-hazard mode of the engine's pipelined loops (csim/zq_hazard.h), for the runs from
// now on: NONE (every store at its place in the C code); LATE_STORES (every store to a RAM and every
// slot release lands `delay` iterations late, as in a pipeline whose store stage follows its read
// stage by `delay`); LATE_READS (every read of the datapath, and all it computes, `delay` iterations
// late, as in a pipeline whose read stage follows a store stage by `delay`).
enum Hazard { HAZARD_NONE = 0, HAZARD_LATE_STORES = 1, HAZARD_LATE_READS = 2 };
void set_hazard(Hazard h, int delay);
Hazard hazard();
int hazard_delay();

// The run failed: a deadlock (the message names the blocked processes and streams).
struct Deadlock : std::runtime_error {
    explicit Deadlock(const std::string& what) : std::runtime_error(what) {}
};
// Thrown inside the processes of a run that failed elsewhere, to unwind them.
struct Aborted {};

class StreamBase;

// ---- hooks for the processes -------------------------------------------------------
// The end of one iteration of a pipelined loop (lockstep: the process's next clock cycle).
void tick();
// This iteration changed nothing (a free-running loop waiting for its inputs): in threads
// mode the process sleeps until one of `deps` changes; in lockstep it is a stall cycle;
// `why()` describes the wait for the deadlock report (called only for a report, while the
// caller waits in idle(): no copy of it is made).
typedef std::string (*WhyFn)(const void*);
void idle_impl(std::initializer_list<const StreamBase*> deps, WhyFn why, const void* ctx);
template <typename F>
void idle(std::initializer_list<const StreamBase*> deps, const F& why) {
    idle_impl(deps, [](const void* c) -> std::string { return (*static_cast<const F*>(c))(); }, &why);
}
// Lockstep: the current clock cycle of the run (0 when it started); -1 in other modes.
long long cycle();

// Per-process figures of the last run (lockstep: cycles; other modes: iterations only).
struct ProcStats {
    std::string name;
    long long iterations = 0;     // ticks (loop iterations)
    long long idle = 0;           // iterations that changed nothing (idle())
    long long stall_full = 0;     // cycles blocked writing a full stream (lockstep)
    long long stall_empty = 0;    // cycles blocked reading an empty stream (lockstep)
    long long stall_join = 0;     // cycles waiting for its sub-region (lockstep)
    long long start = -1, end = -1;  // cycles of its first and last activity (lockstep)
};
// The processes of the runs since the last clear (one entry per process name: summed).
std::vector<ProcStats> process_stats();
// Streams of the runs since the last clear (name, depth, items, most items held at once).
struct StreamStats {
    std::string name;
    int depth = 0;
    long long items = 0, max_held = 0;
};
std::vector<StreamStats> stream_stats();
void clear_stats();
// Lockstep: cycles of the last top-level run (0 in other modes).
long long last_run_cycles();

// ---- regions ---------------------------------------------------------------------------
// The processes of one DATAFLOW region: add() each (in program order), then run().
class Region {
   public:
    Region() = default;
    Region(const Region&) = delete;
    Region& operator=(const Region&) = delete;
    void add(const char* name, std::function<void()> body);
    // Runs every process to its end (concurrently, by the mode) and returns; throws
    // Deadlock when they cannot finish.
    void run();

   private:
    std::vector<std::pair<const char*, std::function<void()> > > procs_;
};

// ---- streams -------------------------------------------------------------------------------
// What the scheduler needs of a stream (untyped); stream<T, DEPTH> below holds the data.
class StreamBase {
   public:
    StreamBase(const char* name, int declared_depth);
    virtual ~StreamBase();
    StreamBase(const StreamBase&) = delete;
    StreamBase& operator=(const StreamBase&) = delete;

    const char* name() const { return name_.c_str(); }
    int depth() const { return depth_; }
    // items a reader may take now / slots a writer may fill now (lockstep: as of the cycle's start)
    long long readable() const;
    long long writable() const;
    long long written() const { return tail_.load(std::memory_order_acquire); }
    long long taken() const { return head_.load(std::memory_order_acquire); }
    void commit();  // lockstep: the cycle ends

   protected:
    void wait_read();    // until readable() > 0
    void wait_write();   // until writable() > 0
    void did_write();
    void did_read();
    size_t slot(long long i) const { return (size_t)(i % cap_); }

    std::string name_;
    int depth_;
    Mode mode_;
    size_t cap_;                           // ring slots (threads, lockstep); grows in sequential mode
    std::atomic<long long> head_{0};       // items read
    std::atomic<long long> tail_{0};       // items written
    long long head_c_ = 0, tail_c_ = 0;    // lockstep: as of the current cycle's start
    bool dirty_ = false;
    long long max_held_ = 0;

    friend struct Sched;
};

template <typename T, int DEPTH = 2>
class stream : public StreamBase {
   public:
    explicit stream(const char* name = "stream") : StreamBase(name, DEPTH) { buf_.resize(cap_); }

    bool empty() const { return readable() <= 0; }
    bool full() const { return writable() <= 0; }
    void write(const T& v) {
        wait_write();
        put(v);
    }
    T read() {
        wait_read();
        return take();
    }
    bool write_nb(const T& v) {
        if (writable() <= 0) return false;
        put(v);
        return true;
    }
    bool read_nb(T& v) {
        if (readable() <= 0) return false;
        v = take();
        return true;
    }
    void operator<<(const T& v) { write(v); }
    void operator>>(T& v) { v = read(); }

   private:
    void put(const T& v) {
        const long long t = tail_.load(std::memory_order_relaxed);
        if (mode_ == MODE_SEQUENTIAL && (size_t)(t - head_.load(std::memory_order_relaxed)) >= cap_) grow();
        buf_[slot(t)] = v;
        did_write();
    }
    T take() {
        const T v = buf_[slot(head_.load(std::memory_order_relaxed))];
        did_read();
        return v;
    }
    void grow() {  // sequential mode only (one thread): double the ring, keeping the order
        std::vector<T> nb(2 * cap_);
        const long long h = head_.load(), t = tail_.load();
        for (long long i = h; i < t; i++) nb[(size_t)(i % (long long)(2 * cap_))] = buf_[slot(i)];
        buf_.swap(nb);
        cap_ *= 2;
    }
    std::vector<T> buf_;
};

}  // namespace zq_csim

#endif  // ZQ_CSIM_H
