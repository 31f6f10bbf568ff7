// core/fp8_group_quant.h against the formulas of SPEC-formats.md §1.2, worked by hand:
//   * golden groups (amax 448, amax 3, below the amax floor, all-zero) in both variants, with and
//     without UE8M0, the scale and every code worked out from the cited formula;
//   * the hostile corners: a NaN element (vLLM: fmaxf drops it, the clamp makes it -448; DeepGEMM: the
//     NaN propagates to the scale and every code), an Inf element (s = Inf), a group at FLT_MAX;
//   * shape rules: no partial group (K % group == 0 is asserted in production), sizes checked;
//   * RapidCheck: the amax element quantizes to +-448, every element within the derived rounding
//     bound of its input, UE8M0 scales are the next power of two and never clip.
#include "core/fp8_group_quant.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

#include "core/bf16.h"
#include "core/errors.h"

namespace moefuzz {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

Fp8GroupQuantOptions options(Fp8GroupQuantVariant v, bool ue8m0) {
  Fp8GroupQuantOptions o;
  o.variant = v;
  o.ue8m0 = ue8m0;
  return o;
}

// One 128-wide group: `head` first, the rest `fill`.
std::vector<float> group_of(std::vector<float> head, float fill = 0.0f) {
  head.resize(128, fill);
  return head;
}

TEST(Fp8GroupQuant, HeaderExample) {
  std::vector<float> x(2 * 256, 1.0f);
  x[3] = -448.0f;
  const auto q = quantize_fp8_per_token_group(x, 2, 256);
  ASSERT_EQ(q.scales.size(), 4u);
  EXPECT_EQ(q.scale(0, 0), 1.0f);
  EXPECT_EQ(q.code(0, 3), 0xFE);
  EXPECT_EQ(q.code(0, 0), 0x38);  // 1.0
  EXPECT_EQ(q.dequant(0, 3), -448.0f);
  // Group (0, 1): all ones, amax 1: s = fl(1 / 448), every element 1 / s ~ 448.
  EXPECT_EQ(q.scale(0, 1), 1.0f / 448.0f);
  EXPECT_EQ(q.code(0, 200), 0x7E);
}

TEST(Fp8GroupQuant, AmaxThreeGroupByHand) {
  // amax 3: s = fl(3 / 448). Elements: 3 -> 448 (0x7E); 1.5 -> 224 = 1.75 * 2^7 (0x76);
  // -0.75 -> -112 = -1.75 * 2^6 (0xEE); 0.01 -> 1.4933 -> 1.5 (0x3C).
  const std::vector<float> x = group_of({3.0f, 1.5f, -0.75f, 0.01f});
  for (auto v : {Fp8GroupQuantVariant::kVllmCuda, Fp8GroupQuantVariant::kDeepGemmReference}) {
    const auto q = quantize_fp8_per_token_group(x, 1, 128, options(v, false));
    EXPECT_EQ(q.scale(0, 0), 3.0f / 448.0f);
    EXPECT_EQ(q.code(0, 0), 0x7E);
    EXPECT_EQ(q.code(0, 1), 0x76);
    EXPECT_EQ(q.code(0, 2), 0xEE);
    EXPECT_EQ(q.code(0, 3), 0x3C);
    EXPECT_EQ(q.code(0, 4), 0x00);
  }
  // UE8M0: 3 / 448 = 0.00670 lies in (2^-8, 2^-7]: s = 2^-7. Elements * 128: 384 = 1.5 * 2^8 (0x7C);
  // 192 = 1.5 * 2^7 (0x74); -96 = -1.5 * 2^6 (0xEC); 1.28 -> 1.25 (0x3A).
  for (auto v : {Fp8GroupQuantVariant::kVllmCuda, Fp8GroupQuantVariant::kDeepGemmReference}) {
    const auto q = quantize_fp8_per_token_group(x, 1, 128, options(v, true));
    EXPECT_EQ(q.scale(0, 0), 0x1p-7f);
    EXPECT_EQ(q.code(0, 0), 0x7C);
    EXPECT_EQ(q.code(0, 1), 0x74);
    EXPECT_EQ(q.code(0, 2), 0xEC);
    EXPECT_EQ(q.code(0, 3), 0x3A);
    EXPECT_EQ(q.dequant(0, 0), 3.0f);
  }
}

TEST(Fp8GroupQuant, VllmDividesWhereDeepGemmMultipliesByTheReciprocal) {
  // The one place the two variants' formulas differ for ordinary inputs: vLLM rounds fl(x / s), DeepGEMM
  // fl(x * fl(1 / s)) (SPEC-formats.md §1.2). Search the fp32 neighbourhoods of E4M3 midpoints (times
  // s) for inputs where the two land on different codes; each variant must follow its own formula.
  const float s = 3.0f / 448.0f;
  const float reciprocal = 1.0f / s;
  int found = 0;
  for (int c = 0x30; c < 0x7D && found < 16; ++c) {
    const float mid =
        (e4m3_to_float(static_cast<uint8_t>(c)) + e4m3_to_float(static_cast<uint8_t>(c + 1))) / 2;
    float x = mid * s;
    for (int i = 0; i < 8; ++i) x = std::nextafter(x, 0.0f);
    for (int step = 0; step < 16; ++step, x = std::nextafter(x, 3.0f)) {
      const uint8_t by_division = e4m3_from_float_clamped(x / s);
      const uint8_t by_reciprocal = e4m3_from_float_nosat(x * reciprocal);
      if (by_division == by_reciprocal) continue;
      ++found;
      const std::vector<float> group = group_of({3.0f, x});
      EXPECT_EQ(quantize_fp8_per_token_group(group, 1, 128).code(0, 1), by_division) << x;
      EXPECT_EQ(quantize_fp8_per_token_group(group, 1, 128,
                                             options(Fp8GroupQuantVariant::kDeepGemmReference, false))
                    .code(0, 1),
                by_reciprocal)
          << x;
    }
  }
  EXPECT_GT(found, 0) << "no input separates the two formulas: the test compared nothing";
}

TEST(Fp8GroupQuant, AllZeroAndTinyGroupsUseTheAmaxFloor) {
  const std::vector<float> zeros(128, 0.0f);
  // vLLM: amax seeded 1e-10 -> s = fl(1e-10 / 448); UE8M0 floors the scale at 1e-10 before the ceil:
  // 1e-10 in (2^-34, 2^-33] -> 2^-33.
  auto q = quantize_fp8_per_token_group(zeros, 1, 128);
  EXPECT_EQ(q.scale(0, 0), 1e-10f / 448.0f);
  for (uint8_t c : q.codes) EXPECT_EQ(c, 0x00);
  q = quantize_fp8_per_token_group(zeros, 1, 128, options(Fp8GroupQuantVariant::kVllmCuda, true));
  EXPECT_EQ(q.scale(0, 0), 0x1p-33f);
  // DeepGEMM: clamp(1e-4) -> s = fl(1e-4 / 448); UE8M0: 2.23e-7 in (2^-23, 2^-22] -> 2^-22.
  q = quantize_fp8_per_token_group(zeros, 1, 128, options(Fp8GroupQuantVariant::kDeepGemmReference, false));
  EXPECT_EQ(q.scale(0, 0), 1e-4f / 448.0f);
  for (uint8_t c : q.codes) EXPECT_EQ(c, 0x00);
  q = quantize_fp8_per_token_group(zeros, 1, 128, options(Fp8GroupQuantVariant::kDeepGemmReference, true));
  EXPECT_EQ(q.scale(0, 0), 0x1p-22f);
  // amax 1e-5 < 1e-4: vLLM scales by it (the element -> 448), DeepGEMM by the floor: 1e-5 * 448 / 1e-4
  // = 44.8 -> 44 = 1.375 * 2^5 (0x63), spacing 4 at that exponent.
  const std::vector<float> tiny = group_of({1e-5f});
  EXPECT_EQ(quantize_fp8_per_token_group(tiny, 1, 128).code(0, 0), 0x7E);
  EXPECT_EQ(
      quantize_fp8_per_token_group(tiny, 1, 128, options(Fp8GroupQuantVariant::kDeepGemmReference, false))
          .code(0, 0),
      0x63);
}

TEST(Fp8GroupQuant, NanElement) {
  const std::vector<float> x = group_of({3.0f, kNaN, -1.5f});
  // vLLM: fmaxf drops the NaN from amax (s = fl(3/448)); the clamp turns the NaN into -448.
  for (bool ue8m0 : {false, true}) {
    const auto q = quantize_fp8_per_token_group(x, 1, 128, options(Fp8GroupQuantVariant::kVllmCuda, ue8m0));
    EXPECT_EQ(q.scale(0, 0), ue8m0 ? 0x1p-7f : 3.0f / 448.0f);
    EXPECT_EQ(q.code(0, 1), 0xFE);
    EXPECT_EQ(q.code(0, 0), ue8m0 ? 0x7C : 0x7E);
  }
  // DeepGEMM: torch's amax propagates NaN: NaN scale, every code NaN (0x7F).
  const auto q =
      quantize_fp8_per_token_group(x, 1, 128, options(Fp8GroupQuantVariant::kDeepGemmReference, false));
  EXPECT_TRUE(std::isnan(q.scale(0, 0)));
  for (uint8_t c : q.codes) EXPECT_EQ(c, 0x7F);
}

TEST(Fp8GroupQuant, InfElement) {
  const std::vector<float> x = group_of({3.0f, kInf, -1.5f});
  // vLLM (SPEC-formats.md §1.2): s = Inf; finite elements -> +-0; Inf/Inf = NaN -> -448.
  for (bool ue8m0 : {false, true}) {
    const auto q = quantize_fp8_per_token_group(x, 1, 128, options(Fp8GroupQuantVariant::kVllmCuda, ue8m0));
    EXPECT_EQ(q.scale(0, 0), kInf);
    EXPECT_EQ(q.code(0, 0), 0x00);
    EXPECT_EQ(q.code(0, 2), 0x80);
    EXPECT_EQ(q.code(0, 1), 0xFE);
  }
  // DeepGEMM: s = Inf, 1/s = 0, Inf * 0 = NaN -> 0x7F. UE8M0: ceil_to_ue8m0 clamps to 2^127, and
  // Inf * 2^-127 = Inf, which the non-saturating cast makes NaN.
  auto q = quantize_fp8_per_token_group(x, 1, 128, options(Fp8GroupQuantVariant::kDeepGemmReference, false));
  EXPECT_EQ(q.scale(0, 0), kInf);
  EXPECT_EQ(q.code(0, 1), 0x7F);
  EXPECT_EQ(q.code(0, 0), 0x00);
  q = quantize_fp8_per_token_group(x, 1, 128, options(Fp8GroupQuantVariant::kDeepGemmReference, true));
  EXPECT_EQ(q.scale(0, 0), 0x1p127f);
  EXPECT_EQ(q.code(0, 1), 0x7F);
  EXPECT_EQ(q.code(0, 0), 0x00);  // 3 * 2^-127 underflows E4M3
}

TEST(Fp8GroupQuant, GroupAtTheTopOfTheFp32Range) {
  const std::vector<float> x = group_of({FLT_MAX, -FLT_MAX, 1.0f});
  auto q = quantize_fp8_per_token_group(x, 1, 128);
  EXPECT_EQ(q.scale(0, 0), FLT_MAX / 448.0f);
  EXPECT_EQ(q.code(0, 0), 0x7E);
  EXPECT_EQ(q.code(0, 1), 0xFE);
  // UE8M0: FLT_MAX / 448 ~ 2^119.2 -> 2^120; FLT_MAX * 2^-120 ~ 256 (0x78): no clipping.
  q = quantize_fp8_per_token_group(x, 1, 128, options(Fp8GroupQuantVariant::kVllmCuda, true));
  EXPECT_EQ(q.scale(0, 0), 0x1p120f);
  EXPECT_EQ(q.code(0, 0), 0x78);
}

TEST(Fp8GroupQuant, ShapeRules) {
  const std::vector<float> x(2 * 130, 1.0f);
  EXPECT_THROW(quantize_fp8_per_token_group(x, 2, 130), InputError);  // no partial group
  EXPECT_THROW(quantize_fp8_per_token_group(x, 3, 128), InputError);  // wrong size
  Fp8GroupQuantOptions o;
  o.group = 0;
  EXPECT_THROW(quantize_fp8_per_token_group(x, 2, 130, o), InputError);
  o.group = 64;
  EXPECT_THROW(quantize_fp8_per_token_group(x, 2, 130, o), InputError);
  o.group = 13;
  const auto q = quantize_fp8_per_token_group(x, 2, 130, o);
  EXPECT_EQ(q.scales.size(), 20u);
  EXPECT_TRUE(quantize_fp8_per_token_group({}, 0, 128).codes.empty());
  EXPECT_THROW(quantize_fp8_per_token_group({}, int64_t{1} << 40, int64_t{1} << 40), InputError);
  EXPECT_THROW(quantize_fp8_per_token_group(x, 2, 0), InputError);
  EXPECT_TRUE(quantize_fp8_per_token_group({}, int64_t{1} << 62, 0).codes.empty());
}

// A row of `groups` groups of 128 bf16 values, each group with its own magnitude (2^-20 .. 2^20).
std::vector<float> random_row(int groups) {
  std::vector<float> x;
  for (int g = 0; g < groups; ++g) {
    const int exponent = *rc::gen::inRange(-20, 21);
    for (int i = 0; i < 128; ++i) {
      const float u = static_cast<float>(*rc::gen::inRange(-1000000, 1000001)) / 1e6f;
      x.push_back(round_to_bf16(std::ldexp(u, exponent)));
    }
  }
  return x;
}

RC_GTEST_PROP(Fp8GroupQuant, AmaxMapsToTheTopCodeAndEveryElementIsWithinItsRoundingBound, ()) {
  const int groups = *rc::gen::inRange(1, 4);
  const std::vector<float> x = random_row(groups);
  const auto q = quantize_fp8_per_token_group(x, 1, 128L * groups);
  for (int g = 0; g < groups; ++g) {
    float amax = 1e-10f;
    for (int i = 0; i < 128; ++i) amax = std::fmax(amax, std::fabs(x[static_cast<size_t>(g * 128 + i)]));
    const float s = q.scale(0, g);
    RC_ASSERT(s == amax / 448.0f);
    for (int i = 0; i < 128; ++i) {
      const int64_t c = g * 128 + i;
      const float v = x[static_cast<size_t>(c)];
      if (std::fabs(v) == amax) RC_ASSERT((q.code(0, c) & 0x7F) == 0x7E);
      // |x - fl(q * s)|: x/s rounds to fp32 (2^-24 relative), then to E4M3 (half an ulp: 2^-4 relative
      // in the normal range, 2^-10 absolute below 2^-6), the dequant product rounds once more
      // (2^-24 relative of at most 448 s).
      const double bound = std::fabs(v) * (0x1p-4 + 0x1p-22) + s * (0x1p-10 + 448.0 * 0x1p-23);
      RC_ASSERT(std::fabs(static_cast<double>(v) - q.dequant(0, c)) <= bound);
    }
  }
}

RC_GTEST_PROP(Fp8GroupQuant, Ue8m0ScalesAreTheNextPowerOfTwoAndNeverClip, ()) {
  const std::vector<float> x = random_row(1);
  for (auto v : {Fp8GroupQuantVariant::kVllmCuda, Fp8GroupQuantVariant::kDeepGemmReference}) {
    const auto q = quantize_fp8_per_token_group(x, 1, 128, options(v, true));
    const auto plain = quantize_fp8_per_token_group(x, 1, 128, options(v, false));
    const float s = q.scale(0, 0), s0 = plain.scale(0, 0);
    RC_ASSERT((std::bit_cast<uint32_t>(s) & 0x007FFFFFu) == 0u);  // a normal power of two
    // vLLM floors the scale at 1e-10 before rounding it up (irrelevant unless amax < 4.48e-8).
    const float floor = v == Fp8GroupQuantVariant::kVllmCuda ? std::fmax(s0, 1e-10f) : s0;
    RC_ASSERT(s >= floor && s < 2 * floor);
    for (int i = 0; i < 128; ++i) RC_ASSERT(std::fabs(e4m3_to_float(q.code(0, i))) <= 448.0f);
    for (int i = 0; i < 128; ++i) RC_ASSERT(std::fabs(x[static_cast<size_t>(i)] / s) <= 448.0f);
  }
}

}  // namespace
}  // namespace moefuzz
