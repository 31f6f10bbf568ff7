#include "fuzz/semantic_features.h"

#include <array>
#include <bitset>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/recipe_text.h"

#ifndef MOEFUZZ_FUZZ_FEATURES
#define MOEFUZZ_FUZZ_FEATURES 1
#endif

namespace moefuzz::fuzz {
namespace {

// Sizes of each feature's range, in Feature order. The total is the counter array's length.
constexpr std::array<uint32_t, static_cast<size_t>(Feature::kCount)> kSizes = {
    48,       // kRoutingModeFlags: 3 modes x 2 x 2 x 2 x 2
    8,        // kTokens
    17,       // kHiddenTiles: H/16 = 1..16, 17 = more
    17,       // kInterTiles
    8 * 9,    // kExpertsTopK: 8 size buckets x k = 1..8, 9 = more
    4,        // kZeroTokenExperts
    3 * 3,    // kNearTie
    2,        // kDuplicateIds
    7 * 2,    // kFp4Threshold
    3,        // kFp4Saturate
    6,        // kScaleByte (5: S_q outside the calibrated range, not checked)
    24 * 12,  // kRatio: up to 24 invariants x 12 log2 buckets
    24 * 4,   // kOutcome
    32,       // kValueProfile: 6+4+2+5+5+2+3 = 27 values
    32 * 4,   // kEditTarget: up to 32 targets x 4 value classes
    18,       // kQuantVariant: NVFP4 / bf16 activations 0..11, FP8 12..16
};
constexpr std::array<uint32_t, kSizes.size()> offsets() {
  std::array<uint32_t, kSizes.size()> o{};
  uint32_t at = 0;
  for (size_t i = 0; i < kSizes.size(); ++i) o[i] = at, at += kSizes[i];
  return o;
}
constexpr auto kOffsets = offsets();
constexpr uint32_t kTotal = kOffsets.back() + kSizes.back();

#if MOEFUZZ_FUZZ_FEATURES
// libFuzzer scans this section (on Linux, via __start_/__stop___libfuzzer_extra_counters) and treats
// every byte as a coverage counter; without libFuzzer (the replay runner) it is an ordinary array.
__attribute__((section("__libfuzzer_extra_counters"), used)) uint8_t g_counters[kTotal];
#endif

std::bitset<kTotal>& shadow() {
  static std::bitset<kTotal> s;
  return s;
}

bool enabled_from_env() {
  const char* e = std::getenv("MOEFUZZ_FEATURES");
  return MOEFUZZ_FUZZ_FEATURES && !(e != nullptr && std::strcmp(e, "0") == 0);
}

void print_stats() {
  std::fprintf(stderr, "moefuzz-features: reached %u of %u semantic buckets (counters %s)\n",
               buckets_reached(), bucket_count(), features_enabled() ? "on" : "off");
  if (const char* path = std::getenv("MOEFUZZ_FEATURE_STATS"); path != nullptr && *path != '\0') {
    if (FILE* f = std::fopen(path, "w")) {
      std::fprintf(f, "%u\n", buckets_reached());
      std::fclose(f);
    }
  }
}

struct ExitReport {
  ExitReport() { std::atexit(print_stats); }
};

uint32_t edit_value_class(double v) {
  if (v == 0) return 0;
  if (!std::isfinite(v)) return 1;
  for (double t : {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0, 448.0})
    if (std::fabs(v) == t) return 2;
  return 3;
}

}  // namespace

bool features_enabled() {
  static const bool on = enabled_from_env();
  return on;
}

void note(Feature f, uint32_t value) {
  static ExitReport report_at_exit;
  const size_t i = static_cast<size_t>(f);
  const uint32_t slot = kOffsets[i] + (value < kSizes[i] ? value : kSizes[i] - 1);
  shadow().set(slot);
#if MOEFUZZ_FUZZ_FEATURES
  if (features_enabled() && g_counters[slot] != 0xFF) ++g_counters[slot];
#endif
}

uint32_t size_bucket(int64_t n) {
  uint32_t b = 0;
  for (int64_t lim = 1; n > lim && b < 7; lim *= 2) ++b;
  return b;
}

void note_recipe(const CaseRecipe& r) {
  const auto& ro = r.routing;
  note(Feature::kRoutingModeFlags, static_cast<uint32_t>(ro.mode) * 16 + (ro.renormalize ? 8 : 0) +
                                       (ro.correction_bias ? 4 : 0) +
                                       (ro.scale_placement == ScalePlacement::kCombine ? 2 : 0) +
                                       (ro.shared_fusion == SharedFusion::kFused ? 1 : 0));
  note(Feature::kTokens, size_bucket(r.shape.tokens));
  note(Feature::kHiddenTiles, static_cast<uint32_t>(r.shape.hidden / 16 - 1));
  note(Feature::kInterTiles, static_cast<uint32_t>(r.shape.inter / 16 - 1));
  note(Feature::kExpertsTopK,
       size_bucket(r.shape.experts) * 9 + static_cast<uint32_t>(std::min<int64_t>(r.shape.top_k, 9) - 1));
  const auto& v = r.values;
  note(Feature::kValueProfile, static_cast<uint32_t>(v.logits));
  note(Feature::kValueProfile, 6 + static_cast<uint32_t>(v.bias));
  note(Feature::kValueProfile, 10 + static_cast<uint32_t>(v.table));
  note(Feature::kValueProfile, 12 + static_cast<uint32_t>(v.weights));
  note(Feature::kValueProfile, 17 + static_cast<uint32_t>(v.hidden));
  note(Feature::kValueProfile, 22 + static_cast<uint32_t>(v.act_scale));
  note(Feature::kValueProfile, 24 + static_cast<uint32_t>(v.load));
  if (r.quant.activations == ActivationFormat::kFp8Group)  // FP8 W8A8: UE8M0 or fp32 scales
    note(Feature::kQuantVariant,
         12 + (r.quant.fp8_ue8m0 ? 3 : 0) + (r.routing.routed_scaling_factor != 1.0 ? 1 : 0));
  else
    note(Feature::kQuantVariant, (r.quant.activations == ActivationFormat::kBf16 ? 6 : 0) +
                                     (r.quant.act_scales == ActScaleMode::kPerExpert ? 3 : 0) +
                                     (r.quant.gate_up_scale_ratio != 1.0 ? 1 : 0) +
                                     (r.routing.routed_scaling_factor != 1.0 ? 1 : 0));
  if (!r.edits.empty()) {
    const auto targets = edit_targets(r);
    for (const Edit& e : r.edits) {
      uint32_t t = 0;
      while (t < targets.size() && targets[t].name != e.tensor) ++t;
      note(Feature::kEditTarget, t * 4 + edit_value_class(e.value));
    }
  }
}

void note_routing(const CaseRecipe& r, const RoutingDecision& d) {
  const int64_t experts = r.shape.experts;
  if (experts <= 0 || experts > 4096) return;
  std::vector<uint8_t> used(static_cast<size_t>(experts), 0);
  bool duplicate = false;
  for (int64_t t = 0; t < d.tokens; ++t) {
    for (int64_t s = 0; s < d.slots; ++s) {
      const int32_t id = d.ids[static_cast<size_t>(t * d.slots + s)];
      if (id >= 0 && id < experts) used[static_cast<size_t>(id)] = 1;
      for (int64_t s2 = 0; s2 < s; ++s2)
        if (d.ids[static_cast<size_t>(t * d.slots + s2)] == id) duplicate = true;
    }
  }
  int64_t idle = 0;
  for (uint8_t u : used) idle += u == 0;
  note(Feature::kZeroTokenExperts, idle == 0 ? 0 : idle == 1 ? 1 : idle < experts - 1 ? 2 : 3);
  note(Feature::kDuplicateIds, duplicate ? 1 : 0);
}

void note_ratio(uint32_t invariant_index, double ratio) {
  // Buckets: 0 exact, 1..10 for ratio in (2^(b-11), 2^(b-10)] (b = 10 covers (1/2, 1]), 11 above 1.
  uint32_t b = 0;
  if (std::isnan(ratio) || ratio > 1) {
    b = 11;
  } else if (ratio > 0) {
    const int e = std::ilogb(ratio);  // ratio in [2^e, 2^(e+1))
    b = static_cast<uint32_t>(std::max(1, std::min(10, e + 11)));
  }
  note(Feature::kRatio, invariant_index * 12 + b);
}

uint32_t buckets_reached() { return static_cast<uint32_t>(shadow().count()); }
uint32_t bucket_count() { return kTotal; }

}  // namespace moefuzz::fuzz
