// DRIFT as a registry invariant (expensive: many layers). `moefuzz drift` runs the same functions
// with longer horizons and writes the CSV and plot.
#include "properties/drift.h"
#include "properties/invariants/invariants.h"

namespace moefuzz::inv {

Invariant make_drift_invariant() {
  Invariant inv;
  inv.code = "DRIFT";
  inv.description = "many layers / long sequences: error grows no faster than an unbiased random walk";
  inv.expensive = true;
  inv.applies = [](const Kernel&, const CaseRecipe&) { return std::string(); };
  inv.check = [](CheckContext& ctx) {
    constexpr int kLayers = 24;  // enough for a 2^-10-relative bias to stand out at z > 6 on small shapes
    return run_layer_drift(ctx.kernel(), ctx.base_case().recipe, kLayers).verdict;
  };
  return inv;
}

}  // namespace moefuzz::inv
