// lfsr.h: the seeded pseudo-random gate of the harness (stream gaps, backpressure,
// AXI4 ready/valid gaps): a 32-bit xorshift register (a linear feedback shift
// register over GF(2), period 2^32 - 1). Deterministic for a given seed.
#pragma once
#include <cstdint>

namespace zq {

class Lfsr {
public:
    explicit Lfsr(uint32_t seed = 1) : s_(seed ? seed : 0x2545F491u) {}
    uint32_t next() {
        s_ ^= s_ << 13;
        s_ ^= s_ >> 17;
        s_ ^= s_ << 5;
        return s_;
    }
    // true with probability p16 / 65536 (p16 = 0: never, and the register does not advance)
    bool stall(uint32_t p16) { return p16 != 0 && (next() >> 16) < p16; }
    // true with probability p32 / 2^32 (for small probabilities; p32 = 0: never, no advance)
    bool chance32(uint32_t p32) { return p32 != 0 && next() < p32; }

private:
    uint32_t s_;
};

}  // namespace zq
