#pragma once
// Shared helpers of the invariant implementations (not a public API): the metamorphic comparison
// with bounds taken from the oracle's precision contract, and small conversions.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/elementwise_compare.h"
#include "properties/invariant.h"

namespace moefuzz::inv {

inline std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// The expert ids of token t in a routing decision, as a multiset (slot order and duplicates aside).
inline std::multiset<int32_t> token_ids_of(const RoutingDecision& d, int64_t t) {
  return {d.ids.begin() + t * d.slots, d.ids.begin() + (t + 1) * d.slots};
}

// The "output" stage of an evaluation (throws std::logic_error if the oracle did not provide one;
// check `rejected()` first).
const StageExpectation& output_stage(const OracleEvaluation& ev);
// A skip verdict when the oracle rejected the baseline run's decisions (ORACLE reports that failure
// itself), or nullopt when the evaluation has its stages.
std::optional<Verdict> rejected(const std::string& invariant, const OracleEvaluation& ev);
// For a run of a transformed case (which ORACLE never sees): the oracle's rejection of that run's
// own decisions as a FAILURE under the rule that broke (ORACLE/route "inadmissible expert set",
// STRUCT, ORACLE/fc1_quant, ...), so a finding is named for what broke; nullopt when admitted.
std::optional<Verdict> rejected_run(const OracleEvaluation& ev);

// One side of a metamorphic relation: the kernel's output on a case, the oracle's end-to-end
// expectation for it (conditioned on that run's decisions) and the bound a correct kernel stays in.
struct Side {
  std::vector<double> got, expected, bound;
  int64_t rows = 0, cols = 0;
  std::optional<Verdict> rejected;
};
Side side_of(CheckContext& ctx, const Case& c, const LayerResult& r);
Side baseline_side(CheckContext& ctx);
// Keeps rows `rows` and the first `cols` columns of a side (BATCH, PERM, PAD compare sub-blocks).
Side restrict(const Side& s, const std::vector<int64_t>& rows, int64_t cols);

// The metamorphic shortcut for runs that changed nothing: a pass when the transformed run `b`
// made the baseline's decisions and wrote the baseline's output bit for bit, so that no bound is
// needed and its case need not be evaluated (PAD's fresh evaluation at the padded dimensions cost
// most of a check). Holds only when every token of `b` is compared (rows_b; token rows_b[i] of b
// against rows_a[i] of the baseline), each with the same expert ids in slot order and the same
// routing weights by bits, and the first `cols` output columns are finite and equal by bits; the
// oracle then has nothing to reject in b that it does not judge in the baseline (ORACLE), and the
// full comparison would pass too. What the shortcut gives up: the oracle's judgement of b's own
// intermediate codes (FC1/FC2), which here left no trace in b's output; ORACLE judges the
// baseline's. nullopt otherwise: the caller compares within bounds.
//
// Example:
//   if (auto same = identical_run("PAD", ctx.baseline(), padded_run, rows, rows, H)) return *same;
std::optional<Verdict> identical_run(const std::string& invariant, const LayerResult& a, const LayerResult& b,
                                     const std::vector<int64_t>& rows_a, const std::vector<int64_t>& rows_b,
                                     int64_t cols);

// Metamorphic comparison: the relation says ideal(a) == scale * ideal(b), within the bound
// oracles/bounds.h relation_bound derives from both runs' oracle bounds. A run whose own decisions
// the oracle rejects is that rule's failure (a transformed run) or a skip (the baseline: ORACLE
// reports it). Marked vacuous when the bound would accept a trivial corruption.
Verdict metamorphic_compare(const std::string& invariant, const std::string& stage, const Side& a,
                            const Side& b, double scale = 1.0);

// Non-vacuity: the name of a trivial corruption of `got` (all zeros, a sign flip, x(1+2^-4), the
// neighbouring token's row) that the same expectation and bound would accept, or "" when every one
// is rejected. A corruption identical to `got` (an all-zero output) does not distinguish anything
// and is not tried.
std::string accepted_corruption(const std::vector<double>& got, const std::vector<double>& expected,
                                const std::vector<double>& bound, int64_t rows, int64_t cols);
// Marks a passing verdict vacuous (Outcome::kVacuous) when its bound would accept a trivial
// corruption; failures and skips are returned unchanged.
Verdict unless_vacuous(Verdict v, const std::vector<double>& got, const std::vector<double>& expected,
                       const std::vector<double>& bound, int64_t rows, int64_t cols);

// The routed scaling factor a metamorphic check uses: the recipe's when != 1, else 2.5 (DeepSeek-V3).
double probe_scale(const CaseRecipe& r);

}  // namespace moefuzz::inv
