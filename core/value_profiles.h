#pragma once
// Value profiles: one generator per tensor family, each drawing the values of one corner of the
// value space named by CaseRecipe::values (core/recipe.h). docs/value-profiles.md describes every
// profile, the corner it reaches and the property tests/core/value_profiles_test.cpp asserts.
//
// Every value is a pure function of (recipe.seed, tensor tag, index) through core/rng.h streams and
// exact integer / IEEE basic operations (+ - * / sqrt, no libm transcendental), so the bytes are the
// same on every machine and build type. The generators are independent of each other except where a
// corner needs coupling (documented at the function).
//
// Example:
//   moefuzz::CaseRecipe r;
//   r.values.logits = moefuzz::LogitProfile::kTies;
//   std::vector<float> logits = moefuzz::draw_logits(r);            // [T, E]
//   moefuzz::ExpertWeights w = moefuzz::draw_expert_weights(r, 3);  // expert 3 alone, no other expert drawn
#include <cstdint>
#include <vector>

#include "core/case.h"
#include "core/recipe.h"

namespace moefuzz {

// Hidden states [T, H] as bf16 bits (HiddenProfile). kThresholds plants its global amax so that the
// calibrated a1 scale (core/act_scales.h) is the power of two kThresholdsA1Scale.
std::vector<uint16_t> draw_hidden(const CaseRecipe& r);

// Router logits [T, E] (LogitProfile), then steered by LoadProfile, then ties/near-ties placed at the
// k-th boundary of the plain top-k order of the final logits.
std::vector<float> draw_logits(const CaseRecipe& r);

// e_score_correction_bias [E] (BiasProfile, bf16-representable values) for sigmoid grouped routing
// with correction_bias; empty otherwise. Steered by LoadProfile like the logits.
std::vector<float> draw_bias(const CaseRecipe& r);

// Hash routing: token_ids [T] in [0, vocab) and tid2eid [vocab, k] in [0, E) (TableProfile, steered
// by LoadProfile). Empty unless the routing mode is kHash.
struct HashRoutingTables {
  std::vector<int32_t> token_ids;
  std::vector<int32_t> table;
};
HashRoutingTables draw_hash_routing(const CaseRecipe& r);

// Expert `expert` (0 <= expert < E + shared) drawn directly as E2M1 codes, E4M3 block scales and S_d
// (WeightProfile). Decoded weights have roughly N(0, 1/K) magnitude for kNormal.
ExpertWeights draw_expert_weights(const CaseRecipe& r, int64_t expert);

// Experts the LoadProfile steers: `hot` get every token (kOneExpert, exactly top_k of them), `cold`
// get no token under plain top-k of the logits (kZeroTokenExperts). `companions` are the other
// members of hot groups (grouped routing), lifted so those groups win the group selection.
struct LoadSteering {
  std::vector<int64_t> hot;
  std::vector<int64_t> companions;
  std::vector<int64_t> cold;
};
LoadSteering load_steering(const CaseRecipe& r);

// Calibrated S_q of the kThresholds hidden profile: its planted amax 21/16 * 4 = 5.25 gives
// fl(fl(1/5.25) * 2688) = 512 exactly (21 is the only 8-bit significand m for which
// fl(fl(1/m) * 2688) is a power of two).
inline constexpr float kThresholdsHiddenAmax = 5.25f;
inline constexpr float kThresholdsA1Scale = 512.0f;

// Range of the effective block scale fp32(e4m3) * S_d under WeightProfile::kTinyScales.
inline constexpr double kTinyScalesMin = 1e-27;
inline constexpr double kTinyScalesMax = 1e-4;

}  // namespace moefuzz
