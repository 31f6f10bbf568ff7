// STRUCT: structural routing rules that hold for every correct kernel whatever its arithmetic:
// ids in range and distinct where the routing defines them so (hash rows copy the table, duplicates
// included); fused shared experts in their slots; selected experts within at most topk_group groups;
// weights finite and >= 0; sums = 1 (renormalized), = s (scale fused in top-k), <= 1 (softmax, no
// renormalization), within the rounding of the profile's weight dtype. The id and sign rules are the
// routing oracle's structure check (oracles/routing_ref.cpp), written once; the sum rules and their
// allowances are here, with the allowances in oracles/routing_bounds.h.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "oracles/routing_bounds.h"
#include "oracles/routing_ref.h"
#include "properties/invariants/invariants.h"
#include "properties/invariants/support.h"

namespace moefuzz::inv {
namespace {

Verdict fail_at(int64_t t, int64_t slot, int64_t expert, const std::string& what, double got = NAN,
                double expected = NAN, double bound = 0) {
  ElementError e{{.token = t, .slot = slot, .expert = expert}, got, expected, bound};
  return Verdict::fail("STRUCT", "route", what, e);
}

}  // namespace

Invariant make_struct_invariant() {
  Invariant inv;
  inv.code = "STRUCT";
  inv.evaluates_other_runs = false;  // the baseline's evaluation at most
  inv.description =
      "ids in range/distinct/in selected groups; weights finite, >= 0, sum 1, s or <= 1 as defined";
  inv.applies = [](const Kernel&, const CaseRecipe&) { return std::string(); };
  inv.check = [](CheckContext& ctx) -> Verdict {
    const Case& c = ctx.base_case();
    const CaseRecipe& rc = c.recipe;
    const Profile& p = ctx.profile();
    const RoutingDecision& d = ctx.baseline().routing;
    const int64_t T = rc.shape.tokens, E = rc.shape.experts, k = rc.shape.top_k, S = rc.slots();
    if (d.tokens != T || d.slots != S || static_cast<int64_t>(d.ids.size()) != T * S ||
        static_cast<int64_t>(d.weights.size()) != T * S)
      return fail_at(
          -1, -1, -1,
          fmt::format("routing decision has shape [{}, {}] (ids {}, weights {}), expected [{}, {}]", d.tokens,
                      d.slots, d.ids.size(), d.weights.size(), T, S));
    // Ids (range, count, distinctness, fused shared slots, group span) and weight signs are judged
    // once, by the routing oracle's structure check (oracles/routing_ref.cpp).
    const RoutingCheck routing = check_routing(c, p, d);
    if (routing.verdict.failed() && routing.verdict.invariant == "STRUCT") return routing.verdict;
    const double s = rc.routing.routed_scaling_factor;
    const double scale = p.rsf_in_topk ? s : 1.0;
    for (int64_t t = 0; t < T; ++t) {
      std::multiset<int32_t> routed;
      double sum = 0, abs_sum = 0, raw = 0, raw_err = 0;
      double distinct_sum = 0;  // each routed expert once: hash rows may repeat an expert
      // A non-finite logit makes the kernels' weights unspecified (as in oracles/routing_ref.cpp, which
      // does not compare such tokens): ids are still checked, weight values are not (found by
      // routing_fuzzer: softmax over a +inf logit gives NaN weights in every implementation).
      const bool logits_finite = token_weights_specified(c, t);
      for (int64_t j = 0; j < S; ++j) {
        const size_t i = static_cast<size_t>(t * S + j);
        const int32_t id = d.ids[i];
        const float w = d.weights[i];
        if (id >= E) continue;  // a fused shared slot
        if (routed.count(id) == 0) distinct_sum += w;
        routed.insert(id);
        sum += w;
        abs_sum += std::fabs(w);
        raw += selected_raw_score(c, t, id);
        raw_err += selected_raw_score_error(c, p, t, id);
      }
      if (rc.routing.mode == RoutingMode::kHash) {
        std::multiset<int32_t> row;
        const int64_t tid = c.token_ids[static_cast<size_t>(t)];
        for (int64_t j = 0; j < k; ++j) row.insert(c.hash_table[static_cast<size_t>(tid * k + j)]);
        if (row != routed)
          return fail_at(t, -1, -1, "hash-routed ids differ from the token's table row (duplicates count)");
      }
      if (!logits_finite) continue;
      // Hash routing always normalizes non-softmax scores (SPEC.md §2.5); top-k modes follow the flag.
      const bool normalized = rc.routing.mode == RoutingMode::kHash
                                  ? rc.routing.hash_score != ScoreFunc::kSoftmax
                                  : rc.routing.renormalize;
      // Subnormal weights (a tiny scale) err absolutely; the division by the kernel's score sum
      // (>= raw - raw_err + eps when normalized) or the largest score amplifies that error.
      const double lowest_sum = std::max(raw - raw_err, 0.0) + std::max(p.renorm_epsilon, 1e-20);
      const double allowance =
          routing_sum_allowance(p, k, abs_sum) + scale * kFp32Unit * abs_sum +
          routing_sum_underflow_allowance(p, k, std::max(1.0 / lowest_sum, raw + raw_err));
      if (normalized) {
        // w = s_i / (sum + eps): the sum may fall short of 1 by eps / (sum + eps).
        // A profile epsilon of 0 is implemented as 1e-20 by kernels that must stay finite on underflow
        // (kernels/cpu/cpu_config.cpp, FlashInfer mSumEpsilon, SPEC.md §2.1): allow either shortfall.
        const double eps = std::max(p.renorm_epsilon, 1e-20);
        const double eps_short = raw > 0 ? eps / (raw + eps) : 0.0;
        // The kernel's score sum S' = raw +- raw_err moves S'/(S'+eps) by up to
        // eps * raw_err / (raw - raw_err + eps)^2: nothing when raw >> eps, but when the selected
        // scores are far below eps (a bias-selected expert with a tiny sigmoid) the whole sum is
        // ~raw/eps and inherits the scores' relative error (found on the H200 host: sum 1.78e-10,
        // ratio 1 + 2^-52).
        const double lo_sum = std::max(raw - raw_err, 0.0) + eps;
        const double score_short = raw > 0 ? eps * raw_err / (lo_sum * lo_sum) : 0.0;
        // Scores within 2^26 of fp32's smallest normal have lost their relative precision (or are 0):
        // the kernel's sum then says nothing about normalization. sqrt(softplus) scores lose it where
        // the radicand does: below sqrt(2^-100) = 2^-50 (found by routing_fuzzer: hash routing with
        // very negative logits, sum 0.03 instead of 2.5 from flushed expf).
        const bool sqrt_score =
            rc.routing.mode == RoutingMode::kHash && rc.routing.hash_score == ScoreFunc::kSqrtSoftplus;
        if (raw < (sqrt_score ? 0x1p-50 : 0x1p-100)) continue;
        if (!(std::fabs(sum - scale) <= allowance + scale * (eps_short + score_short)))
          return fail_at(t, -1, -1, fmt::format("renormalized weights sum to {} (expected {})", sum, scale),
                         sum, scale, allowance + scale * eps_short);
      } else if (rc.routing.mode == RoutingMode::kSoftmax ||
                 (rc.routing.mode == RoutingMode::kHash && rc.routing.hash_score == ScoreFunc::kSoftmax)) {
        // Softmax probabilities of distinct experts sum to <= 1; a hash row may repeat an expert, whose
        // probability then counts once (found by routing_fuzzer: duplicates table, sum 2.8 > 2.5).
        if (!(distinct_sum <= scale + allowance))
          return fail_at(
              t, -1, -1,
              fmt::format("softmax weights without renormalization sum to {} > {}", distinct_sum, scale),
              distinct_sum, scale, allowance);
      }
    }
    Verdict v = Verdict::pass("STRUCT", "route");
    v.compared = T * S;
    return v;
  };
  return inv;
}

}  // namespace moefuzz::inv
