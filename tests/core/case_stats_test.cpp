// describe_case_tensors: one line per tensor, and the counts it prints are the case's.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "core/case.h"
#include "core/case_edits.h"
#include "core/case_stats.h"

namespace moefuzz {
namespace {

std::string line_of(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name + " ", 0) == 0) return line;
  return "";
}

TEST(CaseStats, OneLinePerTensorWithShapes) {
  CaseRecipe r;
  r.routing.mode = RoutingMode::kSigmoidGrouped;
  const std::string text = describe_case_tensors(materialize(r));
  for (const char* name :
       {"hidden", "logits", "bias", "token_ids", "hash_table", "gate", "up", "down", "a1_scale", "a2_scale"})
    EXPECT_FALSE(line_of(text, name).empty()) << name << "\n" << text;
  EXPECT_NE(line_of(text, "hidden").find("[4, 64]"), std::string::npos) << text;
  EXPECT_NE(line_of(text, "gate").find("8 x [32, 64]"), std::string::npos) << text;
  EXPECT_NE(line_of(text, "token_ids").find("(absent)"), std::string::npos) << text;
}

TEST(CaseStats, CountsNonFiniteZeroBlocksAndSubnormalScales) {
  Case c = materialize(CaseRecipe{});
  std::vector<Edit> edits = {{"hidden", {0, 0}, NAN},
                             {"hidden", {0, 1}, INFINITY},
                             {"gate.scale", {0, 0, 0}, 0x03},
                             {"gate.scale", {1, 0, 0}, 0x00}};
  for (int64_t i = 0; i < 16; ++i) edits.push_back({"down.code", {2, 5, 16 + i}, (i % 2) ? 8.0 : 0.0});
  apply_edits(c, edits);
  const std::string text = describe_case_tensors(c);
  EXPECT_NE(line_of(text, "hidden").find("nan 1 inf 1"), std::string::npos) << text;
  EXPECT_NE(line_of(text, "gate").find("subnormal 1 zero 1"), std::string::npos) << text;
  // Default weights have no zero block; the 16 edits make exactly one.
  EXPECT_NE(line_of(text, "down").find("zero-blocks 1/"), std::string::npos) << text;
  EXPECT_NE(line_of(text, "gate").find("zero-blocks 0/"), std::string::npos) << text;
}

TEST(CaseStats, HashTableReportsRepeatedRows) {
  CaseRecipe r;
  r.routing.mode = RoutingMode::kHash;
  EXPECT_NE(line_of(describe_case_tensors(materialize(r)), "hash_table").find("rows with a repeated id 0"),
            std::string::npos);
  r.values.table = TableProfile::kDuplicates;
  const std::string dup = line_of(describe_case_tensors(materialize(r)), "hash_table");
  EXPECT_EQ(dup.find("rows with a repeated id 0"), std::string::npos) << dup;
}

}  // namespace
}  // namespace moefuzz
