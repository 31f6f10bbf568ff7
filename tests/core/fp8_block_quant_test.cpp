// core/fp8_block_quant.h against the formula of SPEC-formats.md §1.1/§1.2 (DeepGEMM
// per_block_cast_to_fp8), worked by hand:
//   * the header example: N = 130, K = 200, three partial blocks, each scale from its own valid
//     elements only (the zero padding never enters amax);
//   * all-zero blocks (the 1e-4 floor), UE8M0 scales (ceil_to_ue8m0), NaN and Inf in one block
//     (the other blocks untouched);
//   * RapidCheck over shapes that are not multiples of 128: every element within the derived
//     rounding bound, each block's amax element at the top code.
#include "core/fp8_block_quant.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/bf16.h"
#include "core/errors.h"

namespace moefuzz {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(Fp8BlockQuant, PartialBlocksTakeTheirScaleFromTheirOwnElements) {
  std::vector<float> w(130 * 200, 0.5f);
  w[129 * 200 + 199] = 7.0f;
  w[0] = -300.0f;  // block (0, 0) only
  const auto q = quantize_fp8_block_weight(w, 130, 200);
  ASSERT_EQ(q.scale_rows, 2);
  ASSERT_EQ(q.scale_cols, 2);
  EXPECT_EQ(q.scale(0, 0), 300.0f / 448.0f);
  EXPECT_EQ(q.scale(0, 1), 0.5f / 448.0f);  // 128 x 72
  EXPECT_EQ(q.scale(1, 0), 0.5f / 448.0f);  // 2 x 128
  // Block (1, 1), 2 x 72: amax 7, s = 7/448 = 2^-6 exactly; 7 * 64 = 448 (0x7E); 0.5 * 64 = 32 =
  // 2^5 (0x60).
  EXPECT_EQ(q.scale(1, 1), 0x1p-6f);
  EXPECT_EQ(q.code(129, 199), 0x7E);
  EXPECT_EQ(q.code(128, 128), 0x60);
  EXPECT_EQ(q.dequant(128, 128), 0.5f);
  EXPECT_EQ(q.code(0, 0), 0xFE);
  EXPECT_EQ(q.code(0, 150), 0x7E);  // 0.5 / fl(0.5/448) ~ 448
  EXPECT_EQ(q.code(129, 5), 0x7E);
}

TEST(Fp8BlockQuant, AllZeroBlocksAndUe8m0Scales) {
  std::vector<float> w(128 * 256, 0.0f);
  w[5] = 3.0f;  // block (0, 0): amax 3
  w[6] = -1.5f;
  auto q = quantize_fp8_block_weight(w, 128, 256);
  EXPECT_EQ(q.scale(0, 1), 1e-4f / 448.0f);  // all zero: DeepGEMM's clamp(1e-4)
  EXPECT_EQ(q.scale(0, 0), 3.0f / 448.0f);
  q = quantize_fp8_block_weight(w, 128, 256, /*ue8m0=*/true);
  EXPECT_EQ(q.scale(0, 1), 0x1p-22f);  // 2.23e-7 in (2^-23, 2^-22]
  EXPECT_EQ(q.scale(0, 0), 0x1p-7f);   // 0.0067 in (2^-8, 2^-7]
  EXPECT_EQ(q.code(0, 5), 0x7C);       // 384 = 1.5 * 2^8
  EXPECT_EQ(q.code(0, 6), 0xF4);       // -192 = -1.5 * 2^7
  for (int64_t k = 128; k < 256; ++k) EXPECT_EQ(q.code(77, k), 0x00);
}

TEST(Fp8BlockQuant, NanAndInfStayInTheirBlock) {
  std::vector<float> w(2 * 256, 1.0f);
  w[3] = std::numeric_limits<float>::quiet_NaN();  // block (0, 0)
  w[200] = kInf;                                   // block (0, 1)
  const auto q = quantize_fp8_block_weight(w, 2, 256);
  EXPECT_TRUE(std::isnan(q.scale(0, 0)));
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t k = 0; k < 128; ++k) EXPECT_EQ(q.code(n, k), 0x7F) << n << "," << k;
  // Inf: s = Inf, 1/s = 0: finite elements 0, Inf * 0 = NaN.
  EXPECT_EQ(q.scale(0, 1), kInf);
  EXPECT_EQ(q.code(0, 200), 0x7F);
  EXPECT_EQ(q.code(1, 201), 0x00);
}

TEST(Fp8BlockQuant, CodesComeFromTheReciprocalNotTheQuotient) {
  // per_block_cast_to_fp8 rounds fl(w * fl(1 / S)), not fl(w / S): search the neighbourhoods of E4M3
  // midpoints (times S) for weights where the two give different codes.
  const float s = 3.0f / 448.0f;
  int found = 0;
  for (int c = 0x30; c < 0x7D && found < 16; ++c) {
    const float mid =
        (e4m3_to_float(static_cast<uint8_t>(c)) + e4m3_to_float(static_cast<uint8_t>(c + 1))) / 2;
    float x = mid * s;
    for (int i = 0; i < 8; ++i) x = std::nextafter(x, 0.0f);
    for (int step = 0; step < 16; ++step, x = std::nextafter(x, 3.0f)) {
      const uint8_t by_reciprocal = e4m3_from_float_nosat(x * (1.0f / s));
      if (by_reciprocal == e4m3_from_float_nosat(x / s)) continue;
      ++found;
      const auto q = quantize_fp8_block_weight(std::vector<float>{3.0f, x}, 1, 2);
      EXPECT_EQ(q.code(0, 1), by_reciprocal) << x;
    }
  }
  EXPECT_GT(found, 0) << "no weight separates the two formulas: the test compared nothing";
}

TEST(Fp8BlockQuant, SizeChecks) {
  const std::vector<float> w(10, 1.0f);
  EXPECT_THROW(quantize_fp8_block_weight(w, 3, 4), InputError);
  EXPECT_THROW(quantize_fp8_block_weight(w, -1, 4), InputError);
  EXPECT_THROW(quantize_fp8_block_weight({}, int64_t{1} << 40, int64_t{1} << 40), InputError);
  EXPECT_THROW(quantize_fp8_block_weight(w, 5, 0), InputError);
  EXPECT_TRUE(quantize_fp8_block_weight({}, int64_t{1} << 62, 0).codes.empty());
  const auto q = quantize_fp8_block_weight(w, 2, 5);
  EXPECT_EQ(q.scales.size(), 1u);
  EXPECT_EQ(q.scale(0, 0), 1.0f / 448.0f);
}

RC_GTEST_PROP(Fp8BlockQuant, EveryElementIsWithinItsRoundingBound, ()) {
  const int64_t rows = *rc::gen::inRange<int64_t>(1, 260), cols = *rc::gen::inRange<int64_t>(1, 260);
  const bool ue8m0 = *rc::gen::arbitrary<bool>();
  std::vector<float> w(static_cast<size_t>(rows * cols));
  const int exponent = *rc::gen::inRange(-12, 13);
  for (auto& v : w)
    v = round_to_bf16(std::ldexp(static_cast<float>(*rc::gen::inRange(-1000, 1001)) / 1000.0f, exponent));
  const auto q = quantize_fp8_block_weight(w, rows, cols, ue8m0);
  RC_ASSERT(q.scale_rows == (rows + 127) / 128 && q.scale_cols == (cols + 127) / 128);
  std::vector<float> amax(q.scales.size(), 0.0f);
  for (int64_t n = 0; n < rows; ++n)
    for (int64_t k = 0; k < cols; ++k) {
      float& a = amax[static_cast<size_t>((n / 128) * q.scale_cols + k / 128)];
      a = std::fmax(a, std::fabs(w[static_cast<size_t>(n * cols + k)]));
    }
  for (int64_t n = 0; n < rows; ++n) {
    for (int64_t k = 0; k < cols; ++k) {
      const float v = w[static_cast<size_t>(n * cols + k)];
      const float s = q.scale(n / 128, k / 128);
      // Same derivation as the per-token-group bound: 2^-24 (v * fl(1/s): two fp32 roundings), half an
      // E4M3 ulp (2^-4 relative, 2^-10 absolute in scaled units), the dequant product 2^-24.
      const double bound = std::fabs(v) * (0x1p-4 + 0x1p-21) + s * (0x1p-10 + 448.0 * 0x1p-23);
      RC_ASSERT(std::fabs(static_cast<double>(v) - q.dequant(n, k)) <= bound);
      const float a = amax[static_cast<size_t>((n / 128) * q.scale_cols + k / 128)];
      if (!ue8m0 && a >= 1e-4f && std::fabs(v) == a) RC_ASSERT((q.code(n, k) & 0x7F) == 0x7E);
    }
  }
}

}  // namespace
}  // namespace moefuzz
