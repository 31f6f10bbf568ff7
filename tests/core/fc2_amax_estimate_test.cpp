// estimate_fc2_input_amax (core/act_scales.h): its AVX-512 path (eight gate/up dots in one register)
// must give the scalar loop's estimate bit for bit, because the estimate sets a2_scale, part of every
// drawn NVFP4 case (pinned by the case hashes). Shapes cover both the full and the sampled estimate,
// row counts that leave a tail of 1-3 rows, every weight profile, and scale bytes that are NaN.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>

#include "core/act_scales.h"
#include "core/case.h"
#include "core/cpu_features.h"

namespace moefuzz {
namespace {

TEST(Fc2AmaxEstimate, Avx512DotsEqualTheScalarLoop) {
  if (!cpu_has_avx512()) GTEST_SKIP() << "no AVX-512 on this CPU: the scalar loop is the only path";
  const WeightProfile profiles[] = {WeightProfile::kNormal, WeightProfile::kZeroBlocks,
                                    WeightProfile::kWideScales, WeightProfile::kTinyScales,
                                    WeightProfile::kExpertSpread};
  struct Dims {
    int64_t tokens, hidden, inter, experts;
  };
  // Full estimates (every row): (1, 64, 48, 2), (2, 96, 32, 3), (1, 32, 16, 1). Sampled ones, with
  // floor(2^21 / (16 H)) rows: H 1536 -> 85 (a tail of 1), 1520 -> 86 (2), 1504 -> 87 (3), 2048 -> 64.
  const Dims dims[] = {{1, 64, 48, 2},    {2, 96, 32, 3},    {1, 32, 16, 1},   {4, 1536, 128, 4},
                       {4, 1520, 128, 3}, {4, 1504, 128, 3}, {3, 2048, 256, 8}};
  int64_t cases = 0, nonzero = 0;
  for (WeightProfile p : profiles)
    for (const Dims& d : dims)
      for (uint64_t seed : {1u, 2u, 3u}) {
        CaseRecipe r;
        r.seed = seed * 1009 + static_cast<uint64_t>(d.hidden);
        r.shape = {
            .tokens = d.tokens, .hidden = d.hidden, .inter = d.inter, .experts = d.experts, .top_k = 1};
        r.values.weights = p;
        Case c = materialize(r);
        const double simd = estimate_fc2_input_amax(r, c.hidden, c.experts, /*simd=*/true);
        const double plain = estimate_fc2_input_amax(r, c.hidden, c.experts, /*simd=*/false);
        ASSERT_EQ(std::bit_cast<uint64_t>(simd), std::bit_cast<uint64_t>(plain))
            << "profile " << static_cast<int>(p) << ", H " << d.hidden << ", I " << d.inter << ", seed "
            << seed << ": " << simd << " vs " << plain;
        nonzero += plain > 0 ? 1 : 0;
        ++cases;
        // A NaN block scale in every gate row's first block: those dots are NaN, which the estimate
        // skips in either path; the rest must still agree.
        ExpertWeights& w = c.experts[0];  // non-const: this case's own copy
        for (int64_t row = 0; row < w.gate.rows; row += 3) w.gate.scale(row, 0) = 0x7F;
        const double simd_nan = estimate_fc2_input_amax(r, c.hidden, c.experts, /*simd=*/true);
        const double plain_nan = estimate_fc2_input_amax(r, c.hidden, c.experts, /*simd=*/false);
        ASSERT_EQ(std::bit_cast<uint64_t>(simd_nan), std::bit_cast<uint64_t>(plain_nan))
            << "NaN scales, profile " << static_cast<int>(p) << ", H " << d.hidden;
      }
  EXPECT_EQ(cases, 105);
  EXPECT_GT(nonzero, 80) << "the estimates compared something";
}

}  // namespace
}  // namespace moefuzz
