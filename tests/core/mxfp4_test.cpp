// core/mxfp4.h against SPEC-formats.md §3.1-§3.3, worked by hand for both scale rules:
//   * golden blocks: amax 6 (the header example), amax 5 (RNE vs half-away ties), amax 7 (Triton
//     rounds the scale up, OCP clips to 6), FLT_MAX, subnormal amax (scale codes 0 and 1), all zero;
//   * hostile corners: a NaN element (Triton drops it from amax, OCP makes the block NaN), an Inf
//     element (scale 0xFF, a NaN block in both), a partial last block (scale from its valid elements);
//   * RapidCheck: Triton's rounded-up scale never clips and every element is within half an E2M1 step;
//     OCP's scale is floor(log2 amax) - 2; codes survive packing (core/fp4_packing.h).
#include "core/mxfp4.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

#include "core/bf16.h"
#include "core/errors.h"
#include "core/fp4_packing.h"

namespace moefuzz {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr auto kTriton = Mxfp4ScaleRule::kTritonRoundUp;
constexpr auto kOcp = Mxfp4ScaleRule::kOcp;

std::vector<float> block_of(std::vector<float> head) {
  head.resize(32, 0.0f);
  return head;
}

TEST(Mxfp4, HeaderExample) {
  const auto q = quantize_mxfp4(block_of({6.0f, -0.75f}), 1, 32);
  EXPECT_EQ(q.scale(0, 0), 127);
  EXPECT_EQ(q.code(0, 0), 0x7);
  EXPECT_EQ(q.code(0, 1), 0xA);
  EXPECT_EQ(q.dequant(0, 1), -1.0f);
  EXPECT_EQ(q.code(0, 31), 0x0);
}

TEST(Mxfp4, TiesRoundToEvenUnderTritonAndAwayUnderOcp) {
  // amax 5. Triton: d = 5/6 -> 2^0 (code 127); 5 -> 4 (code 6), 2.5 -> 2 (code 4), 0.25 -> 0.
  // OCP: floor(log2 5) - 2 = 0 (code 127); 5 -> 6 (code 7), 2.5 -> 3 (code 5), 0.25 -> 0.5 (code 1).
  const std::vector<float> x = block_of({5.0f, 2.5f, 0.25f, -1.75f});
  const auto t = quantize_mxfp4(x, 1, 32, kTriton);
  EXPECT_EQ(t.scale(0, 0), 127);
  EXPECT_EQ(t.code(0, 0), 0x6);
  EXPECT_EQ(t.code(0, 1), 0x4);
  EXPECT_EQ(t.code(0, 2), 0x0);
  EXPECT_EQ(t.code(0, 3), 0xC);  // -1.75 -> -2 (even)
  const auto o = quantize_mxfp4(x, 1, 32, kOcp);
  EXPECT_EQ(o.scale(0, 0), 127);
  EXPECT_EQ(o.code(0, 0), 0x7);
  EXPECT_EQ(o.code(0, 1), 0x5);
  EXPECT_EQ(o.code(0, 2), 0x1);
  EXPECT_EQ(o.code(0, 3), 0xC);  // -1.75 -> -2 (away)
}

TEST(Mxfp4, TritonRoundsTheScaleUpWhereOcpClips) {
  // amax 7. Triton: d = 7/6 -> 2^1 (code 128), 7/2 = 3.5 ties to 4 (code 6): dequant 8.
  // OCP: floor(log2 7) - 2 = 0 (code 127), 7 > 6 clips to 6 (code 7) (SPEC-formats.md §3.2).
  const std::vector<float> x = block_of({7.0f, 1.0f});
  const auto t = quantize_mxfp4(x, 1, 32, kTriton);
  EXPECT_EQ(t.scale(0, 0), 128);
  EXPECT_EQ(t.code(0, 0), 0x6);
  EXPECT_EQ(t.dequant(0, 0), 8.0f);
  EXPECT_EQ(t.code(0, 1), 0x1);  // 0.5 * 2
  const auto o = quantize_mxfp4(x, 1, 32, kOcp);
  EXPECT_EQ(o.scale(0, 0), 127);
  EXPECT_EQ(o.code(0, 0), 0x7);
  EXPECT_EQ(o.dequant(0, 0), 6.0f);
}

TEST(Mxfp4, TopOfTheFp32Range) {
  // FLT_MAX. Triton: d = FLT_MAX/6 ~ 1.33 * 2^125 -> 2^126 (code 253); FLT_MAX * 2^-126 ~ 3.99999 -> 4.
  // OCP: floor(log2 FLT_MAX) - 2 = 125 (code 252); FLT_MAX / 2^125 ~ 7.99999 clips to 6.
  const std::vector<float> x = block_of({FLT_MAX});
  const auto t = quantize_mxfp4(x, 1, 32, kTriton);
  EXPECT_EQ(t.scale(0, 0), 253);
  EXPECT_EQ(t.code(0, 0), 0x6);
  const auto o = quantize_mxfp4(x, 1, 32, kOcp);
  EXPECT_EQ(o.scale(0, 0), 252);
  EXPECT_EQ(o.code(0, 0), 0x7);
}

TEST(Mxfp4, SubnormalAndZeroScales) {
  // amax 2^-125. Triton: d = 2^-125 / 6 is subnormal -> code 1 (2^-126), element 2^-125 * 2^126 = 2.
  // OCP: e = -125 - 2 = -127 (code 0, the subnormal 2^-127), element 4. Both dequantize exactly.
  const std::vector<float> x = block_of({0x1p-125f});
  const auto t = quantize_mxfp4(x, 1, 32, kTriton);
  EXPECT_EQ(t.scale(0, 0), 1);
  EXPECT_EQ(t.code(0, 0), 0x4);
  EXPECT_EQ(t.dequant(0, 0), 0x1p-125f);
  const auto o = quantize_mxfp4(x, 1, 32, kOcp);
  EXPECT_EQ(o.scale(0, 0), 0);
  EXPECT_EQ(o.code(0, 0), 0x6);
  EXPECT_EQ(o.dequant(0, 0), 0x1p-125f);
  // amax 2^-140: below what the scales reach; the element underflows to 0 in both.
  EXPECT_EQ(quantize_mxfp4(block_of({0x1p-140f}), 1, 32, kTriton).code(0, 0), 0x0);
  EXPECT_EQ(quantize_mxfp4(block_of({0x1p-140f}), 1, 32, kOcp).scale(0, 0), 0);
  // All zero. Triton: d = 0 -> code 0 and multiplier 0. OCP: amax counts as 2^-126, e = -128 clamps to
  // -127: code 0. Every element 0.
  for (auto rule : {kTriton, kOcp}) {
    const auto z = quantize_mxfp4(std::vector<float>(64, 0.0f), 2, 32, rule);
    for (uint8_t s : z.scales) EXPECT_EQ(s, 0);
    for (uint8_t c : z.codes) EXPECT_EQ(c, 0);
  }
}

TEST(Mxfp4, NanAndInfElements) {
  // NaN. Triton: dropped from amax (3 -> d = 0.5 -> code 126, multiplier 2); 3 * 2 = 6; NaN -> 0x7.
  const std::vector<float> n = block_of({3.0f, std::numeric_limits<float>::quiet_NaN()});
  const auto t = quantize_mxfp4(n, 1, 32, kTriton);
  EXPECT_EQ(t.scale(0, 0), 126);
  EXPECT_EQ(t.code(0, 0), 0x7);
  EXPECT_EQ(t.code(0, 1), 0x7);
  // OCP: torch.max propagates NaN: a NaN block.
  const auto o = quantize_mxfp4(n, 1, 32, kOcp);
  EXPECT_EQ(o.scale(0, 0), kE8m0NaNCode);
  EXPECT_TRUE(std::isnan(o.dequant(0, 0)));
  // Inf. Triton: d = Inf carries into 0xFF; the multiplier 1/Inf = 0: finite elements +-0, Inf * 0 = NaN
  // -> 0x7. The block decodes to NaN. OCP: NaN block.
  const std::vector<float> i = block_of({3.0f, kInf, -1.0f});
  const auto ti = quantize_mxfp4(i, 1, 32, kTriton);
  EXPECT_EQ(ti.scale(0, 0), kE8m0NaNCode);
  EXPECT_EQ(ti.code(0, 0), 0x0);
  EXPECT_EQ(ti.code(0, 2), 0x8);
  EXPECT_EQ(ti.code(0, 1), 0x7);
  EXPECT_TRUE(std::isnan(ti.dequant(0, 0)));
  EXPECT_EQ(quantize_mxfp4(i, 1, 32, kOcp).scale(0, 0), kE8m0NaNCode);
}

TEST(Mxfp4, PartialLastBlockTakesItsScaleFromItsValidElements) {
  // K = 40: block 0 = 32 ones (Triton d = 1/6 -> 2^-2, code 125; 1 * 4 = 4, code 6), block 1 = 8
  // elements of 0.5 (d = 1/12 -> 2^-3, code 124; 0.5 * 8 = 4). OCP: floor(log2 1) - 2 = -2 (125) and
  // floor(log2 0.5) - 2 = -3 (124), same codes.
  std::vector<float> x(40, 1.0f);
  for (int c = 32; c < 40; ++c) x[static_cast<size_t>(c)] = 0.5f;
  for (auto rule : {kTriton, kOcp}) {
    const auto q = quantize_mxfp4(x, 1, 40, rule);
    ASSERT_EQ(q.scale_cols, 2);
    EXPECT_EQ(q.scale(0, 0), 125);
    EXPECT_EQ(q.scale(0, 1), 124);
    EXPECT_EQ(q.code(0, 39), 0x6);
    EXPECT_EQ(q.dequant(0, 39), 0.5f);
  }
}

TEST(Mxfp4, DequantUnderEachPathsDecode) {
  // SPEC-formats.md §3.3 [MEASURED] on the H200 (bf16 multiply by the shifted scale): scale code 0
  // gives 0; 0xFE * 6 overflows to Inf; 0xFF gives Inf (0 * Inf = NaN for a zero element).
  Mxfp4Quantized q;
  q.rows = 1;
  q.cols = 96;
  q.scale_cols = 3;
  q.codes.assign(96, 0x7);  // +6
  q.codes[64] = 0x0;        // a zero element in the 0xFF block
  q.scales = {0x00, 0xFE, 0xFF};
  EXPECT_EQ(q.dequant(0, 0), 6.0f * 0x1p-127f);
  EXPECT_EQ(q.dequant(0, 0, E8m0Decode::kExponentShift), 0.0f);
  EXPECT_EQ(q.dequant(0, 0, E8m0Decode::kLdexp), 6.0f * 0x1p-127f);
  for (auto d : {E8m0Decode::kOcp, E8m0Decode::kExponentShift, E8m0Decode::kLdexp})
    EXPECT_EQ(q.dequant(0, 40, d), kInf);
  EXPECT_TRUE(std::isnan(q.dequant(0, 70)));
  EXPECT_EQ(q.dequant(0, 70, E8m0Decode::kExponentShift), kInf);
  EXPECT_TRUE(std::isnan(q.dequant(0, 64, E8m0Decode::kExponentShift)));
  EXPECT_TRUE(std::isnan(q.dequant(0, 64, E8m0Decode::kLdexp)));
}

TEST(Mxfp4, SizeChecks) {
  EXPECT_THROW(quantize_mxfp4(std::vector<float>(10), 3, 4), InputError);
  EXPECT_THROW(quantize_mxfp4(std::vector<float>(10), 2, -5), InputError);
  EXPECT_TRUE(quantize_mxfp4({}, 0, 0).codes.empty());
  EXPECT_THROW(quantize_mxfp4({}, int64_t{1} << 40, int64_t{1} << 40), InputError);  // no overflow
  EXPECT_THROW(quantize_mxfp4(std::vector<float>(3), 5, 0), InputError);
  EXPECT_TRUE(quantize_mxfp4({}, int64_t{1} << 62, 0).codes.empty());  // returns at once
}

std::vector<float> random_blocks(int64_t n) {
  std::vector<float> x(static_cast<size_t>(n));
  const int exponent = *rc::gen::inRange(-60, 61);
  for (auto& v : x)
    v = round_to_bf16(std::ldexp(static_cast<float>(*rc::gen::inRange(-10000, 10001)) / 1e4f, exponent));
  return x;
}

// Half the E2M1 spacing at magnitude |y| (|y| <= 6): 0.25 below 2, 0.5 below 4, 1 above.
double half_step(double y) { return y < 2 ? 0.25 : y < 4 ? 0.5 : 1.0; }

RC_GTEST_PROP(Mxfp4, TritonScalesNeverClipAndElementsAreWithinHalfAStep, ()) {
  const int64_t cols = *rc::gen::inRange<int64_t>(1, 200);
  const std::vector<float> x = random_blocks(cols);
  const auto q = quantize_mxfp4(x, 1, cols, kTriton);
  for (int64_t b = 0; b < q.scale_cols; ++b) {
    float amax = 0.0f;
    for (int64_t c = b * 32; c < std::min(cols, b * 32 + 32); ++c)
      amax = std::fmax(amax, std::fabs(x[static_cast<size_t>(c)]));
    if (amax == 0.0f) continue;
    const double scale = e8m0_to_float(q.scale(0, b));
    const double d = amax / 6.0f;  // fl(amax / 6), as the quantizer computes it
    if (std::isnormal(static_cast<float>(d))) RC_ASSERT(scale >= d && scale < 2 * d);
    for (int64_t c = b * 32; c < std::min(cols, b * 32 + 32); ++c) {
      const double y = std::fabs(x[static_cast<size_t>(c)]) / scale;  // exact: a power of two
      RC_ASSERT(y <= 6.0);
      RC_ASSERT(std::fabs(x[static_cast<size_t>(c)] - static_cast<double>(q.dequant(0, c))) <=
                scale * half_step(y));
    }
  }
  // The codes pack and unpack unchanged (two per byte, element 2j low).
  std::vector<uint8_t> codes = q.codes;
  if (codes.size() % 2) codes.push_back(0);
  RC_ASSERT(unpack_fp4(pack_fp4(codes)) == codes);
}

RC_GTEST_PROP(Mxfp4, OcpScaleIsFloorLog2AmaxMinusTwo, ()) {
  const std::vector<float> x = random_blocks(32);
  const auto q = quantize_mxfp4(x, 1, 32, kOcp);
  float amax = 0.0f;
  for (float v : x) amax = std::fmax(amax, std::fabs(v));
  const int e = amax == 0.0f ? -127 : std::max(std::ilogb(amax) - 2, -127);
  RC_ASSERT(q.scale(0, 0) == e + 127);
  for (int c = 0; c < 32; ++c)
    RC_ASSERT(std::fabs(x[static_cast<size_t>(c)]) / e8m0_to_float(q.scale(0, 0)) < 8.0);
}

}  // namespace
}  // namespace moefuzz
