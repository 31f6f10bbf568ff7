#pragma once
// Builds routing-only Cases for the oracle tests (no expert weights are needed by the router).
#include <cstdint>
#include <vector>

#include "core/case.h"

namespace moefuzz::testing {

inline Case routing_case(RoutingMode mode, int64_t tokens, int64_t experts, int64_t top_k,
                         std::vector<float> logits) {
  Case c;
  c.recipe.shape.tokens = tokens;
  c.recipe.shape.experts = experts;
  c.recipe.shape.top_k = top_k;
  c.recipe.routing.mode = mode;
  c.logits = std::move(logits);
  return c;
}

inline RoutingDecision decision(int64_t tokens, int64_t slots, std::vector<int32_t> ids,
                                std::vector<float> weights) {
  return RoutingDecision{
      .tokens = tokens, .slots = slots, .ids = std::move(ids), .weights = std::move(weights)};
}

}  // namespace moefuzz::testing
