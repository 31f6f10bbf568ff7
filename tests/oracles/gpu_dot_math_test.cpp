// The integer arithmetic of the GPU exact dots (oracles/gpu/dot_math.h), run on the host where CI
// has no GPU: the same code the device kernel runs must equal exact_dot_rows bit for bit (sum,
// abs_sum, NaN) on hostile operands, and its decoders must equal the project's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/e2m1.h"
#include "core/e4m3.h"
#include "core/rng.h"
#include "oracles/exact_dot.h"
#include "oracles/gpu/dot_math.h"
#include "support/hostile_nvfp4.h"

namespace moefuzz {
namespace {

TEST(GpuDotMath, E4m3DecoderMatchesTheProjectsOnEveryByte) {
  for (int b = 0; b < 256; ++b) {
    bool nan = false;
    const int32_t v = gpu::e4m3_times_512(static_cast<uint32_t>(b), nan);
    const float ref = e4m3_to_float(static_cast<uint8_t>(b));
    EXPECT_EQ(nan, std::isnan(ref)) << "byte " << b;
    if (!std::isnan(ref)) {
      EXPECT_EQ(static_cast<double>(v), static_cast<double>(ref) * 512.0) << "byte " << b;
    } else {
      EXPECT_EQ(v, 0) << "NaN bytes count as 0, as DecodedNvfp4 stores them";
    }
  }
}

TEST(GpuDotMath, E2m1DecoderMatchesTheProjectsOnEveryCode) {
  for (uint32_t c = 0; c < 16; ++c)
    EXPECT_EQ(static_cast<float>(gpu::twice_e2m1(c)), 2.0f * e2m1_to_float(static_cast<uint8_t>(c))) << c;
}

TEST(GpuDotMath, ScalePositionAddressesTheDecodedScaleOfEachBlock) {
  const Nvfp4Matrix m = test::hostile_matrix(3, 16 * 40, 11);  // 40 blocks: five groups, the last partial
  const DecodedNvfp4 d = DecodedNvfp4::from_matrix(m);
  for (int64_t r = 0; r < m.rows; ++r)
    for (int64_t b = 0; b < m.blocks_per_row(); ++b) {
      bool nan = false;
      EXPECT_EQ(d.scale_row(r)[gpu::scale_position(b)], gpu::e4m3_times_512(m.scale(r, b), nan))
          << "row " << r << " block " << b;
    }
}

// exact_block_dots over every (activation row, weight row) pair against exact_dot_rows and its
// scalar reference; returns the pairs compared.
int64_t expect_equal_to_exact_dot_rows(int64_t cols, uint64_t seed) {
  const Nvfp4Matrix am = test::hostile_matrix(7, cols, seed), w = test::hostile_matrix(11, cols, seed + 1);
  const DecodedNvfp4 a = DecodedNvfp4::from_matrix(am);
  int64_t pairs = 0;
  for (int64_t o = 0; o < w.rows; ++o)
    for (int64_t r = 0; r < a.rows(); ++r) {
      ExactDot ref, scalar;
      exact_dot_rows(a, r, 1, packed_row(w, o), &ref);
      exact_dot_rows_scalar(a, r, 1, packed_row(w, o), &scalar);
      const gpu::DotTotals t = gpu::exact_block_dots(a.code_row(r), a.scale_row(r), packed_row(w, o).packed,
                                                     packed_row(w, o).scales, cols / 16);
      EXPECT_TRUE(t.sum == ref.sum && t.abs_sum == ref.abs_sum)
          << "cols " << cols << " row " << r << " x " << o;
      EXPECT_TRUE(ref.sum == scalar.sum && ref.abs_sum == scalar.abs_sum);
      EXPECT_EQ(t.weight_nan || a.row_has_nan(r), ref.nan) << "cols " << cols << " row " << r << " x " << o;
      // The device's split: lanes 0..31 take every 32nd block; their totals add up to the same integers.
      gpu::DotTotals lanes;
      for (int64_t l = 0; l < 32; ++l) {
        const gpu::DotTotals p = gpu::exact_block_dots(a.code_row(r), a.scale_row(r), packed_row(w, o).packed,
                                                       packed_row(w, o).scales, cols / 16, l, 32);
        lanes.sum += p.sum;
        lanes.abs_sum += p.abs_sum;
        lanes.weight_nan = lanes.weight_nan || p.weight_nan;
      }
      EXPECT_TRUE(lanes.sum == ref.sum && lanes.abs_sum == ref.abs_sum && lanes.weight_nan == t.weight_nan)
          << "32-lane split, cols " << cols << " row " << r << " x " << o;
      ++pairs;
    }
  return pairs;
}

TEST(GpuDotMath, EqualsExactDotRowsOnHostileOperands) {
  int64_t pairs = 0;
  for (int64_t cols : {16, 48, 128, 144, 2048, 2064, 7168})
    for (uint64_t seed : {1, 2, 3}) pairs += expect_equal_to_exact_dot_rows(cols, seed * 10 + cols);
  EXPECT_EQ(pairs, 7 * 3 * 77);
}

TEST(GpuDotMath, LongRowsOfLargestTermsCrossTheFlushBoundary) {
  // kFlushBlocks + 3 blocks, every term 2304 x 229376^2 (the largest): the int64 lanes are flushed to
  // __int128 once, and the total (~2^61.6 per 2^14 blocks) only fits the wide sum.
  const int64_t cols = (gpu::kFlushBlocks + 3) * 16;
  Nvfp4Matrix am(1, cols), w(2, cols);
  for (int64_t c = 0; c < cols; ++c) {
    am.set_code(0, c, 0x7);
    w.set_code(0, c, 0x7);
    w.set_code(1, c, 0xF);
  }
  for (int64_t b = 0; b < cols / 16; ++b) {
    am.scale(0, b) = 0x7E;
    w.scale(0, b) = 0x7E;
    w.scale(1, b) = 0x7E;
  }
  const DecodedNvfp4 a = DecodedNvfp4::from_matrix(am);
  for (int64_t o = 0; o < 2; ++o) {
    ExactDot ref;
    exact_dot_rows_scalar(a, 0, 1, packed_row(w, o), &ref);
    const gpu::DotTotals t = gpu::exact_block_dots(a.code_row(0), a.scale_row(0), packed_row(w, o).packed,
                                                   packed_row(w, o).scales, cols / 16);
    const __int128 term = static_cast<__int128>(2304) * 229376 * 229376;
    EXPECT_TRUE(t.sum == ref.sum && t.abs_sum == ref.abs_sum) << "weight row " << o;
    EXPECT_TRUE(t.sum == (o == 0 ? term : -term) * (cols / 16)) << "the exact total";
  }
}

// The device's rounding of the exact totals (dot_value, dot_abs_value: integer steps) against the CPU
// oracle's (ExactDot::value: the compiler's __int128 -> double; abs_value: round-up by nextafter) on
// every shape of integer they can meet: exact ones, ties to even and odd on either side, the 2^53,
// 2^62 and 2^64 boundaries, the largest totals, both signs.
TEST(GpuDotMath, RoundingOfTotalsEqualsExactDotValue) {
  std::vector<__int128> values = {0, 1, -1, 12345, -98765};
  for (int e = 52; e <= 125; ++e) {
    const __int128 p = static_cast<__int128>(1) << e;
    for (__int128 d :
         {__int128{0}, __int128{1}, __int128{2}, __int128{3}, __int128{-1}, __int128{-2}, __int128{-3}}) {
      values.push_back(p + d);
      if (e >= 54) {  // halfway cases one and two units below the rounding position
        const __int128 half = static_cast<__int128>(1) << (e - 53);
        values.push_back(p + half + d);
        values.push_back(p + 3 * half + d);
      }
    }
  }
  Stream s(7, "gpu-rounding");  // random bit patterns of every width
  for (uint64_t i = 0; i < 20000; ++i) {
    const int width = 1 + static_cast<int>(i % 125);
    const __int128 raw = (static_cast<__int128>(s.bits(2 * i)) << 64) | s.bits(2 * i + 1);
    values.push_back(raw & ((static_cast<__int128>(1) << width) - 1));
  }
  int64_t compared = 0;
  for (const __int128 v : values)
    for (const __int128 x : {v, -v}) {
      ExactDot d;
      d.sum = x;
      d.abs_sum = x < 0 ? -x : x;
      const double got = gpu::dot_value(d.sum), got_abs = gpu::dot_abs_value(d.abs_sum);
      const double want = d.value(), want_abs = d.abs_value();
      ASSERT_EQ(std::memcmp(&got, &want, sizeof got), 0)
          << "value of " << static_cast<double>(x) << ": " << got << " vs " << want;
      ASSERT_EQ(std::memcmp(&got_abs, &want_abs, sizeof got), 0)
          << "abs_value of " << static_cast<double>(d.abs_sum) << ": " << got_abs << " vs " << want_abs;
      ++compared;
    }
  EXPECT_GT(compared, 40000);
}

}  // namespace
}  // namespace moefuzz
