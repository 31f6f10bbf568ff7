// The combine stage's row accumulation and its per-column finish (oracles/stages/combine_rows.h): the
// AVX2 paths give the scalar loops' accumulators (any NaN counting as one value) and stored
// expectations and bounds bit for bit, NaN flags included, with and
// without bf16 products, on values that reach every branch: NaN and infinite interval ends, huge products
// that overflow fp32 or bf16, subnormal and zero products (both signs), intervals exactly on a float or a
// bf16, negative, zero and tiny weights, and H not a multiple of 4 (the scalar tail).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "oracles/stages/combine_rows.h"

namespace moefuzz::stages {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A value from a pool of edges or a random magnitude over the whole double range the GEMM2 stage
// produces (including past fp32 and bf16).
double draw_value(std::mt19937_64& rng) {
  static const double edges[] = {0.0,           -0.0,       1.0,         -1.0,           0x1p-149, -0x1p-149,
                                 0x1p-126,      0x1.fep127, -0x1.fep127, 0x1.fffffep127, 3.4e38,   -3.5e38,
                                 1e300,         -1e300,     kInf,        -kInf,          kNaN,     1.00390625,
                                 1.0 + 0x1p-30, 0x1p-140,   -0x1p-135};
  const uint64_t pick = rng() % 4;
  if (pick == 0) return edges[rng() % (sizeof(edges) / sizeof(edges[0]))];
  std::uniform_real_distribution<double> mant(-1.0, 1.0);
  const int exponent = static_cast<int>(rng() % 300) - 170;  // 2^-170 .. 2^129
  return std::ldexp(mant(rng), exponent);
}

// Bits, with every NaN as one value: a NaN's sign and payload depend on which operand x86 propagates
// and the compiler may commute an addition, but only NaN-ness reaches the stage's result (store()
// maps any NaN interval to expected NaN, bound +inf).
std::vector<uint64_t> bits_of(const std::vector<double>& v) {
  std::vector<uint64_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    b[i] = std::isnan(v[i]) ? 0x7FF8000000000000ull : std::bit_cast<uint64_t>(v[i]);
  return b;
}

void expect_same(const CombineAccumulators& a, const CombineAccumulators& b, int trial) {
  EXPECT_EQ(bits_of(a.lo), bits_of(b.lo)) << "trial " << trial;
  EXPECT_EQ(bits_of(a.hi), bits_of(b.hi)) << "trial " << trial;
  EXPECT_EQ(bits_of(a.mag), bits_of(b.mag)) << "trial " << trial;
  EXPECT_EQ(bits_of(a.peak), bits_of(b.peak)) << "trial " << trial;
  EXPECT_EQ(a.nan, b.nan) << "trial " << trial;
}

TEST(CombineRows, Avx2PathEqualsTheScalarLoopBitForBit) {
  if (!combine_rows_use_avx2()) GTEST_SKIP() << "this CPU has no AVX2: only the scalar loop runs here";
  std::mt19937_64 rng(20261206);
  static const double weights[] = {0.25, -0.5, 0.0, -0.0, 1e-30, 3.0e38, 0.123456789, 2.5, kInf};
  int tails = 0, nans = 0, bf16_overflows = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t H = 1 + static_cast<int64_t>(rng() % 70);
    tails += H % 4 != 0;
    const bool bf16_products = trial % 2 == 0;
    CombineAccumulators fast(H), slow(H);
    fast.reset();
    slow.reset();
    for (int row = 0; row < 1 + trial % 5; ++row) {  // several rows: accumulated values feed the next
      std::vector<double> lo(static_cast<size_t>(H)), hi(static_cast<size_t>(H));
      for (int64_t o = 0; o < H; ++o) {
        const double x = draw_value(rng), y = draw_value(rng);
        // Mostly ordered intervals (as the GEMM2 stage makes them), some reversed or degenerate.
        lo[static_cast<size_t>(o)] = rng() % 8 == 0 ? y : std::fmin(x, y);
        hi[static_cast<size_t>(o)] = rng() % 8 == 0 ? x : std::fmax(x, y);
        if (rng() % 16 == 0) hi[static_cast<size_t>(o)] = lo[static_cast<size_t>(o)];
      }
      const double w = rng() % 3 == 0 ? weights[rng() % (sizeof(weights) / sizeof(weights[0]))]
                                      : std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng), -3);
      accumulate_weighted_row(w, lo.data(), hi.data(), bf16_products, fast);
      accumulate_weighted_row_scalar(w, lo.data(), hi.data(), bf16_products, slow);
    }
    expect_same(fast, slow, trial);
    for (int64_t o = 0; o < H; ++o) {
      nans += slow.nan[static_cast<size_t>(o)] != 0;
      bf16_overflows += std::isinf(slow.hi[static_cast<size_t>(o)]) && bf16_products;
    }
  }
  // The sweep reached the branches it is about.
  EXPECT_GT(tails, 100);
  EXPECT_GT(nans, 100);
  EXPECT_GT(bf16_overflows, 10);
}

TEST(CombineRows, Avx2FinishEqualsTheScalarFinishBitForBit) {
  if (!combine_rows_use_avx2()) GTEST_SKIP() << "this CPU has no AVX2: only the scalar loop runs here";
  std::mt19937_64 rng(7);
  int unknown = 0, known = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t H = 1 + static_cast<int64_t>(rng() % 70);
    CombineAccumulators acc(H);
    acc.reset();
    const int rows = trial % 9;  // 0: an empty token
    for (int row = 0; row < rows; ++row) {
      std::vector<double> lo(static_cast<size_t>(H)), hi(static_cast<size_t>(H));
      for (int64_t o = 0; o < H; ++o) {
        const double x = draw_value(rng), y = draw_value(rng);
        lo[static_cast<size_t>(o)] = std::fmin(x, y);
        hi[static_cast<size_t>(o)] = rng() % 16 == 0 ? lo[static_cast<size_t>(o)] : std::fmax(x, y);
      }
      accumulate_weighted_row(std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng), -2), lo.data(),
                              hi.data(), trial % 2 == 0, acc);
    }
    const double slots = static_cast<double>(rows);
    const CombineFinish f{.gamma = slots * 0x1p-24 / (1 - slots * 0x1p-24),
                          .floor_n = slots * 0x1p-126,
                          .rsf_in_combine = trial % 3 == 0,
                          .rsf = trial % 6 == 0 ? 2.5f : 0.3f,
                          .bf16_output = trial % 4 != 1};
    // Row 1 of a two-row stage: the finish writes at its row's offset and nowhere else.
    StageExpectation fast = make_stage("output", 2, H), slow = make_stage("output", 2, H);
    finish_routed_columns(acc, f, fast, 1);
    finish_routed_columns_scalar(acc, f, slow, 1);
    // Exact bits here: the stored NaN is the one constant (stage_types.h kNaN).
    const auto exact = [](const std::vector<double>& v) {
      std::vector<uint64_t> b(v.size());
      for (size_t i = 0; i < v.size(); ++i) b[i] = std::bit_cast<uint64_t>(v[i]);
      return b;
    };
    EXPECT_EQ(exact(fast.expected), exact(slow.expected)) << "trial " << trial;
    EXPECT_EQ(exact(fast.bound), exact(slow.bound)) << "trial " << trial;
    for (int64_t o = 0; o < H; ++o) {
      EXPECT_EQ(fast.bound[static_cast<size_t>(o)], 0.0) << "row 0 written";
      (std::isnan(slow.expected[static_cast<size_t>(H + o)]) ? unknown : known) += 1;
    }
  }
  EXPECT_GT(unknown, 500);
  EXPECT_GT(known, 500);
}

TEST(CombineRows, NanWeightMarksEveryColumnAndAddsNothing) {
  CombineAccumulators a(9);
  a.reset();
  const std::vector<double> lo(9, 1.0), hi(9, 2.0);
  accumulate_weighted_row(0.5, lo.data(), hi.data(), false, a);
  const std::vector<double> before = a.lo;
  accumulate_weighted_row(kNaN, lo.data(), hi.data(), false, a);
  EXPECT_EQ(a.nan, std::vector<char>(9, 1));
  EXPECT_EQ(bits_of(a.lo), bits_of(before));
  // 0.5 x [1, 2] widened by its fp32 rounding: [0.5 - u - floor, 1 + u + floor], u = 2^-24 x 1.
  EXPECT_LT(a.lo[0], 0.5);
  EXPECT_GT(a.hi[0], 1.0);
  EXPECT_LT(a.hi[0], 1.0 + 0x1p-23);
}

}  // namespace
}  // namespace moefuzz::stages
