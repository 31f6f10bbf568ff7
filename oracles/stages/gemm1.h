#pragma once
// Stage "gemm1" (SPEC.md §3.7 step 2): the FC1 GEMM of an expert's rows, semantic [gate | up] (the
// profile's w13 order is a layout, already undone by the weights' decoding), with the profile's
// rounding point after it. Expected value: alpha * the exact integer dot of the FC1 input's operands
// (the kernel's admitted codes, or the envelope's center) with the packed weights; bound: the GEMM
// bound of oracles/stages/gemm_bounds.h, widened by the flips of unexposed codes. No decision of the
// kernel is admitted here (its values are compared at the end).
//
// Example:
//   moefuzz::stages::Gemm1Rows g = moefuzz::stages::gemm1(c, profile, rows, c.experts[e], fc1, sda1, &stage);
//   moefuzz::Interval gate = g.gate[j * I + o];
#include <vector>

#include "core/case.h"
#include "core/profile.h"
#include "oracles/stages/quantize.h"
#include "oracles/stages/stage_types.h"

namespace moefuzz::stages {

struct Gemm1Rows {
  std::vector<Interval> gate, up;  // n * I, after the profile's rounding point
};

// sda1: the FC1 activation dequantization scale (1/S_q for W4A4, 1 for W4A16). `stage` ([kernel rows,
// 2I]) receives the expectation of the kernel's rows (nullptr: not kept).
Gemm1Rows gemm1(const Case& c, const Profile& p, const ExpertRows& rows, const ExpertWeights& w,
                const Fc1Input& in, double sda1, StageExpectation* stage);

}  // namespace moefuzz::stages
