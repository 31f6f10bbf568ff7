#pragma once
// RapidCheck generators of CaseRecipes over real model shapes and edge shapes, with the hostile
// value profiles. Shrinking moves toward small cases: fewer tokens and experts, top_k = 1, small H
// and I, the first (tamest) value profile. The same generators drive the RapidCheck suites, the
// `moefuzz check` campaign (sampled deterministically from a seed) and the kill matrix.
//
// Example:
//   rc::prop("SCALE1 holds", [] { const auto r = *moefuzz::gen::recipe(moefuzz::gen::ShapeClass::kSmall); ...
//   }); moefuzz::CaseRecipe r = moefuzz::gen::sample(moefuzz::gen::recipe(kSmall), /*seed=*/7, /*index=*/3);
#include <rapidcheck.h>

#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <string_view>

#include "core/recipe.h"

namespace moefuzz::gen {

enum class ShapeClass : uint8_t {
  kSmall,   // T <= 40, H <= 256, I <= 128, E <= 64: thousands of cases per minute
  kMedium,  // tile-boundary token counts (127, 128, 129, ...), H up to 1024
  kLarge,   // H up to 7168, I up to 2048, E up to 256
  kModel,   // one of the real models below, T small
};

// Real model configurations (DeepSeek-V3, Qwen3-MoE, Mixtral, DeepSeek-V4-style hash layers).
std::vector<std::string> model_names();
// Throws InputError for unknown names. T is drawn small (1..4); everything else is the model's, except
// that a layer whose case does not fit `max_case_bytes` keeps fewer routed experts
// (model_routed_experts): the weights, not the tokens, make a real layer large (DeepSeek-V3's
// 256 experts at H 7168, I 2048 are 6.4 GB), and per-expert shapes, top_k and grouping stay the model's.
rc::Gen<CaseRecipe> model(std::string_view name,
                          int64_t max_case_bytes = std::numeric_limits<int64_t>::max());
// The routed experts model `name` is drawn with under `max_case_bytes`: the model's own count when its
// largest draw fits, else the largest count that halving it reaches (keeping every group and top_k
// satisfiable) that fits; the smallest such count when none does (the campaign then refuses the case
// with its size). `weights`: the weight format the count is for (bf16 weights are larger). Throws
// InputError for unknown names.
int64_t model_routed_experts(std::string_view name, int64_t max_case_bytes,
                             WeightFormat weights = WeightFormat::kNvfp4);
// The real model whose layer shape `shape` is (any token count): "deepseek-v3", or with fewer routed
// experts (model() under a memory cap) "deepseek-v3 (128 of 256 routed experts)"; "" when none.
std::string model_of(const Shape& shape);

rc::Gen<ValueProfile> value_profile();
rc::Gen<CaseRecipe> recipe(ShapeClass shapes);
// "small" | "medium" | "large" | "model:NAME" -> generator; throws InputError. `max_case_bytes`
// reaches the model classes (see model()).
rc::Gen<CaseRecipe> recipe_for(std::string_view shapes,
                               int64_t max_case_bytes = std::numeric_limits<int64_t>::max());

// Deterministic draw outside a property: case `index` of the stream rooted at `seed`, at RapidCheck
// size `size` (0..100; larger sizes reach larger shapes).
// Thread-safe (draws are serialized: RapidCheck's generation context is process-wide).
CaseRecipe sample(const rc::Gen<CaseRecipe>& g, uint64_t seed, uint64_t index, int size = 50);

}  // namespace moefuzz::gen

namespace moefuzz {
// How RapidCheck prints a counterexample (found by argument-dependent lookup, hence in namespace
// moefuzz): the recipe text (core/recipe_text.h), ready to save as a .moefuzz file and replay.
void showValue(const CaseRecipe& r, std::ostream& os);
}  // namespace moefuzz
