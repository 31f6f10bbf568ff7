#include "oracles/routing_ref.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/bf16.h"
#include "core/errors.h"
#include "oracles/routing_bounds.h"
#include "oracles/score_memo.h"
#include "oracles/topk_admissibility.h"

namespace moefuzz {
namespace {

// Exact (50-digit, rounded to double) scores of one token and the bounds a correct kernel meets.
struct TokenScores {
  std::vector<double> select;        // selection score per expert (sigmoid + bias, softmax p, ...)
  std::vector<double> select_bound;  // |kernel's selection score - select|
  std::vector<double> raw;           // the weight's source score per expert (unbiased)
  std::vector<double> raw_bound;
  std::vector<uint64_t> identity;  // equal iff the expert's inputs are bit-identical
  bool finite = true;              // false: a non-finite logit; the token is not compared
};

void validate_inputs(const Case& c) {
  const auto& r = c.recipe;
  const int64_t t = r.shape.tokens, e = r.shape.experts;
  auto fail = [](const std::string& m) { throw InputError("routing: " + m); };
  // Hash rows may repeat experts, so k may exceed E there (core/recipe.h validate(); found by
  // routing_fuzzer).
  if (t < 0 || e <= 0 || r.shape.top_k <= 0 || (r.shape.top_k > e && r.routing.mode != RoutingMode::kHash))
    fail("shape: need 0 < top_k <= experts");
  if (static_cast<int64_t>(c.logits.size()) != t * e) fail("logits size is not tokens * experts");
  if (r.routing.mode == RoutingMode::kSigmoidGrouped) {
    if (r.shape.n_group <= 0 || e % r.shape.n_group != 0) fail("n_group must divide experts");
    if (r.shape.topk_group <= 0 || r.shape.topk_group > r.shape.n_group)
      fail("topk_group not in [1, n_group]");
    if (r.shape.topk_group * (e / r.shape.n_group) < r.shape.top_k)
      fail("selected groups hold fewer than top_k experts");
    if (r.routing.correction_bias && static_cast<int64_t>(c.bias.size()) != e)
      fail("bias size is not experts");
  }
  if (r.routing.mode == RoutingMode::kHash) {
    const int64_t vocab = r.hash_vocab();
    if (static_cast<int64_t>(c.token_ids.size()) != t) fail("token_ids size is not tokens");
    if (static_cast<int64_t>(c.hash_table.size()) != vocab * r.shape.top_k)
      fail("hash_table size is not vocab * top_k");
    for (int32_t id : c.token_ids) {
      if (id < 0 || id >= vocab) fail(fmt::format("token id {} outside the vocabulary [0, {})", id, vocab));
    }
    for (int32_t ex : c.hash_table) {
      if (ex < 0 || ex >= e) fail(fmt::format("hash table entry {} outside [0, {})", ex, e));
    }
  }
  if (r.routing.routed_scaling_factor <= 0 || !std::isfinite(r.routing.routed_scaling_factor)) {
    fail("routed_scaling_factor must be finite and > 0");
  }
}

TokenScores token_scores(const Case& c, const Profile& p, int64_t t) {
  const auto& r = c.recipe;
  const size_t e_count = static_cast<size_t>(r.shape.experts);
  std::span<const float> row(c.logits.data() + static_cast<size_t>(t) * e_count, e_count);
  TokenScores s;
  s.select.resize(e_count);
  s.select_bound.resize(e_count);
  s.raw.resize(e_count);
  s.raw_bound.resize(e_count);
  s.identity.resize(e_count);
  for (size_t e = 0; e < e_count; ++e) {
    s.finite &= std::isfinite(row[e]);
    s.identity[e] = std::bit_cast<uint32_t>(row[e]);
  }
  if (!s.finite) return s;

  const RoutingMode mode = r.routing.mode;
  const bool softmax = mode == RoutingMode::kSoftmax ||
                       (mode == RoutingMode::kHash && r.routing.hash_score == ScoreFunc::kSoftmax);
  if (softmax) {
    const std::vector<double>& probs = exact_softmax(row);
    for (size_t e = 0; e < e_count; ++e) s.raw[e] = probs[e];
    softmax_error_bounds(p, row, s.raw, s.raw_bound);
  } else if (mode == RoutingMode::kHash && r.routing.hash_score == ScoreFunc::kSqrtSoftplus) {
    for (size_t e = 0; e < e_count; ++e) {
      s.raw[e] = exact_sqrt_softplus(row[e]);
      s.raw_bound[e] = sqrt_softplus_error_bound(p, row[e], s.raw[e]);
    }
  } else {
    for (size_t e = 0; e < e_count; ++e) {
      s.raw[e] = exact_sigmoid(row[e]);
      s.raw_bound[e] = sigmoid_error_bound(p, row[e], s.raw[e]);
    }
  }
  // The double conversion of the exact score adds <= 2^-53 relative; covered by 2^-52.
  for (size_t e = 0; e < e_count; ++e) s.raw_bound[e] += 0x1p-52 * s.raw[e];

  const bool biased = mode == RoutingMode::kSigmoidGrouped && r.routing.correction_bias;
  for (size_t e = 0; e < e_count; ++e) {
    if (!biased) {
      s.select[e] = s.raw[e];
      s.select_bound[e] = s.raw_bound[e];
      continue;
    }
    const float bias = p.bias_dtype == WeightDtype::kBf16 ? round_to_bf16(c.bias[e]) : c.bias[e];
    s.identity[e] = (s.identity[e] << 32) | std::bit_cast<uint32_t>(bias);
    s.select[e] = exact_sigmoid_plus(row[e], bias);
    // fl(s' + bias) rounds once: <= 2^-24 of the result (plus 2^-150 in the subnormal range).
    const double mag = std::fabs(s.select[e]) + s.raw_bound[e];
    s.select_bound[e] = s.raw_bound[e] + kFp32Unit * mag + 0x1p-149 + 0x1p-52 * std::fabs(s.select[e]);
  }
  return s;
}

TopkSpec topk_spec(const CaseRecipe& r) {
  TopkSpec spec;
  spec.experts = r.shape.experts;
  spec.k = r.shape.top_k;
  if (r.routing.mode == RoutingMode::kSigmoidGrouped) {
    spec.n_group = r.shape.n_group;
    spec.topk_group = r.shape.topk_group;
    spec.group_top2 = r.routing.correction_bias;
  }
  return spec;
}

bool normalizes(const CaseRecipe& r) {
  if (r.routing.mode == RoutingMode::kHash) return r.routing.hash_score != ScoreFunc::kSoftmax;
  return r.routing.renormalize;
}

double topk_scale(const CaseRecipe& r, const Profile& p) {
  return p.rsf_in_topk ? r.routing.routed_scaling_factor : 1.0;
}

int64_t fused_shared(const CaseRecipe& r) {
  return r.routing.shared_fusion == SharedFusion::kFused ? r.shape.shared_experts : 0;
}

// Expected weight of fused shared expert slots (SPEC.md §2.4): 1/rsf before the top-k rsf multiply
// (so 1 after it), or 1 outright for trtllm-gen.
WeightBound shared_weight(const CaseRecipe& r, const Profile& p) {
  const double rsf = r.routing.routed_scaling_factor;
  WeightBound wb;
  wb.expected = p.shared_fused_weight_inv_rsf ? (1.0 / rsf) * topk_scale(r, p) : 1.0;
  // 1.0f/rsf_fp32 and the multiply by rsf: the cast and two roundings, 3 units; 4 for the store.
  wb.bound = 4.0 * kFp32Unit * wb.expected;
  // 1/rsf is subnormal for rsf > 2^126: its rounding errs by up to kFp32FlushFloor absolutely, which
  // the multiply by rsf (top-k) scales by rsf; the store may round a subnormal once more.
  if (p.shared_fused_weight_inv_rsf) wb.bound += kFp32FlushFloor * (topk_scale(r, p) + 1.0);
  if (p.routing_weight_dtype == WeightDtype::kBf16) wb.bound += kBf16Unit * (wb.expected + wb.bound);
  return wb;
}

std::vector<int32_t> oracle_selection(const Case& c, const TokenScores& s, int64_t t) {
  const auto& r = c.recipe;
  if (r.routing.mode == RoutingMode::kHash) {
    const int32_t tok = c.token_ids[static_cast<size_t>(t)];
    const auto begin = c.hash_table.begin() + static_cast<ptrdiff_t>(tok) * r.shape.top_k;
    return std::vector<int32_t>(begin, begin + r.shape.top_k);
  }
  std::vector<double> ranked = s.select;
  for (double& v : ranked) {
    if (std::isnan(v)) v = -INFINITY;
  }
  return select_topk(ranked, topk_spec(r));
}

}  // namespace

RoutingDecision reference_routing(const Case& c, const Profile& p) {
  validate_inputs(c);
  const auto& r = c.recipe;
  RoutingDecision d;
  d.tokens = r.shape.tokens;
  d.slots = r.slots();
  const int64_t ns = fused_shared(r);
  for (int64_t t = 0; t < d.tokens; ++t) {
    const TokenScores s = token_scores(c, p, t);
    const std::vector<int32_t> ids = oracle_selection(c, s, t);
    std::vector<double> raw, raw_bound;
    for (int32_t id : ids) {
      raw.push_back(s.finite ? s.raw[static_cast<size_t>(id)] : NAN);
      raw_bound.push_back(s.finite ? s.raw_bound[static_cast<size_t>(id)] : 0.0);
    }
    auto store = [&](double w) {
      const float f = static_cast<float>(w);
      d.weights.push_back(p.routing_weight_dtype == WeightDtype::kBf16 ? round_to_bf16(f) : f);
    };
    for (size_t j = 0; j < ids.size(); ++j) {
      d.ids.push_back(ids[j]);
      store(routing_weight_bound(raw, raw_bound, j, normalizes(r), p.renorm_epsilon, topk_scale(r, p),
                                 p.routing_weight_dtype)
                .expected);
    }
    for (int64_t j = 0; j < ns; ++j) {
      d.ids.push_back(static_cast<int32_t>(r.shape.experts + j));
      store(shared_weight(r, p).expected);
    }
  }
  return d;
}

bool token_weights_specified(const Case& c, int64_t t) {
  const int64_t E = c.recipe.shape.experts;
  for (int64_t e = 0; e < E; ++e)
    if (!std::isfinite(c.logits[static_cast<size_t>(t * E + e)])) return false;
  return true;
}

RoutingCheck check_routing(const Case& c, const Profile& p, const RoutingDecision& kernel) {
  validate_inputs(c);
  const auto& r = c.recipe;
  const int64_t T = r.shape.tokens, E = r.shape.experts, k = r.shape.top_k, slots = r.slots();
  const int64_t ns = fused_shared(r);
  RoutingCheck rc;
  rc.expected_weights.assign(static_cast<size_t>(T * slots), NAN);
  rc.weight_bounds.assign(static_cast<size_t>(T * slots), 0.0);
  rc.near_tie.assign(static_cast<size_t>(T), 0);

  if (kernel.tokens != T || kernel.slots != slots || static_cast<int64_t>(kernel.ids.size()) != T * slots ||
      static_cast<int64_t>(kernel.weights.size()) != T * slots) {
    rc.verdict = Verdict::fail(
        "STRUCT", "route",
        fmt::format("routing output is {} tokens x {} slots ({} ids, {} weights); expected {} x {}",
                    kernel.tokens, kernel.slots, kernel.ids.size(), kernel.weights.size(), T, slots));
    return rc;
  }

  std::optional<Verdict> structure, selection;
  ElementError worst;
  std::vector<ElementError> over;
  double max_ratio = 0;
  int64_t compared = 0;
  const bool hash = r.routing.mode == RoutingMode::kHash;
  const TopkSpec spec = topk_spec(r);

  for (int64_t t = 0; t < T; ++t) {
    const size_t base = static_cast<size_t>(t * slots);
    auto struct_fail = [&](int64_t slot, const std::string& msg) {
      if (!structure) {
        ElementError at{
            .where = {.token = t, .slot = slot, .expert = slot >= 0 ? kernel.ids[base + slot] : -1}};
        structure = Verdict::fail("STRUCT", "route", fmt::format("token {}: {}", t, msg), at);
      }
    };
    // Structure: ids in range, k routed + each fused shared expert once, distinct (except hash),
    // selected experts within topk_group groups, weights finite and non-negative.
    std::vector<int32_t> routed;
    std::vector<int64_t> routed_slots, shared_seen(static_cast<size_t>(ns), 0);
    bool ok = true;
    const bool logits_finite = token_weights_specified(c, t);
    for (int64_t s = 0; s < slots; ++s) {
      const int32_t id = kernel.ids[base + s];
      const float w = kernel.weights[base + s];
      if (id < 0 || id >= E + ns) {
        struct_fail(s, fmt::format("slot {} holds expert id {} outside [0, {})", s, id, E + ns));
        ok = false;
      } else if (id >= E) {
        if (shared_seen[static_cast<size_t>(id - E)]++) {
          struct_fail(s, fmt::format("fused shared expert {} appears twice", id));
          ok = false;
        }
      } else {
        routed.push_back(id);
        routed_slots.push_back(s);
      }
      // Weights of a token with a non-finite logit are unspecified (see !sc.finite below; softmax over
      // +inf is NaN everywhere): only its ids are structure (found by routing_fuzzer).
      if (logits_finite && (!std::isfinite(w) || w < 0)) {
        struct_fail(s, fmt::format("slot {} weight {} is not a finite non-negative number", s, w));
        ok = false;
      }
    }
    if (ok && static_cast<int64_t>(routed.size()) != k) {
      struct_fail(-1, fmt::format("{} routed ids, expected top_k = {}", routed.size(), k));
      ok = false;
    }
    if (ok && !hash) {
      std::vector<int32_t> sorted = routed;
      std::sort(sorted.begin(), sorted.end());
      if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
        struct_fail(-1, "duplicate routed expert ids");
        ok = false;
      }
    }
    if (ok && spec.has_group_stage()) {
      std::vector<int64_t> groups;
      for (int32_t id : routed) groups.push_back(id / spec.group_size());
      std::sort(groups.begin(), groups.end());
      groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
      if (static_cast<int64_t>(groups.size()) > spec.topk_group) {
        struct_fail(-1, fmt::format("selected experts span {} groups, more than topk_group = {}",
                                    groups.size(), spec.topk_group));
        ok = false;
      }
    }
    if (!ok) continue;

    const TokenScores sc = token_scores(c, p, t);
    if (!sc.finite) continue;  // non-finite logits: the kernels' behaviour is unspecified

    // Selection.
    if (hash) {
      std::vector<int32_t> want = oracle_selection(c, sc, t), got = routed;
      std::sort(want.begin(), want.end());
      std::sort(got.begin(), got.end());
      if (want != got && !selection) {
        selection = Verdict::fail("ORACLE", "route",
                                  fmt::format("token {}: routed ids {} differ from hash_table row {}", t,
                                              fmt::join(got, ","), fmt::join(want, ",")),
                                  ElementError{.where = {.token = t}});
      }
    } else {
      std::vector<double> lo(sc.select.size()), hi(sc.select.size());
      for (size_t e = 0; e < lo.size(); ++e) {
        lo[e] = sc.select[e] - sc.select_bound[e];
        hi[e] = sc.select[e] + sc.select_bound[e];
      }
      const Admission adm = admit_topk_set(lo, hi, sc.identity, spec, p.tie_rule, routed);
      rc.near_tie[static_cast<size_t>(t)] = adm.ambiguous ? 1 : 0;
      if (!adm.admissible && !selection) {
        selection = Verdict::fail("ORACLE", "route",
                                  fmt::format("token {}: inadmissible expert set {{{}}}: {}", t,
                                              fmt::join(routed, ","), adm.reason),
                                  ElementError{.where = {.token = t}});
      }
    }

    // Weights, conditioned on the kernel's ids.
    std::vector<double> raw, raw_bound;
    for (int32_t id : routed) {
      raw.push_back(sc.raw[static_cast<size_t>(id)]);
      raw_bound.push_back(sc.raw_bound[static_cast<size_t>(id)]);
    }
    for (int64_t s = 0; s < slots; ++s) {
      const int32_t id = kernel.ids[base + s];
      WeightBound wb;
      if (id >= E) {
        wb = shared_weight(r, p);
      } else {
        const size_t j = static_cast<size_t>(std::find(routed_slots.begin(), routed_slots.end(), s) -
                                             routed_slots.begin());
        wb = routing_weight_bound(raw, raw_bound, j, normalizes(r), p.renorm_epsilon, topk_scale(r, p),
                                  p.routing_weight_dtype);
      }
      rc.expected_weights[base + s] = wb.expected;
      rc.weight_bounds[base + s] = wb.bound;
      ElementError err{.where = {.token = t, .slot = s, .expert = id},
                       .got = kernel.weights[base + s],
                       .expected = wb.expected,
                       .bound = wb.bound};
      const double ratio = err.ratio();
      if (compared++ == 0 || ratio > max_ratio) {
        max_ratio = ratio;
        worst = err;
      }
      if (ratio > 1) over.push_back(err);
    }
  }

  rc.ids_admitted = !structure && !selection;
  if (structure) {
    rc.verdict = *structure;
  } else if (selection) {
    rc.verdict = *selection;
  } else if (!over.empty()) {
    std::sort(over.begin(), over.end(),
              [](const ElementError& a, const ElementError& b) { return a.ratio() > b.ratio(); });
    rc.verdict = Verdict::fail(
        "ORACLE", "route",
        fmt::format("routing weight off by {:.3g} x its bound (token {}, slot {}, expert {}: got "
                    "{:.9g}, expected {:.9g})",
                    worst.ratio(), worst.where.token, worst.where.slot, worst.where.expert, worst.got,
                    worst.expected),
        worst);
    if (over.size() > 30) over.resize(30);
    rc.verdict.worst_elements = over;
  } else {
    rc.verdict = Verdict::pass("ORACLE", "route");
    rc.verdict.worst = worst;
  }
  rc.verdict.max_ratio = std::max(rc.verdict.max_ratio, max_ratio);
  rc.verdict.compared = compared;
  return rc;
}

}  // namespace moefuzz
