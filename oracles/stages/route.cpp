#include "oracles/stages/route.h"

#include <string>

#include "core/errors.h"
#include "oracles/routing_ref.h"

namespace moefuzz::stages {

RouteStage route(const Case& c, const Profile& p, const RoutingDecision& kernel) {
  RouteStage out;
  RoutingCheck rc = check_routing(c, p, kernel);
  out.admissibility = rc.verdict;
  if (!rc.verdict.passed()) return out;
  out.weights.stage = "route";
  out.weights.rows = kernel.tokens;
  out.weights.cols = kernel.slots;
  out.weights.expected = std::move(rc.expected_weights);
  out.weights.bound = std::move(rc.weight_bounds);
  return out;
}

std::vector<ExpandedRow> expand_rows(const Case& c, const RoutingDecision& routing, Verdict& admissibility) {
  const Shape& sh = c.recipe.shape;
  const int64_t T = sh.tokens, slots = routing.slots;
  if (routing.tokens != T || static_cast<int64_t>(routing.ids.size()) != T * slots ||
      static_cast<int64_t>(routing.weights.size()) != T * slots)
    throw InputError("routing decision shape does not match the case");
  std::vector<ExpandedRow> rows;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t s = 0; s < slots; ++s) {
      const int32_t e = routing.ids[static_cast<size_t>(t * slots + s)];
      if (e < 0 || e >= static_cast<int32_t>(c.experts.size())) {
        ElementError ee;
        ee.where = {.token = t, .slot = s, .expert = e};
        admissibility =
            Verdict::fail("ORACLE", "route", "expert id " + std::to_string(e) + " out of range", ee);
        return rows;
      }
      rows.push_back({t, t * slots + s, e, routing.weights[static_cast<size_t>(t * slots + s)]});
    }
  if (c.recipe.routing.shared_fusion == SharedFusion::kSeparate)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < sh.shared_experts; ++j)
        rows.push_back({t, -1, static_cast<int32_t>(sh.experts + j), 1.0f});
  return rows;
}

}  // namespace moefuzz::stages
