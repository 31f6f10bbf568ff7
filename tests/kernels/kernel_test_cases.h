#pragma once
// Shared helpers of the tests/kernels suites: small recipes per routing mode and a run helper that
// hands the kernel a poisoned [T, H] output like the framework does.
#include <cstring>
#include <vector>

#include "core/case.h"
#include "core/recipe.h"
#include "kernels/kernel.h"

namespace moefuzz::testing {

// A small case of the given routing mode; shapes vary with the seed so many seeds cover many shapes.
inline CaseRecipe small_recipe(uint64_t seed, RoutingMode mode) {
  CaseRecipe r;
  r.seed = seed;
  r.profile = "sglang-cutlass-fp4";
  r.routing.mode = mode;
  r.shape.tokens = 1 + static_cast<int64_t>(seed % 7);
  r.shape.hidden = 16 * (2 + static_cast<int64_t>(seed % 5));
  r.shape.inter = 16 * (1 + static_cast<int64_t>((seed / 3) % 4));
  r.shape.experts = 8;
  r.shape.top_k = 1 + static_cast<int64_t>(seed % 4);
  if (mode == RoutingMode::kSigmoidGrouped) {
    r.shape.n_group = 4;
    r.shape.topk_group = 2;
    r.shape.top_k = 1 + static_cast<int64_t>(seed % 4);  // <= topk_group * experts per group = 4
  }
  r.routing.routed_scaling_factor = 2.5;
  return r;
}

inline LayerResult run_kernel(const Kernel& k, const Case& c, RunOptions opts = {}) {
  LayerResult out;
  float poison;
  std::memcpy(&poison, &opts.poison_bits, 4);
  out.output.assign(static_cast<size_t>(c.recipe.shape.tokens * c.recipe.shape.hidden), poison);
  k.run_layer(c, opts, out);
  return out;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace moefuzz::testing
