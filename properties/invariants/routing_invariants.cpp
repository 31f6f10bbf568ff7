// Invariants about what the router weight means:
// SHIFT   softmax routing: logits + c (an exactly representable shift) gives the same ids and weights.
// WEIGHT1 the router weight multiplies exactly once: lowering the unselected logits of a softmax
//         router without renormalization scales every selected weight of a token by f = Z/Z', so the
//         token's routed output scales by exactly f (twice applied: f^2; on the input side: not linear).
// DUP     hash routing: a duplicated expert in a token's row contributes each slot with its own weight
//         ([e, e] with [a, b] == [e] with a + b): the kernel keeps both slots and the output matches.
#include <fmt/format.h>

#include <cmath>
#include <set>

#include "oracles/routing_ref.h"
#include "properties/case_transforms.h"
#include "properties/invariants/invariants.h"
#include "properties/invariants/support.h"

namespace moefuzz::inv {
namespace {

bool softmax_scored(const CaseRecipe& r) {
  return r.routing.mode == RoutingMode::kSoftmax ||
         (r.routing.mode == RoutingMode::kHash && r.routing.hash_score == ScoreFunc::kSoftmax);
}

}  // namespace

Invariant make_shift_invariant() {
  Invariant inv;
  inv.code = "SHIFT";
  inv.description = "softmax routing: logits + c gives identical ids and weights";
  inv.applies = [](const Kernel&, const CaseRecipe& r) {
    return softmax_scored(r) ? std::string() : std::string("not softmax-scored routing");
  };
  inv.check = [](CheckContext& ctx) -> Verdict {
    const Case& c = ctx.base_case();
    bool ok = false;
    Case shifted = c;
    for (float shift : {8.0f, -8.0f, 1.0f, -1.0f, 0.5f}) {
      shifted = shift_logits(c, shift, &ok);
      if (ok) break;
    }
    if (!ok) return Verdict::skip("SHIFT", "no exactly representable logit shift");
    const LayerResult rs = ctx.run_for_comparison(shifted);
    const LayerResult& r = ctx.baseline();
    const RoutingCheck ca = check_routing(c, ctx.profile(), r.routing);
    const RoutingCheck cb = check_routing(shifted, ctx.profile(), rs.routing);
    // A rejected routing (weights out of their bounds) is still compared: the relation needs only
    // the two runs and the weight bounds, which exist either way; a correct kernel is never rejected.
    const int64_t T = r.routing.tokens, S = r.routing.slots;
    const size_t n = static_cast<size_t>(T * S);
    if (rs.routing.tokens != T || rs.routing.slots != S || r.routing.ids.size() != n ||
        rs.routing.ids.size() != n || r.routing.weights.size() != n || rs.routing.weights.size() != n ||
        ca.near_tie.size() != static_cast<size_t>(T))
      return Verdict::skip("SHIFT", "routing output has the wrong shape (STRUCT reports it)");
    Side a, b;  // the weights of both runs, matched by expert id, with the oracle's weight expectations
    for (int64_t t = 0; t < T; ++t) {
      if (ca.near_tie[static_cast<size_t>(t)] || cb.near_tie[static_cast<size_t>(t)])
        continue;  // sets may differ at ties
      if (token_ids_of(r.routing, t) != token_ids_of(rs.routing, t))
        return Verdict::fail("SHIFT", "route",
                             fmt::format("token {}: shifting every logit changed the selected experts", t),
                             ElementError{{.token = t}, NAN, NAN, 0});
      // Compare weights by expert id (slot order may differ).
      for (int64_t j = 0; j < S; ++j) {
        const size_t i = static_cast<size_t>(t * S + j);
        for (int64_t m = 0; m < S; ++m) {
          const size_t k = static_cast<size_t>(t * S + m);
          if (rs.routing.ids[k] != r.routing.ids[i]) continue;
          b.got.push_back(rs.routing.weights[k]);
          b.expected.push_back(cb.expected_weights[k]);
          b.bound.push_back(cb.weight_bounds[k]);
          a.got.push_back(r.routing.weights[i]);
          a.expected.push_back(ca.expected_weights[i]);
          a.bound.push_back(ca.weight_bounds[i]);
          break;
        }
      }
    }
    if (a.got.empty()) return Verdict::skip("SHIFT", "every token is at a near-tie");
    a.rows = b.rows = 1;
    a.cols = b.cols = static_cast<int64_t>(a.got.size());
    return metamorphic_compare("SHIFT", "route", b, a);
  };
  return inv;
}

Invariant make_weight1_invariant() {
  Invariant inv;
  inv.code = "WEIGHT1";
  inv.description = "the router weight multiplies exactly once (weight-on-output, linear in the weight)";
  inv.applies = [](const Kernel&, const CaseRecipe& r) {
    if (r.routing.mode != RoutingMode::kSoftmax) return std::string("needs softmax routing");
    if (r.routing.renormalize) return std::string("renormalized weights do not move with unselected logits");
    if (r.shape.top_k >= r.shape.experts) return std::string("no unselected expert");
    return std::string();
  };
  inv.check = [](CheckContext& ctx) -> Verdict {
    const Case routed = without_shared_experts(ctx.base_case());
    const LayerResult r0 = ctx.run_for_comparison(routed);
    const auto& sh = routed.recipe.shape;
    // Lower every unselected logit by 64 so that their softmax mass vanishes. The lowered logit need
    // not be exact: f is computed from the fp32 values the kernel actually receives.
    Case lowered = routed;
    std::vector<double> factor(static_cast<size_t>(sh.tokens), 1.0);
    for (int64_t t = 0; t < sh.tokens; ++t) {
      std::set<int32_t> sel(r0.routing.ids.begin() + t * r0.routing.slots,
                            r0.routing.ids.begin() + (t + 1) * r0.routing.slots);
      double z = 0, z2 = 0, mx = -INFINITY;
      for (int64_t e = 0; e < sh.experts; ++e)
        mx = std::max<double>(mx, routed.logits[static_cast<size_t>(t * sh.experts + e)]);
      for (int64_t e = 0; e < sh.experts; ++e) {
        float& x = lowered.logits[static_cast<size_t>(t * sh.experts + e)];
        const double p = std::exp(static_cast<double>(x) - mx);
        z += p;
        if (sel.count(static_cast<int32_t>(e))) {
          z2 += p;
          continue;
        }
        const float y = x - 64.0f;
        x = y;
        z2 += std::exp(static_cast<double>(y) - mx);
      }
      factor[static_cast<size_t>(t)] = z / z2;
    }
    const LayerResult r1 = ctx.run_for_comparison(lowered);
    const Side s0 = side_of(ctx, routed, r0), s1 = side_of(ctx, lowered, r1);
    if (s0.rejected) return *s0.rejected;
    if (s1.rejected) return *s1.rejected;
    double max_f = 1;
    std::vector<double> expected(s0.expected.size()), bound(expected.size()), got = s1.got;
    for (int64_t t = 0; t < sh.tokens; ++t) {
      const double f = factor[static_cast<size_t>(t)];
      max_f = std::max(max_f, f);
      if (token_ids_of(r0.routing, t) != token_ids_of(r1.routing, t))
        return Verdict::skip("WEIGHT1", "selection moved (near-tie)");
      for (int64_t h = 0; h < sh.hidden; ++h) {
        const size_t i = static_cast<size_t>(t * sh.hidden + h);
        expected[i] = f * s0.got[i];
        // As metamorphic_compare, with the per-token factor f; f comes from double exp and sums
        // (relative error < E * 2^-50 for E <= 2^16 terms), which 2^-30 covers.
        bound[i] = s1.bound[i] + f * s0.bound[i] + std::fabs(s1.expected[i] - f * s0.expected[i]) +
                   0x1p-30 * f * std::fabs(s0.got[i]);
        // As metamorphic_compare: a NaN bound (the oracle cannot bound an element fed by a non-finite
        // input) specifies nothing; a NaN expectation makes compare_elementwise skip it (FINITE covers
        // it). Found by moe_layer_fuzzer on cpu: a bf16-max hidden value with up.global = inf.
        if (std::isnan(bound[i])) expected[i] = NAN;
      }
    }
    if (max_f < 1 + 0x1p-4)
      return Verdict::skip("WEIGHT1", "unselected experts carry too little mass to move the weights");
    Verdict v =
        unless_vacuous(compare_elementwise("WEIGHT1", "output", got, expected, bound, sh.tokens, sh.hidden),
                       got, expected, bound, sh.tokens, sh.hidden);
    if (v.failed())
      v.message =
          fmt::format("weights scaled by up to {:.3f}; output did not scale linearly: {}", max_f, v.message);
    return v;
  };
  return inv;
}

Invariant make_dup_invariant() {
  Invariant inv;
  inv.code = "DUP";
  inv.evaluates_other_runs = false;  // the baseline's evaluation at most
  inv.description =
      "hash rows with a repeated expert id: each slot keeps its own weight ([e,e] with [a,b] == [e] with "
      "a+b)";
  inv.applies = [](const Kernel&, const CaseRecipe& r) {
    return r.routing.mode == RoutingMode::kHash ? std::string() : std::string("needs hash routing");
  };
  inv.check = [](CheckContext& ctx) -> Verdict {
    const Case& c = ctx.base_case();
    const auto& sh = c.recipe.shape;
    const LayerResult& r = ctx.baseline();
    if (auto skip = rejected("DUP", ctx.oracle())) return *skip;
    const StageExpectation& out = output_stage(ctx.oracle());
    std::vector<double> got(out.expected.size(), NAN), expected(out.expected.size(), NAN);
    int64_t dup_tokens = 0;
    std::vector<uint8_t> is_dup(static_cast<size_t>(sh.tokens), 0);
    for (int64_t t = 0; t < sh.tokens; ++t) {
      const int64_t tid = c.token_ids[static_cast<size_t>(t)];
      std::multiset<int32_t> row(c.hash_table.begin() + tid * sh.top_k,
                                 c.hash_table.begin() + (tid + 1) * sh.top_k);
      if (std::set<int32_t>(row.begin(), row.end()).size() == row.size()) continue;
      ++dup_tokens;
      is_dup[static_cast<size_t>(t)] = 1;
      std::multiset<int32_t> routed;
      for (int64_t j = 0; j < r.routing.slots; ++j) {
        const int32_t id = r.routing.ids[static_cast<size_t>(t * r.routing.slots + j)];
        if (id < sh.experts) routed.insert(id);
      }
      if (routed != row)
        return Verdict::fail("DUP", "route",
                             fmt::format("token {}: the kernel's slots lost or merged a repeated expert", t),
                             ElementError{{.token = t}, NAN, NAN, 0});
      for (int64_t h = 0; h < sh.hidden; ++h) {
        const size_t i = static_cast<size_t>(t * sh.hidden + h);
        got[i] = r.output[i];
        expected[i] = out.expected[i];
      }
    }
    if (dup_tokens == 0) return Verdict::skip("DUP", "no token's table row repeats an expert");
    // "Each slot keeps its own weight" is checked where it is decided too: the repeated slots'
    // routing weights against the oracle's route stage (the kernel's own ids, the profile's
    // semantics: the expectation ORACLE compares). This holds the invariant to account where the
    // output cannot (a layer whose output underflows to zero accepts any weights).
    Verdict by_weight = Verdict::pass("DUP", "route");
    if (const StageExpectation* route = ctx.oracle().stage("route");
        route != nullptr && route->expected.size() == r.routing.weights.size()) {
      std::vector<double> wgot(route->expected.size(), NAN), wexp(route->expected.size(), NAN);
      for (int64_t t = 0; t < sh.tokens; ++t) {
        if (!is_dup[static_cast<size_t>(t)]) continue;
        for (int64_t j = 0; j < route->cols; ++j) {
          const size_t i = static_cast<size_t>(t * route->cols + j);
          wgot[i] = r.routing.weights[i];
          wexp[i] = route->expected[i];
        }
      }
      by_weight = unless_vacuous(
          compare_elementwise("DUP", "route", wgot, wexp, route->bound, route->rows, route->cols), wgot, wexp,
          route->bound, route->rows, route->cols);
      if (by_weight.failed()) {
        by_weight.message = "a repeated expert's slot weight: " + by_weight.message;
        return by_weight;
      }
    }
    Verdict by_output =
        unless_vacuous(compare_elementwise("DUP", "output", got, expected, out.bound, sh.tokens, sh.hidden),
                       got, expected, out.bound, sh.tokens, sh.hidden);
    if (by_output.outcome == Outcome::kVacuous && by_weight.outcome == Outcome::kPass) return by_weight;
    return by_output;
  };
  return inv;
}

}  // namespace moefuzz::inv
