// Determinism of materialize(): golden content hashes pin the exact bytes of four fixed recipes, so
// any change to materialization (a generator, a stream tag, the draw order, the hash) is deliberate.
//
// To regenerate after an intended change: MOEFUZZ_PRINT_GOLDEN=1 ./tests_core_case_determinism_test
// prints the new constants; paste them into kGolden below and say why in the commit message.
//
// Opt-in timing of the DeepSeek-V3 layer shape (5.7 GB, several seconds):
// MOEFUZZ_SLOW_TESTS=1 ./tests_core_case_determinism_test --gtest_filter='*DeepSeek*'
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "core/act_scales.h"
#include "core/bf16.h"
#include "core/case.h"
#include "core/errors.h"
#include "core/global_scale.h"
#include "core/value_profiles.h"

namespace moefuzz {
namespace {

CaseRecipe deepseek_mini() {
  CaseRecipe r;
  r.seed = 7;
  r.shape = {.tokens = 5,
             .hidden = 64,
             .inter = 48,
             .experts = 16,
             .top_k = 4,
             .n_group = 4,
             .topk_group = 2,
             .shared_experts = 1};
  r.routing.mode = RoutingMode::kSigmoidGrouped;
  r.routing.routed_scaling_factor = 2.5;
  r.quant.act_scales = ActScaleMode::kPerExpert;
  r.quant.gate_up_scale_ratio = 0.5;
  r.values.bias = BiasProfile::kDominant;
  r.values.load = LoadProfile::kOneExpert;
  return r;
}

CaseRecipe hash_corners() {
  CaseRecipe r;
  r.seed = 0xDEADBEEF;
  r.shape = {.tokens = 6, .hidden = 32, .inter = 16, .experts = 8, .top_k = 3};
  r.routing.mode = RoutingMode::kHash;
  r.values = {.table = TableProfile::kDuplicates,
              .weights = WeightProfile::kTinyScales,
              .hidden = HiddenProfile::kThresholds,
              .act_scale = ActScaleProfile::kFar};
  return r;
}

CaseRecipe softmax_corners_with_edits() {
  CaseRecipe r;
  r.seed = 42;
  r.shape = {.tokens = 7, .hidden = 48, .inter = 32, .experts = 12, .top_k = 3};
  r.values = {.logits = LogitProfile::kTies,
              .weights = WeightProfile::kZeroBlocks,
              .hidden = HiddenProfile::kTokenSpread,
              .load = LoadProfile::kZeroTokenExperts};
  r.edits = {{"hidden", {0, 0}, 1e30}, {"gate.scale", {0, 0, 0}, 0x7E}, {"a1_scale", {0}, 0.0}};
  return r;
}

struct Golden {
  const char* name;
  CaseRecipe recipe;
  uint64_t hash;
};

std::vector<Golden> golden_cases() {
  return {
      {"default", CaseRecipe{}, 0xbd294a3115c66351ull},
      {"deepseek_mini", deepseek_mini(), 0xa7283d3f15954021ull},
      {"hash_corners", hash_corners(), 0xc89f8597fd127909ull},
      {"softmax_corners_with_edits", softmax_corners_with_edits(), 0xee12b55222ee362aull},
  };
}

TEST(CaseDeterminism, GoldenHashesArePinned) {
  const bool print = std::getenv("MOEFUZZ_PRINT_GOLDEN") != nullptr;
  for (const Golden& g : golden_cases()) {
    const uint64_t h = content_hash(materialize(g.recipe));
    if (print)
      std::printf("      {\"%s\", ..., 0x%016llxull},\n", g.name, static_cast<unsigned long long>(h));
    EXPECT_EQ(h, g.hash) << g.name << ": materialization changed; see the top of this file";
  }
}

TEST(CaseDeterminism, MaterializingTwiceGivesIdenticalCases) {
  for (const Golden& g : golden_cases()) {
    const Case a = materialize(g.recipe), b = materialize(g.recipe);
    EXPECT_TRUE(a == b) << g.name;
    EXPECT_EQ(content_hash(a), content_hash(b)) << g.name;
  }
}

TEST(CaseDeterminism, DifferentSeedsGiveDifferentTensors) {
  for (const Golden& g : golden_cases()) {
    CaseRecipe other = g.recipe;
    other.seed += 1;
    const Case a = materialize(g.recipe), b = materialize(other);
    EXPECT_NE(content_hash(a), content_hash(b)) << g.name;
    EXPECT_NE(a.hidden, b.hidden) << g.name;
    EXPECT_NE(a.logits, b.logits) << g.name;
    EXPECT_NE(a.experts[0].gate.packed, b.experts[0].gate.packed) << g.name;
  }
}

TEST(CaseDeterminism, ContentHashSeesEveryTensor) {
  const Case base = materialize(deepseek_mini());
  const uint64_t h = content_hash(base);
  auto changed = [&](auto mutate) {
    Case c = base;
    mutate(c);
    return content_hash(c) != h;
  };
  EXPECT_TRUE(changed([](Case& c) { c.hidden.back() ^= 1; }));
  EXPECT_TRUE(changed([](Case& c) { c.logits.back() = -c.logits.back(); }));
  EXPECT_TRUE(changed([](Case& c) { c.bias.back() += 1; }));
  EXPECT_TRUE(changed([](Case& c) { c.experts.back().down.packed.back() ^= 0x10; }));
  EXPECT_TRUE(changed([](Case& c) { c.experts.back().up.scales.back() ^= 1; }));
  EXPECT_TRUE(changed([](Case& c) { c.experts[3].up.global_dequant *= 2; }));
  EXPECT_TRUE(changed([](Case& c) { c.a1_scale.back() *= 2; }));
  EXPECT_TRUE(changed([](Case& c) { c.a2_scale.front() *= 2; }));
}

TEST(CaseDeterminism, ConcurrentMaterializationsAgree) {
  const auto cases = golden_cases();
  std::vector<uint64_t> serial;
  for (const Golden& g : cases) serial.push_back(content_hash(materialize(g.recipe)));
  std::vector<std::vector<uint64_t>> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] {
      for (const Golden& g : cases) got[t].push_back(content_hash(materialize(g.recipe)));
    });
  for (auto& t : threads) t.join();
  for (const auto& g : got) EXPECT_EQ(g, serial);
}

TEST(CaseDeterminism, ThreadedExpertDrawEqualsSerialDraw) {
  // 3 * H * I * (E + S) >= 2^24 elements takes materialize()'s multi-threaded path.
  CaseRecipe r;
  r.shape = {.tokens = 2, .hidden = 1024, .inter = 1024, .experts = 6, .top_k = 2};
  const Case c = materialize(r);
  ASSERT_EQ(c.experts.size(), 6u);
  for (int64_t e = 0; e < 6; ++e)
    EXPECT_TRUE(c.experts[static_cast<size_t>(e)] == draw_expert_weights(r, e)) << e;
}

TEST(CaseDeterminism, CalibratedA1IsFlashInferGlobalScaleOfHidden) {
  const Case c = materialize(CaseRecipe{});
  ASSERT_EQ(c.a1_scale.size(), 1u);
  EXPECT_EQ(c.a1_scale[0], flashinfer_global_scale_q(flashinfer_abs_max_bf16(c.hidden)));
  EXPECT_EQ(c.a2_scale[0], calibrated_quant_scale(
                               static_cast<float>(estimate_fc2_input_amax(c.recipe, c.hidden, c.experts))));
}

TEST(CaseDeterminism, OversizeRecipeIsRejectedBeforeAllocating) {
  CaseRecipe r;
  r.shape = {.tokens = 1 << 20, .hidden = 1 << 20, .inter = 1 << 20, .experts = 1 << 16, .top_k = 2};
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(materialize(r), InputError);  // ~2^57 bytes: allocating any of it would abort the test
  EXPECT_THROW(materialize(CaseRecipe{}, /*max_bytes=*/1000), InputError);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Rejection is arithmetic on the recipe; a whole second would mean something was drawn first.
  EXPECT_LT(seconds, 1.0);
}

TEST(CaseDeterminism, InvalidRecipeIsRejected) {
  CaseRecipe r;
  r.shape.top_k = r.shape.experts + 1;
  EXPECT_THROW(materialize(r), InputError);
  r = CaseRecipe{};
  r.shape.hidden = 40;  // not a multiple of 16
  EXPECT_THROW(materialize(r), InputError);
}

TEST(CaseDeterminism, DeepSeekV3ShapeTiming) {
  if (std::getenv("MOEFUZZ_SLOW_TESTS") == nullptr) GTEST_SKIP() << "set MOEFUZZ_SLOW_TESTS=1 (needs ~6 GB)";
  CaseRecipe r;
  r.shape = {.tokens = 16,
             .hidden = 7168,
             .inter = 2048,
             .experts = 256,
             .top_k = 8,
             .n_group = 8,
             .topk_group = 4,
             .shared_experts = 1};
  r.routing.mode = RoutingMode::kSigmoidGrouped;
  r.routing.routed_scaling_factor = 2.5;
  const auto start = std::chrono::steady_clock::now();
  const Case c = materialize(r, int64_t{8} << 30);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("DeepSeek-V3 T=16: %.2f s wall, %.2f GB, %u hardware threads\n", seconds,
              static_cast<double>(estimate_case_bytes(r)) / 1e9, std::thread::hardware_concurrency());
  EXPECT_EQ(c.experts.size(), 257u);
}

}  // namespace
}  // namespace moefuzz
