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
  // REPEAT class (run-to-run nondeterminism, like Z6, from an autotuner): the kernel profiles a shape
  // on its first two calls and uses the tuned tactic from the third call on. Both tactics are correct,
  // so every single call passes the oracle; the same input just stops giving the same bits.
  out.push_back(mutant_entry("mutant/autotune-switch",
                             "REPEAT: the third call of a shape switches to the tuned tactic (other bits)",
                             {"REPEAT"}, [](cpu::CpuConfig& c) { c.dev.autotune_switch = true; }));
  // BATCH class (batch variance): the kernel variant chosen from the number of tokens, as MoE runners
  // pick tiles and fusions by M (4 or more tokens: tactic 1 with GEMM2's output kept in fp32 into the
  // combine), while the kernel claims batch invariance. Each variant is within the contract's bounds,
  // but a token's bits depend on how many other tokens share its batch.
  out.push_back(mutant_entry("mutant/batch-size-tactic",
                             "BATCH: tactic chosen by the token count (4 or more: tactic 1) under a "
                             "batch-invariance claim",
                             {"BATCH"}, [](cpu::CpuConfig& c) {
                               if (c.tokens < 4) return;
                               c.tactic = 1;
                               c.bf16_after_gemm2 = false;  // large batches: GEMM2 fused into the combine
                             }));
  // ORACLE class (BUGZOO Z13's bf16-where-fp32-is-meant, large enough for one call): the default
  // tactic keeps its GEMM accumulator in bf16; the non-default tactic is correct (TACTIC passes) and
  // every metamorphic relation holds (the error is the same on both sides), so only the comparison
  // with the oracle sees it.
  out.push_back(mutant_entry("mutant/bf16-accumulator-default-tactic",
                             "ORACLE: default tactic accumulates its GEMMs in bf16", {"ORACLE"},
                             [](cpu::CpuConfig& c) { c.dev.bf16_accumulator_default = true; }));
}

}  // namespace moefuzz::mutants
