// The oracle's row memo (oracles/row_memo.h): an evaluation through it equals the one without it bit
// for bit, takes exactly the rows whose inputs it has seen (by content: a changed hidden row, expert or
// exposed code of one row misses for that row only), and ignores a memo of another profile or one
// that is full. The sweep over the invariants' transformed cases is tests/properties/oracle_reuse_test.cpp.
#include "oracles/row_memo.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>

#include "core/case.h"
#include "core/profile.h"
#include "kernels/canary.h"
#include "kernels/registry.h"
#include "oracles/oracle.h"
#include "properties/case_transforms.h"

namespace moefuzz {
namespace {

void expect_same_bits(const OracleEvaluation& a, const OracleEvaluation& b) {
  EXPECT_EQ(a.admissibility.outcome, b.admissibility.outcome);
  EXPECT_EQ(a.admissibility.message, b.admissibility.message);
  ASSERT_EQ(a.stages.size(), b.stages.size());
  for (size_t i = 0; i < a.stages.size(); ++i) {
    SCOPED_TRACE(a.stages[i].stage);
    ASSERT_EQ(a.stages[i].expected.size(), b.stages[i].expected.size());
    EXPECT_EQ(0, std::memcmp(a.stages[i].expected.data(), b.stages[i].expected.data(),
                             a.stages[i].expected.size() * sizeof(double)));
    EXPECT_EQ(0, std::memcmp(a.stages[i].bound.data(), b.stages[i].bound.data(),
                             a.stages[i].bound.size() * sizeof(double)));
  }
}

struct Layer {
  std::unique_ptr<Kernel> kernel = make_kernel("cpu");
  Case c;
  LayerResult run;
  int64_t rows = 0;  // expanded rows
  Layer() {
    CaseRecipe r;
    r.seed = 7;
    r.profile = kernel->profile();
    r.shape.tokens = 6;
    r.shape.hidden = 64;
    r.shape.inter = 32;
    r.shape.experts = 4;
    r.shape.top_k = 2;
    c = materialize(r);
    run = run_guarded(*kernel, c, {}).result;
    rows = r.shape.tokens * r.shape.top_k;
  }
  const Profile& profile() const { return profile_by_name(kernel->profile()); }
};

TEST(OracleRowMemo, ASecondEvaluationTakesEveryRowAndEqualsAFreshOne) {
  Layer l;
  OracleRowMemo memo(l.profile());
  const OracleEvaluation fresh = evaluate(l.c, l.profile(), l.run);
  expect_same_bits(evaluate(l.c, l.profile(), l.run, &memo), fresh);
  EXPECT_EQ(memo.hits(), 0);
  EXPECT_EQ(memo.misses(), l.rows);
  EXPECT_GT(memo.bytes(), 0);
  expect_same_bits(evaluate(l.c, l.profile(), l.run, &memo), fresh);
  EXPECT_EQ(memo.hits(), l.rows);
  EXPECT_EQ(memo.misses(), l.rows);
}

TEST(OracleRowMemo, AChangedInputMissesForItsRowsOnly) {
  Layer l;
  OracleRowMemo memo(l.profile());
  evaluate(l.c, l.profile(), l.run, &memo);
  const int64_t H = l.c.recipe.shape.hidden, k = l.c.recipe.shape.top_k;

  // Token 2's hidden row: its k rows miss.
  Case token_changed = l.c;
  token_changed.hidden[static_cast<size_t>(2 * H + 5)] ^= 0x0040;
  const LayerResult r1 = run_guarded(*l.kernel, token_changed, {}).result;
  int64_t misses = memo.misses();
  expect_same_bits(evaluate(token_changed, l.profile(), r1, &memo), evaluate(token_changed, l.profile(), r1));
  EXPECT_EQ(memo.misses() - misses, k);

  // One expert's weights: the rows routed to it miss.
  const int32_t e = l.run.routing.ids[0];
  int64_t routed_to_e = 0;
  for (int32_t id : l.run.routing.ids) routed_to_e += id == e;
  Case expert_changed = l.c;
  expert_changed.experts[static_cast<size_t>(e)].down.packed[3] ^= 0x11;
  const LayerResult r2 = run_guarded(*l.kernel, expert_changed, {}).result;
  ASSERT_EQ(r2.routing.ids, l.run.routing.ids);
  misses = memo.misses();
  expect_same_bits(evaluate(expert_changed, l.profile(), r2, &memo),
                   evaluate(expert_changed, l.profile(), r2));
  EXPECT_EQ(memo.misses() - misses, routed_to_e);

  // The FC2 activation scale (one for all experts here): every row misses.
  Case scale_changed = l.c;
  ASSERT_EQ(scale_changed.a2_scale.size(), 1u);
  scale_changed.a2_scale[0] *= 2;
  const LayerResult r5 = run_guarded(*l.kernel, scale_changed, {}).result;
  misses = memo.misses();
  expect_same_bits(evaluate(scale_changed, l.profile(), r5, &memo), evaluate(scale_changed, l.profile(), r5));
  EXPECT_EQ(memo.misses() - misses, l.rows);

  // The kernel's exposed FC2 codes of row 1: that row misses.
  LayerResult r3 = l.run;
  ASSERT_TRUE(r3.fc2_input.has_value());
  const int64_t row_bytes = r3.fc2_input->cols / 2;
  r3.fc2_input->packed[static_cast<size_t>(row_bytes)] ^= 0x01;  // may be inadmissible: then it fails alike
  misses = memo.misses();
  expect_same_bits(evaluate(l.c, l.profile(), r3, &memo), evaluate(l.c, l.profile(), r3));
  EXPECT_GE(memo.misses() - misses, 1);

  // Relabeled experts (PERM): every row is found under its new expert index.
  const Case permuted = permute_experts(l.c, group_preserving_permutation(l.c, 3));
  const LayerResult r4 = run_guarded(*l.kernel, permuted, {}).result;
  const int64_t hits = memo.hits();
  expect_same_bits(evaluate(permuted, l.profile(), r4, &memo), evaluate(permuted, l.profile(), r4));
  EXPECT_EQ(memo.hits() - hits, l.rows);
}

TEST(OracleRowMemo, AnotherProfilesOrAFullMemoIsNotUsed) {
  Layer l;
  const Profile& other =
      profile_by_name(l.profile().name == "trtllm-gen" ? "sglang-cutlass-fp4" : "trtllm-gen");
  OracleRowMemo foreign(other);
  evaluate(l.c, l.profile(), l.run, &foreign);
  EXPECT_EQ(foreign.misses() + foreign.hits(), 0);
  EXPECT_EQ(foreign.bytes(), 0);

  OracleRowMemo full(l.profile(), /*max_bytes=*/0);
  evaluate(l.c, l.profile(), l.run, &full);
  expect_same_bits(evaluate(l.c, l.profile(), l.run, &full), evaluate(l.c, l.profile(), l.run));
  EXPECT_EQ(full.hits(), 0);
  EXPECT_EQ(full.bytes(), 0);
}

}  // namespace
}  // namespace moefuzz
