// Runs for comparison (CheckContext::run_for_comparison, RunOptions::intermediates off): the
// invariants that ask for them read only the output, the routing and the quantized codes, so a kernel
// that drops every intermediate on those runs - as the `cuda` kernel does, skipping their downloads -
// gets the same verdicts as one that keeps them: outcome, stage, message, compared count and max
// error/bound of every invariant, on the `cpu` kernel and on mutants that fail. The wrapper counts the
// runs it was asked to strip, so the sweep cannot pass without exercising them.
#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <map>
#include <memory>
#include <string>

#include "core/case.h"
#include "drivers/check_engine.h"
#include "kernels/registry.h"
#include "properties/gen/recipe_gen.h"
#include "properties/invariant.h"

namespace moefuzz {
namespace {

// `inner`, with gemm1, activation, gemm2 and the shared output dropped whenever the caller said it
// does not read them.
class DropsIntermediates final : public Kernel {
 public:
  explicit DropsIntermediates(std::unique_ptr<Kernel> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  std::string profile() const override { return inner_->profile(); }
  std::string description() const override { return inner_->description(); }
  KernelClaims claims() const override { return inner_->claims(); }
  std::string supports(const CaseRecipe& r) const override { return inner_->supports(r); }
  std::vector<std::string> expected_killers() const override { return inner_->expected_killers(); }
  void run_layer(const Case& c, const RunOptions& opts, LayerResult& out) const override {
    inner_->run_layer(c, opts, out);
    if (opts.intermediates) return;
    ++stripped_;
    out.gemm1.reset();
    out.activation.reset();
    out.gemm2.reset();
    out.shared_output.clear();
  }
  int64_t stripped() const { return stripped_; }

 private:
  std::unique_ptr<Kernel> inner_;
  mutable std::atomic<int64_t> stripped_{0};
};

void expect_same_verdicts(const CaseReport& kept, const CaseReport& dropped) {
  ASSERT_EQ(kept.verdicts.size(), dropped.verdicts.size());
  for (size_t i = 0; i < kept.verdicts.size(); ++i) {
    const Verdict &a = kept.verdicts[i], &b = dropped.verdicts[i];
    SCOPED_TRACE(a.invariant);
    EXPECT_EQ(a.invariant, b.invariant);
    EXPECT_EQ(a.outcome, b.outcome);
    EXPECT_EQ(a.stage, b.stage);
    EXPECT_EQ(a.message, b.message);
    EXPECT_EQ(a.compared, b.compared);
    EXPECT_EQ(a.max_ratio, b.max_ratio);
  }
}

// Returns {cases checked, failed verdicts seen}.
std::pair<int64_t, int64_t> sweep(const std::string& kernel_name, const std::string& shapes, int64_t cases,
                                  int64_t& stripped) {
  const auto kept = make_kernel(kernel_name);
  const DropsIntermediates dropping(make_kernel(kernel_name));
  const CheckOptions options{.invariants = select_invariants("all")};
  const rc::Gen<CaseRecipe> g = gen::recipe_for(shapes);
  int64_t done = 0, failures = 0;
  for (uint64_t index = 0; done < cases && index < 20 * static_cast<uint64_t>(cases); ++index) {
    CaseRecipe r = gen::sample(g, /*seed=*/23, index, static_cast<int>(std::min<uint64_t>(100, index)));
    r.profile = kept->profile();
    if (!validate(r).empty() || !kept->supports(r).empty()) continue;
    SCOPED_TRACE(kernel_name + " " + shapes + " case " + std::to_string(index));
    const Case c = materialize(r);
    const CaseReport a = check_case(*kept, c, options);
    const CaseReport b = check_case(dropping, c, options);
    expect_same_verdicts(a, b);
    for (const Verdict& v : a.verdicts) failures += v.failed() ? 1 : 0;
    ++done;
    if (::testing::Test::HasFatalFailure()) break;
  }
  EXPECT_EQ(done, cases) << kernel_name << " supports too few drawn recipes";
  stripped += dropping.stripped();
  return {done, failures};
}

TEST(DecisionsOnlyRuns, InvariantsNeedNoIntermediatesOnRunsForComparison) {
  int64_t stripped = 0;
  const auto [cases, correct_failures] = sweep("cpu", "small", 150, stripped);
  EXPECT_EQ(correct_failures, 0) << "the cpu kernel is correct: no invariant may fail";
  sweep("cpu", "medium", 3, stripped);
  int64_t mutant_failures = 0;
  for (const char* m : {"mutant/z1-rsf-twice", "mutant/e2m1-ties-away", "mutant/z8-duplicate-id-dropped"})
    mutant_failures += sweep(m, "small", 12, stripped).second;
  std::cout << cases << " cpu cases, " << mutant_failures << " failed mutant verdicts, " << stripped
            << " runs without intermediates\n";
  EXPECT_GT(mutant_failures, 0) << "the mutants' failing verdicts must be compared too";
  // PERM, BATCH, PAD, GSCALE, SCALE1, PARAM, SHIFT, WEIGHT1 and REPEAT ask for runs without
  // intermediates: several per case.
  EXPECT_GT(stripped, 4 * cases) << "the runs for comparison must be exercised";
}

}  // namespace
}  // namespace moefuzz
