#include "core/profile_json.h"

namespace moefuzz {

nlohmann::json profile_json(const Profile& p) {
  const auto dtype = [](WeightDtype d) { return d == WeightDtype::kBf16 ? "bf16" : "fp32"; };
  const char* quantizer[] = {"fast_math", "exact", "reference"};
  const char* combine[] = {"fp32_slot_order", "bf16_atomics", "bf16_products", "fp32_unrounded",
                           "bf16_epilogue_products"};
  const char* fp8_act_quant[] = {"vllm_cuda", "deepgemm_reference", "triton"};
  return {
      {"name", p.name},
      {"summary", p.summary},
      {"w13_order", p.w13_order == W13Order::kUpGate        ? "up_gate"
                    : p.w13_order == W13Order::kInterleaved ? "interleaved"
                                                            : "gate_up"},
      {"rsf_in_topk", p.rsf_in_topk},
      {"routing_weight_dtype", dtype(p.routing_weight_dtype)},
      {"renorm_epsilon", p.renorm_epsilon},
      {"tie_rule", p.tie_rule == TieRule::kLowerIndexWins ? "lower_index_wins" : "unspecified"},
      {"bf16_after_gemm1", p.bf16_after_gemm1},
      {"bf16_after_activation", p.bf16_after_activation},
      {"silu_may_round_bf16", p.silu_may_round_bf16},
      {"bf16_after_gemm2", p.bf16_after_gemm2},
      {"bf16_output", p.bf16_output},
      {"quantizer", quantizer[static_cast<int>(p.quantizer)]},
      {"zero_scale_rule", p.zero_scale_rule == ZeroScaleRule::kVecMaxTest ? "vec_max_test" : "scale_test"},
      {"per_expert_act_scales", p.per_expert_act_scales},
      {"combine", combine[static_cast<int>(p.combine)]},
      {"shared_fused_weight_inv_rsf", p.shared_fused_weight_inv_rsf},
      {"sigmoid_form", p.sigmoid_form == SigmoidForm::kTanh ? "tanh" : "reciprocal"},
      {"fast_math_exp", p.fast_math_exp},
      {"bias_dtype", dtype(p.bias_dtype)},
      {"fp8_act_quant", fp8_act_quant[static_cast<int>(p.fp8_act_quant)]},
      {"fp8_mma_accum_bits", p.fp8_mma_accum_bits},
      {"fp8_dots_per_block", p.fp8_dots_per_block},
      {"fp8_scale_order", p.fp8_scale_order == Fp8ScaleOrder::kDeepGemm ? "deepgemm" : "triton"},
      {"sources", p.sources}};
}

}  // namespace moefuzz
