// FP8 block-scaled W8A8 layers (weight_format fp8_block; SPEC-formats.md §1) in the generators, the
// case transforms and the checks: the generators draw FP8 cases (valid, H and I multiples of 128, UE8M0
// half the time, value corners moved onto block scales), PAD's zero padding leaves an FP8 layer's
// output unchanged on the CPU kernel, CANARY's fingerprint covers the FP8 tensors, every correct CPU
// kernel passes every cheap invariant on FP8 cases, and ORACLE kills every FP8 mutant.
#include <gtest/gtest.h>

#include <string>

#include "core/case.h"
#include "core/recipe_text.h"
#include "drivers/check_engine.h"
#include "kernels/canary.h"
#include "kernels/registry.h"
#include "properties/case_transforms.h"
#include "properties/gen/recipe_gen.h"
#include "properties/invariant.h"
#include "support/weight_format_sweep.h"

namespace moefuzz {
namespace {

struct Fp8Draws {
  int fp8 = 0, ue8m0 = 0, scale_edits = 0, total = 0;
};

Fp8Draws count_fp8(const rc::Gen<CaseRecipe>& g, uint64_t seed, int n) {
  Fp8Draws d;
  for (int i = 0; i < n; ++i) {
    const CaseRecipe r = gen::sample(g, seed, static_cast<uint64_t>(i), 100);
    ++d.total;
    EXPECT_EQ(validate(r), "") << to_text(r);
    const bool fp8 = r.quant.weights == WeightFormat::kFp8Block;
    EXPECT_EQ(fp8, r.quant.activations == ActivationFormat::kFp8Group);
    if (!fp8) {
      EXPECT_FALSE(r.quant.fp8_ue8m0);
      continue;
    }
    ++d.fp8;
    d.ue8m0 += r.quant.fp8_ue8m0;
    EXPECT_EQ(r.shape.hidden % 128, 0);
    EXPECT_EQ(r.shape.inter % 128, 0);
    EXPECT_EQ(r.quant.gate_up_scale_ratio, 1.0);
    for (const Edit& e : r.edits) {
      EXPECT_TRUE(e.tensor.find(".global") == std::string::npos) << "FP8 weights have no global scale";
      d.scale_edits += e.tensor.ends_with(".fp8_scale");
    }
  }
  return d;
}

TEST(Fp8BlockWeights, GeneratorsDrawValidFp8CasesInEveryShapeClass) {
  const Fp8Draws small = count_fp8(gen::recipe(gen::ShapeClass::kSmall), 3, 600);
  EXPECT_GT(small.fp8, 600 / 20) << "H, I rounded up to 128 for one case in four of the NVFP4 ones";
  EXPECT_LT(small.fp8, 600 / 3);
  EXPECT_GT(small.ue8m0, 0);
  EXPECT_LT(small.ue8m0, small.fp8);
  EXPECT_GT(small.scale_edits, 0) << "value corners reach FP8 block scales";
  const Fp8Draws large = count_fp8(gen::recipe(gen::ShapeClass::kLarge), 3, 60);
  EXPECT_GT(large.fp8, 60 / 10) << "large shapes mostly have H, I multiples of 128";
  const Fp8Draws deepseek = count_fp8(gen::model("deepseek-v3"), 3, 24);
  EXPECT_GT(deepseek.fp8, 0);
}

// Padding H and I with zero blocks (PAD's transform) changes no output bit of the correct kernel:
// the new K blocks add exact zeros, the new rows and groups are zero.
TEST(Fp8BlockWeights, PaddingLeavesTheCpuKernelsOutputUnchanged) {
  CaseRecipe r;
  r.seed = 9;
  r.shape = {.tokens = 3, .hidden = 128, .inter = 128, .experts = 3, .top_k = 2};
  r.quant.weights = WeightFormat::kFp8Block;
  r.quant.activations = ActivationFormat::kFp8Group;
  for (bool ue8m0 : {false, true}) {
    r.quant.fp8_ue8m0 = ue8m0;
    const Case c = materialize(r);
    const Case p = pad_dims(c, 256, 256);
    EXPECT_EQ(p.experts[0].fp8.gate.scale_cols, 2);
    EXPECT_EQ(p.experts[0].fp8.down.scale_rows, 2);
    const auto k = make_kernel("cpu");
    LayerResult a, b;
    k->run_layer(c, {}, a);
    k->run_layer(p, {}, b);
    ASSERT_EQ(a.output.size(), 3u * 128);
    for (int64_t t = 0; t < 3; ++t)
      for (int64_t h = 0; h < 128; ++h)
        EXPECT_EQ(a.output[t * 128 + h], b.output[t * 256 + h]) << t << " " << h;
  }
  EXPECT_THROW(pad_dims(materialize(r), 192, 128), std::invalid_argument);
}

TEST(Fp8BlockWeights, CanaryFingerprintCoversTheFp8Tensors) {
  CaseRecipe r;
  r.shape = {.tokens = 2, .hidden = 128, .inter = 128, .experts = 2, .top_k = 1};
  r.quant.weights = WeightFormat::kFp8Block;
  r.quant.activations = ActivationFormat::kFp8Group;
  Case c = materialize(r);
  const uint64_t before = case_fingerprint(c);
  c.experts[1].fp8.down.codes[5] ^= 1;
  EXPECT_NE(case_fingerprint(c), before);
  c.experts[1].fp8.down.codes[5] ^= 1;
  c.experts[0].fp8.up.scales[0] *= 2;
  EXPECT_NE(case_fingerprint(c), before);
}

// Every correct CPU kernel, every cheap invariant, on generated FP8 cases (small shapes).
TEST(Fp8BlockWeights, CorrectKernelsPassEveryInvariant) {
  EXPECT_GT(test_support::correct_kernels_pass_every_invariant(WeightFormat::kFp8Block, 12, 4000), 24)
      << "ORACLE must judge (not skip) most FP8 cases";
}

// A mutant fails ORACLE on `fp8` (and the correct kernel passes it); its domain is FP8 only.
void expect_killed_by_the_oracle(const char* mutant_name, const CaseRecipe& fp8) {
  const auto mutant = make_kernel(mutant_name);
  const auto correct = make_kernel("cpu");
  ASSERT_EQ(mutant->supports(fp8), "");
  const CheckOptions only_oracle{.invariants = {&invariant_by_code("ORACLE")}};
  const Case c = materialize(fp8);
  const CaseReport bad = check_case(*mutant, c, only_oracle);
  ASSERT_EQ(bad.verdicts.size(), 1u);
  EXPECT_TRUE(bad.verdicts[0].failed()) << mutant_name << ": " << bad.verdicts[0].message;
  const CaseReport good = check_case(*correct, c, only_oracle);
  EXPECT_EQ(good.verdicts[0].outcome, Outcome::kPass) << good.verdicts[0].message;
  CaseRecipe nv = fp8;
  nv.quant.weights = WeightFormat::kNvfp4;
  nv.quant.activations = ActivationFormat::kNvfp4;
  nv.quant.fp8_ue8m0 = false;
  EXPECT_NE(mutant->supports(nv), "") << mutant_name << " declines the other weight formats";
}

CaseRecipe fp8_case(bool ue8m0) {
  CaseRecipe r;
  r.seed = 31;
  r.shape = {.tokens = 4, .hidden = 256, .inter = 256, .experts = 4, .top_k = 2};
  r.quant.weights = WeightFormat::kFp8Block;
  r.quant.activations = ActivationFormat::kFp8Group;
  r.quant.fp8_ue8m0 = ue8m0;
  r.values.hidden = HiddenProfile::kTokenSpread;
  return r;
}

TEST(Fp8BlockWeights, EveryFp8MutantIsKilledByTheOracle) {
  for (const char* m :
       {"mutant/f1-amax-floor-as-ceiling", "mutant/f9-scale-block-row-offset",
        "mutant/f-kmajor-scale-transposed", "mutant/f-act-group-64", "mutant/f-per-tensor-act-scale"})
    expect_killed_by_the_oracle(m, fp8_case(false));
  for (const char* m : {"mutant/f3-ue8m0-not-rounded-up", "mutant/f5-act-ue8m0-ignored"})
    expect_killed_by_the_oracle(m, fp8_case(true));
}

}  // namespace
}  // namespace moefuzz
