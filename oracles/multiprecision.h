#pragma once
// High-precision transcendental functions for the oracles (routing scores, SiLU): Boost.Multiprecision
// cpp_bin_float_50 (50 decimal digits, ~166 bits), so their error is ~2^-160 relative - negligible
// against every bound they feed (the tightest is the fp32 unit roundoff 2^-24). Converting a result to
// double adds at most 2^-53 relative; callers that derive bounds add that explicitly.
//
// These are the reference: the routing scores try a double-double evaluation first
// (oracles/fast_scores.h) and come here only when its rounding test cannot decide, with bit-identical
// results either way (docs/decisions.md). libm is never trusted for accuracy.
//
// Example:
//   moefuzz::HighPrecision s = moefuzz::hp_sigmoid(-3.5);          // 1 / (1 + e^3.5)
//   double d = moefuzz::to_double(s);                                // 0.029312230751356...
//   std::vector<moefuzz::HighPrecision> p = moefuzz::hp_softmax(logits_row);
#include <span>
#include <vector>

#include <boost/multiprecision/cpp_bin_float.hpp>

namespace moefuzz {

using HighPrecision = boost::multiprecision::cpp_bin_float_50;

HighPrecision hp_exp(const HighPrecision& x);
// 1 / (1 + e^-x). Finite for every finite x (no underflow: the exponent range is ~2^31).
HighPrecision hp_sigmoid(const HighPrecision& x);
// log(1 + e^x), evaluated as max(x, 0) + log1p(e^-|x|) so large |x| loses nothing.
HighPrecision hp_softplus(const HighPrecision& x);
// sqrt(softplus(x)): DeepSeek-V4 "sqrtsoftplus" score (SPEC.md §2.5).
HighPrecision hp_sqrt_softplus(const HighPrecision& x);
// x * sigmoid(x).
HighPrecision hp_silu(const HighPrecision& x);
// softmax over a row of fp32 logits: e^(x_i - max) / sum_j e^(x_j - max). An empty row gives {}.
// A row containing NaN or +Inf has no meaningful softmax; callers reject such rows first.
std::vector<HighPrecision> hp_softmax(std::span<const float> logits);

// Round to nearest double.
inline double to_double(const HighPrecision& x) { return x.convert_to<double>(); }

}  // namespace moefuzz
