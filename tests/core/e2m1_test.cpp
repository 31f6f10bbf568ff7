// core/e2m1.h against the DEFINITION of FP4 E2M1 (OCP MX v1.0, SPEC.md §1.1), with no CUDA Toolkit
// involved (tests/core/cuda_reference_test.cpp compares against cuda_fp4.h):
//   * all 16 codes decode to the value their bit fields define (bias 1, one subnormal 0.5, 0x8 = -0);
//   * the tables kE2m1Magnitudes / kE2m1Thresholds are the definition's values and midpoints;
//   * every representable value round-trips, every threshold is a tie to the even code, values a few
//     ulps either side round to the nearest value;
//   * saturation at 6 (Inf included), NaN -> +6 (0x7), sign kept on zero results (0x8);
//   * a brute-force "nearest, ties to even" encoder agrees on a strided sweep of all fp32.
#include "core/e2m1.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace moefuzz {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// s e1 e0 m, bias 1: e > 0 -> (2 + m) * 2^(e - 2); e == 0 -> m * 2^-1.
double definition_value(uint8_t code) {
  const int e = (code >> 1) & 0x3;
  const int m = code & 0x1;
  const double magnitude = e == 0 ? std::ldexp(m, -1) : std::ldexp(2 + m, e - 2);
  return (code & 0x8) ? -magnitude : magnitude;
}

// Nearest magnitude code, ties to the even code; |x| >= 6 (Inf included) saturates to 6; NaN -> +6;
// the sign of x is kept otherwise.
uint8_t nearest_even_reference(float x) {
  if (std::isnan(x)) return 0x7;
  const uint8_t sign = std::signbit(x) ? 0x8 : 0x0;
  const double a = std::fabs(static_cast<double>(x));
  if (a >= definition_value(0x7)) return sign | 0x7;
  uint8_t lo = 0;
  while (definition_value(lo + 1) <= a) ++lo;  // value(lo) <= a < value(lo + 1)
  // 2a against the sum of the neighbours: both sides exact in double.
  const double twice = 2 * a, sum = definition_value(lo) + definition_value(lo + 1);
  const uint8_t pick = twice < sum ? lo : twice > sum ? lo + 1 : (lo % 2 == 0 ? lo : lo + 1);
  return sign | pick;
}

TEST(E2m1, EveryCodeDecodesToItsDefinedValue) {
  for (int c = 0; c < 16; ++c) {
    const uint8_t code = static_cast<uint8_t>(c);
    const float got = e2m1_to_float(code);
    EXPECT_EQ(static_cast<double>(got), definition_value(code)) << "code 0x" << std::hex << c;
    EXPECT_EQ(std::signbit(got), (code & 0x8) != 0) << "code 0x" << std::hex << c;  // 0x8 is -0.0
  }
  // The upper nibble is ignored: decode reads bits 0-3 only.
  EXPECT_EQ(e2m1_to_float(0xF7), e2m1_to_float(0x7));
}

TEST(E2m1, TablesAreTheDefinitionsValuesAndMidpoints) {
  for (int c = 0; c < 8; ++c) EXPECT_EQ(kE2m1Magnitudes[c], definition_value(static_cast<uint8_t>(c)));
  for (int c = 0; c < 7; ++c)
    EXPECT_EQ(kE2m1Thresholds[c], (kE2m1Magnitudes[c] + kE2m1Magnitudes[c + 1]) / 2);
  EXPECT_EQ(kE2m1Max, kE2m1Magnitudes.back());
}

TEST(E2m1, EveryRepresentableValueEncodesToItsCode) {
  for (int c = 0; c < 16; ++c) EXPECT_EQ(e2m1_from_float(e2m1_to_float(static_cast<uint8_t>(c))), c) << c;
}

TEST(E2m1, ThresholdsTieToEvenAndNeighboursRoundToNearest) {
  for (int i = 0; i < 7; ++i) {
    const float t = kE2m1Thresholds[i];
    const uint8_t even = static_cast<uint8_t>(i % 2 == 0 ? i : i + 1);
    for (float sign : {1.0f, -1.0f}) {
      const uint8_t s = sign < 0 ? 0x8 : 0x0;
      EXPECT_EQ(e2m1_from_float(sign * t), s | even) << "threshold " << sign * t;
      float below = t, above = t;
      for (int ulp = 1; ulp <= 4; ++ulp) {
        below = std::nextafter(below, 0.0f);
        above = std::nextafter(above, kInf);
        EXPECT_EQ(e2m1_from_float(sign * below), s | i) << sign * t << " - " << ulp << " ulp";
        EXPECT_EQ(e2m1_from_float(sign * above), s | (i + 1)) << sign * t << " + " << ulp << " ulp";
      }
    }
  }
}

TEST(E2m1, SaturatesNanToPlusSixAndKeepsTheSignOfZero) {
  for (float x : {6.0f, std::nextafter(6.0f, kInf), 7.0f, 1e30f, std::numeric_limits<float>::max(), kInf}) {
    EXPECT_EQ(e2m1_from_float(x), 0x7) << x;
    EXPECT_EQ(e2m1_from_float(-x), 0xF) << -x;
  }
  for (uint32_t bits : {0x7FC00000u, 0x7F800001u, 0xFFC00000u, 0xFFFFFFFFu}) {
    EXPECT_EQ(e2m1_from_float(std::bit_cast<float>(bits)), 0x7) << std::hex << bits;  // cuda_fp4.h: +MAXNORM
  }
  // cuda_fp4.h's __nv_cvt_float_to_fp4 ORs the sign into an underflowed result; so does core.
  for (float x : {-0.0f, -std::numeric_limits<float>::denorm_min(), -0.1f, -0.25f})
    EXPECT_EQ(e2m1_from_float(x), 0x8) << x;
  EXPECT_EQ(e2m1_from_float(0.0f), 0x0);
}

TEST(E2m1, CanonicalCodeMergesTheTwoZeros) {
  for (int c = 0; c < 16; ++c) {
    const uint8_t canonical = e2m1_canonical(static_cast<uint8_t>(c));
    EXPECT_EQ(e2m1_to_float(canonical), e2m1_to_float(static_cast<uint8_t>(c))) << c;  // -0 == +0 as floats
    if ((c & 7) == 0)
      EXPECT_EQ(canonical, 0) << c;
    else
      EXPECT_EQ(canonical, c);
  }
}

TEST(E2m1, TiesAwayEncoderRoundsThresholdsUpAndAgreesElsewhere) {
  // microxcaling's half-away rounding (SPEC-formats.md §3.2): every threshold goes to the larger
  // magnitude; off the thresholds it is the nearest value, as RN-even.
  for (int i = 0; i < 7; ++i) {
    const float t = kE2m1Thresholds[i];
    EXPECT_EQ(e2m1_from_float_ties_away(t), i + 1) << t;
    EXPECT_EQ(e2m1_from_float_ties_away(-t), 0x8 | (i + 1)) << -t;
    EXPECT_EQ(e2m1_from_float_ties_away(std::nextafter(t, 0.0f)), i) << t;
  }
  // SPEC-formats.md §3.2's examples: 0.25 -> 0.5 (RNE 0), 2.5 -> 3 (RNE 2), 5 -> 6 (RNE 4).
  EXPECT_EQ(e2m1_to_float(e2m1_from_float_ties_away(0.25f)), 0.5f);
  EXPECT_EQ(e2m1_to_float(e2m1_from_float_ties_away(2.5f)), 3.0f);
  EXPECT_EQ(e2m1_to_float(e2m1_from_float_ties_away(5.0f)), 6.0f);
  EXPECT_EQ(e2m1_from_float_ties_away(std::bit_cast<float>(0xFFC00000u)), 0x7);  // NaN -> +6
  EXPECT_EQ(e2m1_from_float_ties_away(-kInf), 0xF);
  EXPECT_EQ(e2m1_from_float_ties_away(-0.1f), 0x8);
  uint64_t mismatches = 0;
  for (uint64_t b = 3; b < (uint64_t{1} << 32); b += 4099) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(b));
    bool on_threshold = false;
    for (float t : kE2m1Thresholds) on_threshold = on_threshold || std::fabs(x) == t;
    if (!on_threshold && e2m1_from_float_ties_away(x) != e2m1_from_float(x) && ++mismatches <= 5)
      ADD_FAILURE() << std::hex << b;
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(E2m1, AgreesWithBruteForceNearestOnStridedSweep) {
  // Every 4099th fp32 over all bit patterns, plus every 31st inside [2^-4, 8), both signs.
  uint64_t mismatches = 0, compared = 0;
  auto compare = [&](uint32_t bits) {
    const float x = std::bit_cast<float>(bits);
    const uint8_t got = e2m1_from_float(x), want = nearest_even_reference(x);
    ++compared;
    if (got != want && ++mismatches <= 5) {
      ADD_FAILURE() << "x bits 0x" << std::hex << bits << " (" << x << "): got 0x" << +got << " want 0x"
                    << +want;
    }
  };
  for (uint64_t b = 3; b < (uint64_t{1} << 32); b += 4099) compare(static_cast<uint32_t>(b));
  for (uint32_t b = std::bit_cast<uint32_t>(0x1p-4f); b < std::bit_cast<uint32_t>(8.0f); b += 31) {
    compare(b);
    compare(b | 0x80000000u);
  }
  EXPECT_EQ(mismatches, 0u) << "of " << compared;
}

}  // namespace
}  // namespace moefuzz
