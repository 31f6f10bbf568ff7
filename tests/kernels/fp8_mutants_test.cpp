// The FP8 block W8A8 mutants (kernels/mutants/fp8_block_mutants.cpp) deviate from their correct twin
// (`cpu`) on an FP8 case in their domain, exactly where their bug lives (the quantizer mutants in the
// exposed activation codes or scales, the weight-scale mutants in GEMM outputs only), and are the
// `cpu` kernel on NVFP4 cases and outside their domain.
#include <gtest/gtest.h>

#include <string>

#include "kernel_test_cases.h"
#include "kernels/registry.h"

namespace moefuzz {
namespace {

CaseRecipe fp8_recipe(bool ue8m0, int64_t hidden = 256, int64_t inter = 256) {
  CaseRecipe r;
  r.seed = 23;
  r.shape = {.tokens = 5, .hidden = hidden, .inter = inter, .experts = 4, .top_k = 2};
  r.quant.activations = ActivationFormat::kFp8Group;
  r.quant.weights = WeightFormat::kFp8Block;
  r.quant.fp8_ue8m0 = ue8m0;
  // Tokens of different magnitudes: a per-tensor scale differs from every small token's own even
  // after UE8M0's rounding to powers of two.
  r.values.hidden = HiddenProfile::kTokenSpread;
  return r;
}

struct Deviation {
  bool output = false, fc1 = false, fc2 = false;
};

Deviation deviation(const std::string& mutant, const CaseRecipe& r) {
  const Case c = materialize(r);
  const LayerResult good = testing::run_kernel(*make_kernel("cpu"), c);
  const LayerResult bad = testing::run_kernel(*make_kernel(mutant), c);
  Deviation d;
  d.output = !testing::same_bits(good.output, bad.output);
  const auto differs = [](const std::optional<Fp8GroupQuantized>& a,
                          const std::optional<Fp8GroupQuantized>& b) {
    return a.has_value() != b.has_value() ||
           (a && (a->codes != b->codes || a->scales != b->scales || a->group != b->group));
  };
  d.fc1 = differs(good.fc1_fp8, bad.fc1_fp8);
  d.fc2 = differs(good.fc2_fp8, bad.fc2_fp8);
  return d;
}

bool deviates_on_nvfp4(const std::string& mutant) {
  CaseRecipe r = fp8_recipe(false);
  r.quant.weights = WeightFormat::kNvfp4;
  r.quant.activations = ActivationFormat::kNvfp4;
  const Case c = materialize(r);
  return !testing::same_bits(testing::run_kernel(*make_kernel("cpu"), c).output,
                             testing::run_kernel(*make_kernel(mutant), c).output);
}

TEST(Fp8Mutants, QuantizerMutantsChangeTheExposedActivations) {
  for (const char* m :
       {"mutant/f1-amax-floor-as-ceiling", "mutant/f-act-group-64", "mutant/f-per-tensor-act-scale"})
    for (bool ue8m0 : {false, true}) {
      const Deviation d = deviation(m, fp8_recipe(ue8m0));
      EXPECT_TRUE(d.fc1 && d.fc2 && d.output) << m << " ue8m0 " << ue8m0;
      EXPECT_FALSE(deviates_on_nvfp4(m)) << m;
    }
}

TEST(Fp8Mutants, Ue8m0MutantsDeviateOnlyUnderUe8m0) {
  for (const char* m : {"mutant/f3-ue8m0-not-rounded-up", "mutant/f5-act-ue8m0-ignored"}) {
    const Deviation d = deviation(m, fp8_recipe(true));
    EXPECT_TRUE(d.fc1 && d.output) << m;
    const Deviation fp32 = deviation(m, fp8_recipe(false));
    EXPECT_FALSE(fp32.fc1 || fp32.fc2 || fp32.output) << m << ": fp32 scales are outside its domain";
    EXPECT_FALSE(deviates_on_nvfp4(m)) << m;
  }
}

TEST(Fp8Mutants, WeightScaleMutantsChangeOnlyGemmOutputs) {
  for (const char* m : {"mutant/f9-scale-block-row-offset", "mutant/f-kmajor-scale-transposed"}) {
    const Deviation d = deviation(m, fp8_recipe(false));
    EXPECT_TRUE(d.output) << m;
    EXPECT_FALSE(d.fc1) << m << ": the FC1 input is quantized before any weight is read";
    EXPECT_FALSE(deviates_on_nvfp4(m)) << m;
  }
  // One block row or column: a transposed read of a [1, n] or [n, 1] scale array is the same read.
  const Deviation square = deviation("mutant/f-kmajor-scale-transposed", fp8_recipe(false, 128, 128));
  EXPECT_FALSE(square.output);
}

}  // namespace
}  // namespace moefuzz
