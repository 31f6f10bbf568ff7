// Exact FP8 E4M3 block dot (oracles/fp8_block_dot.h): every SIMD loop this CPU has (AVX-512, AVX2;
// oracles/fp8_block_dot_loops.h) against the scalar loop, bit for bit, on hostile rows (all 256 codes,
// subnormals, NaN codes, +-448, zero blocks, partial last blocks), and both against an independent exact
// evaluation (cpp_bin_float_100 on values decoded from the bit fields here, not by core/e4m3).
#include "oracles/fp8_block_dot.h"
#include "oracles/fp8_block_dot_loops.h"

#include <gtest/gtest.h>

#include <boost/multiprecision/cpp_bin_float.hpp>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace moefuzz {
namespace {

using Exact = boost::multiprecision::cpp_bin_float_100;  // 332 bits: every sum here is exact

// E4M3 from its bit fields (s eeee mmm, bias 7, subnormals m 2^-9, 0x7F/0xFF NaN).
double decode_bits(uint8_t c) {
  if ((c & 0x7F) == 0x7F) return NAN;
  const int e = (c >> 3) & 0xF, m = c & 7;
  const double mag = e == 0 ? std::ldexp(m, -9) : std::ldexp(8 + m, e - 10);
  return (c & 0x80) ? -mag : mag;
}

struct Rows {
  int64_t n = 0, k = 0;
  std::vector<uint8_t> codes;  // n x k
  uint8_t& at(int64_t r, int64_t i) { return codes[static_cast<size_t>(r * k + i)]; }
};

// Hostile activation rows of length k: every code in several orders, +-448, subnormals only,
// alternating signs, a zero block, NaN codes, random bytes; rows past 9 repeat the patterns with
// other random bytes.
Rows hostile_rows(int64_t k, uint64_t seed, int64_t n = 9) {
  std::mt19937_64 g(seed);
  Rows r{n, k, std::vector<uint8_t>(static_cast<size_t>(n * k))};
  for (int64_t row = 0; row < n; ++row)
    for (int64_t i = 0; i < k; ++i) {
      uint8_t& c = r.at(row, i);
      switch (row % 9) {
        case 0:
          c = static_cast<uint8_t>(i + row);
          break;
        case 1:
          c = static_cast<uint8_t>(255 - i);
          break;
        case 2:
          c = (i & 1) ? 0xFE : 0x7E;  // -448, +448
          break;
        case 3:
          c = static_cast<uint8_t>((i % 7 + 1) | (i & 8 ? 0x80 : 0));  // subnormals
          break;
        case 4:
          c = (i / 128 == 1) ? 0 : static_cast<uint8_t>(g());  // block 1 zero
          break;
        case 5:
          c = static_cast<uint8_t>(g());  // may hold NaN codes
          break;
        case 6:
          c = 0x7E;  // all +448
          break;
        case 7:
          c = static_cast<uint8_t>(g() % 0x7F);  // no NaN, positive
          break;
        default:
          c = static_cast<uint8_t>((g() % 0x7F) | (g() & 0x80));  // no NaN
      }
    }
  return r;
}

// The SIMD loops this CPU runs (at least one on x86-64: RunsTheSimdLoopsOnThisMachine).
std::vector<Fp8DotLoop> simd_loops() {
  std::vector<Fp8DotLoop> out;
  for (Fp8DotLoop l : {Fp8DotLoop::kAvx512, Fp8DotLoop::kAvx2})
    if (fp8_block_dot_loop_available(l)) out.push_back(l);
  return out;
}

void expect_same(const Fp8BlockDot& x, const Fp8BlockDot& y) {
  ASSERT_EQ(x.cols, y.cols);
  ASSERT_EQ(x.sum, y.sum);
  ASSERT_EQ(x.abs_sum, y.abs_sum);
  ASSERT_EQ(x.nan, y.nan);
}

// Exact per-block sums from decode_bits (NaN elements contribute 0, as documented).
void expect_exact(const Rows& a, int64_t ra, const uint8_t* w, const Fp8BlockDot& d) {
  bool nan = false;
  for (int64_t b = 0; b < d.blocks(); ++b) {
    Exact s = 0, m = 0;
    for (int64_t i = b * 128; i < std::min<int64_t>(a.k, b * 128 + 128); ++i) {
      const double x = decode_bits(a.codes[static_cast<size_t>(ra * a.k + i)]), y = decode_bits(w[i]);
      if (std::isnan(x) || std::isnan(y)) {
        nan = true;
        continue;
      }
      const Exact p = Exact(x) * Exact(y);
      s += p;
      m += abs(p);
    }
    ASSERT_EQ(s, Exact(d.block_value(b))) << "block " << b;
    ASSERT_EQ(m, Exact(d.block_abs_value(b))) << "block " << b;
    ASSERT_EQ(s * Exact(0x1p18), Exact(d.sum[static_cast<size_t>(b)]));
  }
  EXPECT_EQ(nan, d.nan);
}

TEST(Fp8BlockDot, RunsTheSimdLoopsOnThisMachine) {
  // CI runs on x86-64 with AVX2/FMA/F16C: the SIMD loops must be the ones tested, not skipped, and
  // fp8_block_dot_rows must use the widest one the CPU has (checked here independently).
  std::printf("fp8_block_dot loop: %s; SIMD loops tested:", fp8_dot_loop_name(fp8_block_dot_best_loop()));
  for (Fp8DotLoop l : simd_loops()) std::printf(" %s", fp8_dot_loop_name(l));
  std::printf("\n");
#if defined(__x86_64__)
  EXPECT_TRUE(fp8_block_dot_uses_simd());
  EXPECT_TRUE(fp8_block_dot_loop_available(Fp8DotLoop::kAvx2));
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  EXPECT_EQ(fp8_block_dot_loop_available(Fp8DotLoop::kAvx512), avx512);
  EXPECT_EQ(fp8_block_dot_best_loop(), avx512 ? Fp8DotLoop::kAvx512 : Fp8DotLoop::kAvx2);
#endif
  EXPECT_TRUE(fp8_block_dot_loop_available(Fp8DotLoop::kScalar));
}

TEST(Fp8BlockDot, HandComputedBlocks) {
  // K = 130: block 0 = [0, 128), block 1 = [128, 130) (zero-padded).
  std::vector<uint8_t> a(130, 0), w(130, 0);
  a[0] = 0x7E;    // 448
  w[0] = 0x01;    // 2^-9 (smallest subnormal)
  a[5] = 0xB8;    // -1
  w[5] = 0x40;    // 2
  a[129] = 0x7E;  // 448
  w[129] = 0xFE;  // -448
  const DecodedFp8 da = DecodedFp8::from_codes(1, 130, a);
  Fp8BlockDot d;
  fp8_block_dot_rows(da, 0, 1, Fp8Row{w.data(), 130}, &d);
  ASSERT_EQ(d.blocks(), 2);
  EXPECT_EQ(d.block_length(1), 2);
  EXPECT_EQ(d.block_value(0), 448.0 / 512 - 2);  // 0.875 - 2
  EXPECT_EQ(d.block_abs_value(0), 448.0 / 512 + 2);
  EXPECT_EQ(d.block_value(1), -448.0 * 448);
  EXPECT_EQ(d.block_abs_value(1), 448.0 * 448);
  EXPECT_FALSE(d.nan);
  EXPECT_EQ(da.operand(0, 5), -1.0);
}

TEST(Fp8BlockDot, LargestBlockSumIsExact) {
  // 128 products of 448 * 448: the int64 margin of the header (2^42.7 units).
  std::vector<uint8_t> a(256, 0x7E), w(256, 0x7E);
  w[200] = 0xFE;
  const DecodedFp8 da = DecodedFp8::from_codes(1, 256, a);
  Fp8BlockDot d, s;
  fp8_block_dot_rows(da, 0, 1, Fp8Row{w.data(), 256}, &d);
  fp8_block_dot_rows_scalar(da, 0, 1, Fp8Row{w.data(), 256}, &s);
  EXPECT_EQ(d.sum[0], int64_t{128} * 229376 * 229376);
  EXPECT_EQ(d.sum[1], int64_t{126} * 229376 * 229376);
  EXPECT_EQ(d.abs_sum[1], int64_t{128} * 229376 * 229376);
  expect_same(d, s);
}

TEST(Fp8BlockDot, SimdMatchesScalarAndExactOnHostileRows) {
  int64_t checked = 0, nan_dots = 0;
  for (Fp8DotLoop loop : simd_loops())
    for (int64_t k : {1, 7, 16, 127, 128, 129, 200, 255, 256, 257, 384, 1000, 2048}) {
      const Rows a = hostile_rows(k, 17 + static_cast<uint64_t>(k));
      const Rows w = hostile_rows(k, 991 + static_cast<uint64_t>(k));
      const DecodedFp8 da = DecodedFp8::from_codes(a.n, k, a.codes);
      for (int64_t rw = 0; rw < w.n; ++rw) {
        const Fp8Row row{w.codes.data() + rw * k, k};
        for (int na : {1, 2, 3, 4, 5, 9}) {
          for (int64_t ra = 0; ra + na <= a.n; ra += na) {
            std::vector<Fp8BlockDot> fast(static_cast<size_t>(na)), ref(static_cast<size_t>(na));
            fp8_block_dot_rows_with(loop, da, ra, na, row, fast.data());
            fp8_block_dot_rows_scalar(da, ra, na, row, ref.data());
            for (int r = 0; r < na; ++r) {
              expect_same(fast[static_cast<size_t>(r)], ref[static_cast<size_t>(r)]);
              if (na == 1) expect_exact(a, ra + r, row.codes, fast[static_cast<size_t>(r)]);
              nan_dots += fast[static_cast<size_t>(r)].nan ? 1 : 0;
              ++checked;
            }
          }
        }
      }
    }
  std::printf("%lld dots compared, %lld of them flagged NaN\n", static_cast<long long>(checked),
              static_cast<long long>(nan_dots));
  EXPECT_GT(nan_dots, 0);
}

TEST(Fp8BlockDot, EveryRowCountFrom1To17) {
  // The AVX-512 loop runs rows in groups of up to 8 (17 rows: 5, 6, 6) with 1, 2 or 4 accumulators
  // per row and K in groups of 8 blocks (a partial last group: K = 300, 1500, 2000), the AVX2 loop
  // rows in groups of 4: every count, at an offset row, reusing outputs sized for another K (they
  // must be resized and overwritten).
  int64_t checked = 0;
  for (Fp8DotLoop loop : simd_loops())
    for (int64_t k : {1, 128, 129, 300, 1024, 1500, 2000, 2048}) {
      const Rows a = hostile_rows(k, 7 + static_cast<uint64_t>(k), 19);
      const Rows w = hostile_rows(k, 77 + static_cast<uint64_t>(k));
      const DecodedFp8 da = DecodedFp8::from_codes(a.n, k, a.codes);
      for (int64_t rw : {0, 3, 5, 8}) {  // every code, subnormals, NaN codes, signed random
        const Fp8Row row{w.codes.data() + rw * k, k};
        for (int na = 1; na <= 17; ++na) {
          const int64_t ra = na % 3;
          std::vector<Fp8BlockDot> fast(static_cast<size_t>(na)), ref(static_cast<size_t>(na));
          for (Fp8BlockDot& d : fast) d.sum.assign(40, 123), d.abs_sum.assign(40, 456), d.nan = true;
          fp8_block_dot_rows_with(loop, da, ra, na, row, fast.data());
          fp8_block_dot_rows_scalar(da, ra, na, row, ref.data());
          for (int r = 0; r < na; ++r) {
            expect_same(fast[static_cast<size_t>(r)], ref[static_cast<size_t>(r)]);
            ++checked;
          }
        }
      }
    }
  std::printf("%lld dots compared\n", static_cast<long long>(checked));
  EXPECT_GT(checked, 0);
}

TEST(Fp8BlockDot, NanCodesFlagTheDotAndAddNothing) {
  // 0x7F and 0xFF in the weight (in a full block and in the zero-padded last one) or in an
  // activation row: the dot is flagged and the sums are those of the other elements.
  const int64_t k = 300;
  std::vector<uint8_t> a(2 * k, 0x38), w(k, 0xC0);  // a = 1, w = -2
  a[k + 7] = 0xFF;                                  // row 1 holds a NaN code
  std::vector<uint8_t> wn = w;
  wn[5] = 0x7F;
  wn[290] = 0xFF;
  const DecodedFp8 da = DecodedFp8::from_codes(2, k, a);
  for (Fp8DotLoop loop : {Fp8DotLoop::kScalar, Fp8DotLoop::kAvx2, Fp8DotLoop::kAvx512}) {
    if (!fp8_block_dot_loop_available(loop)) continue;
    Fp8BlockDot d[2], n[2];
    fp8_block_dot_rows_with(loop, da, 0, 2, Fp8Row{w.data(), k}, d);
    fp8_block_dot_rows_with(loop, da, 0, 2, Fp8Row{wn.data(), k}, n);
    EXPECT_FALSE(d[0].nan) << fp8_dot_loop_name(loop);
    EXPECT_TRUE(d[1].nan) << fp8_dot_loop_name(loop);
    EXPECT_TRUE(n[0].nan && n[1].nan) << fp8_dot_loop_name(loop);
    EXPECT_EQ(d[0].block_value(0), -256.0);
    EXPECT_EQ(d[0].block_abs_value(2), 88.0);  // 44 elements in the last block
    EXPECT_EQ(d[1].block_value(0), -254.0);    // element 7 adds nothing
    EXPECT_EQ(n[0].block_value(0), -254.0);    // element 5 adds nothing
    EXPECT_EQ(n[0].block_value(2), -86.0);     // element 290 adds nothing
    EXPECT_EQ(n[1].block_value(0), -252.0);
  }
}

TEST(Fp8BlockDot, ExactOnRandomRows) {
  std::mt19937_64 g(5);
  for (int t = 0; t < 300; ++t) {
    const int64_t k = 1 + static_cast<int64_t>(g() % 1500);
    Rows a{4, k, std::vector<uint8_t>(static_cast<size_t>(4 * k))};
    std::vector<uint8_t> w(static_cast<size_t>(k));
    for (auto& c : a.codes) c = static_cast<uint8_t>(g() % 0x7F) | static_cast<uint8_t>(g() & 0x80);
    for (auto& c : w) c = static_cast<uint8_t>(g() % 0x7F) | static_cast<uint8_t>(g() & 0x80);
    const DecodedFp8 da = DecodedFp8::from_codes(4, k, a.codes);
    Fp8BlockDot d[4];
    fp8_block_dot_rows(da, 0, 4, Fp8Row{w.data(), k}, d);
    for (int r = 0; r < 4; ++r) expect_exact(a, r, w.data(), d[r]);
  }
}

TEST(Fp8BlockDot, RejectsMismatchedOperands) {
  const DecodedFp8 da(2, 128);
  std::vector<uint8_t> w(127);
  Fp8BlockDot d[2];
  EXPECT_THROW(fp8_block_dot_rows(da, 0, 1, Fp8Row{w.data(), 127}, d), std::exception);
  std::vector<uint8_t> w2(128);
  EXPECT_THROW(fp8_block_dot_rows(da, 1, 2, Fp8Row{w2.data(), 128}, d), std::exception);
  EXPECT_THROW(DecodedFp8::from_codes(2, 128, w2), std::exception);
}

}  // namespace
}  // namespace moefuzz
