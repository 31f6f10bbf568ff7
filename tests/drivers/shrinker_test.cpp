// The semantic shrinker (drivers/shrinker.h): it keeps the failure signature, produces only valid
// recipes the kernel supports, stops at a fixpoint, and shrinks BUGZOO Z1 (rsf applied twice) on a
// DeepSeek-V3-shaped case - the real 6.4 GB layer, through its structural proxy - to a tiny case; a
// failure that needs a specific shape above the check budget (hidden == 7168, experts > 256) is kept:
// the other dimensions shrink, and the result says which dimension was kept and why.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "core/case.h"
#include "core/errors.h"
#include "core/recipe_text.h"
#include "core/repro_command.h"
#include "drivers/campaign.h"
#include "drivers/check_engine.h"
#include "drivers/finding_file.h"
#include "drivers/shrinker.h"
#include "kernels/registry.h"

namespace moefuzz {
namespace {

constexpr const char* kZ1 = "mutant/z1-rsf-twice";

// DeepSeek-V3 routing (sigmoid + bias, 8 groups pick 4, k = 8, rsf 2.5, one shared expert) at a
// shape a CI machine checks in a fraction of a second.
CaseRecipe deepseek_like() {
  CaseRecipe r;
  r.profile = "sglang-cutlass-fp4";
  r.shape = {.tokens = 4,
             .hidden = 256,
             .inter = 128,
             .experts = 64,
             .top_k = 8,
             .n_group = 8,
             .topk_group = 4,
             .shared_experts = 1};
  r.routing.mode = RoutingMode::kSigmoidGrouped;
  r.routing.routed_scaling_factor = 2.5;
  r.quant.act_scales = ActScaleMode::kPerExpert;
  r.edits.push_back({.tensor = "logits", .index = {3, 60}, .value = -1e30});
  r.edits.push_back({.tensor = "hidden", .index = {2, 200}, .value = 6});
  return r;
}

Verdict signature_verdict(const Kernel& k, const CaseRecipe& r, const std::string& sig) {
  const Case c = materialize(r);
  const CaseReport rep = check_case(k, c, {.invariants = select_invariants("all")});
  for (const auto& v : rep.verdicts)
    if (v.signature() == sig) return v;
  return {};
}

TEST(Shrinker, KeepsTheSignatureAndMeetsTheZ1SizeGoal) {
  const auto k = make_kernel(kZ1);
  const CaseRecipe in = deepseek_like();
  ASSERT_EQ(validate(in), "");
  const Case c = materialize(in);
  const CaseReport rep = check_case(*k, c, {.invariants = select_invariants("all")});
  ASSERT_TRUE(rep.failed());
  const ShrinkResult s = shrink_recipe(*k, in, {.seconds = 30});
  ASSERT_TRUE(s.input_failed);
  EXPECT_TRUE(s.input_checked);
  EXPECT_EQ(s.signature, rep.first_failure().signature());
  EXPECT_TRUE(s.fixpoint) << "took " << s.seconds << "s";
  EXPECT_EQ(validate(s.shrunk), "");
  EXPECT_EQ(k->supports(s.shrunk), "");
  EXPECT_LE(s.shrunk.shape.tokens, 2);
  EXPECT_LE(s.shrunk.shape.experts, 4);
  EXPECT_LE(s.shrunk.shape.hidden, 64);
  EXPECT_LE(s.shrunk.shape.inter, 64);
  EXPECT_TRUE(s.shrunk.edits.empty()) << "Z1 needs no special value";
  // The shrunk case still fails with the signature when checked from scratch.
  EXPECT_TRUE(signature_verdict(*k, s.shrunk, s.signature).failed());
}

TEST(Shrinker, ReachesAFixpoint) {
  const auto k = make_kernel(kZ1);
  const ShrinkResult first = shrink_recipe(*k, deepseek_like(), {.seconds = 30});
  ASSERT_TRUE(first.fixpoint);
  const ShrinkResult again = shrink_recipe(*k, first.shrunk, {.seconds = 30});
  ASSERT_TRUE(again.input_failed);
  EXPECT_EQ(again.accepted, 0);
  EXPECT_EQ(again.shrunk, first.shrunk);
  EXPECT_EQ(again.signature, first.signature);
}

TEST(Shrinker, AllInvariantModeKeepsTheFirstFailure) {
  const auto k = make_kernel(kZ1);
  const ShrinkResult s = shrink_recipe(*k, deepseek_like(), {.seconds = 30, .all_invariants = true});
  ASSERT_TRUE(s.input_failed);
  const CaseReport rep = check_case(*k, materialize(s.shrunk), {.invariants = select_invariants("all")});
  ASSERT_TRUE(rep.failed());
  EXPECT_EQ(rep.first_failure().signature(), s.signature);
}

TEST(Shrinker, ACorrectKernelHasNothingToShrink) {
  const auto k = make_kernel("cpu");
  const ShrinkResult s = shrink_recipe(*k, deepseek_like(), {.seconds = 30});
  EXPECT_FALSE(s.input_failed);
  EXPECT_EQ(s.shrunk, deepseek_like());
}

TEST(Shrinker, BadInputIsAnInputError) {
  const auto k = make_kernel(kZ1);
  CaseRecipe bad = deepseek_like();
  bad.shape.top_k = 100;
  EXPECT_THROW(shrink_recipe(*k, bad, {}), InputError);
  EXPECT_THROW(shrink_recipe(*k, deepseek_like(), {.expected_signature = "SCALE1"}), InputError);
  EXPECT_THROW(shrink_recipe(*k, deepseek_like(), {.expected_signature = "NOPE/output"}), InputError);
}

TEST(Shrinker, FitEditsClampsIndicesAndDropsMissingTargets) {
  CaseRecipe r = deepseek_like();
  r.shape.experts = 8;
  r.shape.tokens = 2;
  r.shape.n_group = 1;
  r.shape.topk_group = 1;
  r.edits.push_back({.tensor = "token_ids", .index = {0}, .value = 3});  // no hash routing: dropped
  const CaseRecipe f = fit_edits(r);
  ASSERT_EQ(f.edits.size(), 2u);
  EXPECT_EQ(f.edits[0].index, (std::vector<int64_t>{1, 7}));
  EXPECT_EQ(f.edits[1].index, (std::vector<int64_t>{1, 200}));
  EXPECT_EQ(validate(f), "");
}

TEST(Shrinker, RegressionFileRoundTrips) {
  const auto k = make_kernel(kZ1);
  const ShrinkResult s = shrink_recipe(*k, deepseek_like(), {.seconds = 30});
  const std::string text = format_regression(s, kZ1, "out.moefuzz");
  EXPECT_EQ(text.rfind("MOEFUZZ v1\n# kills: " + s.signature + "\n# kernel: mutant/z1-rsf-twice\n", 0), 0u)
      << text;
  EXPECT_EQ(read_finding_header(text).kills, s.signature);
  EXPECT_EQ(read_finding_header(text).kernel, kZ1);
  // REPRO runs from any directory: the program as PATH or an absolute path finds it, the file absolute.
  const std::string absolute_out = std::filesystem::absolute("out.moefuzz").lexically_normal().string();
  EXPECT_NE(text.find("# REPRO: " + repro_program() + " replay " + absolute_out +
                      " --kernel mutant/z1-rsf-twice\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(parse_recipe(text, "<test>"), s.shrunk);
}

// The real DeepSeek-V3 layer (H 7168, I 2048, 256 experts: 6.4 GB) is too large to check, so the
// shrinker starts from its structural proxy; docs/shrinking.md records the measured time (~7 s).
TEST(Shrinker, FullDeepSeekV3ShrinksThroughItsProxy) {
  // The example keeps 32 of the 256 routed experts (it must check on a 24 GB machine): the full
  // layer is the example with all of them.
  CaseRecipe in = parse_recipe_file(std::string(MOEFUZZ_SOURCE_DIR) + "/corpora/examples/deepseek_v3.moefuzz",
                                    int64_t{8} << 30);
  in.shape.experts = 256;
  ASSERT_EQ(validate(in), "");
  const auto k = make_kernel(kZ1);
  const ShrinkResult s = shrink_recipe(*k, in, {.seconds = 30});
  ASSERT_TRUE(s.input_failed);
  EXPECT_FALSE(s.input_checked);
  EXPECT_LT(s.seconds, 30);
  EXPECT_LE(s.shrunk.shape.tokens, 2);
  EXPECT_LE(s.shrunk.shape.experts, 4);
  EXPECT_LE(s.shrunk.shape.hidden, 64);
  EXPECT_LE(s.shrunk.shape.inter, 64);
  EXPECT_TRUE(signature_verdict(*k, s.shrunk, s.signature).failed());
}

// A shape-specific bug (test-only kernel): the `cpu` pipeline, whose output is doubled whenever the
// trigger holds - the stand-in for a kernel specialised for one hidden size, or one that keeps expert
// ids in 8 bits. It fails ORACLE on every case with the trigger and on no other.
class ShapeTriggeredKernel : public Kernel {
 public:
  ShapeTriggeredKernel(std::string name, std::function<bool(const Shape&)> trigger)
      : name_(std::move(name)), trigger_(std::move(trigger)), cpu_(make_kernel("cpu")) {}
  std::string name() const override { return name_; }
  std::string profile() const override { return cpu_->profile(); }
  std::string description() const override {
    return "test-only: cpu, output x2 when the shape trigger holds";
  }
  KernelClaims claims() const override { return cpu_->claims(); }
  std::string supports(const CaseRecipe& r) const override { return cpu_->supports(r); }
  void run_layer(const Case& c, const RunOptions& opts, LayerResult& out) const override {
    cpu_->run_layer(c, opts, out);
    if (!trigger_(c.recipe.shape)) return;
    for (float& y : output_span(opts, out.output, c.recipe.shape.tokens * c.recipe.shape.hidden)) y *= 2;
  }
  std::vector<std::string> expected_killers() const override { return {"ORACLE"}; }

 private:
  std::string name_;
  std::function<bool(const Shape&)> trigger_;
  std::unique_ptr<Kernel> cpu_;
};

// Softmax routing, k = 8: too large for the default check budget (64 MiB) at these sizes.
CaseRecipe large_softmax(int64_t hidden, int64_t inter, int64_t experts) {
  CaseRecipe r;
  r.profile = "sglang-cutlass-fp4";
  r.shape = {.tokens = 4, .hidden = hidden, .inter = inter, .experts = experts, .top_k = 8};
  return r;
}

// The ORACLE signature the trigger produces, found on a small case that has it (`small` must trigger):
// the shrinks below keep it, which checks one invariant per candidate instead of the registry.
std::string oracle_signature(const Kernel& k, const CaseRecipe& small) {
  const CaseReport rep = check_case(k, materialize(small), {.invariants = select_invariants("ORACLE")});
  return rep.failed() ? rep.first_failure().signature() : "";
}

bool notes_contain(const ShrinkResult& s, const std::string& what) {
  for (const auto& n : s.notes)
    if (n.find(what) != std::string::npos) return true;
  return false;
}

TEST(Shrinker, KeepsAHiddenSizeTriggerAndShrinksTheRest) {
  const ShapeTriggeredKernel k("test/hidden-7168", [](const Shape& s) { return s.hidden == 7168; });
  // The real DeepSeek-V3 layer (the example with all 256 routed experts): its structural proxy (16
  // experts, H and I halved) loses H == 7168.
  CaseRecipe in = parse_recipe_file(std::string(MOEFUZZ_SOURCE_DIR) + "/corpora/examples/deepseek_v3.moefuzz",
                                    int64_t{8} << 30);
  in.shape.experts = 256;
  ASSERT_EQ(in.shape.hidden, 7168);
  CaseRecipe small = in;
  small.shape = {.tokens = 1, .hidden = 7168, .inter = 16, .experts = 8, .top_k = 1, .n_group = 1};
  const std::string sig = oracle_signature(k, small);
  ASSERT_FALSE(sig.empty());
  const ShrinkResult s = shrink_recipe(k, in, {.seconds = 60, .expected_signature = sig});
  ASSERT_TRUE(s.input_failed) << (s.notes.empty() ? "" : s.notes.front());
  EXPECT_FALSE(s.input_checked);
  EXPECT_EQ(s.proxy_kept, "hidden 7168");  // the structural proxy halves H and loses the trigger
  EXPECT_EQ(s.signature, sig);
  EXPECT_EQ(s.shrunk.shape.hidden, 7168);
  EXPECT_EQ(s.shrunk.shape.tokens, 1);
  EXPECT_EQ(s.shrunk.shape.experts, 1);
  EXPECT_EQ(s.shrunk.shape.top_k, 1);
  EXPECT_EQ(s.shrunk.shape.inter, 16);
  EXPECT_TRUE(s.fixpoint);
  EXPECT_TRUE(notes_contain(s, "kept hidden 7168: the failure needs it"))
      << ::testing::PrintToString(s.notes);
  EXPECT_TRUE(signature_verdict(k, s.shrunk, s.signature).failed());
  // The regression file says where the shrink started and what it kept.
  const std::string text = format_regression(s, "cpu", "min.moefuzz");
  EXPECT_NE(text.find("shrunk from its proxy keeping hidden 7168"), std::string::npos) << text;
  EXPECT_NE(text.find("kept hidden 7168"), std::string::npos) << text;
}

TEST(Shrinker, KeepsAnExpertCountTriggerAndShrinksItToTheBoundary) {
  const ShapeTriggeredKernel k("test/experts-over-256", [](const Shape& s) { return s.experts > 256; });
  const CaseRecipe in = large_softmax(1024, 512, 320);
  ASSERT_GT(estimate_case_bytes(in), kDefaultShrinkCheckBytes);
  const std::string sig = oracle_signature(k, large_softmax(16, 16, 260));
  ASSERT_FALSE(sig.empty());
  const ShrinkResult s = shrink_recipe(k, in, {.seconds = 60, .expected_signature = sig});
  ASSERT_TRUE(s.input_failed) << (s.notes.empty() ? "" : s.notes.front());
  EXPECT_EQ(s.proxy_kept, "experts 320");
  EXPECT_EQ(s.shrunk.shape.experts, 257);  // shrunk while the trigger holds, down to its boundary
  EXPECT_EQ(s.shrunk.shape.hidden, 16);
  EXPECT_EQ(s.shrunk.shape.inter, 16);
  EXPECT_EQ(s.shrunk.shape.tokens, 1);
  EXPECT_TRUE(notes_contain(s, "kept experts 257: the failure needs it"))
      << ::testing::PrintToString(s.notes);
}

// A trigger that needs three input dimensions at once fits no proxy: the shrinker says so and how to
// get further, instead of "nothing to shrink".
TEST(Shrinker, SaysWhyWhenNoProxyKeepsTheTrigger) {
  const ShapeTriggeredKernel k("test/three-dims", [](const Shape& s) {
    return s.hidden == 7168 && s.inter == 1024 && s.experts == 64;
  });
  // The doubled output's signature, from the same bug without a trigger on a small case.
  const ShapeTriggeredKernel always("test/always", [](const Shape&) { return true; });
  const std::string sig = oracle_signature(always, large_softmax(16, 16, 8));
  ASSERT_FALSE(sig.empty());
  const ShrinkResult s =
      shrink_recipe(k, large_softmax(7168, 1024, 64), {.seconds = 60, .expected_signature = sig});
  EXPECT_FALSE(s.input_failed);
  EXPECT_TRUE(notes_contain(s, "raise --max-check-bytes")) << ::testing::PrintToString(s.notes);
}

// A case the check budget holds keeps its trigger through the ordinary passes and names it too.
TEST(Shrinker, NamesTheKeptDimensionOfASmallCase) {
  const ShapeTriggeredKernel k("test/hidden-112", [](const Shape& s) { return s.hidden == 112; });
  const ShrinkResult s = shrink_recipe(k, large_softmax(112, 64, 16), {.seconds = 30});
  ASSERT_TRUE(s.input_failed);
  EXPECT_TRUE(s.input_checked);
  EXPECT_EQ(s.shrunk.shape.hidden, 112);
  EXPECT_TRUE(notes_contain(s, "kept hidden 112: the failure needs it")) << ::testing::PrintToString(s.notes);
}

}  // namespace
}  // namespace moefuzz
