// TACTIC agreement: the two CPU tactics differ only in the fp32 association of the exact 16-block
// terms of each dot product, so their gemm outputs must agree within a bound derived from that.
#include <gtest/gtest.h>

#include <cmath>

#include "core/bf16.h"
#include "core/e2m1.h"
#include "core/e4m3.h"
#include "kernel_test_cases.h"
#include "kernels/cpu/cpu_kernel.h"
#include "kernels/registry.h"

namespace moefuzz {
namespace {

constexpr double kU = 0x1p-24;

double bf16_ulp(double x) {
  if (x == 0) return 0x1p-133;
  int e;
  std::frexp(std::fabs(x), &e);  // |x| in [2^(e-1), 2^e)
  return std::ldexp(1.0, e - 1 - 7);
}

// Bound on |tactic0 - tactic1| for one gemm output element (check_gemm1): each tactic sums the same
// Kb exact block terms in some fp32 order, |acc - exact| <= gamma(Kb-1) sum|t| with
// gamma(n) = n u / (1 - n u), so the two differ by <= 2 gamma sum|t| (times alpha); fl(alpha * acc)
// adds u |v| each, and the bf16 rounding point at most one bf16 ulp of the larger value when the two
// fp32 values differ.
struct GemmCheck {
  int64_t compared = 0, differing = 0;
  double worst_ratio = 0;
};

// Compares gemm1 of both tactics on the same quantized input, element by element.
GemmCheck check_gemm1(const Case& c, const cpu::CpuConfig& cfg0, const cpu::CpuConfig& cfg1) {
  const RoutingDecision route = cpu::cpu_route(c, cfg0);
  const auto fc1 = cpu::cpu_quantize_activations(c, route, cfg0);
  const auto g0 = cpu::cpu_gemm1(c, route, fc1, cfg0);
  const auto g1 = cpu::cpu_gemm1(c, route, fc1, cfg1);
  const int64_t H = cfg0.hidden, I = cfg0.inter, Kb = H / 16, rows = route.tokens * route.slots;
  const double gamma = (Kb - 1) * kU / (1 - (Kb - 1) * kU);
  GemmCheck out;
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t e = route.ids[r];
    for (int64_t col = 0; col < 2 * I; ++col) {
      const bool up = col >= I;
      const Nvfp4Matrix& w = up ? c.experts[e].up : c.experts[e].gate;
      const int64_t n = col % I;
      double sum_abs = 0;  // sum over blocks of |exact block term|, from the core decoders
      for (int64_t kb = 0; kb < Kb; ++kb) {
        double p = 0;
        for (int64_t j = 0; j < 16; ++j) {
          const int64_t k = kb * 16 + j;
          const uint8_t byte = fc1->packed[r * H / 2 + k / 2];
          p += e2m1_to_float(k % 2 ? byte >> 4 : byte & 0xF) * e2m1_to_float(w.code(n, k));
        }
        sum_abs += std::fabs(p * e4m3_to_float(fc1->scales[r * Kb + kb]) * e4m3_to_float(w.scale(n, kb)));
      }
      const double alpha = std::fabs(static_cast<double>(1.0f / c.a1_scale_for(e)) * w.global_dequant);
      const double v0 = g0[r * 2 * I + col], v1 = g1[r * 2 * I + col];
      double bound = alpha * 2 * gamma * sum_abs * (1 + 2 * kU) + kU * (std::fabs(v0) + std::fabs(v1));
      if (cfg0.bf16_after_gemm1 && v0 != v1) bound += bf16_ulp(std::max(std::fabs(v0), std::fabs(v1)));
      ++out.compared;
      if (v0 != v1) {
        ++out.differing;
        out.worst_ratio = std::max(out.worst_ratio, std::fabs(v0 - v1) / bound);
      }
    }
  }
  return out;
}

TEST(CpuTactics, Gemm1AgreesWithinTheReassociationBound) {
  cpu::CpuKernel::Spec spec;
  spec.name = "cpu";
  spec.profile = "sglang-cutlass-fp4";
  const cpu::CpuKernel k(spec);
  Profile fp32_out = profile_by_name("sglang-cutlass-fp4");
  fp32_out.bf16_after_gemm1 = false;  // exposes the raw fp32 difference the bf16 point may hide
  int64_t differing_fp32 = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    CaseRecipe r = testing::small_recipe(seed, RoutingMode::kSoftmax);
    r.shape.hidden = 1024;  // Kb = 64 terms: enough reassociation to show
    r.shape.tokens = 4;
    // Wide block-scale ranges and outliers spread the block terms' exponents over more than fp32's 24
    // bits; with tame values every fp32 sum of the (<= 20-bit) exact terms is itself exact.
    r.values.weights = WeightProfile::kWideScales;
    r.values.hidden = HiddenProfile::kOutliers;
    const Case c = materialize(r);
    const cpu::CpuConfig c0 = k.config_for(c, {.tactic = 0}), c1 = k.config_for(c, {.tactic = 1});
    const GemmCheck bf = check_gemm1(c, c0, c1);
    EXPECT_LE(bf.worst_ratio, 1.0) << "seed " << seed;
    cpu::CpuConfig f0 = cpu::make_cpu_config(r, fp32_out, {.tactic = 0}),
                   f1 = cpu::make_cpu_config(r, fp32_out, {.tactic = 1});
    const GemmCheck raw = check_gemm1(c, f0, f1);
    EXPECT_LE(raw.worst_ratio, 1.0) << "seed " << seed;
    EXPECT_GT(raw.compared, 0);
    differing_fp32 += raw.differing;
  }
  // The tactics really associate differently (else this test would check nothing).
  EXPECT_GT(differing_fp32, 0);
}

TEST(CpuTactics, DecisionsAreTacticIndependent) {
  auto k = make_kernel("cpu");
  ASSERT_EQ(k->claims().tactics, 2);
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const Case c = materialize(testing::small_recipe(seed, RoutingMode::kSigmoidGrouped));
    const LayerResult a = testing::run_kernel(*k, c, {.tactic = 0});
    const LayerResult b = testing::run_kernel(*k, c, {.tactic = 1});
    EXPECT_EQ(a.routing.ids, b.routing.ids);
    EXPECT_TRUE(testing::same_bits(a.routing.weights, b.routing.weights));
    EXPECT_EQ(a.fc1_input->packed, b.fc1_input->packed);  // quantization precedes any tactic choice
  }
}

}  // namespace
}  // namespace moefuzz
