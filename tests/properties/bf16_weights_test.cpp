// bf16 weights (weight_format bf16, W16A16; SPEC-formats.md §2): the recipe field, the case's tensors
// and edits, and the layer oracle on the built-in CPU kernels - every correct kernel passes every
// cheap invariant on generated bf16-weight cases (not vacuously), and the bf16 mutant is caught.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/case.h"
#include "core/errors.h"
#include "core/recipe_text.h"
#include "drivers/check_engine.h"
#include "kernels/registry.h"
#include "properties/gen/recipe_gen.h"
#include "properties/invariant.h"
#include "support/weight_format_sweep.h"

namespace moefuzz {
namespace {

CaseRecipe bf16_recipe() {
  CaseRecipe r;
  r.seed = 11;
  r.shape = {.tokens = 5, .hidden = 80, .inter = 48, .experts = 6, .top_k = 2};
  r.quant.activations = ActivationFormat::kBf16;
  r.quant.weights = WeightFormat::kBf16;
  return r;
}

TEST(Bf16Weights, RecipeTextRoundTripsAndNvfp4TextIsUnchanged) {
  const CaseRecipe r = bf16_recipe();
  const std::string text = to_text(r);
  EXPECT_NE(text.find("weight_format = bf16"), std::string::npos);
  EXPECT_EQ(parse_recipe(text, "test"), r);
  CaseRecipe n = r;
  n.quant.weights = WeightFormat::kNvfp4;
  EXPECT_EQ(to_text(n).find("weight_format"), std::string::npos) << "NVFP4 recipes print as before";
}

TEST(Bf16Weights, ValidationSaysWhatIsWrong) {
  CaseRecipe r = bf16_recipe();
  r.quant.activations = ActivationFormat::kNvfp4;
  EXPECT_NE(validate(r).find("bf16 activations"), std::string::npos) << validate(r);
  r = bf16_recipe();
  r.quant.gate_up_scale_ratio = 2.0;
  EXPECT_NE(validate(r).find("gate_up_scale_ratio"), std::string::npos);
  r = bf16_recipe();
  r.edits.push_back({"gate.code", {0, 0, 0}, 3});
  EXPECT_FALSE(validate(r).empty()) << "NVFP4 tensors do not exist with bf16 weights";
  r = bf16_recipe();
  r.quant.weights = WeightFormat::kNvfp4;
  r.edits.push_back({"gate.w", {0, 0, 0}, 3});
  EXPECT_FALSE(validate(r).empty()) << "bf16 tensors do not exist with NVFP4 weights";
  EXPECT_THROW(parse_recipe("MOEFUZZ v1\nweight_format fp8\n", "test"), InputError);
}

TEST(Bf16Weights, CaseHoldsBf16TensorsOnlyAndEditsReachThem) {
  CaseRecipe r = bf16_recipe();
  r.edits.push_back({"down.w", {2, 79, 47}, -3.0e38});
  const Case c = materialize(r);
  ASSERT_EQ(c.experts.size(), 6u);
  for (const ExpertWeights& w : c.experts) {
    EXPECT_TRUE(w.gate.packed.empty() && w.up.packed.empty() && w.down.packed.empty());
    EXPECT_EQ(w.bf16.gate.rows, 48);
    EXPECT_EQ(w.bf16.gate.cols, 80);
    EXPECT_EQ(w.bf16.down.rows, 80);
    EXPECT_EQ(w.bf16.down.cols, 48);
  }
  EXPECT_EQ(c.experts[2].bf16.down.value(79, 47), bf16_to_float(bf16_from_float(-3.0e38f)));
  // Deterministic, and a different content hash from the same recipe with NVFP4 weights.
  EXPECT_EQ(content_hash(materialize(r)), content_hash(c));
  CaseRecipe n = r;
  n.quant.weights = WeightFormat::kNvfp4;
  n.edits.clear();
  EXPECT_NE(content_hash(materialize(n)), content_hash(c));
  // Weights are not all zero and carry more than the NVFP4 code magnitudes (the jitter).
  int nonzero = 0, odd_mantissa = 0;
  for (int64_t i = 0; i < 48 * 80; ++i) {
    const uint16_t b = c.experts[0].bf16.gate.bits[static_cast<size_t>(i)];
    nonzero += (b & 0x7FFF) != 0;
    odd_mantissa += (b & 1) != 0;
  }
  EXPECT_GT(nonzero, 48 * 80 / 2);
  EXPECT_GT(odd_mantissa, 48 * 80 / 8);
}

TEST(Bf16Weights, TinyScalesReachBf16Subnormals) {
  bool subnormal = false;
  for (uint64_t seed = 1; seed <= 40 && !subnormal; ++seed) {
    CaseRecipe r = bf16_recipe();
    r.seed = seed;
    r.values.weights = WeightProfile::kTinyScales;
    for (const ExpertWeights& w : materialize(r).experts)
      for (uint16_t b : w.bf16.gate.bits) subnormal |= (b & 0x7F80) == 0 && (b & 0x7F) != 0;
  }
  EXPECT_TRUE(subnormal);
}

// Every correct CPU kernel, every cheap invariant, on generated bf16-weight cases (small shapes).
TEST(Bf16Weights, CorrectKernelsPassEveryInvariant) {
  EXPECT_GT(test_support::correct_kernels_pass_every_invariant(WeightFormat::kBf16, 24, 2000), 48)
      << "ORACLE must judge (not skip) most bf16 cases";
}

// At model widths the worst-case propagation of GEMM1's bound through SiLU and GEMM2 outgrows the
// output (a vacuous verdict). A kernel that exposes its activation rows conditions GEMM2 on them (after
// admitting them), so ORACLE judges the output with GEMM2's own rounding bound: not vacuous.
TEST(Bf16Weights, ExposedActivationsKeepTheOracleTightAtModelWidths) {
  CaseRecipe r = bf16_recipe();
  r.shape = {.tokens = 4, .hidden = 1024, .inter = 512, .experts = 8, .top_k = 4};
  const Case c = materialize(r);
  const auto cpu = make_kernel("cpu");
  const CaseReport rep = check_case(*cpu, c, CheckOptions{.invariants = {&invariant_by_code("ORACLE")}});
  ASSERT_EQ(rep.verdicts.size(), 1u);
  EXPECT_EQ(rep.verdicts[0].outcome, Outcome::kPass) << rep.verdicts[0].message;
  EXPECT_GT(rep.verdicts[0].compared, 0);
}

TEST(Bf16Weights, RaggedKTileMutantIsKilledByTheOracle) {
  const auto mutant = make_kernel("mutant/b7-ragged-k-tile-dropped");
  const auto correct = make_kernel("cpu");
  CaseRecipe r = bf16_recipe();  // H = 80, I = 48: both have a ragged 64-wide K tile
  const Case c = materialize(r);
  const CheckOptions only_oracle{.invariants = {&invariant_by_code("ORACLE")}};
  const CaseReport bad = check_case(*mutant, c, only_oracle);
  ASSERT_EQ(bad.verdicts.size(), 1u);
  EXPECT_TRUE(bad.verdicts[0].failed()) << bad.verdicts[0].message;
  const CaseReport good = check_case(*correct, c, only_oracle);
  EXPECT_EQ(good.verdicts[0].outcome, Outcome::kPass) << good.verdicts[0].message;
  // On NVFP4 weights the mutant is the correct kernel.
  r.quant.weights = WeightFormat::kNvfp4;
  const CaseReport same = check_case(*mutant, materialize(r), only_oracle);
  EXPECT_EQ(same.verdicts[0].outcome, Outcome::kPass) << same.verdicts[0].message;
}

}  // namespace
}  // namespace moefuzz
