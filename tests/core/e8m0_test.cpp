// core/e8m0.h against the DEFINITION of E8M0 (OCP MX v1.0: 2^(c - 127), 0xFF = NaN; SPEC-formats.md
// §3.1) and of each production encoder's formula, with no CUDA Toolkit involved
// (tests/core/e8m0_cuda_reference_test.cpp compares against cuda_fp8.h):
//   * all 256 codes decode to 2^(c - 127) (code 0 is the subnormal 2^-127), 0xFF to NaN; the
//     exponent-shift and ldexp decodes of SPEC-formats.md §3.3 differ only at codes 0 and 0xFF;
//   * every code round-trips through both roundings;
//   * e8m0_from_float equals a log2-by-frexp reference (ceil / floor, clip to 2^-127, saturation) on
//     every power of two +- 4 ulps, every subnormal boundary and a strided sweep of all fp32;
//   * the Triton carry / mask and DeepGEMM's clamped ceil against their definitions, edges included;
//   * RapidCheck: a rounded-up scale s' satisfies s <= s' < 2s, a rounded-down one s/2 < s' <= s.
#include "core/e8m0.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace moefuzz {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// The toolkit's documented rule, computed on exact integers: |x| rounded to a power of two 2^k in
// the given direction; k < -127 clips to -127; k > 127 saturates to 127 (0xFE) or gives NaN; NaN -> 0xFF.
uint8_t reference(float x, E8m0Rounding rounding, E8m0Overflow overflow) {
  if (std::isnan(x)) return 0xFF;
  const double a = std::fabs(static_cast<double>(x));
  int k;
  if (std::isinf(a)) {
    k = 128;
  } else if (a == 0.0) {
    k = -1000;
  } else {
    int e;
    const double f = std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
    k = e - 1;                           // floor(log2 a)
    if (rounding == E8m0Rounding::kUp && f != 0.5) ++k;
  }
  if (k < -127) k = -127;
  if (k > 127) return overflow == E8m0Overflow::kSaturate ? 0xFE : 0xFF;
  return static_cast<uint8_t>(k + 127);
}

// Every value where an encoder can change its answer: powers of two (normal and subnormal) +- a few
// ulps, the ends of the fp32 range, zero, Inf and NaN, both signs.
std::vector<uint32_t> boundary_bits() {
  std::vector<uint32_t> v;
  auto around = [&](uint32_t b) {
    for (int d = -4; d <= 4; ++d) {
      const uint32_t c = b + static_cast<uint32_t>(d);
      if (c > 0x7FFFFFFFu) continue;  // wrapped below zero
      v.push_back(c);
      v.push_back(c | 0x80000000u);
    }
  };
  for (uint32_t e = 1; e <= 255; ++e) around(e << 23);  // 2^(e-127), Inf
  for (int s = 0; s < 23; ++s) around(1u << s);         // subnormal powers of two
  for (uint32_t b : {0x00000000u, 0x007FFFFFu, 0x7F7FFFFFu, 0x7FC00000u, 0x7F800001u, 0x7FFFFFFFu}) around(b);
  return v;
}

TEST(E8m0, EveryCodeDecodesToItsPowerOfTwo) {
  for (int c = 0; c < 255; ++c) {
    const float v = e8m0_to_float(static_cast<uint8_t>(c));
    EXPECT_EQ(static_cast<double>(v), std::ldexp(1.0, c - 127)) << c;
  }
  EXPECT_TRUE(std::isnan(e8m0_to_float(0xFF)));
  EXPECT_EQ(std::bit_cast<uint32_t>(e8m0_to_float(0)), 0x00400000u);  // SPEC-formats §3.1: subnormal
  EXPECT_EQ(e8m0_to_float(kE8m0OneCode), 1.0f);
  EXPECT_EQ(e8m0_to_float(kE8m0MaxCode), 0x1p127f);
}

TEST(E8m0, PathDecodesDifferOnlyAtCodesZeroAndFF) {
  // SPEC-formats.md §3.3: the OCP decode, Triton's exponent shift on Hopper (code 0 -> +0, 0xFF -> +Inf,
  // [MEASURED] on the H200) and gpt-oss's ldexp (0 -> 2^-127, 0xFF -> +Inf).
  for (int c = 1; c < 255; ++c) {
    const float ocp = e8m0_decode(static_cast<uint8_t>(c), E8m0Decode::kOcp);
    EXPECT_EQ(ocp, e8m0_to_float(static_cast<uint8_t>(c)));
    EXPECT_EQ(e8m0_decode(static_cast<uint8_t>(c), E8m0Decode::kExponentShift), ocp) << c;
    EXPECT_EQ(e8m0_decode(static_cast<uint8_t>(c), E8m0Decode::kLdexp), ocp) << c;
  }
  EXPECT_EQ(std::bit_cast<uint32_t>(e8m0_decode(0, E8m0Decode::kExponentShift)), 0u);
  EXPECT_EQ(e8m0_decode(0, E8m0Decode::kLdexp), 0x1p-127f);
  EXPECT_EQ(e8m0_decode(0, E8m0Decode::kOcp), 0x1p-127f);
  EXPECT_EQ(e8m0_decode(0xFF, E8m0Decode::kExponentShift), kInf);
  EXPECT_EQ(e8m0_decode(0xFF, E8m0Decode::kLdexp), kInf);
  EXPECT_TRUE(std::isnan(e8m0_decode(0xFF, E8m0Decode::kOcp)));
}

TEST(E8m0, EveryCodeRoundTripsThroughBothRoundings) {
  for (int c = 0; c < 255; ++c) {
    const float v = e8m0_to_float(static_cast<uint8_t>(c));
    for (auto r : {E8m0Rounding::kUp, E8m0Rounding::kTowardZero}) {
      EXPECT_EQ(e8m0_from_float(v, r), c) << c;
      EXPECT_EQ(e8m0_from_float(-v, r), c) << "sign ignored, " << c;
    }
  }
}

TEST(E8m0, HeaderExampleAndHandValues) {
  EXPECT_EQ(e8m0_from_float(0.75f, E8m0Rounding::kUp), 127);
  EXPECT_EQ(e8m0_from_float(0.75f, E8m0Rounding::kTowardZero), 126);
  // 3 / 448 = 0.0066964...: between 2^-8 and 2^-7 (the UE8M0 scale of an amax-3 group).
  EXPECT_EQ(e8m0_from_float(3.0f / 448.0f, E8m0Rounding::kUp), 127 - 7);
  EXPECT_EQ(e8m0_from_float(3.0f / 448.0f, E8m0Rounding::kTowardZero), 127 - 8);
  // Edges: zero and tiny values clip to 2^-127; just above 2^-127 rounds up to 2^-126.
  EXPECT_EQ(e8m0_from_float(0.0f, E8m0Rounding::kUp), 0);
  EXPECT_EQ(e8m0_from_float(std::numeric_limits<float>::denorm_min(), E8m0Rounding::kUp), 0);
  EXPECT_EQ(e8m0_from_float(std::bit_cast<float>(0x00400001u), E8m0Rounding::kUp), 1);
  EXPECT_EQ(e8m0_from_float(std::bit_cast<float>(0x00400001u), E8m0Rounding::kTowardZero), 0);
  // Overflow: above 2^127 rounds up to 2^128, which saturates or is NaN; Inf likewise.
  const float above = std::bit_cast<float>(0x7F000001u);
  EXPECT_EQ(e8m0_from_float(above, E8m0Rounding::kUp, E8m0Overflow::kSaturate), 0xFE);
  EXPECT_EQ(e8m0_from_float(above, E8m0Rounding::kUp, E8m0Overflow::kNaN), 0xFF);
  EXPECT_EQ(e8m0_from_float(above, E8m0Rounding::kTowardZero, E8m0Overflow::kNaN), 0xFE);
  EXPECT_EQ(e8m0_from_float(kInf, E8m0Rounding::kTowardZero, E8m0Overflow::kSaturate), 0xFE);
  EXPECT_EQ(e8m0_from_float(-kInf, E8m0Rounding::kUp, E8m0Overflow::kNaN), 0xFF);
  EXPECT_EQ(e8m0_from_float(std::numeric_limits<float>::quiet_NaN(), E8m0Rounding::kUp), 0xFF);
}

TEST(E8m0, EncoderEqualsTheReferenceOnEveryBoundary) {
  uint64_t compared = 0;
  for (uint32_t b : boundary_bits()) {
    const float x = std::bit_cast<float>(b);
    for (auto r : {E8m0Rounding::kUp, E8m0Rounding::kTowardZero}) {
      for (auto o : {E8m0Overflow::kSaturate, E8m0Overflow::kNaN}) {
        ASSERT_EQ(e8m0_from_float(x, r, o), reference(x, r, o)) << std::hex << b;
        ASSERT_EQ(e8m0_from_bf16(static_cast<uint16_t>(b >> 16), r, o),
                  reference(std::bit_cast<float>(b & 0xFFFF0000u), r, o))
            << std::hex << b;
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 10000u);
}

TEST(E8m0, EncoderEqualsTheReferenceOnStridedSweep) {
  uint64_t mismatches = 0;
  for (uint64_t b = 5; b < (uint64_t{1} << 32); b += 4099) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(b));
    for (auto r : {E8m0Rounding::kUp, E8m0Rounding::kTowardZero}) {
      for (auto o : {E8m0Overflow::kSaturate, E8m0Overflow::kNaN}) {
        if (e8m0_from_float(x, r, o) != reference(x, r, o) && ++mismatches <= 5)
          ADD_FAILURE() << "bits 0x" << std::hex << b;
      }
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(E8m0, TritonCarryAndMaskFollowTheirBitFormulas) {
  // Normal s: carry = ceil, mask = floor (the reference above).
  for (uint32_t b : boundary_bits()) {
    const float s = std::fabs(std::bit_cast<float>(b));
    if (std::isnormal(s) && s <= 0x1p127f) {
      EXPECT_EQ(e8m0_ceil_by_carry(s), reference(s, E8m0Rounding::kUp, E8m0Overflow::kNaN)) << std::hex << b;
      EXPECT_EQ(e8m0_floor_by_mask(s), reference(s, E8m0Rounding::kTowardZero, E8m0Overflow::kNaN)) << b;
    }
  }
  // The edges SPEC-formats.md §3.2 names: d = 0 -> 0; subnormal d -> 1 (2^-126); above 2^127 and Inf
  // -> 0xFF; a NaN's carry clears the exponent -> 0.
  EXPECT_EQ(e8m0_ceil_by_carry(0.0f), 0);
  EXPECT_EQ(e8m0_ceil_by_carry(std::numeric_limits<float>::denorm_min()), 1);
  EXPECT_EQ(e8m0_ceil_by_carry(std::bit_cast<float>(0x00400000u)), 1);
  EXPECT_EQ(e8m0_ceil_by_carry(std::bit_cast<float>(0x7F000001u)), 0xFF);
  EXPECT_EQ(e8m0_ceil_by_carry(kInf), 0xFF);
  EXPECT_EQ(e8m0_ceil_by_carry(std::numeric_limits<float>::quiet_NaN()), 0);
  EXPECT_EQ(e8m0_floor_by_mask(0.0f), 0);
  EXPECT_EQ(e8m0_floor_by_mask(std::bit_cast<float>(0x007FFFFFu)), 0);
  EXPECT_EQ(e8m0_floor_by_mask(kInf), 0xFF);
  EXPECT_EQ(e8m0_floor_by_mask(1.5f), 127);
}

TEST(E8m0, DeepGemmClampedCeilFollowsCeilToUe8m0) {
  // exp = exponent field + (mantissa != 0), clamped to [1, 254].
  for (uint32_t b : boundary_bits()) {
    const float s = std::bit_cast<float>(b);
    const uint32_t a = b & 0x7FFFFFFFu;
    int want = static_cast<int>(a >> 23) + ((a & 0x7FFFFFu) != 0 ? 1 : 0);
    want = want < 1 ? 1 : want > 254 ? 254 : want;
    EXPECT_EQ(ue8m0_ceil_clamped(s), want) << std::hex << b;
  }
  EXPECT_EQ(ue8m0_ceil_clamped(0.0f), 1);
  EXPECT_EQ(ue8m0_ceil_clamped(kInf), 254);
  EXPECT_EQ(ue8m0_ceil_clamped(std::numeric_limits<float>::quiet_NaN()), 254);
  EXPECT_EQ(ue8m0_ceil_clamped(3.0f / 448.0f), 127 - 7);
}

RC_GTEST_PROP(E8m0, RoundedScalesBracketTheirInput, ()) {
  // Positive normal fp32 whose ceil stays within 2^127.
  const uint32_t bits = *rc::gen::inRange<uint32_t>(0x00800000u, 0x7F000001u);
  const float s = std::bit_cast<float>(bits);
  const float up = e8m0_to_float(e8m0_from_float(s, E8m0Rounding::kUp));
  const float down = e8m0_to_float(e8m0_from_float(s, E8m0Rounding::kTowardZero));
  RC_ASSERT(static_cast<double>(s) <= up && static_cast<double>(up) < 2.0 * s);
  RC_ASSERT(static_cast<double>(down) <= s && 2.0 * down > static_cast<double>(s));
  RC_ASSERT(e8m0_ceil_by_carry(s) == e8m0_from_float(s, E8m0Rounding::kUp));
  RC_ASSERT(e8m0_floor_by_mask(s) == e8m0_from_float(s, E8m0Rounding::kTowardZero));
}

}  // namespace
}  // namespace moefuzz
