// DRIFT on degenerate inputs: when every element has the same normalized error (constant rows,
// every element at its bound) the bias statistic has no spread to measure and must claim nothing.
// Before the two-pass variance, `moefuzz check --kernel cpu --invariants DRIFT --seed 1 --cases 20`
// failed the correct cpu kernel with "systematic bias ... z = 116235962".
#include <gtest/gtest.h>

#include "core/case.h"
#include "kernels/registry.h"
#include "properties/drift.h"
#include "properties/gen/recipe_gen.h"

namespace moefuzz {
namespace {

TEST(DriftDegenerate, TheCliSweepOfTheIssuePassesOnTheCorrectKernel) {
  const auto kernel = make_kernel("cpu");
  const auto gen = gen::recipe_for("small");
  int checked = 0;
  for (uint64_t index = 0; checked < 20 && index < 200; ++index) {
    // As `moefuzz check` draws them (drivers/campaign.cpp): size grows with the index.
    CaseRecipe r = gen::sample(gen, /*seed=*/1, index, static_cast<int>(std::min<uint64_t>(100, index)));
    r.profile = kernel->profile();
    if (!validate(r).empty() || !kernel->supports(r).empty()) continue;
    ++checked;
    const DriftReport rep = run_layer_drift(*kernel, r, 24);
    EXPECT_FALSE(rep.verdict.failed()) << "index " << index << ": " << rep.verdict.message;
  }
  EXPECT_EQ(checked, 20);
}

}  // namespace
}  // namespace moefuzz
