// moefuzz replay FILE... [--kernel K] [--invariants a,b]: re-run saved cases and print the report.
// The kernel defaults to the one named in the file's "# kernel:" header (findings carry it).
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "core/case.h"
#include "core/errors.h"
#include "core/recipe_text.h"
#include "core/report.h"
#include "kernels/registry.h"
#include "properties/campaign.h"
#include "tools/commands.h"
#include "tools/global_options.h"

namespace moefuzz::cli {

void add_replay_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("replay", "Re-run saved cases (findings, regressions) and print the report");
  static std::vector<std::string> files;
  static std::string kernel_arg, invariants = "all";
  cmd->add_option("FILE", files, "Recipe files")->required();
  cmd->add_option("--kernel", kernel_arg, "Kernel (default: the file's '# kernel:' header, else cpu)");
  cmd->add_option("--invariants", invariants, "Comma-separated invariant codes, or all")->capture_default_str();
  cmd->callback([&exit_code] {
    int failed = 0;
    for (const auto& path : files) {
      const CaseRecipe r = parse_recipe_file(path, global_options().max_case_bytes);
      std::string kernel_name = kernel_arg;
      if (kernel_name.empty()) {
        std::ifstream in(path);
        std::stringstream ss;
        ss << in.rdbuf();
        kernel_name = kernel_named_in(ss.str());
        if (kernel_name.empty()) kernel_name = "cpu";
      }
      const auto kernel = make_kernel(kernel_name);
      const std::string why = kernel->supports(r);
      if (!why.empty()) throw InputError(fmt::format("{}: kernel {} does not support this recipe: {}", path, kernel_name, why));
      const Case c = materialize(r, global_options().max_case_bytes);
      CheckOptions o{.invariants = select_invariants(invariants)};
      const CaseReport rep = check_case(*kernel, c, o);
      const std::string repro = fmt::format("moefuzz replay {} --kernel {}", path, kernel_name);
      if (rep.failed()) {
        ++failed;
        std::cout << format_failure_report(r, rep.first_failure(), kernel_name, repro);
      } else {
        std::cout << fmt::format("{}: all {} checks held on kernel {} ({:.2f}s)\n", path, rep.verdicts.size(), kernel_name, rep.seconds);
      }
      for (const auto& v : rep.verdicts)
        std::cout << fmt::format("  {:<8} {:<8} {}\n", v.invariant,
                                 v.outcome == Outcome::kPass ? "pass" : v.outcome == Outcome::kFail ? "FAIL"
                                                                      : v.outcome == Outcome::kSkip ? "skip" : "vacuous",
                                 v.message);
    }
    exit_code = failed ? 1 : 0;
  });
}

}  // namespace moefuzz::cli
