// The flip sums of the GPU dot device (oracles/gpu/flip_math.h), run on the host where CI has no GPU:
// the code the device kernel runs must equal the CPU's weighted_abs_sum_rows (dense flip rows) and
// sparse_weighted_abs_sum (sparse ones) bit for bit on hostile weight rows and flip lists, as the
// GEMM stages combine them (gemm_bounds.h flip_terms + flip_sums).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "oracles/exact_dot.h"
#include "oracles/gpu/flip_math.h"
#include "support/hostile_nvfp4.h"

namespace moefuzz {
namespace {

bool same(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;  // NaN payloads may differ
}

TEST(GpuFlipMath, EqualsTheCpusFlipSumsOnHostileRowsAndLists) {
  // The device repeats the AVX2 + FMA loop of weighted_abs_sum_rows; CI's CPUs have it (a CPU without
  // it keeps the flip sums on the CPU, and this comparison would not apply).
  ASSERT_TRUE(weighted_abs_sum_rows_is_fused()) << "this CPU lacks AVX2 + FMA";
  int64_t dense = 0, sparse = 0, nan = 0, zero = 0;
  for (int64_t cols : {16, 48, 144, 2048, 2064})
    for (uint64_t seed : {1, 2}) {
      const Nvfp4Matrix w = test::hostile_matrix(11, cols, seed * 100 + cols);
      const std::vector<FlipList> flips = test::hostile_flips(10, cols, seed * 7 + cols);
      for (const FlipList& list : flips) {
        std::vector<int32_t> columns;
        std::vector<double> weights, per_column(static_cast<size_t>(cols), 0.0);
        for (const auto& [c, r] : list) {
          columns.push_back(c);
          weights.push_back(r);
          per_column[static_cast<size_t>(c)] += r;
        }
        const bool is_dense = flips_are_dense(list.size(), cols);
        for (int64_t o = 0; o < w.rows; ++o) {
          const PackedNvfp4Row row = packed_row(w, o);
          double want = 0, got = 0;
          if (is_dense) {
            const double* rows[1] = {per_column.data()};
            weighted_abs_sum_rows(rows, 1, row, &want);
            got = gpu::dense_flip_sum(per_column.data(), row.packed, row.scales, cols);
            ++dense;
          } else {
            want = sparse_weighted_abs_sum(list, row);
            got = gpu::sparse_flip_sum(columns.data(), weights.data(), static_cast<int64_t>(list.size()),
                                       row.packed, row.scales);
            ++sparse;
          }
          EXPECT_TRUE(same(got, want))
              << "cols " << cols << " weight row " << o << (is_dense ? " dense" : " sparse") << ": got "
              << got << ", want " << want;
          nan += std::isnan(want) ? 1 : 0;
          zero += want == 0 ? 1 : 0;
        }
      }
    }
  // Every kind met: dense and sparse, NaN scales, empty lists.
  EXPECT_GT(dense, 100);
  EXPECT_GT(sparse, 100);
  EXPECT_GT(nan, 0);
  EXPECT_GT(zero, 0);
}

// The dense loop's order matters (a bound, not an exact sum): summing the same terms in plain element
// order gives other bits on rows built so that it does, and the device code still equals the CPU.
TEST(GpuFlipMath, DenseOrderIsTheCpusNotTheNaturalOne) {
  const int64_t cols = 2048;
  const Nvfp4Matrix w = test::hostile_matrix(6, cols, 5);
  std::vector<double> r(static_cast<size_t>(cols));
  for (int64_t i = 0; i < cols; ++i)
    r[static_cast<size_t>(i)] = 1.0 + std::ldexp(1.0, -static_cast<int>(i % 50));
  int differing = 0;
  for (int64_t o = 1; o < w.rows; o += 3) {  // rows without NaN scales (kinds 1 and 4)
    const PackedNvfp4Row row = packed_row(w, o);
    double want = 0;
    const double* rows[1] = {r.data()};
    weighted_abs_sum_rows(rows, 1, row, &want);
    EXPECT_TRUE(same(gpu::dense_flip_sum(r.data(), row.packed, row.scales, cols), want)) << "row " << o;
    double natural = 0;
    for (int64_t i = 0; i < cols; ++i)
      natural += r[static_cast<size_t>(i)] * std::fabs(packed_operand(row, i));
    differing += same(gpu::inflate_flip_sum(natural, static_cast<double>(cols)), want) ? 0 : 1;
  }
  EXPECT_GT(differing, 0) << "the rows must tell the orders apart";
}

}  // namespace
}  // namespace moefuzz
