// One frame: the DATAFLOW regions of the engine.
//
//   run_frame (DATAFLOW, once per frame)
//     weight_reader  m_axi wts -> w_beats ------------------------------+
//     stem           s_axis_in -> stem_units, in_status                 |
//     layers         for each layer: layer_region (DATAFLOW)            v
//                        fill_reader  m_axi act -> fill_units -> core <- w_beats, stem_units
//                        core         (activation RAM, weight RAM, GAP) -> out_units, logits
//                        ddr_writer   out_units -> m_axi act
//     output         in_status, logits -> m_axis_out
//
// The weight reader and the stem run ahead across the layers, throttled only by their FIFOs
// and the core's rings (as the RTL twin's zq_wdma and zq_stem); a layer's fill reader and DDR
// writer run beside its core. A layer's region ends when its three processes end, so a layer
// reading a DDR tensor starts after the writes of the layers before it (the RTL's rd_wait),
// and within a region `act` is read by one process and written by another, in program order
// (the table never reads and writes one tensor in a layer).
#ifndef ZQ_FRAME_H
#define ZQ_FRAME_H

#include <hls_stream.h>

#include "zq_axis.h"
#include "zq_core.h"
#include "zq_ddr.h"
#include "zq_framing.h"
#include "zq_layer.h"
#include "zq_output.h"
#include "zq_stem.h"
#include "zq_stream.h"
#include "zq_types.h"
#include "zq_weights.h"

namespace zq {

// One layer: the DDR fill, the core and the DDR writer side by side.
inline void layer_region(int li, bool load, ddr_t* act, zq::stream<wbeat_t, W_FIFO>& wq,
                         zq::stream<unit_t, STEM_FIFO>& sq, zq::stream<logit_t, LOGIT_FIFO>& lq) {
#pragma HLS INLINE off
#pragma HLS DATAFLOW
    zq::stream<unit_t, FILL_FIFO> fq("fill_units");
    zq::stream<unit_t, OUT_FIFO> oq("out_units");
#pragma HLS BIND_STORAGE variable=fq type=fifo impl=srl
#pragma HLS BIND_STORAGE variable=oq type=fifo impl=srl
    ZQ_DATAFLOW_BEGIN
    ZQ_PROCESS("fill_reader", fill_reader(li, act, fq));
    ZQ_PROCESS("core", core(li, load, wq, sq, fq, oq, lq));
    ZQ_PROCESS("ddr_writer", ddr_writer(li, act, oq));
    ZQ_DATAFLOW_END
}

// The process that runs the layers one region after the other.
inline void layers(ddr_t* act, bool load, zq::stream<wbeat_t, W_FIFO>& wq, zq::stream<unit_t, STEM_FIFO>& sq,
                   zq::stream<logit_t, LOGIT_FIFO>& lq) {
#pragma HLS INLINE off
LAYERS:
    for (int li = 0; li < P::N_LAYERS; li++) {
        // one region after the other, never overlapped: a pipelined caller could restart a
        // dataflow region before its processes end (UG1399)
#pragma HLS PIPELINE off
#if !ZQ_HLS_STREAMS
        const long long t0 = zq_csim::cycle();
#endif
        layer_region(li, load, act, wq, sq, lq);
#if !ZQ_HLS_STREAMS
        ZQ_COUNT_SET(C_SPAN, li, zq_csim::cycle() - t0, t0);
#endif
    }
}

// A frame whose weight image header is this engine's. load: stream the weight image into the
// weight RAM (every frame of a ring build; a cache build's frames that find its cache empty).
// flags, n_out: the frame's status flags and the frames answered.
inline void run_frame(hls::stream<zq_axis_in>& s_in, hls::stream<zq_axis_out>& m_out, const ddr_t* wts, ddr_t* act,
                      bool load, ap_uint<8>& flags, int& n_out) {
#pragma HLS INLINE off
#pragma HLS DATAFLOW
    zq::stream<wbeat_t, W_FIFO> wq("w_beats");
    zq::stream<unit_t, STEM_FIFO> sq("stem_units");
    zq::stream<InStatus, 2> iq("in_status");
    zq::stream<logit_t, LOGIT_FIFO> lq("logits");
#pragma HLS BIND_STORAGE variable=wq type=fifo impl=srl
#pragma HLS BIND_STORAGE variable=sq type=fifo impl=srl
#pragma HLS BIND_STORAGE variable=iq type=fifo impl=srl
#pragma HLS BIND_STORAGE variable=lq type=fifo impl=srl
    ZQ_DATAFLOW_BEGIN
    ZQ_PROCESS("weight_reader", weight_reader(wts, load, wq));
    ZQ_PROCESS("stem", stem(s_in, sq, iq));
    ZQ_PROCESS("layers", layers(act, load, wq, sq, lq));
    ZQ_PROCESS("output", output(lq, iq, m_out, flags, n_out));
    ZQ_DATAFLOW_END
}

// A frame whose weight image header is not this engine's: no compute; the frame is taken up
// to its TLAST (and drained after a long frame) and answered with error frames.
inline void reject_frame(hls::stream<zq_axis_in>& s_in, hls::stream<zq_axis_out>& m_out, int& n_out) {
    InState in;
    in_start(in);
    in_finish(s_in, in);
    n_out = 1 + (int)in.drain_frames;
    error_frames(m_out, n_out);
}

}  // namespace zq

#endif  // ZQ_FRAME_H
