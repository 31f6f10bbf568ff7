// docs/profiles.md states each built-in profile's contract in one table; this test holds the table
// to the profile data (core/profile.cpp) for every field the table states as a plain value, so the
// documentation cannot drift from the code (a row cell may add a parenthesised source or a marker
// such as [UNVERIFIED] after its value).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/profile.h"

namespace moefuzz {
namespace {

std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out;
  std::stringstream ss(row);
  std::string c;
  std::getline(ss, c, '|');  // before the first '|'
  while (std::getline(ss, c, '|')) {
    std::string t;
    for (char ch : c)
      if (ch != '*') t += ch;  // bold markers
    const size_t a = t.find_first_not_of(' '), b = t.find_last_not_of(' ');
    out.push_back(a == std::string::npos ? "" : t.substr(a, b - a + 1));
  }
  if (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

// The first word of a cell (its value; what follows is a source or a marker).
std::string value_of(const std::string& cell) { return cell.substr(0, cell.find(' ')); }

TEST(ProfilesDoc, TableMatchesTheProfileData) {
  std::ifstream in(std::string(MOEFUZZ_SOURCE_DIR) + "/docs/profiles.md");
  ASSERT_TRUE(in) << "docs/profiles.md not found";
  std::map<std::string, std::vector<std::string>> rows;
  std::vector<std::string> names;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| field |", 0) == 0) {
      names = cells(line);
      names.erase(names.begin());
    } else if (!names.empty() && line.rfind("| ", 0) == 0 && line.rfind("|---", 0) != 0) {
      std::vector<std::string> c = cells(line);
      const std::string field = c.front();
      c.erase(c.begin());
      rows[field] = c;
    } else if (!names.empty() && line.empty()) {
      break;
    }
  }
  ASSERT_EQ(names.size(), all_profiles().size()) << "one column per built-in profile";
  const auto dtype = [](WeightDtype d) { return d == WeightDtype::kBf16 ? "bf16" : "fp32"; };
  for (size_t i = 0; i < names.size(); ++i) {
    const Profile& p = profile_by_name(names[i]);  // throws (fails) on a name the code does not know
    SCOPED_TRACE(p.name);
    ASSERT_EQ(rows["w13 order"].size(), names.size());
    EXPECT_EQ(value_of(rows["w13 order"][i]), p.w13_order == W13Order::kUpGate        ? "up;gate"
                                              : p.w13_order == W13Order::kInterleaved ? "interleaved"
                                                                                      : "gate;up");
    EXPECT_EQ(value_of(rows["rsf in top-k"][i]), p.rsf_in_topk ? "yes" : "no");
    EXPECT_EQ(value_of(rows["routing weight dtype"][i]), dtype(p.routing_weight_dtype));
    EXPECT_EQ(value_of(rows["bias dtype"][i]), dtype(p.bias_dtype));
    EXPECT_EQ(std::stod(value_of(rows["renorm epsilon"][i])), p.renorm_epsilon);
    EXPECT_EQ(value_of(rows["tie rule"][i]),
              p.tie_rule == TieRule::kLowerIndexWins ? "lower" : "unspecified");
    EXPECT_EQ(value_of(rows["fused shared weight"][i]), p.shared_fused_weight_inv_rsf ? "1/rsf" : "1");
    EXPECT_EQ(value_of(rows["per-expert act scales"][i]), p.per_expert_act_scales ? "yes" : "no");
    const char* fp8_act_quant[] = {"vllm_cuda", "deepgemm_reference", "triton"};
    EXPECT_EQ(value_of(rows["fp8 act quant"][i]), fp8_act_quant[static_cast<int>(p.fp8_act_quant)]);
    EXPECT_EQ(std::stoi(value_of(rows["fp8 mma accum bits"][i])), p.fp8_mma_accum_bits);
    EXPECT_EQ(std::stoi(value_of(rows["fp8 dots per block"][i])), p.fp8_dots_per_block);
    EXPECT_EQ(value_of(rows["fp8 scale order"][i]),
              p.fp8_scale_order == Fp8ScaleOrder::kDeepGemm ? "deepgemm" : "triton");
  }
}

}  // namespace
}  // namespace moefuzz
