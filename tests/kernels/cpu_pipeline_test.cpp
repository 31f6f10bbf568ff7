// The `cpu` kernel without the oracle: routing structure on many random cases, a hand-computed exact
// layer, thread-count invariance, and the other built-in profiles.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "core/bf16.h"
#include "core/e4m3.h"
#include "core/errors.h"
#include "kernel_test_cases.h"
#include "kernels/cpu/cpu_kernel.h"
#include "kernels/registry.h"

namespace moefuzz {
namespace {

constexpr double kU = 0x1p-24;  // fp32 unit roundoff

TEST(CpuPipeline, RoutingStructureHoldsOnManyRandomCases) {
  auto k = make_kernel("cpu");
  const Profile& p = profile_by_name(k->profile());
  int checked = 0;
  for (RoutingMode mode : {RoutingMode::kSoftmax, RoutingMode::kSigmoidGrouped, RoutingMode::kHash}) {
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      CaseRecipe r = testing::small_recipe(seed, mode);
      r.routing.renormalize = seed % 5 != 0;
      ASSERT_EQ(k->supports(r), "") << seed;
      const Case c = materialize(r);
      const LayerResult res = testing::run_kernel(*k, c);
      const int64_t T = r.shape.tokens, E = r.shape.experts, K = r.shape.top_k, S = res.routing.slots;
      ASSERT_EQ(S, r.slots());
      for (int64_t t = 0; t < T; ++t) {
        std::set<int32_t> ids, groups;
        double sum = 0;
        for (int64_t s = 0; s < K; ++s) {
          const int32_t e = res.routing.ids[t * S + s];
          const float w = res.routing.weights[t * S + s];
          ASSERT_GE(e, 0);
          ASSERT_LT(e, E);
          ASSERT_TRUE(std::isfinite(w) && w >= 0) << "token " << t << " slot " << s << " w " << w;
          ids.insert(e);
          groups.insert(static_cast<int32_t>(e / (E / r.shape.n_group)));
          sum += w;
        }
        if (mode != RoutingMode::kHash) {
          EXPECT_EQ(static_cast<int64_t>(ids.size()), K) << "ids not distinct";
        }
        if (mode == RoutingMode::kSigmoidGrouped) {
          EXPECT_LE(static_cast<int64_t>(groups.size()), r.shape.topk_group);
        }
        if (r.routing.renormalize) {
          // Target: 1, times rsf because the profile applies it in top-k. Each weight is fl(s/fl(sum))
          // (then fl(x rsf)): the fp32 sum has relative error <= (K-1)u, the divide and the multiply u
          // each, so |sum w - target| <= target ((K-1) + 2) u to first order; 1.01 covers the higher
          // order terms. The test sums in double (exact for K <= 8 fp32 values of similar scale, and
          // its own error is far below u).
          const double target = p.rsf_in_topk ? static_cast<float>(r.routing.routed_scaling_factor) : 1.0;
          EXPECT_LE(std::fabs(sum - target), target * (K + 1) * kU * 1.01)
              << "seed " << seed << " token " << t;
        } else if (mode == RoutingMode::kSoftmax) {
          EXPECT_LE(sum, (p.rsf_in_topk ? 2.5 : 1.0) * (1 + 4 * kU));
        }
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 300);
}

// T=1, E=2, k=1, H=I=16 with every value chosen so each stage is exact (derivation inline).
Case exact_case(double rsf) {
  Case c;
  c.recipe.profile = "sglang-cutlass-fp4";
  c.recipe.shape = {.tokens = 1, .hidden = 16, .inter = 16, .experts = 2, .top_k = 1};
  c.recipe.routing.routed_scaling_factor = rsf;
  c.hidden.assign(16, bf16_from_float(6.0f));
  c.logits = {0.0f, 1.0f};  // expert 1 wins; renormalized weight p / p = 1 exactly
  c.experts.resize(2);
  for (int e = 0; e < 2; ++e) {
    ExpertWeights& w = c.experts[e];
    for (Nvfp4Matrix* m : {&w.gate, &w.up, &w.down}) {
      *m = Nvfp4Matrix(16, 16);
      for (int64_t i = 0; i < 16; ++i) {
        for (int64_t j = 0; j < 16; ++j) m->set_code(i, j, e == 1 ? 0x2 : 0x0);  // 1.0 (expert 0: zeros)
        m->scale(i, 0) = e4m3_from_float(1.0f);
      }
    }
  }
  // a1: block amax 6, S_q 1 -> sf32 = fl(6 * RN(1/6)) = 1, outScale 1, codes 6.0 -> A = 6.
  c.a1_scale = {1.0f};
  // gate = up = 16 * 6 * 1 = 96; h = silu(96) * 96 = 9216 (exp(-96) vanishes next to 1).
  // a2 = 2^-11: sf32 = fl(2^-11 * fl(9216 * RN(1/6))) = 2^-11 * 1536 = 0.75 (exact E4M3);
  // y = 9216 / 1536 = 6 -> code 6.0, dequantized 4.5; gemm2 = 16 * 4.5 * 1 * alpha2 (= 2048) = 147456.
  c.a2_scale = {0x1p-11f};
  return c;
}

TEST(CpuPipeline, HandComputedLayerIsExact) {
  auto k = make_kernel("cpu");
  for (double rsf : {1.0, 2.5}) {
    const Case c = exact_case(rsf);
    for (int tactic = 0; tactic < 2; ++tactic) {
      const LayerResult r = testing::run_kernel(*k, c, {.tactic = tactic});
      ASSERT_EQ(r.routing.ids[0], 1);
      EXPECT_EQ(r.routing.weights[0], static_cast<float>(rsf));  // rsf in top-k (sglang-cutlass-fp4)
      for (int h = 0; h < 16; ++h) {
        EXPECT_EQ((*r.gemm1)[h], 96.0f);
        EXPECT_EQ((*r.gemm1)[16 + h], 96.0f);
        EXPECT_EQ((*r.activation)[h], 9216.0f);
        EXPECT_EQ((*r.gemm2)[h], 147456.0f);
        EXPECT_EQ(r.output[h], static_cast<float>(147456.0 * rsf));  // 1.125 * 2^17 * 2.5 is a bf16
      }
      EXPECT_EQ(r.fc2_input->scales[0], e4m3_from_float(0.75f));
    }
  }
}

TEST(CpuPipeline, ThreadCountDoesNotChangeAnyBit) {
  auto k = make_kernel("cpu");
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    CaseRecipe r =
        testing::small_recipe(seed, seed % 2 ? RoutingMode::kSigmoidGrouped : RoutingMode::kSoftmax);
    r.shape.shared_experts = 1;
    const Case c = materialize(r);
    const LayerResult a = testing::run_kernel(*k, c, {.threads = 1});
    const LayerResult b = testing::run_kernel(*k, c, {.threads = 3});
    EXPECT_TRUE(testing::same_bits(a.output, b.output)) << seed;
    EXPECT_TRUE(testing::same_bits(*a.gemm2, *b.gemm2)) << seed;
  }
}

TEST(CpuPipeline, EveryBuiltinProfileRunsEveryModeFinite) {
  for (const char* name : {"cpu", "cpu-flashinfer", "cpu-trtllm"}) {
    auto k = make_kernel(name);
    for (RoutingMode mode : {RoutingMode::kSoftmax, RoutingMode::kSigmoidGrouped, RoutingMode::kHash}) {
      for (SharedFusion sf : {SharedFusion::kSeparate, SharedFusion::kFused}) {
        CaseRecipe r = testing::small_recipe(11, mode);
        r.shape.shared_experts = 1;
        r.routing.shared_fusion = sf;
        ASSERT_EQ(k->supports(r), "");
        const Case c = materialize(r);
        const LayerResult res = testing::run_kernel(*k, c);
        for (float v : res.output) ASSERT_TRUE(std::isfinite(v)) << name;
        if (sf == SharedFusion::kFused) {
          EXPECT_EQ(res.routing.ids[r.shape.top_k], r.shape.experts);  // shared expert E in the extra slot
          EXPECT_TRUE(res.shared_output.empty());
        } else {
          EXPECT_EQ(static_cast<int64_t>(res.shared_output.size()), r.shape.tokens * r.shape.hidden);
        }
      }
    }
  }
}

TEST(CpuPipeline, W4A16AndSwigluLimitChangeTheOutput) {
  auto k = make_kernel("cpu");
  CaseRecipe r = testing::small_recipe(5, RoutingMode::kSoftmax);
  const LayerResult base = testing::run_kernel(*k, materialize(r));
  CaseRecipe a16 = r;
  a16.quant.activations = ActivationFormat::kBf16;
  const LayerResult w4a16 = testing::run_kernel(*k, materialize(a16));
  EXPECT_FALSE(w4a16.fc1_input.has_value());
  EXPECT_FALSE(testing::same_bits(base.output, w4a16.output));
  CaseRecipe lim = r;
  lim.swiglu.limit = 1e-3;  // far below the gemm1 magnitudes: the clamp must bite
  const LayerResult limited = testing::run_kernel(*k, materialize(lim));
  EXPECT_FALSE(testing::same_bits(base.output, limited.output));
  for (float v : limited.output) EXPECT_TRUE(std::isfinite(v));
}

TEST(CpuPipeline, UnknownTacticIsAnInputError) {
  auto k = make_kernel("cpu");
  const Case c = materialize(testing::small_recipe(1, RoutingMode::kSoftmax));
  EXPECT_THROW(testing::run_kernel(*k, c, {.tactic = 7}), InputError);
}

}  // namespace
}  // namespace moefuzz
