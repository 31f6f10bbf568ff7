// Recipe validation and size estimation. Both must be safe on any recipe, including ones a fuzzer
// built from raw bytes (enums out of range, negative or huge dims): no overflow, no allocation
// proportional to a dimension.
#include "core/recipe.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "core/case.h"
#include "core/fp8_block_quant.h"
#include "core/mxfp4.h"
#include "core/recipe_text.h"
#include "core/sha256.h"

namespace moefuzz {
namespace {

// Saturating non-negative arithmetic for byte counts: negative inputs count as 0.
int64_t sat(int64_t v) { return v < 0 ? 0 : v; }
int64_t sat_mul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(sat(a), sat(b), &out)) return std::numeric_limits<int64_t>::max();
  return out;
}
int64_t sat_add(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(sat(a), sat(b), &out)) return std::numeric_limits<int64_t>::max();
  return out;
}
int64_t sat_numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n = sat_mul(n, d);
  return n;
}

template <class Enum>
bool enum_in_range(Enum v, Enum last) {
  return static_cast<uint8_t>(v) <= static_cast<uint8_t>(last);
}

std::optional<RecipeIssue> issue(std::string field, std::string message, int64_t edit = -1) {
  return RecipeIssue{std::move(field), edit, std::move(message)};
}

std::optional<RecipeIssue> check_range(const char* field, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) return issue(field, fmt::format("{} is outside [{}, {}]", v, lo, hi));
  return std::nullopt;
}

bool profile_name_ok(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

bool is_integer_in(double v, double lo, double hi) { return v >= lo && v <= hi && v == std::floor(v); }

std::optional<RecipeIssue> check_shape(const CaseRecipe& r) {
  const Shape& s = r.shape;
  if (auto i = check_range("tokens", s.tokens, 1, kMaxTokens)) return i;
  for (auto [field, v] : {std::pair{"hidden", s.hidden}, std::pair{"inter", s.inter}}) {
    if (auto i = check_range(field, v, 16, kMaxHiddenOrInter)) return i;
    if (v % 16 != 0) return issue(field, fmt::format("{} is not a multiple of 16 (NVFP4 block size)", v));
  }
  if (auto i = check_range("experts", s.experts, 1, kMaxExperts)) return i;
  if (auto i = check_range("shared_experts", s.shared_experts, 0, kMaxExperts)) return i;
  if (auto i = check_range("top_k", s.top_k, 1, kMaxTopK)) return i;
  if (r.routing.mode != RoutingMode::kHash && s.top_k > s.experts)
    return issue("top_k", fmt::format("{} exceeds experts ({})", s.top_k, s.experts));
  if (auto i = check_range("n_group", s.n_group, 1, s.experts)) return i;
  if (s.experts % s.n_group != 0)
    return issue("n_group", fmt::format("{} does not divide experts ({})", s.n_group, s.experts));
  if (auto i = check_range("topk_group", s.topk_group, 1, s.n_group)) return i;
  if (r.routing.mode == RoutingMode::kSigmoidGrouped) {
    const int64_t reachable = s.topk_group * (s.experts / s.n_group);
    if (s.top_k > reachable)
      return issue("top_k", fmt::format("{} exceeds the experts of the selected groups (topk_group {} x {} "
                                        "experts per group = {})",
                                        s.top_k, s.topk_group, s.experts / s.n_group, reachable));
  }
  return std::nullopt;
}

std::optional<RecipeIssue> check_routing(const CaseRecipe& r) {
  const Routing& g = r.routing;
  if (!enum_in_range(g.mode, RoutingMode::kHash)) return issue("routing", "unknown routing mode");
  if (!enum_in_range(g.hash_score, ScoreFunc::kSoftmax)) return issue("hash_score", "unknown score function");
  if (!enum_in_range(g.scale_placement, ScalePlacement::kCombine))
    return issue("scale_placement", "unknown scale placement");
  if (!enum_in_range(g.shared_fusion, SharedFusion::kFused)) return issue("shared_fusion", "unknown fusion");
  if (!std::isfinite(g.routed_scaling_factor) || !(g.routed_scaling_factor > 0))
    return issue("routed_scaling_factor", fmt::format("{} must be finite and > 0", g.routed_scaling_factor));
  // Every profile (and the plugin ABI) applies rsf as an fp32 factor. Below 2^-126 its fp32 value is
  // subnormal: its rounding error is absolute (up to 2^-150), not relative, so the relative error
  // model every kernel and the oracle's bounds share no longer holds (1e-40 rounds to 9.99995e-41,
  // and products with weights < 1 flush toward zero); above the largest finite fp32 it is inf.
  // Above bf16's largest finite value (0x1.fep127 = 3.3895e38) a routing weight of 1 x rsf is Inf
  // where a profile stores its weights as bf16 (trtllm-gen), though the contract says it is finite.
  // Real models use rsf in [1, 16]; the validator says so instead of reporting false findings.
  constexpr double kLargestBf16 = 0x1.fep127;
  if (g.routed_scaling_factor < static_cast<double>(std::numeric_limits<float>::min()) ||
      g.routed_scaling_factor > kLargestBf16)
    return issue("routed_scaling_factor",
                 fmt::format("{} is outside [2^-126, {}]: kernels apply it as an fp32 factor (subnormal "
                             "below) and some store weights as bf16 (a weight of 1 x rsf is infinite above)",
                             g.routed_scaling_factor, kLargestBf16));
  if (g.shared_fusion == SharedFusion::kFused && r.shape.shared_experts < 1)
    return issue("shared_fusion", "fused needs shared_experts >= 1");
  if (g.vocab != 0) {
    if (auto i = check_range("vocab", g.vocab, 1, kMaxVocab)) return i;
  }
  return std::nullopt;
}

std::optional<RecipeIssue> check_quant_and_swiglu(const CaseRecipe& r) {
  if (!enum_in_range(r.quant.activations, ActivationFormat::kFp8Group))
    return issue("activations", "unknown format");
  if (!enum_in_range(r.quant.weights, WeightFormat::kFp8Block))
    return issue("weight_format", "unknown format");
  const bool fp8 = r.quant.weights == WeightFormat::kFp8Block;
  if (r.quant.weights != WeightFormat::kNvfp4) {
    // W16A16 (SPEC-formats.md §2), MXFP4 W4A16 (§3.4: every Hopper path of gpt-oss keeps bf16
    // activations) and FP8 block W8A8 (§1: activations quantized per token group by the kernel): the
    // NVFP4-only knobs must stay neutral.
    const std::string_view w = name_of(r.quant.weights);
    if (fp8 && r.quant.activations != ActivationFormat::kFp8Group)
      return issue("weight_format",
                   "fp8_block weights need fp8_group activations (activations fp8_group): W8A8 quantizes "
                   "each GEMM input per token and 128 columns");
    if (!fp8 && r.quant.activations != ActivationFormat::kBf16)
      return issue("weight_format", fmt::format("{} weights need bf16 activations (activations bf16)", w));
    if (r.quant.gate_up_scale_ratio != 1.0)
      return issue("gate_up_scale_ratio",
                   fmt::format("applies to NVFP4 global scales; {} weights have none (use 1)", w));
    if (!r.files.weights.empty())
      return issue(
          "weights",
          fmt::format("a ModelOpt NVFP4 checkpoint cannot supply {} weights (weight_format {})", w, w));
  }
  if (!fp8 && r.quant.activations == ActivationFormat::kFp8Group)
    return issue("activations",
                 "fp8_group activations need fp8_block weights (weight_format fp8_block): W8A8 only");
  if (!fp8 && r.quant.fp8_ue8m0)
    return issue("fp8_scales", "ue8m0 applies to FP8 block scales; it needs weight_format fp8_block");
  if (r.expert_bias && !carries_expert_bias(r.quant.weights))
    return issue("expert_bias",
                 fmt::format("expert biases are modelled with bf16 or mxfp4 weights (W16A16, W4A16: the "
                             "gpt-oss layers that carry them), not weight_format {}",
                             name_of(r.quant.weights)));
  if (r.quant.weights == WeightFormat::kMxfp4) {
    // One E8M0 scale per 32 elements along K (H for gate/up, I for down); triton_kernels requires
    // K % 32 == 0 (SPEC-formats.md §3.2), so partial blocks are not modelled.
    if (r.shape.hidden % kMxfp4BlockSize != 0 || r.shape.inter % kMxfp4BlockSize != 0)
      return issue("weight_format",
                   fmt::format("mxfp4 weights need hidden and inter multiples of {} (one E8M0 "
                               "scale per {} elements along K); got hidden {}, inter {}",
                               kMxfp4BlockSize, kMxfp4BlockSize, r.shape.hidden, r.shape.inter));
  }
  if (fp8) {
    // Production asserts K % 128 == 0 for the activation groups (vLLM per_token_group_quant_fp8,
    // DeepSeek kernel.py), and I % 128 == 0 keeps a w13 scale block from straddling gate and up
    // (vLLM/SGLang raise otherwise, sglang#3345; SPEC-formats.md §1.1).
    if (r.shape.hidden % kFp8WeightBlock != 0 || r.shape.inter % kFp8WeightBlock != 0)
      return issue("weight_format",
                   fmt::format("fp8_block weights need hidden and inter multiples of {} (one activation "
                               "scale per {} columns; w13 scale blocks must not straddle gate and up); "
                               "got hidden {}, inter {}",
                               kFp8WeightBlock, kFp8WeightBlock, r.shape.hidden, r.shape.inter));
  }
  if (!enum_in_range(r.quant.act_scales, ActScaleMode::kPerExpert))
    return issue("act_scales", "unknown mode");
  const double ratio = r.quant.gate_up_scale_ratio;
  if (!std::isfinite(ratio) || !(ratio > 0))
    return issue("gate_up_scale_ratio", fmt::format("{} must be finite and > 0", ratio));
  if (!(r.swiglu.limit > 0))
    return issue("swiglu_limit", fmt::format("{} must be > 0 (inf = no clamp)", r.swiglu.limit));
  if (!std::isfinite(r.swiglu.alpha))
    return issue("swiglu_alpha", fmt::format("{} must be finite", r.swiglu.alpha));
  if (!std::isfinite(r.swiglu.beta))
    return issue("swiglu_beta", fmt::format("{} must be finite", r.swiglu.beta));
  return std::nullopt;
}

std::optional<RecipeIssue> check_values(const ValueProfile& v) {
  if (!enum_in_range(v.logits, LogitProfile::kLarge)) return issue("values.logits", "unknown profile");
  if (!enum_in_range(v.bias, BiasProfile::kZero)) return issue("values.bias", "unknown profile");
  if (!enum_in_range(v.table, TableProfile::kDuplicates)) return issue("values.table", "unknown profile");
  if (!enum_in_range(v.weights, WeightProfile::kExpertSpread))
    return issue("values.weights", "unknown profile");
  if (!enum_in_range(v.hidden, HiddenProfile::kOutliers)) return issue("values.hidden", "unknown profile");
  if (!enum_in_range(v.act_scale, ActScaleProfile::kFar)) return issue("values.act_scale", "unknown profile");
  if (!enum_in_range(v.load, LoadProfile::kOneExpert)) return issue("values.load", "unknown profile");
  return std::nullopt;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

std::optional<RecipeIssue> check_edit(const CaseRecipe& r, const Edit& e, int64_t n) {
  const auto target = edit_target(r, e.tensor);
  if (!target) return issue("edit", fmt::format("unknown tensor '{}'", e.tensor), n);
  if (e.index.size() != target->shape.size())
    return issue(
        "edit",
        fmt::format("tensor '{}' takes {} indices, got {}", e.tensor, target->shape.size(), e.index.size()),
        n);
  for (size_t d = 0; d < e.index.size(); ++d) {
    if (e.index[d] < 0 || e.index[d] >= target->shape[d])
      return issue("edit",
                   fmt::format("index {} of '{}' is {}, outside its shape {}", d, e.tensor, e.index[d],
                               shape_text(target->shape)),
                   n);
  }
  const double v = e.value;
  switch (target->kind) {
    case EditValueKind::kReal:
      return std::nullopt;
    case EditValueKind::kFp4Code:
      if (!is_integer_in(v, 0, 15))
        return issue("edit", fmt::format("E2M1 code {} is not an integer in 0..15", v), n);
      return std::nullopt;
    case EditValueKind::kE4m3Byte:
      if (!is_integer_in(v, 0, 255))
        return issue("edit", fmt::format("E4M3 byte {} is not an integer in 0..255", v), n);
      return std::nullopt;
    case EditValueKind::kTokenId: {
      const double vocab = static_cast<double>(r.hash_vocab());
      if (!is_integer_in(v, 0, vocab - 1))
        return issue("edit", fmt::format("token id {} is not an integer in 0..{} (vocab)", v, vocab - 1), n);
      return std::nullopt;
    }
    case EditValueKind::kExpertId: {
      const double experts = static_cast<double>(r.shape.experts);
      if (!is_integer_in(v, 0, experts - 1))
        return issue("edit",
                     fmt::format("expert id {} is not an integer in 0..{} (experts - 1)", v, experts - 1), n);
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

std::vector<EditTarget> edit_targets(const CaseRecipe& r) {
  const int64_t t = r.shape.tokens, h = r.shape.hidden, i = r.shape.inter, e = r.shape.experts;
  const int64_t all = r.total_experts();
  const bool has_bias = r.routing.mode == RoutingMode::kSigmoidGrouped && r.routing.correction_bias;
  const bool hash = r.routing.mode == RoutingMode::kHash;
  const int64_t act_scales = r.quant.act_scales == ActScaleMode::kGlobal ? 1 : all;
  // Only the tensors of the recipe's weight format exist: the others get zero experts.
  const int64_t nvfp4 = r.quant.weights == WeightFormat::kNvfp4 ? all : 0;
  const int64_t bf16 = r.quant.weights == WeightFormat::kBf16 ? all : 0;
  const int64_t mx = r.quant.weights == WeightFormat::kMxfp4 ? all : 0;
  const int64_t fp8 = r.quant.weights == WeightFormat::kFp8Block ? all : 0;
  const int64_t biased = r.expert_bias ? all : 0;
  const auto blocks = [](int64_t n) { return n / kFp8WeightBlock + (n % kFp8WeightBlock != 0 ? 1 : 0); };
  using K = EditValueKind;
  // New targets go at the end: fuzz inputs name a target by its index in this list.
  return {
      {"hidden", {t, h}, K::kReal},
      {"logits", {t, e}, K::kReal},
      {"bias", {has_bias ? e : 0}, K::kReal},
      {"token_ids", {hash ? t : 0}, K::kTokenId},
      {"hash_table", {hash ? r.hash_vocab() : 0, r.shape.top_k}, K::kExpertId},
      {"gate.code", {nvfp4, i, h}, K::kFp4Code},
      {"up.code", {nvfp4, i, h}, K::kFp4Code},
      {"down.code", {nvfp4, h, i}, K::kFp4Code},
      {"gate.scale", {nvfp4, i, h / kNvfp4BlockSize}, K::kE4m3Byte},
      {"up.scale", {nvfp4, i, h / kNvfp4BlockSize}, K::kE4m3Byte},
      {"down.scale", {nvfp4, h, i / kNvfp4BlockSize}, K::kE4m3Byte},
      {"gate.global", {nvfp4}, K::kReal},
      {"up.global", {nvfp4}, K::kReal},
      {"down.global", {nvfp4}, K::kReal},
      {"a1_scale", {act_scales}, K::kReal},
      {"a2_scale", {act_scales}, K::kReal},
      {"gate.w", {bf16, i, h}, K::kReal},
      {"up.w", {bf16, i, h}, K::kReal},
      {"down.w", {bf16, h, i}, K::kReal},
      {"gate.mx_code", {mx, i, h}, K::kFp4Code},
      {"up.mx_code", {mx, i, h}, K::kFp4Code},
      {"down.mx_code", {mx, h, i}, K::kFp4Code},
      {"gate.mx_scale", {mx, i, h / kMxfp4BlockSize}, K::kE4m3Byte},  // E8M0 byte
      {"up.mx_scale", {mx, i, h / kMxfp4BlockSize}, K::kE4m3Byte},
      {"down.mx_scale", {mx, h, i / kMxfp4BlockSize}, K::kE4m3Byte},
      {"gate.fp8_code", {fp8, i, h}, K::kE4m3Byte},
      {"up.fp8_code", {fp8, i, h}, K::kE4m3Byte},
      {"down.fp8_code", {fp8, h, i}, K::kE4m3Byte},
      {"gate.fp8_scale", {fp8, blocks(i), blocks(h)}, K::kReal},  // fp32 multiplier per 128x128 block
      {"up.fp8_scale", {fp8, blocks(i), blocks(h)}, K::kReal},
      {"down.fp8_scale", {fp8, blocks(h), blocks(i)}, K::kReal},
      {"gate.b", {biased, i}, K::kReal},  // expert_bias: bf16 values (rounded to bf16)
      {"up.b", {biased, i}, K::kReal},
      {"down.b", {biased, h}, K::kReal},
  };
}

std::optional<EditTarget> edit_target(const CaseRecipe& r, std::string_view name) {
  for (auto& t : edit_targets(r))
    if (t.name == name) return t;
  return std::nullopt;
}

// A path that the recipe text can carry: printable ASCII without spaces or '#', at most 1024 bytes.
bool file_path_ok(const std::string& path) {
  if (path.empty() || path.size() > 1024) return false;
  for (char c : path)
    if (c <= 0x20 || c >= 0x7F || c == '#') return false;
  return true;
}

std::optional<RecipeIssue> check_files(const ExternalTensors& f) {
  const auto check = [](const char* key, const char* sha_key, const std::string& path,
                        const std::string& sha) -> std::optional<RecipeIssue> {
    if (!path.empty() && !file_path_ok(path))
      return issue(key, "must be a path of 1..1024 printable ASCII characters without spaces or '#'");
    if (!sha.empty() && path.empty()) return issue(sha_key, fmt::format("given without '{}'", key));
    if (!sha.empty() && !is_sha256_hex(sha)) return issue(sha_key, "must be 64 lowercase hex digits");
    return std::nullopt;
  };
  if (auto i = check("weights", "weights_sha256", f.weights, f.weights_sha256)) return i;
  if (auto i = check("inputs", "inputs_sha256", f.inputs, f.inputs_sha256)) return i;
  if (auto i = check_range("weights_layer", f.weights_layer, 0, 1 << 20)) return i;
  if (!enum_in_range(f.weights_w13, W13Order::kUpGate)) return issue("weights_w13", "unknown order");
  return std::nullopt;
}

std::optional<RecipeIssue> find_recipe_issue(const CaseRecipe& r) {
  if (!profile_name_ok(r.profile)) return issue("profile", "must be 1..64 characters from [A-Za-z0-9._-]");
  if (auto i = check_shape(r)) return i;
  if (auto i = check_routing(r)) return i;
  if (auto i = check_quant_and_swiglu(r)) return i;
  if (auto i = check_values(r.values)) return i;
  if (auto i = check_files(r.files)) return i;
  if (r.edits.size() > kMaxEdits)
    return issue("edit", fmt::format("{} edits, more than the limit of {}", r.edits.size(), kMaxEdits));
  for (size_t n = 0; n < r.edits.size(); ++n)
    if (auto i = check_edit(r, r.edits[n], static_cast<int64_t>(n))) return i;
  return std::nullopt;
}

std::string validate(const CaseRecipe& r) {
  const auto i = find_recipe_issue(r);
  if (!i) return "";
  if (i->edit >= 0) return fmt::format("field 'edit' #{}: {}", i->edit + 1, i->message);
  return fmt::format("field '{}': {}", i->field, i->message);
}

int64_t estimate_case_bytes(const CaseRecipe& r) {
  // Element sizes of each tensor in core/case.h; FP4 codes are packed two per byte.
  int64_t bytes = static_cast<int64_t>(sizeof(Case));
  for (const auto& t : edit_targets(r)) {
    const int64_t n = sat_numel(t.shape);
    if (t.name == "hidden" || t.name.ends_with(".w")) {
      bytes = sat_add(bytes, sat_mul(n, 2));  // bf16
    } else if (t.kind == EditValueKind::kFp4Code && !t.name.ends_with(".mx_code")) {
      bytes = sat_add(bytes, n / 2 + n % 2);
    } else if (t.kind == EditValueKind::kFp4Code) {
      bytes = sat_add(bytes, n);  // MXFP4 codes: one a byte (core/mxfp4.h)
    } else if (t.kind == EditValueKind::kE4m3Byte) {
      bytes = sat_add(bytes, n);
    } else {
      bytes = sat_add(bytes, sat_mul(n, 4));  // fp32 / int32
    }
  }
  // Per-expert bookkeeping (three Nvfp4Matrix headers each).
  bytes = sat_add(bytes, sat_mul(r.total_experts() < 0 ? 0 : r.total_experts(),
                                 static_cast<int64_t>(sizeof(ExpertWeights))));
  return bytes;
}

}  // namespace moefuzz
