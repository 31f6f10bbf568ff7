// Invariants that sweep a kernel's configuration space:
// TACTIC every tile / tactic variant of a kernel is checked against the oracle, not only the default.
// PARAM  every semantic parameter changes the output when the math says it must: renormalize (when
//        the selected weights do not already sum to 1) and the SwiGLU limit (when it clips a value).
#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "core/elementwise_compare.h"
#include "properties/invariants/invariants.h"
#include "properties/invariants/support.h"

namespace moefuzz::inv {
namespace {

// True when the two runs are distinguishable: some element differs by more than both bounds.
bool distinguishable(const Side& a, const Side& b) {
  for (size_t i = 0; i < a.got.size(); ++i)
    if (std::fabs(a.got[i] - b.got[i]) > a.bound[i] + b.bound[i]) return true;
  return false;
}

// Does the math say the outputs must differ? (the expectations are further apart than twice the bounds)
bool ideal_differs(const Side& a, const Side& b) {
  for (size_t i = 0; i < a.expected.size(); ++i)
    if (std::fabs(a.expected[i] - b.expected[i]) > 2 * (a.bound[i] + b.bound[i])) return true;
  return false;
}

}  // namespace

Invariant make_tactic_invariant() {
  Invariant inv;
  inv.code = "TACTIC";
  inv.description = "every tile/tactic variant of the kernel agrees with the oracle";
  inv.applies = [](const Kernel& k, const CaseRecipe&) {
    return k.claims().tactics > 1 ? std::string() : std::string("kernel has one tactic");
  };
  inv.check = [](CheckContext& ctx) -> Verdict {
    const Case& c = ctx.base_case();
    int64_t compared = 0;
    std::optional<Verdict> vacuous;  // a run whose bound accepts a trivial corruption proves nothing
    for (int t = 0; t < ctx.kernel().claims().tactics; ++t) {
      if (t == ctx.options().tactic) continue;
      RunOptions o = ctx.options();
      o.tactic = t;
      const LayerResult r = ctx.run(c, &o);
      // The oracle conditioned on this run: the baseline's evaluation when the decisions and exposed
      // values are the same bits (properties/oracle_reuse.h).
      const std::shared_ptr<const OracleEvaluation> shared = ctx.evaluate_on_base(r);
      const OracleEvaluation& ev = *shared;
      Verdict v = compare_layer(ev, r);
      v.invariant = "TACTIC";
      if (v.passed() && ev.stage("output") != nullptr) {
        const StageExpectation& out = output_stage(ev);
        v = unless_vacuous(v, to_double(r.output), out.expected, out.bound, out.rows, out.cols);
        if (v.outcome == Outcome::kVacuous) vacuous = v;
      }
      if (v.failed()) {
        v.message = fmt::format("tactic {}: {}", t, v.message);
        return v;
      }
      compared += v.compared;
    }
    if (vacuous) return *vacuous;
    Verdict v = Verdict::pass("TACTIC", "output");
    v.compared = compared;
    return v;
  };
  return inv;
}

Invariant make_param_invariant() {
  Invariant inv;
  inv.code = "PARAM";
  inv.description = "every semantic parameter changes the output when the math says it must";
  inv.applies = [](const Kernel&, const CaseRecipe& r) {
    return r.routing.mode == RoutingMode::kHash && r.routing.hash_score == ScoreFunc::kSoftmax
               ? std::string("renormalize has no effect on softmax-scored hash routing")
               : std::string();
  };
  inv.check = [](CheckContext& ctx) -> Verdict {
    const Case& c = ctx.base_case();
    const Side base = baseline_side(ctx);
    if (base.rejected) return *base.rejected;
    int probes = 0;
    // renormalize flipped.
    {
      Case flipped = c;
      flipped.recipe.routing.renormalize = !c.recipe.routing.renormalize;
      if (ctx.kernel().supports(flipped.recipe).empty()) {
        const LayerResult rf = ctx.run_for_comparison(flipped);
        const Side sf = side_of(ctx, flipped, rf);
        if (!sf.rejected && ideal_differs(base, sf)) {
          ++probes;
          if (!distinguishable(base, sf))
            return Verdict::fail(
                "PARAM", "route",
                fmt::format("renormalize={} and {} give the same output although the math differs",
                            c.recipe.routing.renormalize, flipped.recipe.routing.renormalize));
        }
      }
    }
    // A SwiGLU limit at half the largest |gate| the oracle sees clips something.
    {
      const StageExpectation* g1 = ctx.oracle_end_to_end().stage("gemm1");
      if (g1 != nullptr && !g1->expected.empty()) {
        double mx = 0;
        for (double v : g1->expected) mx = std::max(mx, std::fabs(v));
        Case limited = c;
        limited.recipe.swiglu.limit = std::min(c.recipe.swiglu.limit, mx / 2);
        if (mx > 0 && limited.recipe.swiglu.limit < c.recipe.swiglu.limit &&
            ctx.kernel().supports(limited.recipe).empty()) {
          const LayerResult rl = ctx.run_for_comparison(limited);
          const Side sl = side_of(ctx, limited, rl);
          if (!sl.rejected && ideal_differs(base, sl)) {
            ++probes;
            if (!distinguishable(base, sl))
              return Verdict::fail("PARAM", "activation", "swiglu_limit changed the math but not the output");
          }
        }
      }
    }
    if (probes == 0) return Verdict::skip("PARAM", "no parameter change moves the ideal output on this case");
    Verdict v = Verdict::pass("PARAM", "output");
    v.compared = probes;  // each probe: a parameter whose change the output was required to show
    return v;
  };
  return inv;
}

}  // namespace moefuzz::inv
