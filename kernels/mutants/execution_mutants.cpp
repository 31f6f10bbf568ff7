// Execution mutants: bugs that live in how a kernel runs rather than in one formula - a non-default
// tactic, a dependence on the rest of the batch, a semantic parameter silently dropped.
#include <cmath>

#include "kernels/mutants/mutant_entry.h"

namespace moefuzz::mutants {

void add_execution_mutants(std::vector<KernelEntry>& out) {
  // TACTIC class (BUGZOO "bugs live in non-default tactics"): tactic 1 (64-K tiles of 4 blocks) reads
  // the tile's first block scale for all four blocks; tactic 0, the default, is correct.
  out.push_back(mutant_entry("mutant/tactic1-block-scale",
                             "TACTIC: non-default tactic reuses the first block scale of each 64-K tile",
                             {"TACTIC"}, [](cpu::CpuConfig& c) { c.dev.tactic1_group_scale = true; }));
  // BATCH class: a per-batch dynamic FC1 activation scale (448*6 / batch amax) where the recipe gives
  // a static one; used consistently, so each call is close to the math, but a token's output now
  // depends on which other tokens share its batch.
  out.push_back(mutant_entry("mutant/dynamic-batch-act-scale",
                             "BATCH: FC1 input scale computed from the batch amax (static scale specified)",
                             {"BATCH", "ORACLE"}, [](cpu::CpuConfig& c) { c.dev.dynamic_act_scale = true; }));
  // PARAM class: the SwiGLU clamp (swiglu_limit, GPT-OSS style) silently dropped by the runner.
  out.push_back(mutant_entry("mutant/swiglu-limit-ignored",
                             "PARAM: swiglu_limit ignored (activation never clamped)", {"PARAM", "ORACLE"},
                             [](cpu::CpuConfig& c) { c.swiglu_limit = INFINITY; }));
}

}  // namespace moefuzz::mutants
