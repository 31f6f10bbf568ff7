#pragma once
// The shared body of the per-format "every correct CPU kernel passes every cheap invariant" tests
// (tests/properties/bf16_weights_test.cpp, mxfp4_weights_test.cpp): the first `count` small recipes
// of the generator (seed 77) whose weights have format `f`, checked on cpu, cpu-flashinfer, cpu-trtllm
// and cpu-matmul-ogs; every verdict must not fail. Returns how many ORACLE verdicts passed after comparing
// something, so the caller can require the sweep not to be vacuous.
//
// Example:
//   EXPECT_GT(moefuzz::test_support::correct_kernels_pass_every_invariant(moefuzz::WeightFormat::kBf16, 24,
//   2000), 48);
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/case.h"
#include "core/recipe_text.h"
#include "drivers/check_engine.h"
#include "kernels/registry.h"
#include "properties/gen/recipe_gen.h"
#include "properties/invariant.h"

namespace moefuzz::test_support {

inline int correct_kernels_pass_every_invariant(WeightFormat f, size_t count, uint64_t max_draws) {
  const auto gen = gen::recipe(gen::ShapeClass::kSmall);
  std::vector<CaseRecipe> cases;
  for (uint64_t i = 0; cases.size() < count && i < max_draws; ++i) {
    CaseRecipe r = gen::sample(gen, 77, i);
    if (r.quant.weights == f) cases.push_back(r);
  }
  EXPECT_EQ(cases.size(), count) << "the generator draws " << name_of(f) << " weights";
  int oracle_compared = 0;
  for (const char* name : {"cpu", "cpu-flashinfer", "cpu-trtllm", "cpu-matmul-ogs"}) {
    const auto kernel = make_kernel(name);
    for (const CaseRecipe& r : cases) {
      if (!kernel->supports(r).empty()) continue;
      const Case c = materialize(r);
      const CaseReport rep = check_case(*kernel, c, CheckOptions{.invariants = select_invariants("all")});
      for (const Verdict& v : rep.verdicts) {
        EXPECT_FALSE(v.failed()) << name << " " << v.signature() << ": " << v.message << "\n" << to_text(r);
        if (v.invariant == "ORACLE" && v.outcome == Outcome::kPass) oracle_compared += v.compared > 0;
      }
    }
  }
  return oracle_compared;
}

}  // namespace moefuzz::test_support
