#include "properties/invariants/support.h"

#include <bit>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace moefuzz::inv {

const StageExpectation& output_stage(const OracleEvaluation& ev) {
  const StageExpectation* s = ev.stage("output");
  if (s == nullptr) throw std::logic_error("oracle evaluation has no output stage");
  return *s;
}

Verdict metamorphic_compare(const std::string& invariant, const std::string& stage, const std::vector<double>& a,
                            const std::vector<double>& bound_a, const std::vector<double>& b,
                            const std::vector<double>& bound_b, int64_t rows, int64_t cols, double scale) {
  std::vector<double> expected(b.size()), bound(b.size());
  for (size_t i = 0; i < b.size(); ++i) {
    expected[i] = scale * b[i];
    bound[i] = bound_a[i] + std::fabs(scale) * bound_b[i];
  }
  return compare_elementwise(invariant, stage, a, expected, bound, rows, cols);
}

Verdict bitwise_compare(const std::string& invariant, const std::string& stage, const std::vector<float>& a,
                        const std::vector<float>& b, int64_t rows, int64_t cols) {
  Verdict v = Verdict::pass(invariant, stage);
  int64_t differing = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r * cols + c);
      ++v.compared;
      if (std::bit_cast<uint32_t>(a[i]) == std::bit_cast<uint32_t>(b[i])) continue;
      if (differing++ == 0) v.worst = ElementError{{.token = r, .element = c}, a[i], b[i], 0.0};
      if (v.worst_elements.size() < 30) v.worst_elements.push_back(ElementError{{.token = r, .element = c}, a[i], b[i], 0.0});
    }
  if (differing == 0) return v;
  v.outcome = Outcome::kFail;
  v.max_ratio = INFINITY;
  v.message = fmt::format("{} of {} elements differ bitwise", differing, v.compared);
  return v;
}

double probe_scale(const CaseRecipe& r) {
  return r.routing.routed_scaling_factor != 1.0 ? r.routing.routed_scaling_factor : 2.5;
}

}  // namespace moefuzz::inv
