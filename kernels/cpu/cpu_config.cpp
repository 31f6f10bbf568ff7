// make_cpu_config / cpu_supports: the recipe + claimed profile -> the plain data every stage reads.
#include <algorithm>
#include <cmath>
#include <string>

#include "core/errors.h"
#include "kernels/cpu/cpu_stages.h"
#include "kernels/kernel.h"

namespace moefuzz::cpu {

CpuConfig make_cpu_config(const CaseRecipe& r, const Profile& p, const RunOptions& opts) {
  if (opts.tactic < 0 || opts.tactic >= kCpuTactics)
    throw InputError("tactic " + std::to_string(opts.tactic) + " out of range [0, " +
                     std::to_string(kCpuTactics) + ")");
  CpuConfig c;
  c.tokens = r.shape.tokens;
  c.hidden = r.shape.hidden;
  c.inter = r.shape.inter;
  c.experts = r.shape.experts;
  c.top_k = r.shape.top_k;
  c.shared_experts = r.shape.shared_experts;
  c.n_group = r.shape.n_group;
  c.topk_group = r.shape.topk_group;
  c.slots = r.slots();
  c.mode = r.routing.mode;
  c.hash_score = r.routing.hash_score;
  // Hash routing always normalizes non-softmax scores (SPEC.md §2.5: SGLang HashTopK, FlashInfer
  // hash_topk and the V4 reference divide by the sum unconditionally); the flag applies to top-k modes.
  c.renormalize = r.routing.mode == RoutingMode::kHash ? r.routing.hash_score != ScoreFunc::kSoftmax
                                                       : r.routing.renormalize;
  c.correction_bias = r.routing.correction_bias;
  c.rsf = static_cast<float>(r.routing.routed_scaling_factor);
  // The profile, never the recipe's flag, says where rsf goes (oracles/routing_ref.h).
  c.topk_applies_rsf = p.rsf_in_topk;
  c.combine_applies_rsf = !p.rsf_in_topk;
  // The profile's epsilon exactly (an fp32 1e-20 would move every sum below ~2^-42 by eps/(sum+eps),
  // visible against a 0-epsilon contract: found by zero-fp, hash sigmoid sums of 1.5e-19). The
  // all-underflowed row of a 0-epsilon profile is handled in cpu_routing.cpp.
  c.renorm_epsilon = static_cast<float>(p.renorm_epsilon);
  c.weights_bf16 = p.routing_weight_dtype == WeightDtype::kBf16;
  c.shared_fusion = r.routing.shared_fusion;
  c.shared_weight_inv_rsf = p.shared_fused_weight_inv_rsf;
  c.w4a4 = r.quant.activations == ActivationFormat::kNvfp4;
  c.w13_order = p.w13_order;
  c.quantizer = p.quantizer;
  c.zero_rule = p.zero_scale_rule;
  c.bf16_after_gemm1 = p.bf16_after_gemm1;
  c.bf16_after_activation = p.bf16_after_activation;
  c.bf16_after_gemm2 = p.bf16_after_gemm2;
  c.bf16_output = p.bf16_output;
  c.combine = p.combine;
  c.swiglu_limit = static_cast<float>(r.swiglu.limit);
  c.swiglu_alpha = static_cast<float>(r.swiglu.alpha);
  c.swiglu_beta = static_cast<float>(r.swiglu.beta);
  c.tactic = opts.tactic;
  c.threads = std::max(1, opts.threads);
  c.window = opts.index_window;
  return c;
}

std::string cpu_supports(const CaseRecipe& r) {
  if (std::string why = validate(r); !why.empty()) return "invalid recipe: " + why;
  // Per-expert decoded weight tiles are [K, 64] floats and intermediates [T*slots, max(2I, H)]
  // floats; the case's own byte cap (estimate_case_bytes) bounds both to a few times the case size.
  if (r.shape.hidden % 16 != 0 || r.shape.inter % 16 != 0) return "H and I must be multiples of 16";
  if (r.quant.weights == WeightFormat::kFp8Block)
    return "fp8_block weights (W8A8): the CPU pipeline's FP8 path is not implemented yet";
  if (r.routing.mode == RoutingMode::kSigmoidGrouped && r.shape.experts % r.shape.n_group != 0)
    return "n_group must divide E";
  return "";
}

}  // namespace moefuzz::cpu
