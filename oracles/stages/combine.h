#pragma once
// Stage "combine" (SPEC.md §3.7 step 6): each token's routed rows weighted by the kernel's routing
// weights and summed (x routed_scaling_factor where the profile puts it in the combine), then the
// separately added shared experts, with the profile's accumulation (CombineAccum) and output
// rounding. Expected value and bound: the interval sum of the gemm2 intervals times the weights, each
// product's own rounding, and gamma_n of the accumulation in any order. Produces stage "output"
// [T, H]. Nothing is admitted here (the routing weights were admitted by the route stage).
//
// Example:
//   moefuzz::StageExpectation out = moefuzz::stages::combine(c, profile, rows, y);
#include <span>

#include "core/case.h"
#include "core/profile.h"
#include "oracles/stages/gemm2.h"
#include "oracles/stages/stage_types.h"

namespace moefuzz::stages {

StageExpectation combine(const Case& c, const Profile& p, std::span<const ExpandedRow> rows,
                         const ExpertOutputs& y);

}  // namespace moefuzz::stages
