#pragma once
// The deviant computations of mutants that need more than a one-line hook at their use site
// (CpuDeviation in cpu_stages.h says which mutant sets which flag). The correct pipeline never calls
// these with the flag off; they exist so a mutant's bug is a faithful copy of the real one.
//
// (The Z7 / OVF index products live in index_math.h.)
//
// Example:
//   if (const float d = moefuzz::cpu::dynamic_batch_act_scale(c.hidden); d > 0) a_d = 1.0f / d;
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/bf16.h"

namespace moefuzz::cpu {

// BATCH mutant: a per-batch dynamic FC1 input scale (S_q = 448 * 6 / amax over the whole batch, the
// usual NVFP4 global scale) where the recipe specifies a static one. Quantization and dequantization
// use it consistently, so a single call stays close to the math, but a token's codes now depend on
// the other tokens of the batch. Returns 0 when the batch is all zero (the caller keeps the static scale).
inline float dynamic_batch_act_scale(const std::vector<uint16_t>& hidden) {
  float amax = 0;
  for (uint16_t b : hidden) {
    const float v = std::fabs(bf16_to_float(b));
    if (std::isfinite(v)) amax = std::max(amax, v);
  }
  return amax > 0 ? 448.0f * 6.0f / amax : 0.0f;
}

}  // namespace moefuzz::cpu
