#pragma once
// Upstream-style acceptance checks, applied to the same mutants as moefuzz for comparison
// (`moefuzz mutants --baselines`): what a typical kernel unit test would have caught.
//   allclose        torch.allclose(out, ref, atol=1e-2, rtol=1e-2) on 10 random-normal cases per
//                   shape of a vLLM-like grid (tame inputs: normal logits, small positive bias)
//   check_accuracy  TensorRT-LLM's check_accuracy(out, ref, atol=0.1, rtol=0.85, percent=0.925)
// The reference is the oracle conditioned on the correct `cpu` kernel's decisions.
//
// Example:
//   moefuzz::BaselineResult b = moefuzz::run_baselines(*mutant);
//   if (b.allclose_caught) ...
#include <string>

#include "kernels/kernel.h"

namespace moefuzz {

struct BaselineResult {
  bool allclose_caught = false;
  bool check_accuracy_caught = false;
  int cases = 0;
};

BaselineResult run_baselines(const Kernel& kernel, uint64_t seed);

}  // namespace moefuzz
