#include "properties/gen/recipe_gen.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <mutex>

#include "core/errors.h"
#include "core/fp8_block_quant.h"
#include "core/mxfp4.h"
#include "core/recipe_text.h"
#include "core/rng.h"

namespace moefuzz::gen {
namespace {

// A uniform choice among `values` that shrinks toward the first one (the tamest, by convention of
// every list below). rc::gen::elementOf does not shrink at all, so a failing case would keep its
// exotic value profile; an index from inRange does shrink toward 0. gen::resize(100, ...) keeps the
// draw uniform over the whole list at every size (inRange otherwise narrows with the size), and it
// consumes the random stream exactly as elementOf does (next() % n), so seeds keep their cases.
template <typename T>
rc::Gen<T> one_of(std::vector<T> values) {
  const size_t n = values.size();
  return rc::gen::map(rc::gen::resize(100, rc::gen::inRange<size_t>(0, n)),
                      [values = std::move(values)](size_t i) { return values[i]; });
}
template <typename E>
rc::Gen<E> enum_in(std::initializer_list<E> values) {
  return one_of(std::vector<E>(values));
}

struct ModelShape {
  std::string name;
  Shape shape;
  RoutingMode mode;
  ScoreFunc score;
  bool renormalize;
  double rsf;
  double swiglu_limit;
  double swiglu_alpha = 1.0, swiglu_beta = 0.0;
  // The checkpoint's weights are MXFP4 (gpt-oss): half the model's cases are drawn W4A16 with MXFP4
  // weights, as every Hopper path runs it (SPEC-formats.md §3.4-3.5).
  bool mxfp4_checkpoint = false;
  // Every expert carries biases on both GEMMs (gpt-oss): its bf16 and MXFP4 cases have expert_bias.
  bool expert_bias = false;
};

const std::vector<ModelShape>& models() {
  static const std::vector<ModelShape> m = {
      {"deepseek-v3",
       {.tokens = 4,
        .hidden = 7168,
        .inter = 2048,
        .experts = 256,
        .top_k = 8,
        .n_group = 8,
        .topk_group = 4,
        .shared_experts = 1},
       RoutingMode::kSigmoidGrouped,
       ScoreFunc::kSigmoid,
       true,
       2.5,
       INFINITY},
      {"qwen3-moe",
       {.tokens = 4, .hidden = 2048, .inter = 768, .experts = 128, .top_k = 8},
       RoutingMode::kSoftmax,
       ScoreFunc::kSoftmax,
       true,
       1.0,
       INFINITY},
      {"mixtral",
       {.tokens = 4, .hidden = 4096, .inter = 14336, .experts = 8, .top_k = 2},
       RoutingMode::kSoftmax,
       ScoreFunc::kSoftmax,
       true,
       1.0,
       INFINITY},
      {"deepseek-v4-hash",
       {.tokens = 4, .hidden = 4096, .inter = 2048, .experts = 256, .top_k = 6, .shared_experts = 1},
       RoutingMode::kHash,
       ScoreFunc::kSqrtSoftplus,
       true,
       1.5,
       10.0},
      // gpt-oss-120b (SPEC-formats.md §3.4: gpt_oss/torch/model.py): softmax over the top-4 logits (the
      // renormalized softmax), no routed scale, SwiGLU clamped at 7 with alpha 1.702 and (up + 1), expert
      // biases on both GEMMs (drawn where the weights are bf16 or MXFP4; NVFP4 and FP8 layers have none).
      {"gpt-oss",
       {.tokens = 4, .hidden = 2880, .inter = 2880, .experts = 128, .top_k = 4},
       RoutingMode::kSoftmax,
       ScoreFunc::kSoftmax,
       true,
       1.0,
       7.0,
       1.702,
       1.0,
       true,
       true},
  };
  return m;
}

// A model class draws 1..kModelMaxTokens tokens: a decode-sized batch, where routing and the
// per-expert GEMMs already meet every model dimension.
constexpr int64_t kModelMaxTokens = 4;

// Token counts that sit on and around tile boundaries.
const std::vector<int64_t> kBoundaryTokens = {1,  2,  3,  7,  8,  9,  15,  16,  17,
                                              31, 32, 33, 63, 64, 65, 127, 128, 129};

}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> n;
  for (const auto& m : models()) n.push_back(m.name);
  return n;
}

std::string model_of(const Shape& shape) {
  for (const auto& m : models()) {
    Shape same = m.shape;
    same.tokens = shape.tokens;
    same.experts = shape.experts;
    if (same != shape || shape.experts > m.shape.experts) continue;
    return shape.experts == m.shape.experts
               ? m.name
               : fmt::format("{} ({} of {} routed experts)", m.name, shape.experts, m.shape.experts);
  }
  return "";
}

rc::Gen<ValueProfile> value_profile() {
  // Each field starts with its tame value so that shrinking moves toward tame inputs.
  return rc::gen::exec([] {
    ValueProfile v;
    v.logits = *enum_in({LogitProfile::kNormal, LogitProfile::kAllNegative, LogitProfile::kVeryNegative,
                         LogitProfile::kTies, LogitProfile::kNearTies, LogitProfile::kLarge});
    v.bias =
        *enum_in({BiasProfile::kSmall, BiasProfile::kDominant, BiasProfile::kNegative, BiasProfile::kZero});
    v.table = *enum_in({TableProfile::kDistinct, TableProfile::kDuplicates});
    v.weights = *enum_in({WeightProfile::kNormal, WeightProfile::kZeroBlocks, WeightProfile::kWideScales,
                          WeightProfile::kTinyScales, WeightProfile::kExpertSpread});
    v.hidden = *enum_in({HiddenProfile::kNormal, HiddenProfile::kZeroBlocks, HiddenProfile::kThresholds,
                         HiddenProfile::kTokenSpread, HiddenProfile::kOutliers});
    v.act_scale = *enum_in({ActScaleProfile::kCalibrated, ActScaleProfile::kFar});
    v.load = *enum_in({LoadProfile::kUniform, LoadProfile::kZeroTokenExperts, LoadProfile::kOneExpert});
    return v;
  });
}

namespace {

// Routing, quantization and SwiGLU knobs common to every shape class.
void draw_semantics(CaseRecipe& r) {
  r.routing.renormalize = *one_of<bool>({true, false});
  r.routing.routed_scaling_factor = *one_of<double>({1.0, 2.5, 1.5, 16.0, 0.75});
  r.routing.scale_placement = *enum_in({ScalePlacement::kTopK, ScalePlacement::kCombine});
  r.routing.correction_bias = *one_of<bool>({true, false});
  r.quant.activations = *enum_in({ActivationFormat::kNvfp4, ActivationFormat::kBf16});
  r.quant.act_scales = *enum_in({ActScaleMode::kGlobal, ActScaleMode::kPerExpert});
  r.quant.gate_up_scale_ratio = *one_of<double>({1.0, 0.125, 4.0, 0.37});
  const int swiglu = *rc::gen::inRange(0, 4);
  if (swiglu == 1) r.swiglu.limit = 10.0;
  if (swiglu == 2) {
    r.swiglu.limit = 1.0;
    r.swiglu.alpha = 1.702;
    r.swiglu.beta = 1.0;
  }
  r.values = *value_profile();
  r.seed = *rc::gen::arbitrary<uint64_t>();
}

void draw_routing_shape(CaseRecipe& r, int64_t max_experts, int64_t max_k) {
  r.routing.mode = *enum_in({RoutingMode::kSoftmax, RoutingMode::kSigmoidGrouped, RoutingMode::kHash});
  Shape& s = r.shape;
  if (r.routing.mode == RoutingMode::kSigmoidGrouped) {
    s.n_group = *one_of<int64_t>({1, 2, 4, 8});
    const int64_t per_group =
        *rc::gen::inRange<int64_t>(1, std::max<int64_t>(2, max_experts / s.n_group + 1));
    s.experts = s.n_group * per_group;
    s.topk_group = *rc::gen::inRange<int64_t>(1, s.n_group + 1);
    s.top_k = *rc::gen::inRange<int64_t>(1, std::min(max_k, s.topk_group * per_group) + 1);
  } else {
    s.n_group = s.topk_group = 1;
    s.experts = *rc::gen::inRange<int64_t>(1, max_experts + 1);
    s.top_k = *rc::gen::inRange<int64_t>(1, std::min(max_k, s.experts) + 1);
    if (r.routing.mode == RoutingMode::kHash)
      r.routing.hash_score = *enum_in({ScoreFunc::kSqrtSoftplus, ScoreFunc::kSigmoid, ScoreFunc::kSoftmax});
  }
  s.shared_experts = *rc::gen::inRange<int64_t>(0, 3);
  r.routing.shared_fusion = s.shared_experts > 0 ? *enum_in({SharedFusion::kSeparate, SharedFusion::kFused})
                                                 : SharedFusion::kSeparate;
}

// `experts` routed experts (grouped routing keeps its groups: experts / n_group per group) at small
// H, I and T, so the wide case stays cheap to materialize and check.
void widen_experts(CaseRecipe& r, int64_t experts) {
  Shape& s = r.shape;
  s.experts = experts;  // a multiple of 8, so of every n_group drawn
  s.tokens = std::min<int64_t>(s.tokens, 8);
  s.hidden = std::min<int64_t>(s.hidden, 64);
  s.inter = std::min<int64_t>(s.inter, 32);
}

// The corners of what the recipe validator accepts (issue 15: zero false positives there), one case
// in 8 (uniform at every size; shrinks toward no corner): routed scaling factors at the ends of the
// normal fp32 range (2^-126: subnormal weights and outputs; 2^127: fp32 overflow of the output),
// and one expert's global dequantization scale edited to a subnormal-making (2^-140: every
// dequantized weight of that matrix is an fp32 subnormal) or a huge value (2^100: GEMM and combine
// overflow). Extreme E4M3 block scale bytes (subnormal 0x01..0x07, the largest 0x7E) come from
// WeightProfile::kWideScales and kTinyScales.
void draw_value_corner(CaseRecipe& r) {
  const int corner = *one_of<int>({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2});
  if (corner == 0) return;
  const int which = *rc::gen::inRange(0, 8);
  if (corner == 1) {
    static constexpr std::array<double, 4> kRsf = {0x1p-126, 1e-30, 1e30, 0x1p127};
    r.routing.routed_scaling_factor = kRsf[static_cast<size_t>(which % 4)];
    return;
  }
  static constexpr std::array<double, 4> kGlobal = {0x1p-140, 1e-45, 0x1p100, 1e30};
  static constexpr std::array<const char*, 2> kMatrix = {"gate.global", "down.global"};
  Edit e;
  e.tensor = kMatrix[static_cast<size_t>(which % 2)];
  e.index = {*rc::gen::inRange<int64_t>(0, r.total_experts())};
  e.value = kGlobal[static_cast<size_t>(which / 2)];
  r.edits.push_back(std::move(e));
}

// The weights of a bf16-activation case: bf16 (W16A16, SPEC-formats.md §2) for one in two, MXFP4
// (W4A16, §3) for one in four where H and I are multiples of 32 (else they stay NVFP4), NVFP4 for the
// rest. Drawn last, so every earlier field of a seed's case stays as it was. A value corner's
// global-scale edit becomes, for bf16 weights, the same value written into that expert's first bf16
// weight (a subnormal-making or overflowing weight); for MXFP4 weights an E8M0 corner written into
// the first block scale of that expert's matrix (SPEC-formats.md §5.5): code 1 (2^-126), 134 (2^7,
// the float sentinel of M4), 253 or 254 (6 x 2^126 = Inf in fp32); one MXFP4 case in four gets such a
// corner in a random block scale too. Codes 0 and 0xFF, where the Hopper
// paths' decodes differ (§3.3), come only from explicit edits.
void draw_weight_format(CaseRecipe& r, bool mxfp4_checkpoint = false) {
  if (r.quant.activations != ActivationFormat::kBf16) return;
  const bool bf16 = !mxfp4_checkpoint && *one_of<bool>({false, true});
  const bool mxfp4 = !bf16 && (mxfp4_checkpoint || *one_of<bool>({false, true})) &&
                     r.shape.hidden % kMxfp4BlockSize == 0 && r.shape.inter % kMxfp4BlockSize == 0;
  if (!bf16 && !mxfp4) return;
  r.quant.weights = bf16 ? WeightFormat::kBf16 : WeightFormat::kMxfp4;
  r.quant.gate_up_scale_ratio = 1.0;
  static constexpr std::array<std::pair<double, double>, 4> kE8m0Corner = {
      {{0x1p-140, 1}, {1e-45, 134}, {0x1p100, 253}, {1e30, 254}}};
  for (Edit& e : r.edits) {
    if (e.tensor != "gate.global" && e.tensor != "down.global") continue;
    const bool gate = e.tensor == "gate.global";
    e.index = {e.index.at(0), 0, 0};
    if (bf16) {
      e.tensor = gate ? "gate.w" : "down.w";
      continue;
    }
    e.tensor = gate ? "gate.mx_scale" : "down.mx_scale";
    for (const auto& [global, code] : kE8m0Corner)
      if (e.value == global) e.value = code;
  }
  // One MXFP4 case in four (SPEC-formats.md §5.5) gets an E8M0 corner in one block scale of an
  // expert's gate or down projection.
  if (mxfp4 && *rc::gen::inRange(0, 4) == 0) {
    const bool gate = *one_of<bool>({false, true});
    Edit e;
    e.tensor = gate ? "gate.mx_scale" : "down.mx_scale";
    e.index = {*rc::gen::inRange<int64_t>(0, r.total_experts()),
               *rc::gen::inRange<int64_t>(0, gate ? r.shape.inter : r.shape.hidden), 0};
    e.value = kE8m0Corner[static_cast<size_t>(*rc::gen::inRange(0, 4))].second;
    r.edits.push_back(std::move(e));
  }
}

// Expert biases (gpt-oss's b1 and b2, SPEC-formats.md §3.4) for one bf16- or MXFP4-weight case in four
// (the formats that carry them). Drawn last: every other field of a seed's case stays as it was.
void draw_expert_bias(CaseRecipe& r) {
  if (!carries_expert_bias(r.quant.weights)) return;
  r.expert_bias = *one_of<int>({0, 0, 0, 1}) == 1;  // shrinks toward the first: no biases
}

// FP8 block W8A8 (weight_format fp8_block, SPEC-formats.md §1) for a share of the cases that still
// have NVFP4 weights: one in two where H and I are already multiples of 128 (large shapes, models),
// one in eight of the others with H and I rounded up to the next multiple of 128 (so the small and
// medium classes, whose H and I rarely are, reach FP8 layers too; not the widened many-expert cases).
// UE8M0 scales (fp8_scales = ue8m0) one FP8 case in two. Drawn last: every other field of a seed's
// case stays as it was. A value corner's global-scale edit becomes the same value written into the
// first block scale of that expert's matrix (an fp32 multiplier: subnormal-making or overflowing).
void draw_fp8(CaseRecipe& r) {
  if (r.quant.weights != WeightFormat::kNvfp4 || r.shape.experts > 256) return;
  const bool aligned = r.shape.hidden % kFp8WeightBlock == 0 && r.shape.inter % kFp8WeightBlock == 0;
  // At every size but 0 (the first cases of a run stay tiny), shrinking toward NVFP4.
  const int size = *rc::gen::withSize([](int s) { return rc::gen::just(s); });
  if (size == 0) return;
  if (*(aligned ? one_of<int>({0, 1}) : one_of<int>({0, 0, 0, 0, 0, 0, 0, 1})) != 1) return;
  const auto round_up = [](int64_t v) {
    return (v + kFp8WeightBlock - 1) / kFp8WeightBlock * kFp8WeightBlock;
  };
  r.shape.hidden = round_up(r.shape.hidden);
  r.shape.inter = round_up(r.shape.inter);
  r.quant.weights = WeightFormat::kFp8Block;
  r.quant.activations = ActivationFormat::kFp8Group;
  r.quant.gate_up_scale_ratio = 1.0;
  r.quant.fp8_ue8m0 = *one_of<bool>({false, true});
  for (Edit& e : r.edits) {
    if (e.tensor != "gate.global" && e.tensor != "down.global") continue;
    e.tensor = e.tensor == "gate.global" ? "gate.fp8_scale" : "down.fp8_scale";
    e.index = {e.index.at(0), 0, 0};
  }
}

}  // namespace

rc::Gen<CaseRecipe> recipe(ShapeClass shapes) {
  if (shapes == ShapeClass::kModel)
    return rc::gen::mapcat(one_of(model_names()), [](const std::string& n) { return model(n); });
  return rc::gen::exec([shapes] {
    CaseRecipe r;
    const bool small = shapes == ShapeClass::kSmall, medium = shapes == ShapeClass::kMedium;
    draw_routing_shape(r, small ? 32 : medium ? 64 : 256, 8);
    r.shape.tokens = small ? *rc::gen::inRange<int64_t>(1, 41) : *one_of(kBoundaryTokens);
    r.shape.hidden = 16 * (small    ? *rc::gen::inRange<int64_t>(1, 17)
                           : medium ? *rc::gen::inRange<int64_t>(1, 65)
                                    : *one_of<int64_t>({128, 256, 448}));
    r.shape.inter = 16 * (small    ? *rc::gen::inRange<int64_t>(1, 9)
                          : medium ? *rc::gen::inRange<int64_t>(1, 33)
                                   : *one_of<int64_t>({64, 116, 128}));
    draw_semantics(r);
    // Expert counts of real and coming models (384: Kimi K2, 512: Qwen3-Next, past 1024) at small
    // H/I, one case in 16 at full size: drawn last, so every earlier field of a seed's case stays as
    // it was; inRange grows with the size and shrinks toward 0, so tiny and shrunk cases stay narrow.
    if (small && *rc::gen::inRange(0, 16) == 15) widen_experts(r, *one_of<int64_t>({384, 512, 1280}));
    draw_value_corner(r);   // last too, for the same reason
    draw_weight_format(r);  // and after it (it rewrites the corner's edit)
    draw_fp8(r);            // and after that (NVFP4-weight cases only)
    draw_expert_bias(r);    // and last (bf16- and MXFP4-weight cases only)
    return r;
  });
}

namespace {

const ModelShape& model_named(std::string_view name) {
  const auto it =
      std::find_if(models().begin(), models().end(), [&](const ModelShape& m) { return m.name == name; });
  if (it == models().end()) {
    std::string known;
    for (const auto& m : models()) known += (known.empty() ? "" : ", ") + m.name;
    throw InputError(fmt::format("unknown model '{}' (known: {})", name, known));
  }
  return *it;
}

// The largest case model `m` draws with `experts` routed experts and weights of format `w`: the
// most tokens, and each quantization choice that changes the tensors' sizes (activation format,
// act-scale mode; bf16 weights come with bf16 activations only).
int64_t largest_draw_bytes(const ModelShape& m, int64_t experts, WeightFormat w) {
  int64_t largest = 0;
  for (ActivationFormat a : {ActivationFormat::kNvfp4, ActivationFormat::kBf16, ActivationFormat::kFp8Group})
    for (ActScaleMode s : {ActScaleMode::kGlobal, ActScaleMode::kPerExpert}) {
      if ((w == WeightFormat::kFp8Block) != (a == ActivationFormat::kFp8Group)) continue;
      if (w != WeightFormat::kNvfp4 && w != WeightFormat::kFp8Block && a != ActivationFormat::kBf16) continue;
      CaseRecipe r;
      r.shape = m.shape;
      r.shape.tokens = kModelMaxTokens;
      r.shape.experts = experts;
      r.routing.mode = m.mode;
      r.quant.activations = a;
      r.quant.act_scales = s;
      r.quant.weights = w;
      largest = std::max(largest, estimate_case_bytes(r));
    }
  return largest;
}

}  // namespace

int64_t model_routed_experts(std::string_view name, int64_t max_case_bytes, WeightFormat weights) {
  const ModelShape& m = model_named(name);
  int64_t experts = m.shape.experts;
  // Halving keeps every group equally sized (n_group divides the count while the groups hold an even
  // number of experts) and stops before the selected groups could no longer hold top_k experts.
  auto can_halve = [&](int64_t e) {
    const int64_t half = e / 2, per_group = half / m.shape.n_group;
    return e % 2 == 0 && half % m.shape.n_group == 0 && half >= m.shape.top_k &&
           per_group * m.shape.topk_group >= m.shape.top_k;
  };
  while (largest_draw_bytes(m, experts, weights) > max_case_bytes && can_halve(experts)) experts /= 2;
  return experts;
}

rc::Gen<CaseRecipe> model(std::string_view name, int64_t max_case_bytes) {
  ModelShape m = model_named(name);
  m.shape.experts = model_routed_experts(name, max_case_bytes);
  // bf16 weights are 3.6x the NVFP4 bytes: their cases may need fewer experts under the same budget.
  const int64_t bf16_experts = model_routed_experts(name, max_case_bytes, WeightFormat::kBf16);
  // MXFP4 codes are stored one a byte (core/mxfp4.h): about 2x the NVFP4 bytes.
  const int64_t mx_experts = model_routed_experts(name, max_case_bytes, WeightFormat::kMxfp4);
  // FP8 codes are one a byte: about 2x the NVFP4 bytes (only models with H, I multiples of 128).
  const int64_t fp8_experts = model_routed_experts(name, max_case_bytes, WeightFormat::kFp8Block);
  return rc::gen::exec([m, bf16_experts, mx_experts, fp8_experts] {
    CaseRecipe r;
    draw_semantics(r);
    r.shape = m.shape;
    r.shape.tokens = *rc::gen::inRange<int64_t>(1, kModelMaxTokens + 1);
    r.routing.mode = m.mode;
    r.routing.hash_score = m.score;
    r.routing.renormalize = m.renormalize;
    r.routing.routed_scaling_factor = m.rsf;
    r.swiglu = Swiglu{};
    r.swiglu.limit = m.swiglu_limit;
    r.swiglu.alpha = m.swiglu_alpha;
    r.swiglu.beta = m.swiglu_beta;
    // Production serves both shared-expert placements (SGLang fuses the shared expert into an extra
    // top-k slot, others add it after the routed sum): draw either where the model has one.
    r.routing.shared_fusion = m.shape.shared_experts > 0
                                  ? *enum_in({SharedFusion::kSeparate, SharedFusion::kFused})
                                  : SharedFusion::kSeparate;
    // DeepSeek-V3's noaux_tc routing always adds e_score_correction_bias (SPEC.md §2.1).
    if (m.mode == RoutingMode::kSigmoidGrouped) r.routing.correction_bias = true;
    if (m.mode == RoutingMode::kHash) r.values.table = TableProfile::kDuplicates;
    // An MXFP4 checkpoint is served W4A16: half its cases take that format (bf16 activations).
    const bool checkpoint_format = m.mxfp4_checkpoint && *one_of<bool>({false, true});
    if (checkpoint_format) r.quant.activations = ActivationFormat::kBf16;
    draw_weight_format(r, checkpoint_format);  // last: every earlier field stays
    if (r.quant.weights == WeightFormat::kBf16) r.shape.experts = bf16_experts;
    if (r.quant.weights == WeightFormat::kMxfp4) r.shape.experts = mx_experts;
    if (m.expert_bias && carries_expert_bias(r.quant.weights)) r.expert_bias = true;
    // FP8 where the model's H and I are multiples of 128 (DeepSeek-V3, Qwen3; not gpt-oss's 2880).
    if (r.shape.hidden % kFp8WeightBlock == 0 && r.shape.inter % kFp8WeightBlock == 0) {
      draw_fp8(r);
      if (r.quant.weights == WeightFormat::kFp8Block) r.shape.experts = fp8_experts;
    }
    return r;
  });
}

rc::Gen<CaseRecipe> recipe_for(std::string_view shapes, int64_t max_case_bytes) {
  if (shapes == "small") return recipe(ShapeClass::kSmall);
  if (shapes == "medium") return recipe(ShapeClass::kMedium);
  if (shapes == "large") return recipe(ShapeClass::kLarge);
  if (shapes.rfind("model:", 0) == 0) return model(shapes.substr(6), max_case_bytes);
  throw InputError(fmt::format("--shapes: '{}' is not small, medium, large or model:NAME", shapes));
}

CaseRecipe sample(const rc::Gen<CaseRecipe>& g, uint64_t seed, uint64_t index, int size) {
  const uint64_t a = mix64(seed), b = mix64(seed ^ 0xA5A5A5A5u), c = mix64(index), d = mix64(index ^ seed);
  const rc::Random random(rc::Random::Key{a, b, c, d});
  // RapidCheck keeps the generation context (gen::exec's handler) in process-wide statics: one draw
  // at a time when checks run on several threads (check -j).
  static std::mutex draw;
  std::lock_guard<std::mutex> lock(draw);
  return g(random, size).value();
}

}  // namespace moefuzz::gen

namespace moefuzz {
void showValue(const CaseRecipe& r, std::ostream& os) { os << "\n" << to_text(r); }
}  // namespace moefuzz
