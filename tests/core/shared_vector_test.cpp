// SharedVector (core/shared_vector.h): copies share elements until one is changed; a change through
// any mutable access never shows through another copy; const access never copies. And the case
// transforms built on it share the experts they do not change.
#include "core/shared_vector.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/case.h"
#include "core/expert_fingerprint.h"
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

// A stamp is given only for a frozen element, which never changes: every mutable access copies it
// first, so a reference can only reach the copy, which is unfrozen and stamped anew.
TEST(SharedVector, OnlyFrozenElementsHaveStamps) {
  SharedVector<Counted> a(2);
  EXPECT_FALSE(a.content_stamp(0)) << "not frozen: a reference may still change it";
  const SharedVector<Counted> shared = a;
  EXPECT_FALSE(a.content_stamp(0)) << "sharing alone does not freeze";
  a.freeze();
  const std::optional<uint64_t> s0 = a.content_stamp(0), s1 = a.content_stamp(1);
  ASSERT_TRUE(s0 && s1);
  EXPECT_NE(*s0, *s1);
  const SharedVector<Counted> copy = a;
  EXPECT_EQ(copy.content_stamp(0), s0) << "copies keep the element frozen under its stamp";
  Counted& r = a[0];  // unshared with `shared` and `copy`'s element 0, but frozen: copied anyway
  EXPECT_FALSE(a.shares(0, copy));
  EXPECT_FALSE(a.content_stamp(0)) << "the copy a reference reaches is not frozen";
  r.text = "changed";
  EXPECT_EQ(copy[0].text, "") << "the frozen element did not change";
  a.freeze();
  ASSERT_TRUE(a.content_stamp(0));
  EXPECT_NE(*a.content_stamp(0), *s0) << "new content, new stamp";
  EXPECT_EQ(a.content_stamp(1), s1) << "the untouched element keeps its stamp";
}

// expert_content_hash is add_expert_weights' value, and a materialized case's experts change only by
// copy: a changed expert's remembered hash is never the old one.
TEST(SharedVector, RememberedExpertHashesFollowTheContent) {
  CaseRecipe r;
  r.seed = 9;
  r.shape = {.tokens = 4, .hidden = 64, .inter = 32, .experts = 3, .top_k = 2};
  Case c = materialize(r);
  const auto direct = [](const ExpertWeights& e) {
    ContentHasher h;
    add_expert_weights(h, e);
    return h.value128();
  };
  for (size_t e = 0; e < 3; ++e) {
    ASSERT_TRUE(c.experts.content_stamp(e)) << "materialize freezes the experts";
    EXPECT_EQ(expert_content_hash(c.experts, e), direct(std::as_const(c.experts)[e])) << e;
  }
  const Hash128 before = expert_content_hash(c.experts, 1);
  ExpertWeights& held = c.experts[1];
  held.down.packed[0] ^= 0x11;
  const Hash128 changed = expert_content_hash(c.experts, 1);
  EXPECT_FALSE(changed == before);
  EXPECT_EQ(changed, direct(held));
  held.up.scales[0] ^= 0x01;  // through a reference held across the hash above
  EXPECT_EQ(expert_content_hash(c.experts, 1), direct(held));
  EXPECT_FALSE(expert_content_hash(c.experts, 1) == changed);
}

}  // namespace
}  // namespace moefuzz
