#pragma once
// Stage "activation" (SPEC.md §3.7 step 3): SwiGLU (with the recipe's limit/alpha/beta) of the
// gemm1 intervals of an expert's rows, with the profile's rounding point after it. Expected value
// and bound: swiglu_kernel_interval (oracles/bounds.h), the image of the gate/up intervals under
// the kernel's fp32 evaluation. Nothing is admitted here.
//
// Example:
//   moefuzz::stages::ActivationRows h = moefuzz::stages::activation(profile, c.recipe.swiglu, rows, g, I,
//   &stage);
#include "core/profile.h"
#include "core/recipe.h"
#include "oracles/stages/gemm1.h"
#include "oracles/stages/quantize.h"
#include "oracles/stages/stage_types.h"

namespace moefuzz::stages {

// `stage` ([kernel rows, I]) receives the expectation of the kernel's rows (nullptr: not kept).
ActivationRows activation(const Profile& p, const Swiglu& sw, const ExpertRows& rows, const Gemm1Rows& g,
                          int64_t inter, StageExpectation* stage);

}  // namespace moefuzz::stages
