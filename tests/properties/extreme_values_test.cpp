// Zero false positives at the extremes of what the recipe validator accepts: the validator refuses,
// with a reason, the values no kernel can apply (subnormal or infinite as an fp32 factor;
// core/recipe.cpp), and (open, below) the correct kernels should pass every cheap invariant on
// generator recipes whose routed scaling factor sits at the edges of the accepted range.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/case.h"
#include "drivers/check_engine.h"
#include "kernels/registry.h"
#include "properties/gen/recipe_gen.h"

namespace moefuzz {
namespace {

// OPEN (issue 15, item 4): disabled because it fails today; run it with
// --gtest_also_run_disabled_tests. Measured (40 generator recipes x 3 correct kernels):
//   rsf 2^-126 and 1e-30: SCALE1/route on cpu and cpu-flashinfer (a weight x rsf below 2^-126
//     rounds with an absolute error up to 2^-150 that the relative weight bound does not carry),
//     STRUCT/route on cpu-trtllm at 2^-126;
//   rsf 2^127: FINITE/output, DUP/output, SCALE1/output (the fp32 output overflows where the
//     double oracle is finite);
//   rsf 1e30: no failure.
// The fix is a derived absolute underflow term (2^-150 per fp32 rounding) in the routing weight
// bounds and an overflow-aware FINITE, or a validator range derived from them.
TEST(ExtremeValues, DISABLED_RsfAtTheEdgesOfTheAcceptedRangeGivesNoFalsePositive) {
  const std::vector<double> edges = {0x1p-126, 1e-30, 1e30, 0x1p127};
  const CheckOptions options{.invariants = select_invariants("all")};
  const auto gen = gen::recipe_for("small");
  int64_t checked = 0;
  for (const char* name : {"cpu", "cpu-flashinfer", "cpu-trtllm"}) {
    const auto kernel = make_kernel(name);
    for (uint64_t index = 0; index < 40; ++index) {
      for (double rsf : edges) {
        CaseRecipe r =
            gen::sample(gen, /*seed=*/15, index, static_cast<int>(std::min<uint64_t>(100, 3 * index)));
        r.profile = kernel->profile();
        r.routing.routed_scaling_factor = rsf;
        ASSERT_EQ(validate(r), "") << "rsf " << rsf << " is inside the accepted range";
        if (!kernel->supports(r).empty()) continue;
        const CaseReport rep = check_case(*kernel, materialize(r), options);
        ++checked;
        EXPECT_FALSE(rep.failed()) << name << ", rsf " << rsf << ", index " << index << ": "
                                   << rep.first_failure().signature() << " " << rep.first_failure().message;
      }
    }
  }
  EXPECT_GT(checked, 300);
  RecordProperty("cases_checked", static_cast<int>(checked));
}

TEST(ExtremeValues, RsfNoKernelCanApplyIsRefusedWithAReason) {
  CaseRecipe r;
  for (double rsf : {1e-40, 2e-45, 1e-39, 1.17e-38, 3.5e38, 1e300}) {
    r.routing.routed_scaling_factor = rsf;
    const std::string why = validate(r);
    EXPECT_NE(why.find("routed_scaling_factor"), std::string::npos) << rsf << ": " << why;
    EXPECT_NE(why.find("fp32"), std::string::npos) << rsf << ": " << why;
  }
  r.routing.routed_scaling_factor = static_cast<double>(std::numeric_limits<float>::min());
  EXPECT_EQ(validate(r), "");
}

}  // namespace
}  // namespace moefuzz
