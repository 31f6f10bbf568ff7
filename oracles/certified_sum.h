#pragma once
// The certificate of a double sum of exact products (the W4A16 dot, oracles/exact_dot.h, and the
// bf16-weight dot, oracles/dense_dot.h): every product is a multiple of 2^min_exp, so while the exact
// sum of magnitudes stays below 2^(53 + min_exp) no partial sum, in any order, was rounded (`exact`).
// Otherwise any summation order of n terms errs by at most gamma_{n-1}(2^-53) * sum|p|, and the
// computed magnitude is itself at most that far below the exact one, so it is inflated first and the
// error bound is returned for the caller to add.
//
// Example:
//   moefuzz::W4A16Dot d = moefuzz::certify_double_sum(sum, abs_sum, -40, 2048);
//   double slack = d.exact ? 0.0 : d.error_bound;
#include <climits>
#include <cmath>
#include <cstdint>

#include "oracles/exact_dot.h"

namespace moefuzz {

// min_exp = INT_MAX: no nonzero finite product (the sum is exact).
inline W4A16Dot certify_double_sum(double value, double abs_value, int min_exp, int64_t n_terms) {
  W4A16Dot out;
  out.value = value;
  out.abs_value = abs_value;
  if (!std::isfinite(value)) return out;
  const double limit = min_exp == INT_MAX ? INFINITY : std::ldexp(1.0, 53 + min_exp);
  out.exact = abs_value < limit;
  if (!out.exact) {
    const double n = static_cast<double>(n_terms);
    const double u = 0x1p-53;
    const double g = n * u / (1 - n * u);
    out.abs_value = abs_value * (1 + g) * (1 + 4 * u);
    out.error_bound = g * out.abs_value * (1 + 4 * u);
  }
  return out;
}

}  // namespace moefuzz
