// swiglu_kernel_intervals (oracles/bounds.h): its AVX2 path must give swiglu_kernel_interval's bits on
// every input, since the activation stage's records and the FC2 input's envelope depend on them. Swept
// over hostile gate and up intervals (NaN ends, points, wide, huge, tiny, past the clamp limit, gates
// whose z = alpha g falls below the flush threshold -80) under plain SiLU and gpt-oss's clamped,
// shifted SwiGLU, and every row length's tail.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/rng.h"
#include "oracles/bounds.h"

namespace moefuzz {
namespace {

double hostile_end(const Stream& s, uint64_t i) {
  const uint64_t b = s.bits(i);
  const double m = 1.0 + static_cast<double>(b >> 12) * 0x1p-52, sign = (b & 0x100) ? -1.0 : 1.0;
  switch (b % 12) {
    case 0:
      return std::numeric_limits<double>::quiet_NaN();
    case 1:
      return sign * 0.0;
    case 2:  // far past any clamp, up to overflowing products
      return sign * std::ldexp(m, 100 + static_cast<int>((b >> 20) % 900));
    case 3:  // around the flush threshold z = -80 and the clamp limit 7
      return sign * (80.0 + static_cast<double>((b >> 20) % 8) - 3.5);
    case 4:
      return sign * std::ldexp(m, -1070 + static_cast<int>((b >> 20) % 60));
    default:
      return sign * std::ldexp(m, static_cast<int>((b >> 20) % 24) - 12);
  }
}

Interval hostile_interval(const Stream& s, uint64_t i) {
  const uint64_t kind = s.bits(i) % 4;
  const double a = hostile_end(s, i * 3 + 1);
  if (kind == 0) return {a, a};                           // a point
  if (kind == 1) return {a, a + std::fabs(a) * 0x1p-20};  // narrow
  const double b = hostile_end(s, i * 3 + 2);
  return b < a ? Interval{b, a} : Interval{a, b};  // a NaN end stays where it was drawn
}

uint64_t bits_of(double x) { return std::bit_cast<uint64_t>(x); }

TEST(SwigluRows, Avx2RowEqualsTheElementLoopBitForBit) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "no AVX2 on this CPU: the element loop is the only path";
  const Swiglu plain{}, gpt_oss{.limit = 7.0, .alpha = 1.702, .beta = 1.0},
      negative{.limit = 3.0, .alpha = -0.5, .beta = -2.0};
  const Stream s(20261206, "swiglu-rows");
  int64_t compared = 0, nan_results = 0;
  for (uint64_t trial = 0; trial < 3000; ++trial) {
    const Stream t = s.child("trial").child(std::to_string(trial));
    const int64_t n = 1 + static_cast<int64_t>(t.bits(0) % 29);
    const Swiglu& sw = trial % 3 == 0 ? plain : trial % 3 == 1 ? gpt_oss : negative;
    std::vector<Interval> gate(static_cast<size_t>(n)), up(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      gate[static_cast<size_t>(i)] = hostile_interval(t.child("gate"), static_cast<uint64_t>(i));
      up[static_cast<size_t>(i)] = hostile_interval(t.child("up"), static_cast<uint64_t>(i));
    }
    std::vector<Interval> simd(static_cast<size_t>(n)), scalar(static_cast<size_t>(n));
    swiglu_kernel_intervals(gate.data(), up.data(), n, sw, simd.data(), /*simd=*/true);
    swiglu_kernel_intervals(gate.data(), up.data(), n, sw, scalar.data(), /*simd=*/false);
    for (int64_t i = 0; i < n; ++i) {
      const Interval x = simd[static_cast<size_t>(i)], y = scalar[static_cast<size_t>(i)];
      ASSERT_EQ(bits_of(x.lo), bits_of(y.lo)) << "trial " << trial << " element " << i << " of " << n;
      ASSERT_EQ(bits_of(x.hi), bits_of(y.hi)) << "trial " << trial << " element " << i << " of " << n;
      ++compared;
      nan_results += std::isnan(y.lo) ? 1 : 0;
    }
  }
  // Not vacuous: both NaN and finite results occur often.
  EXPECT_GT(nan_results, compared / 20);
  EXPECT_LT(nan_results, compared / 2);
}

}  // namespace
}  // namespace moefuzz
