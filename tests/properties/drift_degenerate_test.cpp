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

// The bias test's pieces: the Student-t limit tends to kDriftZ with many tokens and grows with few;
// a row-correlated error (one value per token, the same sign) with few tokens claims nothing that
// an element count would; a clear bias over many tokens is still found.
TEST(DriftDegenerate, BiasTestCountsTokensNotElements) {
  std::vector<double> x;
  std::vector<int64_t> token;
  // 9 tokens x 64 columns; each token's row carries one offset (its weight's rounding), noise aside.
  const double offsets[9] = {0.3, 0.5, 0.2, 0.4, 0.6, 0.1, 0.35, 0.45, 0.25};
  for (int t = 0; t < 9; ++t)
    for (int j = 0; j < 64; ++j) {
      x.push_back(offsets[t] + 0.01 * ((j * 37 % 11) - 5));
      token.push_back(t);
    }
  const BiasTest few = bias_test(x, token);
  EXPECT_EQ(few.clusters, 9);
  EXPECT_GT(few.limit, 2 * kDriftZ) << "8 degrees of freedom need far more than 6";
  // Tokens with identical rows count once.
  std::vector<double> dup = x;
  std::vector<int64_t> dup_token = token;
  for (int j = 0; j < 64; ++j) {
    dup.push_back(x[static_cast<size_t>(j)]);
    dup_token.push_back(9);
  }
  EXPECT_EQ(bias_test(dup, dup_token).clusters, 9);
  // Many tokens with a consistent bias: the limit approaches kDriftZ and the bias stands out.
  std::vector<double> many;
  std::vector<int64_t> many_token;
  for (int t = 0; t < 400; ++t)
    for (int j = 0; j < 4; ++j) {
      many.push_back(0.2 + 0.1 * std::sin(1.3 * t + 0.7 * j));  // every token's row distinct
      many_token.push_back(t);
    }
  const BiasTest b = bias_test(many, many_token);
  EXPECT_EQ(b.clusters, 400);
  EXPECT_LT(b.limit, 1.1 * kDriftZ);
  EXPECT_GT(std::fabs(b.z), b.limit);
}

}  // namespace
}  // namespace moefuzz
