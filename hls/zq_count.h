// C simulation only: counts of what each process did, per layer, for the cross-check of
// the HLS cycle model (spec/cycles_hls.py; read back through csim_lib.cpp's zq_loop_counts
// as [layer 0..N_LAYERS][counter][2]; row N_LAYERS: the frame-level processes). Built with
// -DZQ_COUNT_ITERATIONS; every macro is empty otherwise (and always under synthesis).
//
// A loop counts its entries and iterations; the core also counts its issues and the
// iterations it waited, by cause. Every counter has one writer (the process it belongs to),
// so the threads of the C simulation never share one. The order is COUNTERS in sim/csim/runner.py.
#ifndef ZQ_COUNT_H
#define ZQ_COUNT_H

#include "zq_types.h"

namespace zq {

enum Counter {
    // frame-level processes (row N_LAYERS)
    C_HEADER,       // HEADER loop (zq_top): beats read
    C_WLOAD,        // weight reader: beats streamed
    C_RAW,          // stem: RAW loop (a beat in and/or a pixel out per iteration)
    C_SCAN,         // stem: column scan
    C_STEM_WRITE,   // stem: units from the row buffer (pixels of more than one unit)
    C_REST,         // stem: the rest of the frame up to TLAST
    C_DRAIN,        // stem: beats drained after a long frame
    C_OUT,          // output: beats to m_axis_out
    // per layer
    C_FILL,         // DDR ring fill: beats read (entries: bursts)
    C_CORE,         // the core's loop: iterations (lockstep: cycles; threads: not deterministic)
    C_BIAS,         // the core: bias steps issued (one per block)
    C_MAC,          // the core: MAC steps issued
    C_WAIT_ROWS,    // the core: iterations waiting for ring rows (lockstep)
    C_WAIT_WEIGHTS, // the core: iterations waiting for weight words (lockstep)
    C_TAIL,         // the core: iterations after the last step, taking the ring's last units (lockstep)
    C_W_BEATS,      // the core: weight beats taken into the weight RAM
    C_UNITS,        // the core: ring units taken into the activation RAM
    C_PORT_BUSY,    // the core: a ring unit waited because a result took the RAM's write port
    C_RESULTS,      // the core: output pixels written (activation RAM, DDR units or GAP sums)
    C_DDR_WRITE,    // DDR writer: beats written (entries: bursts)
    C_LOGITS,       // the core: logits sent (last layer)
    C_SPAN,         // lockstep: cycles of the layer's region [cycles, first cycle] (frame row: the frame)
    C_N
};

#if defined(ZQ_COUNT_ITERATIONS) && !defined(__SYNTHESIS__)
struct Counts {
    long long n[P::N_LAYERS + 1][C_N][2];  // [layer][counter]: iterations (or the count), entries
};
// internal linkage (not a static in an inline function, which g++ makes one object per
// process: every network's library loaded in one process would share it)
static Counts g_counts;
#define ZQ_COUNT(c, layer) (::zq::g_counts.n[(layer)][::zq::c][0]++)
#define ZQ_COUNT_ADD(c, layer, v) (::zq::g_counts.n[(layer)][::zq::c][0] += (v))
#define ZQ_COUNT_ENTRY(c, layer) (::zq::g_counts.n[(layer)][::zq::c][1]++)
#define ZQ_COUNT_SET(c, layer, v0, v1) \
    (::zq::g_counts.n[(layer)][::zq::c][0] = (v0), ::zq::g_counts.n[(layer)][::zq::c][1] = (v1))
#else
#define ZQ_COUNT(c, layer) \
    do {                   \
    } while (0)
#define ZQ_COUNT_ADD(c, layer, v) \
    do {                          \
    } while (0)
#define ZQ_COUNT_ENTRY(c, layer) \
    do {                         \
    } while (0)
#define ZQ_COUNT_SET(c, layer, v0, v1) \
    do {                               \
    } while (0)
#endif

constexpr int FRAME_ROW = P::N_LAYERS;  // the frame-level processes' row

}  // namespace zq

#endif  // ZQ_COUNT_H
