// The FP8 branch of the quantize and GEMM stages (oracles/stages/fp8_operands.h) against simulated
// correct kernels: each quantizes its own activation rows (IEEE variants exactly; kTriton with its
// scale up to 2 ulps off and codes one off) and accumulates every 128-block in fp32 in a random order
// before applying (P sa) sb. Whether the oracle is given the kernel's codes (admitted, conditioned) or
// not (FC1: the variant's codes plus deviations; FC2: the quantized interval centres plus the
// envelope), the kernel's accumulator must lie in the oracle's interval. A corrupted exposure fails
// the quantize stage.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/bf16.h"
#include "core/e4m3.h"
#include "core/errors.h"
#include "core/fp8_block_quant.h"
#include "core/fp8_group_quant.h"
#include "oracles/fp8_act_envelope.h"
#include "oracles/stages/fp8_operands.h"

namespace moefuzz::stages {
namespace {

constexpr int64_t kK = 384, kN = 8;

struct Kernel {
  Fp8GroupQuantized q;  // [1, K]
};

// What a correct kernel under model m quantizes (x: its fp32 inputs).
Fp8GroupQuantized kernel_quantize(const std::vector<float>& x, const Fp8ActQuantModel& m,
                                  std::mt19937_64& g) {
  Fp8GroupQuantized q = quantize_fp8_per_token_group(x, 1, kK, {.ue8m0 = m.ue8m0, .variant = m.variant});
  if (fp8_act_quant_is_ieee(m.variant)) return q;
  const Fp8ActQuantModel raw{.variant = m.variant};
  const Fp8GroupQuantized r = quantize_fp8_per_token_group(x, 1, kK, {.variant = m.variant});
  for (int64_t b = 0; b < kK / 128; ++b) {
    float s = r.scales[static_cast<size_t>(b)];
    const int ulps = static_cast<int>(g() % 5) - 2;
    for (int i = 0; i < std::abs(ulps); ++i) s = std::nextafter(s, ulps > 0 ? INFINITY : 0.0f);
    if (m.ue8m0) s = std::exp2(std::ceil(std::log2((g() & 1) ? std::fmax(s, 1e-10f) : s)));
    q.scales[static_cast<size_t>(b)] = s;
    for (int64_t i = b * 128; i < (b + 1) * 128; ++i) {
      uint8_t c = fp8_group_code(x[static_cast<size_t>(i)], s, raw);
      if (g() % 6 == 0) {
        const int rk = std::clamp(fp8_code_rank(c) + ((g() & 1) ? 1 : -1), -126, 126);
        c = rk < 0 ? static_cast<uint8_t>(0x80 | -rk) : static_cast<uint8_t>(rk);
      }
      q.codes[static_cast<size_t>(i)] = c;
    }
  }
  return q;
}

// The kernel's fp32 accumulator for output row o: per block an fp32 sum of the products in a random
// order, then acc += (P * sa) * sb.
float kernel_gemm(const Fp8GroupQuantized& a, const Fp8BlockQuantized& w, int64_t o, std::mt19937_64& g) {
  float acc = 0;
  for (int64_t b = 0; b < kK / 128; ++b) {
    std::vector<float> p;
    for (int64_t i = b * 128; i < (b + 1) * 128; ++i)
      p.push_back(e4m3_to_float(a.codes[static_cast<size_t>(i)]) * e4m3_to_float(w.code(o, i)));
    std::shuffle(p.begin(), p.end(), g);
    float s = 0;
    for (float v : p) s += v;
    acc += (s * a.scales[static_cast<size_t>(b)]) * w.scale(o / 128, b);
  }
  return acc;
}

std::vector<float> row(std::mt19937_64& g, int kind) {
  std::normal_distribution<double> n(0, 1);
  std::vector<float> x(kK);
  const int e = static_cast<int>(g() % 21) - 10;
  for (int64_t i = 0; i < kK; ++i) {
    double v = std::ldexp(n(g), e);
    if (kind == 1 && i % 128 != 5) v *= 0x1p-12;  // saturating groups: subnormal codes
    if (kind == 2 && i >= 128 && i < 256) v = 0;  // an all-zero group
    if (kind == 3) v *= 1e-8;                     // amax below both floors' effect
    x[static_cast<size_t>(i)] = round_to_bf16(static_cast<float>(v));
  }
  return x;
}

Fp8BlockQuantized weights(std::mt19937_64& g, bool ue8m0) {
  std::normal_distribution<double> n(0, 1);
  std::vector<float> w(kN * kK);
  for (auto& v : w) v = static_cast<float>(n(g) * 0.05);
  return quantize_fp8_block_weight(w, kN, kK, ue8m0);
}

const Fp8ActQuantModel kModels[] = {
    {.variant = Fp8GroupQuantVariant::kVllmCuda},
    {.variant = Fp8GroupQuantVariant::kDeepGemmReference},
    {.variant = Fp8GroupQuantVariant::kTriton},
    {.variant = Fp8GroupQuantVariant::kVllmCuda, .ue8m0 = true},
    {.variant = Fp8GroupQuantVariant::kDeepGemmReference, .ue8m0 = true},
    {.variant = Fp8GroupQuantVariant::kTriton, .ue8m0 = true},
};

TEST(Fp8Operands, KernelsLieInTheGemmIntervalConditionedOrNot) {
  std::mt19937_64 g(2024);
  const Fp8BlockGemmContract contract = fp8_contract(kFp32RoundToNearestAccumBits, 1);
  double worst_fc1 = 0, worst_fc2 = 0;
  int64_t checked = 0;
  for (int t = 0; t < 300; ++t) {
    const Fp8ActQuantModel m = kModels[t % 6];
    const Fp8BlockQuantized w = weights(g, m.ue8m0);
    const ExpandedRow er{.token = 0, .slot = 0, .expert = 0};
    // FC1: a point row.
    const std::vector<float> x = row(g, t % 4);
    const Fp8GroupQuantized kq = kernel_quantize(x, m, g);
    for (const bool exposed : {false, true}) {
      Fp8Operands ops(1, kK);
      Verdict fail;
      ASSERT_TRUE(fp8_quantize_point_row(
          "fc1_quant", er, 0, x, m,
          exposed ? Fp8ExposedRow{kq.codes.data(), kq.scales.data()} : Fp8ExposedRow{}, ops, fail))
          << fail.message;
      const Fp8GemmOperands d(ops);
      for (int64_t o = 0; o < kN; ++o) {
        Interval iv;
        fp8_gemm_rows(d, 0, 1, w, o, contract, &iv);
        const double got = kernel_gemm(kq, w, o, g);
        ASSERT_TRUE(got >= iv.lo && got <= iv.hi) << "t " << t << " o " << o << " exposed " << exposed;
        if (iv.hi > iv.lo) worst_fc1 = std::max(worst_fc1, std::fabs(got - iv.center()) / iv.radius());
        ++checked;
      }
    }
    // FC2: the kernel's inputs somewhere in intervals around x.
    std::vector<double> lo(kK), hi(kK), c(kK);
    std::vector<float> xk(kK);
    std::uniform_real_distribution<double> u(0, 1);
    const double width = std::ldexp(1.0, -static_cast<int>(g() % 12));
    for (int64_t i = 0; i < kK; ++i) {
      const double v = x[static_cast<size_t>(i)], r = width * std::fabs(v) * u(g);
      lo[static_cast<size_t>(i)] = v - r;
      hi[static_cast<size_t>(i)] = v + r;
      c[static_cast<size_t>(i)] = v;
      const float k = static_cast<float>(v - r + 2 * r * u(g));
      xk[static_cast<size_t>(i)] = k >= v - r && k <= v + r ? k : static_cast<float>(v);
    }
    const Fp8GroupQuantized kq2 = kernel_quantize(xk, m, g);
    for (const bool exposed : {false, true}) {
      Fp8Operands ops(1, kK);
      Verdict fail;
      ASSERT_TRUE(fp8_quantize_interval_row(
          "fc2_quant", er, 0, lo, hi, c, m,
          exposed ? Fp8ExposedRow{kq2.codes.data(), kq2.scales.data()} : Fp8ExposedRow{}, ops, fail))
          << fail.message;
      const Fp8GemmOperands d(ops);
      for (int64_t o = 0; o < kN; ++o) {
        Interval iv;
        fp8_gemm_rows(d, 0, 1, w, o, contract, &iv);
        const double got = kernel_gemm(kq2, w, o, g);
        ASSERT_TRUE(got >= iv.lo && got <= iv.hi) << "t " << t << " o " << o << " exposed " << exposed;
        if (iv.hi > iv.lo) worst_fc2 = std::max(worst_fc2, std::fabs(got - iv.center()) / iv.radius());
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 300 * 4 * kN);
  std::printf("max error/bound: FC1 %.3g, FC2 %.3g\n", worst_fc1, worst_fc2);
  EXPECT_GT(worst_fc1, 0.0) << "the kernels differ from the expected value somewhere";
}

// fp8_gemm_rows sums the deviations of a call's rows side by side (one vector lane per row of an
// aligned group of kFp8GemmRows) and shares one weight-row decode among them: the intervals must not
// depend on how the rows are split into calls. 19 rows (two full groups and a partial one), FC2
// rows unconditioned (every element deviates) and FC1 rows of the non-IEEE variant, mixed with
// exact and indeterminate rows.
TEST(Fp8Operands, IntervalsDoNotDependOnRowsPerCall) {
  std::mt19937_64 g(77);
  const Fp8BlockGemmContract contract = fp8_contract(kFp32RoundToNearestAccumBits, 1);
  constexpr int64_t kRowsTotal = 19;
  const ExpandedRow er{.token = 0, .slot = 0, .expert = 0};
  for (const Fp8ActQuantModel& m : kModels) {
    const Fp8BlockQuantized w = weights(g, m.ue8m0);
    Fp8Operands ops(kRowsTotal, kK);
    int64_t deviating = 0;
    for (int64_t j = 0; j < kRowsTotal; ++j) {
      const std::vector<float> x = row(g, static_cast<int>(j % 4));
      Verdict fail;
      if (j % 3 == 0) {  // FC1: exact for IEEE variants, deviations for kTriton
        ASSERT_TRUE(fp8_quantize_point_row("fc1_quant", er, j, x, m, {}, ops, fail)) << fail.message;
      } else {
        std::vector<double> lo(kK), hi(kK), c(kK);
        for (int64_t i = 0; i < kK; ++i) {
          const double v = x[static_cast<size_t>(i)], r = std::fabs(v) * 0x1p-6;
          lo[static_cast<size_t>(i)] = v - r;
          hi[static_cast<size_t>(i)] = j == 7 && i == 3 ? INFINITY : v + r;  // row 7: indeterminate
          c[static_cast<size_t>(i)] = v;
        }
        ASSERT_TRUE(fp8_quantize_interval_row("fc2_quant", er, j, lo, hi, c, m, {}, ops, fail))
            << fail.message;
      }
      deviating += ops.has_deviation[static_cast<size_t>(j)];
    }
    ASSERT_GT(deviating, 8) << "the deviation sums are exercised";
    const Fp8GemmOperands in(ops);
    for (int64_t o = 0; o < kN; ++o) {
      std::vector<Interval> alone(kRowsTotal), grouped(kRowsTotal);
      for (int64_t j = 0; j < kRowsTotal; ++j)
        fp8_gemm_rows(in, j, 1, w, o, contract, &alone[static_cast<size_t>(j)]);
      for (int64_t j0 = 0; j0 < kRowsTotal; j0 += kFp8GemmRows) {
        const int na = static_cast<int>(std::min<int64_t>(kFp8GemmRows, kRowsTotal - j0));
        fp8_gemm_rows(in, j0, na, w, o, contract, &grouped[static_cast<size_t>(j0)]);
      }
      for (int64_t j = 0; j < kRowsTotal; ++j) {
        const Interval a = alone[static_cast<size_t>(j)], b = grouped[static_cast<size_t>(j)];
        EXPECT_TRUE((a.lo == b.lo || (a.lo != a.lo && b.lo != b.lo)) &&
                    (a.hi == b.hi || (a.hi != a.hi && b.hi != b.hi)))
            << "row " << j << " output " << o << ": [" << a.lo << ", " << a.hi << "] alone, [" << b.lo << ", "
            << b.hi << "] in a group of " << kFp8GemmRows;
      }
      EXPECT_TRUE(std::isnan(grouped[7].lo)) << "the indeterminate row says nothing";
    }
  }
  // A call whose rows straddle two groups is refused.
  Fp8Operands ops(kRowsTotal, kK);
  const Fp8GemmOperands in(ops);
  Interval out[kFp8GemmRows];
  EXPECT_THROW(fp8_gemm_rows(in, 4, kFp8GemmRows, weights(g, false), 0, contract, out), InputError);
}

TEST(Fp8Operands, CorruptedExposureFailsTheQuantizeStage) {
  std::mt19937_64 g(5);
  const Fp8ActQuantModel m{.variant = Fp8GroupQuantVariant::kVllmCuda};
  const std::vector<float> x = row(g, 0);
  Fp8GroupQuantized q = quantize_fp8_per_token_group(x, 1, kK, {});
  const ExpandedRow er{.token = 3, .slot = 1, .expert = 2};
  Fp8Operands ops(1, kK);
  Verdict fail;
  q.scales[1] *= 2;  // a scale 2x
  EXPECT_FALSE(
      fp8_quantize_point_row("fc1_quant", er, 0, x, m, {q.codes.data(), q.scales.data()}, ops, fail));
  EXPECT_EQ(fail.stage, "fc1_quant");
  EXPECT_EQ(fail.worst.where.element, 128);
  q.scales[1] /= 2;
  q.codes[200] ^= 0x02;  // one code off by two ranks
  const std::vector<double> xd(x.begin(), x.end());
  EXPECT_FALSE(fp8_quantize_interval_row("fc2_quant", er, 0, xd, xd, xd, m, {q.codes.data(), q.scales.data()},
                                         ops, fail));
  EXPECT_EQ(fail.stage, "fc2_quant");
  EXPECT_EQ(fail.worst.where.element, 200);
  EXPECT_EQ(fail.worst.where.token, 3);
}

}  // namespace
}  // namespace moefuzz::stages
