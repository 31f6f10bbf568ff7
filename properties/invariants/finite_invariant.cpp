// FINITE: on adversarial values (logits <= -90, sigmoid underflow, zero blocks, E4M3 underflow,
// saturated scales) the kernel never produces a NaN/Inf that the oracle does not. Reported at the
// first non-finite value, routing weights before outputs.
#include <fmt/format.h>

#include <cmath>

#include "oracles/routing_ref.h"
#include "properties/invariants/invariants.h"
#include "properties/invariants/support.h"

namespace moefuzz::inv {

Invariant make_finite_invariant() {
  Invariant inv;
  inv.code = "FINITE";
  inv.evaluates_other_runs = false;  // the baseline's evaluation at most
  inv.description = "no NaN/Inf in weights or outputs where the oracle has none";
  inv.applies = [](const Kernel&, const CaseRecipe&) { return std::string(); };
  inv.check = [](CheckContext& ctx) -> Verdict {
    const LayerResult& r = ctx.baseline();
    const int64_t S = r.routing.slots;
    for (size_t i = 0; i < r.routing.weights.size(); ++i)
      // Tokens with a non-finite logit have unspecified weights (oracles/routing_ref.h).
      if (!std::isfinite(r.routing.weights[i]) &&
          token_weights_specified(ctx.base_case(), static_cast<int64_t>(i) / S)) {
        ElementError e{{.token = static_cast<int64_t>(i) / S,
                        .slot = static_cast<int64_t>(i) % S,
                        .expert = r.routing.ids[i]},
                       r.routing.weights[i],
                       NAN,
                       0};
        return Verdict::fail("FINITE", "route", fmt::format("routing weight is {}", r.routing.weights[i]), e);
      }
    if (auto skip = rejected("FINITE", ctx.oracle())) return *skip;
    const StageExpectation& out = output_stage(ctx.oracle());
    for (int64_t t = 0; t < out.rows; ++t)
      for (int64_t h = 0; h < out.cols; ++h) {
        const size_t i = static_cast<size_t>(t * out.cols + h);
        if (!std::isfinite(r.output[i]) && std::isfinite(out.expected[i])) {
          ElementError e{{.token = t, .element = h}, r.output[i], out.expected[i], out.bound[i]};
          return Verdict::fail(
              "FINITE", "output",
              fmt::format("output is {} where the oracle expects {}", r.output[i], out.expected[i]), e);
        }
      }
    Verdict v = Verdict::pass("FINITE", "output");
    v.compared = out.rows * out.cols;
    return v;
  };
  return inv;
}

}  // namespace moefuzz::inv
