#pragma once
// Structure-aware mutation for libFuzzer: LLVMFuzzerCustomMutator / LLVMFuzzerCustomCrossOver of every
// target call these. The input is read as a recipe (recipe_bytes.h: the text format, or decoded
// bytes), mutated semantically (shapes around tile boundaries, routing mode and flags, seeds, routed
// scale, value profiles, quantization flags, SwiGLU, edits: special values at chosen places), clamped
// to the target's limits and re-serialized with to_text. An input that does not parse is first turned
// into its decoded recipe, so the output is always a valid recipe. One mutation in eight is left to
// libFuzzer's byte-level LLVMFuzzerMutate (when linked), to keep exploring the raw decoder too.
//
// Example (a target's hooks):
//   extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* d, size_t n, size_t max, unsigned seed) {
//     return moefuzz::fuzz::mutate_bytes(d, n, max, seed, moefuzz::fuzz::layer_limits());
//   }
#include <cstddef>
#include <cstdint>
#include <random>

#include "core/recipe.h"
#include "fuzz/recipe_bytes.h"

namespace moefuzz::fuzz {

// Which mutations a target prefers: the nvfp4 target mostly edits hidden values and the
// activation scale; the routing target mostly routing fields and logits.
enum class MutationFocus : uint8_t { kLayer, kRouting, kQuant };

// 1..3 semantic mutations of r, then clamp_to_limits.
void mutate_recipe(CaseRecipe& r, std::mt19937_64& rng, const ShapeLimits& lim, MutationFocus focus);
// Field groups taken from either parent; edits interleaved.
CaseRecipe cross_recipes(const CaseRecipe& a, const CaseRecipe& b, std::mt19937_64& rng,
                         const ShapeLimits& lim);

// libFuzzer glue: parse, mutate, write to_text into data (at most max_size bytes); returns the new
// size. When the text does not fit, the edits are dropped; if it still does not fit, the input is
// left to LLVMFuzzerMutate (or returned unchanged).
size_t mutate_bytes(uint8_t* data, size_t size, size_t max_size, unsigned seed, const ShapeLimits& lim,
                    MutationFocus focus = MutationFocus::kLayer);
size_t cross_bytes(const uint8_t* a, size_t a_size, const uint8_t* b, size_t b_size, uint8_t* out,
                   size_t max_out, unsigned seed, const ShapeLimits& lim);

}  // namespace moefuzz::fuzz
