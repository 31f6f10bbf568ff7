#pragma once
// Memoized exact routing scores. Every metamorphic variant of a case (GSCALE, PAD, SCALE1, PARAM,
// TACTIC, ...) re-routes the same logits, and one 50-digit exp costs microseconds, so the routing
// oracle spent ~20% of a check recomputing identical scores. The memo maps the input's bits to the
// double the multiprecision evaluation rounds to: a pure function, so caching changes no result.
// Per thread, bounded (cleared when full), never shared.
//
// Example:
//   double s = moefuzz::exact_sigmoid(-3.5f);          // == to_double(hp_sigmoid(-3.5))
//   double b = moefuzz::exact_sigmoid_plus(0.25f, -1.0f);  // == to_double(hp_sigmoid(0.25) + (-1))
//   const std::vector<double>& p = moefuzz::exact_softmax(logits_row);
#include <span>
#include <vector>

namespace moefuzz {

double exact_sigmoid(float x);
double exact_sqrt_softplus(float x);
// sigmoid(x) + bias, summed exactly before the one rounding to double.
double exact_sigmoid_plus(float x, float bias);
// Softmax of one row of finite logits (see hp_softmax). The reference stays valid until the next call
// on this thread.
const std::vector<double>& exact_softmax(std::span<const float> row);

}  // namespace moefuzz
