#pragma once
// Whole rows of a stage's intervals into its record, the form the GEMM and activation stages hand
// them over in: store() (stage_types.h) element by element costs a NaN branch and two scattered
// writes per element, and was the largest single cost of a conditioned evaluation whose dots ran on a
// device (perf: gemm2's per-element record 12%, the activation's loop 9%, docs/perf.md).
//
// Example:
//   std::vector<moefuzz::Interval> v = ...;                                  // one output row
//   moefuzz::stages::store_row(g2, er.slot, /*col=*/0, v.data(), H);         // == store() per element
//   moefuzz::stages::finish_activation_row(f, x.data(), up.data(), I, lo, hi, center);  // the tail
#include <cstdint>

#include "oracles/stages/stage_types.h"

namespace moefuzz::stages {

// store(st, row, col + i, v[i]) for i in [0, n), bit for bit: NaN intervals give expected NaN and bound
// +Inf, the others their center() and radius(). st null: nothing. `simd` false: the element loop (the
// reference the AVX2 path, taken only where cpu_has_avx2(), is held to).
void store_row(StageExpectation* st, int64_t row, int64_t col, const Interval* v, int64_t n,
               bool simd = true);

// What the activation stage does with one row after SwiGLU (oracles/stages/activation.cpp): widen for
// a kernel that may round silu to bf16 (`silu_may_round_bf16`, by |beta| and the up interval), round to
// bf16 (`bf16`), each only where the interval is not NaN.
struct ActivationFinish {
  bool silu_may_round_bf16 = false;
  bool bf16 = false;
  double abs_beta = 0;
};
// Row x[0, n) (SwiGLU's intervals, `up` the row's up intervals) finished in place; lo, hi and center
// receive each element's ends and center(). Returns true when an element is NaN. Bit for bit the
// element loop (`simd` false), which the AVX2 path is held to.
bool finish_activation_row(const ActivationFinish& f, Interval* x, const Interval* up, int64_t n, double* lo,
                           double* hi, double* center, bool simd = true);

}  // namespace moefuzz::stages
