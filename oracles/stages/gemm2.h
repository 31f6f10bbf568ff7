#pragma once
// Stage "gemm2" (SPEC.md §3.7 step 5): the FC2 GEMM of an expert's rows from their FC2 input
// (quantize2's admitted codes or covered envelope; W4A16: fp32 centers plus radii), with the
// profile's rounding point after it. Expected value and bound as for gemm1 (oracles/stages/
// gemm_bounds.h). Its intervals are the combine stage's input.
//
// Example:
//   moefuzz::stages::gemm2(c, profile, rows, c.experts[e], fc2, h, sda2, &stage, y);
#include <vector>

#include "core/case.h"
#include "core/profile.h"
#include "oracles/stages/quantize.h"
#include "oracles/stages/stage_types.h"

namespace moefuzz::stages {

// GEMM2 intervals of every expanded row [R, H], indexed by the rows' position in ExpertRows::rows:
// the rows computed here in lo/hi ([R, H], allocated once a row is computed), a row borrowed from
// elsewhere (the row memo's storage, which outlives the evaluation) through borrowed_lo/hi[row].
struct ExpertOutputs {
  int64_t cols = 0;
  std::vector<double> lo, hi;
  std::vector<const double*> borrowed_lo, borrowed_hi;  // [R] (empty: none borrowed); nullptr: own row
  const double* lo_row(int64_t row) const {
    const double* b = borrowed_lo.empty() ? nullptr : borrowed_lo[static_cast<size_t>(row)];
    return b != nullptr ? b : lo.data() + row * cols;
  }
  const double* hi_row(int64_t row) const {
    const double* b = borrowed_hi.empty() ? nullptr : borrowed_hi[static_cast<size_t>(row)];
    return b != nullptr ? b : hi.data() + row * cols;
  }
  Interval at(int64_t row, int64_t col) const { return {lo_row(row)[col], hi_row(row)[col]}; }
};

// sda2: the FC2 activation dequantization scale (1/S_q for W4A4, 1 for W4A16); h: the activation
// stage's rows (their NaN flags). Writes this expert's rows of `y`; `stage` ([kernel rows, H])
// receives the expectation of the kernel's rows (nullptr: not kept).
void gemm2(const Case& c, const Profile& p, const ExpertRows& rows, const ExpertWeights& w,
           const Fc2Input& in, const ActivationRows& h, double sda2, StageExpectation* stage,
           ExpertOutputs& y);

}  // namespace moefuzz::stages
