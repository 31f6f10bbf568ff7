// Regression: the CPU kernel renormalizes with the profile's epsilon exactly. It used to run a
// 0-epsilon profile (SGLang) with 1e-20, which moves weights whose score sum is below ~2^-42 by
// eps/(sum + eps): hash sigmoid scores summing to 1.5e-19 gave a weight of 0.939 where the profile
// says 1 (ORACLE/route, SCALE1/route; found by zero-fp on compose/hash/scaling/nofuse/fused, seed
// 21). An all-underflowed row (0/0 under a 0 epsilon) must still give finite weights.
#include <gtest/gtest.h>

#include <cmath>

#include "core/case.h"
#include "core/profile.h"
#include "core/recipe_text.h"
#include "kernels/registry.h"
#include "oracles/routing_ref.h"

namespace moefuzz {
namespace {

constexpr const char* kRecipe = R"(MOEFUZZ v1
seed = 1478876160954681047
profile = sglang-triton
tokens = 31
hidden = 224
inter = 112
experts = 31
top_k = 3
n_group = 1
topk_group = 1
shared_experts = 2
routing = hash
hash_score = sigmoid
renormalize = false
correction_bias = false
routed_scaling_factor = 2.5
scale_placement = combine
shared_fusion = fused
vocab = 0
activations = nvfp4
act_scales = per_expert
gate_up_scale_ratio = 4
swiglu_limit = inf
swiglu_alpha = 1
swiglu_beta = 0
values.logits = large
values.bias = zero
values.table = distinct
values.weights = wide_scales
values.hidden = thresholds
values.act_scale = far
values.load = zero_token_experts
)";

TEST(CpuRoutingEpsilon, ZeroEpsilonProfileIsRunWithoutEpsilon) {
  const CaseRecipe r = parse_recipe(kRecipe, "<regression>");
  const Case c = materialize(r);
  for (const char* name : {"compose/hash/scaling/nofuse/fused", "cpu"}) {
    const auto k = make_kernel(name);
    if (!k->supports(r).empty()) continue;
    LayerResult res;
    k->run_layer(c, RunOptions{}, res);
    const RoutingCheck rc = check_routing(c, profile_by_name(k->profile()), res.routing);
    EXPECT_TRUE(rc.verdict.passed()) << name << ": " << rc.verdict.message;
  }
}

TEST(CpuRoutingEpsilon, AllUnderflowedRowStaysFinite) {
  CaseRecipe r = parse_recipe(kRecipe, "<regression>");
  r.shape.shared_experts = 0;
  r.routing.shared_fusion = SharedFusion::kSeparate;
  Case c = materialize(r);
  for (float& x : c.logits) x = -200.0f;  // every sigmoid underflows to 0 in fp32
  const auto k = make_kernel("compose/hash/scaling/nofuse/separate");
  ASSERT_TRUE(k->supports(c.recipe).empty()) << k->supports(c.recipe);
  LayerResult res;
  k->run_layer(c, RunOptions{}, res);
  for (float w : res.routing.weights) EXPECT_TRUE(std::isfinite(w)) << w;
  EXPECT_TRUE(check_routing(c, profile_by_name(k->profile()), res.routing).verdict.passed());
}

}  // namespace
}  // namespace moefuzz
