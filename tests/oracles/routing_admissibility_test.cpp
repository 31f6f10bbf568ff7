// Set admissibility of top-k selections (oracles/topk_admissibility.h) on hand-made score boxes.
#include <gtest/gtest.h>

#include <vector>

#include "oracles/topk_admissibility.h"

namespace moefuzz {
namespace {

TopkSpec flat(int64_t experts, int64_t k) { return TopkSpec{.experts = experts, .k = k}; }
TopkSpec grouped(int64_t experts, int64_t k, int64_t n_group, int64_t topk_group) {
  return TopkSpec{
      .experts = experts, .k = k, .n_group = n_group, .topk_group = topk_group, .group_top2 = true};
}

TEST(TopkSelection, ValueDescendingLowerIndexFirst) {
  const std::vector<double> s = {0.5, 0.9, 0.5, 0.1};
  EXPECT_EQ(select_topk(s, flat(4, 3)), (std::vector<int32_t>{1, 0, 2}));
}

// Groups {0,1} {2,3}: sums 1.0 and 1.4, so group 1 survives (tg = 1) and expert 2 (0.9) wins, even
// though expert 0 (1.0) has the highest score overall.
TEST(TopkSelection, GroupStageComesFirst) {
  const std::vector<double> s = {1.0, 0.0, 0.9, 0.5};
  EXPECT_EQ(select_topk(s, grouped(4, 1, 2, 1)), (std::vector<int32_t>{2}));
}

TEST(TopkAdmissibility, OverlappingBoxesAdmitEitherSet) {
  const std::vector<double> lo = {0.9, 0.89, 0.1}, hi = {0.91, 0.92, 0.2};
  for (int32_t id : {0, 1}) {
    const std::vector<int32_t> sel = {id};
    const Admission a = admit_topk_set(lo, hi, {}, flat(3, 1), TieRule::kLowerIndexWins, sel);
    EXPECT_TRUE(a.admissible) << id;
    EXPECT_TRUE(a.ambiguous);
  }
  const std::vector<int32_t> sel = {2};
  const Admission a = admit_topk_set(lo, hi, {}, flat(3, 1), TieRule::kLowerIndexWins, sel);
  EXPECT_FALSE(a.admissible);
  EXPECT_NE(a.reason.find("beats selected expert 2"), std::string::npos) << a.reason;
}

TEST(TopkAdmissibility, IdenticalInputsMustFollowTheTieRule) {
  const std::vector<double> lo = {0.4, 0.4}, hi = {0.6, 0.6};
  const std::vector<uint64_t> same = {7, 7};
  const std::vector<int32_t> higher = {1};
  EXPECT_FALSE(admit_topk_set(lo, hi, same, flat(2, 1), TieRule::kLowerIndexWins, higher).admissible);
  EXPECT_TRUE(admit_topk_set(lo, hi, same, flat(2, 1), TieRule::kUnspecified, higher).admissible);
  const std::vector<uint64_t> different = {7, 8};  // different inputs may round either way
  EXPECT_TRUE(admit_topk_set(lo, hi, different, flat(2, 1), TieRule::kLowerIndexWins, higher).admissible);
}

// The group stage couples the two choices: selecting expert 0 needs group 0 to beat group 1
// (best 1.0 + cap(e1) vs worst 1.4), while expert 1 must stay at or below expert 0.
TEST(TopkAdmissibility, GroupStageCouplesGroupAndExpertChoices) {
  const TopkSpec spec = grouped(4, 1, 2, 1);
  const std::vector<int32_t> pick0 = {0}, pick2 = {2};
  std::vector<double> lo = {1.0, 0.0, 0.9, 0.5}, hi = lo;
  EXPECT_FALSE(admit_topk_set(lo, hi, {}, spec, TieRule::kLowerIndexWins, pick0).admissible);
  EXPECT_TRUE(admit_topk_set(lo, hi, {}, spec, TieRule::kLowerIndexWins, pick2).admissible);
  // Expert 1 may be as high as 0.95 (still below expert 0): group 0 can reach 1.95 > 1.4.
  hi[1] = 0.95;
  EXPECT_TRUE(admit_topk_set(lo, hi, {}, spec, TieRule::kLowerIndexWins, pick0).admissible);
  // But only up to expert 0's score: raising expert 1 above it does not help group 0 further,
  // and if expert 1 is surely above expert 0, picking 0 in group 0 is impossible.
  lo[1] = 1.2;
  hi[1] = 1.3;
  const Admission a = admit_topk_set(lo, hi, {}, spec, TieRule::kLowerIndexWins, pick0);
  EXPECT_FALSE(a.admissible);
  EXPECT_NE(a.reason.find("unselected expert 1"), std::string::npos) << a.reason;
}

// Four groups of two, topk_group = 2, k = 2, both selected experts in group 0: the second chosen
// group is free, but whichever it is must beat the rest; group 3's worst (0.8) exceeds group 2's best.
TEST(TopkAdmissibility, SecondGroupMayBeAnyThatBeatsTheRest) {
  const TopkSpec spec = grouped(8, 2, 4, 2);
  const std::vector<double> v = {0.9, 0.8, 0.1, 0.1, 0.2, 0.2, 0.4, 0.4};
  const std::vector<int32_t> sel = {0, 1};
  EXPECT_TRUE(admit_topk_set(v, v, {}, spec, TieRule::kLowerIndexWins, sel).admissible);
  // Group 3 (0.4, 0.4) must then be the second group; its experts (0.4) stay below 0.8: fine.
  // Make group 3's experts exceed expert 1: it must be chosen (sum 1.9 beats everything but group 0)
  // and then expert 6 (0.95) would beat expert 1: inadmissible.
  std::vector<double> w = v;
  w[6] = w[7] = 0.95;
  EXPECT_FALSE(admit_topk_set(w, w, {}, spec, TieRule::kLowerIndexWins, sel).admissible);
  EXPECT_EQ(select_topk(w, spec), (std::vector<int32_t>{6, 7}));
}

}  // namespace
}  // namespace moefuzz
