#pragma once
// The failure report every driver prints (CLI, RapidCheck suites, fuzz targets). Its format is
// pinned by a golden test (tests/core/report_test.cpp): a fixed banner, the config, what failed,
// got / expected / bound / ratio, the worst elements (NaN first) and one REPRO line.
//
// Example:
//   std::string text = moefuzz::format_failure_report(recipe, verdict, "cpu",
//                                                      "moefuzz replay out/finding-1.moefuzz --kernel cpu");
#include <cstdint>
#include <string>

#include "core/recipe.h"
#include "core/verdict.h"

namespace moefuzz {

// The report, one '\n'-terminated line each:
//   ==== moefuzz: CHECK FAILED ====
//   kernel: cpu
//   config: tokens 4, hidden 64, ... (describe_recipe)
//   check: ORACLE  stage: combine
//   location: token 3, element 17          (only the set fields; "whole case" when none)
//   got 1.25  expected 1  bound 0.0625  ratio 4
//   message: ...
//   worst elements (N of M, NaN first, then by error/bound):
//       token   slot expert  element  got  expected  bound  ratio      (a table, at most 30 rows)
//   REPRO: <repro_command>
// Numbers are printed in shortest round-trip form (format_real), so they can be pasted into edits.
std::string format_failure_report(const CaseRecipe& recipe, const Verdict& v, const std::string& kernel,
                                  const std::string& repro_command);
inline constexpr size_t kReportMaxWorstElements = 30;

// One-paragraph description of the recipe's configuration (used in reports and `moefuzz show`):
// shapes, routing, quantization, SwiGLU, profile, seed, value profiles and the number of edits.
// recipe.profile must name the profile in force (the one the check used): every statement about the
// contract (where routed_scaling_factor is applied) comes from that profile, never from the recipe's
// own scale_placement field, which kernels and oracle ignore.
//   "tokens 4, hidden 64, inter 32, experts 8, top_k 2; routing softmax (renormalize), ..."
std::string describe_recipe(const CaseRecipe& recipe);

// A byte count with its binary-unit size: format_byte_count(3 << 30) == "3221225472 bytes (3 GiB)".
std::string format_byte_count(int64_t bytes);

}  // namespace moefuzz
