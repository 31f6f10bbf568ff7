#include "oracles/multiprecision.h"

#include <algorithm>

namespace moefuzz {

HighPrecision hp_exp(const HighPrecision& x) { return boost::multiprecision::exp(x); }

HighPrecision hp_sigmoid(const HighPrecision& x) {
  return HighPrecision(1) / (HighPrecision(1) + hp_exp(-x));
}

HighPrecision hp_softplus(const HighPrecision& x) {
  const HighPrecision pos = x > 0 ? x : HighPrecision(0);
  return pos + boost::multiprecision::log1p(hp_exp(-boost::multiprecision::abs(x)));
}

HighPrecision hp_sqrt_softplus(const HighPrecision& x) { return boost::multiprecision::sqrt(hp_softplus(x)); }

HighPrecision hp_silu(const HighPrecision& x) { return x * hp_sigmoid(x); }

std::vector<HighPrecision> hp_softmax(std::span<const float> logits) {
  if (logits.empty()) return {};
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  std::vector<HighPrecision> p(logits.size());
  HighPrecision sum = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    // x_i - max is exact in 166 bits (both are fp32), so the only error is exp's own.
    p[i] = hp_exp(HighPrecision(logits[i]) - HighPrecision(max_logit));
    sum += p[i];
  }
  for (auto& v : p) v /= sum;
  return p;
}

}  // namespace moefuzz
