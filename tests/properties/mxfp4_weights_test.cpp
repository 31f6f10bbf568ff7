// MXFP4 weights (weight_format mxfp4, W4A16 as gpt-oss on Hopper; SPEC-formats.md §3): the recipe
// field, the case's tensors and edits, and the layer oracle on the built-in CPU kernels - every
// correct kernel passes every cheap invariant on generated MXFP4-weight cases (not vacuously), and
// the MXFP4 mutants (SPEC-formats M1, M4) are caught and are the correct kernel on other formats.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/case.h"
#include "core/e8m0.h"
#include "core/errors.h"
#include "core/recipe_text.h"
#include "drivers/check_engine.h"
#include "kernels/registry.h"
#include "properties/gen/recipe_gen.h"
#include "properties/invariant.h"
#include "support/weight_format_sweep.h"

namespace moefuzz {
namespace {

CaseRecipe mx_recipe() {
  CaseRecipe r;
  r.seed = 11;
  r.shape = {.tokens = 5, .hidden = 96, .inter = 64, .experts = 6, .top_k = 2};
  r.quant.activations = ActivationFormat::kBf16;
  r.quant.weights = WeightFormat::kMxfp4;
  return r;
}

TEST(Mxfp4Weights, RecipeTextRoundTrips) {
  const CaseRecipe r = mx_recipe();
  const std::string text = to_text(r);
  EXPECT_NE(text.find("weight_format = mxfp4"), std::string::npos);
  EXPECT_EQ(parse_recipe(text, "test"), r);
}

TEST(Mxfp4Weights, ValidationSaysWhatIsWrong) {
  CaseRecipe r = mx_recipe();
  r.quant.activations = ActivationFormat::kNvfp4;
  EXPECT_NE(validate(r).find("mxfp4 weights need bf16 activations"), std::string::npos) << validate(r);
  r = mx_recipe();
  r.quant.gate_up_scale_ratio = 2.0;
  EXPECT_NE(validate(r).find("gate_up_scale_ratio"), std::string::npos);
  r = mx_recipe();
  r.shape.inter = 48;
  EXPECT_NE(validate(r).find("multiples of 32"), std::string::npos) << validate(r);
  r = mx_recipe();
  r.edits.push_back({"gate.code", {0, 0, 0}, 3});
  EXPECT_FALSE(validate(r).empty()) << "NVFP4 tensors do not exist with MXFP4 weights";
  r = mx_recipe();
  r.edits.push_back({"gate.mx_code", {0, 0, 0}, 16});
  EXPECT_FALSE(validate(r).empty()) << "an E2M1 code is 0..15";
  r = mx_recipe();
  r.edits.push_back({"up.mx_scale", {0, 0, 3}, 1});
  EXPECT_FALSE(validate(r).empty()) << "H = 96 has 3 blocks of 32";
  r = mx_recipe();
  r.quant.weights = WeightFormat::kBf16;
  r.edits.push_back({"gate.mx_scale", {0, 0, 0}, 3});
  EXPECT_FALSE(validate(r).empty()) << "MXFP4 tensors do not exist with bf16 weights";
  r = mx_recipe();
  r.edits.push_back({"down.mx_scale", {5, 95, 1}, 255});
  EXPECT_EQ(validate(r), "");
}

TEST(Mxfp4Weights, CaseHoldsMxfp4TensorsOnlyAndEditsReachThem) {
  CaseRecipe r = mx_recipe();
  r.edits.push_back({"down.mx_scale", {2, 95, 1}, 134});
  r.edits.push_back({"gate.mx_code", {1, 3, 7}, 0xF});
  const Case c = materialize(r);
  ASSERT_EQ(c.experts.size(), 6u);
  for (const ExpertWeights& w : c.experts) {
    EXPECT_TRUE(w.gate.packed.empty() && w.bf16.gate.empty());
    EXPECT_EQ(w.mx.gate.rows, 64);
    EXPECT_EQ(w.mx.gate.cols, 96);
    EXPECT_EQ(w.mx.gate.scale_cols, 3);
    EXPECT_EQ(w.mx.down.rows, 96);
    EXPECT_EQ(w.mx.down.scale_cols, 2);
  }
  EXPECT_EQ(c.experts[2].mx.down.scale(95, 1), 134);
  EXPECT_EQ(c.experts[1].mx.gate.code(3, 7), 0xF);
  // Deterministic, and a different content hash from the same recipe with bf16 weights.
  EXPECT_EQ(content_hash(materialize(r)), content_hash(c));
  CaseRecipe b = r;
  b.quant.weights = WeightFormat::kBf16;
  b.edits.clear();
  EXPECT_NE(content_hash(materialize(b)), content_hash(c));
  // Drawn through the NVFP4 draw: mostly nonzero codes, scales near 2^0 under the normal profile.
  int nonzero = 0;
  for (uint8_t code : c.experts[0].mx.gate.codes) nonzero += (code & 0x7) != 0;
  EXPECT_GT(nonzero, 64 * 96 / 2);
}

// tiny_scales and wide_scales reach the E8M0 corners (codes 1 and 0xFE); 0xFF is never drawn.
TEST(Mxfp4Weights, ScaleProfilesReachTheE8m0Corners) {
  bool one = false, top = false, nan = false;
  for (uint64_t seed = 1; seed <= 40 && !(one && top); ++seed) {
    CaseRecipe r = mx_recipe();
    r.seed = seed;
    for (WeightProfile p : {WeightProfile::kTinyScales, WeightProfile::kWideScales}) {
      r.values.weights = p;
      for (const ExpertWeights& w : materialize(r).experts)
        for (uint8_t s : w.mx.gate.scales) {
          one |= s == 1;
          top |= s == kE8m0MaxCode;
          nan |= s == kE8m0NaNCode;
        }
    }
  }
  EXPECT_TRUE(one);
  EXPECT_TRUE(top);
  EXPECT_FALSE(nan);
}

// Every correct CPU kernel, every cheap invariant, on generated MXFP4-weight cases (small shapes).
TEST(Mxfp4Weights, CorrectKernelsPassEveryInvariant) {
  EXPECT_GT(test_support::correct_kernels_pass_every_invariant(WeightFormat::kMxfp4, 24, 4000), 48)
      << "ORACLE must judge (not skip) most MXFP4 cases";
}

// A mutant fails ORACLE on `mx` and passes it where the weights are NVFP4 or bf16.
void expect_killed_only_on_mxfp4(const char* mutant_name, const CaseRecipe& mx) {
  const auto mutant = make_kernel(mutant_name);
  const auto correct = make_kernel("cpu");
  const CheckOptions only_oracle{.invariants = {&invariant_by_code("ORACLE")}};
  const Case c = materialize(mx);
  const CaseReport bad = check_case(*mutant, c, only_oracle);
  ASSERT_EQ(bad.verdicts.size(), 1u);
  EXPECT_TRUE(bad.verdicts[0].failed()) << mutant_name << ": " << bad.verdicts[0].message;
  const CaseReport good = check_case(*correct, c, only_oracle);
  EXPECT_EQ(good.verdicts[0].outcome, Outcome::kPass) << good.verdicts[0].message;
  for (WeightFormat other : {WeightFormat::kNvfp4, WeightFormat::kBf16}) {
    CaseRecipe r = mx;
    r.quant.weights = other;
    r.edits.clear();
    const CaseReport same = check_case(*mutant, materialize(r), only_oracle);
    EXPECT_EQ(same.verdicts[0].outcome, Outcome::kPass) << mutant_name << ": " << same.verdicts[0].message;
  }
}

TEST(Mxfp4Weights, ScaleTailUnmaskedMutantIsKilledByTheOracle) {
  expect_killed_only_on_mxfp4("mutant/m1-mx-scale-tail-unmasked", mx_recipe());  // H = 96: 3 blocks
}

TEST(Mxfp4Weights, NanSentinelOnFloatMutantIsKilledByTheOracle) {
  CaseRecipe r = mx_recipe();
  for (int64_t e = 0; e < 6; ++e) r.edits.push_back({"gate.mx_scale", {e, 0, 0}, 134});  // 2^7
  expect_killed_only_on_mxfp4("mutant/m4-mx-nan-sentinel-on-float", r);
}

}  // namespace
}  // namespace moefuzz
