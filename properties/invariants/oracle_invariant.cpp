// ORACLE: the kernel against the high-precision oracle under its declared profile, within the
// derived bound, with its discrete decisions admitted first. Non-vacuity: the same bound is applied
// to trivial corruptions of the kernel's own output; if one would pass, the case is "vacuous".
#include <fmt/format.h>

#include <cmath>

#include "properties/invariants/invariants.h"
#include "properties/invariants/support.h"

namespace moefuzz::inv {
namespace {

// Returns "" when no corruption passes, else the name of one that the bound accepts.
std::string accepted_corruption(const std::vector<double>& got, const StageExpectation& out) {
  const int64_t rows = out.rows, cols = out.cols;
  auto accepts = [&](const std::vector<double>& corrupted) {
    if (corrupted == got) return false;  // identical to the output: not a distinguishing corruption
    return !compare_elementwise("ORACLE", "output", corrupted, out.expected, out.bound, rows, cols).failed();
  };
  std::vector<double> c(got.size());
  for (size_t i = 0; i < got.size(); ++i) c[i] = 0.0;
  if (accepts(c)) return "all zeros";
  for (size_t i = 0; i < got.size(); ++i) c[i] = -got[i];
  if (accepts(c)) return "sign flip";
  for (size_t i = 0; i < got.size(); ++i) c[i] = got[i] * (1.0 + 0x1p-4);
  if (accepts(c)) return "x(1+2^-4)";
  if (rows > 1) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < cols; ++k)
        c[static_cast<size_t>(r * cols + k)] = got[static_cast<size_t>(((r + 1) % rows) * cols + k)];
    if (accepts(c)) return "the neighbouring token's row";
  }
  return "";
}

}  // namespace

Invariant make_oracle_invariant() {
  Invariant inv;
  inv.code = "ORACLE";
  inv.description =
      "kernel vs high-precision oracle under its declared profile, within the derived bound; decisions "
      "admitted";
  inv.applies = [](const Kernel&, const CaseRecipe&) { return std::string(); };
  inv.check = [](CheckContext& ctx) {
    const LayerResult& r = ctx.baseline();
    const OracleEvaluation& ev = ctx.oracle();
    Verdict v = compare_layer(ev, r);  // admissibility first, then every exposed stage in pipeline order
    v.invariant = "ORACLE";
    if (v.failed()) return v;
    const StageExpectation& out = output_stage(ev);
    const std::string corruption = accepted_corruption(to_double(r.output), out);
    if (!corruption.empty()) {
      v.outcome = Outcome::kVacuous;
      v.message = fmt::format("vacuous: the bound would also accept {} of the output", corruption);
    }
    return v;
  };
  return inv;
}

}  // namespace moefuzz::inv
