#include "properties/ovf_cases.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace moefuzz {

std::vector<OvfProbe> ovf_probes(const CaseRecipe& base) {
  // Powers of two so that the w13 byte stride (2I x H/2 = I*H) divides 2^31 exactly.
  constexpr int64_t kH = 4096, kI = 2048;
  constexpr int64_t kTwo31 = int64_t{1} << 31;
  const int64_t w13 = kI * kH;     // packed bytes of gate + up of one expert
  const int64_t w2 = kH * kI / 2;  // packed bytes of down
  const int64_t all3 = w13 + w2;   // one arena holding every matrix of an expert
  // Bytes one expert adds to the case: packed w13 + w2 and their E4M3 block scales (one per 16).
  const int64_t per_expert = w13 + w2 + (2 * kI * kH + kH * kI) / 16;
  // The probe's memory budget: a case of at most ~4 GiB keeps the probe under ~1 minute and ~5 GB on
  // a CI machine. The w13 arena (8 MiB/expert, crossing at expert 256) and the all-in-one arena
  // (12 MiB/expert, expert 171) fit; the w2 arena alone (4 MiB/expert) crosses only at expert 512
  // (~7 GB), so that product is left to a GPU-sized run and named in docs/mutants.md.
  constexpr int64_t kBudgetBytes = int64_t{4} << 30;
  std::set<int64_t> targets;
  for (int64_t stride : {w13, w2, all3}) {
    const int64_t at = (kTwo31 + stride - 1) / stride;  // first expert whose offset is >= 2^31
    if ((at + 2) * per_expert > kBudgetBytes) continue;
    for (int64_t e : {at - 1, at, at + 1}) targets.insert(e);
  }
  const int64_t experts = *targets.rbegin() + 1;
  CaseRecipe r = base;
  r.shape = Shape{.tokens = 1,
                  .hidden = kH,
                  .inter = kI,
                  .experts = experts,
                  .top_k = static_cast<int64_t>(targets.size()),
                  .n_group = 1,
                  .topk_group = 1,
                  .shared_experts = 0};
  r.routing.mode = RoutingMode::kHash;
  r.routing.hash_score = ScoreFunc::kSqrtSoftplus;
  r.routing.shared_fusion = SharedFusion::kSeparate;
  r.routing.vocab = 1;
  r.edits.clear();
  // Default value profiles and scale: the probe asks about indices, and a base case drawn with
  // hostile values (tiny weights or rsf) would leave an output that underflows, a vacuous verdict.
  r.values = ValueProfile{};
  r.routing.routed_scaling_factor = Routing{}.routed_scaling_factor;
  r.files = {};  // a synthetic shape far larger than any file's slice: the probe's tensors are drawn
  r.edits.push_back(Edit{"token_ids", {0}, 0});
  int64_t slot = 0;
  for (int64_t e : targets) r.edits.push_back(Edit{"hash_table", {0, slot++}, static_cast<double>(e)});
  OvfProbe p;
  p.name = fmt::format("expert x stride crosses 2^31 (H={}, I={}, experts {}..{})", kH, kI, *targets.begin(),
                       experts - 1);
  p.stage = "gemm1";
  p.recipe = r;
  p.max_bytes = kBudgetBytes + (kBudgetBytes >> 2);  // the case plus its small tensors
  return {p};
}

}  // namespace moefuzz

namespace moefuzz {

std::vector<OvfWindowProbe> ovf_window_probes(const CaseRecipe& r,
                                              const std::vector<int32_t>& routed_experts) {
  const int64_t T = r.shape.tokens, slots = r.slots(), total = r.total_experts();
  // The highest expert this case computes with: routed ids, and separate shared experts (every token).
  int64_t top_expert = 0;
  for (int32_t e : routed_experts)
    if (e >= 0 && e < total) top_expert = std::max<int64_t>(top_expert, e);
  if (r.shape.shared_experts > 0 && r.routing.shared_fusion == SharedFusion::kSeparate)
    top_expert = total - 1;
  std::vector<OvfWindowProbe> out;
  for (int64_t limit : {int64_t{1} << 31, int64_t{1} << 32}) {
    std::vector<OvfWindowProbe> tokens, experts;
    for (int i = 0; i < kIndexProducts; ++i) {
      const auto p = static_cast<IndexProduct>(i);
      const int64_t stride = index_stride(p, r);
      if (stride <= 0) continue;
      // The first unit that starts at or past the limit (exactly at it when the stride divides it);
      // the unit before holds the offsets just below (and, when it straddles, at) the limit.
      const int64_t crossing = (limit + stride - 1) / stride;
      OvfWindowProbe probe;
      probe.products = {p};
      probe.limit = limit;
      int64_t local = 0, units = 0;
      if (is_expert_product(p)) {
        units = total;
        probe.window.expert_base = std::max<int64_t>(0, crossing - top_expert);
        local = crossing - probe.window.expert_base;
      } else if (p == IndexProduct::kCombineOut) {
        units = T;
        probe.window.token_base = std::max<int64_t>(0, crossing - T / 2);
        local = crossing - probe.window.token_base;
      } else {  // expanded-row products: the window starts on a token boundary
        units = T * slots;
        probe.window.token_base = std::max<int64_t>(0, crossing / slots - T / 2);
        local = crossing - probe.window.token_base * slots;
      }
      probe.name = fmt::format("{} (x {}) crosses 2^{} at unit {} of {} ({} {})", index_product_name(p),
                               stride, limit == (int64_t{1} << 31) ? 31 : 32, local, units,
                               is_expert_product(p) ? "expert_base" : "token_base",
                               is_expert_product(p) ? probe.window.expert_base : probe.window.token_base);
      (is_expert_product(p) ? experts : tokens).push_back(std::move(probe));
    }
    // Zip: each expert window rides along with a token window.
    for (size_t i = 0; i < std::max(tokens.size(), experts.size()); ++i) {
      OvfWindowProbe run = i < tokens.size() ? tokens[i] : experts[i];
      if (i < tokens.size() && i < experts.size()) {
        run.window.expert_base = experts[i].window.expert_base;
        run.products.push_back(experts[i].products.front());
        run.name += "; " + experts[i].name;
      }
      out.push_back(std::move(run));
    }
  }
  return out;
}

}  // namespace moefuzz
