// moefuzz show FILE: the recipe, its description and size, and per-tensor statistics of the
// materialized case. Statistics need the case in memory, so above kShowStatsMaxBytes they are only
// computed on request (--stats); the recipe, description and size always print.
#include <fmt/format.h>

#include <iostream>
#include <limits>

#include "core/case.h"
#include "core/case_stats.h"
#include "core/errors.h"
#include "core/recipe_text.h"
#include "core/report.h"
#include "tools/commands.h"
#include "tools/global_options.h"

namespace moefuzz::cli {
namespace {

// A quick look should stay quick: 256 MiB materializes in about two seconds on the dev machine
// (qwen3_moe.moefuzz, 324 MiB: 2.3 s); model-sized cases (GBs) ask for --stats.
constexpr int64_t kShowStatsMaxBytes = int64_t{256} << 20;

void print_tensor_statistics(const CaseRecipe& r, int64_t estimate, bool force) {
  if (estimate > kShowStatsMaxBytes && !force) {
    std::cout << fmt::format(
        "tensors: statistics skipped: the case needs {}, above the {} that show "
        "materializes by default; pass --stats to compute them\n",
        format_byte_count(estimate), format_byte_count(kShowStatsMaxBytes));
    return;
  }
  Case c;
  try {
    c = materialize(r, global_options().max_case_bytes);
  } catch (const InputError& e) {
    if (std::string_view(e.what()).find("not implemented") == std::string_view::npos) throw;
    std::cout << "tensors: statistics unavailable: materialize() is not implemented in this build yet\n";
    return;
  }
  std::cout << "tensors:\n" << describe_case_tensors(c);
}

}  // namespace

void add_show_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "show", "Human-readable dump of a case file: recipe, description, size, tensor statistics");
  static std::string path;
  static bool force_stats = false;
  cmd->add_option("FILE", path, "Recipe file (MOEFUZZ v1)")->required();
  cmd->add_flag(
      "--stats", force_stats,
      fmt::format("Compute tensor statistics even for cases above {} (still bounded by --max-case-bytes)",
                  format_byte_count(kShowStatsMaxBytes)));
  cmd->callback([&exit_code] {
    // The recipe, description and size print for any size (nothing is allocated for them); the
    // --max-case-bytes cap applies when the statistics materialize the case.
    CaseRecipe r = parse_recipe_file(path, std::numeric_limits<int64_t>::max());
    const int64_t estimate = estimate_case_bytes(r);
    if (force_stats || estimate <= kShowStatsMaxBytes)
      r = parse_recipe_file(path, global_options().max_case_bytes);
    std::cout << "# " << path << "\n" << to_text(r);
    std::cout << "description: " << describe_recipe(r) << "\n";
    std::cout << "estimated size: " << format_byte_count(estimate) << "\n";
    print_tensor_statistics(r, estimate, force_stats);
    exit_code = kExitOk;
  });
}

}  // namespace moefuzz::cli
