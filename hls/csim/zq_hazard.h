// The pipeline-hazard C simulation of a pipelined loop (never compiled by Vitis).
//
// The C code of a pipelined loop does an iteration's reads and stores in program order, each
// iteration before the next. Vitis spreads an iteration over the stages of its pipeline, so that
// a store may land several iterations after a later iteration's read of the same word (a
// read-after-write hazard), or a read several iterations after a later iteration's store (a
// write-after-read hazard). Where the code declares a RAM free of inter-iteration dependences
// (DEPENDENCE inter false), only its own guards keep these apart. This pipe replays the loop with
// the stages pulled apart by `delay` iterations (zq_csim::set_hazard), so that a guard too short
// for a pipeline of that depth shows as wrong results:
//
//   HAZARD_LATE_STORES: store(dst, v) assigns `delay` iterations late (at the end of iteration
//       i + delay; visible from iteration i + delay + 1); the loop passes every store to a RAM
//       and every slot release through it (a release landing late only holds back the producers);
//   HAZARD_LATE_READS: pass(op) hands the datapath the step issued `delay` iterations earlier,
//       so its reads (and all that follows from them: results, their stores) come late while the
//       producers' stores issued from the loop's control do not;
//   otherwise both are the identity.
//
// pending() tells the loop, after its exit, that stores or steps are still in flight: it runs its
// datapath on no step until they have landed (the pipeline's drain, hls/zq_core.h). The engine uses
// the pipe through the ZQ_PIPE / ZQ_STORE / ZQ_PASS / ZQ_END_ITERATION macros of hls/zq_stream.h,
// which are the plain store and the step itself under Vitis.
#ifndef ZQ_HAZARD_H
#define ZQ_HAZARD_H

#if defined(__SYNTHESIS__)
#error "zq_hazard.h is the C-simulation model: never include it under synthesis"
#endif

#include <deque>
#include <functional>

#include "zq_csim.h"

namespace zq_csim {

// Op: the loop's step as its control issues it to the datapath; Op() is no step, op.any() tells.
template <typename Op>
class HazardPipe {
   public:
    HazardPipe() : mode_(hazard()), delay_(hazard_delay()) {}
    HazardPipe(const HazardPipe&) = delete;
    HazardPipe& operator=(const HazardPipe&) = delete;

    template <typename T, typename V>
    void store(T& dst, const V& v) {
        if (mode_ == HAZARD_LATE_STORES) {
            const T val = v;
            stores_.push_back(Deferred{now_ + delay_, [&dst, val]() { dst = val; }});
        } else {
            dst = v;
        }
    }
    const Op& pass(const Op& op) {
        if (mode_ != HAZARD_LATE_READS) return op;
        ops_.push_back(op);
        out_ = Op();  // nothing while the pipeline fills
        if ((int)ops_.size() > delay_) {
            out_ = ops_.front();
            ops_.pop_front();
        }
        return out_;
    }
    // The iteration ends: the stores due land.
    void end_iteration() {
        while (!stores_.empty() && stores_.front().due <= now_) {
            stores_.front().apply();
            stores_.pop_front();
        }
        ++now_;
    }
    // Stores or steps still in flight.
    bool pending() const {
        if (!stores_.empty()) return true;
        for (const Op& o : ops_)
            if (o.any()) return true;
        return false;
    }

   private:
    struct Deferred {
        long long due;
        std::function<void()> apply;
    };
    Hazard mode_;
    int delay_;
    long long now_ = 0;
    std::deque<Deferred> stores_;
    std::deque<Op> ops_;
    Op out_;
};

}  // namespace zq_csim

#endif  // ZQ_HAZARD_H
