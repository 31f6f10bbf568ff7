#include "fuzz/recipe_bytes.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string_view>

#include "core/errors.h"
#include "core/fp8_block_quant.h"
#include "core/recipe_text.h"

namespace moefuzz::fuzz {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Enumerator counts (core/recipe.h); a decoded byte is taken modulo these.
constexpr int kModes = 3, kScoreFuncs = 3, kLogitProfiles = 6, kBiasProfiles = 4, kTableProfiles = 2,
              kWeightProfiles = 5, kHiddenProfiles = 5, kActScaleProfiles = 2, kLoadProfiles = 3;

// Routed scaling factors worth testing: 1 (the trap: rsf bugs are invisible), DeepSeek-V3's 2.5,
// Kimi's 2.827, a power of two, and factors far from 1 in both directions.
constexpr std::array<double, 8> kScales = {1.0, 2.5, 2.827, 16.0, 0.5, 1e-3, 1e3, 1.0 + 0x1p-20};
constexpr std::array<double, 6> kRatios = {1.0, 2.0, 0.5, 1.25, 1e-3, 1e3};
constexpr std::array<double, 5> kLimits = {kInf, 7.0, 10.0, 1.0, 0.25};

struct ByteReader {
  std::span<const uint8_t> b;
  size_t pos = 0;
  uint8_t u8() { return pos < b.size() ? b[pos++] : 0; }
  uint16_t u16() { return static_cast<uint16_t>(u8() | (u8() << 8)); }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{u8()} << (8 * i);
    return v;
  }
  bool flag() { return (u8() & 1) != 0; }
};

int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); }

// Largest divisor of e that is <= want (at least 1).
int64_t divisor_at_most(int64_t e, int64_t want) {
  for (int64_t d = std::min(want, e); d > 1; --d)
    if (e % d == 0) return d;
  return 1;
}

template <class Enum>
Enum wrap(Enum v, int count) {
  return static_cast<Enum>(static_cast<int>(v) % count);
}

double finite_positive_or(double v, double fallback) { return std::isfinite(v) && v > 0 ? v : fallback; }

}  // namespace

ShapeLimits layer_limits() { return {}; }
ShapeLimits routing_limits() {
  // T x E bounded by the routing oracle's cost (50-digit scores per logit: ~80% of an execution).
  return {.max_tokens = 8,
          .max_hidden = 16,
          .max_inter = 16,
          .max_experts = 32,
          .max_top_k = 8,
          .max_shared = 1,
          .max_vocab = 128,
          .max_edits = 8};
}
ShapeLimits nvfp4_limits() {
  return {.max_tokens = 1,
          .max_hidden = 64,
          .max_inter = 16,
          .max_experts = 1,
          .max_top_k = 1,
          .max_shared = 0,
          .max_vocab = 16,
          .max_edits = 80};
}

std::span<const double> special_reals() {
  static constexpr std::array<double, 26> v = {
      0.0, -0.0, 1.0, -1.0, kInf,  -kInf,  kNaN,  0.25, 0.75,  1.25,   1.75,    2.5,
      3.5, 5.0,  6.0, -6.0, 448.0, 2688.0, 1e-30, 1e30, 1e-45, 3.0e38, -3.0e38, 3.3895313892515355e38,
      0.5, -5.0};
  return v;
}

bool clamp_to_limits(CaseRecipe& r, const ShapeLimits& lim) {
  const CaseRecipe before = r;
  Shape& s = r.shape;
  Routing& ro = r.routing;
  ro.mode = wrap(ro.mode, kModes);
  ro.hash_score = wrap(ro.hash_score, kScoreFuncs);
  ro.scale_placement = wrap(ro.scale_placement, 2);
  ro.shared_fusion = wrap(ro.shared_fusion, 2);
  r.quant.activations = wrap(r.quant.activations, 3);
  r.quant.act_scales = wrap(r.quant.act_scales, 2);
  r.quant.weights = wrap(r.quant.weights, 4);
  if (r.quant.weights == WeightFormat::kFp8Block) {  // W8A8: fp8_group activations, no NVFP4 scale ratio
    r.quant.activations = ActivationFormat::kFp8Group;
    r.quant.gate_up_scale_ratio = 1.0;
  } else if (r.quant.weights != WeightFormat::kNvfp4) {  // W16A16 / W4A16: bf16 activations
    r.quant.activations = ActivationFormat::kBf16;
    r.quant.gate_up_scale_ratio = 1.0;
  }
  if (r.quant.weights != WeightFormat::kFp8Block) {
    if (r.quant.activations == ActivationFormat::kFp8Group) r.quant.activations = ActivationFormat::kNvfp4;
    r.quant.fp8_ue8m0 = false;
  }
  ValueProfile& v = r.values;
  v.logits = wrap(v.logits, kLogitProfiles);
  v.bias = wrap(v.bias, kBiasProfiles);
  v.table = wrap(v.table, kTableProfiles);
  v.weights = wrap(v.weights, kWeightProfiles);
  v.hidden = wrap(v.hidden, kHiddenProfiles);
  v.act_scale = wrap(v.act_scale, kActScaleProfiles);
  v.load = wrap(v.load, kLoadProfiles);

  s.tokens = clamp64(s.tokens, 1, lim.max_tokens);
  s.hidden = clamp64(s.hidden / 16 * 16, 16, lim.max_hidden);
  s.inter = clamp64(s.inter / 16 * 16, 16, lim.max_inter);
  if (r.quant.weights == WeightFormat::kMxfp4) {  // one E8M0 scale per 32 elements along K
    s.hidden = s.hidden / 32 * 32;
    s.inter = s.inter / 32 * 32;
    if (s.hidden < 32 || s.inter < 32) {  // the target's limits leave no room for a 32-wide block
      r.quant.weights = WeightFormat::kNvfp4;
      s.hidden = clamp64(before.shape.hidden / 16 * 16, 16, lim.max_hidden);
      s.inter = clamp64(before.shape.inter / 16 * 16, 16, lim.max_inter);
    }
  }
  if (r.quant.weights == WeightFormat::kFp8Block) {
    // One 128x128 weight block along each of H and I at least: FP8 layers take H = I = 128 (H up to
    // the limit's multiple of 128), past the target's inter limit (the smallest FP8 layer). Targets
    // whose hidden limit is below 128 keep NVFP4 weights.
    if (lim.max_hidden >= kFp8WeightBlock) {
      s.hidden = clamp64((before.shape.hidden + kFp8WeightBlock - 1) / kFp8WeightBlock * kFp8WeightBlock,
                         kFp8WeightBlock, lim.max_hidden / kFp8WeightBlock * kFp8WeightBlock);
      s.inter = kFp8WeightBlock;
    } else {
      r.quant.weights = WeightFormat::kNvfp4;
      r.quant.activations = ActivationFormat::kNvfp4;
      r.quant.fp8_ue8m0 = false;
    }
  }
  if (!carries_expert_bias(r.quant.weights)) r.expert_bias = false;
  s.experts = clamp64(s.experts, 1, lim.max_experts);
  s.shared_experts = clamp64(s.shared_experts, 0, lim.max_shared);
  if (ro.shared_fusion == SharedFusion::kFused && s.shared_experts == 0)
    ro.shared_fusion = SharedFusion::kSeparate;
  if (ro.mode == RoutingMode::kSigmoidGrouped) {
    s.n_group = divisor_at_most(s.experts, std::max<int64_t>(s.n_group, 1));
    s.topk_group = clamp64(s.topk_group, 1, s.n_group);
  } else {
    s.n_group = clamp64(s.n_group, 1, s.experts);
    if (s.experts % s.n_group != 0) s.n_group = divisor_at_most(s.experts, s.n_group);
    s.topk_group = clamp64(s.topk_group, 1, s.n_group);
  }
  int64_t max_k = lim.max_top_k;
  if (ro.mode == RoutingMode::kSoftmax) max_k = std::min(max_k, s.experts);
  if (ro.mode == RoutingMode::kSigmoidGrouped)
    max_k = std::min(max_k, s.topk_group * (s.experts / s.n_group));
  s.top_k = clamp64(s.top_k, 1, max_k);
  if (ro.vocab != 0) ro.vocab = clamp64(ro.vocab, 1, lim.max_vocab);
  if (ro.vocab == 0 && r.hash_vocab() > lim.max_vocab) ro.vocab = lim.max_vocab;
  ro.routed_scaling_factor = finite_positive_or(ro.routed_scaling_factor, 1.0);
  r.quant.gate_up_scale_ratio = finite_positive_or(r.quant.gate_up_scale_ratio, 1.0);
  if (!(r.swiglu.limit > 0)) r.swiglu.limit = kInf;  // also NaN
  if (!std::isfinite(r.swiglu.alpha)) r.swiglu.alpha = 1.0;
  if (!std::isfinite(r.swiglu.beta)) r.swiglu.beta = 0.0;
  if (r.edits.size() > lim.max_edits) r.edits.resize(lim.max_edits);
  // Activation scales outside the calibrated domain have no specified result: S_q = 448 * 6 / amax
  // (SPEC.md §1.4) with amax a finite fp32 gives S_q in [2688 / FLT_MAX, FLT_MAX]; a subnormal or
  // non-finite S_q meets the kernels' FTZ reciprocal, which no profile specifies. Such edits are dropped.
  constexpr double kMinSq = 2688.0 / std::numeric_limits<float>::max();
  std::erase_if(r.edits, [&](const Edit& e) {
    return (e.tensor == "a1_scale" || e.tensor == "a2_scale") &&
           !(e.value >= kMinSq && e.value <= std::numeric_limits<float>::max());
  });

  // Drop the edits validate() objects to (out of range after clamping, wrong value kind), one at a time.
  for (size_t guard = 0; guard <= lim.max_edits + 1; ++guard) {
    const auto issue = find_recipe_issue(r);
    if (!issue) return r == before;
    if (issue->field != "edit" || issue->edit < 0 || static_cast<size_t>(issue->edit) >= r.edits.size())
      break;
    r.edits.erase(r.edits.begin() + issue->edit);
  }
  // Something the clamps above do not model: start over from the default recipe (always valid).
  const std::string profile = r.profile;
  r = CaseRecipe{};
  CaseRecipe with_profile;
  with_profile.profile = profile;
  if (find_recipe_issue(with_profile) == std::nullopt) r.profile = profile;
  return false;
}

CaseRecipe decode_recipe_bytes(std::span<const uint8_t> bytes) {
  ByteReader in{bytes};
  CaseRecipe r;
  r.seed = in.u64();
  r.routing.mode = static_cast<RoutingMode>(in.u8() % kModes);
  r.routing.hash_score = static_cast<ScoreFunc>(in.u8() % kScoreFuncs);
  const uint8_t flags = in.u8();
  r.routing.renormalize = (flags & 1) == 0;
  r.routing.correction_bias = (flags & 2) == 0;
  r.routing.scale_placement = (flags & 4) ? ScalePlacement::kCombine : ScalePlacement::kTopK;
  r.routing.shared_fusion = (flags & 8) ? SharedFusion::kFused : SharedFusion::kSeparate;
  r.quant.activations = (flags & 16) ? ActivationFormat::kBf16 : ActivationFormat::kNvfp4;
  r.quant.act_scales = (flags & 32) ? ActScaleMode::kPerExpert : ActScaleMode::kGlobal;
  r.routing.routed_scaling_factor = kScales[in.u8() % kScales.size()];
  r.quant.gate_up_scale_ratio = kRatios[in.u8() % kRatios.size()];
  // bf16 weights (W16A16) where the activations are bf16 and flag bit 6 is set.
  // MXFP4 weights (W4A16) where they are bf16, flag bit 6 is clear and bit 7 set.
  // Bit 5 (per-expert activation scales, which W16A16 and W4A16 do not read) then adds expert biases.
  if ((flags & 16) && (flags & (64 | 128))) {
    r.quant.weights = (flags & 64) ? WeightFormat::kBf16 : WeightFormat::kMxfp4;
    r.quant.gate_up_scale_ratio = 1.0;
    r.expert_bias = (flags & 32) != 0;
  }
  // FP8 block W8A8 where the activations would be NVFP4 (bit 4 clear) and bits 6 and 7 are both set;
  // bit 5 (per-expert activation scales, which FP8 does not read) then selects UE8M0 scales.
  if (!(flags & 16) && (flags & 64) && (flags & 128)) {
    r.quant.weights = WeightFormat::kFp8Block;
    r.quant.activations = ActivationFormat::kFp8Group;
    r.quant.fp8_ue8m0 = (flags & 32) != 0;
    r.quant.gate_up_scale_ratio = 1.0;
  }
  r.swiglu.limit = kLimits[in.u8() % kLimits.size()];
  // Shapes: small numbers; clamp_to_limits fits them to the target.
  r.shape.tokens = 1 + in.u8() % 64;
  r.shape.hidden = 16 * (1 + in.u8() % 16);
  r.shape.inter = 16 * (1 + in.u8() % 8);
  r.shape.experts = 1 + in.u8() % 64;
  r.shape.top_k = 1 + in.u8() % 8;
  r.shape.n_group = 1 + in.u8() % 8;
  r.shape.topk_group = 1 + in.u8() % 8;
  r.shape.shared_experts = in.u8() % 2;
  r.routing.vocab = in.u8() % 2 ? 0 : 1 + in.u8() % 128;
  r.values.logits = static_cast<LogitProfile>(in.u8() % kLogitProfiles);
  r.values.bias = static_cast<BiasProfile>(in.u8() % kBiasProfiles);
  r.values.table = static_cast<TableProfile>(in.u8() % kTableProfiles);
  r.values.weights = static_cast<WeightProfile>(in.u8() % kWeightProfiles);
  r.values.hidden = static_cast<HiddenProfile>(in.u8() % kHiddenProfiles);
  r.values.act_scale = static_cast<ActScaleProfile>(in.u8() % kActScaleProfiles);
  r.values.load = static_cast<LoadProfile>(in.u8() % kLoadProfiles);
  // Edits: a target by index into edit_targets(r), an index per dimension, a value by kind. Targets
  // are shaped for the recipe as decoded so far; clamp_to_limits drops edits that no longer fit.
  const size_t n_edits = in.u8() % 9;
  const auto targets = edit_targets(r);
  for (size_t i = 0; i < n_edits && in.pos < bytes.size(); ++i) {
    const EditTarget& t = targets[in.u8() % targets.size()];
    Edit e;
    e.tensor = std::string(t.name);
    for (int64_t d : t.shape) e.index.push_back(d > 0 ? in.u16() % d : 0);
    const uint8_t pick = in.u8();
    switch (t.kind) {
      case EditValueKind::kReal:
        e.value = special_reals()[pick % special_reals().size()];
        break;
      case EditValueKind::kFp4Code:
        e.value = pick % 16;
        break;
      case EditValueKind::kE4m3Byte:
        e.value = pick;
        break;
      case EditValueKind::kTokenId:
        e.value = pick % std::max<int64_t>(r.hash_vocab(), 1);
        break;
      case EditValueKind::kExpertId:
        e.value = pick % std::max<int64_t>(r.shape.experts, 1);
        break;
    }
    r.edits.push_back(std::move(e));
  }
  return r;
}

CaseRecipe recipe_from_bytes(const uint8_t* data, size_t size, const ShapeLimits& lim, bool* parsed) {
  CaseRecipe r;
  bool text = false;
  const std::string_view s(reinterpret_cast<const char*>(data), size);
  if (s.starts_with(kRecipeMagic)) {
    try {
      // No byte cap here: clamp_to_limits shrinks the shapes before anything is materialized.
      r = parse_recipe(s, "<fuzz input>", std::numeric_limits<int64_t>::max());
      text = true;
    } catch (const InputError&) {
    }
  }
  if (!text) r = decode_recipe_bytes({data, size});
  clamp_to_limits(r, lim);
  if (parsed != nullptr) *parsed = text;
  return r;
}

}  // namespace moefuzz::fuzz
