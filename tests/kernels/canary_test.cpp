// run_guarded: a correct kernel is clean; stray stores, unwritten (or read-before-written) outputs and
// modified inputs are each reported.
#include <gtest/gtest.h>

#include "kernel_test_cases.h"
#include "kernels/canary.h"
#include "kernels/registry.h"

namespace moefuzz {
namespace {

TEST(Canary, CorrectKernelIsCleanOnEveryTactic) {
  auto k = make_kernel("cpu");
  const Case c = materialize(testing::small_recipe(3, RoutingMode::kSoftmax));
  for (int tactic = 0; tactic < 2; ++tactic) {
    const GuardedRun g = run_guarded(*k, c, {.tactic = tactic});
    EXPECT_TRUE(g.canary.guarded);
    EXPECT_TRUE(g.canary.clean()) << g.canary.summary();
    EXPECT_TRUE(testing::same_bits(g.result.output, testing::run_kernel(*k, c, {.tactic = tactic}).output));
  }
}

TEST(Canary, TileOverhangIsCaughtOnlyWhenHIsNotATileMultiple) {
  auto k = make_kernel("mutant/z9-tile-overhang");
  CaseRecipe r = testing::small_recipe(3, RoutingMode::kSoftmax);
  r.shape.hidden = 48;  // tactic 0 stores 32-wide tiles: 16 columns of overhang per row
  const GuardedRun bad = run_guarded(*k, materialize(r), {});
  EXPECT_EQ(bad.canary.band_after_written, 16) << bad.canary.summary();
  EXPECT_EQ(bad.canary.first_after_written, 0);
  r.shape.hidden = 64;
  const GuardedRun fine = run_guarded(*k, materialize(r), {});
  EXPECT_TRUE(fine.canary.clean()) << fine.canary.summary();
}

TEST(Canary, ReadingTheUnwrittenOutputLeavesThePoisonVisible) {
  auto k = make_kernel("mutant/reads-unwritten-output");
  const GuardedRun g = run_guarded(*k, materialize(testing::small_recipe(2, RoutingMode::kSoftmax)), {});
  EXPECT_EQ(g.canary.unwritten, static_cast<int64_t>(g.result.output.size())) << g.canary.summary();
}

TEST(Canary, WritingTheInputIsReported) {
  auto k = make_kernel("mutant/writes-input");
  Case c = materialize(testing::small_recipe(2, RoutingMode::kSoftmax));
  const GuardedRun g = run_guarded(*k, c, {});
  EXPECT_TRUE(g.canary.input_modified);
  EXPECT_FALSE(g.canary.clean());
}

// A kernel written against the older contract (writes out.output, ignores output_data) still runs
// guarded: no band check, but unwritten elements are still found.
class HalfWriter : public Kernel {
 public:
  std::string name() const override { return "half-writer"; }
  std::string profile() const override { return "sglang-cutlass-fp4"; }
  std::string description() const override { return "test kernel writing half its output"; }
  KernelClaims claims() const override { return {}; }
  std::string supports(const CaseRecipe&) const override { return ""; }
  void run_layer(const Case&, const RunOptions&, LayerResult& out) const override {
    for (size_t i = 0; i < out.output.size() / 2; ++i) out.output[i] = 1.0f;
  }
};

TEST(Canary, KernelIgnoringTheGuardedBufferIsCheckedForUnwrittenOutput) {
  const Case c = materialize(testing::small_recipe(4, RoutingMode::kSoftmax));
  const GuardedRun g = run_guarded(HalfWriter(), c, {});
  EXPECT_FALSE(g.canary.guarded);
  const int64_t n = c.recipe.shape.tokens * c.recipe.shape.hidden;
  EXPECT_EQ(g.canary.unwritten, n - n / 2);
  EXPECT_EQ(g.canary.first_unwritten, n / 2);
}

// A kernel that writes one byte of expert 0's gate codes through its const input (and all of its
// output, unguarded).
class WeightWriter : public Kernel {
 public:
  std::string name() const override { return "weight-writer"; }
  std::string profile() const override { return "sglang-cutlass-fp4"; }
  std::string description() const override { return "test kernel writing an expert's weights"; }
  KernelClaims claims() const override { return {}; }
  std::string supports(const CaseRecipe&) const override { return ""; }
  void run_layer(const Case& c, const RunOptions&, LayerResult& out) const override {
    auto& packed = const_cast<std::vector<uint8_t>&>(c.experts[0].gate.packed);
    packed[0] ^= 0x11;
    for (float& x : out.output) x = 0.0f;
  }
};

// A check takes its fingerprint before the first run from the experts' remembered content hashes
// (ExpertBytes::kRemembered); a write to an expert's weights is still seen, because the fingerprint
// after the run reads the bytes.
TEST(Canary, WritingAnExpertsWeightsIsReportedAgainstTheRememberedFingerprint) {
  const Case c = materialize(testing::small_recipe(5, RoutingMode::kSoftmax));
  const uint64_t before = case_fingerprint(c, ExpertBytes::kRemembered);
  EXPECT_EQ(before, case_fingerprint(c)) << "the same value while no kernel wrote the weights";
  const GuardedRun g = run_guarded(WeightWriter(), c, {}, before);
  EXPECT_TRUE(g.canary.input_modified);
  EXPECT_NE(case_fingerprint(c), before);
  // The remembered hashes did not see the write (no content stamp records it): only a read does.
  EXPECT_EQ(case_fingerprint(c, ExpertBytes::kRemembered), before);
}

}  // namespace
}  // namespace moefuzz
