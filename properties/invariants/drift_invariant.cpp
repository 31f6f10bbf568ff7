// DRIFT as a registry invariant (expensive: many layers). `moefuzz drift` runs the same functions
// with longer horizons and writes the CSV and plot.
#include "properties/drift.h"
#include "properties/invariants/invariants.h"

namespace moefuzz::inv {

Invariant make_drift_invariant() {
  Invariant inv;
  inv.code = "DRIFT";
  inv.evaluates_other_runs = false;  // the baseline's evaluation at most
  inv.description = "many layers / long sequences: error grows no faster than an unbiased random walk";
  inv.expensive = true;
  inv.applies = [](const Kernel&, const CaseRecipe&) { return std::string(); };
  inv.check = [](CheckContext& ctx) {
    constexpr int kLayers = 24;  // enough for a 2^-10-relative bias to stand out at z > 6 on small shapes
    const DriftReport rep = run_layer_drift(ctx.kernel(), ctx.base_case().recipe, kLayers);
    Verdict v = rep.verdict;
    v.compared = static_cast<int64_t>(rep.points.size());  // layers judged (0: vacuous)
    return v;
  };
  return inv;
}

}  // namespace moefuzz::inv
