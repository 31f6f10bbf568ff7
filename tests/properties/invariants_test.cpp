// Zero false positives, as RapidCheck properties: every cheap invariant of the registry holds for
// every correct built-in kernel (cpu, cpu-flashinfer, cpu-trtllm and the consistent composition
// cells) on generated small recipes, each checked under the kernel's own declared profile through
// the check engine (the same path as `moefuzz check`).
//
// One property per invariant, named for what it states. Each generated recipe is checked on every
// correct kernel that supports it and to which the invariant applies (a recipe none applies to is
// discarded, so the success count counts real checks). RC_TAG prints which kernels were exercised.
//
// Budget: the defaults below keep the file near a minute on 2 cores. Longer runs are opt-in:
//   RC_PARAMS="max_success=500" build/<dir>/bin/properties_invariants_test
// A failure prints moefuzz's failure report and the shrunk recipe under the failing kernel's profile
// (save it, then `moefuzz replay FILE --kernel K`); at exit RapidCheck prints RC_PARAMS="reproduce=..."
// to re-run exactly the shrunk case.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "core/case.h"
#include "core/recipe_text.h"
#include "core/report.h"
#include "drivers/check_engine.h"
#include "kernels/registry.h"
#include "properties/gen/recipe_gen.h"

namespace moefuzz {
namespace {

// RapidCheck reads RC_PARAMS once, lazily, when the first property runs; this runs before main and
// supplies the suite's budget where the caller did not choose one. 30 successes per property, each
// checking ~5 kernels (the cpu kernels support nearly every recipe, each composition cell one
// routing mode x shared fusion), keep 15 properties under ~2 minutes on 2 cores. Discards come from
// invariants with narrow domains (DUP: hash rows with duplicates, ~1/6 of draws), hence the ratio.
const bool kBudgetSet = [] {
  const char* env = std::getenv("RC_PARAMS");
  std::string params = env != nullptr ? env : "";
  if (params.find("max_success") == std::string::npos) params += " max_success=30";
  if (params.find("max_discard_ratio") == std::string::npos) params += " max_discard_ratio=50";
  ::setenv("RC_PARAMS", params.c_str(), 1);
  return true;
}();

struct NamedKernel {
  std::string name;
  std::unique_ptr<Kernel> kernel;
};

// Correct kernels: built-in and composition entries that declare no expected killers.
const std::vector<NamedKernel>& correct_kernels() {
  static const std::vector<NamedKernel> ks = [] {
    std::vector<NamedKernel> out;
    for (const auto& e : kernel_registry()) {
      if (e.kind != KernelKind::kBuiltin && e.kind != KernelKind::kComposition) continue;
      auto k = e.make();
      if (!k->expected_killers().empty()) continue;
      out.push_back({e.name, std::move(k)});
    }
    return out;
  }();
  return ks;
}

// The property every test below states for one invariant.
void invariant_holds_on_correct_kernels(const std::string& code) {
  const Invariant& inv = invariant_by_code(code);
  CaseRecipe r = *gen::recipe(gen::ShapeClass::kSmall);
  CheckOptions options;
  options.invariants = {&inv};
  int checked = 0;
  for (const auto& [name, kernel] : correct_kernels()) {
    CaseRecipe rk = r;
    rk.profile = kernel->profile();
    if (!kernel->supports(rk).empty() || !validate(rk).empty() || !inv.applies(*kernel, rk).empty()) continue;
    RC_TAG(name);
    const Case c = materialize(rk);
    const CaseReport rep = check_case(*kernel, c, options);
    // A vacuous verdict (compared nothing, or its bound accepts a trivial corruption) is not a pass:
    // it does not count as a check (a recipe with only vacuous verdicts is discarded).
    for (const auto& v : rep.verdicts) checked += v.outcome == Outcome::kPass ? 1 : 0;
    if (!rep.failed()) continue;
    const Verdict& v = rep.first_failure();
    const std::string repro = fmt::format(
        "save the recipe below (the counterexample with the kernel's profile) as case.moefuzz, then: moefuzz "
        "replay case.moefuzz --kernel {} --invariants {}  "
        "(or re-run this property with the RC_PARAMS=\"reproduce=...\" RapidCheck prints at exit)",
        name, code);
    RC_FAIL(format_failure_report(rk, v, name, repro) + "recipe:\n" + to_text(rk));
  }
  RC_PRE(checked > 0);
}

// Property name -> invariant code. EveryCheapInvariantHasAProperty keeps this in step with the
// registry: a new cheap invariant without a property here fails that test.
const std::map<std::string, std::string>& properties() {
  static const std::map<std::string, std::string> p = {
      {"STRUCT", "RoutingDecisionsAreWellFormed"},
      {"FINITE", "OutputsAreFiniteWhereTheOracleIs"},
      {"CANARY", "OutputsFullyWrittenNothingOutsideInputsUntouched"},
      {"REPEAT", "RepeatedRunsAreBitIdentical"},
      {"SCALE1", "ScaleAppliesExactlyOnce"},
      {"WEIGHT1", "RouterWeightMultipliesExactlyOnce"},
      {"SHIFT", "SoftmaxRoutingIsShiftInvariant"},
      {"DUP", "DuplicateIdsEqualTheMergedWeight"},
      {"PAD", "ZeroPaddingLeavesOutputUnchanged"},
      {"GSCALE", "GlobalScaleTransferLeavesOutputUnchanged"},
      {"PERM", "ExpertRelabelingLeavesOutputUnchanged"},
      {"BATCH", "TokenOutputIndependentOfItsBatch"},
      {"PARAM", "EverySemanticParameterMatters"},
      {"TACTIC", "EveryTacticAgreesWithTheOracle"},
      {"ORACLE", "KernelMatchesOracleWithinDerivedBound"},
      {"OVF", "IndexProductsPast2To31KeepTheirValues"},
  };
  return p;
}

TEST(InvariantProperties, EveryCheapInvariantHasAProperty) {
  std::set<std::string> cheap;
  for (const auto& inv : invariant_registry())
    if (!inv.expensive) cheap.insert(inv.code);
  std::set<std::string> covered;
  for (const auto& [code, name] : properties()) covered.insert(code);
  EXPECT_EQ(cheap, covered) << "add a property below for each new cheap invariant";
}

TEST(InvariantProperties, CorrectKernelsAreEnumerated) {
  std::set<std::string> names;
  for (const auto& k : correct_kernels()) names.insert(k.name);
  for (const char* n : {"cpu", "cpu-flashinfer", "cpu-trtllm", "compose/softmax/plain/fuse/separate",
                        "compose/grouped/scaling/nofuse/fused", "compose/hash/plain/fuse/fused"})
    EXPECT_TRUE(names.count(n)) << n;
  for (const auto& n : names) EXPECT_EQ(n.find("mutant/"), std::string::npos) << n;
}

RC_GTEST_PROP(InvariantProperties, RoutingDecisionsAreWellFormed, ()) {
  invariant_holds_on_correct_kernels("STRUCT");
}
RC_GTEST_PROP(InvariantProperties, OutputsAreFiniteWhereTheOracleIs, ()) {
  invariant_holds_on_correct_kernels("FINITE");
}
RC_GTEST_PROP(InvariantProperties, OutputsFullyWrittenNothingOutsideInputsUntouched, ()) {
  invariant_holds_on_correct_kernels("CANARY");
}
RC_GTEST_PROP(InvariantProperties, RepeatedRunsAreBitIdentical, ()) {
  invariant_holds_on_correct_kernels("REPEAT");
}
RC_GTEST_PROP(InvariantProperties, ScaleAppliesExactlyOnce, ()) {
  invariant_holds_on_correct_kernels("SCALE1");
}
RC_GTEST_PROP(InvariantProperties, RouterWeightMultipliesExactlyOnce, ()) {
  invariant_holds_on_correct_kernels("WEIGHT1");
}
RC_GTEST_PROP(InvariantProperties, SoftmaxRoutingIsShiftInvariant, ()) {
  invariant_holds_on_correct_kernels("SHIFT");
}
RC_GTEST_PROP(InvariantProperties, DuplicateIdsEqualTheMergedWeight, ()) {
  invariant_holds_on_correct_kernels("DUP");
}
RC_GTEST_PROP(InvariantProperties, ZeroPaddingLeavesOutputUnchanged, ()) {
  invariant_holds_on_correct_kernels("PAD");
}
RC_GTEST_PROP(InvariantProperties, GlobalScaleTransferLeavesOutputUnchanged, ()) {
  invariant_holds_on_correct_kernels("GSCALE");
}
RC_GTEST_PROP(InvariantProperties, ExpertRelabelingLeavesOutputUnchanged, ()) {
  invariant_holds_on_correct_kernels("PERM");
}
RC_GTEST_PROP(InvariantProperties, TokenOutputIndependentOfItsBatch, ()) {
  invariant_holds_on_correct_kernels("BATCH");
}
RC_GTEST_PROP(InvariantProperties, EverySemanticParameterMatters, ()) {
  invariant_holds_on_correct_kernels("PARAM");
}
RC_GTEST_PROP(InvariantProperties, EveryTacticAgreesWithTheOracle, ()) {
  invariant_holds_on_correct_kernels("TACTIC");
}
RC_GTEST_PROP(InvariantProperties, KernelMatchesOracleWithinDerivedBound, ()) {
  invariant_holds_on_correct_kernels("ORACLE");
}
RC_GTEST_PROP(InvariantProperties, IndexProductsPast2To31KeepTheirValues, ()) {
  invariant_holds_on_correct_kernels("OVF");
}

}  // namespace
}  // namespace moefuzz
