// The profile is an input of the check (CheckOptions::profile, `moefuzz check --profile`): the oracle
// and every invariant read the contract in force, not the kernel's claim. The cpu kernel implements
// sglang-cutlass-fp4 (routed_scaling_factor multiplied by the top-k op); checked under a profile
// that multiplies it in the combine, the routed-scale invariant and the oracle must fail, and under
// its own profile both must pass.
#include <gtest/gtest.h>

#include "core/case.h"
#include "core/errors.h"
#include "core/profile.h"
#include "drivers/check_engine.h"
#include "kernels/registry.h"

namespace moefuzz {
namespace {

CaseRecipe scaled_recipe(uint64_t seed) {
  CaseRecipe r;
  r.seed = seed;
  r.shape = {.tokens = 4, .hidden = 64, .inter = 32, .experts = 8, .top_k = 2};
  r.routing.routed_scaling_factor = 2.5;
  return r;
}

const Verdict& verdict_of(const CaseReport& rep, const std::string& code) {
  for (const auto& v : rep.verdicts)
    if (v.invariant == code) return v;
  std::string all;
  for (const auto& v : rep.verdicts) all += " " + v.signature() + ": " + v.message + ";";
  throw std::logic_error("no verdict for " + code + " among" + all);
}

TEST(ProfileInForce, OtherScalePlacementFailsOwnProfilePasses) {
  const auto kernel = make_kernel("cpu");
  const Profile& own = profile_by_name(kernel->profile());
  const char* other_name = own.rsf_in_topk ? "sglang-triton" : "sglang-cutlass-fp4";
  ASSERT_NE(profile_by_name(other_name).rsf_in_topk, own.rsf_in_topk) << "the test needs the other placement";
  CheckOptions base;
  base.invariants = select_invariants("ORACLE,SCALE1");
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const CaseRecipe r = scaled_recipe(seed);
    ASSERT_EQ(kernel->supports(r), "");
    const Case c = materialize(r);
    CheckOptions under_own = base, under_other = base;
    under_own.profile = own.name;
    under_other.profile = other_name;
    const CaseReport ok = check_case(*kernel, c, under_own);
    EXPECT_EQ(verdict_of(ok, "SCALE1").outcome, Outcome::kPass) << verdict_of(ok, "SCALE1").message;
    EXPECT_EQ(verdict_of(ok, "ORACLE").outcome, Outcome::kPass) << verdict_of(ok, "ORACLE").message;
    // "" means the kernel's claimed profile: the same as naming it.
    const CaseReport dflt = check_case(*kernel, c, base);
    EXPECT_EQ(verdict_of(dflt, "SCALE1").outcome, Outcome::kPass);
    // Both checks fail. The routed-scale check finds the kernel's top-k weights (x rsf) outside the
    // bounds of a contract that wants them unscaled before it reaches the linearity relation, and
    // reports that under the rule that broke (ORACLE/route), like ORACLE itself.
    const CaseReport bad = check_case(*kernel, c, under_other);
    ASSERT_EQ(bad.verdicts.size(), 2u);
    for (const Verdict& v : bad.verdicts) {
      EXPECT_EQ(v.outcome, Outcome::kFail) << "seed " << seed << " " << v.signature() << ": " << v.message;
      EXPECT_TRUE(v.invariant == "ORACLE" || v.invariant == "SCALE1") << v.signature();
    }
  }
}

TEST(ProfileInForce, UnknownProfileIsBadInput) {
  const auto kernel = make_kernel("cpu");
  const Case c = materialize(scaled_recipe(1));
  CheckOptions o;
  o.invariants = select_invariants("ORACLE");
  o.profile = "no-such-profile";
  EXPECT_THROW(check_case(*kernel, c, o), InputError);
}

}  // namespace
}  // namespace moefuzz
