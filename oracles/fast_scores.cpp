#include "oracles/fast_scores.h"

#include <algorithm>
#include <cmath>

// Error analysis (u = 2^-53; every bound below is far looser than the published one it rests on, so
// the final claim, 2^-85 relative, has a margin of several bits over the sum of the parts).
//   two_sum, fast_two_sum, two_prod          exact (error-free transformations; no FMA contraction:
//                                            the project compiles with -ffp-contract=off)
//   add (AccurateDWPlusDW, JMP17 Alg. 6)     relative error <= 3u^2 + 13u^3      (< 2^-104)
//   mul (DWTimesDW3, Alg. 12)                relative error <= 4u^2              (< 2^-104)
//   mul_d (DWTimesFP3, Alg. 9)               relative error <= 2u^2
//   div (DWDivDW2, Alg. 17)                  relative error <= 15u^2 + 56u^3     (< 2^-101)
//   div_d (DWDivFP3, Alg. 15)                relative error <= 3.5u^2
// exp_dd(y): k = round(y / ln2); r = y - k ln2 with ln2 as three doubles (error < 2^-160, times
// |k| <= 1024: < 2^-150 absolute) and k * L1, k * L2 exact (two_prod), so r carries an absolute error
// below 4 * 2^-104 * 0.35 < 2^-103; an absolute error d in the exponent is a relative error ~d in
// e^r. s = r / 2^10 (|s| < 2^-11.5, exact); e^s by Horner, 1 + s(1 + s/2(... (1 + s/9))): the
// truncation is s^10/10! e^|s| < 2^-136, and each of the 27 operations adds < 2^-101 relative to a
// quantity within 2^-11 of 1, damped by |s|/n < 2^-11 except in the outermost step: < 2^-99 in all.
// Ten squarings double the relative error each time and add < 2^-104: (2^-99 + 2^-103 + 2^-104)
// * 2^10 < 2^-88.6. Scaling by 2^k is exact while the result stays in [2^-960, 2^1010] (lo normal).
// sigmoid = 1 / (1 + e^-x): one add of positive terms and one div: < 2^-88.6 + 2^-104 + 2^-101 <
// 2^-88. softmax: terms < 2^-88.6, their sum (n <= 2^16 adds of positive terms) < 2^-88.6 +
// 2^16 * 2^-104, one div: < 2^-86. sigmoid + bias: absolute error < 2^-88 sigmoid + 2^-104 |sum|.
// sqrt-softplus: log1p below (< 2^-84 relative), a positive add, sqrt_dd (halves it): < 2^-84.
// Ziv's test then uses 2^-80 (relative to the value, or the absolute bound above scaled by 2^8).

namespace moefuzz {
namespace {

using DD = DoubleDouble;

DD two_sum(double a, double b) {
  const double s = a + b;
  const double bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}
DD fast_two_sum(double a, double b) {  // |a| >= |b| (or a == 0)
  const double s = a + b;
  return {s, b - (s - a)};
}
DD two_prod(double a, double b) {
  const double p = a * b;
  return {p, std::fma(a, b, -p)};
}
DD add(DD x, DD y) {
  const DD s = two_sum(x.hi, y.hi), t = two_sum(x.lo, y.lo);
  const DD v = fast_two_sum(s.hi, s.lo + t.hi);
  return fast_two_sum(v.hi, t.lo + v.lo);
}
DD mul(DD x, DD y) {
  const DD c = two_prod(x.hi, y.hi);
  const double t = std::fma(x.lo, y.hi, std::fma(x.hi, y.lo, x.lo * y.lo));
  return fast_two_sum(c.hi, c.lo + t);
}
DD mul_d(DD x, double y) {
  const DD c = two_prod(x.hi, y);
  return fast_two_sum(c.hi, std::fma(x.lo, y, c.lo));
}
DD div(DD x, DD y) {
  const double th = x.hi / y.hi;
  const DD r = mul_d(y, th);
  const double pi = x.hi - r.hi;  // exact (Sterbenz)
  const double d = pi + (x.lo - r.lo);
  return fast_two_sum(th, d / y.hi);
}
DD div_d(DD x, double y) {
  const double th = x.hi / y;
  const DD p = two_prod(th, y);
  const double d = ((x.hi - p.hi) - p.lo) + x.lo;
  return fast_two_sum(th, d / y);
}

DD sqrt_dd(DD v) {  // v > 0; one Newton correction of the double root: relative error < 2^-104
  const double s0 = std::sqrt(v.hi);
  const DD sq = two_prod(s0, s0);
  const double d = ((v.hi - sq.hi) - sq.lo) + v.lo;
  return fast_two_sum(s0, d / (2 * s0));
}

// ln 2 = kLn2[0] + kLn2[1] + kLn2[2] + O(2^-160).
constexpr double kLn2[3] = {0x1.62e42fefa39efp-1, 0x1.abc9e3b39803fp-56, 0x1.7b57a079a1934p-111};
constexpr double kInvLn2 = 0x1.71547652b82fep+0;

// Ziv's test: true and *out = the double every real within abs_err of a.hi + a.lo rounds to. The
// extra 2^-100 |hi| covers the rounding of lo +- e (|lo| <= 2^-53 |hi| for the normalized pairs here).
bool round_decided(DD a, double abs_err, double* out) {
  const double e = 2 * abs_err + 0x1p-100 * std::fabs(a.hi);
  const double down = a.hi + (a.lo - e), up = a.hi + (a.lo + e);
  if (down != up) return false;
  *out = down;
  return true;
}

constexpr double kZivRelative = 0x1p-80;
constexpr double kSigmoidLow = -660, kSigmoidOne = 38, kSigmoidZero = -746;
// e^d for d < -745.2 is below 2^-1075 (half the smallest subnormal): its softmax element rounds to 0
// (the sum is >= 1) and leaving it out of the sum changes that by < 2^-1075 relative.
constexpr double kSoftmaxZero = -745.2;

}  // namespace

DoubleDouble exp_dd(double hi, double lo) {
  const double k = std::nearbyint(hi * kInvLn2);
  const DD p1 = two_prod(k, kLn2[0]), p2 = two_prod(k, kLn2[1]);
  DD r = add(DD{hi, lo}, DD{-p1.hi, -p1.lo});
  r = add(r, DD{-p2.hi, -p2.lo});
  r = add(r, DD{-k * kLn2[2], 0});
  const DD s{std::ldexp(r.hi, -10), std::ldexp(r.lo, -10)};
  DD p = add(DD{1, 0}, div_d(s, 9));
  for (int n = 8; n >= 1; --n) p = add(DD{1, 0}, div_d(mul(s, p), n));
  for (int i = 0; i < 10; ++i) p = mul(p, p);
  const int ki = static_cast<int>(k);
  return {std::ldexp(p.hi, ki), std::ldexp(p.lo, ki)};
}

// log1p(t) for t = e^-|x| in [e^-660, 1] (a normalized pair). t <= 1/16: the alternating series
// t (1 - t (1/2 - t (1/3 - ...))) to 25 terms (truncation t^26/26 < 2^-100 t; every partial stays
// within 1/16 of 1, so each of the ~75 operations adds < 2^-101 relative: < 2^-94 in all). t > 1/16:
// y = log(1 + t) >= 2^-4.06 by two Newton steps on e^y = z from libm's log (only a starting point:
// the a-posteriori test |r2| <= 2^-45 decides whether the result is used). With r2 = z e^-y1 - 1,
// log z = y1 + log1p(r2) and y1 + r2 is off by <= r2^2/2 + |error of r2| <= 2^-91 + 2^-88.5 absolute,
// i.e. < 2^-84 relative. Returns {NaN, NaN} when the test fails.
namespace {

DD log1p_dd(DD t) {
  if (t.hi <= 0.0625) {
    DD acc = div_d(DD{1, 0}, 25);
    for (int n = 24; n >= 1; --n) acc = add(div_d(DD{1, 0}, n), mul(DD{-t.hi, -t.lo}, acc));
    return mul(t, acc);
  }
  const DD z = add(DD{1, 0}, t);
  const double y0 = std::log(z.hi);
  const DD r1 = add(mul(z, exp_dd(-y0, 0)), DD{-1, 0});
  const DD y1 = add(DD{y0, 0}, r1);
  const DD r2 = add(mul(z, exp_dd(-y1.hi, -y1.lo)), DD{-1, 0});
  if (!(std::fabs(r2.hi) <= 0x1p-45)) return {std::nan(""), std::nan("")};
  return add(y1, r2);
}

}  // namespace

DoubleDouble sqrt_softplus_dd(float x) {
  const double ax = std::fabs(static_cast<double>(x));
  const DD l = log1p_dd(exp_dd(-ax, 0));
  if (std::isnan(l.hi)) return l;
  return sqrt_dd(x > 0 ? add(DD{static_cast<double>(x), 0}, l) : l);
}

DoubleDouble sigmoid_dd(float x) {
  const DD t = exp_dd(-static_cast<double>(x), 0);
  return div(DD{1, 0}, add(DD{1, 0}, t));
}

bool fast_sigmoid(float x, double* out) {
  if (!std::isfinite(x)) return false;
  // e^-38 < 2^-54: sigmoid lies in (1 - 2^-54, 1), above the midpoint below 1.
  if (x >= kSigmoidOne) return *out = 1.0, true;
  // sigmoid(x) < e^x <= e^-746 < 2^-1075: below half the smallest subnormal.
  if (x <= kSigmoidZero) return *out = 0.0, true;
  if (x < kSigmoidLow) return false;
  const DD s = sigmoid_dd(x);
  return round_decided(s, kZivRelative * std::fabs(s.hi), out);
}

bool fast_sigmoid_plus(float x, float bias, double* out) {
  if (!std::isfinite(x) || !std::isfinite(bias) || std::fabs(x) > -kSigmoidLow) return false;
  const DD s = sigmoid_dd(x);
  const DD a = add(s, DD{static_cast<double>(bias), 0});
  return round_decided(a, kZivRelative * (std::fabs(s.hi) + std::fabs(a.hi)), out);
}

bool fast_sqrt_softplus(float x, double* out) {
  if (!std::isfinite(x) || std::fabs(x) > -kSigmoidLow) return false;
  const DD s = sqrt_softplus_dd(x);
  if (std::isnan(s.hi)) return false;
  return round_decided(s, kZivRelative * std::fabs(s.hi), out);
}

bool fast_softmax(std::span<const float> row, std::vector<double>& out) {
  out.assign(row.size(), 0.0);
  if (row.empty()) return true;
  for (float v : row)
    if (!std::isfinite(v)) return false;
  const double m = *std::max_element(row.begin(), row.end());
  std::vector<DD> terms(row.size());
  DD sum{0, 0};
  for (size_t i = 0; i < row.size(); ++i) {
    const DD d = two_sum(static_cast<double>(row[i]), -m);  // exact
    if (d.hi < kSoftmaxZero) continue;                      // term and element: 0 (see above)
    if (d.hi < kSigmoidLow) return false;
    terms[i] = exp_dd(d.hi, d.lo);
    sum = add(sum, terms[i]);
  }
  for (size_t i = 0; i < row.size(); ++i) {
    if (terms[i].hi == 0) continue;
    const DD p = div(terms[i], sum);
    if (!round_decided(p, kZivRelative * std::fabs(p.hi), &out[i])) return false;
  }
  return true;
}

}  // namespace moefuzz
