// Hand-computed routing cases (small E) for every mode of oracles/routing_ref.h. Expected weights are
// written as closed forms evaluated in double here (e.g. e/(1+e)), independent of the oracle's
// multiprecision code.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/profile.h"
#include "oracles/routing_ref.h"
#include "routing_test_util.h"

namespace moefuzz {
namespace {

using testing::decision;
using testing::routing_case;

double sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }

Profile torch_like() {  // fp32 weights, no epsilon, rsf in top-k, precise sigmoid, lower index wins
  Profile p = profile_by_name("sglang-cutlass-fp4");
  p.fast_math_exp = false;
  return p;
}

// Softmax, logits {2, 1, 0, -1}, k = 2: experts {0, 1}; renormalized weights e^2/(e^2+e) = e/(1+e)
// and 1/(1+e); without renormalization e^x / (e^2 + e + 1 + e^-1).
TEST(RoutingRef, SoftmaxTopkWithAndWithoutRenormalize) {
  Case c = routing_case(RoutingMode::kSoftmax, 1, 4, 2, {2, 1, 0, -1});
  const Profile p = torch_like();
  const RoutingDecision ref = reference_routing(c, p);
  ASSERT_EQ(ref.ids, (std::vector<int32_t>{0, 1}));
  const double e = std::exp(1.0);
  EXPECT_NEAR(ref.weights[0], e / (1 + e), 1e-7);
  EXPECT_NEAR(ref.weights[1], 1 / (1 + e), 1e-7);
  EXPECT_TRUE(check_routing(c, p, ref).verdict.passed());

  c.recipe.routing.renormalize = false;
  const RoutingDecision raw = reference_routing(c, p);
  const double z = std::exp(2.0) + std::exp(1.0) + 1 + std::exp(-1.0);
  EXPECT_NEAR(raw.weights[0], std::exp(2.0) / z, 1e-7);
  EXPECT_NEAR(raw.weights[1], std::exp(1.0) / z, 1e-7);
  const RoutingCheck rc = check_routing(c, p, raw);
  EXPECT_TRUE(rc.verdict.passed()) << rc.verdict.message;
  EXPECT_EQ(rc.verdict.compared, 2);
  EXPECT_LE(rc.verdict.max_ratio, 1.0);
}

TEST(RoutingRef, SoftmaxFailuresAreClassified) {
  Case c = routing_case(RoutingMode::kSoftmax, 1, 4, 2, {2, 1, 0, -1});
  const Profile p = torch_like();
  const double e = std::exp(1.0);
  const float w0 = static_cast<float>(e / (1 + e)), w1 = static_cast<float>(1 / (1 + e));
  // Order does not matter (sets).
  EXPECT_TRUE(check_routing(c, p, decision(1, 2, {1, 0}, {w1, w0})).verdict.passed());
  // Swapped weights: ORACLE, with error/bound reported.
  const RoutingCheck swapped = check_routing(c, p, decision(1, 2, {0, 1}, {w1, w0}));
  EXPECT_EQ(swapped.verdict.signature(), "ORACLE/route");
  EXPECT_GT(swapped.verdict.max_ratio, 1e3);
  // Expert 2 instead of 1: clearly not a top-2 set.
  EXPECT_EQ(check_routing(c, p, decision(1, 2, {0, 2}, {w0, w1})).verdict.signature(), "ORACLE/route");
  // Duplicate id, out-of-range id, NaN weight, wrong shape: STRUCT.
  EXPECT_EQ(check_routing(c, p, decision(1, 2, {0, 0}, {w0, w1})).verdict.signature(), "STRUCT/route");
  EXPECT_EQ(check_routing(c, p, decision(1, 2, {0, 7}, {w0, w1})).verdict.signature(), "STRUCT/route");
  EXPECT_EQ(check_routing(c, p, decision(1, 2, {0, 1}, {w0, NAN})).verdict.signature(), "STRUCT/route");
  EXPECT_EQ(check_routing(c, p, decision(1, 1, {0}, {w0})).verdict.signature(), "STRUCT/route");
}

// Equal logits: a deterministic kernel computes equal scores, so under "lower index wins" only
// {0, 1} is admissible; a torch-based reference (unspecified ties) may return any two.
TEST(RoutingRef, ExactTiesFollowTheProfileTieRule) {
  Case c = routing_case(RoutingMode::kSoftmax, 1, 4, 2, {0, 0, 0, 0});
  Profile p = torch_like();
  const RoutingDecision ref = reference_routing(c, p);
  EXPECT_EQ(ref.ids, (std::vector<int32_t>{0, 1}));
  const RoutingDecision other = decision(1, 2, {2, 3}, {0.5f, 0.5f});
  EXPECT_EQ(check_routing(c, p, other).verdict.signature(), "ORACLE/route");
  p.tie_rule = TieRule::kUnspecified;
  EXPECT_TRUE(check_routing(c, p, other).verdict.passed());
}

// Logits 1 fp32 ulp apart: within any fp32 kernel's score error, so both winners are admissible
// and the token is flagged as a near tie.
TEST(RoutingRef, NearTieAdmitsEitherWinner) {
  Case c = routing_case(RoutingMode::kSoftmax, 1, 3, 1, {1.0f, std::nextafter(1.0f, 2.0f), -3.0f});
  c.recipe.routing.renormalize = true;
  const Profile p = torch_like();
  for (int32_t id : {0, 1}) {
    const RoutingCheck rc = check_routing(c, p, decision(1, 1, {id}, {1.0f}));
    EXPECT_TRUE(rc.verdict.passed()) << id << ": " << rc.verdict.message;
    EXPECT_EQ(rc.near_tie[0], 1);
  }
  EXPECT_FALSE(check_routing(c, p, decision(1, 1, {2}, {1.0f})).verdict.passed());
}

Case grouped_case(std::vector<float> logits, std::vector<float> bias, double rsf) {
  Case c = routing_case(RoutingMode::kSigmoidGrouped, 1, 8, 2, std::move(logits));
  c.recipe.shape.n_group = 4;  // groups of 2
  c.recipe.shape.topk_group = 2;
  c.recipe.routing.routed_scaling_factor = rsf;
  c.bias = std::move(bias);
  return c;
}

// Groups {0,1} {2,3} {4,5} {6,7}. Zero bias: group 0 (logits 3, 2) and group 2 (0, 0.5) win; the top-2
// experts are 0 and 1; weights rsf * s(3)/(s(3)+s(2)) and rsf * s(2)/(s(3)+s(2)).
TEST(RoutingRef, SigmoidGroupedZeroBias) {
  Case c = grouped_case({3, 2, -1, -2, 0, 0.5f, -3, -4}, std::vector<float>(8, 0.0f), 2.5);
  const Profile p = torch_like();
  const RoutingDecision ref = reference_routing(c, p);
  ASSERT_EQ(ref.ids, (std::vector<int32_t>{0, 1}));
  const double sum = sig(3) + sig(2);
  EXPECT_NEAR(ref.weights[0], 2.5 * sig(3) / sum, 1e-6);
  EXPECT_NEAR(ref.weights[1], 2.5 * sig(2) / sum, 1e-6);
  EXPECT_TRUE(check_routing(c, p, ref).verdict.passed());
}

// A bias of +10 on expert 7 pulls group 3 and expert 7 in, but its WEIGHT is the unbiased s(-4).
TEST(RoutingRef, BiasSelectsButWeightsAreUnbiased) {
  std::vector<float> bias(8, 0.0f);
  bias[7] = 10.0f;
  Case c = grouped_case({3, 2, -1, -2, 0, 0.5f, -3, -4}, bias, 1.0);
  const Profile p = torch_like();
  const RoutingDecision ref = reference_routing(c, p);
  ASSERT_EQ(ref.ids, (std::vector<int32_t>{7, 0}));
  EXPECT_NEAR(ref.weights[0], sig(-4) / (sig(-4) + sig(3)), 1e-7);
  EXPECT_TRUE(check_routing(c, p, ref).verdict.passed());
}

// All logits 0 (s = 0.5) with negative biases: biased scores {-0.3,-0.4 | -1.5,-1.5 | 0.4,-4.5 | -2.5,-2.5}.
// Group scores (top-2 sums) -0.7, -3, -4.1, -5: groups 0 and 1 survive. Masking the others to -inf
// selects {0, 1}; masking them to 0 (BUGZOO Z3) would let expert 4 (0.4, unselected group) in.
TEST(RoutingRef, UnselectedGroupsAreMaskedToMinusInfinity) {
  Case c = grouped_case(std::vector<float>(8, 0.0f), {-0.8f, -0.9f, -2.0f, -2.0f, -0.1f, -5.0f, -3.0f, -3.0f},
                        1.0);
  const Profile p = torch_like();
  const RoutingDecision ref = reference_routing(c, p);
  ASSERT_EQ(ref.ids, (std::vector<int32_t>{0, 1}));
  const RoutingCheck zero_mask = check_routing(c, p, decision(1, 2, {4, 0}, {0.5f, 0.5f}));
  EXPECT_EQ(zero_mask.verdict.signature(), "ORACLE/route") << zero_mask.verdict.message;
  // With topk_group = 1, two groups touched is a structural violation (selected within selected groups).
  c.recipe.shape.topk_group = 1;
  c.recipe.shape.top_k = 2;
  EXPECT_EQ(check_routing(c, p, decision(1, 2, {0, 4}, {0.5f, 0.5f})).verdict.signature(), "STRUCT/route");
}

// rsf placement is the PROFILE's: in top-k the weights sum to rsf, else to 1; renormalize=false
// with rsf in top-k gives s * rsf (SGLang's reference drops rsf there; that is not excused).
TEST(RoutingRef, ScalePlacementFollowsTheProfile) {
  Case c = grouped_case({3, 2, -1, -2, 0, 0.5f, -3, -4}, std::vector<float>(8, 0.0f), 2.5);
  Profile p = torch_like();
  const RoutingDecision in_topk = reference_routing(c, p);
  EXPECT_NEAR(in_topk.weights[0] + in_topk.weights[1], 2.5, 1e-6);
  p.rsf_in_topk = false;
  const RoutingDecision in_combine = reference_routing(c, p);
  EXPECT_NEAR(in_combine.weights[0] + in_combine.weights[1], 1.0, 1e-6);
  EXPECT_EQ(check_routing(c, p, in_topk).verdict.signature(), "ORACLE/route");  // x rsf applied twice
  p.rsf_in_topk = true;
  c.recipe.routing.renormalize = false;
  const RoutingDecision raw = reference_routing(c, p);
  EXPECT_NEAR(raw.weights[0], 2.5 * sig(3), 1e-6);
  const RoutingCheck dropped = check_routing(c, p, decision(1, 2, {0, 1}, {float(sig(3)), float(sig(2))}));
  EXPECT_EQ(dropped.verdict.signature(), "ORACLE/route");
}

// Hash routing, sqrt-softplus scores v(x) = sqrt(log(1 + e^x)); table rows may repeat an expert and
// each slot keeps its own weight: row {2, 2} -> 0.5 and 0.5 (times rsf in top-k).
TEST(RoutingRef, HashRoutingWithDuplicates) {
  Case c = routing_case(RoutingMode::kHash, 2, 4, 2, {0.5f, -1, 2, 1, 0.5f, -1, 2, 1});
  c.recipe.routing.routed_scaling_factor = 1.5;
  c.token_ids = {3, 5};
  c.hash_table.assign(16 * 2, 0);
  c.hash_table[3 * 2] = 2;
  c.hash_table[3 * 2 + 1] = 2;
  c.hash_table[5 * 2] = 1;
  c.hash_table[5 * 2 + 1] = 3;
  const Profile p = torch_like();
  const RoutingDecision ref = reference_routing(c, p);
  ASSERT_EQ(ref.ids, (std::vector<int32_t>{2, 2, 1, 3}));
  EXPECT_NEAR(ref.weights[0], 0.75, 1e-6);
  EXPECT_NEAR(ref.weights[1], 0.75, 1e-6);
  auto v = [](double x) { return std::sqrt(std::log1p(std::exp(x))); };
  EXPECT_NEAR(ref.weights[2], 1.5 * v(-1) / (v(-1) + v(1)), 1e-6);
  EXPECT_TRUE(check_routing(c, p, ref).verdict.passed());
  // A kernel that merges the duplicate into one slot (BUGZOO Z8) is caught.
  RoutingDecision merged = ref;
  merged.weights[0] = 1.5f;
  merged.weights[1] = 0.0f;
  EXPECT_EQ(check_routing(c, p, merged).verdict.signature(), "ORACLE/route");
  RoutingDecision wrong_row = ref;
  wrong_row.ids[2] = 0;
  EXPECT_EQ(check_routing(c, p, wrong_row).verdict.signature(), "ORACLE/route");
}

// Fused shared expert: id E in an extra slot, weight 1/rsf before the top-k rsf multiply, so 1 after.
TEST(RoutingRef, FusedSharedExpertSlot) {
  Case c = grouped_case({3, 2, -1, -2, 0, 0.5f, -3, -4}, std::vector<float>(8, 0.0f), 2.5);
  c.recipe.shape.shared_experts = 1;
  c.recipe.routing.shared_fusion = SharedFusion::kFused;
  Profile p = torch_like();
  const RoutingDecision ref = reference_routing(c, p);
  ASSERT_EQ(ref.slots, 3);
  EXPECT_EQ(ref.ids[2], 8);
  EXPECT_EQ(ref.weights[2], 1.0f);
  EXPECT_TRUE(check_routing(c, p, ref).verdict.passed());
  p.rsf_in_topk = false;
  EXPECT_NEAR(reference_routing(c, p).weights[2], 1 / 2.5, 1e-7);
  EXPECT_EQ(check_routing(c, p, ref).verdict.signature(), "ORACLE/route");
}

// trtllm-gen emits bf16 weights (and reads the bias in bf16).
TEST(RoutingRef, TrtllmGenWeightsAreBf16) {
  Case c = grouped_case({3, 2, -1, -2, 0, 0.5f, -3, -4}, std::vector<float>(8, 0.0f), 2.5);
  const Profile& p = profile_by_name("trtllm-gen");
  const RoutingDecision ref = reference_routing(c, p);
  for (float w : ref.weights) EXPECT_EQ(w, static_cast<float>(static_cast<double>(w)));
  const double sum = sig(3) + sig(2);
  // 2.5*s(3)/sum = 1.3124... ; bf16 spacing there is 2^-7, so the stored value is within 2^-8.
  EXPECT_NEAR(ref.weights[0], 2.5 * sig(3) / sum, 0x1p-8);
  uint32_t bits;
  std::memcpy(&bits, &ref.weights[0], 4);
  EXPECT_EQ(bits & 0xFFFF, 0u);  // a bf16 value: low 16 bits zero
  EXPECT_TRUE(check_routing(c, p, ref).verdict.passed());
}

}  // namespace
}  // namespace moefuzz
