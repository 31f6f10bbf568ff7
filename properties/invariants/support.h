#pragma once
// Shared helpers of the invariant implementations (not a public API): the metamorphic comparison
// with bounds taken from the oracle's precision contract, and small conversions.
#include <string>
#include <vector>

#include "core/elementwise_compare.h"
#include "properties/invariant.h"

namespace moefuzz::inv {

inline std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// The "output" stage of an evaluation (throws std::logic_error if the oracle did not provide one).
const StageExpectation& output_stage(const OracleEvaluation& ev);

// Metamorphic comparison: the relation says ideal(a) == scale * ideal(b) elementwise. A correct
// kernel is within bound_a of ideal(a) and bound_b of ideal(b), so |a - scale*b| <= bound_a +
// |scale|*bound_b is sound (no oracle VALUE is used, only the contract's bounds).
Verdict metamorphic_compare(const std::string& invariant, const std::string& stage, const std::vector<double>& a,
                            const std::vector<double>& bound_a, const std::vector<double>& b,
                            const std::vector<double>& bound_b, int64_t rows, int64_t cols, double scale = 1.0);

// Bitwise equality of two outputs (REPEAT, CANARY, BATCH for kernels that claim it).
Verdict bitwise_compare(const std::string& invariant, const std::string& stage, const std::vector<float>& a,
                        const std::vector<float>& b, int64_t rows, int64_t cols);

// The routed scaling factor a metamorphic check uses: the recipe's when != 1, else 2.5 (DeepSeek-V3).
double probe_scale(const CaseRecipe& r);

}  // namespace moefuzz::inv
