// Expert biases (recipe expert_bias: gpt-oss's b1 and b2, SPEC-formats.md §3.4): the recipe field and
// its validation, the case's tensors and edits, the oracle's bias term, the built-in CPU kernels on
// generated biased cases (every cheap invariant, not vacuously, also cpu-matmul-ogs under the
// triton-matmul-ogs profile: interleaved w13, fp32 GEMM1 into the SwiGLU), and mutant m5-fc1-bias-dropped
// (M5).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "core/case.h"
#include "core/recipe_text.h"
#include "drivers/check_engine.h"
#include "kernels/canary.h"
#include "kernels/registry.h"
#include "properties/case_transforms.h"
#include "properties/gen/recipe_gen.h"
#include "properties/invariant.h"

namespace moefuzz {
namespace {

CaseRecipe biased_recipe(WeightFormat f = WeightFormat::kMxfp4) {
  CaseRecipe r;
  r.seed = 21;
  r.shape = {.tokens = 6, .hidden = 96, .inter = 64, .experts = 6, .top_k = 2};
  r.quant.activations = ActivationFormat::kBf16;
  r.quant.weights = f;
  r.swiglu = {.limit = 7.0, .alpha = 1.702, .beta = 1.0};
  r.expert_bias = true;
  return r;
}

TEST(ExpertBias, RecipeTextRoundTripsAndStaysSilentWhenOff) {
  const CaseRecipe r = biased_recipe();
  const std::string text = to_text(r);
  EXPECT_NE(text.find("expert_bias = true"), std::string::npos) << text;
  EXPECT_EQ(parse_recipe(text, "test"), r);
  CaseRecipe off = r;
  off.expert_bias = false;
  EXPECT_EQ(to_text(off).find("expert_bias"), std::string::npos)
      << "a recipe without biases prints as before";
}

TEST(ExpertBias, ValidationSaysWhatIsWrong) {
  CaseRecipe r = biased_recipe();
  r.quant.weights = WeightFormat::kNvfp4;
  r.quant.activations = ActivationFormat::kNvfp4;
  EXPECT_NE(validate(r).find("expert_bias"), std::string::npos) << validate(r);
  r = biased_recipe();
  r.edits.push_back({"down.b", {0, 96}, 1.0});
  EXPECT_FALSE(validate(r).empty()) << "down.b has H = 96 rows";
  r = biased_recipe();
  r.expert_bias = false;
  r.edits.push_back({"gate.b", {0, 0}, 1.0});
  EXPECT_FALSE(validate(r).empty()) << "no bias tensors without expert_bias";
}

TEST(ExpertBias, MaterializedBiasesAreBf16SizedAndEditable) {
  CaseRecipe r = biased_recipe(WeightFormat::kBf16);
  r.edits.push_back({"up.b", {2, 5}, 1.0 + 0x1p-12});  // not a bf16 value: rounded to 1
  const Case c = materialize(r);
  ASSERT_EQ(c.experts.size(), 6u);
  int nonzero = 0;
  for (const ExpertWeights& w : c.experts) {
    ASSERT_EQ(w.gate_bias.size(), 64u);
    ASSERT_EQ(w.up_bias.size(), 64u);
    ASSERT_EQ(w.down_bias.size(), 96u);
    for (const auto* b : {&w.gate_bias, &w.up_bias, &w.down_bias})
      for (float v : *b) {
        EXPECT_EQ(v, round_to_bf16(v));
        nonzero += v != 0.0f;
      }
  }
  EXPECT_GT(nonzero, 500);
  EXPECT_EQ(c.experts[2].up_bias[5], 1.0f);
  CaseRecipe off = r;
  off.expert_bias = false;
  off.edits.clear();
  EXPECT_TRUE(materialize(off).experts[0].gate_bias.empty());
  EXPECT_NE(content_hash(c), content_hash(materialize(off)));
}

TEST(ExpertBias, OracleExpectsTheBias) {
  // The same case with and without biases: the CPU kernel (which adds them) passes ORACLE on both,
  // compared on most elements, while its outputs differ on most elements - so the oracle's expected
  // outputs moved with the biases (a non-vacuous pass on both).
  const auto cpu = make_kernel("cpu");
  const CheckOptions only_oracle{.invariants = {&invariant_by_code("ORACLE")}};
  for (WeightFormat f : {WeightFormat::kMxfp4, WeightFormat::kBf16}) {
    std::vector<float> outputs[2];
    for (bool bias : {false, true}) {
      CaseRecipe r = biased_recipe(f);
      r.expert_bias = bias;
      const Case c = materialize(r);
      const CaseReport rep = check_case(*cpu, c, only_oracle);
      ASSERT_EQ(rep.verdicts.size(), 1u);
      EXPECT_EQ(rep.verdicts[0].outcome, Outcome::kPass) << rep.verdicts[0].message;
      EXPECT_GT(rep.verdicts[0].compared, 6 * 96 / 2);
      outputs[bias] = run_guarded(*cpu, c, RunOptions{}).result.output;
    }
    ASSERT_EQ(outputs[0].size(), outputs[1].size());
    size_t moved = 0;
    for (size_t i = 0; i < outputs[0].size(); ++i) moved += outputs[0][i] != outputs[1][i];
    EXPECT_GT(moved, outputs[0].size() / 2) << "the biases must change the layer's output";
  }
}

TEST(ExpertBias, DroppedFc1BiasIsKilledByTheOracleOnlyWhereBiasesExist) {
  const auto mutant = make_kernel("mutant/m5-fc1-bias-dropped");
  const CheckOptions only_oracle{.invariants = {&invariant_by_code("ORACLE")}};
  for (WeightFormat f : {WeightFormat::kMxfp4, WeightFormat::kBf16}) {
    const CaseRecipe r = biased_recipe(f);
    ASSERT_EQ(mutant->supports(r), "");
    const CaseReport bad = check_case(*mutant, materialize(r), only_oracle);
    EXPECT_TRUE(bad.verdicts[0].failed()) << bad.verdicts[0].message;
    CaseRecipe off = r;
    off.expert_bias = false;
    EXPECT_NE(mutant->supports(off), "") << "an M5 path is a biased path: it declines the others";
  }
}

TEST(ExpertBias, PaddingKeepsTheBiasedLayer) {
  // PAD's transform gives the padded rows zero biases: the CPU kernel's first H columns are unchanged.
  const auto cpu = make_kernel("cpu");
  const Case c = materialize(biased_recipe());
  const Case padded = pad_dims(c, 128, 96);
  ASSERT_EQ(padded.experts[0].gate_bias.size(), 96u);
  ASSERT_EQ(padded.experts[0].down_bias.size(), 128u);
  EXPECT_EQ(padded.experts[0].down_bias[127], 0.0f);
  const LayerResult a = run_guarded(*cpu, c, RunOptions{}).result;
  const LayerResult b = run_guarded(*cpu, padded, RunOptions{}).result;
  for (int64_t t = 0; t < 6; ++t)
    for (int64_t h = 0; h < 96; ++h)
      EXPECT_EQ(a.output[static_cast<size_t>(t * 96 + h)], b.output[static_cast<size_t>(t * 128 + h)]);
}

// The correct CPU kernels, cpu-matmul-ogs (the triton-matmul-ogs contract) among them, pass every cheap
// invariant on the generator's biased cases (small shapes: bf16 and MXFP4 weights).
TEST(ExpertBias, CorrectKernelsPassEveryInvariantOnGeneratedBiasedCases) {
  const auto gen = gen::recipe(gen::ShapeClass::kSmall);
  std::vector<CaseRecipe> cases;
  for (uint64_t i = 0; cases.size() < 16 && i < 6000; ++i) {
    CaseRecipe r = gen::sample(gen, 78, i);
    if (r.expert_bias) cases.push_back(r);
  }
  ASSERT_EQ(cases.size(), 16u) << "the generator draws expert biases";
  int oracle_compared = 0;
  for (const char* name : {"cpu", "cpu-trtllm", "cpu-matmul-ogs"}) {
    const auto kernel = make_kernel(name);
    for (const CaseRecipe& r : cases) {
      ASSERT_EQ(kernel->supports(r), "") << kernel->name();
      const CaseReport rep =
          check_case(*kernel, materialize(r), CheckOptions{.invariants = select_invariants("all")});
      for (const Verdict& v : rep.verdicts) {
        EXPECT_FALSE(v.failed()) << kernel->name() << " " << v.signature() << ": " << v.message << "\n"
                                 << to_text(r);
        if (v.invariant == "ORACLE" && v.outcome == Outcome::kPass) oracle_compared += v.compared > 0;
      }
    }
  }
  EXPECT_GT(oracle_compared, 36) << "ORACLE must judge (not skip) most biased cases";
}

// gpt-oss's model shapes carry biases on every bf16 or MXFP4 case.
TEST(ExpertBias, GptOssModelCasesCarryBiases) {
  const auto gen = gen::model("gpt-oss");
  int biased = 0, eligible = 0;
  for (uint64_t i = 0; i < 40; ++i) {
    const CaseRecipe r = gen::sample(gen, 5, i);
    const bool dense = r.quant.weights == WeightFormat::kBf16 || r.quant.weights == WeightFormat::kMxfp4;
    eligible += dense;
    biased += r.expert_bias;
    EXPECT_EQ(r.expert_bias, dense) << to_text(r);
  }
  EXPECT_GT(eligible, 10);
  EXPECT_EQ(biased, eligible);
}

}  // namespace
}  // namespace moefuzz
