// compare_elementwise (core/elementwise_compare.h) skips the ratio of elements well inside the worst
// passing ratio seen so far. Its verdicts must be those of the plain loop, which computes every ratio:
// the same counts, largest ratio (bit for bit), worst element (ties go to the later element) and
// report, on hostile inputs (ties, zero and subnormal bounds, non-finite values, failures).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <vector>

#include "core/elementwise_compare.h"
#include "core/rng.h"

namespace moefuzz {
namespace {

struct Plain {
  int64_t compared = 0, failing = 0;
  double max_ratio = 0;
  ElementError worst_pass{};
  int64_t worst_r = -1, worst_c = -1;
};

// The loop without the shortcut: every compared element's ratio.
Plain plain_compare(const std::vector<double>& got, const std::vector<double>& expected,
                    const std::vector<double>& bound, int64_t rows, int64_t cols) {
  Plain p;
  double worst_ratio = p.worst_pass.ratio();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const size_t i = static_cast<size_t>(r * cols + c);
      if (std::isnan(expected[i]) || std::isinf(bound[i])) continue;
      ++p.compared;
      const ElementError e{Location{}, got[i], expected[i], bound[i]};
      const double e_ratio = e.ratio();
      const double ratio = !std::isfinite(got[i]) && std::isfinite(expected[i]) ? INFINITY : e_ratio;
      if (!std::isnan(ratio)) p.max_ratio = std::max(p.max_ratio, ratio);
      if (element_outside_bound(got[i], expected[i], bound[i])) {
        ++p.failing;
      } else if (e_ratio >= worst_ratio) {
        p.worst_pass = e;
        worst_ratio = e_ratio;
        p.worst_r = r;
        p.worst_c = c;
      }
    }
  return p;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(ElementwiseCompare, SkippingClearPassesChangesNoVerdict) {
  const double tiny = std::numeric_limits<double>::denorm_min();
  int failed_cases = 0, passed_cases = 0;
  for (uint64_t trial = 0; trial < 3000; ++trial) {
    const Stream s(trial, "elementwise-compare");
    const int64_t rows = 1 + s.uniform_int(0, 0, 6), cols = 1 + s.uniform_int(1, 0, 40);
    const size_t n = static_cast<size_t>(rows * cols);
    std::vector<double> got(n), expected(n), bound(n);
    const int mode = static_cast<int>(trial % 6);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t k = 16 + 8 * i;
      expected[i] = s.normal(k) * std::ldexp(1.0, static_cast<int>(s.uniform_int(k + 1, -30, 30)));
      // The comparison's inputs, not tolerances: bounds from a few values, so equal ratios (ties) are
      // common, with zero, subnormal (tiny * 3, 1e-310) and normal ones, to reach every path of the
      // shortcut's normal-product condition.
      const double bounds[6] = {0.0, tiny * 3, 1e-310, 1e-3, 0.5, 0.5};
      bound[i] = bounds[s.uniform_int(k + 2, 0, 5)] * (mode == 0 ? 1.0 : std::fabs(expected[i]) + 1.0);
      // Errors as a few fixed fractions of the bound (ties again), an exact hit, or a failure.
      const double fractions[7] = {0.0, 0.25, 0.5, 0.5, 0.999999, 1.0, 3.0};
      const double f = fractions[s.uniform_int(k + 3, 0, mode == 1 ? 5 : 6)];
      got[i] = expected[i] + (s.bits(k + 4) & 1 ? f : -f) * bound[i];
      const uint64_t special = s.uniform_int(k + 5, 0, 200);
      if (special == 0) got[i] = NAN;
      if (special == 1) got[i] = INFINITY;
      if (special == 2) expected[i] = NAN;
      if (special == 3) bound[i] = INFINITY;
      if (special == 4) expected[i] = got[i] = INFINITY;
      if (special == 5) bound[i] = NAN;
      if (special == 6) bound[i] = -0.5;  // no bound holds anything, an exact hit included
    }
    const Verdict v = compare_elementwise("T", "stage", got, expected, bound, rows, cols, nullptr);
    const Plain p = plain_compare(got, expected, bound, rows, cols);
    ASSERT_EQ(v.compared, p.compared) << "trial " << trial;
    ASSERT_TRUE(same_bits(v.max_ratio, p.max_ratio))
        << "trial " << trial << ": " << v.max_ratio << " vs " << p.max_ratio;
    ASSERT_EQ(v.failed(), p.failing > 0) << "trial " << trial;
    if (p.failing > 0) {
      ++failed_cases;
      EXPECT_NE(v.message.find(std::to_string(p.failing) + " of " + std::to_string(p.compared)),
                std::string::npos)
          << v.message;
      continue;
    }
    ++passed_cases;
    ASSERT_EQ(v.worst.where.token, p.worst_r < 0 ? v.worst.where.token : p.worst_r) << "trial " << trial;
    ASSERT_EQ(v.worst.where.element, p.worst_r < 0 ? v.worst.where.element : p.worst_c) << "trial " << trial;
    ASSERT_TRUE(same_bits(v.worst.got, p.worst_pass.got) && same_bits(v.worst.bound, p.worst_pass.bound))
        << "trial " << trial;
  }
  // Both kinds of verdict seen often.
  EXPECT_GT(failed_cases, 300);
  EXPECT_GT(passed_cases, 300);
}

// The float overload (the oracle's stage comparison of a kernel's values) reads each element widened
// exactly: its verdict is the double overload's on the widened values, report included.
TEST(ElementwiseCompare, FloatValuesGiveTheVerdictOfTheirWidening) {
  int failed_cases = 0, passed_cases = 0;
  for (uint64_t trial = 0; trial < 2000; ++trial) {
    const Stream s(trial, "elementwise-compare-float");
    const int64_t rows = 1 + s.uniform_int(0, 0, 6), cols = 1 + s.uniform_int(1, 0, 40);
    const size_t n = static_cast<size_t>(rows * cols);
    std::vector<float> got(n);
    std::vector<double> expected(n), bound(n);
    for (size_t i = 0; i < n; ++i) {
      const uint64_t k = 16 + 8 * i;
      // With zero bounds a float expectation (exact hits possible); else one a float cannot hold.
      expected[i] = trial % 3 == 0 ? static_cast<float>(s.normal(k)) : s.normal(k);
      bound[i] = trial % 3 == 0 ? 0.0 : 1e-6 * (1 + s.uniform_int(k + 1, 0, 3));
      const double fractions[5] = {0.0, 0.5, 0.999, 1.0, 2.0};
      got[i] =
          static_cast<float>(expected[i] + fractions[s.uniform_int(k + 2, 0, trial % 2 ? 3 : 4)] * bound[i]);
      const uint64_t special = s.uniform_int(k + 3, 0, 2000);
      if (special == 0) got[i] = NAN;
      if (special == 1) got[i] = -INFINITY;
      if (special == 2) expected[i] = NAN;
    }
    const std::vector<double> widened(got.begin(), got.end());
    const Verdict a =
        compare_elementwise("T", "stage", std::span<const float>(got), expected, bound, rows, cols);
    const Verdict b = compare_elementwise("T", "stage", widened, expected, bound, rows, cols);
    ASSERT_EQ(a.outcome, b.outcome) << "trial " << trial;
    ASSERT_EQ(a.compared, b.compared) << "trial " << trial;
    ASSERT_TRUE(same_bits(a.max_ratio, b.max_ratio)) << "trial " << trial;
    ASSERT_EQ(a.message, b.message) << "trial " << trial;
    ASSERT_EQ(a.worst.where.token, b.worst.where.token) << "trial " << trial;
    ASSERT_EQ(a.worst.where.element, b.worst.where.element) << "trial " << trial;
    ASSERT_TRUE(same_bits(a.worst.got, b.worst.got)) << "trial " << trial;
    ASSERT_EQ(a.worst_elements.size(), b.worst_elements.size()) << "trial " << trial;
    (a.failed() ? failed_cases : passed_cases) += 1;
  }
  EXPECT_GT(failed_cases, 200);
  EXPECT_GT(passed_cases, 200);
}

}  // namespace
}  // namespace moefuzz
