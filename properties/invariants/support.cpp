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

std::optional<Verdict> rejected(const std::string& invariant, const OracleEvaluation& ev) {
  if (!ev.admissibility.failed() && ev.stage("output") != nullptr) return std::nullopt;
  return Verdict::skip(
      invariant, "the oracle rejected this run's decisions (ORACLE reports it): " + ev.admissibility.message);
}

Side side_of(CheckContext& ctx, const Case& c, const LayerResult& r) {
  const OracleEvaluation ev = ctx.evaluate(c, r);
  Side s;
  s.rejected = rejected("", ev);
  if (s.rejected) return s;
  const StageExpectation& out = output_stage(ev);
  s.got = to_double(r.output);
  s.expected = out.expected;
  s.bound = out.bound;
  s.rows = out.rows;
  s.cols = out.cols;
  return s;
}

Side baseline_side(CheckContext& ctx) {
  const OracleEvaluation& ev = ctx.oracle_end_to_end();
  Side s;
  s.rejected = rejected("", ev);
  if (s.rejected) return s;
  const StageExpectation& out = output_stage(ev);
  s.got = to_double(ctx.baseline().output);
  s.expected = out.expected;
  s.bound = out.bound;
  s.rows = out.rows;
  s.cols = out.cols;
  return s;
}

Side restrict(const Side& s, const std::vector<int64_t>& rows, int64_t cols) {
  Side r;
  r.rejected = s.rejected;
  if (s.rejected) return r;
  r.rows = static_cast<int64_t>(rows.size());
  r.cols = cols;
  for (int64_t row : rows)
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(row * s.cols + c);
      r.got.push_back(s.got[i]);
      r.expected.push_back(s.expected[i]);
      r.bound.push_back(s.bound[i]);
    }
  return r;
}

Verdict metamorphic_compare(const std::string& invariant, const std::string& stage, const Side& a,
                            const Side& b, double scale) {
  for (const Side* s : {&a, &b})
    if (s->rejected) {
      Verdict v = *s->rejected;
      v.invariant = invariant;
      return v;
    }
  std::vector<double> expected(b.got.size()), bound(b.got.size());
  for (size_t i = 0; i < b.got.size(); ++i) {
    expected[i] = scale * b.got[i];
    bound[i] = a.bound[i] + std::fabs(scale) * b.bound[i] + std::fabs(a.expected[i] - scale * b.expected[i]);
    // The relation itself is evaluated in double: |a - s*b| and the bound's terms each carry a few
    // roundings of their operands (2^-53 relative each). A correct kernel exactly on its bound (ratio 1
    // in exact arithmetic) must not fail on them (found by moe_layer_fuzzer: SCALE1 ratio 1 + 7e-16):
    // 4 units of the operands' magnitudes.
    bound[i] += 4 * 0x1p-53 *
                (std::fabs(a.got[i]) + std::fabs(expected[i]) + std::fabs(a.expected[i]) +
                 std::fabs(scale * b.expected[i]));
    // No bound (NaN: the oracle cannot bound an element fed by a non-finite input) means nothing is
    // specified there; a NaN expectation makes compare_elementwise skip it (FINITE covers such inputs).
    if (std::isnan(bound[i])) expected[i] = NAN;
  }
  return compare_elementwise(invariant, stage, a.got, expected, bound, a.rows, a.cols);
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
      if (v.worst_elements.size() < 30)
        v.worst_elements.push_back(ElementError{{.token = r, .element = c}, a[i], b[i], 0.0});
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
