// The CPU GEMMs' tile dot (kernels/cpu/tile_dot.h): the AVX2 path gives the scalar path's bits, on
// E2M1-code tiles (W4A4: exact block sums), on bf16 values (W4A16 and bf16 weights: block sums that
// round, so the order is what is tested), for one row and for two, both tactics and both mutants.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/bf16.h"
#include "core/cpu_features.h"
#include "core/e2m1.h"
#include "core/e4m3.h"
#include "kernels/cpu/tile_dot.h"

namespace moefuzz::cpu {
namespace {

struct Operands {
  std::vector<float> x[2], s[2], codes, scales;
};

// `values`: 0 = E2M1 codes, 1 = bf16 values over a wide range (subnormals, signed zeros, ties of the
// fp32 sums); block scales E4M3 values or all 1 (bf16 weights).
Operands draw(int64_t K, int64_t nt, int values, bool unit_scales, std::mt19937_64& rng) {
  Operands o;
  auto value = [&]() -> float {
    if (values == 0) return e2m1_to_float(static_cast<uint8_t>(rng() % 16));
    switch (rng() % 8) {
      case 0:
        return 0.0f;
      case 1:
        return -0.0f;
      case 2:
        return std::ldexp(1.0f + static_cast<float>(rng() % 128) / 128.0f,
                          -130 + static_cast<int>(rng() % 8));
      case 3:
        return std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20);  // sums that tie
      default:
        return bf16_to_float(static_cast<uint16_t>(rng() % 0x7F80 | (rng() % 2 ? 0x8000 : 0)));
    }
  };
  auto scale = [&]() -> float {
    return unit_scales ? 1.0f : e4m3_to_float(static_cast<uint8_t>(rng() % 0x7F));
  };
  for (int r = 0; r < 2; ++r) {
    for (int64_t k = 0; k < K; ++k) o.x[r].push_back(value());
    for (int64_t kb = 0; kb < K / 16; ++kb) o.s[r].push_back(scale());
  }
  for (int64_t i = 0; i < K * nt; ++i) o.codes.push_back(value());
  for (int64_t i = 0; i < K / 16 * nt; ++i) o.scales.push_back(scale());
  return o;
}

TEST(TileDot, Avx2GivesTheScalarBits) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "this CPU has no AVX2: only the scalar path runs here";
  std::mt19937_64 rng(20261206);
  int64_t compared = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t K = 16 * (1 + static_cast<int64_t>(rng() % 12)), nt = rng() % 2 ? 32 : 64;
    const TileDotShape shape{.K = K,
                             .nt = nt,
                             .group = rng() % 2 ? 4 : 1,
                             .first_scale_of_group = rng() % 4 == 0,
                             .bf16_accumulator = rng() % 4 == 0};
    const Operands o = draw(K, nt, trial % 2, trial % 3 == 0, rng);
    const int rows = 1 + static_cast<int>(rng() % 2);
    const float* x[2] = {o.x[0].data(), o.x[1].data()};
    const float* s[2] = {o.s[0].data(), o.s[1].data()};
    std::vector<float> simd(static_cast<size_t>(2 * nt), 7.0f), scalar(simd);
    float* const a[2] = {simd.data(), simd.data() + nt};
    float* const b[2] = {scalar.data(), scalar.data() + nt};
    tile_dot_rows(rows, x, s, o.codes.data(), o.scales.data(), shape, a, true);
    tile_dot_rows(rows, x, s, o.codes.data(), o.scales.data(), shape, b, false);
    for (int64_t i = 0; i < rows * nt; ++i, ++compared)
      ASSERT_EQ(std::bit_cast<uint32_t>(simd[i]), std::bit_cast<uint32_t>(scalar[i]))
          << "trial " << trial << " K " << K << " nt " << nt << " group " << shape.group << " element " << i
          << ": " << simd[i] << " vs " << scalar[i];
  }
  EXPECT_GT(compared, 400 * 32);
}

// fp4_tile_dot_rows against the scalar float path on the same E2M1 operands: random codes (signed
// zeros, the format mutant's -0.5 for code 8), E4M3 scales with NaN bytes, both tactics, both mutants.
TEST(TileDot, Fp4PairsGiveTheFloatPathsBits) {
  if (!fp4_tile_dot_available()) GTEST_SKIP() << "this CPU has no AVX2: W4A4 tiles take tile_dot_rows";
  std::mt19937_64 rng(20261207);
  int64_t compared = 0, nan_outputs = 0;
  for (int trial = 0; trial < 600; ++trial) {
    const int64_t K = 16 * (1 + static_cast<int64_t>(rng() % 16)), nt = rng() % 2 ? 32 : 64;
    const TileDotShape shape{.K = K,
                             .nt = nt,
                             .group = rng() % 2 ? 4 : 1,
                             .first_scale_of_group = rng() % 4 == 0,
                             .bf16_accumulator = rng() % 4 == 0};
    const bool mutant_zero = trial % 5 == 0;
    auto value = [&](uint8_t code) { return mutant_zero && code == 8 ? -0.5f : e2m1_to_float(code); };
    auto scale = [&]() {
      return e4m3_to_float(rng() % 50 == 0 ? uint8_t{0x7F} : static_cast<uint8_t>(rng() % 256 & 0xFE));
    };
    std::vector<float> x[2], s[2], codes(static_cast<size_t>(K * nt)), scales;
    std::vector<int8_t> x2[2];
    std::vector<uint16_t> pairs(static_cast<size_t>(K / 2 * nt));
    for (int r = 0; r < 2; ++r)
      for (int64_t k = 0; k < K; ++k) {
        // Mostly nonzero codes; one row in four all zero codes of both signs (p = +0 everywhere).
        const uint8_t code = trial % 4 == 3 && r == 1 ? static_cast<uint8_t>(rng() % 2 * 8) : rng() % 16;
        x[r].push_back(value(code));
        x2[r].push_back(static_cast<int8_t>(2.0f * value(code)));
      }
    for (int r = 0; r < 2; ++r)
      for (int64_t kb = 0; kb < K / 16; ++kb) s[r].push_back(scale());
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < nt; ++n) {
        const uint8_t code = static_cast<uint8_t>(rng() % 16);
        codes[static_cast<size_t>(k * nt + n)] = value(code);
        uint16_t& p = pairs[static_cast<size_t>(k / 2 * nt + n)];
        p = static_cast<uint16_t>(p | static_cast<uint8_t>(static_cast<int8_t>(2.0f * value(code)))
                                          << (8 * (k % 2)));
      }
    for (int64_t i = 0; i < K / 16 * nt; ++i) scales.push_back(scale());
    const int rows = 1 + static_cast<int>(rng() % 2);
    const float* xs[2] = {x[0].data(), x[1].data()};
    const int8_t* x2s[2] = {x2[0].data(), x2[1].data()};
    const float* ss[2] = {s[0].data(), s[1].data()};
    std::vector<float> got(static_cast<size_t>(2 * nt), 7.0f), want(got);
    float* const a[2] = {got.data(), got.data() + nt};
    float* const b[2] = {want.data(), want.data() + nt};
    fp4_tile_dot_rows(rows, x2s, ss, pairs.data(), scales.data(), shape, a);
    tile_dot_rows(rows, xs, ss, codes.data(), scales.data(), shape, b, false);
    for (int64_t i = 0; i < rows * nt; ++i, ++compared) {
      nan_outputs += std::isnan(want[i]);
      ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
          << "trial " << trial << " K " << K << " nt " << nt << " group " << shape.group << " element " << i
          << ": " << got[i] << " vs " << want[i];
    }
  }
  EXPECT_GT(compared, 600 * 32);
  EXPECT_GT(nan_outputs, 0);
  EXPECT_LT(nan_outputs, compared / 2);
}

TEST(TileDot, TheScalarPathSumsInTheKernelsOrder) {
  // One column, K = 32 (two blocks), group 4 (tactic 1): acc = (0 + (p0 * s0 + p1 * s1)) in fp32,
  // with p the in-order 16-term sums. 2^24 + 1 - 2^24 shows the order: in order it is 0 (the 1 is
  // lost against 2^24), summed any other way it may be 1.
  const int64_t K = 32, nt = 16;
  std::vector<float> x(K, 0.0f), s(2, 1.0f), codes(K * nt, 0.0f), scales(2 * nt, 1.0f);
  x[0] = 0x1p24f, x[1] = 1.0f, x[2] = -0x1p24f;
  for (int64_t k = 0; k < 3; ++k) codes[k * nt] = 1.0f;
  const float* xs[2] = {x.data(), x.data()};
  const float* ss[2] = {s.data(), s.data()};
  std::vector<float> acc(nt, 7.0f);
  float* const out[2] = {acc.data(), acc.data()};
  tile_dot_rows(1, xs, ss, codes.data(), scales.data(), {.K = K, .nt = nt, .group = 4}, out, false);
  EXPECT_EQ(acc[0], 0.0f);
  EXPECT_EQ(acc[1], 0.0f);  // a zero column
}

TEST(TileDot, RejectsShapesItCannotSum) {
  const float* none[2] = {nullptr, nullptr};
  float* const out[2] = {nullptr, nullptr};
  EXPECT_THROW(tile_dot_rows(3, none, none, nullptr, nullptr, {.K = 16, .nt = 32}, out, false),
               std::logic_error);
  EXPECT_THROW(tile_dot_rows(1, none, none, nullptr, nullptr, {.K = 20, .nt = 32}, out, false),
               std::logic_error);
  EXPECT_THROW(tile_dot_rows(1, none, none, nullptr, nullptr, {.K = 16, .nt = 24}, out, false),
               std::logic_error);
  const int8_t* none2[2] = {nullptr, nullptr};
  EXPECT_THROW(fp4_tile_dot_rows(3, none2, none, nullptr, nullptr, {.K = 16, .nt = 32}, out),
               std::logic_error);
  EXPECT_THROW(fp4_tile_dot_rows(1, none2, none, nullptr, nullptr, {.K = 16, .nt = 16}, out),
               std::logic_error);
}

}  // namespace
}  // namespace moefuzz::cpu
