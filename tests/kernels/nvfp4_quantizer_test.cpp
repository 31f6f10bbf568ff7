// The CPU kernel's NVFP4 activation quantizer (kernels/cpu/cpu_quantizer.h): every packed code is
// e2m1_from_float of the scaled value it reports, low nibble first, on hostile blocks (NaN, infinities,
// signed zeros, every E2M1 threshold and its neighbours, subnormals), whichever code path (AVX2 or
// scalar) this CPU takes; the nibble-swap mutant swaps exactly the two halves.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "core/e2m1.h"
#include "kernels/cpu/cpu_quantizer.h"

namespace moefuzz::cpu {
namespace {

// Blocks whose scaled values land on and around the E2M1 thresholds: x * outScale with outScale
// ~ s_q / sfd. Values are drawn as multiples of the block's amax so that ties survive the scaling.
std::vector<float> hostile_rows(int64_t n, std::mt19937_64& rng) {
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::quiet_NaN(),
                            -std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::denorm_min(),
                            -1e-40f};
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t b = 0; b < n / 16; ++b) {
    const float unit = std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20);
    for (int64_t j = 0; j < 16; ++j) {
      float v;
      switch (rng() % 4) {
        case 0:
          v = specials[rng() % 8];
          break;
        case 1: {  // a threshold (or its neighbour) in units of amax / 6
          const float t = kE2m1Thresholds[rng() % 7];
          v = unit * t;
          if (rng() % 3 == 0) v = std::nextafter(v, rng() % 2 ? 0.0f : 100.0f);
          break;
        }
        default:
          v = unit * (static_cast<float>(rng() % 1000) / 100.0f);
      }
      x[static_cast<size_t>(b * 16 + j)] = rng() % 2 ? -v : v;
    }
    // Some blocks carry an amax of exactly 6 units: outScale maps the units to E2M1 values.
    if (rng() % 2) x[static_cast<size_t>(b * 16 + rng() % 16)] = 6.0f * unit;
  }
  return x;
}

TEST(Nvfp4Quantizer, EveryCodeIsTheE2m1OfItsScaledValue) {
  std::mt19937_64 rng(20261207);
  int64_t checked = 0, nan_codes = 0, negative_zero_codes = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t n = 16 * (1 + static_cast<int64_t>(rng() % 8));
    const std::vector<float> x = hostile_rows(n, rng);
    const float s_q =
        std::ldexp(1.0f + static_cast<float>(rng() % 8) / 8.0f, static_cast<int>(rng() % 20) - 10);
    QuantizerFlags f;
    f.variant = trial % 3 == 0 ? QuantizerVariant::kExact : QuantizerVariant::kFastMath;
    std::vector<uint8_t> packed(static_cast<size_t>(n / 2)), scales(static_cast<size_t>(n / 16));
    std::vector<float> scaled(static_cast<size_t>(n));
    quantize_nvfp4_row(x.data(), n, s_q, f, packed.data(), scales.data(), scaled.data());
    for (int64_t i = 0; i < n; ++i, ++checked) {
      const uint8_t byte = packed[static_cast<size_t>(i / 2)];
      const uint8_t code = i % 2 == 0 ? byte & 0xF : byte >> 4;
      const float y = scaled[static_cast<size_t>(i)];
      ASSERT_EQ(code, e2m1_from_float(y))
          << "trial " << trial << " element " << i << " x " << x[i] << " y " << y;
      nan_codes += std::isnan(y);
      negative_zero_codes += code == 0x8;
    }
    // The nibble-swap mutant: the same codes, element 2j in the high nibble.
    QuantizerFlags swapped = f;
    swapped.nibble_order_swapped = true;
    std::vector<uint8_t> packed_swapped(packed.size()), scales_swapped(scales.size());
    quantize_nvfp4_row(x.data(), n, s_q, swapped, packed_swapped.data(), scales_swapped.data());
    for (size_t k = 0; k < packed.size(); ++k)
      ASSERT_EQ(packed_swapped[k], static_cast<uint8_t>((packed[k] << 4) | (packed[k] >> 4))) << k;
    EXPECT_EQ(scales_swapped, scales);
  }
  EXPECT_GT(checked, 300 * 16);
  EXPECT_GT(nan_codes, 0) << "no NaN reached the encoder: the test lost its hostile inputs";
  EXPECT_GT(negative_zero_codes, 0);
}

}  // namespace
}  // namespace moefuzz::cpu
