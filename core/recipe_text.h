#pragma once
// The recipe text format, version 1 (docs/recipe-format.md documents every key): human-readable,
// line-oriented, round-trips exactly.
//
//   MOEFUZZ v1
//   # comments and blank lines are ignored; `#` after whitespace starts a trailing comment
//   seed = 42
//   profile = sglang-cutlass-fp4
//   tokens = 16
//   routing = sigmoid_grouped
//   routed_scaling_factor = 2.5
//   values.logits = all_negative
//   edit = logits 3 5 -inf
//   edit = gate.scale 0 1 2 0x7E
//
// Grammar: the first line is exactly `MOEFUZZ v1` (a trailing CR is tolerated on every line); then
// `key = value` lines. Every CaseRecipe field has one key; a key may appear once (except `edit`,
// repeated up to kMaxEdits times) and may be omitted (its default applies). Values:
//   integers   decimal (`-` allowed where the field is signed) or hex `0x7E`; out of range -> error
//   reals      shortest round-trip decimal (`2.5`, `1e-30`), `inf`, `-inf`, `nan`, or a hex integer
//   booleans   `true` / `false`
//   enums      readable names (name_of below), e.g. `sigmoid_grouped`, `per_expert`
//   edit       `<tensor> <i0> <i1> ... <value>` (tensors: core/case.h "Edit targets")
// Strict: unknown version, unknown or duplicate key, bad or missing value, trailing garbage, integer
// overflow, control or NUL bytes, lines over kMaxRecipeLineBytes, texts over kMaxRecipeTextBytes,
// more than kMaxEdits edits, and any validate() problem throw InputError "<origin>:<line>: field
// '<key>': <why>". Parsing never crashes and never allocates more than the text's size.
//
// to_text writes every field, reals in shortest round-trip form, so parse(to_text(r)) == r (a NaN
// edit value keeps its sign but not its payload).
//
// Example:
//   std::string s = moefuzz::to_text(recipe);
//   moefuzz::CaseRecipe back = moefuzz::parse_recipe(s, "<memory>");   // throws InputError
#include <optional>
#include <string>
#include <string_view>

#include "core/recipe.h"

namespace moefuzz {

inline constexpr std::string_view kRecipeMagic = "MOEFUZZ v1";
inline constexpr size_t kMaxRecipeTextBytes = size_t{1} << 20;  // 1 MiB: larger files are rejected
inline constexpr size_t kMaxRecipeLineBytes = 4096;
// kMaxEdits lives in core/recipe.h (validate() enforces it too).

std::string to_text(const CaseRecipe& r);
// Parses and validates (validate() and estimate_case_bytes() <= max_case_bytes). `origin` names the
// source in messages (a file path). Throws InputError.
CaseRecipe parse_recipe(std::string_view text, const std::string& origin,
                        int64_t max_case_bytes = kDefaultMaxCaseBytes);
// Reads a regular file (size-checked with fstat before reading) and parses it. A missing,
// unreadable, non-regular or oversized file throws InputError. Tensor files the recipe names
// (`weights`, `inputs`) are made absolute against the recipe's directory, and a file whose SHA-256
// differs from the recipe's `*_sha256` throws InputError (core/pinned_files.h).
// `verify_pinned` = false skips the hash check, for a caller that replaces the files anyway
// (replay --weights).
CaseRecipe parse_recipe_file(const std::string& path, int64_t max_case_bytes = kDefaultMaxCaseBytes,
                             bool verify_pinned = true);

// Formats a double so that parsing it gives back the same value: shortest round-trip digits, or
// inf / -inf / nan / -nan.   format_real(2.5) == "2.5", format_real(0.1f) == "0.10000000149011612"
std::string format_real(double v);

// Enum <-> name, shared by the text format, the CLI and reports. An out-of-range value (a recipe
// built from raw bytes) is named "invalid". parse_name returns std::nullopt for an unknown name.
//   moefuzz::name_of(moefuzz::RoutingMode::kSigmoidGrouped) == "sigmoid_grouped"
//   moefuzz::parse_name<moefuzz::RoutingMode>("hash") == moefuzz::RoutingMode::kHash
std::string_view name_of(RoutingMode v);
std::string_view name_of(ScoreFunc v);
std::string_view name_of(ScalePlacement v);
std::string_view name_of(SharedFusion v);
std::string_view name_of(ActivationFormat v);
std::string_view name_of(WeightFormat v);
std::string_view name_of(ActScaleMode v);
std::string_view name_of(LogitProfile v);
std::string_view name_of(BiasProfile v);
std::string_view name_of(TableProfile v);
std::string_view name_of(WeightProfile v);
std::string_view name_of(HiddenProfile v);
std::string_view name_of(ActScaleProfile v);
std::string_view name_of(LoadProfile v);
std::string_view name_of(W13Order v);

// Instantiated for every enum above.
template <class Enum>
std::optional<Enum> parse_name(std::string_view name);
// The accepted names of an enum, comma-separated (for error messages and --help).
template <class Enum>
std::string names_of();

}  // namespace moefuzz
