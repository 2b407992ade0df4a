// The C-simulation scheduler of zq_csim.h: threads, lockstep (coroutines) and
// sequential modes, stream blocking, the deadlock watchdog and the figures.
//
// All state is file-local (one copy per linked library: the ctypes libraries of
// several networks may be loaded in one process).
#include "zq_csim.h"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <stdint.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <thread>

// ---- coroutine context switch -------------------------------------------------------------
// x86-64 (System V): save the callee-saved registers on the current stack, swap stack pointers,
// restore them from the other stack (a few ns; ucontext's swapcontext also saves the signal mask
// with a system call, ~20x slower). Elsewhere: ucontext.
#if defined(__x86_64__) && !defined(ZQ_CSIM_UCONTEXT)
#define ZQ_CSIM_ASM_SWITCH 1
extern "C" void zq_csim_switch(void** save_sp, void* load_sp);
asm(R"(
    .text
    .p2align 4
    .type zq_csim_switch,@function
zq_csim_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size zq_csim_switch, .-zq_csim_switch
)");
#else
#define ZQ_CSIM_ASM_SWITCH 0
#endif

namespace zq_csim {

namespace {

// ---- process records ---------------------------------------------------------------------
enum WaitKind { W_NONE, W_READ, W_WRITE, W_IDLE, W_JOIN };

struct Snap {
    const StreamBase* s;
    long long head, tail;
};

struct Proc {
    std::string name;
    std::function<void()> body;
    Proc* parent = nullptr;
    std::atomic<int> children_left{0};
    std::vector<Proc*> children;
    // what it waits for
    WaitKind wait = W_NONE;
    const StreamBase* ws = nullptr;
    std::vector<Snap> snaps;
    WhyFn why = nullptr;
    const void* why_ctx = nullptr;
    bool finished = false;
    std::exception_ptr error;
    ProcStats st;
    // lockstep
#if ZQ_CSIM_ASM_SWITCH
    void* sp = nullptr;
#else
    ucontext_t ctx;
#endif
    void* stack = nullptr;
    bool ticked = false, was_idle = false;
    bool idle_armed = false;  // threads: an idle iteration took the snapshot
};

// ---- global state ----------------------------------------------------------------------------
Mode mode_from_env() {  // ZQ_CSIM_MODE=threads|lockstep|sequential sets the initial mode (default lockstep)
    const char* v = getenv("ZQ_CSIM_MODE");
    if (!v) return MODE_LOCKSTEP;
    const std::string m(v);
    return m == "threads" ? MODE_THREADS : m == "sequential" ? MODE_SEQUENTIAL : MODE_LOCKSTEP;
}
Mode g_mode = mode_from_env();
std::mutex g_cfg_mutex;
std::map<std::string, int> g_depth_override;
std::map<std::string, ProcStats> g_proc_stats;
std::map<std::string, StreamStats> g_stream_stats;
std::vector<std::string> g_proc_order, g_stream_order;
long long g_last_run_cycles = 0;

// threads mode
std::mutex g_m;
std::condition_variable g_cv;
std::atomic<int> g_sleeping{0};
std::vector<Proc*> g_live;           // processes running (under g_m)
std::atomic<bool> g_aborted{false};  // a deadlock or an error: every process unwinds
std::string g_report;                // what failed
thread_local Proc* t_self = nullptr;

// lockstep mode
#if ZQ_CSIM_ASM_SWITCH
void* g_main_sp = nullptr;
#else
ucontext_t g_main_ctx;
#endif
std::vector<Proc*> g_cos;            // live coroutines, in creation order
Proc* g_cur = nullptr;               // the coroutine running
long long g_cycle = 0;
std::vector<StreamBase*> g_dirty;    // streams with operations this cycle
std::vector<Proc*> g_finished_now;   // coroutines that finished this cycle
bool g_co_aborting = false;
bool g_progress = false;
std::vector<void*> g_free_stacks;
constexpr size_t STACK_BYTES = 8u << 20;

// sequential mode
Proc* g_seq_cur = nullptr;

Proc* self() {
    if (g_mode == MODE_LOCKSTEP) return g_cur;
    if (g_mode == MODE_SEQUENTIAL) return g_seq_cur;
    return t_self;
}

void record_proc(const Proc& p) {
    std::lock_guard<std::mutex> lk(g_cfg_mutex);
    auto it = g_proc_stats.find(p.name);
    if (it == g_proc_stats.end()) {
        g_proc_order.push_back(p.name);
        ProcStats s = p.st;
        s.name = p.name;
        g_proc_stats[p.name] = s;
        return;
    }
    ProcStats& s = it->second;
    s.iterations += p.st.iterations;
    s.idle += p.st.idle;
    s.stall_full += p.st.stall_full;
    s.stall_empty += p.st.stall_empty;
    s.stall_join += p.st.stall_join;
    if (p.st.start >= 0 && (s.start < 0 || p.st.start < s.start)) s.start = p.st.start;
    if (p.st.end > s.end) s.end = p.st.end;
}

std::string describe(const Proc* p) {
    std::ostringstream o;
    o << "  process '" << p->name << "': ";
    switch (p->wait) {
        case W_READ:
            o << "blocked reading stream '" << p->ws->name() << "' (empty; depth " << p->ws->depth() << ", "
              << p->ws->written() << " items written, " << p->ws->taken() << " read)";
            break;
        case W_WRITE:
            o << "blocked writing stream '" << p->ws->name() << "' (full: " << p->ws->written() - p->ws->taken()
              << " of depth " << p->ws->depth() << ")";
            break;
        case W_IDLE: {
            o << "idle, " << (p->why ? p->why(p->why_ctx) : std::string("waiting")) << " (no change on";
            for (const Snap& s : p->snaps)
                o << " '" << s.s->name() << "' [" << s.s->written() - s.s->taken() << "/" << s.s->depth() << "]";
            o << ")";
            break;
        }
        case W_JOIN: {
            o << "waits for its dataflow region (";
            for (size_t i = 0; i < p->children.size(); i++) o << (i ? ", " : "") << p->children[i]->name;
            o << ")";
            break;
        }
        default:
            o << "running";
    }
    return o.str();
}

bool snaps_changed(const Proc* p) {
    for (const Snap& s : p->snaps)
        if (s.s->taken() != s.head || s.s->written() != s.tail) return true;
    return false;
}

// ---- threads mode ----------------------------------------------------------------------------
bool pred_threads(const Proc* p) {
    switch (p->wait) {
        case W_READ: return p->ws->readable() > 0;
        case W_WRITE: return p->ws->writable() > 0;
        case W_IDLE: return snaps_changed(p);
        case W_JOIN: return p->children_left == 0;
        default: return true;
    }
}

// Under g_m: every live process asleep and none of them able to go on: a deadlock.
void check_deadlock_locked() {
    if (g_aborted || g_live.empty() || g_sleeping.load() < (int)g_live.size()) return;
    for (const Proc* p : g_live) {
        if (p->wait == W_NONE) return;  // it is on its way to sleep, or running
        if (pred_threads(p)) {          // it can go on: wake it (writers are woken lazily, below)
            g_cv.notify_all();
            return;
        }
    }
    std::ostringstream o;
    o << "deadlock in the C simulation (threads mode): every process is blocked\n";
    for (const Proc* p : g_live) o << describe(p) << "\n";
    g_report = o.str();
    g_aborted = true;
    g_cv.notify_all();
}

void notify_threads() {
    if (g_sleeping.load(std::memory_order_seq_cst) > 0) {
        std::lock_guard<std::mutex> lk(g_m);
        g_cv.notify_all();
    }
}

double env_seconds(const char* var, double dflt) {
    const char* v = getenv(var);
    return v && *v ? atof(v) : dflt;
}

// Block the calling thread's process until its predicate holds (or the run aborts).
void sleep_threads(Proc* p) {
    const int spin = p->wait == W_JOIN ? 0 : 200;  // spin a little first: the partner may be an item away
    for (int k = 0; k < spin; k++) {
        if (pred_threads(p)) return;
        if (g_aborted.load()) throw Aborted();
#if defined(__x86_64__)
        __builtin_ia32_pause();
#endif
    }
    // threads mode: the stall figures count the sleeps
    if (p->wait == W_READ) p->st.stall_empty++;
    else if (p->wait == W_WRITE) p->st.stall_full++;
    else if (p->wait == W_JOIN) p->st.stall_join++;
    std::unique_lock<std::mutex> lk(g_m);
    g_sleeping.fetch_add(1, std::memory_order_seq_cst);
    const double limit = env_seconds("ZQ_CSIM_TIMEOUT_S", 600.0);
    auto last = std::chrono::steady_clock::now();
    while (!g_aborted && !pred_threads(p)) {
        check_deadlock_locked();
        if (g_aborted) break;
        if (g_cv.wait_for(lk, std::chrono::milliseconds(500)) == std::cv_status::timeout) {
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - last).count();
            if (s > limit) {  // the backstop: no wake-up for too long
                std::ostringstream o;
                o << "C simulation watchdog: no progress for " << (int)s << " s (ZQ_CSIM_TIMEOUT_S)\n";
                for (const Proc* q : g_live) o << describe(q) << "\n";
                g_report = o.str();
                g_aborted = true;
                g_cv.notify_all();
            }
        } else {
            last = std::chrono::steady_clock::now();
        }
    }
    g_sleeping.fetch_sub(1, std::memory_order_seq_cst);
    if (g_aborted) {
        p->wait = W_NONE;
        throw Aborted();
    }
}

// A small pool of worker threads (a thread per process and region would cost more than the
// layers it runs).
class Pool {
   public:
    void submit(std::function<void()> job) {
        std::unique_lock<std::mutex> lk(m_);
        jobs_.push_back(std::move(job));
        if ((int)jobs_.size() > idle_) {  // every pending job needs a worker of its own
            workers_.emplace_back([this] { loop(); });
            workers_.back().detach();
        } else {
            cv_.notify_one();
        }
    }

   private:
    void loop() {
        std::unique_lock<std::mutex> lk(m_);
        for (;;) {
            while (jobs_.empty()) {
                idle_++;
                cv_.wait(lk);
                idle_--;
            }
            std::function<void()> job = std::move(jobs_.front());
            jobs_.pop_front();
            lk.unlock();
            job();
            lk.lock();
        }
    }
    std::mutex m_;
    std::condition_variable cv_;
    std::deque<std::function<void()> > jobs_;
    std::vector<std::thread> workers_;
    int idle_ = 0;
};

Pool* g_pool = nullptr;  // never destroyed: detached workers may outlive static destruction

// A fork while another thread is in a threads-mode run: the child gets the scheduler's locks in
// whatever state that run left them, and its processes, sleepers and workers without their threads.
// The fork waits for the locks (no thread holds them for long), and the child starts clean.
void sched_before_fork() {
    g_cfg_mutex.lock();
    g_m.lock();
}
void sched_after_fork_parent() {
    g_m.unlock();
    g_cfg_mutex.unlock();
}
void sched_after_fork_child() {
    g_pool = nullptr;  // a forked child has none of the parent's workers (the old pool is left, unused)
    g_live.clear();    // nor its running processes
    g_sleeping = 0;
    g_aborted = false;
    new (&g_cv) std::condition_variable();  // its waiters were the parent's threads: a fresh one
    g_m.unlock();
    g_cfg_mutex.unlock();
}

Pool& pool() {
    static bool once = (pthread_atfork(sched_before_fork, sched_after_fork_parent, sched_after_fork_child), true);
    (void)once;
    if (!g_pool) g_pool = new Pool();
    return *g_pool;
}

void finish_threads(Proc* p) {
    std::lock_guard<std::mutex> lk(g_m);
    p->finished = true;
    g_live.erase(std::remove(g_live.begin(), g_live.end(), p), g_live.end());
    if (p->parent) p->parent->children_left--;
    g_cv.notify_all();
    check_deadlock_locked();
}

void run_threads(std::vector<std::unique_ptr<Proc> >& procs, Proc* parent) {
    {
        std::lock_guard<std::mutex> lk(g_m);
        if (!parent) {
            g_aborted = false;
            g_report.clear();
        }
        for (auto& p : procs) {
            p->parent = parent;
            g_live.push_back(p.get());
        }
        if (parent) {
            parent->children_left = (int)procs.size();
            parent->children.clear();
            for (auto& p : procs) parent->children.push_back(p.get());
        }
    }
    int left_top = (int)procs.size();  // the top-level caller is not a process: it counts itself
    std::mutex top_m;
    std::condition_variable top_cv;
    for (auto& up : procs) {
        Proc* p = up.get();
        pool().submit([p, parent, &left_top, &top_m, &top_cv] {
            t_self = p;
            try {
                p->body();
            } catch (const Aborted&) {
            } catch (const std::exception& e) {
                p->error = std::current_exception();
                std::lock_guard<std::mutex> lk(g_m);
                if (!g_aborted) {
                    g_report = "process '" + p->name + "' failed: " + e.what();
                    g_aborted = true;
                }
                g_cv.notify_all();
            } catch (...) {
                std::lock_guard<std::mutex> lk(g_m);
                if (!g_aborted) {
                    g_report = "process '" + p->name + "' failed (unknown exception)";
                    g_aborted = true;
                }
                g_cv.notify_all();
            }
            t_self = nullptr;
            finish_threads(p);
            if (!parent) {
                std::lock_guard<std::mutex> lk(top_m);
                left_top--;
                top_cv.notify_all();
            }
        });
    }
    if (parent) {  // a process waiting for its sub-region: it sleeps like any blocked process
        parent->wait = W_JOIN;
        try {
            sleep_threads(parent);
        } catch (const Aborted&) {
            // wait for the children to unwind before the parent's frame (their streams) goes away
            std::unique_lock<std::mutex> lk(g_m);
            while (parent->children_left > 0) g_cv.wait(lk);
            parent->wait = W_NONE;
            throw;
        }
        parent->wait = W_NONE;
    } else {
        std::unique_lock<std::mutex> lk(top_m);
        while (left_top > 0) top_cv.wait(lk);
    }
    for (auto& p : procs) record_proc(*p);
    if (!parent) {
        std::lock_guard<std::mutex> lk(g_m);
        if (g_aborted) {
            g_aborted = false;
            throw Deadlock(g_report);
        }
    }
}

// ---- lockstep mode (coroutines on the calling thread) -----------------------------------
void* get_stack() {
    if (!g_free_stacks.empty()) {
        void* s = g_free_stacks.back();
        g_free_stacks.pop_back();
        return s;
    }
    void* s = mmap(nullptr, STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (s == MAP_FAILED) throw std::runtime_error("zq_csim: cannot allocate a coroutine stack");
    return s;
}

void co_entry() {
    Proc* p = g_cur;
    try {
        p->body();
    } catch (const Aborted&) {
    } catch (const std::exception& e) {
        p->error = std::current_exception();
        if (g_report.empty()) g_report = "process '" + p->name + "' failed: " + e.what();
    } catch (...) {
        p->error = std::current_exception();
        if (g_report.empty()) g_report = "process '" + p->name + "' failed (unknown exception)";
    }
    p->finished = true;
    p->wait = W_NONE;
    p->st.end = g_cycle;
    g_finished_now.push_back(p);
}

#if ZQ_CSIM_ASM_SWITCH
[[noreturn]] void co_trampoline() {
    co_entry();
    void* dead = nullptr;
    zq_csim_switch(&dead, g_main_sp);  // never resumed
    abort();
}
#endif

void co_create(Proc* p) {
    p->stack = get_stack();
#if ZQ_CSIM_ASM_SWITCH
    // the new stack as zq_csim_switch leaves one: six saved registers, then the address it
    // returns to (the trampoline, entered with rsp = 8 mod 16 as after a call)
    uintptr_t top = ((uintptr_t)p->stack + STACK_BYTES) & ~(uintptr_t)15;
    void** sp = (void**)top;
    *--sp = nullptr;                        // the trampoline's own return address (never used)
    *--sp = (void*)&co_trampoline;
    for (int i = 0; i < 6; i++) *--sp = nullptr;
    p->sp = sp;
#else
    getcontext(&p->ctx);
    p->ctx.uc_stack.ss_sp = p->stack;
    p->ctx.uc_stack.ss_size = STACK_BYTES;
    p->ctx.uc_link = &g_main_ctx;
    makecontext(&p->ctx, co_entry, 0);
#endif
    g_cos.push_back(p);
}

void co_resume(Proc* p) {
    Proc* prev = g_cur;
    g_cur = p;
    if (p->st.start < 0) p->st.start = g_cycle;
#if ZQ_CSIM_ASM_SWITCH
    zq_csim_switch(&g_main_sp, p->sp);
#else
    swapcontext(&g_main_ctx, &p->ctx);
#endif
    g_cur = prev;
}

// From inside a coroutine: back to the scheduler (the cycle goes on with the next process).
void co_yield() {
    Proc* p = g_cur;
#if ZQ_CSIM_ASM_SWITCH
    zq_csim_switch(&p->sp, g_main_sp);
#else
    swapcontext(&p->ctx, &g_main_ctx);
#endif
    if (g_co_aborting) {
        p->wait = W_NONE;
        throw Aborted();
    }
}

bool pred_lockstep(const Proc* p) {
    switch (p->wait) {
        case W_READ: return p->ws->readable() > 0;
        case W_WRITE: return p->ws->writable() > 0;
        case W_IDLE: return true;  // idle is a tick in lockstep
        case W_JOIN: return p->children_left == 0;
        default: return true;
    }
}

void co_cycle() {
    g_progress = false;
    for (size_t i = 0; i < g_cos.size(); i++) {  // coroutines started in this cycle run in it too
        Proc* p = g_cos[i];
        if (p->finished) continue;
        if (p->wait != W_NONE && !pred_lockstep(p)) {
            if (p->wait == W_READ) p->st.stall_empty++;
            else if (p->wait == W_WRITE) p->st.stall_full++;
            else if (p->wait == W_JOIN) p->st.stall_join++;
            continue;
        }
        p->wait = W_NONE;
        p->ticked = p->was_idle = false;
        co_resume(p);
        if (p->ticked && !p->was_idle) g_progress = true;
        if (p->wait == W_READ) p->st.stall_empty++;       // blocked in this cycle
        else if (p->wait == W_WRITE) p->st.stall_full++;
    }
    for (StreamBase* s : g_dirty) s->commit();
    if (!g_dirty.empty()) g_progress = true;
    g_dirty.clear();
    for (Proc* p : g_finished_now) {
        g_progress = true;
        if (p->parent) p->parent->children_left--;
    }
    g_finished_now.clear();
    g_cycle++;
}

void co_abort_all() {
    g_co_aborting = true;
    for (size_t i = g_cos.size(); i-- > 0;) {  // children (later) before their parents
        Proc* p = g_cos[i];
        if (!p->finished) co_resume(p);
    }
    g_co_aborting = false;
    g_finished_now.clear();
    g_dirty.clear();
}

void co_release(const std::vector<std::unique_ptr<Proc> >& procs) {
    for (auto& p : procs) {
        record_proc(*p);
        g_cos.erase(std::remove(g_cos.begin(), g_cos.end(), p.get()), g_cos.end());
        if (p->stack) g_free_stacks.push_back(p->stack);
        p->stack = nullptr;
    }
}

void run_lockstep(std::vector<std::unique_ptr<Proc> >& procs) {
    Proc* parent = g_cur;
    for (auto& p : procs) {
        p->parent = parent;
        co_create(p.get());
    }
    if (parent) {  // a process starting its sub-region: it waits for it (the scheduler runs them)
        parent->children_left = (int)procs.size();
        for (auto& p : procs) parent->children.push_back(p.get());
        parent->wait = W_JOIN;
        try {
            co_yield();
        } catch (const Aborted&) {
            co_release(procs);
            parent->children.clear();
            throw;
        }
        parent->children.clear();
        co_release(procs);
        return;
    }
    // the top-level region: the scheduler loop
    g_cycle = 0;
    g_report.clear();
    int idle_cycles = 0;
    for (;;) {
        bool alive = false;
        for (auto& p : procs) alive = alive || !p->finished;
        if (!alive) break;
        co_cycle();
        if (!g_report.empty()) break;  // a process failed
        idle_cycles = g_progress ? 0 : idle_cycles + 1;
        if (idle_cycles >= 2) {  // nothing changed twice over: nothing ever will
            std::ostringstream o;
            o << "deadlock in the C simulation (lockstep mode) at cycle " << g_cycle << ": no process can go on\n";
            for (const Proc* p : g_cos)
                if (!p->finished) o << describe(p) << "\n";
            g_report = o.str();
            break;
        }
    }
    g_last_run_cycles = g_cycle;
    if (!g_report.empty()) {
        co_abort_all();
        co_release(procs);
        g_cos.clear();
        const std::string r = g_report;
        g_report.clear();
        throw Deadlock(r);
    }
    co_release(procs);
}

// ---- sequential mode -----------------------------------------------------------------------
void run_sequential(std::vector<std::unique_ptr<Proc> >& procs) {
    Proc* prev = g_seq_cur;
    for (auto& p : procs) {
        g_seq_cur = p.get();
        try {
            p->body();
        } catch (...) {
            g_seq_cur = prev;
            throw;
        }
        record_proc(*p);
    }
    g_seq_cur = prev;
}

}  // namespace

// ---- public functions ----------------------------------------------------------------------
void set_mode(Mode m) { g_mode = m; }
Mode mode() { return g_mode; }
const char* mode_name(Mode m) {
    return m == MODE_THREADS ? "threads" : m == MODE_LOCKSTEP ? "lockstep" : "sequential";
}

static Hazard g_hazard = HAZARD_NONE;
static int g_hazard_delay = 0;
void set_hazard(Hazard h, int delay) {
    g_hazard = delay > 0 ? h : HAZARD_NONE;
    g_hazard_delay = delay > 0 ? delay : 0;
}
Hazard hazard() { return g_hazard; }
int hazard_delay() { return g_hazard_delay; }

void set_depth_override(const char* name, int depth) {
    std::lock_guard<std::mutex> lk(g_cfg_mutex);
    if (depth > 0) g_depth_override[name] = depth;
    else g_depth_override.erase(name);
}
void clear_depth_overrides() {
    std::lock_guard<std::mutex> lk(g_cfg_mutex);
    g_depth_override.clear();
}

std::vector<ProcStats> process_stats() {
    std::lock_guard<std::mutex> lk(g_cfg_mutex);
    std::vector<ProcStats> v;
    for (const std::string& n : g_proc_order) v.push_back(g_proc_stats[n]);
    return v;
}
std::vector<StreamStats> stream_stats() {
    std::lock_guard<std::mutex> lk(g_cfg_mutex);
    std::vector<StreamStats> v;
    for (const std::string& n : g_stream_order) v.push_back(g_stream_stats[n]);
    return v;
}
void clear_stats() {
    std::lock_guard<std::mutex> lk(g_cfg_mutex);
    g_proc_stats.clear();
    g_stream_stats.clear();
    g_proc_order.clear();
    g_stream_order.clear();
}
long long last_run_cycles() { return g_last_run_cycles; }
long long cycle() { return g_mode == MODE_LOCKSTEP ? g_cycle : -1; }

void tick() {
    Proc* p = self();
    if (!p) return;
    p->st.iterations++;
    p->idle_armed = false;
    if (g_mode == MODE_LOCKSTEP && g_cur) {
        p->ticked = true;
        co_yield();
    }
}

void idle_impl(std::initializer_list<const StreamBase*> deps, WhyFn why, const void* ctx) {
    Proc* p = self();
    if (!p) return;
    if (g_mode == MODE_SEQUENTIAL) {  // nothing else runs: nothing can ever change
        std::ostringstream o;
        o << "deadlock in the C simulation (sequential mode): process '" << p->name << "' is idle, " << why(ctx);
        throw Deadlock(o.str());
    }
    if (g_mode == MODE_LOCKSTEP) {
        p->st.idle++;
        p->st.iterations++;
        p->was_idle = p->ticked = true;
        p->why = why;
        p->why_ctx = ctx;
        p->snaps.clear();
        for (const StreamBase* s : deps) p->snaps.push_back(Snap{s, s->taken(), s->written()});
        p->wait = W_IDLE;  // for the report; the scheduler resumes it in the next cycle
        co_yield();
        p->wait = W_NONE;
        return;
    }
    // threads: the snapshot must precede the iteration's checks of the streams, so the first
    // idle iteration only takes it; a second idle iteration in a row sleeps until one changes
    p->st.idle++;
    p->st.iterations++;
    if (!p->idle_armed || snaps_changed(p)) {
        p->snaps.clear();
        for (const StreamBase* s : deps) p->snaps.push_back(Snap{s, s->taken(), s->written()});
        p->idle_armed = true;
        return;
    }
    p->why = why;
    p->why_ctx = ctx;
    p->wait = W_IDLE;
    sleep_threads(p);
    p->wait = W_NONE;
    p->idle_armed = false;
}

void Region::add(const char* name, std::function<void()> body) { procs_.emplace_back(name, std::move(body)); }

void Region::run() {
    std::vector<std::unique_ptr<Proc> > procs;
    for (auto& pr : procs_) {
        std::unique_ptr<Proc> p(new Proc());
        p->name = pr.first;
        p->body = pr.second;
        procs.push_back(std::move(p));
    }
    switch (g_mode) {
        case MODE_SEQUENTIAL: run_sequential(procs); break;
        case MODE_LOCKSTEP: run_lockstep(procs); break;
        default: run_threads(procs, t_self); break;
    }
}

// ---- streams ---------------------------------------------------------------------------------
StreamBase::StreamBase(const char* name, int declared_depth) : name_(name ? name : "stream"), mode_(g_mode) {
    int d = declared_depth < 1 ? 1 : declared_depth;
    {
        std::lock_guard<std::mutex> lk(g_cfg_mutex);
        auto it = g_depth_override.find(name_);
        if (it != g_depth_override.end()) d = it->second;
    }
    depth_ = d;
    cap_ = mode_ == MODE_SEQUENTIAL ? 64 : (size_t)d;
}

StreamBase::~StreamBase() {
    std::lock_guard<std::mutex> lk(g_cfg_mutex);
    auto it = g_stream_stats.find(name_);
    if (it == g_stream_stats.end()) {
        g_stream_order.push_back(name_);
        StreamStats s;
        s.name = name_;
        s.depth = depth_;
        s.items = tail_.load();
        s.max_held = max_held_;
        g_stream_stats[name_] = s;
    } else {
        it->second.items += tail_.load();
        it->second.max_held = std::max(it->second.max_held, max_held_);
        it->second.depth = depth_;
    }
}

long long StreamBase::readable() const {
    if (mode_ == MODE_LOCKSTEP) return tail_c_ - head_.load(std::memory_order_relaxed);
    return tail_.load(std::memory_order_acquire) - head_.load(std::memory_order_relaxed);
}

long long StreamBase::writable() const {
    if (mode_ == MODE_SEQUENTIAL) return 1;
    if (mode_ == MODE_LOCKSTEP) return depth_ - (tail_.load(std::memory_order_relaxed) - head_c_);
    return depth_ - (tail_.load(std::memory_order_relaxed) - head_.load(std::memory_order_acquire));
}

void StreamBase::commit() {
    tail_c_ = tail_.load();
    head_c_ = head_.load();
    dirty_ = false;
}

void StreamBase::wait_read() {
    if (readable() > 0) return;
    Proc* p = self();
    if (mode_ == MODE_SEQUENTIAL || !p) {
        throw Deadlock(std::string("C simulation (") + mode_name(mode_) + "): read of the empty stream '" + name_ +
                       "'" + (p ? " by process '" + p->name + "'" : std::string()) +
                       ": nothing else runs to fill it");
    }
    p->ws = this;
    p->wait = W_READ;
    if (mode_ == MODE_LOCKSTEP) {
        while (readable() <= 0) co_yield();
    } else {
        sleep_threads(p);
    }
    p->wait = W_NONE;
}

void StreamBase::wait_write() {
    if (writable() > 0) return;
    Proc* p = self();
    if (!p) throw Deadlock("C simulation: write to the full stream '" + name_ + "' outside a process");
    p->ws = this;
    p->wait = W_WRITE;
    if (mode_ == MODE_LOCKSTEP) {
        while (writable() <= 0) co_yield();
    } else {
        sleep_threads(p);
    }
    p->wait = W_NONE;
}

void StreamBase::did_write() {
    const long long t = tail_.load(std::memory_order_relaxed) + 1;
    tail_.store(t, std::memory_order_release);
    const long long held = t - head_.load(std::memory_order_relaxed);
    if (held > max_held_) max_held_ = held;
    if (mode_ == MODE_LOCKSTEP) {
        if (!dirty_) {
            dirty_ = true;
            g_dirty.push_back(this);
        }
    } else if (mode_ == MODE_THREADS) {
        // a reader blocked on an empty stream is woken when it is half full (or full), not for
        // every item; the deadlock check wakes it in any case when everything else sleeps
        if (held == (depth_ > 1 ? depth_ / 2 : 1) || held == depth_) {
            std::atomic_thread_fence(std::memory_order_seq_cst);
            notify_threads();
        }
    }
}

void StreamBase::did_read() {
    const long long h = head_.load(std::memory_order_relaxed) + 1;
    head_.store(h, std::memory_order_release);
    if (mode_ == MODE_LOCKSTEP) {
        if (!dirty_) {
            dirty_ = true;
            g_dirty.push_back(this);
        }
    } else if (mode_ == MODE_THREADS) {
        // a writer blocked on a full stream is woken when it is half empty (or empty), not for
        // every item: far fewer thread switches; the deadlock check wakes it in any case
        const long long held = tail_.load(std::memory_order_relaxed) - h;
        if (held == depth_ / 2 || held == 0) {
            std::atomic_thread_fence(std::memory_order_seq_cst);
            notify_threads();
        }
    }
}

}  // namespace zq_csim
