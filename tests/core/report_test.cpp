// The failure report format is a product: pinned here line by line so it cannot drift.
#include "core/report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

namespace moefuzz {
namespace {

CaseRecipe deepseek_like() {
  CaseRecipe r;
  r.seed = 7;
  r.profile = "sglang-cutlass-fp4";
  r.shape = {.tokens = 4,
             .hidden = 64,
             .inter = 32,
             .experts = 16,
             .top_k = 4,
             .n_group = 4,
             .topk_group = 2,
             .shared_experts = 1};
  r.routing.mode = RoutingMode::kSigmoidGrouped;
  r.routing.routed_scaling_factor = 2.5;
  r.values.logits = LogitProfile::kAllNegative;
  r.edits = {{"logits", {0, 1}, -100}};
  return r;
}

ElementError element(int64_t token, int64_t element, double got, double expected, double bound) {
  return ElementError{{.token = token, .element = element}, got, expected, bound};
}

TEST(Report, GoldenFormat) {
  Verdict v = Verdict::fail("ORACLE", "combine", "output is 2.5x the oracle (routed scale applied twice)",
                            element(3, 17, 6.25, 2.5, 0.5));
  v.worst.where.slot = -1;
  v.worst_elements = {element(3, 17, 6.25, 2.5, 0.5), element(1, 2, NAN, 1, 0.25),
                      element(0, 0, 1.5, 1, 0.5)};
  const std::string expected =
      "==== moefuzz: CHECK FAILED ====\n"
      "kernel: cpu\n"
      "config: tokens 4, hidden 64, inter 32, experts 16 + 1 shared (separate), top_k 4; routing "
      "sigmoid_grouped "
      "(2 of 4 groups, correction bias, renormalize), routed_scaling_factor 2.5 applied in topk (per the "
      "profile); activations "
      "nvfp4, "
      "act scales global, gate/up scale ratio 1; swiglu plain; profile sglang-cutlass-fp4; seed 7; values "
      "logits=all_negative bias=small table=distinct weights=normal hidden=normal act_scale=calibrated "
      "load=uniform; 1 edit\n"
      "check: ORACLE  stage: combine\n"
      "location: token 3, element 17\n"
      "got 6.25  expected 2.5  bound 0.5  ratio 7.5\n"
      "message: output is 2.5x the oracle (routed scale applied twice)\n"
      "worst elements (3 of 3, NaN first, then by error/bound):\n"
      "    token  slot expert  element                      got                 expected                    "
      "bound"
      "        ratio\n"
      "        1     -      -        2                      nan                        1                     "
      "0.25"
      "          nan\n"
      "        3     -      -       17                     6.25                      2.5                     "
      " 0.5"
      "          7.5\n"
      "        0     -      -        0                      1.5                        1                     "
      " 0.5"
      "            1\n"
      "REPRO: moefuzz replay out/finding-1.moefuzz --kernel cpu\n";
  EXPECT_EQ(
      format_failure_report(deepseek_like(), v, "cpu", "moefuzz replay out/finding-1.moefuzz --kernel cpu"),
      expected);
}

TEST(Report, AtMostThirtyWorstElementsAndLocationOnlyOfSetFields) {
  Verdict v = Verdict::fail("SCALE1", "layer", "ratio 6.25 instead of 2.5");
  v.worst.where.expert = 5;
  for (int i = 0; i < 40; ++i) v.worst_elements.push_back(element(0, i, i, 0, 1));
  const std::string text = format_failure_report(CaseRecipe{}, v, "mutant", "repro");
  EXPECT_NE(text.find("location: expert 5\n"), std::string::npos);
  EXPECT_NE(text.find("worst elements (30 of 40"), std::string::npos);
  // The largest ratio (element 39) comes first, element 9 (ratio 9) is cut.
  std::istringstream lines(text);
  std::string line;
  std::vector<std::string> rows;
  while (std::getline(lines, line))
    if (line.starts_with("        0")) rows.push_back(line);
  ASSERT_EQ(rows.size(), 30u);
  EXPECT_NE(rows.front().find("      39 "), std::string::npos) << rows.front();
  EXPECT_NE(rows.back().find("      10 "), std::string::npos) << rows.back();
  EXPECT_TRUE(text.ends_with("REPRO: repro\n"));
}

TEST(Report, NoElementsNoLocation) {
  const Verdict v = Verdict::fail("FINITE", "gemm1", "NaN in output");
  const std::string text = format_failure_report(CaseRecipe{}, v, "k", "r");
  EXPECT_NE(text.find("location: whole case\n"), std::string::npos);
  EXPECT_NE(text.find("worst elements: none recorded\n"), std::string::npos);
}

TEST(Report, DescribeRecipeMentionsHashAndSwigluClamp) {
  CaseRecipe r;
  r.routing.mode = RoutingMode::kHash;
  r.shape.top_k = 6;
  r.swiglu.limit = 10;
  const std::string d = describe_recipe(r);
  EXPECT_NE(d.find("routing hash (score sqrt_softplus, vocab 16, renormalize)"), std::string::npos) << d;
  EXPECT_NE(d.find("swiglu limit 10, alpha 1, beta 0"), std::string::npos) << d;
  EXPECT_NE(d.find("; 0 edits"), std::string::npos) << d;
}

// Kernels and oracle place routed_scaling_factor where the profile says (Profile::rsf_in_topk); the
// recipe's scale_placement field is ignored by both, so the report must not quote it.
TEST(Report, ScalePlacementComesFromTheProfileNotTheRecipeField) {
  CaseRecipe r;
  r.routing.scale_placement = ScalePlacement::kTopK;
  r.profile = "sglang-triton";  // rsf multiplied by the combine
  EXPECT_NE(describe_recipe(r).find("applied in combine (per the profile)"), std::string::npos)
      << describe_recipe(r);
  r.routing.scale_placement = ScalePlacement::kCombine;
  r.profile = "flashinfer-cutlass";  // rsf multiplied by the top-k op
  EXPECT_NE(describe_recipe(r).find("applied in topk (per the profile)"), std::string::npos)
      << describe_recipe(r);
}

TEST(Report, ByteCounts) {
  EXPECT_EQ(format_byte_count(512), "512 bytes");
  EXPECT_EQ(format_byte_count(int64_t{3} << 30), "3221225472 bytes (3 GiB)");
  EXPECT_EQ(format_byte_count(int64_t{1} << 45), "35184372088832 bytes (32 TiB)");
}

}  // namespace
}  // namespace moefuzz
