#pragma once
// The FP32 per-tensor ("global") scale of NVFP4, in its two reciprocal conventions (SPEC.md §1.4):
//   S_q, the QUANTIZATION scale: multiplies the data before block scaling (FlashInfer fp4_quantize
//        global_scale, TRT-LLM SFScaleVal, SGLang/vLLM a1_gscale / a2_gscale). Typically 2688 / amax.
//   S_d, the DEQUANTIZATION scale = 1 / S_q: multiplies decoded values (ModelOpt weight_scale_2 and
//        input_scale, SGLang/vLLM w13_weight_scale_2). Typically amax / 2688. Nvfp4Matrix stores S_d.
// The names below say which convention a function returns and which upstream expression it
// reproduces bit for bit, because the upstream expressions round differently (2688/amax evaluated
// by torch as fl(fl(1/amax) * 2688) is not fl(2688/amax), and fl(amax/2688) is not fl(1/that)).
//
// Example:
//   float amax = moefuzz::flashinfer_abs_max(values);            // abs().nan_to_num().max()
//   float s_q = moefuzz::flashinfer_global_scale_q(amax);        // fl(fl(1/amax) * 2688)
//   float s_d = moefuzz::dequant_scale_from_quant_scale(s_q);    // fl(1/s_q): what the reference multiplies
//   with float w2 = moefuzz::modelopt_weight_scale_2(amax);           // fl(amax / 2688), already S_d
#include <cstdint>
#include <span>

namespace moefuzz {

// 2688 = 448 * 6: the largest E4M3 block scale times the largest E2M1 magnitude, so that the tensor's
// amax maps onto the top of the representable range. Exact in fp32.
inline constexpr float kNvfp4GlobalScaleNumerator = 448.0f * 6.0f;

// max |x| as FlashInfer's calculate_fp4_global_scale_factor takes it:
// tensor.float().abs().nan_to_num().max(). NaN counts as 0 and +-Inf as FLT_MAX (torch nan_to_num defaults).
// An empty span gives 0 (torch would raise; callers never pass one).
float flashinfer_abs_max(std::span<const float> values);
// Same over raw bf16 bit patterns (the widening to fp32 is exact).
float flashinfer_abs_max_bf16(std::span<const uint16_t> bf16_bits);

// FlashInfer calculate_fp4_global_scale_factor: (448*6) / amax, which torch evaluates as
// amax.reciprocal() * 2688: S_q = fl(fl(1/amax) * 2688). amax == 0 gives +Inf, as torch does.
float flashinfer_global_scale_q(float amax);

// ModelOpt get_weights_scaling_factor_2 / get_activation_scaling_factor: S_d = fl(amax / 2688),
// a correctly rounded fp32 division (the checkpoint's weight_scale_2 / input_scale).
float modelopt_weight_scale_2(float amax);

// The reciprocal between the conventions as the loaders compute it, fl(1/s) (torch 1/tensor,
// SGLang w13_input_scale_quant = 1/w13_input_scale, the golden files' *_dequant = fl32(1/S_q)).
// Not an involution: dequant_scale_from_quant_scale(quant_scale_from_dequant_scale(s)) can differ
// from s by one ulp.
float dequant_scale_from_quant_scale(float s_q);
float quant_scale_from_dequant_scale(float s_d);

}  // namespace moefuzz
