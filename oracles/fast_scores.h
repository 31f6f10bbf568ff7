#pragma once
// Routing scores without Boost when the answer is certain. The routing oracle needs RN_double(f(x))
// for f = sigmoid, sigmoid + bias, sqrt-softplus and softmax (oracles/score_memo.h); the 50-digit
// Boost evaluation costs 7-21 us per score, which made it most of a routing fuzz execution. These
// functions (0.4-1.2 us) evaluate f in double-double arithmetic (error-free transformations; Joldes,
// Muller & Popescu, "Tight and rigorous error bounds for basic building blocks of double-word
// arithmetic", ACM TOMS 2017) with a relative error below 2^-85 (derivation in fast_scores.cpp),
// then apply Ziv's rounding test with a margin of 2^-80: when every real within the margin rounds to
// the same double, that double IS the correctly rounded value - the one the 50-digit evaluation
// (error ~2^-160) rounds to as well. When
// the test cannot decide (the value lies within 2^-80 of a rounding boundary: probability ~2^-27 per
// score) or an argument is outside the analysed range, they return false and the caller uses Boost.
// So the oracle's results are bit-identical with or without this file (tests/oracles/fast_scores_test
// compares both on every sampled score and checks the 2^-85 claim against the 50-digit values;
// MOEFUZZ_FAST_SCORE_CASES=1000000 covers ~11 M scores, worst error measured 2^-92.8).
//
// Example:
//   double s;
//   if (!moefuzz::fast_sigmoid(-3.5f, &s)) s = moefuzz::to_double(moefuzz::hp_sigmoid(-3.5));
#include <span>
#include <vector>

namespace moefuzz {

// RN_double(1 / (1 + e^-x)). Decides x >= 38 (1.0) and x <= -746 (0.0) outright; computes
// -660 <= x < 38; false otherwise (and for NaN/Inf) or when Ziv's test cannot decide.
bool fast_sigmoid(float x, double* out);
// RN_double(sigmoid(x) + bias), the sum exact before the one rounding. |x| <= 660, finite bias.
bool fast_sigmoid_plus(float x, float bias, double* out);
// RN_double(sqrt(log(1 + e^x))) (DeepSeek-V4 sqrtsoftplus) for |x| <= 660.
bool fast_sqrt_softplus(float x, double* out);
// RN_double(e^(x_i - max) / sum_j e^(x_j - max)) for every i of a row of finite logits; false when
// any logit is non-finite, a difference to the max lies in [-745.2, -660) (its term would leave the
// double-double range), or any element is undecided. out is resized to row.size().
bool fast_softmax(std::span<const float> row, std::vector<double>& out);

// The double-double value behind fast_sigmoid / a softmax element, for the error-bound test (not
// rounded, no Ziv test): hi + lo approximates f to 2^-85 relative within the ranges above.
struct DoubleDouble {
  double hi = 0, lo = 0;
};
DoubleDouble sigmoid_dd(float x);
DoubleDouble sqrt_softplus_dd(float x);     // {NaN, NaN} when its log's a-posteriori test fails
DoubleDouble exp_dd(double hi, double lo);  // e^(hi + lo) for hi in [-745.2, 709]

}  // namespace moefuzz
