// The FP8 block GEMM's inner product (kernels/cpu/fp8_row_dot.h): each SIMD loop (AVX2, AVX-512; a
// loop this CPU lacks runs the next slower one, and the test says so) gives the scalar loop's bits
// on E4M3 operands over their whole range (subnormals, +-448, signed zeros), NaN codes, scales of
// every size, one to eight K blocks.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "core/e4m3.h"
#include "kernels/cpu/fp8_row_dot.h"

namespace moefuzz::cpu {
namespace {

TEST(Fp8RowDot, EveryLoopGivesTheScalarBits) {
  if (fp8_row_loop() != Fp8RowLoop::kAvx512)
    std::printf("fp8-row-dot: this CPU has no AVX-512: that loop is not tested here\n");
  std::mt19937_64 rng(20261207);
  int64_t compared = 0, nan = 0;
  for (int trial = 0; trial < 500; ++trial) {
    const int64_t K = 128 * (1 + static_cast<int64_t>(rng() % 8)), Kb = K / 128;
    const bool with_nan = trial % 7 == 0;
    auto value = [&] {
      uint8_t code = static_cast<uint8_t>(rng());
      if (!with_nan && (code & 0x7F) == 0x7F) code ^= 1;
      return e4m3_to_float(code);
    };
    std::vector<float> x(static_cast<size_t>(K)), w(static_cast<size_t>(4 * K)), sa(static_cast<size_t>(Kb)),
        sb(static_cast<size_t>(Kb));
    for (float& v : x) v = value();
    for (float& v : w) v = value();
    for (int64_t kb = 0; kb < Kb; ++kb) {
      sa[static_cast<size_t>(kb)] =
          std::ldexp(1.0f + static_cast<float>(rng() % 256) / 256.0f, static_cast<int>(rng() % 60) - 40);
      sb[static_cast<size_t>(kb)] = std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20);
    }
    float want[4];
    fp8_row_columns(Fp8RowLoop::kScalar, x.data(), sa.data(), w.data(), 4, K, sb.data(), want);
    for (const Fp8RowLoop loop : {Fp8RowLoop::kAvx2, Fp8RowLoop::kAvx512}) {
      float got[4];
      fp8_row_columns(loop, x.data(), sa.data(), w.data(), 4, K, sb.data(), got);
      for (int c = 0; c < 4; ++c, ++compared) {
        if (std::isnan(want[c])) {  // a NaN's sign may come from another operand
          EXPECT_TRUE(std::isnan(got[c])) << "trial " << trial << " column " << c;
          ++nan;
          continue;
        }
        ASSERT_EQ(std::bit_cast<uint32_t>(got[c]), std::bit_cast<uint32_t>(want[c]))
            << "trial " << trial << " loop " << static_cast<int>(loop) << " K " << K << " column " << c
            << ": " << got[c] << " vs " << want[c];
      }
    }
  }
  EXPECT_GT(nan, 0);
  EXPECT_LT(nan, compared / 4);
}

TEST(Fp8RowDot, FewerColumnsAndBadShapes) {
  const int64_t K = 256;
  std::vector<float> x(K, 1.5f), w(4 * K, -2.0f), sa(2, 0.5f), sb(2, 4.0f);
  float acc[4] = {7, 7, 7, 7};
  fp8_row_columns(fp8_row_loop(), x.data(), sa.data(), w.data(), 3, K, sb.data(), acc);
  for (int c = 0; c < 3; ++c) EXPECT_EQ(acc[c], 2 * (128 * -3.0f * 0.5f * 4.0f));
  EXPECT_EQ(acc[3], 7.0f) << "only cols columns are written";
  EXPECT_THROW(fp8_row_columns(fp8_row_loop(), x.data(), sa.data(), w.data(), 5, K, sb.data(), acc),
               std::logic_error);
  EXPECT_THROW(fp8_row_columns(fp8_row_loop(), x.data(), sa.data(), w.data(), 4, 64, sb.data(), acc),
               std::logic_error);
}

}  // namespace
}  // namespace moefuzz::cpu
