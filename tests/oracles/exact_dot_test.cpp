// Exact NVFP4 dot: hand-computed values, the SIMD loop against the scalar loop and against an
// independent long-double / exact-rational evaluation, extreme magnitudes, NaN scales, W4A16.
#include "oracles/exact_dot.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <vector>

#include "core/bf16.h"
#include "core/e2m1.h"
#include "core/e4m3.h"
#include "core/rng.h"

namespace moefuzz {
namespace {

Nvfp4Matrix random_matrix(int64_t rows, int64_t cols, uint64_t seed, bool extreme_scales) {
  Nvfp4Matrix m(rows, cols);
  Stream s(seed, "exact_dot");
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < cols; ++i)
      m.set_code(r, i, static_cast<uint8_t>(s.uniform_int(static_cast<uint64_t>(r * cols + i), 0, 15)));
    for (int64_t b = 0; b < cols / 16; ++b)
      m.scale(r, b) =
          extreme_scales
              ? 0x7E
              : static_cast<uint8_t>(s.uniform_int(static_cast<uint64_t>(1'000'000 + r * cols + b), 0, 0x7E));
  }
  return m;
}

// Independent exact evaluation: integer arithmetic on (2 * e2m1) * (e4m3 * 512) per element.
__int128 reference_sum(const Nvfp4Matrix& a, int64_t ra, const Nvfp4Matrix& w, int64_t rw) {
  __int128 s = 0;
  for (int64_t i = 0; i < a.cols; ++i) {
    const auto two_e2m1 = [](uint8_t c) { return static_cast<int64_t>(e2m1_to_float(c) * 2); };
    const auto s512 = [](uint8_t b) { return static_cast<int64_t>(e4m3_to_float(b) * 512); };
    s += static_cast<__int128>(two_e2m1(a.code(ra, i)) * s512(a.scale(ra, i / 16))) *
         (two_e2m1(w.code(rw, i)) * s512(w.scale(rw, i / 16)));
  }
  return s;
}

TEST(ExactDot, HandComputedSmallCase) {
  Nvfp4Matrix a(1, 16), w(1, 16);
  a.set_code(0, 0, 0x7);  // 6
  a.set_code(0, 3, 0x9);  // -0.5
  w.set_code(0, 0, 0x3);  // 1.5
  w.set_code(0, 3, 0x5);  // 3
  a.scale(0, 0) = e4m3_from_float(448.0f);
  w.scale(0, 0) = e4m3_from_float(0.125f);
  const DecodedNvfp4 da = DecodedNvfp4::from_matrix(a), dw = DecodedNvfp4::from_matrix(w);
  const ExactDot d = exact_dot(da, 0, dw, 0);
  // (6*448)(1.5*0.125) + (-0.5*448)(3*0.125) = 504 - 84 = 420; magnitudes 504 + 84 = 588.
  EXPECT_EQ(d.value(), 420.0);
  EXPECT_EQ(d.abs_value(), 588.0);
  EXPECT_EQ(exact_dot_scalar(da, 0, dw, 0).value(), 420.0);
}

TEST(ExactDot, SimdAndScalarAgreeWithIndependentIntegerSum) {
  for (int64_t k : {16, 32, 48, 128, 144, 1024, 2064}) {
    for (bool extreme : {false, true}) {
      const Nvfp4Matrix a = random_matrix(3, k, 11 + k, extreme), w = random_matrix(5, k, 97 + k, extreme);
      const DecodedNvfp4 da = DecodedNvfp4::from_matrix(a), dw = DecodedNvfp4::from_matrix(w);
      for (int64_t ra = 0; ra < 3; ++ra)
        for (int64_t rw = 0; rw < 5; ++rw) {
          const __int128 ref = reference_sum(a, ra, w, rw);  // in units of 2^-20
          const ExactDot simd = exact_dot(da, ra, dw, rw), scalar = exact_dot_scalar(da, ra, dw, rw);
          ASSERT_TRUE(simd.sum == ref) << "K=" << k;
          ASSERT_TRUE(scalar.sum == ref) << "K=" << k;
          ASSERT_TRUE(simd.abs_sum == scalar.abs_sum);
          ASSERT_GE(simd.abs_value(), std::fabs(simd.value()));
        }
    }
  }
  std::printf("exact_dot SIMD path: %s\n", exact_dot_uses_simd() ? "AVX2" : "scalar");
}

TEST(ExactDot, LongRowsWithSaturatedScalesDoNotOverflow) {
  // All operands +-2688: each product 2688^2 = 7225344; K = 65536 gives 4.7e11 * 2^20 - beyond int64 lanes
  // without the periodic flush to __int128.
  const int64_t k = 65536;
  Nvfp4Matrix a(1, k), w(1, k);
  for (int64_t i = 0; i < k; ++i) {
    a.set_code(0, i, 0x7);
    w.set_code(0, i, 0x7);
  }
  for (int64_t b = 0; b < k / 16; ++b) a.scale(0, b) = w.scale(0, b) = 0x7E;
  const ExactDot d = exact_dot(DecodedNvfp4::from_matrix(a), 0, DecodedNvfp4::from_matrix(w), 0);
  EXPECT_EQ(d.value(), 2688.0 * 2688.0 * static_cast<double>(k));
}

TEST(ExactDot, NaNScaleGivesNaN) {
  Nvfp4Matrix a(1, 32), w(1, 32);
  a.set_code(0, 0, 0x2);
  a.scale(0, 1) = kE4m3NaNCode;
  const ExactDot d = exact_dot(DecodedNvfp4::from_matrix(a), 0, DecodedNvfp4::from_matrix(w), 0);
  EXPECT_TRUE(std::isnan(d.value()));
}

TEST(ExactDot, W4A16IsCertifiedExactForOrdinaryRows) {
  const Nvfp4Matrix w = random_matrix(1, 64, 5, false);
  std::vector<float> x(64);
  Stream s(3, "x");
  long double ref = 0;
  const DecodedNvfp4 dw = DecodedNvfp4::from_matrix(w);
  for (int i = 0; i < 64; ++i) {
    x[static_cast<size_t>(i)] = round_to_bf16(static_cast<float>(s.normal(static_cast<uint64_t>(i))));
    ref += static_cast<long double>(x[static_cast<size_t>(i)]) * dw.operand(0, i);
  }
  const W4A16Dot d = w4a16_dot(x, dw, 0);
  EXPECT_TRUE(d.exact);
  EXPECT_EQ(static_cast<long double>(d.value), ref);
  // A huge dynamic range defeats the certificate, and the error bound covers the double sum instead.
  x[0] = 0x1p100f;
  x[1] = 0x1p-100f;
  const W4A16Dot wide = w4a16_dot(x, dw, 0);
  if (!wide.exact) {
    EXPECT_GT(wide.error_bound, 0);
  }
}

// The vectorized flip magnitude never falls below the exact sum and stays within a few ulps of it.
TEST(ExactDot, WeightedAbsSumIsATightUpperBound) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const int64_t cols = 16 * static_cast<int64_t>(1 + seed * 7 % 40);
    const Nvfp4Matrix m = random_matrix(2, cols, seed, false);
    const DecodedNvfp4 d = DecodedNvfp4::from_matrix(m);
    Stream s(seed, "r");
    std::vector<double> r(static_cast<size_t>(cols));
    for (int64_t i = 0; i < cols; ++i)
      r[static_cast<size_t>(i)] = i % 3 == 0 ? 0.0 : std::fabs(s.normal(static_cast<uint64_t>(i))) * 1e-3;
    for (int64_t row = 0; row < 2; ++row) {
      long double exact = 0;
      for (int64_t i = 0; i < cols; ++i)
        exact += static_cast<long double>(r[static_cast<size_t>(i)]) * std::fabs(d.operand(row, i));
      const double got = weighted_abs_sum(r, d, row);
      EXPECT_GE(static_cast<long double>(got), exact * (1 - 1e-18L));  // long double sum: 2^-64 per term
      EXPECT_LE(static_cast<long double>(got), exact * (1 + 1e-12L) + 1e-300L);
    }
  }
}

// The table-driven decoder against set_row (the per-element definition), NaN scale bytes included.
TEST(ExactDot, PackedDecoderAgreesWithSetRow) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const int64_t rows = 3, cols = 16 * static_cast<int64_t>(1 + seed * 5 % 19);
    Nvfp4Matrix m = random_matrix(rows, cols, seed, false);
    m.scale(1, 0) = kE4m3NaNCode;
    m.scale(2, cols / 16 - 1) = 0xFF;
    const DecodedNvfp4 fast = DecodedNvfp4::from_matrix(m);
    DecodedNvfp4 slow(rows, cols);
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<uint8_t> codes(static_cast<size_t>(cols)), sc(static_cast<size_t>(cols / 16));
      for (int64_t i = 0; i < cols; ++i) codes[static_cast<size_t>(i)] = m.code(r, i);
      for (int64_t b = 0; b < cols / 16; ++b) sc[static_cast<size_t>(b)] = m.scale(r, b);
      slow.set_row(r, codes, sc);
    }
    for (int64_t r = 0; r < rows; ++r) {
      EXPECT_EQ(fast.row_has_nan(r), slow.row_has_nan(r));
      for (int64_t i = 0; i < fast.groups() * 128; ++i) {
        ASSERT_EQ(fast.code_row(r)[i], slow.code_row(r)[i]);
        ASSERT_EQ(fast.abs_code_row(r)[i], slow.abs_code_row(r)[i]);
      }
      for (int64_t i = 0; i < fast.groups() * 8; ++i) {
        ASSERT_EQ(fast.scale_row(r)[i], slow.scale_row(r)[i]);
        ASSERT_EQ(fast.abs_scale_row(r)[i], slow.abs_scale_row(r)[i]);
      }
    }
  }
}

// The blocked loop against the one-operand loop, and both against a wide exact sum: bf16 and full
// fp32 activations, wide dynamic range, a NaN scale row, infinities.
TEST(ExactDot, W4A16BlockedLoopAgreesWithScalarLoop) {
  for (uint64_t seed = 1; seed <= 60; ++seed) {
    const int64_t cols = 16 * static_cast<int64_t>(1 + seed % 23);
    Nvfp4Matrix w = random_matrix(2, cols, seed, false);
    if (seed % 7 == 0) w.scale(1, 0) = kE4m3NaNCode;
    const DecodedNvfp4 dw = DecodedNvfp4::from_matrix(w);
    Stream s(seed, "x");
    std::vector<float> x(static_cast<size_t>(cols));
    for (int64_t i = 0; i < cols; ++i) {
      float v = static_cast<float>(s.normal(static_cast<uint64_t>(i)));
      if (seed % 3 == 0) v = std::ldexp(v, static_cast<int>(i % 61) - 30);  // wide range, fp32 grid
      if (seed % 2 == 0) v = round_to_bf16(v);
      x[static_cast<size_t>(i)] = v;
    }
    if (seed % 11 == 0) x[0] = INFINITY;
    for (int64_t r = 0; r < 2; ++r) {
      const W4A16Dot fast = w4a16_dot(x, dw, r), slow = w4a16_dot_scalar(x, dw, r);
      SCOPED_TRACE(testing::Message() << "seed " << seed << " row " << r);
      if (std::isnan(slow.value)) {
        EXPECT_TRUE(std::isnan(fast.value));
        continue;
      }
      EXPECT_EQ(fast.exact, slow.exact);
      if (fast.exact) {
        EXPECT_EQ(fast.value, slow.value);
        long double ref = 0;  // 64-bit significand: exact for these certified sums
        for (int64_t i = 0; i < cols; ++i)
          ref += static_cast<long double>(x[static_cast<size_t>(i)]) * dw.operand(r, i);
        if (std::isfinite(fast.value)) {
          EXPECT_EQ(static_cast<long double>(fast.value), ref);
        }
      } else {
        EXPECT_LE(std::fabs(fast.value - slow.value), fast.error_bound + slow.error_bound);
      }
    }
  }
}

// Every scale byte (negative scales and both NaN bytes included) through the packed-row decoder.
Nvfp4Matrix any_scale_matrix(int64_t rows, int64_t cols, uint64_t seed) {
  Nvfp4Matrix m = random_matrix(rows, cols, seed, false);
  Stream s(seed, "any_scale");
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < cols / 16; ++b) {
      uint8_t byte = static_cast<uint8_t>(s.uniform_int(static_cast<uint64_t>(r * cols + b), 0, 255));
      if ((byte & 0x7F) == 0x7F && (r + b) % 5 != 0) byte ^= 0x01;  // NaN rows: a few, not most
      m.scale(r, b) = byte;
    }
  return m;
}

// exact_dot_rows (packed weight rows, 1-4 activation rows at once) against exact_dot_rows_scalar,
// exact_dot on the decoded weight row and the independent integer sum: partial groups, every scale
// byte, saturated scales.
TEST(ExactDot, PackedRowsAgreeWithDecodedDotAndIndependentSum) {
  for (int64_t k : {16, 32, 48, 64, 80, 128, 144, 208, 1024, 2064}) {
    for (int variant = 0; variant < 3; ++variant) {
      const Nvfp4Matrix a =
          variant == 2 ? random_matrix(5, k, 31 + k, true) : any_scale_matrix(5, k, 31 + k + variant);
      const Nvfp4Matrix w =
          variant == 2 ? random_matrix(4, k, 77 + k, true) : any_scale_matrix(4, k, 77 + k + variant);
      const DecodedNvfp4 da = DecodedNvfp4::from_matrix(a), dw = DecodedNvfp4::from_matrix(w);
      for (int64_t rw = 0; rw < 4; ++rw) {
        const PackedNvfp4Row pw = packed_row(w, rw);
        EXPECT_EQ(packed_row_has_nan(pw), dw.row_has_nan(rw));
        for (int64_t i = 0; i < k; ++i) {
          const double x = packed_operand(pw, i), y = dw.operand(rw, i);
          ASSERT_TRUE(x == y || (std::isnan(x) && std::isnan(y))) << "K=" << k << " i=" << i;
        }
        for (int na = 1; na <= 4; ++na)
          for (int64_t ra = 0; ra + na <= 5; ++ra) {
            ExactDot fast[4], slow[4];
            exact_dot_rows(da, ra, na, pw, fast);
            exact_dot_rows_scalar(da, ra, na, pw, slow);
            for (int r = 0; r < na; ++r) {
              SCOPED_TRACE(testing::Message() << "K=" << k << " variant " << variant << " na " << na << " ra "
                                              << ra + r << " rw " << rw);
              const ExactDot ref = exact_dot(da, ra + r, dw, rw);
              ASSERT_EQ(fast[r].nan, ref.nan);
              ASSERT_EQ(slow[r].nan, ref.nan);
              ASSERT_TRUE(fast[r].sum == ref.sum && fast[r].abs_sum == ref.abs_sum);
              ASSERT_TRUE(slow[r].sum == ref.sum && slow[r].abs_sum == ref.abs_sum);
              if (!ref.nan) {
                ASSERT_TRUE(ref.sum == reference_sum(a, ra + r, w, rw));
              }
            }
          }
      }
    }
  }
}

TEST(ExactDot, PackedRowsLongSaturatedRowsDoNotOverflow) {
  const int64_t k = 65536;  // > 2^12 groups: exercises the int64 -> __int128 flush
  Nvfp4Matrix a(4, k), w(1, k);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t i = 0; i < k; ++i) a.set_code(r, i, r % 2 == 0 ? 0x7 : 0xF);
  for (int64_t i = 0; i < k; ++i) w.set_code(0, i, 0x7);
  for (int64_t b = 0; b < k / 16; ++b) {
    for (int64_t r = 0; r < 4; ++r) a.scale(r, b) = 0x7E;
    w.scale(0, b) = 0x7E;
  }
  ExactDot d[4];
  exact_dot_rows(DecodedNvfp4::from_matrix(a), 0, 4, packed_row(w, 0), d);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(d[r].value(), (r % 2 == 0 ? 1.0 : -1.0) * 2688.0 * 2688.0 * static_cast<double>(k));
    EXPECT_EQ(d[r].abs_value(), 2688.0 * 2688.0 * static_cast<double>(k));
  }
}

// A row's flip magnitude is the same bits whichever rows share the call (1..8 of them, at any
// position): the oracle's row memo (oracles/row_memo.h) takes a row computed beside other rows for the
// row computed beside none.
TEST(ExactDot, WeightedAbsSumRowsDoesNotDependOnTheOtherRows) {
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const int64_t cols = 16 * static_cast<int64_t>(1 + seed * 5 % 37);
    Nvfp4Matrix m = any_scale_matrix(1, cols, seed);
    for (int64_t b = 0; b < cols / 16; ++b)
      if ((m.scale(0, b) & 0x7F) == 0x7F) m.scale(0, b) = 0x38;  // finite: NaN rows are all NaN anyway
    Stream s(seed, "rows");
    // Flip radii of the size an unconditioned FC2 input gives (any magnitude would do: the test
    // compares bits, no tolerance).
    std::vector<std::vector<double>> r(8, std::vector<double>(static_cast<size_t>(cols)));
    for (size_t k = 0; k < 8; ++k)
      for (int64_t i = 0; i < cols; ++i)
        r[k][static_cast<size_t>(i)] = std::fabs(s.normal(static_cast<uint64_t>(i * 8) + k)) * 1e-3;
    double alone[8];
    for (int k = 0; k < 8; ++k) {
      const double* one[1] = {r[static_cast<size_t>(k)].data()};
      weighted_abs_sum_rows(one, 1, packed_row(m, 0), &alone[k]);
    }
    for (int na = 2; na <= 8; ++na)
      for (int first = 0; first + na <= 8; ++first) {
        const double* rp[8];
        for (int k = 0; k < na; ++k) rp[k] = r[static_cast<size_t>(first + k)].data();
        double got[8];
        weighted_abs_sum_rows(rp, na, packed_row(m, 0), got);
        for (int k = 0; k < na; ++k)
          EXPECT_EQ(std::bit_cast<uint64_t>(got[k]), std::bit_cast<uint64_t>(alone[first + k]))
              << "seed " << seed << ", row " << first + k << " of " << na << " rows from " << first;
      }
  }
}

// The multi-row flip magnitude against weighted_abs_sum on the decoded row and a long double sum.
TEST(ExactDot, WeightedAbsSumRowsIsATightUpperBound) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const int64_t cols = 16 * static_cast<int64_t>(1 + seed * 7 % 40);
    Nvfp4Matrix m = any_scale_matrix(2, cols, seed);
    for (int64_t b = 0; b < cols / 16; ++b)
      if ((m.scale(0, b) & 0x7F) == 0x7F) m.scale(0, b) = 0x38;  // row 0 finite, row 1 maybe NaN
    const DecodedNvfp4 d = DecodedNvfp4::from_matrix(m);
    Stream s(seed, "r");
    std::vector<std::vector<double>> r(4, std::vector<double>(static_cast<size_t>(cols)));
    for (size_t k = 0; k < 4; ++k)
      for (int64_t i = 0; i < cols; ++i)
        r[k][static_cast<size_t>(i)] = (i + static_cast<int64_t>(k)) % 3 == 0
                                           ? 0.0
                                           : std::fabs(s.normal(static_cast<uint64_t>(i * 4) + k)) * 1e-3;
    const double* rp[4] = {r[0].data(), r[1].data(), r[2].data(), r[3].data()};
    for (int64_t row = 0; row < 2; ++row)
      for (int na = 1; na <= 4; ++na) {
        double got[4];
        weighted_abs_sum_rows(rp, na, packed_row(m, row), got);
        for (int k = 0; k < na; ++k) {
          const double one = weighted_abs_sum(r[static_cast<size_t>(k)], d, row);
          if (d.row_has_nan(row)) {
            EXPECT_TRUE(std::isnan(got[k]));
            continue;
          }
          long double exact = 0;
          for (int64_t i = 0; i < cols; ++i)
            exact += static_cast<long double>(r[static_cast<size_t>(k)][static_cast<size_t>(i)]) *
                     std::fabs(d.operand(row, i));
          EXPECT_GE(static_cast<long double>(got[k]), exact * (1 - 1e-18L));
          EXPECT_LE(static_cast<long double>(got[k]), exact * (1 + 1e-12L) + 1e-300L);
          EXPECT_LE(std::fabs(got[k] - one), 1e-12 * one + 1e-300);
        }
      }
    // Sparse lists: every third column of r[0].
    for (int64_t row = 0; row < 2; ++row) {
      std::vector<std::pair<int32_t, double>> sparse;
      long double exact = 0;
      bool nan = false;
      for (int64_t i = 0; i < cols; i += 3) {
        sparse.push_back({static_cast<int32_t>(i), r[0][static_cast<size_t>(i)] + 1e-3});
        const double op = d.operand(row, i);
        nan |= std::isnan(op);
        exact += static_cast<long double>(sparse.back().second) * std::fabs(op);
      }
      const double got = sparse_weighted_abs_sum(sparse, packed_row(m, row));
      if (nan) {
        EXPECT_TRUE(std::isnan(got));
      } else {
        EXPECT_GE(static_cast<long double>(got), exact * (1 - 1e-18L));
        EXPECT_LE(static_cast<long double>(got), exact * (1 + 1e-12L) + 1e-300L);
      }
    }
    EXPECT_EQ(sparse_weighted_abs_sum({}, packed_row(m, 0)), 0.0);
  }
}

}  // namespace
}  // namespace moefuzz
