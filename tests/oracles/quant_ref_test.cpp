// Hand-computed corners of the reference NVFP4 quantizer (oracles/quant_ref.h). Every expected value
// is derived in the comment next to it from SPEC.md §1.1-1.5, not observed from the code.
#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <vector>

#include "core/e2m1.h"
#include "core/e4m3.h"
#include "core/errors.h"
#include "oracles/quant_ref.h"

namespace moefuzz {
namespace {

constexpr QuantizerVariant kAllVariants[] = {QuantizerVariant::kFastMath, QuantizerVariant::kExact,
                                             QuantizerVariant::kReference};
constexpr ZeroScaleRule kAllRules[] = {ZeroScaleRule::kVecMaxTest, ZeroScaleRule::kScaleTest};

std::vector<float> block_of(float fill) { return std::vector<float>(16, fill); }

TEST(QuantRef, ZeroBlockHasZeroScaleAndZeroCodesInEveryVariant) {
  const std::vector<float> x = block_of(0.0f);
  for (auto v : kAllVariants) {
    for (auto r : kAllRules) {
      const QuantizedRowRef q = quantize_row_ref(x, 1.0f, v, r);
      EXPECT_EQ(q.scales[0], 0x00);
      for (size_t i = 0; i < 16; ++i) EXPECT_EQ(e2m1_canonical(q.codes[i]), 0) << i;
    }
  }
}

// S = 1, outScale = rcp(fl(1 * rcp(1))) = 1 exactly, so y = x and the E2M1 rules apply directly.
// amax = 6.375: sf32 = fl(6.375 * RN(1/6)) = fl(1.0625000317) = 1.0625, which ties between E4M3 1.0
// and 1.125 and goes to even (1.0, byte 0x38). So 6.375 itself clips to 6 (code 7).
TEST(QuantRef, ThresholdsTiesAndClipAtUnitScale) {
  std::vector<float> x = {6.375f, 5.0f,  3.5f, 2.5f, 1.75f, 1.25f, 0.75f, 0.25f,
                          -0.1f,  -3.0f, 0.3f, 4.9f, 1.0f,  0.0f,  -6.0f, 2.0f};
  // Expected codes from the RN-even thresholds (SPEC.md §1.1): 6.375 -> 6 (clip), 5 -> 4 (tie),
  // 3.5 -> 4 (tie), 2.5 -> 2 (tie), 1.75 -> 2 (tie), 1.25 -> 1 (tie), 0.75 -> 1 (tie), 0.25 -> 0 (tie),
  // -0.1 -> -0, -3 -> -3, 0.3 -> 0.5, 4.9 -> 4, 1 -> 1, 0 -> 0, -6 -> -6, 2 -> 2.
  const std::vector<uint8_t> expected = {0x7, 0x6, 0x6, 0x4, 0x4, 0x2, 0x2, 0x0,
                                         0x0, 0xD, 0x1, 0x6, 0x2, 0x0, 0xF, 0x4};
  for (auto v : kAllVariants) {
    const QuantizedRowRef q = quantize_row_ref(x, 1.0f, v, ZeroScaleRule::kVecMaxTest);
    EXPECT_EQ(q.scales[0], 0x38) << static_cast<int>(v);
    for (size_t i = 0; i < 16; ++i) {
      EXPECT_EQ(e2m1_canonical(q.codes[i]), expected[i])
          << "variant " << static_cast<int>(v) << " element " << i;
      EXPECT_TRUE(q.admits(i, expected[i]));
    }
  }
}

// Fast math: an element exactly on a threshold (y = 0.75) may land 1 ulp either side in the kernel
// (rcp.approx), so both neighbours (0.5 = code 1, 1.0 = code 2) are admitted; 1.0 is 0.25 away from
// every threshold, so only its own code is. The exact and reference variants are bit-exact: no alt.
TEST(QuantRef, FastMathAdmitsBothNeighboursOnlyNearAThreshold) {
  std::vector<float> x = block_of(1.0f);
  x[0] = 0.75f;
  x[1] = 6.0f;  // amax 6 -> sf32 = fl(6 * RN(1/6)) = 1.0 (6 * 0x3E2AAAAB = 1.00000003, rounds to 1)
  const QuantizedRowRef fast =
      quantize_row_ref(x, 1.0f, QuantizerVariant::kFastMath, ZeroScaleRule::kVecMaxTest);
  EXPECT_EQ(fast.scales[0], e4m3_from_float(1.0f));
  EXPECT_TRUE(fast.admits(0, 0x2));
  EXPECT_TRUE(fast.admits(0, 0x1));
  EXPECT_FALSE(fast.admits(0, 0x3));
  EXPECT_TRUE(fast.admits(2, 0x2));
  EXPECT_FALSE(fast.admits(2, 0x1));
  EXPECT_FALSE(fast.admits(2, 0x3));
  for (auto v : {QuantizerVariant::kExact, QuantizerVariant::kReference}) {
    const QuantizedRowRef q = quantize_row_ref(x, 1.0f, v, ZeroScaleRule::kVecMaxTest);
    EXPECT_TRUE(q.admits(0, 0x2));
    EXPECT_FALSE(q.admits(0, 0x1));
  }
}

TEST(QuantRef, NegativeZeroCodeEqualsZero) {
  std::vector<float> x = block_of(1.0f);
  x[0] = 6.0f;   // amax 6 -> block scale 1.0, outScale 1 (see above)
  x[3] = -0.1f;  // y = -0.1 -> E2M1 -0 (code 0x8)
  const QuantizedRowRef q =
      quantize_row_ref(x, 1.0f, QuantizerVariant::kReference, ZeroScaleRule::kScaleTest);
  EXPECT_TRUE(q.admits(3, 0x0));
  EXPECT_TRUE(q.admits(3, 0x8));
  EXPECT_FALSE(q.admits(3, 0x9));
}

// amax = 2^-8, S = 1: sf32 = fl(2^-8 * RN(1/6)) ~ 6.5e-4 < 2^-10 ~ 9.8e-4, so the E4M3 scale underflows
// to 0 (SPEC.md §1.3). FlashInfer (vecMax test, fast math): outScale = rcp(0) = +Inf, so x > 0 -> +6,
// x < 0 -> -6, x = 0 -> 0*Inf = NaN -> +6. Exact path (vecMax test): outScale = FLT_MAX, so 0 stays 0
// and 2^-8 * FLT_MAX = 2^120 saturates to 6. vLLM/sgl-kernel (sfd test) and the references: codes 0.
TEST(QuantRef, E4m3UnderflowFollowsEachZeroScaleRule) {
  std::vector<float> x = block_of(0.0f);
  x[0] = 0x1p-8f;
  x[1] = -0x1p-8f;
  const QuantizedRowRef fi =
      quantize_row_ref(x, 1.0f, QuantizerVariant::kFastMath, ZeroScaleRule::kVecMaxTest);
  EXPECT_EQ(fi.scales[0], 0x00);
  EXPECT_EQ(fi.codes[0], 0x7);
  EXPECT_EQ(fi.codes[1], 0xF);
  EXPECT_EQ(fi.codes[2], 0x7);
  const QuantizedRowRef ex = quantize_row_ref(x, 1.0f, QuantizerVariant::kExact, ZeroScaleRule::kVecMaxTest);
  EXPECT_EQ(ex.codes[0], 0x7);
  EXPECT_EQ(ex.codes[1], 0xF);
  EXPECT_EQ(e2m1_canonical(ex.codes[2]), 0x0);
  for (auto v : kAllVariants) {
    const QuantizedRowRef q = quantize_row_ref(x, 1.0f, v, ZeroScaleRule::kScaleTest);
    EXPECT_EQ(q.scales[0], 0x00);
    for (size_t i = 0; i < 16; ++i) EXPECT_EQ(e2m1_canonical(q.codes[i]), 0x0) << i;
  }
}

// amax = 4480, S = 1: sf32 = 4480/6 ~ 746.7 > 448, so the scale saturates to 448 (0x7E) in every
// variant (satfinite, or the reference's clamp). outScale ~ 1/448: 4480 -> ~10 clips to 6,
// 2688 -> ~6 -> 6, 448 -> ~1.0 -> 1, -1344 -> ~-3 -> -3 (all far from thresholds).
TEST(QuantRef, ScaleSaturatesAt448AndElementsClip) {
  std::vector<float> x = block_of(0.0f);
  x[0] = 4480.0f;
  x[1] = 2688.0f;
  x[2] = 448.0f;
  x[3] = -1344.0f;
  for (auto v : kAllVariants) {
    const QuantizedRowRef q = quantize_row_ref(x, 1.0f, v, ZeroScaleRule::kScaleTest);
    EXPECT_EQ(q.scales[0], 0x7E);
    EXPECT_EQ(q.codes[0], 0x7);
    EXPECT_EQ(q.codes[1], 0x7);
    EXPECT_EQ(q.codes[2], 0x2);
    EXPECT_EQ(q.codes[3], 0xD);
  }
  // S*amax/6 overflowing fp32 to Inf still gives 448 (satfinite; the reference clamps Inf to 448).
  const QuantizedRowRef inf =
      quantize_row_ref(x, FLT_MAX, QuantizerVariant::kReference, ZeroScaleRule::kScaleTest);
  EXPECT_EQ(inf.scales[0], 0x7E);
}

TEST(QuantRef, NanInputMakesItsBlockUnverified) {
  std::vector<float> x(32, 1.0f);
  x[5] = NAN;
  const QuantizedRowRef q =
      quantize_row_ref(x, 1.0f, QuantizerVariant::kFastMath, ZeroScaleRule::kVecMaxTest);
  EXPECT_TRUE(q.admits(0, 0xF));  // block 0 contains the NaN
  EXPECT_TRUE(q.admits_scale(0, 0x12));
  EXPECT_FALSE(q.admits(16, 0xF));  // block 1 is ordinary
}

TEST(QuantRef, RejectsRowNotMultipleOf16) {
  std::vector<float> x(17, 1.0f);
  EXPECT_THROW(quantize_row_ref(x, 1.0f, QuantizerVariant::kExact, ZeroScaleRule::kVecMaxTest), InputError);
}

}  // namespace
}  // namespace moefuzz
