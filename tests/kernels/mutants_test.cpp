// Every mutant deviates from its correct twin (`cpu`, same profile) on a case that triggers its bug,
// and - where the bug has a domain - not on a case that does not.
#include <gtest/gtest.h>

#include <cmath>

#include "core/bf16.h"
#include "core/index_products.h"
#include "kernel_test_cases.h"
#include "kernels/registry.h"

namespace moefuzz {
namespace {

bool deviates(const std::string& mutant, const Case& c, RunOptions opts = {}) {
  const LayerResult good = testing::run_kernel(*make_kernel("cpu"), c, opts);
  const LayerResult bad = testing::run_kernel(*make_kernel(mutant), c, opts);
  return !testing::same_bits(good.output, bad.output) || good.routing.ids != bad.routing.ids ||
         !testing::same_bits(good.routing.weights, bad.routing.weights) ||
         (good.fc1_input && bad.fc1_input &&
          (good.fc1_input->packed != bad.fc1_input->packed ||
           good.fc1_input->scales != bad.fc1_input->scales));
}

Case base_case(RoutingMode mode = RoutingMode::kSoftmax, uint64_t seed = 5) {
  return materialize(testing::small_recipe(seed, mode));
}

TEST(Mutants, ZooIsCompleteAndEveryMutantNamesItsKillers) {
  int mutants = 0;
  for (const auto& e : kernel_registry()) {
    if (e.kind != KernelKind::kMutant) continue;
    auto k = e.make();
    EXPECT_TRUE(k->is_mutant()) << e.name;
    EXPECT_FALSE(k->description().empty()) << e.name;
    EXPECT_EQ(k->profile(), make_kernel("cpu")->profile()) << e.name;
    ++mutants;
  }
  EXPECT_GE(mutants, 15);
}

TEST(Mutants, RsfTwiceAndNeverOnlyWhenRsfIsNotOne) {
  Case c = base_case();
  EXPECT_TRUE(deviates("mutant/z1-rsf-twice", c));
  EXPECT_TRUE(deviates("mutant/z2-rsf-never", c));
  CaseRecipe r = c.recipe;
  r.routing.routed_scaling_factor = 1.0;
  const Case one = materialize(r);
  EXPECT_FALSE(deviates("mutant/z1-rsf-twice", one));
  EXPECT_FALSE(deviates("mutant/z2-rsf-never", one));
}

TEST(Mutants, ZeroGroupMaskOnlyWithNegativeBiasedScores) {
  Case c = base_case(RoutingMode::kSigmoidGrouped);
  EXPECT_FALSE(deviates("mutant/z3-group-mask-zero", c));  // biased scores > 0: 0 never wins
  for (float& b : c.bias) b = -2.0f;                       // sigmoid + bias < -1 < 0 everywhere
  EXPECT_TRUE(deviates("mutant/z3-group-mask-zero", c));
}

TEST(Mutants, RawLogitWeightsOnlyWithoutRenormalize) {
  CaseRecipe r = testing::small_recipe(5, RoutingMode::kSoftmax);
  EXPECT_FALSE(deviates("mutant/z4-raw-logit-weights", materialize(r)));
  r.routing.renormalize = false;
  EXPECT_TRUE(deviates("mutant/z4-raw-logit-weights", materialize(r)));
}

TEST(Mutants, MissingEpsilonGivesNaNOnlyWhenSigmoidsUnderflow) {
  Case c = base_case(RoutingMode::kSigmoidGrouped);
  EXPECT_FALSE(deviates("mutant/z5-no-renorm-epsilon", c));
  for (float& x : c.logits) x = -100.0f;  // sigmoid(-100) = 1/(1+inf) = 0 in fp32
  const LayerResult bad = testing::run_kernel(*make_kernel("mutant/z5-no-renorm-epsilon"), c);
  EXPECT_TRUE(std::isnan(bad.routing.weights[0]));
  const LayerResult good = testing::run_kernel(*make_kernel("cpu"), c);
  EXPECT_EQ(good.routing.weights[0], 0.0f);
}

TEST(Mutants, RacyCombineDiffersBetweenRuns) {
  auto k = make_kernel("mutant/z6-racy-combine");
  const Case c = base_case();
  const auto first = testing::run_kernel(*k, c).output;
  const auto second = testing::run_kernel(*k, c).output;
  EXPECT_FALSE(testing::same_bits(first, second));
  EXPECT_TRUE(testing::same_bits(first, testing::run_kernel(*make_kernel("cpu"), c).output));
}

TEST(Mutants, Int32OffsetWrapsOnlyPast2To31) {
  // The index math itself (core/index_products.h); OVF's window probes check the values end to end.
  const int64_t H = 7168;
  const int64_t last_safe = (int64_t{1} << 31) / H;  // rows * H stays below 2^31 up to here
  for (int64_t row : {int64_t{0}, int64_t{1}, last_safe})
    EXPECT_EQ(formed_offset(row, H, 0, IndexWidth::kInt32), row * H);
  const int64_t wraps = last_safe + 1;  // first row whose offset passes 2^31
  EXPECT_NE(formed_offset(wraps, H, 0, IndexWidth::kInt32), wraps * H);
  EXPECT_LT(formed_offset(wraps, H, 0, IndexWidth::kInt32), 0);
  EXPECT_EQ(formed_offset(wraps, H, 0, IndexWidth::kUint32), wraps * H);  // unsigned wraps at 2^32
  EXPECT_FALSE(deviates("mutant/z7-int32-row-offset", base_case()));
}

TEST(Mutants, DuplicateIdDroppedOnlyWithDuplicates) {
  Case c = base_case(RoutingMode::kHash);
  const int64_t k = c.recipe.shape.top_k;
  ASSERT_GE(k, 2);
  // Distinct rows: no deviation.
  for (int64_t row = 0; row * k < static_cast<int64_t>(c.hash_table.size()); ++row)
    for (int64_t s = 0; s < k; ++s) c.hash_table[row * k + s] = static_cast<int32_t>(s);
  EXPECT_FALSE(deviates("mutant/z8-duplicate-id-dropped", c));
  for (int64_t row = 0; row * k < static_cast<int64_t>(c.hash_table.size()); ++row)
    c.hash_table[row * k + 1] = c.hash_table[row * k];
  EXPECT_TRUE(deviates("mutant/z8-duplicate-id-dropped", c));
}

TEST(Mutants, TileOverhangCorruptsTheNextRowOnlyForRaggedH) {
  CaseRecipe r = testing::small_recipe(6, RoutingMode::kSoftmax);
  r.shape.tokens = 3;
  r.shape.hidden = 48;
  EXPECT_TRUE(deviates("mutant/z9-tile-overhang", materialize(r)));
  r.shape.hidden = 64;
  EXPECT_FALSE(deviates("mutant/z9-tile-overhang", materialize(r)));
}

TEST(Mutants, SwizzleTailOnlyForRowCountsNotMultipleOf128) {
  CaseRecipe r = testing::small_recipe(4, RoutingMode::kSoftmax);
  r.shape.tokens = 2;
  EXPECT_TRUE(deviates("mutant/z10-swizzle-tail", materialize(r)));
  r.shape.hidden = 128;
  r.shape.inter = 128;
  EXPECT_FALSE(deviates("mutant/z10-swizzle-tail", materialize(r)));
}

TEST(Mutants, GateGlobalForUpOnlyWhenTheHalvesDiffer) {
  Case c = base_case();
  for (auto& e : c.experts) e.up.global_dequant = e.gate.global_dequant;
  EXPECT_FALSE(deviates("mutant/z11-up-uses-gate-global", c));
  for (auto& e : c.experts) e.up.global_dequant = e.gate.global_dequant * 2.0f;
  EXPECT_TRUE(deviates("mutant/z11-up-uses-gate-global", c));
}

TEST(Mutants, ExpertZeroScalesOnlyWhenScalesDiffer) {
  Case c = base_case();
  EXPECT_TRUE(deviates("mutant/z12-expert0-scales", c));
  for (auto& e : c.experts) {
    e.gate.scales = c.experts[0].gate.scales;
    e.up.scales = c.experts[0].up.scales;
    e.down.scales = c.experts[0].down.scales;
  }
  EXPECT_FALSE(deviates("mutant/z12-expert0-scales", c));
}

TEST(Mutants, TruncatedBf16CombineIsSmallButBiased) {
  CaseRecipe r = testing::small_recipe(9, RoutingMode::kSoftmax);
  r.shape.top_k = 4;  // several slot adds per element
  r.shape.tokens = 8;
  r.shape.hidden = 256;
  r.routing.routed_scaling_factor = 1.7;  // non-dyadic weights: partial sums that are not bf16 values
  const Case c = materialize(r);
  const auto good = testing::run_kernel(*make_kernel("cpu"), c).output;
  const auto bad = testing::run_kernel(*make_kernel("mutant/z13-bf16-truncated-combine"), c).output;
  int shrunk = 0, grew = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    // Each of the k = 4 adds truncates the partial sum by < 1 bf16 ulp (2^-8 of the partial): the
    // deviation stays small relative to sum |w y|, never a scale error.
    EXPECT_LE(std::fabs(bad[i] - good[i]), 4 * 0x1p-8 * (std::fabs(good[i]) + 1e-3)) << i;
    shrunk += std::fabs(bad[i]) < std::fabs(good[i]);
    grew += std::fabs(bad[i]) > std::fabs(good[i]);
  }
  // Rounding ties toward zero never grows a magnitude, and the sums of bf16 products land on ties
  // often enough that some element shrinks: a bias DRIFT sees (tests/properties/drift_test.cpp).
  EXPECT_EQ(grew, 0);
  EXPECT_GT(shrunk, 0);
}

TEST(Mutants, FormatMutantsDeviateOnRandomData) {
  const Case c = base_case();
  for (const char* m : {"mutant/fp4-nibble-swap", "mutant/e4m3-truncate", "mutant/fp4-negative-zero"})
    EXPECT_TRUE(deviates(m, c)) << m;
}

TEST(Mutants, TiesAwayOnlyOnExactTies) {
  Case c = base_case();
  c.a1_scale.assign(1, 1.0f);
  const int64_t H = c.recipe.shape.hidden;
  // Block 0 of every token: amax 6 with S_q = 1 gives outScale 1 (cpu_pipeline_test derivation), so
  // y = x; 2.5 is an E2M1 tie (RN-even -> 2, away -> 3). 3.0 is not a tie.
  for (int64_t t = 0; t < c.recipe.shape.tokens; ++t)
    for (int64_t j = 0; j < 16; ++j) c.hidden[t * H + j] = bf16_from_float(j == 0 ? 6.0f : 3.0f);
  const LayerResult good = testing::run_kernel(*make_kernel("cpu"), c);
  const LayerResult no_tie = testing::run_kernel(*make_kernel("mutant/e2m1-ties-away"), c);
  EXPECT_EQ(good.fc1_input->packed[0], no_tie.fc1_input->packed[0]);
  for (int64_t t = 0; t < c.recipe.shape.tokens; ++t) c.hidden[t * H + 1] = bf16_from_float(2.5f);
  EXPECT_TRUE(deviates("mutant/e2m1-ties-away", c));
}

TEST(Mutants, MissingSaturationOnlyForScalesAbove448) {
  Case c = base_case();
  EXPECT_FALSE(deviates("mutant/e4m3-no-saturation", c));
  c.a1_scale.assign(c.a1_scale.size(), 1e6f);  // sf32 = S * amax / 6 far above 448
  const LayerResult bad = testing::run_kernel(*make_kernel("mutant/e4m3-no-saturation"), c);
  EXPECT_EQ(bad.fc1_input->scales[0], 0x7F);
  EXPECT_TRUE(std::isnan((*bad.gemm1)[0]));  // NaN scale -> NaN GEMM (the FC2 amax then drops NaN)
  EXPECT_TRUE(deviates("mutant/e4m3-no-saturation", c));
}

}  // namespace
}  // namespace moefuzz
