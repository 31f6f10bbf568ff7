// Certified bf16-weight dot (oracles/dense_dot.h): against an exact big-integer evaluation on random,
// wide-exponent, subnormal and cancelling rows; the SIMD loop against the scalar one; the certificate
// (exact -> bit-exact value; otherwise the error bound holds) and non-finite operands.
#include "oracles/dense_dot.h"

#include <gtest/gtest.h>

#include <boost/multiprecision/cpp_int.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "core/bf16.h"
#include "core/rng.h"

namespace moefuzz {
namespace {

using boost::multiprecision::cpp_int;

// Every fp32 value is m * 2^e with integer m, e >= -149; a product is a multiple of 2^-298. The exact
// dot as an integer count of 2^-298.
constexpr int kShift = 298;

cpp_int scaled_exact(float x) {
  if (x == 0.0f) return 0;
  int e = 0;
  const double m = std::frexp(static_cast<double>(x), &e);  // x = m * 2^e, 0.5 <= |m| < 1
  const auto mi = static_cast<int64_t>(std::ldexp(m, 24));  // exact: 24 significant bits
  cpp_int v = mi;
  // x * 2^149 = mi * 2^(e - 24 + 149); for subnormals the shift is negative, and exact (mi then has
  // at least that many trailing zero bits).
  const int shift = e - 24 + 149;
  return shift >= 0 ? cpp_int(v << shift) : cpp_int(v >> -shift);
}

struct Exact {
  cpp_int sum = 0, abs_sum = 0;
};
Exact exact_dot_ref(const std::vector<float>& x, const std::vector<float>& w) {
  Exact r;
  for (size_t i = 0; i < x.size(); ++i) {
    const cpp_int p = scaled_exact(x[i]) * scaled_exact(w[i]);
    r.sum += p;
    r.abs_sum += p < 0 ? cpp_int(-p) : p;
  }
  return r;
}
// Exact value as a long double would round it is not needed: compare through scaled integers.
cpp_int scaled(double v) {  // v * 2^298 exactly (v is a sum of products: a multiple of 2^-298)
  if (v == 0) return 0;
  int e = 0;
  const double m = std::frexp(v, &e);
  const auto mi = static_cast<int64_t>(std::ldexp(m, 53));
  cpp_int c = mi;
  const int shift = e - 53 + kShift;
  return shift >= 0 ? cpp_int(c << shift) : cpp_int(c >> -shift);
}
double to_double_scaled(const cpp_int& c) {  // c * 2^-298, rounded (for messages and bounds)
  return std::ldexp(static_cast<double>(c), -kShift);
}

std::vector<float> bf16_values(const Stream& s, int64_t n, int exp_lo, int exp_hi, uint64_t salt) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t k = salt * 1000003 + static_cast<uint64_t>(i);
    const float m = 1.0f + static_cast<float>(s.uniform_int(k * 3, 0, 127)) / 128.0f;
    const int e = static_cast<int>(s.uniform_int(k * 3 + 1, exp_lo, exp_hi));
    const float sign = (s.bits(k * 3 + 2) & 1) ? -1.0f : 1.0f;
    v[static_cast<size_t>(i)] = round_to_bf16(sign * std::ldexp(m, e));
  }
  return v;
}

void expect_certified(const std::vector<float>& x, const std::vector<float>& w, const char* what) {
  const DenseRow xr = dense_row(x), wr = dense_row(w);
  const W4A16Dot d = dense_dot(xr, wr), s = dense_dot_scalar(xr, wr);
  const Exact e = exact_dot_ref(x, w);
  ASSERT_EQ(d.exact, s.exact) << what;
  for (const W4A16Dot* got : {&d, &s}) {
    ASSERT_TRUE(std::isfinite(got->value)) << what;
    // The magnitude is never below the exact one (it scales the kernel's rounding bound).
    EXPECT_GE(scaled(got->abs_value), e.abs_sum) << what;
    if (got->exact) {
      EXPECT_EQ(scaled(got->value), e.sum) << what << ": certified exact but differs";
    } else {
      const double err = std::fabs(got->value - to_double_scaled(e.sum));
      EXPECT_LE(err, got->error_bound * (1 + 0x1p-50)) << what;
    }
  }
}

TEST(DenseDot, HandWorked) {
  const std::vector<float> x = {1.0f, -2.0f, 0.5f, 3.0f}, w = {0.25f, 0.5f, -4.0f, 1.0f};
  const W4A16Dot d = dense_dot(dense_row(x), dense_row(w));
  EXPECT_TRUE(d.exact);
  EXPECT_EQ(d.value, 0.25 - 1.0 - 2.0 + 3.0);
  EXPECT_EQ(d.abs_value, 0.25 + 1.0 + 2.0 + 3.0);
  EXPECT_EQ(d.error_bound, 0.0);
}

TEST(DenseDot, RandomRowsAgainstExactIntegers) {
  const Stream s(7, "dense_dot");
  int inexact = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t n = 1 + static_cast<int64_t>(s.uniform_int(static_cast<uint64_t>(trial), 0, 700));
    // Narrow exponent ranges are exactly summable; wide ones (up to the whole fp32 range) are not.
    const int span = trial % 3 == 0 ? 4 : trial % 3 == 1 ? 40 : 250;
    const int lo = std::max(-133, -span / 2), hi = std::min(127, span / 2);
    const auto x = bf16_values(s, n, lo, hi, static_cast<uint64_t>(trial) * 2);
    const auto w = bf16_values(s, n, -20, 10, static_cast<uint64_t>(trial) * 2 + 1);
    expect_certified(x, w, "random");
    inexact += dense_dot(dense_row(x), dense_row(w)).exact ? 0 : 1;
  }
  EXPECT_GT(inexact, 10) << "the sweep must also exercise the bounded (inexact) path";
}

TEST(DenseDot, SubnormalsCancellationAndFp32Centers) {
  // bf16 subnormal weights against fp32 activations with full 24-bit significands.
  std::vector<float> x, w;
  for (int i = 0; i < 257; ++i) {
    x.push_back(std::nextafter(1.0f + static_cast<float>(i) / 7.0f, 2.0f) * (i % 2 ? -1.0f : 1.0f));
    w.push_back(bf16_to_float(static_cast<uint16_t>(1 + i % 127)));  // 2^-133 .. subnormal bf16
  }
  expect_certified(x, w, "subnormal weights");
  // Exact cancellation: v, -v pairs at huge and tiny magnitudes.
  std::vector<float> a = {3e38f, -3e38f, 1e-38f, -1e-38f, 1.0f}, b = {1.0f, 1.0f, 1.0f, 1.0f, 0x1p-20f};
  expect_certified(a, b, "cancellation");
  EXPECT_EQ(dense_dot(dense_row(a), dense_row(b)).value, 0x1p-20);
}

TEST(DenseDot, NonFiniteOperandsGiveANonFiniteValue) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(std::isfinite(
      dense_dot(dense_row(std::vector<float>{1, inf}), dense_row(std::vector<float>{1, 1})).value));
  EXPECT_TRUE(std::isnan(
      dense_dot(dense_row(std::vector<float>{1, inf}), dense_row(std::vector<float>{1, 0})).value));
  EXPECT_TRUE(std::isnan(
      dense_dot(dense_row(std::vector<float>{nan, 1}), dense_row(std::vector<float>{1, 1})).value));
}

TEST(DenseDot, LengthMismatchIsRefused) {
  const std::vector<float> a(4, 1.0f), b(5, 1.0f);
  EXPECT_ANY_THROW(dense_dot(dense_row(a), dense_row(b)));
}

TEST(DenseDot, Bf16RowWidening) {
  const std::vector<uint16_t> bits = {0x3F80, 0xC000, 0x0001, 0x7F80};
  const std::vector<float> f = bf16_row_to_float(bits);
  EXPECT_EQ(f[0], 1.0f);
  EXPECT_EQ(f[1], -2.0f);
  EXPECT_EQ(f[2], 0x1p-133f);
  EXPECT_TRUE(std::isinf(f[3]));
  EXPECT_EQ(dense_row(f).grid_exp, -133);
}

}  // namespace
}  // namespace moefuzz
