#pragma once
// FP4 E2M1: the NVFP4 element format (SPEC.md §1.1). Codes are 4 bits: s e1 e0 m; magnitudes
// {0, 0.5, 1, 1.5, 2, 3, 4, 6}; no Inf/NaN; 0x8 is -0.
//
// Example:
//   uint8_t c = moefuzz::e2m1_from_float(2.5f);   // 0x4 (2.0: tie to even)
//   float v = moefuzz::e2m1_to_float(0xF);        // -6.0f
//   uint8_t a = moefuzz::e2m1_from_float_ties_away(2.5f);  // 0x5 (3.0: tie away from zero)
#include <array>
#include <cmath>
#include <cstdint>

namespace moefuzz {

inline constexpr std::array<float, 8> kE2m1Magnitudes = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
inline constexpr float kE2m1Max = 6.0f;
// Decision thresholds between magnitude codes i and i+1. A value exactly on threshold i goes to the
// even-mantissa neighbour: codes 0, 2, 4, 6 (values 0, 1, 2, 4).
inline constexpr std::array<float, 7> kE2m1Thresholds = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};

// cvt.rn.satfinite.e2m1x2.f32 as documented for cuda_fp4.h: RN-even, |x| > 5 (and +-Inf) saturate
// to +-6, NaN becomes +6 (code 0x7). The sign is kept: -0 and negatives with |x| <= 0.25 give code
// 0x8, as the host __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest) does (bit-identical on all
// 2^32 inputs, tests/core/cuda_reference_test.cpp). Whether Blackwell's cvt emits 0x8 is unverified.
// Inline and branch-free (the magnitude code counts the thresholds passed; ties at 0.25, 1.25, 2.5
// and 5 stay below, those at 0.75, 1.75 and 3.5 go above, to the even code): the oracle's envelope
// rounds two interval ends per element and the MXFP4 draw quantizes random values, where branches
// mispredict.
inline uint8_t e2m1_from_float(float x) {
  if (x != x) return 0x7;  // NaN
  const uint8_t sign = std::signbit(x) ? 0x8 : 0x0;
  const float a = std::fabs(x);
  const int m =
      (a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) + (a >= 3.5f) + (a > 5.0f);
  return static_cast<uint8_t>(sign | m);
}
// Round half AWAY from zero: microxcaling's default round="nearest" (mx/elemwise_ops.py
// _round_mantissa, the MX authors' OCP reference; SPEC-formats.md §3.2). The thresholds are
// kE2m1Thresholds; a value exactly on one goes to the larger magnitude (0.25 -> 0.5, 2.5 -> 3, 5 -> 6
// where RN-even gives 0, 2, 4). Saturation, NaN and the sign of zero as e2m1_from_float.
inline uint8_t e2m1_from_float_ties_away(float x) {
  if (x != x) return 0x7;  // NaN
  const uint8_t sign = std::signbit(x) ? 0x8 : 0x0;
  const float a = std::fabs(x);
  uint8_t m = 0;
  while (m < 7 && a >= kE2m1Thresholds[m]) ++m;
  return sign | m;
}
// Exact decode of the low 4 bits of `code` (0x8 is -0.0f), one load from a signed table (no branch on
// the sign: decoders run it per element on random codes).
inline constexpr std::array<float, 16> kE2m1Values = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                                      -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
inline float e2m1_to_float(uint8_t code) { return kE2m1Values[code & 0xF]; }
// Codes 0x0 and 0x8 both mean zero; compare codes through this.
inline uint8_t e2m1_canonical(uint8_t code) { return (code & 0x7) == 0 ? 0 : (code & 0xF); }

}  // namespace moefuzz
