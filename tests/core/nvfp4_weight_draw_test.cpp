// draw_nvfp4_weights (core/nvfp4_weight_draw.h): its AVX-512 path (eight blocks at a time) must give the
// block-at-a-time loop's bytes for every weight profile and every matrix size, the tail of fewer than
// eight blocks included: the drawn weights are the cases' content, pinned by their hashes.
#include <gtest/gtest.h>

#include <string>

#include "core/cpu_features.h"
#include "core/nvfp4_weight_draw.h"

namespace moefuzz {
namespace {

TEST(Nvfp4WeightDraw, Avx512BlocksEqualTheBlockLoop) {
  if (!cpu_has_avx512_vbmi()) GTEST_SKIP() << "no AVX-512 VBMI on this CPU: the block loop is the only path";
  const WeightProfile profiles[] = {WeightProfile::kNormal, WeightProfile::kZeroBlocks,
                                    WeightProfile::kWideScales, WeightProfile::kTinyScales,
                                    WeightProfile::kExpertSpread};
  int64_t matrices = 0, zero_scales = 0;
  for (WeightProfile p : profiles)
    for (int64_t rows : {1, 3, 7, 64})
      for (int64_t cols : {16, 48, 128, 1024}) {
        const Stream s(static_cast<uint64_t>(rows * 7919 + cols),
                       "weight-draw-" + std::to_string(static_cast<int>(p)));
        Nvfp4Matrix simd(rows, cols), plain(rows, cols);
        draw_nvfp4_weights(s, p, simd, /*simd=*/true);
        draw_nvfp4_weights(s, p, plain, /*simd=*/false);
        ASSERT_EQ(simd.packed, plain.packed)
            << "profile " << static_cast<int>(p) << ", " << rows << " x " << cols;
        ASSERT_EQ(simd.scales, plain.scales)
            << "profile " << static_cast<int>(p) << ", " << rows << " x " << cols;
        ++matrices;
        for (uint8_t b : plain.scales) zero_scales += b == 0 ? 1 : 0;
      }
  EXPECT_EQ(matrices, 80);
  EXPECT_GT(zero_scales, 0) << "the zero-block profile's rules were drawn";
}

}  // namespace
}  // namespace moefuzz
