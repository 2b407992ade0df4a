// Exhaustive check of the packed DSP48E1 pair (hls/zq_dsp.h): for every pair of
// 8-bit weights w_hi, w_lo in [-128, 127] and every 9-bit lane value x in
// [-128, 255] (the unsigned lanes 0..255 and the signed lanes -128..127), both
// the exact ap_int datapath and the int64 C-simulation version must give
// lo == w_lo * x and hi == w_hi * x; and the LUT lane's plain product (lut_mul_exact, the
// lane pairs beyond DSP_PAIRS) must give w * x for every weight and lane value.
//
//   g++ -O2 -std=c++14 -I hls -isystem <ap_types> hls/tb/tb_packed_dsp.cpp -o tb_packed_dsp
//
// Exit status 0 when every case holds, 1 otherwise (the first mismatches are printed).
#include <stdio.h>

#include "zq_dsp.h"

int main() {
    long cases = 0, bad = 0, wraps = 0;
    for (int w_hi = -128; w_hi <= 127; w_hi++) {
        for (int w_lo = -128; w_lo <= 127; w_lo++) {
            const zq::w8_t a_hi = w_hi, a_lo = w_lo;
            if (w_hi == -128 && w_lo < 0) wraps++;
            for (int x = -128; x <= 255; x++) {
                int n_lo, n_hi;
                zq::dsp_pair_native(w_lo, w_hi, x, n_lo, n_hi);
                zq::prod_t e_lo, e_hi;
                zq::dsp_pair_exact(a_lo, a_hi, zq::x9_t(x), e_lo, e_hi);
                const int want_lo = w_lo * x, want_hi = w_hi * x;
                cases++;
                if (n_lo != want_lo || n_hi != want_hi || e_lo.to_int() != want_lo || e_hi.to_int() != want_hi) {
                    if (bad < 10)
                        printf("  MISMATCH w_hi=%d w_lo=%d x=%d: native (%d, %d), exact (%d, %d), want (%d, %d)\n",
                               w_hi, w_lo, x, n_hi, n_lo, e_hi.to_int(), e_lo.to_int(), want_hi, want_lo);
                    bad++;
                }
            }
        }
    }
    // the LUT lanes: every 8-bit weight times every 9-bit lane value
    long lut_cases = 0, lut_bad = 0;
    for (int w = -128; w <= 127; w++) {
        for (int x = -128; x <= 255; x++) {
            const int got = zq::lut_mul_exact(zq::w8_t(w), zq::x9_t(x)).to_int();
            lut_cases++;
            if (got != w * x) {
                if (lut_bad < 10) printf("  MISMATCH LUT lane w=%d x=%d: %d, want %d\n", w, x, got, w * x);
                lut_bad++;
            }
        }
    }
    printf("tb_packed_dsp: %ld cases (%ld weight pairs with the pre-adder wrap), %ld mismatches\n", cases,
           wraps * 384, bad);
    printf("tb_packed_dsp: LUT lane: %ld cases, %ld mismatches\n", lut_cases, lut_bad);
    if (bad || cases != 256L * 256 * 384 || lut_bad || lut_cases != 256L * 384) {
        printf("tb_packed_dsp: FAIL\n");
        return 1;
    }
    printf("tb_packed_dsp: PASS\n");
    return 0;
}
