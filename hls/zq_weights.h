// The weight image in DDR (m_axi `wts`): its header check, and the weight reader process.
//
// The image (weights.bin) is a header (spec HEADER: magic, spec version, network ID, word
// size, word count, header size) and then the words in consumption order. Every frame checks
// the header before any compute. The reader streams the words, one 64-bit beat per cycle, in
// one burst loop over the whole image (a base pointer and the loop index: one burst of
// IMAGE_BEATS beats, which Vitis splits into 16-beat AXI bursts with up to 8 outstanding);
// the weight FIFO's backpressure is the ring's flow control (the core takes a beat only when
// its word's ring slot is free). With the weight cache the words are streamed only on a
// frame that loads the cache.
#ifndef ZQ_WEIGHTS_H
#define ZQ_WEIGHTS_H

#include "zq_count.h"
#include "zq_stream.h"
#include "zq_types.h"

namespace zq {

// Field f of the specification's HEADER (32-bit fields): beat f / 2, low or high half.
inline unsigned header_field(const ddr_t h[S::HDR_WORDS / 2], int f) {
#pragma HLS INLINE
    return (f & 1) ? h[f / 2].range(63, 32).to_uint() : h[f / 2].range(31, 0).to_uint();
}

// The weight image header at wts (spec HEADER): true when it is this engine's.
inline bool header_ok(const ddr_t* wts) {
    ddr_t h[S::HDR_WORDS / 2];  // two 32-bit header fields per 64-bit beat
#pragma HLS ARRAY_PARTITION variable=h complete
    ZQ_COUNT_ENTRY(C_HEADER, FRAME_ROW);
HEADER:
    for (int i = 0; i < S::HDR_WORDS / 2; i++) {
#pragma HLS PIPELINE II=1
        ZQ_COUNT(C_HEADER, FRAME_ROW);
        h[i] = wts[i];
    }
    return header_field(h, S::HDR_MAGIC) == S::HEADER_MAGIC &&
           header_field(h, S::HDR_SPEC_VERSION) == (unsigned)S::SPEC_VERSION &&
           header_field(h, S::HDR_NET_ID) == P::NET_ID &&
           header_field(h, S::HDR_WORD_BYTES) == (unsigned)WORD_BYTES &&
           header_field(h, S::HDR_N_WORDS) == (unsigned)P::IMAGE_WORDS &&
           header_field(h, S::HDR_HEADER_BYTES) == (unsigned)P::HEADER_BYTES;
}

// The process: every word of the image after the header, beat by beat (`load`: this frame
// streams the image; a frame of a weight-cache build whose cache holds it streams nothing).
inline void weight_reader(const ddr_t* wts, bool load, zq::stream<wbeat_t, W_FIFO>& out) {
#pragma HLS INLINE off
    if (!load) return;
    const ddr_t* words = wts + HDR_BEATS;  // base pointer of the words; the loop index walks them
    ZQ_COUNT_ENTRY(C_WLOAD, FRAME_ROW);
WLOAD:
    for (int i = 0; i < IMAGE_BEATS; i++) {
#pragma HLS PIPELINE II=1
        ZQ_COUNT(C_WLOAD, FRAME_ROW);
        out.write(to_wbeat(words[i]));
        ZQ_TICK();
    }
}

}  // namespace zq

#endif  // ZQ_WEIGHTS_H
