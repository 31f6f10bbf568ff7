// ORACLE: the kernel against the high-precision oracle under the profile in force, within the
// derived bound, with its discrete decisions admitted first. Non-vacuity: the same bound is applied
// to trivial corruptions of the kernel's own output; if one would pass, the case is "vacuous".
#include <fmt/format.h>

#include <cmath>

#include "properties/invariants/invariants.h"
#include "properties/invariants/support.h"

namespace moefuzz::inv {

Invariant make_oracle_invariant() {
  Invariant inv;
  inv.code = "ORACLE";
  inv.evaluates_other_runs = false;  // the baseline's evaluation at most
  inv.description =
      "kernel vs high-precision oracle under the profile in force, within the derived bound; decisions "
      "admitted";
  inv.applies = [](const Kernel&, const CaseRecipe&) { return std::string(); };
  inv.check = [](CheckContext& ctx) {
    const LayerResult& r = ctx.baseline();
    const OracleEvaluation& ev = ctx.oracle();
    Verdict v = compare_layer(ev, r);  // admissibility first, then every exposed stage in pipeline order
    v.invariant = "ORACLE";
    if (v.failed()) return v;
    const StageExpectation& out = output_stage(ev);
    return unless_vacuous(v, to_double(r.output), out.expected, out.bound, out.rows, out.cols);
  };
  return inv;
}

}  // namespace moefuzz::inv
