#pragma once
// The OVF tier: recipes whose index products cross 2^31 (derived per product, not typed in).
//
// Example:
//   for (const auto& p : moefuzz::ovf_probes(base)) run(p.recipe);   // "expert stride at 2^31", ...
#include <cstdint>
#include <string>
#include <vector>

#include "core/recipe.h"

namespace moefuzz {

struct OvfProbe {
  std::string name;   // "expert x (2I x H/2) bytes crosses 2^31 at expert 256"
  std::string stage;  // the stage whose index product is probed
  CaseRecipe recipe;
  int64_t max_bytes = 0;  // the case's own size cap (it is large by design)
};

// Probes of the expert-stride products (w13, w2, and all three weights in one arena), with the token
// routed to the experts just below, at and above each 2^31 crossing. `base` gives the profile.
std::vector<OvfProbe> ovf_probes(const CaseRecipe& base);

}  // namespace moefuzz
