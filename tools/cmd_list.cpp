// moefuzz list [--json]: kernels (with profile and claims), profiles, invariants.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "core/profile.h"
#include "core/profile_json.h"
#include "kernels/registry.h"
#include "properties/invariant.h"
#include "tools/commands.h"

namespace moefuzz::cli {

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
