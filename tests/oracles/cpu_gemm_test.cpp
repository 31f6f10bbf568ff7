// The W4A4 GEMM stages' dots and flip sums on the CPU (stages::cpu_gemm, add_cpu_flips,
// oracles/stages/gemm_bounds.h), in a dot device's layout: every dot must be rounded_dot_rows' and
// every flip sum flip_sum's, bit for bit, since the stages' row epilogue takes them whoever computed
// them. Hostile scales (NaN blocks among them), every kind of flip list (none, sparse, dense, repeated
// columns, huge and subnormal weights), row counts around the 8-row tiles, several matrices at once.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <vector>

#include "oracles/exact_dot.h"
#include "oracles/stages/gemm_bounds.h"
#include "oracles/stages/stage_types.h"
#include "support/hostile_nvfp4.h"

namespace moefuzz::stages {
namespace {

QuantizedInputs inputs(int64_t n, int64_t cols, uint64_t seed, bool flips) {
  const Nvfp4Matrix a = test::hostile_matrix(n, cols, seed);
  QuantizedInputs q(n, n, cols);
  q.rows = DecodedNvfp4::from_matrix(a);
  if (flips) q.flips = test::hostile_flips(n, cols, seed + 1);
  return q;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// got's dots and flip sums against the CPU's, element by element.
int64_t expect_elementwise(const QuantizedInputs& q, int64_t n, std::span<const DeviceWeights> weights,
                           const DeviceGemm& got) {
  int64_t compared = 0;
  size_t base = 0;
  for (const DeviceWeights& w : weights) {
    const int64_t rows = w.matrix->rows;
    for (int64_t r = 0; r < n; ++r)
      for (int64_t o = 0; o < rows; ++o) {
        const size_t at = base + static_cast<size_t>(r * rows + o);
        RoundedDot want;
        rounded_dot_rows(q.rows, r, 1, packed_row(*w.matrix, o), &want);
        EXPECT_TRUE(std::memcmp(&got.dots[at], &want, sizeof want) == 0)
            << "row " << r << " x weight row " << o << ": " << got.dots[at].value << " vs " << want.value;
        const double f = flip_sum(q.flips[static_cast<size_t>(r)], packed_row(*w.matrix, o));
        const double* g = got.flips_at(at);
        const double gf = g == nullptr ? 0.0 : *g;  // null: every flip sum +0
        EXPECT_TRUE(same_bits(gf, f) || (std::isnan(gf) && std::isnan(f)))
            << "flip sum, row " << r << " x weight row " << o << ": " << gf << " vs " << f;
        ++compared;
      }
    base += static_cast<size_t>(n * rows);
  }
  return compared;
}

TEST(CpuGemm, DotsAndFlipSumsAreTheCpusElementByElement) {
  int64_t compared = 0;
  for (int64_t cols : {16, 144, 1024}) {
    const Nvfp4Matrix w1 = test::hostile_matrix(37, cols, 200 + cols),
                      w2 = test::hostile_matrix(9, cols, 300 + cols);
    const DeviceWeights ws[2] = {{&w1, std::nullopt}, {&w2, std::nullopt}};
    for (int64_t n : {1, 7, 8, 9, 21})
      for (bool flips : {false, true}) {
        const QuantizedInputs q = inputs(n, cols, 100 + cols + n, flips);
        const DeviceGemm g = cpu_gemm(q, n, ws);
        ASSERT_EQ(g.dots.size(), static_cast<size_t>(n * (w1.rows + w2.rows)));
        EXPECT_TRUE(g.flips_known());
        // hostile_flips gives row 0 no flip and every other row some.
        EXPECT_EQ(g.zero_flips, !flips || n == 1);
        compared += expect_elementwise(q, n, ws, g);
      }
  }
  EXPECT_GT(compared, 10000);
}

// A device that returned dots without flip sums (a CPU without FMA): add_cpu_flips fills them as
// cpu_gemm would, and leaves known ones alone.
TEST(CpuGemm, AddCpuFlipsFillsWhatADeviceLeftOut) {
  const int64_t cols = 144, n = 11;
  const Nvfp4Matrix w = test::hostile_matrix(23, cols, 7);
  const DeviceWeights ws[1] = {{&w, std::nullopt}};
  const QuantizedInputs q = inputs(n, cols, 8, true);
  const DeviceGemm full = cpu_gemm(q, n, ws);
  DeviceGemm device;
  device.dots = full.dots;
  ASSERT_FALSE(device.flips_known());
  add_cpu_flips(q, n, ws, device);
  ASSERT_TRUE(device.flips_known());
  ASSERT_EQ(device.flips.size(), full.flips.size());
  for (size_t i = 0; i < full.flips.size(); ++i)
    EXPECT_TRUE(same_bits(device.flips[i], full.flips[i]) ||
                (std::isnan(device.flips[i]) && std::isnan(full.flips[i])))
        << i;
  EXPECT_EQ(expect_elementwise(q, n, ws, device), n * w.rows);
  DeviceGemm zero;
  zero.dots = full.dots;
  zero.zero_flips = true;
  add_cpu_flips(q, n, ws, zero);
  EXPECT_TRUE(zero.flips.empty()) << "known (all +0) flip sums are kept";
}

}  // namespace
}  // namespace moefuzz::stages
