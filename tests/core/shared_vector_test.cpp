// SharedVector (core/shared_vector.h): copies share elements until one is changed; a change through
// any mutable access never shows through another copy; const access never copies. And the case
// transforms built on it share the experts they do not change.
#include "core/shared_vector.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/case.h"
#include "properties/case_transforms.h"

namespace moefuzz {
namespace {

struct Counted {
  std::string text;
  bool operator==(const Counted&) const = default;
};

TEST(SharedVector, CopiesShareUntilAnElementChanges) {
  SharedVector<Counted> a(3);
  a[0].text = "x";
  a[1].text = "y";
  const SharedVector<Counted> b = a;
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(a.shares(i, b)) << i;
  a[1].text = "changed";
  EXPECT_EQ(b[1].text, "y") << "the copy keeps its value";
  EXPECT_FALSE(a.shares(1, b));
  EXPECT_TRUE(a.shares(0, b)) << "only the changed element was copied";
  EXPECT_TRUE(a.shares(2, b));
  EXPECT_FALSE(a == b);
}

TEST(SharedVector, ConstAccessNeverCopies) {
  SharedVector<Counted> a(2);
  const SharedVector<Counted> b = a;
  const SharedVector<Counted>& ca = a;
  size_t n = 0;
  for (const Counted& x : ca) n += x.text.size();
  (void)ca[0];
  (void)ca.front();
  (void)ca.back();
  (void)ca.at(1);
  EXPECT_EQ(n, 0u);
  EXPECT_TRUE(a.shares(0, b));
  EXPECT_TRUE(a.shares(1, b));
  EXPECT_TRUE(a == b);
}

TEST(SharedVector, EveryMutableAccessCopiesASharedElementFirst) {
  SharedVector<Counted> a(4);
  const SharedVector<Counted> b = a;
  a.front().text = "f";
  a.back().text = "b";
  a.at(1).text = "1";
  *(a.begin() + 2) = Counted{"2"};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_FALSE(a.shares(i, b)) << i;
    EXPECT_TRUE(b[i].text.empty()) << i;
  }
  // Mutable iteration copies each element it reaches.
  SharedVector<Counted> c = b;
  for (Counted& x : c) x.text += "!";
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(b[i].text, "") << i;
  EXPECT_EQ(c[3].text, "!");
}

TEST(SharedVector, SetAndSetSharedReplaceWithoutCopying) {
  SharedVector<Counted> a(2);
  a[0].text = "zero";
  a[1].text = "one";
  SharedVector<Counted> b = a;
  b.set_shared(0, a, 1);
  b.set_shared(1, a, 0);
  EXPECT_TRUE(b.shares(0, a, 1));
  EXPECT_TRUE(b.shares(1, a, 0));
  EXPECT_EQ(b[0].text, "one");
  b.set(1, Counted{"new"});
  EXPECT_EQ(a[0].text, "zero");
  EXPECT_EQ(b[1].text, "new");
}

TEST(SharedVector, VectorOperations) {
  SharedVector<Counted> a(std::vector<Counted>{{"a"}, {"b"}, {"c"}});
  ASSERT_EQ(a.size(), 3u);
  a.push_back({"d"});
  std::vector<std::string> got;
  const SharedVector<Counted>& ca = a;
  for (const Counted& x : ca) got.push_back(x.text);
  EXPECT_EQ(got, (std::vector<std::string>{"a", "b", "c", "d"}));
  a.resize(2);
  EXPECT_EQ(a.size(), 2u);
  EXPECT_EQ(std::count_if(ca.begin(), ca.end(), [](const Counted& x) { return x.text == "b"; }), 1);
  EXPECT_EQ(ca.back().text, "b");
  a.clear();
  EXPECT_TRUE(a.empty());
}

// The transforms copy no expert they leave unchanged: PERM moves the shared weights, SCALE1's case
// shares all of them, GSCALE copies the one it rescales.
TEST(SharedVector, CaseTransformsShareTheExpertsTheyKeep) {
  CaseRecipe r;
  r.seed = 5;
  r.shape = {.tokens = 4, .hidden = 64, .inter = 32, .experts = 6, .top_k = 2};
  const Case c = materialize(r);
  const std::vector<int64_t> perm = {5, 4, 3, 2, 1, 0};
  const Case p = permute_experts(c, perm);
  for (size_t e = 0; e < 6; ++e)
    EXPECT_TRUE(p.experts.shares(static_cast<size_t>(perm[e]), c.experts, e)) << e;
  const Case s = with_routed_scale(c, 2.0);
  for (size_t e = 0; e < 6; ++e) EXPECT_TRUE(s.experts.shares(e, c.experts)) << e;
  bool ok = false;
  Case g;
  for (int k : {3, -2, 1, -1})
    if (g = rescale_weight_global(c, 2, "up", k, &ok); ok) break;
  ASSERT_TRUE(ok) << "no exact shift of expert 2's up scales";
  for (size_t e = 0; e < 6; ++e) EXPECT_EQ(g.experts.shares(e, c.experts), e != 2) << e;
  EXPECT_FALSE(g.experts[2] == c.experts[2]);
  EXPECT_TRUE(c == materialize(r)) << "the base case is unchanged";
}

}  // namespace
}  // namespace moefuzz
