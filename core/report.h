#pragma once
// The failure report every driver prints (CLI, RapidCheck suites, fuzz targets). Its format is
// pinned by a golden test (tests/core/report_test.cpp): a fixed banner, the config, what failed,
// got / expected / bound / ratio, the worst elements (NaN first) and one REPRO line.
//
// Example:
//   std::string text = moefuzz::format_failure_report(recipe, verdict, "cpu",
//                                                      "moefuzz replay out/finding-1.moefuzz --kernel cpu");
#include <string>

#include "core/recipe.h"
#include "core/verdict.h"

namespace moefuzz {

std::string format_failure_report(const CaseRecipe& recipe, const Verdict& v, const std::string& kernel,
                                  const std::string& repro_command);
// One-paragraph description of the recipe's configuration (used in reports and `moefuzz show`).
std::string describe_recipe(const CaseRecipe& recipe);

}  // namespace moefuzz
