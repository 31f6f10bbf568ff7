// Invariants that relabel or reshape the case without changing its meaning:
// PERM  relabeling experts (weights, scales, logit columns, bias, hash ids) leaves the output unchanged
// BATCH a token's output does not depend on the other tokens of the batch or on its position
// PAD   zero-padding H and I to multiples of 128 leaves the output unchanged (padded columns are 0)
// GSCALE multiplying a weight tensor's block scales by 2^k and dividing its global scale by 2^k
//        leaves the output unchanged (per half: gate and up separately; per expert)
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "properties/case_transforms.h"
#include "properties/invariants/invariants.h"
#include "properties/invariants/support.h"

namespace moefuzz::inv {
namespace {

// Compare the baseline (rows_a of the full case) with a transformed run (rows_b of its case), on the
// first `cols` columns.
Verdict compare_runs(CheckContext& ctx, const std::string& code, const Case& cb, const LayerResult& rb,
                     const std::vector<int64_t>& rows_a, const std::vector<int64_t>& rows_b, int64_t cols) {
  // A run that changed nothing needs no bound, and its case no evaluation (support.h identical_run).
  if (auto same = identical_run(code, ctx.baseline(), rb, rows_a, rows_b, cols)) return *same;
  const Side a = restrict(baseline_side(ctx), rows_a, cols);
  const Side b = restrict(side_of(ctx, cb, rb), rows_b, cols);
  return metamorphic_compare(code, "output", b, a);
}

}  // namespace

Invariant make_perm_invariant() {
  Invariant inv;
  inv.code = "PERM";
  inv.description =
      "relabeling experts with their weights, scales, logits and bias leaves the output unchanged";
  inv.applies = [](const Kernel&, const CaseRecipe& r) {
    return r.shape.experts > 1 ? std::string() : std::string("one expert: nothing to relabel");
  };
  inv.check = [](CheckContext& ctx) -> Verdict {
    const Case& c = ctx.base_case();
    const auto perm = group_preserving_permutation(c, c.recipe.seed ^ 0x5045524Du);
    const Case p = permute_experts(c, perm);
    const LayerResult rp = ctx.run_for_comparison(p);
    const LayerResult& r = ctx.baseline();
    const int64_t E = c.recipe.shape.experts;
    // Tokens at exact ties may legitimately pick other experts after relabeling (lower index wins):
    // compare only tokens whose selections correspond; the others are ORACLE's to admit.
    std::vector<int64_t> rows;
    for (int64_t t = 0; t < c.recipe.shape.tokens; ++t) {
      std::multiset<int32_t> mapped;
      for (int32_t id : token_ids_of(r.routing, t))
        mapped.insert(id < E ? static_cast<int32_t>(perm[static_cast<size_t>(id)]) : id);
      if (mapped == token_ids_of(rp.routing, t)) rows.push_back(t);
    }
    if (rows.empty())
      return Verdict::skip("PERM", "no token kept a corresponding selection (ties everywhere)");
    return compare_runs(ctx, "PERM", p, rp, rows, rows, c.recipe.shape.hidden);
  };
  return inv;
}

Invariant make_batch_invariant() {
  Invariant inv;
  inv.code = "BATCH";
  inv.description = "a token's output does not depend on the other tokens in the batch or its position";
  inv.applies = [](const Kernel&, const CaseRecipe& r) {
    return r.shape.tokens > 1 ? std::string() : std::string("one token: no batch to vary");
  };
  inv.check = [](CheckContext& ctx) -> Verdict {
    const Case& c = ctx.base_case();
    const int64_t T = c.recipe.shape.tokens, H = c.recipe.shape.hidden;
    // Reversed order (every position changes) and the odd tokens alone (the batch changes).
    std::vector<int64_t> reversed(static_cast<size_t>(T)), odd;
    for (int64_t t = 0; t < T; ++t) reversed[static_cast<size_t>(t)] = T - 1 - t;
    for (int64_t t = 1; t < T; t += 2) odd.push_back(t);
    int64_t compared = 0;
    std::optional<Verdict> vacuous;
    for (const auto* rows : {&reversed, &odd}) {
      const Case sub = select_tokens(c, *rows);
      const LayerResult rs = ctx.run_for_comparison(sub);
      std::vector<int64_t> own(rows->size());
      for (size_t i = 0; i < own.size(); ++i) own[i] = static_cast<int64_t>(i);
      Verdict v;
      if (ctx.kernel().claims().batch_invariant) {
        std::vector<float> a, b;
        for (size_t i = 0; i < rows->size(); ++i) {
          a.insert(a.end(), ctx.baseline().output.begin() + (*rows)[i] * H,
                   ctx.baseline().output.begin() + ((*rows)[i] + 1) * H);
          b.insert(b.end(), rs.output.begin() + static_cast<int64_t>(i) * H,
                   rs.output.begin() + (static_cast<int64_t>(i) + 1) * H);
        }
        v = compare_bitwise("BATCH", "output", b, a, static_cast<int64_t>(rows->size()), H);
      } else {
        v = compare_runs(ctx, "BATCH", sub, rs, *rows, own, H);
      }
      if (v.failed()) {
        v.message =
            fmt::format("{}: {}", rows == &odd ? "odd tokens alone" : "tokens in reverse order", v.message);
        return v;
      }
      if (v.outcome == Outcome::kVacuous) vacuous = v;
      compared += v.compared;
    }
    if (vacuous) return *vacuous;  // a part whose bound accepts a trivial corruption proves nothing
    Verdict v = Verdict::pass("BATCH", "output");
    v.compared = compared;
    return v;
  };
  return inv;
}

Invariant make_pad_invariant() {
  Invariant inv;
  inv.code = "PAD";
  inv.description = "zero-padding H or I to 16/64/128 leaves the output unchanged";
  inv.applies = [](const Kernel& k, const CaseRecipe& r) {
    CaseRecipe p = r;
    p.shape.hidden = (r.shape.hidden / 128 + 1) * 128;
    p.shape.inter = (r.shape.inter / 128 + 1) * 128;
    const std::string why = k.supports(p);
    return why.empty() ? std::string() : "padded shape unsupported: " + why;
  };
  inv.check = [](CheckContext& ctx) -> Verdict {
    const Case& c = ctx.base_case();
    const int64_t T = c.recipe.shape.tokens, H = c.recipe.shape.hidden, I = c.recipe.shape.inter;
    // Next multiple of 128 strictly above: the padded rows/cols always form new 128-row tiles of scales.
    const int64_t H2 = (H / 128 + 1) * 128, I2 = (I / 128 + 1) * 128;
    const Case p = pad_dims(c, H2, I2);
    const LayerResult rp = ctx.run_for_comparison(p);
    std::vector<int64_t> rows(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) rows[static_cast<size_t>(t)] = t;
    Verdict v = compare_runs(ctx, "PAD", p, rp, rows, rows, H);
    if (v.failed()) return v;
    for (int64_t t = 0; t < T; ++t) {
      // A token whose unpadded output is already non-finite carries an Inf/NaN intermediate (e.g. an
      // overflowed GEMM1): Inf * 0 = NaN reaches the padded columns too, as IEEE requires; the oracle
      // leaves such rows to FINITE (found by zero-fp: tiny weight scales, far act scale, NaN row).
      bool row_finite = true;
      for (int64_t h = 0; h < H; ++h)
        row_finite = row_finite && std::isfinite(rp.output[static_cast<size_t>(t * H2 + h)]);
      if (!row_finite) continue;
      for (int64_t h = H; h < H2; ++h)
        if (rp.output[static_cast<size_t>(t * H2 + h)] != 0.0f)
          return Verdict::fail(
              "PAD", "output", "a zero-padded output column is not zero",
              ElementError{{.token = t, .element = h}, rp.output[static_cast<size_t>(t * H2 + h)], 0.0, 0.0});
    }
    return v;
  };
  return inv;
}

Invariant make_gscale_invariant() {
  Invariant inv;
  inv.code = "GSCALE";
  inv.description =
      "block scales x 2^k with global scale / 2^k leaves the output unchanged (per half, per expert)";
  inv.applies = [](const Kernel&, const CaseRecipe& r) {
    return r.quant.weights == WeightFormat::kNvfp4  ? std::string()
           : r.quant.weights == WeightFormat::kBf16 ? std::string("bf16 weights: no block or global scales")
           : r.quant.weights == WeightFormat::kMxfp4
               ? std::string("mxfp4 weights: no global scale (E8M0 block scales only)")
               : std::string("fp8_block weights: no global scale (fp32 128x128 block scales only)");
  };
  inv.check = [](CheckContext& ctx) -> Verdict {
    const Case& c = ctx.base_case();
    const int64_t T = c.recipe.shape.tokens, H = c.recipe.shape.hidden;
    // The experts the kernel used for token 0 (so the change is visible), each half separately.
    std::set<int32_t> used;
    const RoutingDecision& d = ctx.baseline().routing;
    for (int64_t j = 0; j < d.slots; ++j) used.insert(d.ids[static_cast<size_t>(j)]);
    std::vector<int64_t> rows(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) rows[static_cast<size_t>(t)] = t;
    int tried = 0, experts_tried = 0;
    int64_t compared = 0;
    std::optional<Verdict> vacuous;
    for (int32_t e : used) {
      if (e < 0 || e >= static_cast<int32_t>(c.experts.size())) continue;
      if (++experts_tried > 2) break;  // two experts x three matrices: enough to see a shared scale
      for (const char* which : {"up", "gate", "down"}) {
        for (int k : {3, -2}) {
          bool ok = false;
          const Case g = rescale_weight_global(c, e, which, k, &ok);
          if (!ok) continue;
          ++tried;
          const LayerResult rg = ctx.run_for_comparison(g);
          Verdict v = compare_runs(ctx, "GSCALE", g, rg, rows, rows, H);
          if (v.failed()) {
            v.worst.where.expert = e;
            v.message = fmt::format("expert {} {} scales x2^{}: {}", e, which, k, v.message);
            return v;
          }
          if (v.outcome == Outcome::kVacuous) vacuous = v;
          compared += v.compared;
          break;
        }
      }
    }
    if (tried == 0) return Verdict::skip("GSCALE", "no weight's scales could be shifted exactly");
    if (vacuous) return *vacuous;  // a part whose bound accepts a trivial corruption proves nothing
    Verdict v = Verdict::pass("GSCALE", "output");
    v.compared = compared;
    return v;
  };
  return inv;
}

}  // namespace moefuzz::inv
