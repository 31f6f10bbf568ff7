// The metamorphic shortcut (properties/invariants/support.h identical_run): a transformed run passes
// without a bound only when it made the baseline's decisions and wrote its output bit for bit, on
// every token it has; anything else goes to the bounded comparison (nullopt).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "properties/invariants/support.h"

namespace moefuzz::inv {
namespace {

// Two tokens, two slots, H = 3 output columns (row stride `stride`, the columns past H zero).
LayerResult run_of(int64_t stride) {
  LayerResult r;
  r.routing.tokens = 2;
  r.routing.slots = 2;
  r.routing.ids = {3, 1, 0, 2};
  r.routing.weights = {0.75f, 0.25f, 0.5f, 0.5f};
  const std::vector<float> rows[2] = {{1.5f, -2.0f, 0.0f}, {-0.0f, 3.25f, 1e-30f}};
  for (const auto& row : rows) {
    r.output.insert(r.output.end(), row.begin(), row.end());
    r.output.resize(r.output.size() + static_cast<size_t>(stride - 3), 0.0f);
  }
  return r;
}

const std::vector<int64_t> kBoth = {0, 1};

TEST(IdenticalRun, TheSameDecisionsAndOutputBitsPassWithoutABound) {
  const LayerResult a = run_of(3);
  const auto v = identical_run("PAD", a, run_of(3), kBoth, kBoth, 3);
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->outcome, Outcome::kPass);
  EXPECT_EQ(v->invariant, "PAD");
  EXPECT_EQ(v->compared, 6);
  EXPECT_EQ(v->max_ratio, 0.0);
  // PAD's run is wider (padded H): only the first H columns are the baseline's.
  EXPECT_TRUE(identical_run("PAD", a, run_of(8), kBoth, kBoth, 3).has_value());
  // BATCH's reversed batch: token i of b is token 1 - i of the baseline.
  LayerResult reversed = run_of(3);
  std::swap_ranges(reversed.output.begin(), reversed.output.begin() + 3, reversed.output.begin() + 3);
  std::swap_ranges(reversed.routing.ids.begin(), reversed.routing.ids.begin() + 2,
                   reversed.routing.ids.begin() + 2);
  std::swap_ranges(reversed.routing.weights.begin(), reversed.routing.weights.begin() + 2,
                   reversed.routing.weights.begin() + 2);
  EXPECT_TRUE(identical_run("BATCH", a, reversed, {1, 0}, kBoth, 3).has_value());
  EXPECT_FALSE(identical_run("BATCH", a, reversed, kBoth, kBoth, 3).has_value());
}

TEST(IdenticalRun, AnyDifferenceGoesToTheBoundedComparison) {
  const LayerResult a = run_of(3);
  auto differs = [&](auto edit) {
    LayerResult b = run_of(3);
    edit(b);
    return !identical_run("GSCALE", a, b, kBoth, kBoth, 3).has_value();
  };
  EXPECT_TRUE(differs([](LayerResult& b) { b.output[1] = std::nextafter(b.output[1], 0.0f); }));
  EXPECT_TRUE(differs([](LayerResult& b) { b.output[3] = 0.0f; }));  // -0 became +0: other bits
  EXPECT_TRUE(differs([](LayerResult& b) { b.output[5] = 0.0f; }));  // the last compared column
  EXPECT_TRUE(differs([](LayerResult& b) { b.routing.ids[3] = 1; }));
  EXPECT_TRUE(differs([](LayerResult& b) { std::swap(b.routing.ids[0], b.routing.ids[1]); }));  // slot order
  EXPECT_TRUE(differs([](LayerResult& b) { b.routing.weights[2] = std::nextafter(0.5f, 1.0f); }));
  EXPECT_TRUE(differs([](LayerResult& b) { b.routing.ids.pop_back(); }));  // malformed decision
  EXPECT_TRUE(differs([](LayerResult& b) { b.routing.slots = 1; }));
  // Columns past the compared ones are not the baseline's business (PAD checks its zeros itself).
  EXPECT_FALSE(differs([](LayerResult& b) { b.output.push_back(7.0f); }));
}

TEST(IdenticalRun, EveryTokenOfTheTransformedRunMustBeCompared) {
  const LayerResult a = run_of(3);
  // PERM keeps only tokens with corresponding selections: the others are the oracle's to judge.
  EXPECT_FALSE(identical_run("PERM", a, run_of(3), {0}, {0}, 3).has_value());
  EXPECT_FALSE(identical_run("PERM", a, run_of(3), {0, 0}, {0, 0}, 3).has_value());  // a token twice
  EXPECT_FALSE(identical_run("PERM", a, run_of(3), {0, 2}, {0, 1}, 3).has_value());  // no such token
  EXPECT_FALSE(identical_run("PERM", a, run_of(3), kBoth, kBoth, 4).has_value());    // past the row
}

TEST(IdenticalRun, NonFiniteOutputsAreLeftToTheBoundedComparison) {
  // The bounded comparison skips elements the oracle cannot bound and marks what it proves; equal
  // NaNs prove nothing here either.
  for (const float bad : {NAN, INFINITY}) {
    LayerResult a = run_of(3), b = run_of(3);
    a.output[4] = b.output[4] = bad;
    EXPECT_FALSE(identical_run("PAD", a, b, kBoth, kBoth, 3).has_value()) << bad;
  }
}

}  // namespace
}  // namespace moefuzz::inv
