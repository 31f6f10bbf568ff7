// oracles/stages/stage_rows.h: the AVX2 paths of store_row and finish_activation_row must give the
// element loops' bits (the stage records and the FC2 input's envelope depend on them). Swept over
// hostile intervals (NaN ends, points, equal infinities, +-0, subnormals, ends past the float and bf16
// range), every flag combination of the activation's tail, and every row length's tail.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/rng.h"
#include "oracles/stages/stage_rows.h"

namespace moefuzz::stages {
namespace {

double hostile_end(const Stream& s, uint64_t i) {
  const uint64_t b = s.bits(i);
  const double m = 1.0 + static_cast<double>(b >> 12) * 0x1p-52, sign = (b & 0x100) ? -1.0 : 1.0;
  switch (b % 11) {
    case 0:
      return std::numeric_limits<double>::quiet_NaN();
    case 1:
      return sign * 0.0;
    case 2:
      return sign * std::numeric_limits<double>::infinity();
    case 3:  // around the float and bf16 overflow thresholds
      return sign * std::ldexp(m, 126 + static_cast<int>((b >> 20) % 4));
    case 4:  // float and double subnormals
      return sign * std::ldexp(m, (b & 0x200) ? -1070 + static_cast<int>((b >> 20) % 40)
                                              : -150 + static_cast<int>((b >> 20) % 30));
    default:
      return sign * std::ldexp(m, static_cast<int>((b >> 20) % 40) - 20);
  }
}

Interval hostile_interval(const Stream& s, uint64_t i) {
  const uint64_t kind = s.bits(i) % 5;
  const double a = hostile_end(s, i * 3 + 1);
  if (kind == 0) return {a, a};                           // a point (equal infinities included)
  if (kind == 1) return {a, a + std::fabs(a) * 0x1p-30};  // narrow
  const double b = hostile_end(s, i * 3 + 2);
  return b < a ? Interval{b, a} : Interval{a, b};  // a NaN end stays where it was drawn
}

uint64_t bits_of(double x) { return std::bit_cast<uint64_t>(x); }

std::vector<Interval> hostile_row(const Stream& s, int64_t n) {
  std::vector<Interval> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = hostile_interval(s, static_cast<uint64_t>(i));
  return v;
}

TEST(StageRows, Avx2StoreRowEqualsStoreBitForBit) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "no AVX2 on this CPU: the element loop is the only path";
  const Stream s(20261207, "store-row");
  int64_t compared = 0, nan_rows = 0, zero_radius = 0;
  for (uint64_t trial = 0; trial < 2000; ++trial) {
    const Stream t = s.child("trial").child(std::to_string(trial));
    const int64_t n = 1 + static_cast<int64_t>(t.bits(0) % 29), col = static_cast<int64_t>(t.bits(1) % 3);
    const std::vector<Interval> v = hostile_row(t.child("row"), n);
    StageExpectation simd = make_stage("gemm1", 2, n + col), scalar = make_stage("gemm1", 2, n + col);
    store_row(&simd, 1, col, v.data(), n, /*simd=*/true);
    store_row(&scalar, 1, col, v.data(), n, /*simd=*/false);
    for (size_t i = 0; i < scalar.expected.size(); ++i) {
      ASSERT_EQ(bits_of(simd.expected[i]), bits_of(scalar.expected[i]))
          << "trial " << trial << " index " << i;
      ASSERT_EQ(bits_of(simd.bound[i]), bits_of(scalar.bound[i])) << "trial " << trial << " index " << i;
      ++compared;
      nan_rows += std::isnan(scalar.expected[i]) ? 1 : 0;
      zero_radius += scalar.bound[i] == 0 ? 1 : 0;
    }
  }
  // Not vacuous: NaN intervals, points and wide ones all occur often.
  EXPECT_GT(nan_rows, compared / 20);
  EXPECT_GT(zero_radius, compared / 5);
  EXPECT_GT(compared - nan_rows - zero_radius, compared / 10);
  store_row(nullptr, 0, 0, nullptr, 4);  // no record kept: nothing happens
}

TEST(StageRows, Avx2ActivationTailEqualsTheElementLoopBitForBit) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "no AVX2 on this CPU: the element loop is the only path";
  const Stream s(20261207, "activation-tail");
  int64_t compared = 0, nan_rows = 0, nan_elements = 0, rounded = 0;
  for (uint64_t trial = 0; trial < 4000; ++trial) {
    const Stream t = s.child("trial").child(std::to_string(trial));
    const int64_t n = 1 + static_cast<int64_t>(t.bits(0) % 29);
    const ActivationFinish f{.silu_may_round_bf16 = (trial & 1) != 0,
                             .bf16 = (trial & 2) != 0,
                             .abs_beta = (trial & 4) != 0 ? 1.0 : 0.0};
    const std::vector<Interval> x = hostile_row(t.child("x"), n), up = hostile_row(t.child("up"), n);
    std::vector<Interval> xs = x, xv = x;
    std::vector<double> ls(n), hs(n), cs(n), lv(n), hv(n), cv(n);
    const bool nan_s =
        finish_activation_row(f, xs.data(), up.data(), n, ls.data(), hs.data(), cs.data(), false);
    const bool nan_v =
        finish_activation_row(f, xv.data(), up.data(), n, lv.data(), hv.data(), cv.data(), true);
    ASSERT_EQ(nan_s, nan_v) << "trial " << trial;
    nan_rows += nan_s ? 1 : 0;
    for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
      const std::string at = "trial " + std::to_string(trial) + " element " + std::to_string(i);
      ASSERT_EQ(bits_of(xv[i].lo), bits_of(xs[i].lo)) << at;
      ASSERT_EQ(bits_of(xv[i].hi), bits_of(xs[i].hi)) << at;
      ASSERT_EQ(bits_of(lv[i]), bits_of(ls[i])) << at;
      ASSERT_EQ(bits_of(hv[i]), bits_of(hs[i])) << at;
      ASSERT_EQ(bits_of(cv[i]), bits_of(cs[i])) << at;
      ++compared;
      nan_elements += std::isnan(xs[i].lo) || std::isnan(xs[i].hi) ? 1 : 0;
      rounded += bits_of(xs[i].lo) != bits_of(x[i].lo) ? 1 : 0;
    }
  }
  // Not vacuous: rows with and without NaN, and ends the tail moved (widened or rounded).
  EXPECT_GT(nan_rows, 400);
  EXPECT_LT(nan_rows, 3600);
  EXPECT_GT(nan_elements, compared / 20);
  EXPECT_GT(rounded, compared / 4);
}

}  // namespace
}  // namespace moefuzz::stages
