// Replays every case of tests/golden/routing_golden.json (SGLang and FlashInfer routing references,
// run unchanged upstream; see the README there) through check_routing, comparing sets (ids in any
// order) and weights within the derived bounds. Which profile convention each upstream function
// follows, and why (docs/profiles.md has the same table):
//
//   sglang.biased_grouped_topk_impl   torch.sigmoid (precise), -inf group mask, w/sum (eps 0), rsf only
//                                     if renormalize && apply_on_output, torch.topk ties.
//                                     -> "sglang-cutlass-fp4" (apply=True: rsf fused in top-k) or
//                                        "sglang-triton" (apply=False), with the torch reference's
//                                        precise CPU sigmoid and unspecified tie order.
//   flashinfer.noaux_tc_ref           always w/(sum + 1e-20) * rsf, torch ties -> "flashinfer-reference"
//                                     with renormalize forced on (the function ignores the flag).
//   sglang.fused_topk_torch_native    softmax -> topk -> optional w/sum -> "sglang-triton", torch ties.
//   flashinfer.routing_reference_*    Renormalize (topk on logits, softmax of k), RenormalizeNaive,
//                                     Default -> "flashinfer-reference", renormalize per case.
//
// Expected differences, asserted as such (the oracle must flag them, not excuse them):
//   * SGLang with renormalize=False and apply=True never applies rsf (route_02, route_16): a profile
//     that fuses rsf in top-k fails it with ORACLE/route (golden README: "not a convention to copy").
//   * FlashInfer's multiply-by-zero group mask (flashinfer_zero_mask_hazard, route_24): it picks an
//     expert of an unselected group; our -inf (DeepSeek-V3) semantics reject it: STRUCT/route (its ids
//     span more than topk_group groups, BUGZOO Z3).
//   * route_26 (every selected sigmoid underflows): SGLang returns NaN (0/0): STRUCT/route (BUGZOO Z5).
//     FlashInfer returns 0 weights with ids tie-broken among zero WEIGHTS rather than by biased score.
//   * route_25 (sigmoid ~1e-18): the 1e-20 epsilon moves weights by ~0.05%, far beyond the bound of a
//     no-epsilon profile: FlashInfer's weights pass under their own profile and fail under SGLang's.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "core/profile.h"
#include "golden_files.h"
#include "oracles/routing_golden_util.h"
#include "oracles/routing_ref.h"

namespace moefuzz {
namespace {

struct Expectation {
  std::string signature = "";  // "" = must pass
  std::string why;
};

class RoutingGolden : public ::testing::Test {
 protected:
  void SetUp() override { golden_ = load_golden("routing_golden.json"); }
  nlohmann::json golden_;
};

void expect(const std::string& id, const std::string& fn, const RoutingCheck& rc, const Expectation& e) {
  if (e.signature.empty()) {
    EXPECT_TRUE(rc.verdict.passed()) << id << " " << fn << ": " << rc.verdict.signature() << " "
                                     << rc.verdict.message;
    EXPECT_GT(rc.verdict.compared, 0) << id << " " << fn;
    EXPECT_LE(rc.verdict.max_ratio, 1.0) << id << " " << fn;
  } else {
    EXPECT_EQ(rc.verdict.signature(), e.signature)
        << id << " " << fn << " expected to be flagged (" << e.why << "): " << rc.verdict.message;
    std::cout << "[ flagged  ] " << id << " " << fn << " (" << e.why << "): " << rc.verdict.signature() << " "
              << rc.verdict.message << "\n";
  }
}

TEST_F(RoutingGolden, EveryCaseMatchesItsProfileConvention) {
  int cases = 0, checks = 0;
  for (const auto& g : golden_["cases"]) {
    const std::string id = g["id"];
    ++cases;
    const bool deepseek = g["family"] == "deepseek_sigmoid_bias_grouped";
    for (const auto& [fn, result] : g["results"].items()) {
      const bool sglang = fn.rfind("sglang.", 0) == 0;
      Expectation want;
      Profile p;
      bool force_renorm = false;
      if (deepseek && sglang) {
        const bool apply = g["params"]["apply_routed_scaling_factor_on_output"].get<bool>();
        p = torch_reference(apply ? "sglang-cutlass-fp4" : "sglang-triton");
        if (apply && !g["params"]["renormalize"].get<bool>()) {
          want = {"ORACLE/route", "SGLang drops rsf when renormalize=False"};
        }
        if (g["selected_sigmoid_is_zero"].get<bool>())
          want = {"STRUCT/route", "0/0 = NaN weights (BUGZOO Z5)"};
      } else if (deepseek) {
        p = torch_reference("flashinfer-reference");
        force_renorm = true;
        if (g["flashinfer_zero_mask_hazard"].get<bool>()) {
          // Its extra expert comes from a third group: selected experts outside the selected groups.
          want = {"STRUCT/route", "multiply-by-zero group mask picks an unselected group"};
        }
        if (g["selected_sigmoid_is_zero"].get<bool>()) {
          want = {"ORACLE/route", "ids tie-broken among zero weights, not by biased score"};
        }
      } else {
        p = torch_reference(sglang ? "sglang-triton" : "flashinfer-reference");
      }
      const Case c = golden_case(g, force_renorm);
      const RoutingCheck rc = check_routing(c, p, golden_decision(c, result));
      expect(id, fn, rc, want);
      ++checks;
    }
  }
  expect_at_least_cases(golden_, kMinRoutingGoldenCases, "routing_golden.json");
  EXPECT_GT(cases, 0);
  EXPECT_GE(checks, 70);
}

// Epsilon: FlashInfer's +1e-20 is within the bound only for its own profile (route_25).
TEST_F(RoutingGolden, EpsilonSensitiveCaseSeparatesTheProfiles) {
  for (const auto& g : golden_["cases"]) {
    if (g["id"] != "route_25_e64_k8_eps_sensitive") continue;
    const Case c = golden_case(g, true);
    const RoutingDecision fi = golden_decision(c, g["results"]["flashinfer.noaux_tc_ref"]);
    EXPECT_TRUE(check_routing(c, torch_reference("flashinfer-reference"), fi).verdict.passed());
    const RoutingCheck no_eps = check_routing(c, torch_reference("sglang-cutlass-fp4"), fi);
    EXPECT_EQ(no_eps.verdict.signature(), "ORACLE/route") << no_eps.verdict.message;
    EXPECT_GT(no_eps.verdict.max_ratio, 10.0);
    return;
  }
  ADD_FAILURE() << "route_25 (the epsilon-sensitive case) is missing from routing_golden.json";
}

}  // namespace
}  // namespace moefuzz
