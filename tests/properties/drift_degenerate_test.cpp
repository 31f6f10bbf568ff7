// DRIFT on degenerate inputs: when every element has the same normalized error (constant rows,
// every element at its bound) the bias statistic has no spread to measure and must claim nothing.
// Before the two-pass variance, `moefuzz check --kernel cpu --invariants DRIFT --seed 1 --cases 20`
// failed the correct cpu kernel with "systematic bias ... z = 116235962".
#include <gtest/gtest.h>

#include <cmath>

#include "core/case.h"
#include "core/recipe_text.h"
#include "kernels/registry.h"
#include "properties/drift.h"
#include "properties/gen/recipe_gen.h"

namespace moefuzz {
namespace {

TEST(DriftDegenerate, TheCliSweepOfTheIssuePassesOnTheCorrectKernel) {
  const auto kernel = make_kernel("cpu");
  const auto gen = gen::recipe_for("small");
  int checked = 0;
  for (uint64_t index = 0; checked < 20 && index < 200; ++index) {
    // As `moefuzz check` draws them (drivers/campaign.cpp): size grows with the index.
    CaseRecipe r = gen::sample(gen, /*seed=*/1, index, static_cast<int>(std::min<uint64_t>(100, index)));
    r.profile = kernel->profile();
    if (!validate(r).empty() || !kernel->supports(r).empty()) continue;
    ++checked;
    const DriftReport rep = run_layer_drift(*kernel, r, 24);
    EXPECT_FALSE(rep.verdict.failed()) << "index " << index << ": " << rep.verdict.message;
  }
  EXPECT_EQ(checked, 20);
}

// Found by `moefuzz check --kernel cpu --invariants DRIFT --seed 1 --cases 200` (the one failure of
// 200): 9 tokens x 64 columns, every token on the same experts (load=one_expert). With elements
// counted as independent samples the shrink statistic reached z = 6.42 on the correct kernel; the
// errors of one token's row share its routing weights' rounding, so the test counts tokens
// (properties/drift.h).
TEST(DriftDegenerate, OneExpertLoadWithCorrelatedRowsPasses) {
  const std::string text =
      "MOEFUZZ v1\n"
      "seed = 14308612473252319523\n"
      "profile = sglang-cutlass-fp4\n"
      "tokens = 9\n"
      "hidden = 64\n"
      "inter = 16\n"
      "experts = 16\n"
      "top_k = 8\n"
      "n_group = 8\n"
      "topk_group = 4\n"
      "shared_experts = 1\n"
      "routing = sigmoid_grouped\n"
      "hash_score = sqrt_softplus\n"
      "renormalize = true\n"
      "correction_bias = true\n"
      "routed_scaling_factor = 16\n"
      "scale_placement = combine\n"
      "shared_fusion = separate\n"
      "vocab = 0\n"
      "activations = nvfp4\n"
      "act_scales = per_expert\n"
      "gate_up_scale_ratio = 4\n"
      "swiglu_limit = inf\n"
      "swiglu_alpha = 1\n"
      "swiglu_beta = 0\n"
      "values.logits = very_negative\n"
      "values.bias = small\n"
      "values.table = distinct\n"
      "values.weights = expert_spread\n"
      "values.hidden = normal\n"
      "values.act_scale = calibrated\n"
      "values.load = one_expert\n";
  const CaseRecipe r = parse_recipe(text, "<drift seed 1>");
  const DriftReport rep = run_layer_drift(*make_kernel("cpu"), r, 24);
  EXPECT_FALSE(rep.verdict.failed()) << rep.verdict.message;
}

// The bias test's pieces: the Student-t limit tends to kDriftZ with many clusters (layers) and grows
// with few; a per-cluster offset (a shared rounding of one layer) with few clusters claims nothing
// that an element count would; the pooled mean is reported for the size floor.
TEST(DriftDegenerate, BiasTestCountsClustersNotElements) {
  std::vector<double> x;
  std::vector<int64_t> layer;
  // 9 layers x 64 elements; each layer carries one offset (its shared rounding), noise aside.
  const double offsets[9] = {0.3, 0.5, 0.2, 0.4, 0.6, 0.1, 0.35, 0.45, 0.25};
  for (int l = 0; l < 9; ++l)
    for (int j = 0; j < 64; ++j) {
      x.push_back(offsets[l] + 0.01 * ((j * 37 % 11) - 5));
      layer.push_back(l);
    }
  const BiasTest few = bias_test(x, layer);
  EXPECT_EQ(few.clusters, 9);
  EXPECT_GT(few.limit, 2 * kDriftZ) << "8 degrees of freedom need far more than 6";
  EXPECT_NEAR(few.mean, 0.35, 0.01);
  // Many clusters with a consistent bias: the limit approaches kDriftZ and the bias stands out.
  std::vector<double> many;
  std::vector<int64_t> many_layer;
  for (int l = 0; l < 400; ++l)
    for (int j = 0; j < 4; ++j) {
      many.push_back(0.3 + 0.1 * std::sin(1.3 * l + 0.7 * j));
      many_layer.push_back(l);
    }
  const BiasTest b = bias_test(many, many_layer);
  EXPECT_EQ(b.clusters, 400);
  EXPECT_LT(b.limit, 1.1 * kDriftZ);
  EXPECT_GT(std::fabs(b.z), b.limit);
  EXPECT_GT(std::fabs(b.mean), kDriftMinBias);
  // Every cluster the same value: no spread, no claim (the normalization's rounding is not a sample).
  const std::vector<double> flat(64, -1.0);
  std::vector<int64_t> flat_layer(64);
  for (size_t i = 0; i < flat_layer.size(); ++i) flat_layer[i] = static_cast<int64_t>(i % 8);
  EXPECT_EQ(bias_test(flat, flat_layer).z, 0.0);
}

// Significant is not enough: a correct kernel's roundings may carry a consistent bias far below the
// bound (cpu-flashinfer's bf16 atomic combine: about -0.0015 of the bound per element over every
// layer of corpora/false-positives/drift-cpu-flashinfer.0.moefuzz). 400 layers with a -0.002 bias and
// little noise are significant, and still pass the size floor; -0.3 fails it.
TEST(DriftDegenerate, SignificantButTinyBiasIsNotDrift) {
  for (const double bias : {-0.002, -0.3}) {
    std::vector<double> x;
    std::vector<int64_t> layer;
    for (int l = 0; l < 400; ++l)
      for (int j = 0; j < 16; ++j) {
        x.push_back(bias + 0.0005 * std::sin(0.9 * l + 1.7 * j));
        layer.push_back(l);
      }
    const BiasTest b = bias_test(x, layer);
    EXPECT_GT(std::fabs(b.z), b.limit) << bias;
    EXPECT_EQ(std::fabs(b.mean) > kDriftMinBias, bias < -0.01) << bias;
  }
}

}  // namespace
}  // namespace moefuzz
