#pragma once
// Any bytes -> a valid, small CaseRecipe: the input side of every fuzz target. If the bytes are a
// recipe in the text format (core/recipe_text.h) they are parsed; otherwise they are decoded field by
// field (deterministically: same bytes, same recipe). Either way the recipe is then clamped to the
// target's ShapeLimits so one execution stays fast, edits that no longer fit are dropped, and a recipe
// that still fails validate() is replaced by the default recipe. Never throws.
//
// Example:
//   moefuzz::fuzz::ShapeLimits lim = moefuzz::fuzz::layer_limits();
//   moefuzz::CaseRecipe r = moefuzz::fuzz::recipe_from_bytes(data, size, lim);
//   moefuzz::Case c = moefuzz::materialize(r);        // small: fits lim
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "core/recipe.h"

namespace moefuzz::fuzz {

// Upper bounds on a fuzz case. Chosen per target for speed; every bound is a number of elements,
// not a tolerance. One exception: an FP8 block layer (weight_format fp8_block) has I = 128, its
// smallest, above max_inter (and H a multiple of 128 up to max_hidden; below 128 it stays NVFP4).
struct ShapeLimits {
  int64_t max_tokens = 8;
  int64_t max_hidden = 128;  // multiple of 16
  int64_t max_inter = 64;    // multiple of 16
  int64_t max_experts = 16;
  int64_t max_top_k = 4;
  int64_t max_shared = 1;
  int64_t max_vocab = 64;
  size_t max_edits = 8;
};
// moe_layer_fuzzer: whole pipeline, H up to two 64-K tiles, E up to 16.
ShapeLimits layer_limits();
// routing_fuzzer: the expert MLP is minimal (H = I = 16), routing shapes are wider.
ShapeLimits routing_limits();
// nvfp4_fuzzer: one token, H <= 64 (four 16-element blocks), one expert; an edit per element.
ShapeLimits nvfp4_limits();

// Clamps shapes and flags into `lim` and into validate()'s rules (group divisibility, k <= E, ...),
// drops edits that do not fit, and falls back to the default recipe (clamped) if still invalid.
// Returns true if the recipe was valid as given and already inside `lim` (nothing changed).
bool clamp_to_limits(CaseRecipe& r, const ShapeLimits& lim);

// Deterministic decode of arbitrary bytes into recipe fields (a short input reads zeros past its end).
CaseRecipe decode_recipe_bytes(std::span<const uint8_t> bytes);

// The text format when the bytes parse, else decode_recipe_bytes; then clamp_to_limits.
// `parsed` (optional) reports whether the text format was used.
CaseRecipe recipe_from_bytes(const uint8_t* data, size_t size, const ShapeLimits& lim,
                             bool* parsed = nullptr);

// Special real values for edits and the decoder: zeros of both signs, infinities, NaN, E2M1 decision
// thresholds and magnitudes, the E4M3 maximum and the NVFP4 calibration constant 448*6 = 2688, tiny
// and huge magnitudes, bf16's largest finite.
std::span<const double> special_reals();

}  // namespace moefuzz::fuzz
