// Turns routing_golden.json cases (tests/golden/README.md, "routing_golden.json") into moefuzz Cases,
// RoutingDecisions and the torch-reference flavour of a backend profile. Shared by the golden replay
// (routing_golden_test.cpp) and the torch.compile drift replay (routing_compiled_golden_test.cpp).
//
// Example:
//   const Case c = golden_case(g, /*force_renormalize=*/false);
//   const RoutingCheck rc = check_routing(c, torch_reference("sglang-triton"),
//                                         golden_decision(c,
//                                         g["results"]["sglang.fused_topk_torch_native"]));
#pragma once

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

#include "core/case.h"
#include "core/layer_io.h"
#include "core/profile.h"

namespace moefuzz {

// JSON number, or one of the strings "nan", "inf", "-inf".
inline float as_float(const nlohmann::json& v) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan") return NAN;
    return s == "inf" ? INFINITY : -INFINITY;
  }
  return v.get<float>();
}

inline Case golden_case(const nlohmann::json& g, bool force_renormalize) {
  Case c;
  const auto& prm = g["params"];
  auto& r = c.recipe;
  r.shape.tokens = g["num_tokens"].get<int64_t>();
  r.shape.experts = g["num_experts"].get<int64_t>();
  r.shape.top_k = prm["top_k"].get<int64_t>();
  r.routing.renormalize = force_renormalize || prm["renormalize"].get<bool>();
  if (g["family"] == "deepseek_sigmoid_bias_grouped") {
    r.routing.mode = RoutingMode::kSigmoidGrouped;
    r.shape.n_group = prm["n_group"].get<int64_t>();
    r.shape.topk_group = prm["topk_group"].get<int64_t>();
    r.routing.routed_scaling_factor = prm["routed_scaling_factor"].get<double>();
    r.routing.correction_bias = !g["bias"].is_null();
    if (!g["bias"].is_null()) {
      for (const auto& b : g["bias"]) c.bias.push_back(as_float(b));
    }
  } else {
    r.routing.mode = RoutingMode::kSoftmax;
  }
  for (const auto& row : g["logits"]) {
    for (const auto& v : row) c.logits.push_back(as_float(v));
  }
  return c;
}

inline RoutingDecision golden_decision(const Case& c, const nlohmann::json& result) {
  RoutingDecision d;
  d.tokens = c.recipe.shape.tokens;
  d.slots = c.recipe.shape.top_k;
  for (const auto& row : result["ids_returned"]) {
    for (const auto& v : row) d.ids.push_back(v.get<int32_t>());
  }
  for (const auto& row : result["weights_returned"]) {
    for (const auto& v : row) d.weights.push_back(as_float(v));
  }
  return d;
}

// The torch reference flavour of a backend profile: CPU torch.sigmoid/exp are precise, and
// torch.topk promises no tie order.
inline Profile torch_reference(const std::string& name) {
  Profile p = profile_by_name(name);
  p.fast_math_exp = false;
  p.sigmoid_form = SigmoidForm::kReciprocal;
  p.tie_rule = TieRule::kUnspecified;
  // SGLang's torch biased_grouped_topk_impl divides by the plain sum; its CUDA path (the profile's
  // contract) goes through FlashInfer's kernel with 1e-20 (SPEC.md §2.1 table, §5 item 8).
  if (name.rfind("sglang-", 0) == 0) p.renorm_epsilon = 0.0;
  return p;
}

}  // namespace moefuzz
