#pragma once
// OVF's probes: where each index product of core/index_products.h crosses 2^31 and 2^32.
//
// Window probes (kernels that honour RunOptions::index_window): the case itself, moved in the
// logical index space so that one product's crossing falls in the middle of the case's units (the
// expert, expanded row or token just below, at and above the limit). Nothing large is allocated.
// Materialized probes (the others, on a device with room): a case whose expert arena really crosses
// 2^31 (~4 GiB).
//
// Example:
//   for (const auto& p : moefuzz::ovf_window_probes(c.recipe, routed_ids)) run(c, {.index_window =
//   p.window}); for (const auto& p : moefuzz::ovf_probes(base)) run(materialize(p.recipe, p.max_bytes));
#include <cstdint>
#include <string>
#include <vector>

#include "core/index_products.h"
#include "core/recipe.h"

namespace moefuzz {

struct OvfProbe {
  std::string name;   // "expert x (2I x H/2) bytes crosses 2^31 at expert 256"
  std::string stage;  // the stage whose index product is probed
  CaseRecipe recipe;
  int64_t max_bytes = 0;  // the case's own size cap (it is large by design)
};

struct OvfWindowProbe {
  // "gemm1-out (x 64) crosses 2^31 at unit 5 of 8 (token_base 4194301); expert-w13 (x 2048) ..."
  std::string name;
  std::vector<IndexProduct> products;  // the products whose crossing this window places in the case
  int64_t limit = 0;                   // 2^31 (signed 32-bit) or 2^32 (unsigned)
  IndexWindow window;
};

// Every product crosses each limit (2^31, 2^32) in one of these windows, for the recipe's shape. A
// token-indexed product and an expert-indexed one share a window (the two bases are independent), so
// there are 6 runs per limit, not 9. `routed_experts` are the expert ids the case's routing uses (the
// baseline's decisions): an expert product's crossing is put at the highest of them, so that a used
// expert sits past the limit and the one below it just below.
std::vector<OvfWindowProbe> ovf_window_probes(const CaseRecipe& r,
                                              const std::vector<int32_t>& routed_experts);

// Probes of the expert-stride products (w13, w2, and all three weights in one arena), with the token
// routed to the experts just below, at and above each 2^31 crossing. `base` gives the profile.
std::vector<OvfProbe> ovf_probes(const CaseRecipe& base);

}  // namespace moefuzz
