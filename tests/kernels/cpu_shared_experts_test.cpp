// Regression: separately added shared experts (SharedFusion::kSeparate) with more than one shared
// expert. The shared MLPs form their own bf16 output tensor, so a correct kernel rounds the sum of the
// shared outputs to bf16 before adding it to the routed output (kernels/cpu/cpu_pipeline.cpp,
// cpu_shared_experts). The oracle used to model one single rounding of routed + all shared outputs,
// collapsing the output interval to a point (bound 0) that excluded the kernel's legitimate
// double-rounded value: ORACLE/output and TACTIC/output failed with ratio inf on every tactic
// (found by zero-fp: `moefuzz check --kernel cpu --cases 200 --seed 1`).
#include <gtest/gtest.h>

#include <string>

#include "core/case.h"
#include "core/profile.h"
#include "core/recipe_text.h"
#include "kernels/registry.h"
#include "oracles/layer_ref.h"

namespace moefuzz {
namespace {

// The minimal-by-hand form of the finding: 2 separate shared experts, sigmoid_grouped routing,
// rsf in the combine, SwiGLU limit 10, far activation scales.
constexpr const char* kRecipe = R"(MOEFUZZ v1
seed = 14607217924959763
profile = sglang-cutlass-fp4
tokens = 13
hidden = 176
inter = 96
experts = 24
top_k = 2
n_group = 8
topk_group = 4
shared_experts = 2
routing = sigmoid_grouped
hash_score = sqrt_softplus
renormalize = false
correction_bias = false
routed_scaling_factor = 2.5
scale_placement = combine
shared_fusion = separate
vocab = 0
activations = nvfp4
act_scales = per_expert
gate_up_scale_ratio = 0.37
swiglu_limit = 10
swiglu_alpha = 1
swiglu_beta = 0
values.logits = ties
values.bias = dominant
values.table = duplicates
values.weights = wide_scales
values.hidden = outliers
values.act_scale = far
values.load = zero_token_experts
)";

TEST(CpuSharedExperts, SeparateSharedSumIsItsOwnBf16RoundingPoint) {
  const CaseRecipe r = parse_recipe(kRecipe, "<regression>");
  const Case c = materialize(r);
  for (const char* name : {"cpu", "cpu-flashinfer", "cpu-trtllm"}) {
    const auto k = make_kernel(name);
    if (!k->supports(r).empty()) continue;
    const Profile& p = profile_by_name(k->profile());
    for (int tactic = 0; tactic < k->claims().tactics; ++tactic) {
      LayerResult res;
      RunOptions o;
      o.tactic = tactic;
      k->run_layer(c, o, res);
      const LayerReference ref = reference_layer(c, p, res.routing, &res);
      ASSERT_TRUE(ref.admissibility.passed()) << name << ": " << ref.admissibility.message;
      const Verdict v = compare_stage(*ref.stage("output"), res.output, &res.routing);
      EXPECT_TRUE(v.passed()) << name << " tactic " << tactic << ": " << v.message;
      EXPECT_GT(v.compared, 0);
    }
  }
}

}  // namespace
}  // namespace moefuzz
