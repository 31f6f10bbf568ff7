#pragma once
// The recipe text format, version 1: human-readable, line-oriented, round-trips exactly.
//
//   MOEFUZZ v1
//   # comments and blank lines are ignored
//   seed = 42
//   profile = sglang-cutlass-fp4
//   tokens = 16
//   ...
//   edit = logits 3 5 -inf
//
// Every field has one line `key = value`; unknown keys, duplicate keys, bad values, a missing or
// unknown version line and truncated files are errors naming the line and field. Doubles are
// written with 17 significant digits (or inf/-inf/nan), so parse(to_text(r)) == r.
//
// Example:
//   std::string s = moefuzz::to_text(recipe);
//   moefuzz::CaseRecipe back = moefuzz::parse_recipe(s, "<memory>");   // throws InputError
#include <string>
#include <string_view>

#include "core/recipe.h"

namespace moefuzz {

inline constexpr std::string_view kRecipeMagic = "MOEFUZZ v1";
inline constexpr size_t kMaxRecipeTextBytes = size_t{1} << 20;  // 1 MiB: larger files are rejected
inline constexpr size_t kMaxEdits = 4096;

std::string to_text(const CaseRecipe& r);
// Parses and validates (validate() and estimate_case_bytes() <= max_case_bytes). `origin` names the
// source in messages (a file path). Throws InputError.
CaseRecipe parse_recipe(std::string_view text, const std::string& origin,
                        int64_t max_case_bytes = kDefaultMaxCaseBytes);
// Reads a file (size-capped before reading) and parses it. Throws InputError.
CaseRecipe parse_recipe_file(const std::string& path, int64_t max_case_bytes = kDefaultMaxCaseBytes);

// Enum <-> name, shared by the text format, the CLI and reports.
std::string_view name_of(RoutingMode v);
std::string_view name_of(ScoreFunc v);
std::string_view name_of(ScalePlacement v);
std::string_view name_of(SharedFusion v);
std::string_view name_of(ActivationFormat v);
std::string_view name_of(ActScaleMode v);

}  // namespace moefuzz
