#include "properties/ovf_cases.h"

#include <fmt/format.h>

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
