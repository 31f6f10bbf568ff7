// moefuzz show FILE: the recipe, its shapes, and per-tensor statistics of the materialized case.
#include <iostream>

#include "core/recipe_text.h"
#include "core/report.h"
#include "tools/commands.h"

namespace moefuzz::cli {

void add_show_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("show", "Human-readable dump of a case file");
  static std::string path;
  cmd->add_option("FILE", path, "Recipe file (MOEFUZZ v1)")->required();
  cmd->callback([&exit_code] {
    const CaseRecipe r = parse_recipe_file(path);
    std::cout << describe_recipe(r) << "\n";
    exit_code = 0;
  });
}

}  // namespace moefuzz::cli
