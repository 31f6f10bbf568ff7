// The W4A4 GEMM epilogue of one output row (stages::gemm_row_intervals, oracles/stages/gemm_bounds.h):
// its AVX2 path must give the element-by-element loop's bits on every input, since the stages' stage
// records and the verdicts depend on them. Swept over hostile dots (NaN, infinite, huge, tiny, zero
// of either sign, values on float and bf16 ties), flip sums, alphas near the overflow allowance,
// expert biases and both settings of the bf16 rounding point, and every row length's tail.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/cpu_features.h"
#include "core/rng.h"
#include "oracles/bounds.h"
#include "oracles/stages/gemm_bounds.h"

namespace moefuzz::stages {
namespace {

double hostile_double(const Stream& s, uint64_t i) {
  const uint64_t b = s.bits(i);
  const double m = 1.0 + static_cast<double>(b >> 12) * 0x1p-52;  // [1, 2)
  switch (b % 16) {
    case 0:
      return std::numeric_limits<double>::quiet_NaN();
    case 1:
      return (b & 0x100) ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
    case 2:
      return (b & 0x100) ? -0.0 : 0.0;
    case 3:  // exactly on a float, or half a float ulp off (a tie of the float rounding)
      return std::ldexp(static_cast<double>(static_cast<float>(m)) + ((b & 0x200) ? 0x1p-24 : 0.0),
                        static_cast<int>((b >> 20) % 80) - 40);
    case 4:  // near the fp32 overflow allowance and past it
      return std::ldexp(m, 100 + static_cast<int>((b >> 20) % 40));
    case 5:  // subnormal floats
      return std::ldexp(m, -150 + static_cast<int>((b >> 20) % 30));
    default:
      return ((b & 0x100) ? -1.0 : 1.0) * std::ldexp(m, static_cast<int>((b >> 20) % 60) - 30);
  }
}

uint64_t bits_of(double x) { return std::bit_cast<uint64_t>(x); }

TEST(GemmEpilogue, Avx2RowEqualsTheElementLoopBitForBit) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "no AVX2 on this CPU: the element loop is the only path";
  const Stream s(20261206, "gemm-epilogue");
  int64_t compared = 0, nan_results = 0, finite_results = 0;
  for (uint64_t trial = 0; trial < 3000; ++trial) {
    const Stream t = s.child("trial").child(std::to_string(trial));
    const int64_t cols = 1 + static_cast<int64_t>(t.bits(0) % 37);
    std::vector<RoundedDot> dots(static_cast<size_t>(cols));
    std::vector<double> flips(static_cast<size_t>(cols));
    std::vector<float> bias(static_cast<size_t>(cols));
    for (int64_t o = 0; o < cols; ++o) {
      const uint64_t k = static_cast<uint64_t>(o) * 4 + 10;
      dots[static_cast<size_t>(o)].value = hostile_double(t, k);
      dots[static_cast<size_t>(o)].abs_value = std::fabs(hostile_double(t, k + 1));
      flips[static_cast<size_t>(o)] = (t.bits(k + 2) % 3 == 0) ? 0.0 : std::fabs(hostile_double(t, k + 2));
      bias[static_cast<size_t>(o)] = static_cast<float>(hostile_double(t, k + 3));
    }
    GemmEpilogue e;
    const uint64_t shape = t.bits(1);
    e.alpha = (shape & 1 ? -1.0 : 1.0) * std::ldexp(1.0 + static_cast<double>(shape >> 40) * 0x1p-24,
                                                    static_cast<int>((shape >> 8) % 160) - 30);
    e.gk = gamma_n(static_cast<double>(16 + (shape >> 16) % 4096), kFp32Unit);
    e.floor = (shape & 2) ? 0.0 : std::ldexp(1.0, -120 + static_cast<int>((shape >> 24) % 20));
    e.bf16 = (shape & 4) != 0;
    if (shape & 8) e.bias = bias;
    std::vector<Interval> simd(static_cast<size_t>(cols)), plain(static_cast<size_t>(cols));
    gemm_row_intervals(e, dots.data(), flips.data(), cols, simd.data(), /*simd=*/true);
    gemm_row_intervals(e, dots.data(), flips.data(), cols, plain.data(), /*simd=*/false);
    // No flips (null: every flip sum +0, DeviceGemm::zero_flips) on both paths equals explicit zeros.
    const std::vector<double> zeros(static_cast<size_t>(cols), 0.0);
    std::vector<Interval> simd0(static_cast<size_t>(cols)), plain0(static_cast<size_t>(cols)),
        zero(static_cast<size_t>(cols));
    gemm_row_intervals(e, dots.data(), nullptr, cols, simd0.data(), /*simd=*/true);
    gemm_row_intervals(e, dots.data(), nullptr, cols, plain0.data(), /*simd=*/false);
    gemm_row_intervals(e, dots.data(), zeros.data(), cols, zero.data(), /*simd=*/false);
    for (int64_t o = 0; o < cols; ++o) {
      const Interval x = simd[static_cast<size_t>(o)], y = plain[static_cast<size_t>(o)];
      ASSERT_EQ(bits_of(x.lo), bits_of(y.lo)) << "trial " << trial << " column " << o << " of " << cols;
      ASSERT_EQ(bits_of(x.hi), bits_of(y.hi)) << "trial " << trial << " column " << o << " of " << cols;
      for (const Interval* z : {&simd0[static_cast<size_t>(o)], &plain0[static_cast<size_t>(o)]}) {
        ASSERT_EQ(bits_of(z->lo), bits_of(zero[static_cast<size_t>(o)].lo))
            << "trial " << trial << " column " << o;
        ASSERT_EQ(bits_of(z->hi), bits_of(zero[static_cast<size_t>(o)].hi))
            << "trial " << trial << " column " << o;
      }
      ++compared;
      (is_nan(y) ? nan_results : finite_results)++;
    }
  }
  // Not vacuous: both outcomes occur often.
  EXPECT_GT(nan_results, compared / 10);
  EXPECT_GT(finite_results, compared / 4);
}

// Results a hair past a bf16 tie: float_down and float_up then land on different sides of the tie, so
// the lower end must take float_down and the upper end float_up (random inputs almost never tell).
TEST(GemmEpilogue, Avx2RowRoundsEachEndTowardItsSideAtBf16Ties) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "no AVX2 on this CPU: the element loop is the only path";
  constexpr double kTie = 1 + 0x1p-8;  // halfway between the bf16 values 1 and 1 + 2^-7
  GemmEpilogue e{.alpha = 1, .gk = 0, .floor = 0x1p-60, .bias = {}, .bf16 = true};
  std::vector<RoundedDot> dots;
  for (int k = 0; k < 7; ++k) {
    const double sign = (k % 2) ? -1.0 : 1.0, offset = (k % 3 == 0) ? 0x1p-40 : -0x1p-40;
    dots.push_back({sign * std::ldexp(kTie + offset, k - 3), 0.0});
  }
  const std::vector<double> flips(dots.size(), 0.0);
  std::vector<Interval> simd(dots.size()), plain(dots.size());
  gemm_row_intervals(e, dots.data(), flips.data(), 7, simd.data(), /*simd=*/true);
  gemm_row_intervals(e, dots.data(), flips.data(), 7, plain.data(), /*simd=*/false);
  // Column 0: 0.125 * (tie + 2^-40) +- 2^-60: the lower end rounds down to the tie, then to even (1 / 8);
  // the upper end up past the tie, then to 1 + 2^-7 (times 1 / 8).
  EXPECT_EQ(plain[0].lo, 0.125);
  EXPECT_EQ(plain[0].hi, 0.125 * (1 + 0x1p-7));
  for (size_t o = 0; o < dots.size(); ++o) {
    EXPECT_EQ(bits_of(simd[o].lo), bits_of(plain[o].lo)) << "column " << o;
    EXPECT_EQ(bits_of(simd[o].hi), bits_of(plain[o].hi)) << "column " << o;
  }
}

}  // namespace
}  // namespace moefuzz::stages
