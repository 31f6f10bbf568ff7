// The FP8 activation quantization envelope (oracles/fp8_act_envelope.h) against the exact quantizer
// (core/fp8_group_quant.h) on hostile groups: all-zero, amax below DeepGEMM's 1e-4 floor, saturating
// (one huge element among tiny ones: subnormal codes), powers of two at the E4M3 edges, mixed
// magnitudes, NaN/Inf (SPEC-formats.md §1.2). Properties (RapidCheck, a seed and a group kind per
// draw): every correct quantizer's output is admitted (IEEE variants exactly; kTriton simulated with
// its scale off by up to 2 ulps and codes off by one); |q s - x| stays within fp8_quant_error for
// point groups and for inputs drawn inside intervals; corrupted exposures (a code off, a scale 2x,
// the F1 amax ceiling, UE8M0 rounded to nearest) are rejected.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "core/bf16.h"
#include "core/e4m3.h"
#include "core/fp8_group_quant.h"
#include "oracles/fp8_act_envelope.h"

namespace moefuzz {
namespace {

constexpr int64_t kGroup = 128;
constexpr int kKinds = 7;

// A hostile finite group of kind k (bf16-valued: the FC1 input is the bf16 hidden state).
std::vector<float> hostile_group(int kind, std::mt19937_64& g) {
  std::vector<float> x(kGroup, 0.0f);
  std::normal_distribution<double> n(0.0, 1.0);
  const int e = static_cast<int>(g() % 61) - 30;
  switch (kind) {
    case 0:  // Gaussian at a random magnitude 2^-30 .. 2^30
      for (auto& v : x) v = static_cast<float>(std::ldexp(n(g), e));
      break;
    case 1:  // all zero (signed zeros)
      for (auto& v : x) v = (g() & 1) ? -0.0f : 0.0f;
      break;
    case 2:  // amax below 1e-4 (DeepGEMM's floor) and below 1e-10 (vLLM's)
      for (auto& v : x) v = static_cast<float>(n(g) * ((g() & 1) ? 1e-6 : 1e-12));
      break;
    case 3:  // saturating: one huge element among tiny ones (subnormal and zero codes)
      for (auto& v : x) v = static_cast<float>(std::ldexp(n(g), e - 12));
      x[g() % kGroup] = static_cast<float>(std::ldexp((g() & 1) ? 1.0 : -1.0, e));
      break;
    case 4:  // E4M3 edges: 448 * 2^e, its half, subnormal ratios 2^-9 .. 2^-6
      for (auto& v : x)
        v = static_cast<float>(std::ldexp(448.0 * ((g() & 1) ? 1 : -1), e - static_cast<int>(g() % 16)));
      break;
    case 5:  // mixed magnitudes across 40 binades
      for (auto& v : x) v = static_cast<float>(std::ldexp(n(g), e - static_cast<int>(g() % 40)));
      break;
    default:  // one value repeated (ties and the amax element everywhere)
      std::fill(x.begin(), x.end(), static_cast<float>(std::ldexp(1.0 + (g() % 8) / 8.0, e)));
      break;
  }
  for (auto& v : x) v = round_to_bf16(v);
  return x;
}

Fp8ActQuantModel model_of(int m) {
  const Fp8GroupQuantVariant vs[] = {Fp8GroupQuantVariant::kVllmCuda,
                                     Fp8GroupQuantVariant::kDeepGemmReference, Fp8GroupQuantVariant::kTriton};
  return {.variant = vs[m % 3], .ue8m0 = m >= 3};
}

Fp8GroupQuantized quantize(const std::vector<float>& x, const Fp8ActQuantModel& m) {
  return quantize_fp8_per_token_group(x, 1, kGroup,
                                      {.group = kGroup, .ue8m0 = m.ue8m0, .variant = m.variant});
}

// A code one rank up or down (never into NaN).
uint8_t neighbour(uint8_t c, int d) {
  int r = fp8_code_rank(c) + d;
  r = std::clamp(r, -static_cast<int>(kE4m3MaxCode), static_cast<int>(kE4m3MaxCode));
  return r < 0 ? static_cast<uint8_t>(0x80 | -r) : static_cast<uint8_t>(r);
}

// What a correct kTriton kernel may produce: the raw scale off by up to kTritonScaleUlps ulps (then
// the UE8M0 ceil), codes of fl(x / s) off by one rank here and there.
Fp8GroupQuantized triton_kernel(const std::vector<float>& x, bool ue8m0, std::mt19937_64& g) {
  Fp8GroupQuantized q = quantize(x, {.variant = Fp8GroupQuantVariant::kTriton});  // fp32 scale
  float s = q.scales[0];
  const int ulps = static_cast<int>(g() % (2 * kTritonScaleUlps + 1)) - kTritonScaleUlps;
  for (int i = 0; i < std::abs(ulps); ++i) s = std::nextafter(s, ulps > 0 ? INFINITY : 0.0f);
  const Fp8ActQuantModel m{.variant = Fp8GroupQuantVariant::kTriton, .ue8m0 = ue8m0};
  // UE8M0: vLLM CUDA floors s at 1e-10 before the ceil, the Triton fallback does not.
  if (ue8m0) s = std::exp2(std::ceil(std::log2((g() & 1) ? std::fmax(s, 1e-10f) : s)));
  q.scales[0] = s;
  for (int64_t i = 0; i < kGroup; ++i) {
    uint8_t c = fp8_group_code(x[static_cast<size_t>(i)], s, m);
    if (g() % 8 == 0) c = neighbour(c, (g() & 1) ? 1 : -1);
    q.codes[static_cast<size_t>(i)] = c;
  }
  return q;
}

// q * s exactly (the GEMM multiplies the exact E4M3 value; dequant() rounds to fp32).
double exact(const Fp8GroupQuantized& q, int64_t i) {
  return static_cast<double>(e4m3_to_float(q.codes[static_cast<size_t>(i)])) *
         static_cast<double>(q.scales[0]);
}

double amax_of(const std::vector<float>& x) {
  double a = 0;
  for (float v : x) a = std::fmax(a, std::fabs(v));
  return a;
}

// Every correct quantizer's output is admitted and within the error bound.
RC_GTEST_PROP(Fp8ActEnvelope, PointGroupsAdmittedAndBounded, (uint64_t seed, int kind_draw, int model_draw)) {
  std::mt19937_64 g(seed);
  const int kind = std::abs(kind_draw % kKinds);
  const Fp8ActQuantModel m = model_of(std::abs(model_draw % 6));
  RC_TAG(kind, static_cast<int>(m.variant), m.ue8m0);
  const std::vector<float> x = hostile_group(kind, g);
  const Fp8GroupQuantized q =
      fp8_act_quant_is_ieee(m.variant) ? quantize(x, m) : triton_kernel(x, m.ue8m0, g);
  RC_ASSERT(fp8_point_group_admits(x, q.codes, q.scales[0], m) == kFp8Admitted);
  // The same group as a point interval: admitted by the interval check too.
  const std::vector<double> xd(x.begin(), x.end());
  RC_ASSERT(fp8_interval_group_admits(xd, xd, q.codes, q.scales[0], m) == kFp8Admitted);
  const double s_max = fp8_scale_upper(amax_of(x), m);
  RC_ASSERT(static_cast<double>(q.scales[0]) <= s_max);
  const float s_formula = quantize(x, m).scales[0];
  for (int64_t i = 0; i < kGroup; ++i) {
    const double err = std::fabs(exact(q, i) - x[static_cast<size_t>(i)]);
    RC_ASSERT(err <= fp8_quant_error(std::fabs(x[static_cast<size_t>(i)]), s_max, m));
    // FC1 unexposed under kTriton: the kernel's value within fp8_point_deviation of the formula's.
    const double formula = exact(quantize(x, m), i);
    RC_ASSERT(std::fabs(exact(q, i) - formula) <=
              fp8_point_deviation(x[static_cast<size_t>(i)], s_formula, m));
  }
}

// FC2: the kernel's inputs lie somewhere in per-element intervals; whatever it quantized is admitted
// against the intervals and within fp8_quant_error of its own input, with s_max from the intervals.
RC_GTEST_PROP(Fp8ActEnvelope, IntervalGroupsAdmitKernelsAndBoundTheirError,
              (uint64_t seed, int kind_draw, int model_draw)) {
  std::mt19937_64 g(seed);
  const int kind = std::abs(kind_draw % kKinds);
  const Fp8ActQuantModel m = model_of(std::abs(model_draw % 6));
  RC_TAG(kind, static_cast<int>(m.variant), m.ue8m0);
  const std::vector<float> c = hostile_group(kind, g);
  std::vector<double> lo(kGroup), hi(kGroup);
  std::vector<float> x(kGroup);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double width = std::ldexp(1.0, -static_cast<int>(g() % 30));  // relative radius 2^-29 .. 1
  for (int64_t i = 0; i < kGroup; ++i) {
    const double ci = c[static_cast<size_t>(i)], r = width * (std::fabs(ci) + 1e-30) * u(g);
    lo[static_cast<size_t>(i)] = ci - r * u(g);
    hi[static_cast<size_t>(i)] = ci + r * u(g);
    // The kernel's fp32 value inside the interval.
    float v = static_cast<float>(lo[static_cast<size_t>(i)] +
                                 (hi[static_cast<size_t>(i)] - lo[static_cast<size_t>(i)]) * u(g));
    if (v < lo[static_cast<size_t>(i)] || v > hi[static_cast<size_t>(i)]) v = static_cast<float>(ci);
    x[static_cast<size_t>(i)] = v;
  }
  const Fp8GroupQuantized q =
      fp8_act_quant_is_ieee(m.variant) ? quantize(x, m) : triton_kernel(x, m.ue8m0, g);
  RC_ASSERT(fp8_interval_group_admits(lo, hi, q.codes, q.scales[0], m) == kFp8Admitted);
  double a_hi = 0;
  for (int64_t i = 0; i < kGroup; ++i)
    a_hi = std::fmax(a_hi,
                     std::fmax(std::fabs(lo[static_cast<size_t>(i)]), std::fabs(hi[static_cast<size_t>(i)])));
  const double s_max = fp8_scale_upper(a_hi, m);
  for (int64_t i = 0; i < kGroup; ++i) {
    const double mag =
        std::fmax(std::fabs(lo[static_cast<size_t>(i)]), std::fabs(hi[static_cast<size_t>(i)]));
    RC_ASSERT(std::fabs(exact(q, i) - x[static_cast<size_t>(i)]) <= fp8_quant_error(mag, s_max, m));
  }
}

// Corrupted exposures of a point group are rejected: a code one rank off (IEEE) or three ranks off
// (kTriton), a scale doubled.
RC_GTEST_PROP(Fp8ActEnvelope, CorruptedExposuresAreRejected, (uint64_t seed, int kind_draw, int model_draw)) {
  std::mt19937_64 g(seed);
  const int kind = std::abs(kind_draw % kKinds);
  const Fp8ActQuantModel m = model_of(std::abs(model_draw % 6));
  const std::vector<float> x = hostile_group(kind, g);
  const std::vector<double> xd(x.begin(), x.end());
  const Fp8GroupQuantized q = quantize(x, m);
  const bool ieee = fp8_act_quant_is_ieee(m.variant);
  // A scale doubled (kTriton UE8M0: unless 2 ulps up already reach the next power of two).
  const float doubled = 2 * q.scales[0];
  const Fp8ActQuantModel same = m;
  if (ieee || !m.ue8m0 || fp8_scale_upper(amax_of(x), same) < doubled) {
    RC_ASSERT(fp8_point_group_admits(x, q.codes, doubled, m) == kFp8ScaleInadmissible);
    RC_ASSERT(fp8_interval_group_admits(xd, xd, q.codes, doubled, m) == kFp8ScaleInadmissible);
  }
  // One code moved by one rank (IEEE) or three (kTriton), where that is a different finite code.
  const int64_t at = static_cast<int64_t>(g() % kGroup);
  const int d = ieee ? 1 : 3;
  std::vector<uint8_t> bad = q.codes;
  const uint8_t moved = neighbour(bad[static_cast<size_t>(at)], (g() & 1) ? d : -d);
  RC_PRE(std::abs(fp8_code_rank(moved) - fp8_code_rank(bad[static_cast<size_t>(at)])) == d);
  bad[static_cast<size_t>(at)] = moved;
  RC_ASSERT(fp8_point_group_admits(x, bad, q.scales[0], m) == at);
  RC_ASSERT(fp8_interval_group_admits(xd, xd, bad, q.scales[0], m) != kFp8Admitted);
}

// SPEC-formats.md §4 F1: the DeepSeek amax floor written as a ceiling, min(amax, 1e-4): every group
// with amax above 1e-4 gets a scale outside the amax rule.
TEST(Fp8ActEnvelope, AmaxFloorAsCeilingIsRejected) {
  std::mt19937_64 g(7);
  for (int t = 0; t < 200; ++t) {
    const std::vector<float> x = hostile_group(0, g);
    const double a = amax_of(x);
    if (a <= 2e-4) continue;
    const Fp8ActQuantModel m{.variant = Fp8GroupQuantVariant::kDeepGemmReference};
    Fp8GroupQuantized q = quantize(x, m);
    const float s_bad = std::fmin(static_cast<float>(a), 1e-4f) / 448.0f;
    std::vector<uint8_t> codes(kGroup);
    for (int64_t i = 0; i < kGroup; ++i)
      codes[static_cast<size_t>(i)] = fp8_group_code(x[static_cast<size_t>(i)], s_bad, m);
    const std::vector<double> xd(x.begin(), x.end());
    EXPECT_EQ(fp8_point_group_admits(x, codes, s_bad, m), kFp8ScaleInadmissible);
    EXPECT_EQ(fp8_interval_group_admits(xd, xd, codes, s_bad, m), kFp8ScaleInadmissible);
  }
}

// SPEC-formats.md §4 F4: a UE8M0 scale rounded to the nearest power of two instead of up.
TEST(Fp8ActEnvelope, Ue8m0RoundedToNearestIsRejected) {
  const Fp8ActQuantModel m{.variant = Fp8GroupQuantVariant::kVllmCuda, .ue8m0 = true};
  std::vector<float> x(kGroup, 0.25f);
  x[5] = 300.0f;  // s = 300/448 = 0.67: ceil 1, nearest 0.5
  const float nearest = 0.5f;
  std::vector<uint8_t> codes(kGroup);
  for (int64_t i = 0; i < kGroup; ++i)
    codes[static_cast<size_t>(i)] = fp8_group_code(x[static_cast<size_t>(i)], nearest, m);
  const std::vector<double> xd(x.begin(), x.end());
  EXPECT_EQ(fp8_point_group_admits(x, codes, nearest, m), kFp8ScaleInadmissible);
  EXPECT_EQ(fp8_interval_group_admits(xd, xd, codes, nearest, m), kFp8ScaleInadmissible);
  EXPECT_EQ(quantize(x, m).scales[0], 1.0f);
  EXPECT_EQ(fp8_point_group_admits(x, quantize(x, m).codes, 1.0f, m), kFp8Admitted);
}

// Condition (3): a scale the intervals allow, with codes each consistent with its interval, but no
// element large enough to be the amax that scale needs.
TEST(Fp8ActEnvelope, AmaxElementMustCarryTheScale) {
  const Fp8ActQuantModel m{.variant = Fp8GroupQuantVariant::kVllmCuda};
  std::vector<double> lo(kGroup, 0.0), hi(kGroup, 10.0);
  const float s = 10.0f / 448.0f;            // amax 10: admissible by (1)
  std::vector<uint8_t> codes(kGroup, 0x00);  // every x = 0: admissible element by element by (2)
  EXPECT_EQ(fp8_interval_group_admits(lo, hi, codes, s, m), 0) << "the amax rule names the largest code";
  codes[17] = e4m3_from_float(448.0f);  // now some x = 10 carries the amax
  EXPECT_EQ(fp8_interval_group_admits(lo, hi, codes, s, m), kFp8Admitted);
  codes[17] = e4m3_from_float(384.0f);  // x/s = 384 needs amax 10 * 384/448 < the amax s needs
  EXPECT_EQ(fp8_interval_group_admits(lo, hi, codes, s, m), 17);
  // A floor scale (every interval near zero) needs no amax element.
  std::vector<double> tiny_lo(kGroup, -1e-12), tiny_hi(kGroup, 1e-12);
  const float floor_scale = fp8_group_scale(0.0f, m);
  EXPECT_EQ(fp8_interval_group_admits(tiny_lo, tiny_hi, std::vector<uint8_t>(kGroup, 0), floor_scale, m),
            kFp8Admitted);
}

// Non-finite inputs (SPEC-formats.md §1.2): the IEEE variants are admitted exactly as the quantizer
// behaves (vLLM: a NaN element becomes -448, an Inf element makes s = Inf); kTriton admits anything.
TEST(Fp8ActEnvelope, NonFiniteGroupsFollowTheQuantizer) {
  for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    std::vector<float> x(kGroup, 1.5f);
    x[3] = bad;
    for (const auto v : {Fp8GroupQuantVariant::kVllmCuda, Fp8GroupQuantVariant::kDeepGemmReference}) {
      const Fp8ActQuantModel m{.variant = v};
      const Fp8GroupQuantized q = quantize(x, m);
      EXPECT_EQ(fp8_point_group_admits(x, q.codes, q.scales[0], m), kFp8Admitted);
      std::vector<uint8_t> other = q.codes;
      other[0] = neighbour(other[0], 1);
      if (other[0] != q.codes[0]) {
        EXPECT_EQ(fp8_point_group_admits(x, other, q.scales[0], m), 0);
      }
    }
    const Fp8ActQuantModel t{.variant = Fp8GroupQuantVariant::kTriton};
    EXPECT_EQ(fp8_point_group_admits(x, std::vector<uint8_t>(kGroup, 0x7F), 0.0f, t), kFp8Admitted);
  }
  std::vector<float> x(kGroup, 1.5f);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(quantize(x, {}).codes[3], 0xFE) << "vLLM CUDA: fmaxf drops NaN, the clamp gives -448";
}

TEST(Fp8ActEnvelope, WhichVariantsAreIeee) {
  EXPECT_TRUE(fp8_act_quant_is_ieee(Fp8GroupQuantVariant::kVllmCuda));
  EXPECT_TRUE(fp8_act_quant_is_ieee(Fp8GroupQuantVariant::kDeepGemmReference));
  EXPECT_FALSE(fp8_act_quant_is_ieee(Fp8GroupQuantVariant::kTriton));
  EXPECT_EQ(fp8_code_rank(0x80), 0);
  EXPECT_EQ(fp8_code_rank(0xFE), -126);
  EXPECT_TRUE(fp8_code_is_nan(0xFF));
}

}  // namespace
}  // namespace moefuzz
