// The routing-score memo returns exactly what the 50-digit evaluation rounds to, on first and
// repeated calls, for every score function, and keeps distinct inputs apart (-0 vs +0, neighbours).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "oracles/multiprecision.h"
#include "oracles/score_memo.h"

namespace moefuzz {
namespace {

TEST(ScoreMemo, AgreesWithMultiprecisionOnEveryCall) {
  const std::vector<float> xs = {0.0f,   -0.0f,  1.0f,  std::nextafter(1.0f, 2.0f), -3.5f, 20.0f,
                                 -87.0f, 1e-30f, -1e30f};
  for (int pass = 0; pass < 2; ++pass)
    for (float x : xs) {
      EXPECT_EQ(exact_sigmoid(x), to_double(hp_sigmoid(HighPrecision(x)))) << x;
      EXPECT_EQ(exact_sqrt_softplus(x), to_double(hp_sqrt_softplus(HighPrecision(x)))) << x;
      for (float bias : {0.0f, -1.0f, 0.125f})
        EXPECT_EQ(exact_sigmoid_plus(x, bias), to_double(hp_sigmoid(HighPrecision(x)) + HighPrecision(bias)))
            << x;
    }
}

TEST(ScoreMemo, SoftmaxRowsAreKeyedByTheirBits) {
  const std::vector<float> a = {1.0f, 2.0f, 3.0f}, b = {1.0f, 2.0f, std::nextafter(3.0f, 4.0f)};
  for (int pass = 0; pass < 2; ++pass) {
    const std::vector<double> pa = exact_softmax(a);  // copy: the reference lives until the next call
    const std::vector<double> pb = exact_softmax(b);
    const std::vector<HighPrecision> ra = hp_softmax(a), rb = hp_softmax(b);
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(pa[i], to_double(ra[i]));
      EXPECT_EQ(pb[i], to_double(rb[i]));
    }
    EXPECT_NE(pa[2], pb[2]);
  }
}

}  // namespace
}  // namespace moefuzz
