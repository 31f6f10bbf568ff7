#pragma once
// Semantic coverage: MoE features of each execution (routing mode x flags, shape buckets around tile
// boundaries, experts with zero tokens, near-ties, values at FP4 thresholds, scale saturation and
// underflow, error/bound ratio buckets, ...) fed to libFuzzer as extra counters, so an input that
// reaches a new *semantic* region is kept in the corpus even when it adds no new code edge.
//
// libFuzzer reads every byte of the ELF section `__libfuzzer_extra_counters` as one more coverage
// counter. The array lives in semantic_features.cpp. Switches:
//   build time: -DMOEFUZZ_FUZZ_FEATURES=OFF (CMake) compiles the counters out;
//   run time:   MOEFUZZ_FEATURES=0 in the environment stops writing them (the A/B in docs/perf.md).
// Independently of both, a shadow bitmap records every bucket ever reached; at exit the target prints
// "moefuzz-features: reached N of M semantic buckets" (and writes N to $MOEFUZZ_FEATURE_STATS if
// set), so runs with and without features can be compared on the same scale.
//
// Example:
//   moefuzz::fuzz::note(moefuzz::fuzz::Feature::kShapeTokens, moefuzz::fuzz::size_bucket(T));
//   moefuzz::fuzz::note_recipe(recipe);        // mode x flags, shapes, value profiles, edits
#include <cstdint>
#include <string_view>

#include "core/case.h"
#include "core/layer_io.h"
#include "core/recipe.h"
#include "core/verdict.h"

namespace moefuzz::fuzz {

// Each feature owns a fixed range of counters; a value past the range's end lands in its last slot.
enum class Feature : uint8_t {
  kRoutingModeFlags,  // mode x renormalize x correction_bias x scale_placement x fusion (48)
  kTokens,            // size_bucket(T)
  kHiddenTiles,       // H / 16 (16-element scale blocks; H % 64 != 0 leaves a partial 64-K tile)
  kInterTiles,        // I / 16
  kExpertsTopK,       // size_bucket(E) x k
  kZeroTokenExperts,  // routed experts that received no token: none, one, several, all but one
  kNearTie,           // mode x tokens whose selection was a near-tie (0, 1, 2+)
  kDuplicateIds,      // a token's row repeats an expert id (hash routing)
  kFp4Threshold,      // a scaled element exactly on E2M1 threshold i (x sign)
  kFp4Saturate,       // |y| > 6 saturated; NaN input; Inf input
  kScaleByte,         // block scale: zero with amax != 0 (underflow), subnormal, max 0x7E, NaN, alt admitted
  kRatio,             // invariant (registry order) x log2 bucket of error/bound
  kOutcome,           // invariant x outcome (pass, fail, skip, vacuous)
  kValueProfile,      // each value-profile field x its value
  kEditTarget,        // edit target x value class (zero, special non-finite, threshold, other)
  kQuantVariant,      // quantizer variant x zero rule x activations format
  kCount
};

// Writes one counter (no-op when disabled). `value` indexes inside the feature's range.
void note(Feature f, uint32_t value);
// The recipe-level features: mode x flags, shapes, experts x k, value profiles, edits.
void note_recipe(const CaseRecipe& r);
// Routing-level features of a decision: zero-token experts and duplicate ids in a row.
void note_routing(const CaseRecipe& r, const RoutingDecision& d);
// error/bound ratio of invariant number `invariant_index` (registry order), bucketed by log2.
void note_ratio(uint32_t invariant_index, double ratio);
// 0:1, 1:2, 2:3-4, 3:5-8, 4:9-16, 5:17-32, 6:33-64, 7:more.
uint32_t size_bucket(int64_t n);
// Whether the counters are being written (build switch and MOEFUZZ_FEATURES).
bool features_enabled();
// Distinct buckets reached so far (shadow bitmap; counted whether or not the counters are enabled).
uint32_t buckets_reached();
uint32_t bucket_count();

}  // namespace moefuzz::fuzz
