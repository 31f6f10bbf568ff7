// OVF: index products that cross 2^31. For each product a kernel forms (expert x expert stride,
// token row x hidden, expanded row x inner dim) the sizes just below, at and above 2^31 are built and
// the VALUES of the affected rows are checked against the oracle, not only the absence of a crash
// (the same root cause gave an illegal access in one run and silent garbage in another, BUGZOO Z7).
//
// The large tier is opt-in on the CPU (`--tier large`): the expert-stride product needs a weight
// arena of >= 2 GiB. It is built with power-of-two H and I so that an expert's byte offset lands
// exactly on 2^31, and hash routing sends one token to the experts just below, at and above it.
#include <fmt/format.h>

#include <optional>

#include "core/case.h"
#include "properties/invariants/invariants.h"
#include "properties/invariants/support.h"
#include "properties/ovf_cases.h"

namespace moefuzz::inv {

Invariant make_ovf_invariant() {
  Invariant inv;
  inv.code = "OVF";
  inv.description = "sizes just below/at/above 2^31 for each index product: values checked, not only crashes";
  inv.expensive = true;
  inv.applies = [](const Kernel&, const CaseRecipe&) { return std::string(); };
  inv.check = [](CheckContext& ctx) -> Verdict {
    int64_t compared = 0;
    std::optional<Verdict> vacuous;  // a run whose bound accepts a trivial corruption proves nothing
    for (const OvfProbe& probe : ovf_probes(ctx.base_case().recipe)) {
      if (!ctx.kernel().supports(probe.recipe).empty()) continue;
      const Case c = materialize(probe.recipe, probe.max_bytes);
      const LayerResult r = ctx.run(c);
      const OracleEvaluation ev = evaluate(c, ctx.profile(), r);
      Verdict v = compare_layer(ev, r);
      v.invariant = "OVF";
      if (v.passed() && ev.stage("output") != nullptr) {
        const StageExpectation& out = output_stage(ev);
        v = unless_vacuous(v, to_double(r.output), out.expected, out.bound, out.rows, out.cols);
        if (v.outcome == Outcome::kVacuous) vacuous = v;
      }
      if (v.failed()) {
        v.message = fmt::format("{}: {}", probe.name, v.message);
        return v;
      }
      compared += v.compared;
    }
    if (vacuous) return *vacuous;
    Verdict v = Verdict::pass("OVF", "layer");
    v.compared = compared;  // 0: the kernel supports no probe (vacuous, not a pass)
    return v;
  };
  return inv;
}

}  // namespace moefuzz::inv
