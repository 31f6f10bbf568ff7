// The layer oracle on FP8 block-scaled W8A8 layers (weight_format fp8_block, activations fp8_group;
// SPEC-formats.md §1; docs/oracle.md, "FP8 block-scaled layer"): zero false positives of the correct
// CPU pipelines on random FP8 cases, conditioned on their exposed codes and not, with the error/bound
// and the tightness reported (not vacuous); corrupted exposures (a code moved, a scale doubled, groups
// of 64) fail the quantize stage that admits them. The CPU pipeline is run directly (cpu_run_layer
// under each built-in CPU kernel's claimed profile): the registered kernels decline FP8 cases while
// kernels/cpu/cpu_config.cpp's kFp8OracleStages is off.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/case.h"
#include "core/profile.h"
#include "core/recipe_text.h"
#include "core/rng.h"
#include "kernels/cpu/cpu_stages.h"
#include "kernels/kernel.h"
#include "kernels/registry.h"
#include "oracles/fp8_act_envelope.h"
#include "oracles/layer_ref.h"

namespace moefuzz {
namespace {

CaseRecipe fp8_recipe(uint64_t seed) {
  const Stream rng(seed, "fp8-oracle-test");
  uint64_t at = 0;
  const auto next = [&] { return rng.bits(at++); };
  CaseRecipe r;
  r.seed = seed;
  const int64_t experts = 2 + static_cast<int64_t>(next() % 7);
  r.shape = {.tokens = 1 + static_cast<int64_t>(next() % 8),
             .hidden = 128 * (1 + static_cast<int64_t>(next() % 3)),
             .inter = 128 * (1 + static_cast<int64_t>(next() % 2)),
             .experts = experts,
             .top_k = 1 + static_cast<int64_t>(next() % std::min<int64_t>(experts, 4))};
  r.quant.activations = ActivationFormat::kFp8Group;
  r.quant.weights = WeightFormat::kFp8Block;
  r.quant.fp8_ue8m0 = next() % 3 == 0;
  return r;
}

struct Tally {
  double max_ratio = 0;           // error / bound over every compared element
  std::vector<double> tightness;  // output bound / max |output| of the token, per case
};

// The correct CPU pipeline under profile p (as the built-in kernel claiming p runs it).
LayerResult run_cpu(const Case& c, const Profile& p) {
  LayerResult res;
  const cpu::CpuConfig cfg = cpu::make_cpu_config(c.recipe, p, RunOptions{});
  res.output.assign(static_cast<size_t>(c.recipe.shape.tokens * c.recipe.shape.hidden), 0.0f);
  cpu::cpu_run_layer(c, cfg, res, res.output);
  return res;
}

// Every stage the kernel exposes, and the output, within the reference's bounds.
void expect_within(const LayerReference& ref, const LayerResult& res, const std::string& what, Tally& t) {
  ASSERT_TRUE(ref.admissibility.passed()) << what << ": " << ref.admissibility.message;
  const std::pair<const char*, const std::optional<std::vector<float>>*> stages[] = {
      {"gemm1", &res.gemm1}, {"activation", &res.activation}, {"gemm2", &res.gemm2}};
  for (const auto& [name, got] : stages) {
    if (!got->has_value() || ref.stage(name) == nullptr) continue;
    const Verdict v = compare_stage(*ref.stage(name), **got, &res.routing);
    EXPECT_FALSE(v.failed()) << what << " " << name << ": " << v.message;
    t.max_ratio = std::max(t.max_ratio, v.max_ratio);
  }
  const StageExpectation& out = *ref.stage("output");
  const Verdict v = compare_stage(out, res.output, &res.routing);
  EXPECT_FALSE(v.failed()) << what << " output: " << v.message;
  t.max_ratio = std::max(t.max_ratio, v.max_ratio);
  double peak = 0, worst = 0;
  for (size_t i = 0; i < out.expected.size(); ++i)
    if (std::isfinite(out.bound[i])) {
      peak = std::max(peak, std::fabs(out.expected[i]));
      worst = std::max(worst, out.bound[i]);
    }
  if (peak > 0) t.tightness.push_back(worst / peak);
}

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::nth_element(v.begin(), v.begin() + static_cast<int64_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// Random FP8 cases on each correct CPU kernel under its own profile, conditioned on its exposed FP8
// codes and unconditioned (exposures removed, as for a whole-layer kernel that exposes nothing).
TEST(Fp8Oracle, CorrectCpuKernelsPassConditionedAndNot) {
  Tally conditioned, unconditioned;
  int judged = 0;
  for (const char* name : {"cpu", "cpu-flashinfer", "cpu-trtllm"}) {
    const Profile& p = profile_by_name(make_kernel(name)->profile());
    for (uint64_t s = 0; s < 24; ++s) {
      const CaseRecipe r = fp8_recipe(1000 + s);
      const Case c = materialize(r);
      const LayerResult res = run_cpu(c, p);
      ASSERT_TRUE(res.fc1_fp8.has_value() && res.fc2_fp8.has_value()) << name << " exposes its FP8 inputs";
      const std::string what = std::string(name) + " seed " + std::to_string(r.seed);
      expect_within(reference_layer(c, p, res.routing, &res), res, what + " conditioned", conditioned);
      LayerResult bare = res;
      bare.fc1_fp8.reset();
      bare.fc2_fp8.reset();
      bare.activation.reset();
      expect_within(reference_layer(c, p, bare.routing, &bare), res, what + " unconditioned", unconditioned);
      ++judged;
    }
  }
  std::printf(
      "FP8 layer, %d cases x 2: max error/bound conditioned %.3g, unconditioned %.3g; median output "
      "bound / token max: conditioned %.3g, unconditioned %.3g\n",
      judged, conditioned.max_ratio, unconditioned.max_ratio, median(conditioned.tightness),
      median(unconditioned.tightness));
  EXPECT_LE(conditioned.max_ratio, 1.0);
  EXPECT_LT(median(conditioned.tightness), 0.05) << "conditioned FP8 bounds must not be vacuous";
}

// A corrupted exposure is inadmissible: the quantize stage that admits it fails.
TEST(Fp8Oracle, CorruptedExposureFailsItsQuantizeStage) {
  const Profile& p = profile_by_name(make_kernel("cpu")->profile());
  const Case c = materialize(fp8_recipe(7));
  const LayerResult res = run_cpu(c, p);
  ASSERT_TRUE(res.fc1_fp8.has_value() && res.fc2_fp8.has_value());
  ASSERT_TRUE(reference_layer(c, p, res.routing, &res).admissibility.passed());
  const auto expect_fail = [&](const LayerResult& bad, const char* stage, const char* what) {
    const LayerReference ref = reference_layer(c, p, bad.routing, &bad);
    EXPECT_TRUE(ref.admissibility.failed()) << what;
    EXPECT_EQ(ref.admissibility.stage, stage) << what << ": " << ref.admissibility.message;
  };
  const auto moved = [](uint8_t code) {  // two ranks away, same sign, finite
    const int r = fp8_code_rank(code);
    const int m = std::abs(r) >= 124 ? std::abs(r) - 2 : std::abs(r) + 2;
    return static_cast<uint8_t>((code & 0x80) | m);
  };
  for (const bool fc2 : {false, true}) {
    std::optional<Fp8GroupQuantized> LayerResult::*field =
        fc2 ? &LayerResult::fc2_fp8 : &LayerResult::fc1_fp8;
    const char* stage = fc2 ? "fc2_quant" : "fc1_quant";
    LayerResult bad = res;
    uint8_t& code = (bad.*field)->codes[37];
    code = moved(code);
    expect_fail(bad, stage, "a code moved by two ranks");
    bad = res;
    (bad.*field)->scales[0] *= 2;
    expect_fail(bad, stage, "a scale doubled");
    bad = res;
    (bad.*field)->group = 64;
    expect_fail(bad, stage, "a group of 64");
  }
}

}  // namespace
}  // namespace moefuzz
