// Combine mutants (SPEC.md §3.6).
#include "kernels/mutants/mutant_entry.h"

namespace moefuzz::mutants {

void add_combine_mutants(std::vector<KernelEntry>& out) {
  // BUGZOO Z6 (SGLang #11183, a missing sync): simulated as a lost update on every odd-numbered run of
  // the same kernel object, so identical inputs give different outputs while the kernel claims determinism.
  out.push_back(mutant_entry("mutant/z6-racy-combine",
                             "BUGZOO Z6: racy combine loses one slot on odd-numbered runs", {"REPEAT"},
                             [](cpu::CpuConfig& c) { c.dev.racy_combine = true; }));
  // WEIGHT1 class (SGLang MUL_ROUTED_WEIGHT on the GEMM2 epilogue together with a weighted
  // sum-reduce): the router weight multiplies twice, so the output is quadratic in the weight.
  out.push_back(mutant_entry("mutant/weight-applied-twice",
                             "WEIGHT1: router weight applied in the GEMM2 epilogue and again in the combine",
                             {"WEIGHT1", "SCALE1", "ORACLE"},
                             [](cpu::CpuConfig& c) { c.dev.weight_applied_twice = true; }));
  // WEIGHT1 class in the branch Z4 lived in (SGLang #35160: renormalize=false handled apart): on the
  // softmax top-k's renormalize=false path the GEMM2 epilogue multiplies the top-k probability (before
  // the routed scale) and the sum-reduce the scaled weight again. Quadratic in the router weight, still
  // linear in routed_scaling_factor, so SCALE1 holds and only the weight's own linearity breaks.
  out.push_back(mutant_entry(
      "mutant/weight-twice-unnormalized",
      "WEIGHT1: renormalize=false path multiplies the probability in the GEMM2 epilogue and the combine",
      {"WEIGHT1", "ORACLE"}, [](cpu::CpuConfig& c) { c.dev.weight_twice_unnormalized = true; }));
  // BUGZOO Z13 (seed scenario: a bf16 conversion where the contract means something else): the
  // output's fp32 -> bf16 conversions written by hand as `(bits + 0x7FFF) >> 16`, which rounds exact
  // ties toward zero instead of to even. Ties are frequent (sums of bf16 products), every single
  // output stays admissible (the oracle cannot tell a tie's two roundings apart), but the error is
  // always toward zero: a shrinking bias that only accumulation over layers reveals (DRIFT).
  out.push_back(mutant_entry(
      "mutant/z13-bf16-truncated-combine",
      "BUGZOO Z13: output bf16 conversion rounds ties toward zero (biased; within single-call bounds)",
      {"DRIFT"}, [](cpu::CpuConfig& c) { c.dev.bf16_truncated_products = true; }));
}

}  // namespace moefuzz::mutants
