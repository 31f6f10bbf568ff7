// float_down / float_up (oracles/bounds.h) are bit-manipulation steps; check them against the
// nextafter definition on random doubles and on every edge: zeros of both signs, subnormals, the
// float range's ends, infinities, NaN, and doubles exactly on a float.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "oracles/bounds.h"

namespace moefuzz {
namespace {

float reference_down(double x) {
  if (std::isnan(x)) return static_cast<float>(x);
  float f = static_cast<float>(x);
  if (static_cast<double>(f) > x) f = std::nextafter(f, -std::numeric_limits<float>::infinity());
  return f;
}
float reference_up(double x) {
  if (std::isnan(x)) return static_cast<float>(x);
  float f = static_cast<float>(x);
  if (static_cast<double>(f) < x) f = std::nextafter(f, std::numeric_limits<float>::infinity());
  return f;
}

void expect_same(double x) {
  const float d = float_down(x), u = float_up(x), rd = reference_down(x), ru = reference_up(x);
  if (std::isnan(x)) {
    EXPECT_TRUE(std::isnan(d) && std::isnan(u));
    return;
  }
  EXPECT_EQ(std::bit_cast<uint32_t>(d), std::bit_cast<uint32_t>(rd)) << "float_down(" << x << ")";
  EXPECT_EQ(std::bit_cast<uint32_t>(u), std::bit_cast<uint32_t>(ru)) << "float_up(" << x << ")";
  EXPECT_LE(static_cast<double>(d), x);
  EXPECT_GE(static_cast<double>(u), x);
}

TEST(FloatRounding, MatchesNextafterOnEdges) {
  const double inf = std::numeric_limits<double>::infinity();
  const double fmax = std::numeric_limits<float>::max();
  for (double x : {0.0,
                   -0.0,
                   0x1p-149,
                   -0x1p-149,
                   0x1p-150,
                   -0x1p-150,
                   0x1p-160,
                   -0x1p-160,
                   0x1p-126,
                   -0x1p-126,
                   0x1.000001p-126,
                   1.0,
                   -1.0,
                   1.0 + 0x1p-30,
                   -1.0 - 0x1p-30,
                   fmax,
                   -fmax,
                   fmax * (1 + 0x1p-30),
                   -fmax * (1 + 0x1p-30),
                   0x1p128,
                   -0x1p128,
                   inf,
                   -inf,
                   std::nan("")})
    expect_same(x);
}

TEST(FloatRounding, MatchesNextafterOnRandomDoubles) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> ex(-160, 130);
  std::uniform_real_distribution<double> m(-2.0, 2.0);
  for (int i = 0; i < 200000; ++i) expect_same(std::ldexp(m(rng), ex(rng)));
}

}  // namespace
}  // namespace moefuzz
