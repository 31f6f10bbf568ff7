// core/bf16.h against the definition of bfloat16 (the high 16 bits of an IEEE fp32, IEEE
// round-to-nearest-even), with no CUDA Toolkit involved (cuda_reference_test compares against
// cuda_bf16.h's __float2bfloat16_rn):
//   * all 65536 bf16 patterns widen exactly and round-trip (NaN stays NaN);
//   * for every pair of consecutive bf16 values, the fp32 midpoint ties to the even pattern and the
//     fp32 values around it round to the nearer one (all 2^16 high halves, always);
//   * overflow past the largest finite bf16 rounds to Inf exactly where IEEE RN says;
//   * a comparison-based reference agrees on a strided sweep of all fp32.
#include "core/bf16.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace moefuzz {
namespace {

bool is_nan_bits16(uint16_t b) { return (b & 0x7F80) == 0x7F80 && (b & 0x007F) != 0; }

// RNE by comparing the dropped half against 0x8000 (not the add-and-carry trick of core).
uint16_t compare_based_reference(uint32_t bits) {
  const uint16_t high = static_cast<uint16_t>(bits >> 16);
  const uint32_t dropped = bits & 0xFFFF;
  if (dropped > 0x8000 || (dropped == 0x8000 && (high & 1))) return static_cast<uint16_t>(high + 1);
  return high;
}

TEST(Bf16, EveryPatternWidensExactlyAndRoundTrips) {
  int nans = 0;
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const uint16_t bits = static_cast<uint16_t>(b);
    const float f = bf16_to_float(bits);
    EXPECT_EQ(std::bit_cast<uint32_t>(f), b << 16);
    if (is_nan_bits16(bits)) {
      ++nans;
      EXPECT_TRUE(is_nan_bits16(bf16_from_float(f))) << std::hex << b;
      EXPECT_EQ(bf16_from_float(f) & 0x8000, bits & 0x8000) << "NaN sign kept, " << std::hex << b;
      continue;
    }
    EXPECT_EQ(bf16_from_float(f), bits) << std::hex << b;
    EXPECT_EQ(std::bit_cast<uint32_t>(round_to_bf16(f)), b << 16) << std::hex << b;
  }
  EXPECT_EQ(nans, 2 * 127);  // 2 signs x 127 non-zero mantissas
}

TEST(Bf16, EveryMidpointTiesToEvenAndNeighboursRoundToNearest) {
  for (uint32_t high = 0; high < 0x10000; ++high) {
    if ((high & 0x7F80) == 0x7F80) continue;  // Inf / NaN have no upper neighbour
    const uint32_t mid = (high << 16) | 0x8000u;
    const uint16_t even = static_cast<uint16_t>((high & 1) ? high + 1 : high);
    ASSERT_EQ(bf16_from_float(std::bit_cast<float>(mid)), even) << std::hex << mid;
    for (uint32_t d = 1; d <= 3; ++d) {
      ASSERT_EQ(bf16_from_float(std::bit_cast<float>(mid - d)), high) << std::hex << mid - d;
      ASSERT_EQ(bf16_from_float(std::bit_cast<float>(mid + d)), high + 1) << std::hex << mid + d;
    }
  }
}

TEST(Bf16, OverflowRoundsToInfinityAsIeeeDoes) {
  // Largest finite bf16 0x7F7F (odd): its midpoint with the next "value" 2^128 rounds up to Inf.
  EXPECT_EQ(bf16_from_float(std::bit_cast<float>(0x7F7F8000u)), 0x7F80);
  EXPECT_EQ(bf16_from_float(std::bit_cast<float>(0x7F7F7FFFu)), 0x7F7F);
  EXPECT_EQ(bf16_from_float(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(bf16_from_float(-std::numeric_limits<float>::max()), 0xFF80);
  EXPECT_EQ(bf16_from_float(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(bf16_from_float(-std::numeric_limits<float>::infinity()), 0xFF80);
  // The header's example: 1 + 2^-8 is half a bf16 ulp above 1.0 -> ties to even 1.0.
  EXPECT_EQ(bf16_from_float(1.00390625f), 0x3F80);
}

TEST(Bf16, AgreesWithComparisonReferenceOnStridedSweep) {
  // Every 257th fp32 (odd stride: all low-half residues, all exponents, both signs): ~16.7M patterns.
  uint64_t mismatches = 0, compared = 0;
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += 257, ++compared) {
    const uint32_t bits = static_cast<uint32_t>(b);
    const float x = std::bit_cast<float>(bits);
    const uint16_t got = bf16_from_float(x);
    if (std::isnan(x)) {
      if (!is_nan_bits16(got) && ++mismatches <= 5) ADD_FAILURE() << "NaN lost: " << std::hex << bits;
      continue;
    }
    const uint16_t want = compare_based_reference(bits);
    if (got != want && ++mismatches <= 5) {
      ADD_FAILURE() << "x bits 0x" << std::hex << bits << ": got 0x" << got << " want 0x" << want;
    }
  }
  EXPECT_EQ(mismatches, 0u) << "of " << compared;
}

}  // namespace
}  // namespace moefuzz
