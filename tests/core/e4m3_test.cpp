// core/e4m3.h against the DEFINITION of FP8 E4M3 (OCP OFP8 "E4M3FN", SPEC.md §1.3), with no CUDA
// Toolkit involved (tests/core/cuda_reference_test.cpp compares against the toolkit):
//   * every one of the 256 codes decodes to the value its bit fields define;
//   * every representable value encodes back to its code;
//   * every midpoint between consecutive values is a tie to the even code, and its neighbours a few
//     ulps away round to the nearest value;
//   * the underflow tie 2^-10, saturation (448, 464, Inf) and NaN -> 0x7F;
//   * a brute-force "nearest value, ties to even" encoder agrees on a strided sweep of all fp32;
//   * torch's float8_e4m3fn casts recorded in tests/golden/nvfp4_quant_golden.json agree (fails
//     without the file).
#include "core/e4m3.h"

#include "golden_files.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace moefuzz {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// The value of a code by its fields, as an integer significand times a power of two:
// exponent field e, mantissa m: normal (e > 0) (8 + m) * 2^(e - 10); subnormal m * 2^-9 = m * 2^(1 - 10).
// 0x7F / 0xFF are NaN (returns NaN).
double definition_value(uint8_t code) {
  const int e = (code >> 3) & 0xF;
  const int m = code & 0x7;
  if (e == 0xF && m == 0x7) return std::numeric_limits<double>::quiet_NaN();
  const int significand = e == 0 ? m : 8 + m;
  const double magnitude = std::ldexp(significand, (e == 0 ? 1 : e) - 10);
  return (code & 0x80) ? -magnitude : magnitude;
}

// All non-negative finite values in code order: 0x00 .. 0x7E.
std::vector<float> positive_values() {
  std::vector<float> v;
  for (int c = 0; c <= kE4m3MaxCode; ++c)
    v.push_back(static_cast<float>(definition_value(static_cast<uint8_t>(c))));
  return v;
}

// Brute-force reference encoder: the nearest value of the table, ties to the even code, |x| >= 448
// (beyond the largest value, including the tie at 464 whose even neighbour is 448) -> 448, NaN -> 0x7F.
uint8_t nearest_even_reference(float x) {
  if (std::isnan(x)) return kE4m3NaNCode;
  static const std::vector<float> values = positive_values();
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const double a = std::fabs(static_cast<double>(x));
  if (a >= values.back()) return sign | kE4m3MaxCode;
  // values[lo] <= a < values[lo + 1]
  const size_t lo =
      static_cast<size_t>(std::upper_bound(values.begin(), values.end(), a) - values.begin()) - 1;
  // Compare 2a with the sum of the neighbours: both sides exact in double.
  const double twice = 2 * a, sum = static_cast<double>(values[lo]) + values[lo + 1];
  size_t pick = twice < sum ? lo : twice > sum ? lo + 1 : (lo % 2 == 0 ? lo : lo + 1);
  return sign | static_cast<uint8_t>(pick);
}

TEST(E4m3, EveryCodeDecodesToItsDefinedValue) {
  int nan_codes = 0;
  for (int c = 0; c < 256; ++c) {
    const uint8_t code = static_cast<uint8_t>(c);
    const double expected = definition_value(code);
    const float got = e4m3_to_float(code);
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(got)) << "code 0x" << std::hex << c;
      ++nan_codes;
      continue;
    }
    EXPECT_EQ(static_cast<double>(got), expected) << "code 0x" << std::hex << c;
    EXPECT_EQ(std::signbit(got), (code & 0x80) != 0) << "code 0x" << std::hex << c;  // 0x80 is -0.0
  }
  EXPECT_EQ(nan_codes, 2);  // only S.1111.111: E4M3FN has no infinities
  // The landmarks SPEC.md §1.3 names, against the definition above.
  EXPECT_EQ(e4m3_to_float(kE4m3MaxCode), kE4m3Max);
  EXPECT_EQ(e4m3_to_float(0x08), 0x1p-6f);  // min normal
  EXPECT_EQ(e4m3_to_float(0x01), 0x1p-9f);  // min subnormal
}

TEST(E4m3, PositiveValuesAreStrictlyIncreasingInCodeOrder) {
  const std::vector<float> v = positive_values();
  for (size_t i = 1; i < v.size(); ++i) EXPECT_LT(v[i - 1], v[i]) << "code 0x" << std::hex << i;
}

TEST(E4m3, EveryRepresentableValueEncodesToItsCode) {
  for (int c = 0; c < 256; ++c) {
    const uint8_t code = static_cast<uint8_t>(c);
    if ((code & 0x7F) == kE4m3NaNCode) continue;
    EXPECT_EQ(e4m3_from_float(e4m3_to_float(code)), code) << "code 0x" << std::hex << c;
  }
}

TEST(E4m3, MidpointsTieToEvenAndNeighboursRoundToNearest) {
  const std::vector<float> v = positive_values();
  for (size_t i = 0; i + 1 < v.size(); ++i) {
    const float mid = (v[i] + v[i + 1]) / 2;  // exact: both have few significant bits
    const uint8_t even = static_cast<uint8_t>(i % 2 == 0 ? i : i + 1);
    for (float sign : {1.0f, -1.0f}) {
      const uint8_t s = sign < 0 ? 0x80 : 0x00;
      EXPECT_EQ(e4m3_from_float(sign * mid), s | even) << "midpoint " << mid;
      float below = mid, above = mid;
      for (int ulp = 1; ulp <= 4; ++ulp) {
        below = std::nextafter(below, 0.0f);
        above = std::nextafter(above, kInf);
        EXPECT_EQ(e4m3_from_float(sign * below), s | static_cast<uint8_t>(i))
            << mid << " - " << ulp << " ulp";
        EXPECT_EQ(e4m3_from_float(sign * above), s | static_cast<uint8_t>(i + 1))
            << mid << " + " << ulp << " ulp";
      }
    }
  }
}

TEST(E4m3, UnderflowTieAndSaturation) {
  // SPEC.md §1.3 [MEASURED] spot values.
  EXPECT_EQ(e4m3_from_float(0x1p-10f), 0x00);  // half the min subnormal: tie to even 0
  EXPECT_EQ(e4m3_from_float(std::nextafter(0x1p-10f, 1.0f)), 0x01);
  EXPECT_EQ(e4m3_from_float(1.5f * 0x1p-9f), 0x02);  // tie between 1 and 2 quanta -> even 2
  EXPECT_EQ(e4m3_from_float(-0x1p-10f), 0x80);       // sign kept on underflow
  EXPECT_EQ(e4m3_from_float(-0.0f), 0x80);
  EXPECT_EQ(e4m3_from_float(std::numeric_limits<float>::denorm_min()), 0x00);
  for (float x : {448.0f, 464.0f, std::nextafter(464.0f, kInf), 480.0f, 1e30f,
                  std::numeric_limits<float>::max(), kInf}) {
    EXPECT_EQ(e4m3_from_float(x), kE4m3MaxCode) << x;
    EXPECT_EQ(e4m3_from_float(-x), 0x80 | kE4m3MaxCode) << -x;
  }
  EXPECT_EQ(e4m3_from_float(std::nextafter(432.0f, 0.0f)), 0x7D);  // just below the 416|448 midpoint
}

TEST(E4m3, NanOfEitherSignBecomes0x7F) {
  for (uint32_t bits : {0x7FC00000u, 0x7F800001u, 0x7FFFFFFFu, 0xFFC00000u, 0xFF800001u, 0xFFFFFFFFu}) {
    EXPECT_EQ(e4m3_from_float(std::bit_cast<float>(bits)), kE4m3NaNCode) << std::hex << bits;
  }
}

TEST(E4m3, NonSaturatingCastTurnsOverflowIntoNaN) {
  // 464 = 448 + half an ulp ties to the even 448; anything above rounds past the largest value: NaN.
  EXPECT_EQ(e4m3_from_float_nosat(464.0f), kE4m3MaxCode);
  EXPECT_EQ(e4m3_from_float_nosat(-464.0f), 0x80 | kE4m3MaxCode);
  EXPECT_EQ(e4m3_from_float_nosat(std::nextafter(464.0f, kInf)), kE4m3NaNCode);
  EXPECT_EQ(e4m3_from_float_nosat(-std::nextafter(464.0f, kInf)), 0xFF);
  EXPECT_EQ(e4m3_from_float_nosat(kInf), kE4m3NaNCode);
  EXPECT_EQ(e4m3_from_float_nosat(-kInf), 0xFF);
  EXPECT_EQ(e4m3_from_float_nosat(std::bit_cast<float>(0xFFC00000u)), kE4m3NaNCode);  // NaN sign dropped
  // Inside the range it is the saturating encoder (strided sweep of all fp32 with |x| <= 464).
  for (uint64_t b = 11; b < (uint64_t{1} << 32); b += 4099) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(b));
    if (std::isnan(x) || std::fabs(x) > 464.0f) continue;
    ASSERT_EQ(e4m3_from_float_nosat(x), e4m3_from_float(x)) << std::hex << b;
  }
}

TEST(E4m3, ClampedCastDiffersFromTheSaturatingOneOnlyOnNaN) {
  // vLLM clamps with fmaxf/fminf before the cvt (SPEC-formats.md §1.2): NaN -> fmaxf(NaN, -448) = -448.
  for (uint32_t bits : {0x7FC00000u, 0x7F800001u, 0xFFC00000u, 0xFFFFFFFFu})
    EXPECT_EQ(e4m3_from_float_clamped(std::bit_cast<float>(bits)), 0xFE) << std::hex << bits;
  for (uint64_t b = 13; b < (uint64_t{1} << 32); b += 4099) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(b));
    if (std::isnan(x)) continue;
    ASSERT_EQ(e4m3_from_float_clamped(x), e4m3_from_float(x)) << std::hex << b;
  }
  EXPECT_EQ(e4m3_from_float_clamped(-kInf), 0xFE);
  EXPECT_EQ(e4m3_from_float_clamped(1e30f), kE4m3MaxCode);
}

TEST(E4m3, AgreesWithBruteForceNearestOnStridedSweep) {
  // An odd stride reaches every exponent and sign; 2^32 / 4099 ~ 1M patterns keep this well under a
  // second. (The all-2^32 comparison is against the CUDA Toolkit, cuda_reference_test.)
  constexpr uint64_t kStride = 4099;
  uint64_t mismatches = 0, compared = 0;
  for (uint64_t b = 7; b < (uint64_t{1} << 32); b += kStride, ++compared) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(b));
    const uint8_t got = e4m3_from_float(x), want = nearest_even_reference(x);
    if (got != want && ++mismatches <= 5) {
      ADD_FAILURE() << "x bits 0x" << std::hex << b << " (" << x << "): got 0x" << +got << " want 0x"
                    << +want;
    }
  }
  EXPECT_EQ(mismatches, 0u) << "of " << compared;
}

TEST(E4m3, AgreesWithBruteForceNearestDenselyInsideTheRange) {
  // Every 31st fp32 in [2^-11, 512), both signs: the binades where the encoder actually rounds.
  constexpr uint32_t kStride = 31;
  const uint32_t begin = std::bit_cast<uint32_t>(0x1p-11f), end = std::bit_cast<uint32_t>(512.0f);
  uint64_t mismatches = 0, compared = 0;
  for (uint32_t b = begin; b < end; b += kStride) {
    for (uint32_t sign : {0u, 0x80000000u}) {
      const float x = std::bit_cast<float>(b | sign);
      const uint8_t got = e4m3_from_float(x), want = nearest_even_reference(x);
      ++compared;
      if (got != want && ++mismatches <= 5) {
        ADD_FAILURE() << "x bits 0x" << std::hex << (b | sign) << " (" << x << "): got 0x" << +got
                      << " want 0x" << +want;
      }
    }
  }
  EXPECT_EQ(mismatches, 0u) << "of " << compared;
}

TEST(E4m3, AgreesWithTorchCastsInTheQuantGolden) {
  const nlohmann::json golden = load_golden("nvfp4_quant_golden.json");
  expect_at_least_cases(golden, kMinQuantGoldenCases, "nvfp4_quant_golden.json");
  int checked = 0;
  for (const auto& c : golden.at("cases")) {
    const auto& sf32 = c.at("replicated_intermediates").at("sf32_before_e4m3");
    const auto& bytes = c.at("output").at("scale_e4m3_bytes");
    const auto& values = c.at("output").at("scale_values");
    for (size_t r = 0; r < bytes.size(); ++r) {
      for (size_t b = 0; b < bytes[r].size(); ++b) {
        const auto byte = bytes[r][b].get<uint8_t>();
        // vLLM clamps to [-448, 448] before torch's (non-saturating, RN) cast; inf stays a JSON string.
        const float pre =
            sf32[r][b].is_string() ? (sf32[r][b] == "inf" ? kInf : -kInf) : sf32[r][b].get<float>();
        const float clamped = std::fmin(std::fmax(pre, -kE4m3Max), kE4m3Max);
        EXPECT_EQ(e4m3_from_float(clamped), byte)
            << c.at("id") << " block " << r << "," << b << " sf32 " << pre;
        EXPECT_EQ(e4m3_to_float(byte), values[r][b].get<float>()) << c.at("id");
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 0) << "no block scale in the golden file: nothing was compared";
}

}  // namespace
}  // namespace moefuzz
