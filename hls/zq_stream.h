// Streams and DATAFLOW regions: Vitis's own under Vitis, the project's C simulation otherwise.
//
//   zq::stream<T, DEPTH> s("name");   a FIFO channel of DEPTH items
//   ZQ_DATAFLOW_BEGIN                  opens a region (after #pragma HLS DATAFLOW)
//   ZQ_PROCESS("name", call(args));    one process of the region, in program order
//   ZQ_DATAFLOW_END                    runs the region's processes to their ends
//   ZQ_TICK();                         end of one iteration of a pipelined loop
//   ZQ_IDLE(why, &s1, &s2, ...);       this iteration of a free-running loop changed nothing: it
//                                      waits for one of these streams; why() says for what
//   ZQ_PIPE(Op, pipe);                 a pipelined loop's hazard pipe (csim/zq_hazard.h), in
//   ZQ_STORE(pipe, dst, v);            a store to a RAM, or a slot release: dst = v
//   ZQ_PASS(pipe, op)                  the step its datapath executes this iteration: op
//   ZQ_END_ITERATION(pipe);            its stores due land
//
// Under synthesis (and in Vitis's C simulation, -DZQ_VITIS, which run_hls.tcl sets) this
// is exactly the canonical dataflow form of UG1399: hls::stream<T, DEPTH> channels and one
// function call per process, nothing else; ZQ_TICK and ZQ_IDLE vanish, ZQ_STORE is the
// assignment and ZQ_PASS the step itself. Elsewhere (g++ with
// the open ap_types headers) the streams are zq_csim::stream (declared depth, blocking when
// full) and the processes run concurrently under zq_csim (threads, lockstep or sequential),
// with the deadlock watchdog: see hls/csim/zq_csim.h.
#ifndef ZQ_STREAM_H
#define ZQ_STREAM_H

#if defined(__SYNTHESIS__) || defined(ZQ_VITIS)
#define ZQ_HLS_STREAMS 1
#else
#define ZQ_HLS_STREAMS 0
#endif

#if ZQ_HLS_STREAMS
#include <hls_stream.h>

namespace zq {
template <typename T, int DEPTH>
using stream = hls::stream<T, DEPTH>;
}  // namespace zq

#define ZQ_DATAFLOW_BEGIN
#define ZQ_PROCESS(name, call) call
#define ZQ_DATAFLOW_END
#define ZQ_TICK() \
    do {          \
    } while (0)
#define ZQ_IDLE(why, ...) \
    do {                  \
    } while (0)
namespace zq {
struct NoPipe {};  // no hazard pipe under Vitis: ZQ_STORE and ZQ_PASS are the plain store and step
}  // namespace zq
#define ZQ_PIPE(Op, pipe) zq::NoPipe pipe
#define ZQ_STORE(pipe, dst, v) ((dst) = (v))
#define ZQ_PASS(pipe, op) (op)
#define ZQ_END_ITERATION(pipe) \
    do {                       \
    } while (0)

#else  // the project's C simulation
#include <hls_stream.h>  // hls::stream for the top-level AXI4-Stream ports (the testbench's side)

#include "csim/zq_csim.h"
#include "csim/zq_hazard.h"

namespace zq {
template <typename T, int DEPTH>
using stream = zq_csim::stream<T, DEPTH>;
}  // namespace zq

#define ZQ_DATAFLOW_BEGIN zq_csim::Region zq_region_;
#define ZQ_PROCESS(name, call) zq_region_.add(name, [&]() { call; })
#define ZQ_DATAFLOW_END zq_region_.run();
#define ZQ_TICK() zq_csim::tick()
#define ZQ_IDLE(why, ...) zq_csim::idle({__VA_ARGS__}, why)
#define ZQ_PIPE(Op, pipe) zq_csim::HazardPipe<Op> pipe
#define ZQ_STORE(pipe, dst, v) (pipe).store((dst), (v))
#define ZQ_PASS(pipe, op) (pipe).pass(op)
#define ZQ_END_ITERATION(pipe) (pipe).end_iteration()
#endif

#endif  // ZQ_STREAM_H
