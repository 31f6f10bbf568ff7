// moefuzz list [--json]: kernels (with profile and claims), profiles, invariants.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "core/profile.h"
#include "kernels/registry.h"
#include "properties/invariant.h"
#include "tools/commands.h"

namespace moefuzz::cli {
namespace {

// Every field of a profile (core/profile.h), the contract the oracle checks against.
nlohmann::json profile_json(const Profile& p) {
  const auto dtype = [](WeightDtype d) { return d == WeightDtype::kBf16 ? "bf16" : "fp32"; };
  const char* quantizer[] = {"fast_math", "exact", "reference"};
  const char* combine[] = {"fp32_slot_order", "bf16_atomics", "bf16_products", "fp32_unrounded",
                           "bf16_epilogue_products"};
  return {
      {"name", p.name},
      {"summary", p.summary},
      {"w13_order", p.w13_order == W13Order::kUpGate ? "up_gate" : "gate_up"},
      {"rsf_in_topk", p.rsf_in_topk},
      {"routing_weight_dtype", dtype(p.routing_weight_dtype)},
      {"renorm_epsilon", p.renorm_epsilon},
      {"tie_rule", p.tie_rule == TieRule::kLowerIndexWins ? "lower_index_wins" : "unspecified"},
      {"bf16_after_gemm1", p.bf16_after_gemm1},
      {"bf16_after_activation", p.bf16_after_activation},
      {"bf16_after_gemm2", p.bf16_after_gemm2},
      {"bf16_output", p.bf16_output},
      {"quantizer", quantizer[static_cast<int>(p.quantizer)]},
      {"zero_scale_rule", p.zero_scale_rule == ZeroScaleRule::kVecMaxTest ? "vec_max_test" : "scale_test"},
      {"per_expert_act_scales", p.per_expert_act_scales},
      {"combine", combine[static_cast<int>(p.combine)]},
      {"shared_fused_weight_inv_rsf", p.shared_fused_weight_inv_rsf},
      {"sigmoid_form", p.sigmoid_form == SigmoidForm::kTanh ? "tanh" : "reciprocal"},
      {"fast_math_exp", p.fast_math_exp},
      {"bias_dtype", dtype(p.bias_dtype)},
      {"sources", p.sources}};
}

}  // namespace

void add_list_command(CLI::App& app, int& exit_code) {
  auto* cmd =
      app.add_subcommand("list", "List kernels (built-in, mutants, plugins), profiles and invariants");
  static bool as_json = false;
  cmd->add_flag("--json", as_json, "Machine-readable output");
  cmd->callback([&exit_code] {
    nlohmann::json j;
    j["kernels"] = nlohmann::json::array();
    for (const auto& e : kernel_registry()) {
      auto k = e.make();
      const auto c = k->claims();
      j["kernels"].push_back({{"name", k->name()},
                              {"profile", k->profile()},
                              {"description", k->description()},
                              {"deterministic", c.deterministic},
                              {"batch_invariant", c.batch_invariant},
                              {"tactics", c.tactics},
                              {"mutant", k->is_mutant()},
                              {"expected_killers", k->expected_killers()}});
    }
    j["profiles"] = nlohmann::json::array();
    for (const auto& p : all_profiles()) j["profiles"].push_back(profile_json(p));
    j["invariants"] = nlohmann::json::array();
    for (const auto& inv : invariant_registry())
      j["invariants"].push_back(
          {{"code", inv.code}, {"description", inv.description}, {"expensive", inv.expensive}});
    if (as_json) {
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << "kernels:\n";
      for (const auto& k : j["kernels"])
        std::cout << fmt::format("  {:<34} profile={:<20} {}\n", k["name"].get<std::string>(),
                                 k["profile"].get<std::string>(), k["description"].get<std::string>());
      std::cout << "profiles:\n";
      for (const auto& p : j["profiles"])
        std::cout << fmt::format("  {:<22} {}\n", p["name"].get<std::string>(),
                                 p["summary"].get<std::string>());
      std::cout << "invariants:\n";
      for (const auto& i : j["invariants"])
        std::cout << fmt::format("  {:<8} {}{}\n", i["code"].get<std::string>(),
                                 i["description"].get<std::string>(),
                                 i["expensive"].get<bool>() ? " (large tier)" : "");
    }
    exit_code = 0;
  });
}

}  // namespace moefuzz::cli
