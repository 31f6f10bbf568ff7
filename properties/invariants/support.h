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
// A skip verdict when the oracle rejected the run's decisions (ORACLE reports that failure itself),
// or nullopt when the evaluation has its stages.
std::optional<Verdict> rejected(const std::string& invariant, const OracleEvaluation& ev);

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

// Metamorphic comparison: the relation says ideal(a) == scale * ideal(b). A correct kernel holds
// |a - E_a| <= B_a and |b - E_b| <= B_b, so |a - scale*b| <= B_a + |scale|*B_b + |E_a - scale*E_b|
// is sound. The last term is zero when the relation is exact on the emulated roundings too, and
// carries the legitimate difference where rounding points or admitted decisions differ.
Verdict metamorphic_compare(const std::string& invariant, const std::string& stage, const Side& a,
                            const Side& b, double scale = 1.0);

// Bitwise equality of two outputs (REPEAT, CANARY, BATCH for kernels that claim it).
Verdict bitwise_compare(const std::string& invariant, const std::string& stage, const std::vector<float>& a,
                        const std::vector<float>& b, int64_t rows, int64_t cols);

// The routed scaling factor a metamorphic check uses: the recipe's when != 1, else 2.5 (DeepSeek-V3).
double probe_scale(const CaseRecipe& r);

}  // namespace moefuzz::inv
