// One frame: the DATAFLOW regions of the engine.
//
//   run_frame (DATAFLOW, once per frame)
//     weight_reader  m_axi wts -> w_beats ------------------------------+
//     stem           s_axis_in -> stem_units, in_status                 |
//     layers         for each layer: layer_region (DATAFLOW)            v
//                        fill_reader  m_axi act -> fill_units ---> core <- w_beats, stem_units
//                        fill_reader2 m_axi act2 -> fill_units2 -^
//                        core         (activation RAM, weight RAM, GAP) -> out_units, out_units2, logits
//                        ddr_writer   out_units -> m_axi act
//                        ddr_writer2  out_units2 -> m_axi wts (its write channel)
//     output         in_status, logits -> m_axis_out
//
// The weight reader and the stem run ahead across the layers, throttled only by their FIFOs
// and the core's rings (as the RTL twin's zq_wdma and zq_stem); a layer's fill reader and DDR
// writer run beside its core. A layer's region ends when its three processes end, so a layer
// reading a DDR tensor starts after the writes of the layers before it on both paths (the RTL's
// rd_wait on both write-response streams: each writer is a process of the region), and within a
// region the scratch area is read by the fill readers and written by the writers, in program order
// (the table never reads and writes one tensor in a layer). The path-2 processes of a layer that
// does not use path 2 (or of an ACT_PATHS = 1 build) return at once.
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
inline void layer_region(int li, bool load, ddr_t* act, const ddr_t* act2_rd, ddr_t* act2_wr,
                         zq::stream<wbeat_t, W_FIFO>& wq, zq::stream<unit_t, STEM_FIFO>& sq,
                         zq::stream<logit_t, LOGIT_FIFO>& lq) {
#pragma HLS INLINE off
#pragma HLS DATAFLOW
    zq::stream<unit_t, FILL_FIFO> fq("fill_units");
    zq::stream<unit_t, FILL_FIFO> fq2("fill_units2");
    zq::stream<unit_t, OUT_FIFO> oq("out_units");
    zq::stream<unit_t, OUT_FIFO> oq2("out_units2");
#pragma HLS BIND_STORAGE variable=fq type=fifo impl=srl
#pragma HLS BIND_STORAGE variable=fq2 type=fifo impl=srl
#pragma HLS BIND_STORAGE variable=oq type=fifo impl=srl
#pragma HLS BIND_STORAGE variable=oq2 type=fifo impl=srl
    ZQ_DATAFLOW_BEGIN
    ZQ_PROCESS("fill_reader", fill_reader(li, 0, act, fq));
    ZQ_PROCESS("fill_reader2", fill_reader(li, 1, act2_rd, fq2));
    ZQ_PROCESS("core", core(li, load, wq, sq, fq, fq2, oq, oq2, lq));
    ZQ_PROCESS("ddr_writer", ddr_writer(li, 0, act, oq));
    ZQ_PROCESS("ddr_writer2", ddr_writer(li, 1, act2_wr, oq2));
    ZQ_DATAFLOW_END
}

// The process that runs the layers one region after the other.
inline void layers(ddr_t* act, const ddr_t* act2_rd, ddr_t* act2_wr, bool load, zq::stream<wbeat_t, W_FIFO>& wq,
                   zq::stream<unit_t, STEM_FIFO>& sq, zq::stream<logit_t, LOGIT_FIFO>& lq) {
#pragma HLS INLINE off
LAYERS:
    for (int li = 0; li < P::N_LAYERS; li++) {
        // one region after the other, never overlapped: a pipelined caller could restart a
        // dataflow region before its processes end (UG1399)
#pragma HLS PIPELINE off
#if !ZQ_HLS_STREAMS
        const long long t0 = zq_csim::cycle();
#endif
        layer_region(li, load, act, act2_rd, act2_wr, wq, sq, lq);
#if !ZQ_HLS_STREAMS
        ZQ_COUNT_SET(C_SPAN, li, zq_csim::cycle() - t0, t0);
#endif
    }
}

// A frame whose weight image header is this engine's. load: stream the weight image into the
// weight RAM (every frame of a ring build; a cache build's frames that find its cache empty).
// flags, n_out: the frame's status flags and the frames answered.
// act: the scratch area on path 1; act2_rd, act2_wr: on path 2 (through m_axi act2 and wts).
inline void run_frame(hls::stream<zq_axis_in>& s_in, hls::stream<zq_axis_out>& m_out, const ddr_t* wts, ddr_t* act,
                      const ddr_t* act2_rd, ddr_t* act2_wr, bool load, ap_uint<8>& flags, int& n_out) {
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
    ZQ_PROCESS("layers", layers(act, act2_rd, act2_wr, load, wq, sq, lq));
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
