#include "kernels/plugin_case_view.h"

#include <cstring>

#include "core/profile.h"

namespace moefuzz {
namespace {

// Where the claimed profile multiplies rsf. A profile unknown to this build (profile_by_name would
// reject it in the check engine before any run) falls back to the recipe's own placement, so a
// whole-layer plugin can still be run directly.
bool claimed_rsf_in_topk(const std::string& profile, const CaseRecipe& r) {
  for (const Profile& p : all_profiles())
    if (p.name == profile) return p.rsf_in_topk;
  return r.routing.scale_placement == ScalePlacement::kTopK;
}

}  // namespace

moefuzz_tensor make_tensor(const void* data, moefuzz_dtype dtype, std::initializer_list<int64_t> shape) {
  moefuzz_tensor t{};
  t.data = const_cast<void*>(data);  // the ABI has one tensor type; inputs are documented read-only
  t.dtype = dtype;
  t.ndim = static_cast<int32_t>(shape.size());
  int d = 0;
  for (int64_t s : shape) t.shape[d++] = s;
  int64_t stride = 1;
  for (d = t.ndim - 1; d >= 0; --d) {
    t.strides[d] = stride;
    stride *= t.shape[d];
  }
  return t;
}

moefuzz_nvfp4 make_nvfp4(const Nvfp4Matrix& m) {
  moefuzz_nvfp4 v{};
  v.codes = make_tensor(m.packed.data(), MOEFUZZ_DTYPE_FP4X2, {m.rows, m.cols / 2});
  v.scales = make_tensor(m.scales.data(), MOEFUZZ_DTYPE_E4M3, {m.rows, m.cols / kNvfp4BlockSize});
  v.global_dequant = m.global_dequant;
  return v;
}

size_t tensor_bytes(const moefuzz_tensor& t) {
  if (t.dtype == MOEFUZZ_DTYPE_NONE || t.data == nullptr) return 0;
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  const int64_t per = t.dtype == MOEFUZZ_DTYPE_BF16                                       ? 2
                      : (t.dtype == MOEFUZZ_DTYPE_FP4X2 || t.dtype == MOEFUZZ_DTYPE_E4M3) ? 1
                                                                                          : 4;
  return static_cast<size_t>(n * per);
}

CaseView::CaseView(const CaseRecipe& r, const std::string& claimed_profile)
    : profile_(claimed_profile), recipe_profile_(r.profile) {
  moefuzz_case_desc& d = desc;
  d.struct_size = sizeof(moefuzz_case_desc);
  d.profile = profile_.c_str();
  d.recipe_profile = recipe_profile_.c_str();
  d.tokens = r.shape.tokens;
  d.hidden = r.shape.hidden;
  d.inter = r.shape.inter;
  d.experts = r.shape.experts;
  d.top_k = r.shape.top_k;
  d.n_group = r.shape.n_group;
  d.topk_group = r.shape.topk_group;
  d.shared_experts = r.shape.shared_experts;
  d.slots = r.slots();
  d.hash_vocab = r.hash_vocab();
  d.routing_mode = static_cast<int32_t>(r.routing.mode);
  d.hash_score = static_cast<int32_t>(r.routing.hash_score);
  d.renormalize = r.routing.renormalize;
  d.correction_bias = r.routing.correction_bias;
  d.scale_placement = static_cast<int32_t>(r.routing.scale_placement);
  d.rsf_in_topk = claimed_rsf_in_topk(claimed_profile, r);
  d.shared_fusion = static_cast<int32_t>(r.routing.shared_fusion);
  d.routed_scaling_factor = static_cast<float>(r.routing.routed_scaling_factor);
  d.routed_scaling_factor_f64 = r.routing.routed_scaling_factor;
  d.act_format = static_cast<int32_t>(r.quant.activations);
  d.act_scales = static_cast<int32_t>(r.quant.act_scales);
  d.swiglu_limit = r.swiglu.limit;
  d.swiglu_alpha = r.swiglu.alpha;
  d.swiglu_beta = r.swiglu.beta;
  d.threads = 1;
  d.stream = nullptr;
  d.device_ordinal = -1;
}

void CaseView::attach(const Case& c, const RunOptions& opts) {
  const CaseRecipe& r = c.recipe;
  moefuzz_case_desc& d = desc;
  d.tactic = opts.tactic;
  d.threads = opts.threads;
  d.hidden_states = make_tensor(c.hidden.data(), MOEFUZZ_DTYPE_BF16, {r.shape.tokens, r.shape.hidden});
  d.logits = make_tensor(c.logits.data(), MOEFUZZ_DTYPE_F32, {r.shape.tokens, r.shape.experts});
  if (!c.bias.empty())
    d.bias = make_tensor(c.bias.data(), MOEFUZZ_DTYPE_F32, {static_cast<int64_t>(c.bias.size())});
  if (!c.token_ids.empty())
    d.token_ids =
        make_tensor(c.token_ids.data(), MOEFUZZ_DTYPE_I32, {static_cast<int64_t>(c.token_ids.size())});
  if (!c.hash_table.empty())
    d.hash_table = make_tensor(c.hash_table.data(), MOEFUZZ_DTYPE_I32, {r.hash_vocab(), r.shape.top_k});
  experts.clear();
  for (const ExpertWeights& w : c.experts)
    experts.push_back({make_nvfp4(w.gate), make_nvfp4(w.up), make_nvfp4(w.down)});
  d.expert_weights = experts.data();
  d.num_weight_experts = static_cast<int64_t>(experts.size());
  d.a1_scale = make_tensor(c.a1_scale.data(), MOEFUZZ_DTYPE_F32, {static_cast<int64_t>(c.a1_scale.size())});
  d.a2_scale = make_tensor(c.a2_scale.data(), MOEFUZZ_DTYPE_F32, {static_cast<int64_t>(c.a2_scale.size())});
}

// A stage's returned message; NULL = success. Bounded: the pointer comes from the plugin.
std::string stage_message(const char* stage, const char* msg) {
  if (msg == nullptr) return "";
  return std::string(stage) + " returned an error: " + std::string(msg, strnlen(msg, 512));
}

float poison_value(const RunOptions& opts) {
  float f;
  std::memcpy(&f, &opts.poison_bits, sizeof f);
  return f;
}

GemmOperand gemm_operand(const GemmInput& a) {
  GemmOperand t;
  if (a.nvfp4 != nullptr) {
    t.codes = make_tensor(a.nvfp4->packed.data(), MOEFUZZ_DTYPE_FP4X2, {a.rows, a.cols / 2});
    t.scales = make_tensor(a.nvfp4->scales.data(), MOEFUZZ_DTYPE_E4M3, {a.rows, a.cols / kNvfp4BlockSize});
  } else {
    t.codes = make_tensor(a.bf16.data(), MOEFUZZ_DTYPE_BF16, {a.rows, a.cols});
  }
  return t;
}

}  // namespace moefuzz
