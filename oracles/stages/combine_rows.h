#pragma once
// The inner loop of the combine stage (oracles/stages/combine.h): one routed row's GEMM2 intervals
// times its routing weight, each product widened by its own fp32 rounding (and rounded to bf16 where
// the profile's combine does), added into the token's per-column accumulators. Every evaluation of a
// check runs the combine over all T x slots x H elements, the row memo reuses GEMM rows but not this
// stage, so it is most of what a reused evaluation costs (docs/perf.md); the AVX2 path does four
// columns at once with the same operations in the same order as the scalar one: the same bits
// (tests/oracles/combine_rows_test.cpp compares them on hostile values).
//
// Example:
//   moefuzz::stages::CombineAccumulators acc(H);
//   acc.reset();
//   for (int64_t r : token_rows)
//     moefuzz::stages::accumulate_weighted_row(weight[r], y.lo_row(r), y.hi_row(r), bf16_products, acc);
//   moefuzz::stages::finish_routed_columns(acc, finish, out, t);   // out: the "output" stage [T, H]
#include <cstdint>
#include <vector>

#include "oracles/stages/stage_types.h"

namespace moefuzz::stages {

// bf16's largest finite value (0x7F7F): a value the combine rounds to bf16 overflows past it (fp32
// intermediates only past FLT_MAX, a little higher).
inline constexpr double kBf16Max = 0x1.fep127;

// Per output column of one token: the interval sum of the weighted products (lo, hi), the sum of
// their magnitudes, the largest magnitude any one product may take, and whether a NaN reached it.
struct CombineAccumulators {
  explicit CombineAccumulators(int64_t cols);
  void reset();  // every column back to 0 / not NaN
  int64_t cols() const { return static_cast<int64_t>(lo.size()); }
  std::vector<double> lo, hi, mag, peak;
  std::vector<char> nan;
};

// Adds w x [ylo[o], yhi[o]] for every column o (a NaN weight or interval end marks the column NaN and
// adds nothing). bf16_products: each product is rounded to bf16 before it is added (outward). Uses
// AVX2 where the CPU has it.
void accumulate_weighted_row(double w, const double* ylo, const double* yhi, bool bf16_products,
                             CombineAccumulators& acc);
// The scalar loop alone (the reference the AVX2 path is tested against).
void accumulate_weighted_row_scalar(double w, const double* ylo, const double* yhi, bool bf16_products,
                                    CombineAccumulators& acc);
// How a token's accumulated routed sum becomes its output (combine.h): the accumulation error in any
// order (gamma = gamma_n(slots, unit of the accumulation), floor_n = slots x the underflow floor),
// routed_scaling_factor applied in the combine (an fp32 multiply) or not, the bf16 output rounding.
struct CombineFinish {
  double gamma = 0, floor_n = 0;
  bool rsf_in_combine = false;
  float rsf = 1.0f;
  bool bf16_output = false;
};
// Column o's routed output interval, and in *peak the largest magnitude any intermediate may take,
// from the accumulators (NaN columns are the caller's: acc.nan).
Interval routed_output(const CombineAccumulators& acc, int64_t o, const CombineFinish& f, double* peak);
// For a token without shared experts: every column of row `row` of `out` ([T, cols]) as store()
// (stage_types.h) records it: NaN and +inf where a NaN reached the column or an intermediate may pass
// bf16's largest finite value. AVX2 where the CPU has it.
void finish_routed_columns(const CombineAccumulators& acc, const CombineFinish& f, StageExpectation& out,
                           int64_t row);
// The scalar loop alone.
void finish_routed_columns_scalar(const CombineAccumulators& acc, const CombineFinish& f,
                                  StageExpectation& out, int64_t row);
// Whether accumulate_weighted_row takes the AVX2 path on this CPU.
bool combine_rows_use_avx2();

}  // namespace moefuzz::stages
