// e4m3_nosat_codes (core/e4m3_rows.h): its AVX2 path must give e4m3_from_float_nosat of each scaled
// value, byte for byte: the FP8 weights of every drawn FP8 case are these codes (pinned by the case
// hashes). A strided sweep of all 2^32 bit patterns plus every boundary of the encoding (subnormal
// range, 448, 464, Inf, NaN) runs here; MOEFUZZ_EXHAUSTIVE=1 takes every pattern. The quantizer
// (core/fp8_block_quant.h) is held to its element loop on hostile blocks too.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <vector>

#include "core/cpu_features.h"
#include "core/e4m3_rows.h"
#include "core/fp8_block_quant.h"
#include "core/rng.h"

namespace moefuzz {
namespace {

// The codes of `values` (times `multiplier`) both ways; the first index where they differ, or -1.
int64_t first_difference(const std::vector<float>& values, float multiplier) {
  const int64_t n = static_cast<int64_t>(values.size());
  std::vector<uint8_t> simd(values.size()), plain(values.size());
  e4m3_nosat_codes(values.data(), n, multiplier, simd.data(), /*simd=*/true);
  e4m3_nosat_codes(values.data(), n, multiplier, plain.data(), /*simd=*/false);
  for (int64_t i = 0; i < n; ++i)
    if (simd[static_cast<size_t>(i)] != plain[static_cast<size_t>(i)]) return i;
  return -1;
}

TEST(E4m3Rows, Avx2CodesEqualTheElementLoop) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "no AVX2 on this CPU: the element loop is the only path";
  const bool exhaustive = std::getenv("MOEFUZZ_EXHAUSTIVE") != nullptr;
  const uint64_t stride = exhaustive ? 1 : 4099;
  std::vector<float> values;
  values.reserve(1 << 20);
  const auto flush = [&](float multiplier) {
    const int64_t at = first_difference(values, multiplier);
    ASSERT_EQ(at, -1) << "bits 0x" << std::hex << std::bit_cast<uint32_t>(values[static_cast<size_t>(at)])
                      << " times " << multiplier;
    values.clear();
  };
  for (uint64_t b = 0; b <= 0xFFFFFFFFull; b += stride) {
    values.push_back(std::bit_cast<float>(static_cast<uint32_t>(b)));
    if (values.size() == (1u << 20)) flush(1.0f);
  }
  // Every boundary and its neighbours, both signs: the subnormal range's end (2^-6), 448, 464, Inf,
  // the first NaNs, and the ties of every code below 448 (odd multiples of half a quantum).
  for (uint32_t center : {0x3C800000u, 0x43E00000u, 0x43E80000u, 0x7F800000u, 0x00000000u, 0x3A800000u})
    for (int32_t d = -70000; d <= 70000; ++d)
      for (uint32_t sign : {0u, 0x80000000u}) values.push_back(std::bit_cast<float>((center + d) ^ sign));
  for (int code = 0; code < 0x7E; ++code) {
    const float lo = e4m3_to_float(static_cast<uint8_t>(code)),
                hi = e4m3_to_float(static_cast<uint8_t>(code + 1));
    const float tie = lo + (hi - lo) / 2;
    for (float v : {tie, std::nextafter(tie, 0.0f), std::nextafter(tie, 1e9f)}) {
      values.push_back(v);
      values.push_back(-v);
    }
  }
  flush(1.0f);
  // Scaled, as the quantizer calls it: random normals times fl(1 / S) for a spread of scales.
  const Stream s(11, "e4m3-rows");
  for (int round = 0; round < 64; ++round) {
    for (int i = 0; i < 1000; ++i) values.push_back(static_cast<float>(s.normal(round * 1000 + i)));
    flush(std::ldexp(1.0f, round - 32) * 1.37f);
  }
}

TEST(E4m3Rows, QuantizerCodesEqualTheElementLoop) {
  const Stream s(5, "fp8-block-quant-rows");
  int64_t matrices = 0;
  for (int64_t rows : {1, 7, 130})
    for (int64_t cols : {5, 128, 200, 264})
      for (bool ue8m0 : {false, true}) {
        std::vector<float> w(static_cast<size_t>(rows * cols));
        for (size_t i = 0; i < w.size(); ++i) {
          const uint64_t k = static_cast<uint64_t>(matrices) * 1000003 + i;
          w[i] = static_cast<float>(s.normal(k)) *
                 std::ldexp(1.0f, static_cast<int>(s.uniform_int(k + 7, -20, 8)));
          const uint64_t special = s.uniform_int(k + 13, 0, 500);
          if (special == 0) w[i] = std::numeric_limits<float>::quiet_NaN();
          if (special == 1) w[i] = -std::numeric_limits<float>::infinity();
          if (special == 2) w[i] = 1e-42f;
        }
        const Fp8BlockQuantized simd = quantize_fp8_block_weight(w, rows, cols, ue8m0, /*simd=*/true);
        const Fp8BlockQuantized plain = quantize_fp8_block_weight(w, rows, cols, ue8m0, /*simd=*/false);
        ASSERT_EQ(simd.codes, plain.codes) << rows << " x " << cols << (ue8m0 ? ", ue8m0" : "");
        ASSERT_EQ(simd.scales.size(), plain.scales.size());
        for (size_t b = 0; b < simd.scales.size(); ++b)  // bits: a block with a NaN has a NaN scale
          ASSERT_EQ(std::bit_cast<uint32_t>(simd.scales[b]), std::bit_cast<uint32_t>(plain.scales[b]));
        ++matrices;
      }
  EXPECT_EQ(matrices, 24);
}

}  // namespace
}  // namespace moefuzz
