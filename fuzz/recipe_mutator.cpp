#include "fuzz/recipe_mutator.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "core/recipe_text.h"

// libFuzzer's byte-level mutator; absent (null) when linked without libFuzzer (the replay runner).
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size) __attribute__((weak));

namespace moefuzz::fuzz {
namespace {

using Rng = std::mt19937_64;

uint64_t below(Rng& rng, uint64_t n) { return n == 0 ? 0 : rng() % n; }
template <class T, size_t N>
const T& pick(Rng& rng, const std::array<T, N>& a) {
  return a[below(rng, N)];
}

// Sizes around the boundaries the kernels tile on: 16-element scale blocks, 64-element K tiles
// (CPU tactic 1), powers of two and one past them.
int64_t boundary_value(Rng& rng, int64_t max, int64_t step) {
  static constexpr std::array<int64_t, 12> kAround = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 32};
  if (step == 16) {
    static constexpr std::array<int64_t, 8> kBlocks = {1, 2, 3, 4, 5, 7, 8, 9};  // x16: 16 .. 144
    return std::min(max, 16 * pick(rng, kBlocks));
  }
  if (below(rng, 4) == 0) return max;
  return std::min(max, pick(rng, kAround));
}

void mutate_shape(CaseRecipe& r, Rng& rng, const ShapeLimits& lim) {
  Shape& s = r.shape;
  switch (below(rng, 9)) {
    case 0:
      s.tokens = boundary_value(rng, lim.max_tokens, 1);
      break;
    case 1:
      s.hidden = boundary_value(rng, lim.max_hidden, 16);
      break;
    case 2:
      s.inter = boundary_value(rng, lim.max_inter, 16);
      break;
    case 3:
      s.experts = boundary_value(rng, lim.max_experts, 1);
      break;
    case 4:
      s.top_k = 1 + static_cast<int64_t>(below(rng, lim.max_top_k));
      break;
    case 5:
      s.n_group = 1 + static_cast<int64_t>(below(rng, 8));
      s.topk_group = 1 + static_cast<int64_t>(below(rng, 8));
      break;
    case 6:
      s.shared_experts = static_cast<int64_t>(below(rng, lim.max_shared + 1));
      break;
    case 7:
      s.tokens += below(rng, 2) ? 1 : -1;
      break;
    default:
      s.experts += below(rng, 2) ? 1 : -1;
      break;
  }
}

void mutate_routing(CaseRecipe& r, Rng& rng) {
  // The usual factors, then the ends of the range the validator accepts (normal fp32: 2^-126 gives
  // subnormal weights and outputs, 2^127 and the largest bf16 overflow the output), where false
  // positives hide.
  static constexpr std::array<double, 13> kScales = {
      1.0, 2.5, 2.827, 16.0, 0.5, 1e-3, 1e3, 1.0 + 0x1p-20, 0x1p-126, 1e-30, 1e30, 0x1p127, 0x1.fep127};
  Routing& ro = r.routing;
  switch (below(rng, 8)) {
    case 0:
      ro.mode = static_cast<RoutingMode>(below(rng, 3));
      break;
    case 1:
      ro.renormalize = !ro.renormalize;
      break;
    case 2:
      ro.correction_bias = !ro.correction_bias;
      break;
    case 3:
      ro.routed_scaling_factor = pick(rng, kScales);
      break;
    case 4:
      ro.scale_placement =
          ro.scale_placement == ScalePlacement::kTopK ? ScalePlacement::kCombine : ScalePlacement::kTopK;
      break;
    case 5:
      ro.shared_fusion =
          ro.shared_fusion == SharedFusion::kFused ? SharedFusion::kSeparate : SharedFusion::kFused;
      if (ro.shared_fusion == SharedFusion::kFused && r.shape.shared_experts == 0) r.shape.shared_experts = 1;
      break;
    case 6:
      ro.hash_score = static_cast<ScoreFunc>(below(rng, 3));
      break;
    default:
      ro.vocab = below(rng, 2) ? 0 : 1 + static_cast<int64_t>(below(rng, 64));
      break;
  }
}

void mutate_values(CaseRecipe& r, Rng& rng) {
  ValueProfile& v = r.values;
  switch (below(rng, 7)) {
    case 0:
      v.logits = static_cast<LogitProfile>(below(rng, 6));
      break;
    case 1:
      v.bias = static_cast<BiasProfile>(below(rng, 4));
      break;
    case 2:
      v.table = static_cast<TableProfile>(below(rng, 2));
      break;
    case 3:
      v.weights = static_cast<WeightProfile>(below(rng, 5));
      break;
    case 4:
      v.hidden = static_cast<HiddenProfile>(below(rng, 5));
      break;
    case 5:
      v.act_scale = static_cast<ActScaleProfile>(below(rng, 2));
      break;
    default:
      v.load = static_cast<LoadProfile>(below(rng, 3));
      break;
  }
}

void mutate_quant(CaseRecipe& r, Rng& rng) {
  static constexpr std::array<double, 4> kRatios = {1.0, 2.0, 0.5, 1.25};
  static constexpr std::array<double, 4> kLimits = {std::numeric_limits<double>::infinity(), 7.0, 1.0, 0.25};
  switch (below(rng, 6)) {
    case 0:
      if (r.quant.weights == WeightFormat::kFp8Block) {  // W8A8's only activation knob: UE8M0 scales
        r.quant.fp8_ue8m0 = !r.quant.fp8_ue8m0;
        break;
      }
      r.quant.activations = r.quant.activations == ActivationFormat::kNvfp4 ? ActivationFormat::kBf16
                                                                            : ActivationFormat::kNvfp4;
      if (r.quant.activations == ActivationFormat::kNvfp4) r.quant.weights = WeightFormat::kNvfp4;
      break;
    case 5:  // NVFP4 -> bf16 (W16A16) -> MXFP4 (W4A16) -> FP8 block (W8A8) -> NVFP4 weights
      r.quant.weights = r.quant.weights == WeightFormat::kNvfp4   ? WeightFormat::kBf16
                        : r.quant.weights == WeightFormat::kBf16  ? WeightFormat::kMxfp4
                        : r.quant.weights == WeightFormat::kMxfp4 ? WeightFormat::kFp8Block
                                                                  : WeightFormat::kNvfp4;
      r.quant.fp8_ue8m0 = false;
      if (r.quant.weights == WeightFormat::kFp8Block) {  // clamp_to_limits makes H, I multiples of 128
        r.quant.activations = ActivationFormat::kFp8Group;
        r.quant.gate_up_scale_ratio = 1.0;
      } else if (r.quant.weights != WeightFormat::kNvfp4) {
        r.quant.activations = ActivationFormat::kBf16;
        r.quant.gate_up_scale_ratio = 1.0;
      } else if (r.quant.activations == ActivationFormat::kFp8Group) {
        r.quant.activations = ActivationFormat::kNvfp4;
      }
      break;
    case 1:
      if (carries_expert_bias(r.quant.weights) && below(rng, 2)) {
        r.expert_bias = !r.expert_bias;  // gpt-oss's b1, b2 (W16A16, W4A16 only)
        break;
      }
      r.quant.act_scales =
          r.quant.act_scales == ActScaleMode::kGlobal ? ActScaleMode::kPerExpert : ActScaleMode::kGlobal;
      break;
    case 2:
      if (r.quant.weights == WeightFormat::kNvfp4) r.quant.gate_up_scale_ratio = pick(rng, kRatios);
      break;
    case 3:
      r.swiglu.limit = pick(rng, kLimits);
      break;
    default:
      r.swiglu.alpha = below(rng, 2) ? 1.0 : 1.702;
      r.swiglu.beta = below(rng, 2) ? 0.0 : 1.0;
      break;
  }
  if (!carries_expert_bias(r.quant.weights)) r.expert_bias = false;
}

// A special value at a chosen place. `prefer` (may be empty) names the target to favour.
void add_edit(CaseRecipe& r, Rng& rng, const ShapeLimits& lim, std::string_view prefer) {
  if (r.edits.size() >= lim.max_edits)
    r.edits.erase(r.edits.begin() + static_cast<long>(below(rng, r.edits.size())));
  const auto targets = edit_targets(r);
  const EditTarget* t = &targets[below(rng, targets.size())];
  if (!prefer.empty() && below(rng, 4) != 0)
    for (const auto& c : targets)
      if (c.name == prefer) t = &c;
  Edit e;
  e.tensor = std::string(t->name);
  for (int64_t d : t->shape) {
    if (d <= 0) return;  // tensor not materialized for this recipe
    e.index.push_back(static_cast<int64_t>(below(rng, static_cast<uint64_t>(d))));
  }
  switch (t->kind) {
    case EditValueKind::kReal: {
      const auto sp = special_reals();
      e.value = sp[below(rng, sp.size())];
      // Values just beside an E2M1 threshold after scaling are where quantizers disagree.
      if (below(rng, 4) == 0) e.value = std::nextafter(e.value, below(rng, 2) ? 1e300 : -1e300);
      break;
    }
    case EditValueKind::kFp4Code:
      e.value = static_cast<double>(below(rng, 16));
      break;
    case EditValueKind::kE4m3Byte: {
      static constexpr std::array<int, 9> kBytes = {0x00, 0x01, 0x07, 0x08, 0x38, 0x7E, 0x7F, 0x80, 0xFE};
      e.value = below(rng, 2) ? pick(rng, kBytes) : static_cast<double>(below(rng, 256));
      break;
    }
    case EditValueKind::kTokenId:
      e.value = static_cast<double>(below(rng, static_cast<uint64_t>(r.hash_vocab())));
      break;
    case EditValueKind::kExpertId:
      e.value = static_cast<double>(below(rng, static_cast<uint64_t>(r.shape.experts)));
      break;
  }
  r.edits.push_back(std::move(e));
}

void mutate_once(CaseRecipe& r, Rng& rng, const ShapeLimits& lim, MutationFocus focus) {
  // Weights per focus over: seed, shape, routing, values, quant, add edit, drop edit.
  static constexpr std::array<int, 7> kLayer = {2, 3, 3, 3, 2, 4, 1};
  static constexpr std::array<int, 7> kRouting = {2, 3, 5, 4, 0, 3, 1};
  static constexpr std::array<int, 7> kQuant = {2, 1, 0, 2, 2, 8, 1};
  const auto& w = focus == MutationFocus::kRouting ? kRouting
                  : focus == MutationFocus::kQuant ? kQuant
                                                   : kLayer;
  int total = 0;
  for (int x : w) total += x;
  int roll = static_cast<int>(below(rng, static_cast<uint64_t>(total)));
  size_t kind = 0;
  while (roll >= w[kind]) roll -= w[kind++];
  switch (kind) {
    case 0:
      r.seed = below(rng, 2) ? rng() : r.seed + 1;
      break;
    case 1:
      mutate_shape(r, rng, lim);
      break;
    case 2:
      mutate_routing(r, rng);
      break;
    case 3:
      mutate_values(r, rng);
      break;
    case 4:
      mutate_quant(r, rng);
      break;
    case 5:
      add_edit(r, rng, lim,
               focus == MutationFocus::kQuant     ? "hidden"
               : focus == MutationFocus::kRouting ? "logits"
                                                  : "");
      break;
    default:
      if (!r.edits.empty()) r.edits.erase(r.edits.begin() + static_cast<long>(below(rng, r.edits.size())));
      break;
  }
}

size_t write_text(const CaseRecipe& r, uint8_t* data, size_t max_size) {
  std::string text = to_text(r);
  if (text.size() > max_size) {
    CaseRecipe bare = r;
    bare.edits.clear();
    text = to_text(bare);
    if (text.size() > max_size) return 0;
  }
  std::memcpy(data, text.data(), text.size());
  return text.size();
}

}  // namespace

void mutate_recipe(CaseRecipe& r, std::mt19937_64& rng, const ShapeLimits& lim, MutationFocus focus) {
  const int n = 1 + static_cast<int>(below(rng, 3));
  for (int i = 0; i < n; ++i) mutate_once(r, rng, lim, focus);
  clamp_to_limits(r, lim);
}

CaseRecipe cross_recipes(const CaseRecipe& a, const CaseRecipe& b, std::mt19937_64& rng,
                         const ShapeLimits& lim) {
  CaseRecipe out = a;
  if (below(rng, 2)) out.seed = b.seed;
  if (below(rng, 2)) out.shape = b.shape;
  if (below(rng, 2)) out.routing = b.routing;
  if (below(rng, 2)) out.quant = b.quant;
  if (below(rng, 2)) out.swiglu = b.swiglu;
  if (below(rng, 2)) out.values = b.values;
  out.edits.clear();
  for (size_t i = 0; i < std::max(a.edits.size(), b.edits.size()); ++i) {
    const auto& from = below(rng, 2) ? a.edits : b.edits;
    if (i < from.size()) out.edits.push_back(from[i]);
  }
  clamp_to_limits(out, lim);
  return out;
}

size_t mutate_bytes(uint8_t* data, size_t size, size_t max_size, unsigned seed, const ShapeLimits& lim,
                    MutationFocus focus) {
  Rng rng(seed);
  if (LLVMFuzzerMutate != nullptr && below(rng, 8) == 0) return LLVMFuzzerMutate(data, size, max_size);
  CaseRecipe r = recipe_from_bytes(data, size, lim);
  mutate_recipe(r, rng, lim, focus);
  const size_t n = write_text(r, data, max_size);
  if (n != 0) return n;
  return LLVMFuzzerMutate != nullptr ? LLVMFuzzerMutate(data, size, max_size) : size;
}

size_t cross_bytes(const uint8_t* a, size_t a_size, const uint8_t* b, size_t b_size, uint8_t* out,
                   size_t max_out, unsigned seed, const ShapeLimits& lim) {
  Rng rng(seed);
  const CaseRecipe r =
      cross_recipes(recipe_from_bytes(a, a_size, lim), recipe_from_bytes(b, b_size, lim), rng, lim);
  return write_text(r, out, max_out);
}

}  // namespace moefuzz::fuzz
