// Invariants that sweep a kernel's configuration space:
// TACTIC every tile / tactic variant of a kernel is checked against the oracle, not only the default.
// PARAM  every semantic parameter changes the output when the math says it must: renormalize (when
//        the selected weights do not already sum to 1) and the SwiGLU limit (when it clips a value).
#include <fmt/format.h>

#include <cmath>

#include "core/elementwise_compare.h"
#include "properties/invariants/invariants.h"
#include "properties/invariants/support.h"

namespace moefuzz::inv {
namespace {

// True when the two outputs are distinguishable: some element differs by more than both bounds.
bool distinguishable(const LayerResult& a, const StageExpectation& ea, const LayerResult& b, const StageExpectation& eb) {
  for (size_t i = 0; i < a.output.size(); ++i)
    if (std::fabs(static_cast<double>(a.output[i]) - b.output[i]) > ea.bound[i] + eb.bound[i]) return true;
  return false;
}

// Same for the two oracle expectations (does the math say the outputs must differ?).
bool ideal_differs(const StageExpectation& ea, const StageExpectation& eb) {
  for (size_t i = 0; i < ea.expected.size(); ++i)
    if (std::fabs(ea.expected[i] - eb.expected[i]) > 2 * (ea.bound[i] + eb.bound[i])) return true;
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
    for (int t = 0; t < ctx.kernel().claims().tactics; ++t) {
      if (t == ctx.options().tactic) continue;
      RunOptions o = ctx.options();
      o.tactic = t;
      const LayerResult r = ctx.run(c, &o);
      const OracleEvaluation ev = ctx.evaluate(c, r);
      if (ev.admissibility.failed()) {
        Verdict v = ev.admissibility;
        v.invariant = "TACTIC";
        v.message = fmt::format("tactic {}: {}", t, v.message);
        return v;
      }
      const auto& out = output_stage(ev);
      Verdict v = compare_elementwise("TACTIC", "output", to_double(r.output), out.expected, out.bound, out.rows, out.cols);
      if (v.failed()) {
        v.message = fmt::format("tactic {}: {}", t, v.message);
        return v;
      }
    }
    return Verdict::pass("TACTIC", "output");
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
    const LayerResult& r = ctx.baseline();
    const auto& e = output_stage(ctx.oracle());
    int probes = 0;
    // renormalize flipped.
    {
      Case flipped = c;
      flipped.recipe.routing.renormalize = !c.recipe.routing.renormalize;
      if (ctx.kernel().supports(flipped.recipe).empty()) {
        const LayerResult rf = ctx.run(flipped);
        const OracleEvaluation ef = ctx.evaluate(flipped, rf);
        const auto& of = output_stage(ef);
        if (ideal_differs(e, of)) {
          ++probes;
          if (!distinguishable(r, e, rf, of))
            return Verdict::fail("PARAM", "route", fmt::format("renormalize={} and {} give the same output although the math differs",
                                                               c.recipe.routing.renormalize, flipped.recipe.routing.renormalize));
        }
      }
    }
    // A SwiGLU limit at half the largest |gate| the oracle sees clips something.
    {
      const StageExpectation* g1 = ctx.oracle().stage("gemm1");
      if (g1 != nullptr && !g1->expected.empty()) {
        double mx = 0;
        for (double v : g1->expected) mx = std::max(mx, std::fabs(v));
        Case limited = c;
        limited.recipe.swiglu.limit = std::min(c.recipe.swiglu.limit, mx / 2);
        if (mx > 0 && limited.recipe.swiglu.limit < c.recipe.swiglu.limit && ctx.kernel().supports(limited.recipe).empty()) {
          const LayerResult rl = ctx.run(limited);
          const OracleEvaluation el = ctx.evaluate(limited, rl);
          const auto& ol = output_stage(el);
          if (ideal_differs(e, ol)) {
            ++probes;
            if (!distinguishable(r, e, rl, ol))
              return Verdict::fail("PARAM", "activation", "swiglu_limit changed the math but not the output");
          }
        }
      }
    }
    if (probes == 0) return Verdict::skip("PARAM", "no parameter change moves the ideal output on this case");
    return Verdict::pass("PARAM", "output");
  };
  return inv;
}

}  // namespace moefuzz::inv
