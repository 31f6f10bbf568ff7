// Oracle reuse (properties/oracle_reuse.h, CheckContext): wherever a metamorphic invariant takes the
// base case's oracle evaluation instead of a fresh one, the two are the same bit for bit - every
// stage's expected values and bounds, and the admissibility verdict. The same holds for the evaluations
// of transformed cases (PERM, BATCH, SCALE1, GSCALE, PAD, PARAM's SwiGLU limit) that take rows, or
// their GEMM1 intervals alone, from the context's row memo (oracles/row_memo.h), and the light evaluations
// those cases get (route and output only) hold the full evaluation's route and output stages bit for bit.
// (GSCALE's rescaled case as a whole is not the base case's evaluation: its expected values are, but its
// GEMM1/activation/GEMM2/output bounds differ in the last bits on ~1 case in 10 of this sweep; only the rows
// of the experts it did not rescale are reused.) A sweep over generated cases of every routing mode the
// generators draw, small and medium shapes, on the `cpu` kernel and mutants whose decisions differ from the
// ideal ones (there the fresh evaluation must be taken, and is).
#include <gtest/gtest.h>

#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <string>

#include "core/case.h"
#include "kernels/registry.h"
#include "properties/case_transforms.h"
#include "properties/gen/recipe_gen.h"
#include "properties/invariant.h"
#include "properties/oracle_reuse.h"

namespace moefuzz {
namespace {

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

void expect_same_admissibility(const OracleEvaluation& a, const OracleEvaluation& b) {
  EXPECT_EQ(a.admissibility.outcome, b.admissibility.outcome);
  EXPECT_EQ(a.admissibility.invariant, b.admissibility.invariant);
  EXPECT_EQ(a.admissibility.stage, b.admissibility.stage);
  EXPECT_EQ(a.admissibility.message, b.admissibility.message);
}

void expect_same_stage(const StageExpectation& a, const StageExpectation& b) {
  EXPECT_EQ(a.stage, b.stage);
  EXPECT_EQ(a.rows, b.rows);
  EXPECT_EQ(a.cols, b.cols);
  EXPECT_TRUE(same_bits(a.expected, b.expected)) << a.stage << ": expected values differ";
  EXPECT_TRUE(same_bits(a.bound, b.bound)) << a.stage << ": bounds differ";
}

// Equal bit for bit: admissibility (outcome, rule, stage, message) and every stage.
void expect_identical(const OracleEvaluation& mapped, const OracleEvaluation& fresh,
                      const std::string& what) {
  SCOPED_TRACE(what);
  expect_same_admissibility(mapped, fresh);
  ASSERT_EQ(mapped.stages.size(), fresh.stages.size());
  for (size_t i = 0; i < mapped.stages.size(); ++i) expect_same_stage(mapped.stages[i], fresh.stages[i]);
}

// A light evaluation (route and output only, OracleStages::kRouteAndOutput, what CheckContext::evaluate
// makes afresh) against the full fresh one: the same admissibility, and each stage it holds equal bit
// for bit to the full evaluation's stage of that name.
void expect_identical_stages_held(const OracleEvaluation& light, const OracleEvaluation& full,
                                  const std::string& what) {
  SCOPED_TRACE(what);
  expect_same_admissibility(light, full);
  if (light.admissibility.passed()) {
    EXPECT_NE(light.stage("output"), nullptr);
  }
  for (const StageExpectation& a : light.stages) {
    const StageExpectation* b = full.stage(a.stage);
    ASSERT_NE(b, nullptr) << a.stage;
    expect_same_stage(a, *b);
  }
}

LayerResult decisions_only(LayerResult r) {
  r.gemm1.reset();
  r.activation.reset();
  r.gemm2.reset();
  return r;
}

struct Counts {
  std::map<std::string, int64_t> reused, fresh;
  std::map<std::string, int64_t> rows_reused, evaluations;  // memo rows taken by transformed cases
  std::map<std::string, int64_t> gemm1_reused;              // GEMM1 rows alone taken from the memo
};

void sweep_case(const Kernel& k, const Case& c, Counts& n, bool with_routing_only) {
  CheckContext ctx(k, c);
  const LayerResult& base = ctx.baseline();
  const Profile& p = ctx.profile();
  // The end-to-end evaluation of the base run, taken from oracle() where that is the same.
  {
    const bool reused = full_evaluation_is_decisions_only(ctx.oracle(), base);
    ++(reused ? n.reused : n.fresh)["end-to-end"];
    expect_identical(ctx.oracle_end_to_end(), evaluate(c, p, decisions_only(base)), "end-to-end");
  }
  // The base case's content again (SCALE1 at the recipe's own factor, WEIGHT1 without shared experts
  // when there are none): the baseline's evaluation when the decisions agree.
  {
    const Case same = c;
    const LayerResult r = ctx.run(same);
    ++(same_decisions(r, base) ? n.reused : n.fresh)["identity"];
    expect_identical_stages_held(*ctx.evaluate(same, r), evaluate(c, p, decisions_only(r)), "identity");
  }
  // TACTIC: every other tactic's run.
  for (int t = 0; t < k.claims().tactics; ++t) {
    RunOptions o;
    o.tactic = t;
    const LayerResult r = ctx.run(c, &o);
    ++(same_conditioning(r, base) ? n.reused : n.fresh)["TACTIC"];
    expect_identical(*ctx.evaluate_on_base(r), evaluate(c, p, r), "TACTIC " + std::to_string(t));
  }
  // The metamorphic invariants' transformed cases: evaluated through the context, whose row memo
  // (oracles/row_memo.h) holds the rows of every evaluation above, and afresh without one.
  const int64_t T = c.recipe.shape.tokens, H = c.recipe.shape.hidden, I = c.recipe.shape.inter;
  std::vector<std::pair<std::string, Case>> transformed;
  if (c.recipe.shape.experts > 1)
    transformed.emplace_back("PERM",
                             permute_experts(c, group_preserving_permutation(c, c.recipe.seed ^ 0x5045u)));
  if (T > 1) {
    std::vector<int64_t> reversed, odd;
    for (int64_t t = T - 1; t >= 0; --t) reversed.push_back(t);
    for (int64_t t = 1; t < T; t += 2) odd.push_back(t);
    transformed.emplace_back("BATCH reversed", select_tokens(c, reversed));
    transformed.emplace_back("BATCH odd", select_tokens(c, odd));
  }
  transformed.emplace_back("SCALE1", with_routed_scale(without_shared_experts(c), 1.0));
  if (!base.routing.ids.empty() && base.routing.ids[0] >= 0 &&
      base.routing.ids[0] < static_cast<int32_t>(c.experts.size()))
    for (const char* which : {"gate", "down"}) {
      bool ok = false;
      Case g = rescale_weight_global(c, base.routing.ids[0], which, 3, &ok);
      if (ok) transformed.emplace_back(std::string("GSCALE ") + which, std::move(g));
    }
  transformed.emplace_back("PAD", pad_dims(c, (H / 128 + 1) * 128, (I / 128 + 1) * 128));
  // PARAM's SwiGLU limit: every row differs after GEMM1, whose intervals come from the memo.
  if (c.recipe.swiglu.limit > 1.0) {
    Case limited = c;
    limited.recipe.swiglu.limit = 1.0;
    transformed.emplace_back("PARAM limit", std::move(limited));
  }
  // Every other case also as a kernel that exposes no codes (the oracle covers every code a correct
  // quantizer could pick: dense flip magnitudes, several rows per call): routing decisions only.
  const bool routing_only = with_routing_only;
  const auto bare = [&](LayerResult r) {
    if (routing_only) {
      r.fc1_input.reset();
      r.fc2_input.reset();
      r.fc1_fp8.reset();
      r.fc2_fp8.reset();
    }
    return r;
  };
  if (routing_only) ctx.evaluate(c, bare(base));  // the base case's rows of this conditioning
  for (const auto& [name, tc] : transformed) {
    if (!k.supports(tc.recipe).empty()) continue;
    const LayerResult r = bare(ctx.run(tc));
    const int64_t hits = ctx.row_memo().hits(), gemm1_hits = ctx.row_memo().gemm1_hits();
    const std::shared_ptr<const OracleEvaluation> shared = ctx.evaluate(tc, r);
    const OracleEvaluation& through_memo = *shared;
    n.rows_reused[name] += ctx.row_memo().hits() - hits;
    n.gemm1_reused[name] += ctx.row_memo().gemm1_hits() - gemm1_hits;
    ++n.evaluations[name];
    const std::string what = name + (routing_only ? " (routing only)" : "");
    const OracleEvaluation light = evaluate(tc, p, decisions_only(r), nullptr, OracleStages::kRouteAndOutput);
    if (light.admissibility.passed()) {  // what the light evaluation keeps: route and output
      ASSERT_EQ(light.stages.size(), 2u) << what;
      EXPECT_EQ(light.stages[0].stage, "route");
      EXPECT_EQ(light.stages[1].stage, "output");
    }
    const OracleEvaluation fresh = evaluate(tc, p, decisions_only(r));
    expect_identical_stages_held(light, fresh, what + ", light");
    expect_identical_stages_held(through_memo, fresh, what);
  }
}

void sweep(const std::string& kernel_name, const std::string& shapes, uint64_t cases, Counts& n) {
  const auto k = make_kernel(kernel_name);
  const rc::Gen<CaseRecipe> g = gen::recipe_for(shapes);
  std::set<int> modes;
  uint64_t done = 0;
  for (uint64_t index = 0; done < cases && index < 20 * cases; ++index) {
    CaseRecipe r = gen::sample(g, /*seed=*/17, index, static_cast<int>(std::min<uint64_t>(100, index)));
    r.profile = k->profile();
    if (!validate(r).empty() || !k->supports(r).empty()) continue;
    SCOPED_TRACE(kernel_name + " " + shapes + " case " + std::to_string(index));
    modes.insert(static_cast<int>(r.routing.mode));
    sweep_case(*k, materialize(r), n, /*with_routing_only=*/done % 2 == 1);
    ++done;
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_EQ(done, cases) << kernel_name << " supports too few drawn recipes";
  if (cases >= 50) {
    EXPECT_GE(modes.size(), 3u) << "the sweep must cover several routing modes";
  }
}

TEST(OracleReuse, MappedEvaluationsEqualFreshOnesBitForBit) {
  Counts n;
  sweep("cpu", "small", 300, n);
  sweep("cpu", "medium", 3, n);
  // Mutants whose decisions or values differ: the fresh evaluation is taken there, and must be.
  sweep("mutant/e2m1-ties-away", "small", 40, n);
  sweep("mutant/tactic1-block-scale", "small", 40, n);
  for (const char* what : {"end-to-end", "identity", "TACTIC"}) {
    std::cout << what << ": " << n.reused[what] << " reused, " << n.fresh[what] << " re-evaluated\n";
    EXPECT_GT(n.reused[what], 100) << what << ": the sweep must exercise the reuse";
  }
  EXPECT_GT(n.fresh["TACTIC"], 0) << "the mutants' differing runs must take the fresh path";
  // Every transform whose rows are the base case's must take most of them from the memo; PAD's rows
  // have other dimensions and never can.
  for (const auto& [name, evaluations] : n.evaluations) {
    std::cout << name << ": " << evaluations << " evaluations, " << n.rows_reused[name]
              << " rows from the memo, " << n.gemm1_reused[name] << " GEMM1 rows alone\n";
    if (name == "PARAM limit") {
      EXPECT_GT(n.gemm1_reused[name], 2 * evaluations) << name << ": its GEMM1 rows come from the memo";
    } else if (name == "PAD") {
      EXPECT_EQ(n.rows_reused[name], 0) << name;
    } else {
      EXPECT_GT(n.rows_reused[name], 2 * evaluations) << name << ": the sweep must exercise the row memo";
    }
  }
}

// The base case's evaluation is taken for a case equal to it bit for bit, also when it is another
// object whose experts are separate copies (compared by content hash), and never for one equal only
// by value (a -0 logit where the base has +0): that one is evaluated afresh, through the row memo.
TEST(OracleReuse, TheBaseEvaluationNeedsTheBaseCasesBits) {
  CaseRecipe r;
  r.seed = 31;
  r.routing.mode = RoutingMode::kSoftmax;
  r.shape = {.tokens = 6, .hidden = 64, .inter = 32, .experts = 4, .top_k = 2};
  Case c = materialize(r);
  c.logits[0] = 0.0f;
  const auto k = make_kernel("cpu");
  CheckContext ctx(*k, c);
  const LayerResult base = ctx.baseline();
  (void)ctx.oracle_end_to_end();
  const auto lookups = [&] { return ctx.row_memo().hits() + ctx.row_memo().misses(); };

  Case copied = c;
  for (size_t e = 0; e < copied.experts.size(); ++e)
    copied.experts[e].down.global_dequant += 0.0f;  // own copies
  for (size_t e = 0; e < copied.experts.size(); ++e) ASSERT_FALSE(copied.experts.shares(e, c.experts));
  int64_t before = lookups();
  (void)ctx.evaluate(copied, base);
  EXPECT_EQ(lookups(), before) << "the same bits in other objects: the base evaluation, no new rows";

  Case negative_zero = c;
  negative_zero.logits[0] = -0.0f;
  ASSERT_TRUE(negative_zero == c) << "equal by value";
  before = lookups();
  (void)ctx.evaluate(negative_zero, base);
  EXPECT_GT(lookups(), before) << "other bits: a fresh evaluation";
}

// Invariant::evaluates_other_runs = false lets the check engine keep no rows (CheckContext::
// set_row_memo): such an invariant's check must evaluate nothing beyond the baseline's evaluation
// through the context, and an invariant that does (PERM here) must look rows up. The lookups of the
// context's memo tell them apart.
TEST(OracleReuse, InvariantsThatEvaluateOnlyTheBaselineLookUpNoRows) {
  const auto k = make_kernel("cpu");
  const rc::Gen<CaseRecipe> g = gen::recipe_for("small");
  std::map<std::string, int> checked;
  int perm_lookups = 0;
  for (uint64_t index = 0, done = 0; done < 12 && index < 400; ++index) {
    CaseRecipe r = gen::sample(g, /*seed=*/23, index, static_cast<int>(std::min<uint64_t>(100, index)));
    r.profile = k->profile();
    if (!validate(r).empty() || !k->supports(r).empty() || r.shape.experts < 2) continue;
    ++done;
    const Case c = materialize(r);
    for (const Invariant& inv : invariant_registry()) {
      if (inv.expensive || (inv.evaluates_other_runs && inv.code != "PERM")) continue;
      if (!inv.applies(*k, c.recipe).empty()) continue;
      CheckContext ctx(*k, c);
      (void)ctx.oracle();  // the baseline's evaluation: its own lookups
      const int64_t before = ctx.row_memo().hits() + ctx.row_memo().misses();
      (void)inv.check(ctx);
      const int64_t lookups = ctx.row_memo().hits() + ctx.row_memo().misses() - before;
      if (inv.code == "PERM") {
        perm_lookups += lookups > 0 ? 1 : 0;
      } else {
        EXPECT_EQ(lookups, 0) << inv.code << " says it evaluates only the baseline, but looked rows up (case "
                              << index << ")";
        ++checked[inv.code];
      }
    }
  }
  for (const Invariant& inv : invariant_registry()) {
    if (!inv.expensive && !inv.evaluates_other_runs) {
      EXPECT_GT(checked[inv.code], 0) << inv.code << " was never checked: the test must reach it";
    }
  }
  EXPECT_GT(perm_lookups, 0) << "PERM evaluates its permuted case through the memo";
}

}  // namespace
}  // namespace moefuzz
