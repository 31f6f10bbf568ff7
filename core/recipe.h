#pragma once
// CaseRecipe: a small, serializable description of one MoE layer invocation. Fuzz inputs, corpus
// files, RapidCheck values and the shrinker all operate on recipes; materialize() (core/case.h)
// turns one into tensors, deterministically.
//
// Example:
//   moefuzz::CaseRecipe r;                       // defaults: a tiny softmax top-k case
//   r.shape = {.tokens = 4, .hidden = 64, .inter = 32, .experts = 8, .top_k = 2};
//   r.routing.mode = moefuzz::RoutingMode::kSigmoidGrouped;
//   r.shape.n_group = 4; r.shape.topk_group = 2;
//   r.routing.routed_scaling_factor = 2.5;
//   std::string text = moefuzz::to_text(r);      // "MOEFUZZ v1\n..." (core/recipe_text.h)
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/profile.h"

namespace moefuzz {

enum class RoutingMode : uint8_t {
  kSoftmax,         // softmax top-k (Mixtral, Qwen3-MoE), SPEC.md §2.2
  kSigmoidGrouped,  // DeepSeek-V3 noaux_tc: sigmoid + correction bias, grouped top-k, SPEC.md §2.1
  kHash,            // DeepSeek-V4 hash layers: token id -> experts table, SPEC.md §2.5
};
// Score function of hash routing (the table picks experts, scores give the weights).
enum class ScoreFunc : uint8_t { kSqrtSoftplus, kSigmoid, kSoftmax };
// Who multiplies routed_scaling_factor: the top-k op (weights sum to rsf) or the combine.
enum class ScalePlacement : uint8_t { kTopK, kCombine };
enum class SharedFusion : uint8_t {
  kSeparate,  // shared MLP output added after the routed sum (bf16 add)
  kFused,     // shared expert j is expert id E+j in an extra top-k slot, weight 1/rsf before scaling
};
// Format of the FC1/FC2 GEMM inputs: NVFP4 (W4A4), bf16 (W4A16, W16A16) or FP8 per-token-group
// (kFp8Group: E4M3 codes with one dynamic fp32 scale per token and 128 columns, computed by the kernel
// from the bf16 rows, SPEC-formats.md §1.2; only with fp8_block weights).
enum class ActivationFormat : uint8_t { kNvfp4, kBf16, kFp8Group };
// Format of the expert weights: NVFP4 (codes, E4M3 block scales, global scale) or plain bf16 (W16A16,
// SPEC-formats.md §2: Qwen3-MoE, Mixtral; needs bf16 activations) or MXFP4 (E2M1 codes with one E8M0
// scale per 32 elements of a row, SPEC-formats.md §3: gpt-oss on Hopper, W4A16; needs bf16 activations
// and H, I multiples of 32) or FP8 block-scaled (kFp8Block: E4M3 codes with one fp32 scale per 128x128
// block, a multiplier, SPEC-formats.md §1.1: DeepSeek-V3/R1 FP8 W8A8; needs fp8_group activations and
// H, I multiples of 128).
enum class WeightFormat : uint8_t { kNvfp4, kBf16, kMxfp4, kFp8Block };
// Whether layers of this weight format can carry expert biases (CaseRecipe::expert_bias): bf16 and MXFP4,
// the W16A16 / W4A16 layers of gpt-oss that have them.
constexpr bool carries_expert_bias(WeightFormat f) {
  return f == WeightFormat::kBf16 || f == WeightFormat::kMxfp4;
}
enum class ActScaleMode : uint8_t { kGlobal, kPerExpert };

struct Shape {
  int64_t tokens = 4;      // T
  int64_t hidden = 64;     // H, multiple of 16
  int64_t inter = 32;      // I, multiple of 16
  int64_t experts = 8;     // E (routed)
  int64_t top_k = 2;       // k (routed slots)
  int64_t n_group = 1;     // expert groups (sigmoid grouped routing)
  int64_t topk_group = 1;  // selected groups
  int64_t shared_experts = 0;
  bool operator==(const Shape&) const = default;
};

struct Routing {
  RoutingMode mode = RoutingMode::kSoftmax;
  ScoreFunc hash_score = ScoreFunc::kSqrtSoftplus;  // only for kHash
  bool renormalize = true;             // top-k modes; hash routing always normalizes non-softmax scores
  bool correction_bias = true;         // only for kSigmoidGrouped
  double routed_scaling_factor = 1.0;  // stored as written; kernels take fp32
  ScalePlacement scale_placement = ScalePlacement::kTopK;
  SharedFusion shared_fusion = SharedFusion::kSeparate;
  int64_t vocab = 0;  // hash table rows; 0 = derived (4*T, at least 16)
  bool operator==(const Routing&) const = default;
};

struct Quantization {
  WeightFormat weights = WeightFormat::kNvfp4;
  ActivationFormat activations = ActivationFormat::kNvfp4;
  ActScaleMode act_scales = ActScaleMode::kGlobal;
  double gate_up_scale_ratio = 1.0;  // up's global dequant scale = gate's * ratio (Z11 when != 1)
  // FP8 block W8A8 only (recipe key `fp8_scales = ue8m0`): the activation group scales AND the weight
  // block scales are powers of two rounded up (DeepSeek V3.1 `scale_fmt: ue8m0`, SPEC-formats.md §1.2).
  bool fp8_ue8m0 = false;
  bool operator==(const Quantization&) const = default;
};

// Optional SwiGLU clamp (DeepSeek-V4 swiglu_limit, GPT-OSS): gate = min(gate, L),
// up = clamp(up, -L, L), out = gate * sigmoid(alpha * gate) * (up + beta). Defaults = plain SwiGLU.
struct Swiglu {
  double limit = std::numeric_limits<double>::infinity();
  double alpha = 1.0;
  double beta = 0.0;
  bool operator==(const Swiglu&) const = default;
};

// Value profiles: which corner of the value space each tensor is drawn from (BUGZOO.md, "what
// upstream tests get wrong"). Each enumerator names a distribution, documented in core/case.cpp.
enum class LogitProfile : uint8_t { kNormal, kAllNegative, kVeryNegative, kTies, kNearTies, kLarge };
enum class BiasProfile : uint8_t { kSmall, kDominant, kNegative, kZero };
enum class TableProfile : uint8_t { kDistinct, kDuplicates };
enum class WeightProfile : uint8_t { kNormal, kZeroBlocks, kWideScales, kTinyScales, kExpertSpread };
enum class HiddenProfile : uint8_t { kNormal, kZeroBlocks, kThresholds, kTokenSpread, kOutliers };
enum class ActScaleProfile : uint8_t { kCalibrated, kFar };
enum class LoadProfile : uint8_t { kUniform, kZeroTokenExperts, kOneExpert };

struct ValueProfile {
  LogitProfile logits = LogitProfile::kNormal;
  BiasProfile bias = BiasProfile::kSmall;
  TableProfile table = TableProfile::kDistinct;
  WeightProfile weights = WeightProfile::kNormal;
  HiddenProfile hidden = HiddenProfile::kNormal;
  ActScaleProfile act_scale = ActScaleProfile::kCalibrated;
  LoadProfile load = LoadProfile::kUniform;
  bool operator==(const ValueProfile&) const = default;
};

// An explicit value at a chosen place, applied after the random draw. `tensor` names one of the
// case's tensors (see core/case.h, "Edit targets"); `index` has one entry per dimension; `value` is
// the number written (for code/scale tensors: the raw code, e.g. 0x7E).
struct Edit {
  std::string tensor;
  std::vector<int64_t> index;
  double value = 0;
  bool operator==(const Edit&) const = default;
};

// Tensors read from files instead of drawn (docs/weights.md, core/modelopt_layer.h,
// core/captured_inputs.h). A case takes the leading slice of each file tensor that its shape asks
// for (the first `experts` experts, `tokens` tokens, `hidden` columns, `inter` rows), so shrinking a
// recipe slices the real tensors. A non-empty *_sha256 pins the file's bytes: parse_recipe_file
// refuses a file whose SHA-256 differs.
struct ExternalTensors {
  std::string weights;  // a ModelOpt NVFP4 safetensors file; "" = weights drawn from the seed
  std::string weights_sha256;
  int64_t weights_layer = 0;  // model.layers.{N}
  // Order of the halves of a fused per-expert w13 tensor (`gate_up_proj`): gate rows first (vLLM,
  // SGLang, DeepSeek) or up rows first (FlashInfer / TRT-LLM), SPEC.md §3.1. Unused otherwise.
  W13Order weights_w13 = W13Order::kGateUp;
  std::string inputs;  // captured hidden states / router logits / token ids; "" = drawn
  std::string inputs_sha256;
  bool operator==(const ExternalTensors&) const = default;
};

struct CaseRecipe {
  uint64_t seed = 1;
  std::string profile = "flashinfer-cutlass";  // backend contract name (oracles/profiles)
  Shape shape;
  Routing routing;
  Quantization quant;
  Swiglu swiglu;
  // Per-expert biases of both GEMMs (gpt-oss: `h1 = W1 t + b1`, `y = W2 a + b2`, SPEC-formats.md §3.4):
  // gate and up biases [I] added to GEMM1's fp32 accumulator, the down bias [H] to GEMM2's, each before
  // that GEMM's rounding point (and b2 before the routing weight). bf16 values, as checkpoints store
  // them. Only with bf16 or MXFP4 weights (W16A16, W4A16); recipe key `expert_bias = true`.
  bool expert_bias = false;
  ValueProfile values;
  std::vector<Edit> edits;
  ExternalTensors files;
  bool operator==(const CaseRecipe&) const = default;

  // These helpers saturate instead of overflowing, so they are safe on unvalidated recipes.
  int64_t hash_vocab() const {
    if (routing.vocab > 0) return routing.vocab;
    int64_t four_t = 0;
    if (__builtin_mul_overflow(shape.tokens, int64_t{4}, &four_t))
      four_t = std::numeric_limits<int64_t>::max();
    return four_t < 16 ? 16 : four_t;
  }
  // Experts that carry weights: routed then shared (shared expert j has id E + j).
  int64_t total_experts() const { return saturating_sum(shape.experts, shape.shared_experts); }
  // Whether the selected weights are divided by their sum: the flag for top-k modes; hash routing
  // always normalizes non-softmax scores (SPEC.md 2.5).
  bool normalizes_weights() const {
    return routing.mode == RoutingMode::kHash ? routing.hash_score != ScoreFunc::kSoftmax
                                              : routing.renormalize;
  }
  // Slots per token in the kernel's top-k output: k, plus one per fused shared expert.
  int64_t slots() const {
    return saturating_sum(shape.top_k,
                          routing.shared_fusion == SharedFusion::kFused ? shape.shared_experts : 0);
  }

 private:
  static int64_t saturating_sum(int64_t a, int64_t b) {
    int64_t out = 0;
    if (__builtin_add_overflow(a, b, &out))
      return a < 0 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
    return out;
  }
};

// Caps on each dimension. They exist so that every size product in estimate_case_bytes and in
// materialize() fits comfortably in int64 (the largest, (E+S)*I*H, stays below 2^58); the real
// memory limit is max_case_bytes, checked against estimate_case_bytes.
inline constexpr int64_t kMaxTokens = int64_t{1} << 24;
inline constexpr int64_t kMaxHiddenOrInter = int64_t{1} << 20;
inline constexpr int64_t kMaxExperts = int64_t{1} << 16;  // routed experts, and shared experts
inline constexpr int64_t kMaxTopK = 1024;
inline constexpr int64_t kMaxVocab = int64_t{1} << 24;  // hash table rows
inline constexpr size_t kMaxEdits = 4096;
inline constexpr int64_t kDefaultMaxCaseBytes = int64_t{2} << 30;  // 2 GiB

// The first problem validate() finds. `field` is the recipe-text key (core/recipe_text.h), e.g.
// "top_k", "values.logits" or "edit"; `edit` is the index into CaseRecipe::edits for "edit".
struct RecipeIssue {
  std::string field;
  int64_t edit = -1;
  std::string message;
};
// Example:
//   if (auto issue = moefuzz::find_recipe_issue(r)) std::cerr << issue->field << ": " << issue->message;
std::optional<RecipeIssue> find_recipe_issue(const CaseRecipe& r);
// Semantic checks (alignment, k <= E, groups divide E, caps, edits in range, ...). Returns "" when
// valid, else one message naming the field ("field 'top_k': 9 exceeds experts (8)").
std::string validate(const CaseRecipe& r);
// Bytes materialize() would allocate (every tensor of core/case.h for this recipe), computed with
// saturating arithmetic: never overflows, saturates at INT64_MAX, treats negative dims as 0. Safe to
// call on unvalidated recipes.
int64_t estimate_case_bytes(const CaseRecipe& r);

// Edit targets (core/case.h "Edit targets") with their shape for a given recipe. A tensor the recipe
// does not materialize (bias without sigmoid+correction bias, token_ids/hash_table without hash
// routing) has a zero-sized first dimension, so no index is valid.
//
// Example:
//   auto t = moefuzz::edit_target(r, "gate.scale");   // shape {E+S, I, H/16}, kind kE4m3Byte
//   if (t && t->shape.size() == e.index.size()) ...
enum class EditValueKind : uint8_t {
  kReal,      // any double incl. inf/nan (rounded to the tensor's dtype by materialize)
  kFp4Code,   // integer 0..15
  kE4m3Byte,  // integer 0..255 (an E4M3 byte, or an E8M0 byte for the .mx_scale targets)
  kTokenId,   // integer 0..vocab-1
  kExpertId,  // integer 0..E-1
};
struct EditTarget {
  std::string_view name;
  std::vector<int64_t> shape;
  EditValueKind kind = EditValueKind::kReal;
};
// All known edit targets, in a fixed order, shaped for `r`.
std::vector<EditTarget> edit_targets(const CaseRecipe& r);
// One target by name; std::nullopt for an unknown name.
std::optional<EditTarget> edit_target(const CaseRecipe& r, std::string_view name);

}  // namespace moefuzz
