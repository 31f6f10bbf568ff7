#include "properties/invariants/support.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "oracles/bounds.h"

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

std::optional<Verdict> rejected_run(const OracleEvaluation& ev) {
  if (ev.admissibility.failed()) return ev.admissibility;
  if (ev.stage("output") == nullptr)
    return Verdict::skip("", "the oracle produced no output expectation for this run");
  return std::nullopt;
}

Side side_of(CheckContext& ctx, const Case& c, const LayerResult& r) {
  const std::shared_ptr<const OracleEvaluation> shared = ctx.evaluate(c, r);
  const OracleEvaluation& ev = *shared;
  Side s;
  s.rejected = rejected_run(ev);
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
      if (!v.failed()) v.invariant = invariant;  // a failure keeps the rule that broke
      return v;
    }
  std::vector<double> expected(b.got.size()), bound(b.got.size());
  for (size_t i = 0; i < b.got.size(); ++i) {
    expected[i] = scale * b.got[i];
    bound[i] =
        relation_bound(a.got[i], b.got[i], a.expected[i], a.bound[i], b.expected[i], b.bound[i], scale);
    // No bound (NaN: the oracle cannot bound an element fed by a non-finite input) means nothing is
    // specified there; a NaN expectation makes compare_elementwise skip it (FINITE covers such inputs).
    if (std::isnan(bound[i])) expected[i] = NAN;
  }
  return unless_vacuous(compare_elementwise(invariant, stage, a.got, expected, bound, a.rows, a.cols), a.got,
                        expected, bound, a.rows, a.cols);
}

std::optional<Verdict> identical_run(const std::string& invariant, const LayerResult& a, const LayerResult& b,
                                     const std::vector<int64_t>& rows_a, const std::vector<int64_t>& rows_b,
                                     int64_t cols) {
  const RoutingDecision &ra = a.routing, &rb = b.routing;
  if (rows_a.size() != rows_b.size() || static_cast<int64_t>(rows_b.size()) != rb.tokens || ra.tokens <= 0 ||
      rb.tokens <= 0 || ra.slots != rb.slots)
    return std::nullopt;
  const size_t S = static_cast<size_t>(ra.slots);
  for (const RoutingDecision* d : {&ra, &rb})  // a malformed decision is left to the full comparison
    if (d->ids.size() != static_cast<size_t>(d->tokens) * S || d->weights.size() != d->ids.size())
      return std::nullopt;
  const size_t stride_a = a.output.size() / static_cast<size_t>(ra.tokens);
  const size_t stride_b = b.output.size() / static_cast<size_t>(rb.tokens);
  if (cols < 0 || static_cast<size_t>(cols) > std::min(stride_a, stride_b)) return std::nullopt;
  std::vector<bool> seen(static_cast<size_t>(rb.tokens), false);
  const auto same_bits = [](float x, float y) {
    return std::bit_cast<uint32_t>(x) == std::bit_cast<uint32_t>(y);
  };
  for (size_t i = 0; i < rows_b.size(); ++i) {
    const int64_t ta = rows_a[i], tb = rows_b[i];
    if (ta < 0 || ta >= ra.tokens || tb < 0 || tb >= rb.tokens || seen[static_cast<size_t>(tb)])
      return std::nullopt;
    seen[static_cast<size_t>(tb)] = true;
    for (size_t j = 0; j < S; ++j) {
      const size_t ia = static_cast<size_t>(ta) * S + j, ib = static_cast<size_t>(tb) * S + j;
      if (ra.ids[ia] != rb.ids[ib] || !same_bits(ra.weights[ia], rb.weights[ib])) return std::nullopt;
    }
    const float* out_a = a.output.data() + static_cast<size_t>(ta) * stride_a;
    const float* out_b = b.output.data() + static_cast<size_t>(tb) * stride_b;
    for (int64_t c = 0; c < cols; ++c)
      if (!std::isfinite(out_a[c]) || !same_bits(out_a[c], out_b[c])) return std::nullopt;
  }
  Verdict v = Verdict::pass(invariant, "output");
  v.compared = static_cast<int64_t>(rows_b.size()) * cols;
  return v;
}

std::string accepted_corruption(const std::vector<double>& got, const std::vector<double>& expected,
                                const std::vector<double>& bound, int64_t rows, int64_t cols) {
  auto accepts = [&](const std::vector<double>& corrupted) {
    if (corrupted == got) return false;  // identical to the output: not a distinguishing corruption
    return !any_element_outside_bound(corrupted, expected, bound);
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

Verdict unless_vacuous(Verdict v, const std::vector<double>& got, const std::vector<double>& expected,
                       const std::vector<double>& bound, int64_t rows, int64_t cols) {
  if (v.outcome != Outcome::kPass) return v;
  const std::string corruption = accepted_corruption(got, expected, bound, rows, cols);
  if (!corruption.empty()) {
    v.outcome = Outcome::kVacuous;
    v.message = fmt::format("vacuous: the bound would also accept {} of the output", corruption);
  }
  return v;
}

double probe_scale(const CaseRecipe& r) {
  return r.routing.routed_scaling_factor != 1.0 ? r.routing.routed_scaling_factor : 2.5;
}

}  // namespace moefuzz::inv
