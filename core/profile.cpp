#include "core/profile.h"

#include "core/errors.h"

namespace moefuzz {
namespace {

// Every field cites where the backend's behaviour is written (SPEC.md section in brackets). Fields
// left at their struct default still get a citation, because the default is a claim too.
// docs/profiles.md renders the same table with the reasoning behind each choice.

Profile sglang_triton() {
  Profile p;
  p.name = "sglang-triton";
  p.summary = "SGLang Triton fused_moe runner: [gate; up], rsf applied by moe_sum_reduce, fp32 weights";
  p.w13_order = W13Order::kGateUp;
  p.rsf_in_topk = false;
  p.routing_weight_dtype = WeightDtype::kFp32;
  p.renorm_epsilon = 0.0;
  p.tie_rule = TieRule::kLowerIndexWins;
  p.bf16_after_gemm1 = true;
  p.bf16_after_activation = true;
  p.silu_may_round_bf16 = true;
  // GEMM2's fp32 accumulator is multiplied by the routing weight before its one bf16 rounding (the
  // combine's kBf16EpilogueProducts): no rounding point between the GEMM and the weight.
  p.bf16_after_gemm2 = false;
  p.bf16_output = true;
  p.quantizer = QuantizerVariant::kFastMath;
  p.zero_scale_rule = ZeroScaleRule::kScaleTest;
  p.per_expert_act_scales = false;
  p.combine = CombineAccum::kBf16EpilogueProducts;
  p.shared_fused_weight_inv_rsf = true;
  p.sigmoid_form = SigmoidForm::kReciprocal;
  p.fast_math_exp = true;
  p.bias_dtype = WeightDtype::kFp32;
  p.fp8_act_quant = Fp8GroupQuantVariant::kTriton;
  p.fp8_mma_accum_bits = kHopperFp8MmaAccumBits;
  p.fp8_dots_per_block = 2;
  p.fp8_scale_order = Fp8ScaleOrder::kTriton;
  p.sources = {
      "w13_order: sgl-project/sglang python/sglang/srt/layers/moe/moe_runner/triton.py (silu_and_mul on "
      "[gate; up]) [SPEC 3.1]",
      "rsf_in_topk=false: sgl-project/sglang python/sglang/srt/layers/moe/fused_moe_triton/layer.py "
      "(should_fuse_routed_scaling_factor_in_topk false for unquantized Triton), moe_runner/triton.py "
      "moe_sum_reduce_triton(..., routed_scaling_factor) [SPEC 2.3]",
      "routing_weight_dtype fp32, renorm_epsilon 0: sgl-project/sglang python/sglang/srt/layers/moe/topk.py "
      "(StandardTopKOutput fp32; biased_grouped_topk_impl w/sum) [SPEC 2.1, 2.3]",
      "tie_rule lower index: sgl-project/sglang sgl-kernel/csrc/moe/moe_fused_gate.cu, "
      "moe_topk_softmax_kernels.cu ('lower indices to win') [SPEC 2.1]",
      "sigmoid 1/(1+expf(-x)): sgl-project/sglang sgl-kernel/csrc/moe/moe_fused_gate.cu; fast_math_exp: "
      "sgl-kernel/CMakeLists.txt sm90 build uses -use_fast_math [SPEC 1.5 FTZ, 2.1]",
      "quantizer fast-math + zero test on sfd: sgl-project/sglang sgl-kernel/csrc/gemm/nvfp4_quant.cuh "
      "(inline rcp.approx.ftz; outScale = sfd != 0 ? .. : 0) [SPEC 1.5]",
      "silu_may_round_bf16: sgl-project/sglang python/sglang/srt/layers/moe/fused_moe_triton/fused_moe.py "
      "fused_experts_impl (filter_expert, set under expert parallelism: act_and_mul_triton, whose kernel in "
      "fused_moe_triton_kernels.py casts silu(g) to the input dtype before the multiply; otherwise "
      "sgl_kernel silu_and_mul, one rounding) [SPEC-formats 2.2]",
      "bf16_after_gemm2=false: sgl-project/sglang python/sglang/srt/layers/moe/fused_moe_triton/"
      "fused_moe_triton_kernels.py fused_moe_kernel (MUL_ROUTED_WEIGHT: accumulator *= moe_weight, then one "
      "accumulator.to(compute_type)); found by moefuzz's whole-layer check of SGLang's bf16 Triton MoE on "
      "the H200, where the former bf16 rounding before the weight made correct outputs fail by 1-3 x the "
      "bound [SPEC-formats 2.2]",
      "combine bf16(acc*w) in GEMM2 epilogue + fp32 moe_sum_reduce: sgl-project/sglang "
      "python/sglang/srt/layers/moe/moe_runner/triton.py, sgl-kernel/csrc/moe/moe_sum_reduce.cu [SPEC 3.6]",
      "shared expert weight 1/rsf: sgl-project/sglang python/sglang/srt/layers/moe/topk.py (fused shared "
      "experts: sum/rsf) [SPEC 2.4]",
      "fp8_act_quant triton (not IEEE): sgl-project/sglang "
      "sgl-kernel/csrc/gemm/per_token_group_quant_8bit.cu "
      "(s = fl(amax * RN(1/448)), codes cvt.satfinite(x * fl(448/amax)): within one code and 2 scale ulps of "
      "vLLM's formula), the Triton fallback per_token_group_quant_fp8 (div.full) [SPEC-formats 1.2, 5.2]",
      "fp8_mma_accum_bits 13: tl.dot on e4m3 is a fresh Hopper FP8 wgmma per K tile, 13 bits "
      "measured on an H200 (tests/python/triton_fp8_dot_probe.py; oracles/fp8_block_gemm.h (a)); "
      "fp8_dots_per_block 2, fp8_scale_order triton: "
      "sgl-project/sglang python/sglang/srt/layers/moe/fused_moe_triton/fused_moe_triton_kernels.py "
      "fused_moe_kernel (acc += tl.dot(a, b) * a_scale[:, None] * b_scale[None, :] per K tile; the tuned "
      "BLOCK_SIZE_K is passed unchanged: 64 applies each 128-group's scales to two dots) [SPEC-formats 1.3]",
  };
  return p;
}

Profile sglang_cutlass_fp4() {
  Profile p;
  p.name = "sglang-cutlass-fp4";
  p.summary = "SGLang ModelOpt NVFP4 + sgl-kernel cutlass_moe_fp4: rsf fused in top-k, bf16 weight products";
  p.w13_order = W13Order::kGateUp;
  p.rsf_in_topk = true;
  p.routing_weight_dtype = WeightDtype::kFp32;
  p.renorm_epsilon =
      1e-20;  // on CUDA SGLang routes DeepSeek through FlashInfer fused_topk_deepseek (SPEC.md §2.3)
  p.tie_rule = TieRule::kLowerIndexWins;
  p.quantizer = QuantizerVariant::kFastMath;
  p.zero_scale_rule = ZeroScaleRule::kScaleTest;
  p.per_expert_act_scales = true;
  p.combine = CombineAccum::kBf16Products;
  p.shared_fused_weight_inv_rsf = true;
  p.sigmoid_form = SigmoidForm::kReciprocal;
  p.fast_math_exp = true;
  p.sources = {
      "w13_order [gate; up]: sgl-project/sglang python/sglang/srt/layers/quantization/modelopt_quant.py "
      "(ModelOptNvFp4FusedMoEMethod.create_weights), sgl-kernel cutlass_moe_fp4 [SPEC 3.1]",
      "rsf_in_topk=true: sgl-project/sglang python/sglang/srt/layers/moe/fused_moe_triton/layer.py "
      "(should_fuse_routed_scaling_factor_in_topk: ModelOptNvFp4FusedMoEMethod) [SPEC 2.3]",
      "routing_weight_dtype fp32: sgl-project/sglang python/sglang/srt/layers/moe/topk.py "
      "(StandardTopKOutput) "
      "[SPEC 2.3]; renorm_epsilon 1e-20: on CUDA the DeepSeek top-k is FlashInfer fused_topk_deepseek "
      "(flashinfer-ai/flashinfer csrc/fused_moe/noAuxTcKernels.cu, s*rsf/(sum+1e-20)) and hash layers use "
      "SGLang hash_topk.py _RENORMALIZE_SUM_EPSILON [SPEC 2.1, 2.3, 2.5]",
      "tie_rule + sigmoid 1/(1+expf(-x)): sgl-project/sglang sgl-kernel/csrc/moe/moe_fused_gate.cu [SPEC "
      "2.1]",
      "fast_math_exp: sgl-project/sglang sgl-kernel/CMakeLists.txt (common_ops_sm90_build -use_fast_math) "
      "[SPEC 1.5]",
      "quantizer fast-math, zero test on sfd: sgl-project/sglang sgl-kernel/csrc/gemm/nvfp4_quant.cuh [SPEC "
      "1.5]",
      "per_expert_act_scales: sgl-project/sglang modelopt_quant.py process_weights_after_loading "
      "(w13_input_scale max over w1/w3 per expert) [SPEC 1.9]",
      "combine bf16(c2 * w.to(bf16)), torch sum: sgl-project/sglang "
      "python/sglang/srt/layers/moe/cutlass_moe.py "
      "[SPEC 3.6]",
      "shared expert weight 1/rsf: sgl-project/sglang python/sglang/srt/layers/moe/topk.py [SPEC 2.4]",
      "fp8_* at their defaults (vLLM CUDA quantizer, fp32 round-to-nearest accumulation, one dot per "
      "block, Triton scale order): the built-in CPU kernels' FP8 arithmetic; this backend's FP8 block path "
      "is "
      "not modelled [SPEC-formats 1.2-1.4]",
  };
  return p;
}

Profile flashinfer_cutlass() {
  Profile p;
  p.name = "flashinfer-cutlass";
  p.summary =
      "FlashInfer/TRT-LLM CUTLASS fused MoE: [up; gate], fused finalize (bf16 atomics), fast-math quantizer";
  p.w13_order = W13Order::kUpGate;
  p.rsf_in_topk = true;
  p.routing_weight_dtype = WeightDtype::kFp32;
  p.renorm_epsilon = 1e-20;
  p.tie_rule = TieRule::kLowerIndexWins;
  p.quantizer = QuantizerVariant::kFastMath;
  p.zero_scale_rule = ZeroScaleRule::kVecMaxTest;
  p.per_expert_act_scales = false;
  p.combine = CombineAccum::kBf16Atomics;
  p.shared_fused_weight_inv_rsf = true;
  p.sigmoid_form = SigmoidForm::kTanh;
  p.fast_math_exp = true;
  p.sources = {
      "w13_order [up; gate]: flashinfer-ai/flashinfer "
      "csrc/fused_moe/cutlass_backend/cutlass_fused_moe_kernels.cuh "
      "(doActivationKernel gated_off = inter_size; GLUAdaptor) [SPEC 3.1]",
      "rsf_in_topk + renorm_epsilon 1e-20 + tanh sigmoid + lower index wins: flashinfer-ai/flashinfer "
      "csrc/fused_moe/noAuxTcKernels.cu (deepseek_v3_topk_kernel), csrc/fused_moe/moeTopKFuncs.cuh [SPEC "
      "2.1]",
      "fast_math_exp: flashinfer-ai/flashinfer flashinfer/jit/core.py (gen_jit_spec -use_fast_math) [SPEC "
      "1.5]",
      "quantizer fast-math, zero test on vecMax: flashinfer-ai/flashinfer "
      "csrc/nv_internal/tensorrt_llm/kernels/quantization_utils.cuh (cvt_warp_fp16_to_fp4) [SPEC 1.5]",
      "global activation scales: flashinfer-ai/flashinfer paths take max() over experts [SPEC 1.9]",
      "combine bf16 RED atomics (use_fused_finalize=True default): flashinfer-ai/flashinfer "
      "csrc/nv_internal/tensorrt_llm/cutlass_extensions/include/cutlass_extensions/epilogue/collective/"
      "epilogue_moe_finalize.hpp, flashinfer/fused_moe/core.py [SPEC 3.6]",
      "shared expert weight 1/rsf: flashinfer-ai/flashinfer include/flashinfer/fused_moe/hash_topk.cuh [SPEC "
      "2.4]",
      "fp8_* at their defaults (vLLM CUDA quantizer, fp32 round-to-nearest accumulation, one dot per "
      "block, Triton scale order): the built-in CPU kernels' FP8 arithmetic; this backend's FP8 block path "
      "is "
      "not modelled [SPEC-formats 1.2-1.4]",
  };
  return p;
}

Profile trtllm_gen() {
  Profile p;
  p.name = "trtllm-gen";
  p.summary = "FlashInfer trtllm_fp4_block_scale_moe: bf16 routing weights with rsf inside, fp32 finalize";
  p.w13_order = W13Order::kUpGate;
  p.rsf_in_topk = true;
  p.routing_weight_dtype = WeightDtype::kBf16;
  p.renorm_epsilon = 1e-20;
  p.tie_rule = TieRule::kLowerIndexWins;
  p.quantizer = QuantizerVariant::kFastMath;
  p.zero_scale_rule = ZeroScaleRule::kVecMaxTest;
  p.per_expert_act_scales = false;
  p.combine = CombineAccum::kFp32SlotOrder;
  p.shared_fused_weight_inv_rsf = false;
  p.sigmoid_form = SigmoidForm::kTanh;
  p.fast_math_exp = true;
  p.bias_dtype = WeightDtype::kBf16;
  p.sources = {
      "w13_order [up; gate] (+ layout-only interleave): flashinfer-ai/flashinfer "
      "csrc/fused_moe/trtllm_backend/trtllm_fused_moe_dev_kernel.cu (activationKernel), flashinfer/fused_moe/"
      "core.py (reorder_rows_for_gated_act_gemm) [SPEC 3.1]",
      "rsf_in_topk, tanh sigmoid, mSumEpsilon 1e-20f, lower index wins: flashinfer-ai/flashinfer "
      "csrc/fused_moe/trtllm_backend/trtllm_fused_moe_routing_deepseek.cu (routingMainKernel), "
      "trtllm_fused_moe_routing_runner.cu, include/flashinfer/trtllm/fused_moe/RoutingKernelTopK.cuh [SPEC "
      "2.1]",
      "routing_weight_dtype bf16: flashinfer-ai/flashinfer flashinfer/fused_moe/core.py ('expert_weights "
      "tensor "
      "is always bfloat16') [SPEC 2.1, 2.2]",
      "bias_dtype bf16: sgl-project/sglang python/sglang/srt/models/deepseek_v2.py (MoEGate.__init__: bf16 "
      "e_score_correction_bias for modelopt_fp4 + flashinfer_trtllm) [SPEC 2.1]",
      "fast_math_exp: flashinfer-ai/flashinfer flashinfer/jit/core.py [SPEC 1.5]",
      "quantizer fast-math, vecMax zero test (input quantization via fp4_quantize): flashinfer-ai/flashinfer "
      "csrc/nv_internal/tensorrt_llm/kernels/quantization_utils.cuh; FC2 quantization fused in closed cubins "
      "[UNVERIFIED, SPEC 3.4]",
      "combine fp32 in slot order, weights bf16: flashinfer-ai/flashinfer csrc/fused_moe/trtllm_backend/"
      "trtllm_fused_moe_dev_kernel.cu (finalizeKernel) [SPEC 3.6]",
      "shared expert weight 1.0 (rsf already in the routed weights): SPEC 2.4 (trtllm-gen fused shared "
      "experts)",
      "fp8_* at their defaults (vLLM CUDA quantizer, fp32 round-to-nearest accumulation, one dot per "
      "block, Triton scale order): the built-in CPU kernels' FP8 arithmetic; this backend's FP8 block path "
      "is "
      "not modelled [SPEC-formats 1.2-1.4]",
  };
  return p;
}

Profile vllm() {
  Profile p;
  p.name = "vllm";
  p.summary = "vLLM CUTLASS NVFP4 MoE: [gate; up], sfd zero test, rsf applied on the output";
  p.w13_order = W13Order::kGateUp;
  p.rsf_in_topk = false;
  p.routing_weight_dtype = WeightDtype::kFp32;
  p.renorm_epsilon = 0.0;
  p.tie_rule = TieRule::kLowerIndexWins;
  p.quantizer = QuantizerVariant::kFastMath;
  p.zero_scale_rule = ZeroScaleRule::kScaleTest;
  p.per_expert_act_scales = true;
  p.combine = CombineAccum::kBf16Products;
  p.shared_fused_weight_inv_rsf = true;
  p.sigmoid_form = SigmoidForm::kReciprocal;
  p.fast_math_exp = false;
  p.silu_may_round_bf16 = true;
  p.fp8_act_quant = Fp8GroupQuantVariant::kVllmCuda;
  p.fp8_mma_accum_bits = kHopperFp8MmaAccumBits;
  p.fp8_dots_per_block = 2;
  p.fp8_scale_order = Fp8ScaleOrder::kTriton;
  p.sources = {
      "w13_order [gate; up]: vllm-project/vllm (native order; loaders swap only for FlashInfer backends: "
      "vllm/model_executor/layers/quantization/utils/flashinfer_fp4_moe.py reorder_w1w3_to_w3w1) [SPEC 3.1]",
      "quantizer fast-math + zero test on sfd: vllm-project/vllm csrc/quantization/fp4/nvfp4_utils.cuh "
      "(cvt_warp_fp16_to_fp4) [SPEC 1.5]",
      "tie_rule lower index: vllm-project/vllm topk_softmax (shared with sgl-kernel "
      "moe_topk_softmax_kernels.cu) [SPEC 2.2]",
      "rsf_in_topk=false, renorm_epsilon 0, per-expert scales, bf16 combine products: [UNVERIFIED] not in "
      "SPEC.md; the rsf placement is exactly what BUGZOO Z1 (vllm-project/vllm PR 45037) got wrong",
      "silu_may_round_bf16: vllm-project/vllm csrc/activation_kernels.cu silu_and_mul (silu_kernel returns "
      "T, the multiply runs in T: h = bf16(bf16(silu(g)) * u)), which fused_moe's bf16 and FP8 Triton paths "
      "call [SPEC-formats 1.5, 2.2]",
      "fp8_act_quant vllm_cuda (IEEE): vllm-project/vllm csrc/quantization/w8a8/fp8/per_token_group_quant.cu "
      "(per_token_group_quant_fp8 on CUDA) [SPEC-formats 1.2]",
      "fp8_mma_accum_bits 13 (measured wgmma), fp8_dots_per_block 2, fp8_scale_order triton: "
      "vllm-project/vllm "
      "vllm/model_executor/layers/fused_moe/fused_moe.py fused_moe_kernel (fresh e4m3 tl.dot per K tile, "
      "(P * a_scale) * b_scale; invoke_fused_moe_kernel sets BLOCK_SIZE_K = min(BLOCK_SIZE_K, 128): 128 or "
      "64, 2 dots per 128-group covers both) [SPEC-formats 1.3]",
  };
  return p;
}

// vLLM's FP8 block MoE through DeepGEMM (deep_gemm_moe.py; chosen over Triton when M >= 128, N % 128 == 0,
// K % 128 == 0 and N > 512): vLLM's routing, DeepGEMM's grouped GEMM arithmetic and vLLM's ep_gather combine.
Profile vllm_deepgemm() {
  Profile p = vllm();
  p.name = "vllm-deepgemm";
  p.summary =
      "vLLM FP8 block MoE through DeepGEMM: 1 WGMMA dot per 128-block, fl(sa*sb)*P, ep_gather combine";
  p.silu_may_round_bf16 = true;
  p.combine = CombineAccum::kFp32SlotOrder;
  p.bf16_after_gemm2 = true;
  p.fp8_act_quant = Fp8GroupQuantVariant::kTriton;
  p.fp8_mma_accum_bits = kHopperFp8MmaAccumBits;
  p.fp8_dots_per_block = 1;
  p.fp8_scale_order = Fp8ScaleOrder::kDeepGemm;
  p.sources = {
      "routing, w13 order, rsf placement: as the vllm profile (vllm-project/vllm "
      "vllm/model_executor/layers/fused_moe/deep_gemm_moe.py routes with fused_moe's top-k) [SPEC 2.2]",
      "fp8_dots_per_block 1, fp8_mma_accum_bits 13: deepseek-ai/DeepGEMM "
      "deep_gemm/include/deep_gemm/impls/sm90_fp8_gemm_1d2d.cuh (BLOCK_K == 128; the WGMMA "
      "accumulator restarts at every K block, scale-d = (k != 0), and is promoted to an fp32 "
      "register sum; Hopper FP8 WGMMA, 13 bits measured by tests/python/triton_fp8_dot_probe.py) "
      "[SPEC-formats 1.4]",
      "fp8_scale_order deepgemm: DeepGEMM sm90_fp8_gemm_1d2d.cuh (s = fl(sa * sb), "
      "final += s * accum) [SPEC-formats 1.4]",
      "bf16_after_gemm2: DeepGEMM writes D bf16 (__float22bfloat162_rn) [SPEC-formats 1.4]",
      "combine fp32 slot order: vllm-project/vllm "
      "vllm/model_executor/layers/fused_moe/deep_gemm_utils.py _fwd_kernel_ep_gather (fp32 sum of "
      "fp32(y_bf16) * w_fp32 in slot order, one bf16 rounding) [SPEC-formats 1.5]",
      "fp8_act_quant triton, silu_may_round_bf16: vllm-project/vllm "
      "vllm/model_executor/layers/quantization/utils/fp8_utils.py "
      "silu_mul_per_token_group_quant_fp8_colmajor (FC2 input: silu rounded to bf16 before the "
      "multiply, div.full scales; the FC1 input through per_token_group_quant.cu, IEEE, which the "
      "triton variant also admits) [SPEC-formats 1.2, 1.5]",
  };

  return p;
}

Profile deepseek_ref() {
  Profile p;
  p.name = "deepseek-ref";
  p.summary =
      "DeepSeek-V3 inference/model.py semantics: rsf in the gate, bf16 weights, bf16 combine by expert";
  p.w13_order = W13Order::kGateUp;
  p.rsf_in_topk = true;
  p.routing_weight_dtype = WeightDtype::kBf16;
  p.renorm_epsilon = 0.0;
  p.tie_rule = TieRule::kUnspecified;
  p.quantizer = QuantizerVariant::kReference;
  p.zero_scale_rule = ZeroScaleRule::kScaleTest;
  p.per_expert_act_scales = false;
  p.combine = CombineAccum::kBf16Atomics;
  p.shared_fused_weight_inv_rsf = true;
  p.sigmoid_form = SigmoidForm::kReciprocal;
  p.fast_math_exp = false;
  p.sources = {
      "w13 gate/up as w1/w3, Expert.forward = w2(silu(w1(x)) * w3(x)): deepseek-ai/DeepSeek-V3 "
      "inference/model.py [SPEC 3.1]",
      "rsf_in_topk (w *= route_scale), no epsilon, weights type_as(x) = bf16, torch.topk ties: "
      "deepseek-ai/DeepSeek-V3 inference/model.py (Gate.forward) [SPEC 2.1]",
      "combine bf16 y[idx] += ... by expert index (modelled as bf16 adds in any order): "
      "deepseek-ai/DeepSeek-V3 inference/model.py (MoE.forward) [SPEC 3.6]",
      "quantizer: the model has no NVFP4 kernel; the torch reference recipe (true division) is used: "
      "vllm-project/vllm vllm/model_executor/layers/quantization/utils/nvfp4_emulation_utils.py [SPEC 1.5]",
      "fp8_* at their defaults (vLLM CUDA quantizer, fp32 round-to-nearest accumulation, one dot per "
      "block, Triton scale order): the built-in CPU kernels' FP8 arithmetic; this backend's FP8 block path "
      "is "
      "not modelled [SPEC-formats 1.2-1.4]",
  };
  return p;
}

Profile flashinfer_reference() {
  Profile p;
  p.name = "flashinfer-reference";
  p.summary =
      "FlashInfer run_moe_reference_fp4 (moe_layer_golden.json): [up; gate], true-division quantizer, "
      "fp32 combine in returned order, fp32 output";
  p.w13_order = W13Order::kUpGate;
  p.rsf_in_topk = true;
  p.routing_weight_dtype = WeightDtype::kFp32;
  p.renorm_epsilon = 1e-20;
  p.tie_rule = TieRule::kUnspecified;
  p.bf16_after_gemm1 = false;
  p.bf16_after_activation = true;
  p.bf16_after_gemm2 = false;
  p.bf16_output = false;
  p.quantizer = QuantizerVariant::kReference;
  p.zero_scale_rule = ZeroScaleRule::kScaleTest;
  p.per_expert_act_scales = false;
  p.combine = CombineAccum::kFp32Unrounded;
  p.shared_fused_weight_inv_rsf = true;
  p.sigmoid_form = SigmoidForm::kReciprocal;
  p.fast_math_exp = false;
  p.sources = {
      "w13_order [up; gate], one w13 global scale: flashinfer-ai/flashinfer "
      "tests/moe/trtllm_gen_fused_moe_utils.py "
      "(run_moe_dequant: activation_func(x1) * x0) [golden README moe_layer_golden.json]",
      "rsf inside weights, w/(sum + 1e-20)*rsf, always renormalized, torch.topk ties: "
      "flashinfer-ai/flashinfer "
      "tests/moe/trtllm_gen_fused_moe_utils.py (noaux_tc_ref, routing_reference) [golden README]",
      "quantizer true division, no 448 clamp (modelled as vLLM's clamp, see docs/profiles.md), zero test on "
      "the "
      "scale: flashinfer-ai/flashinfer tests/test_helpers/utils_fp4.py (ref_fp4_quant) [golden README]",
      "rounding points: fp32 GEMMs, bf16(act) before FC2 quantization, fp32 combine acc = fl(acc + fl(y*w)) "
      "in "
      "returned order, fp32 output: flashinfer-ai/flashinfer tests/moe/trtllm_gen_fused_moe_utils.py "
      "(run_moe_dequant) [golden README, Conventions (verified)]",
      "global activation scales (one c over all T*k rows): same file (quant_fp4_batches, c_global_sf) "
      "[golden README]",
      "fp8_* at their defaults (vLLM CUDA quantizer, fp32 round-to-nearest accumulation, one dot per "
      "block, Triton scale order): the built-in CPU kernels' FP8 arithmetic; this backend's FP8 block path "
      "is "
      "not modelled [SPEC-formats 1.2-1.4]",
  };
  return p;
}

// gpt-oss on Hopper through triton_kernels' matmul_ogs (vLLM Mxfp4Backend.TRITON, SGLang's
// triton_kernels runner): MXFP4 weights upcast to bf16, bf16 WGMMA with an fp32 accumulator, bias and
// SwiGLU fused into GEMM1's epilogue, the routing weight into GEMM2's, an fp32 finalize sum.
Profile triton_matmul_ogs() {
  Profile p;
  p.name = "triton-matmul-ogs";
  p.summary =
      "triton_kernels matmul_ogs (gpt-oss MXFP4 W4A16 on Hopper): interleaved w13, fp32 GEMM1 into the "
      "fused SwiGLU, bf16(acc*w) epilogue, fp32 finalize";
  p.w13_order = W13Order::kInterleaved;
  p.rsf_in_topk = false;
  p.routing_weight_dtype = WeightDtype::kFp32;
  p.renorm_epsilon = 0.0;
  p.tie_rule = TieRule::kLowerIndexWins;
  p.bf16_after_gemm1 = false;
  p.bf16_after_activation = true;
  p.silu_may_round_bf16 = false;
  p.bf16_after_gemm2 = false;
  p.bf16_output = true;
  p.combine = CombineAccum::kBf16EpilogueProducts;
  p.fast_math_exp = true;
  p.sources = {
      "w13_order interleaved: openai/gpt-oss gpt_oss/torch/model.py swiglu (gate = h1[..., ::2], lin = "
      "h1[..., 1::2]); triton-lang/triton python/triton_kernels/triton_kernels/swiglu_details/_swiglu.py "
      "_swiglu_fn (the fused activation of matmul_ogs) splits the same interleaved column pairs "
      "[SPEC-formats 3.4, 3.5a]",
      "routing: triton-lang/triton python/triton_kernels/triton_kernels/routing.py routing(logits, k, "
      "sm_first=False) -> topk(apply_softmax=True): top-k of the logits, then softmax over the k in fp32 "
      "(topk_details/_topk_forward.py, tl.softmax(y.to(float32)).to(x_dtype)), no epsilon; gate_scal has "
      "the logits' dtype (fp32 as moefuzz passes them; a bf16 router gives bf16 weights) [SPEC-formats 3.4]",
      "tie_rule lower index: triton_kernels topk_details/_topk_forward.py indx_to_key (N_EXPTS_PAD - indx: "
      "'stable top-k tie-breaks to value with smaller index')",
      "fast_math_exp: tl.softmax in the top-k kernel, and the fused SwiGLU's exp_ftz (ex2.approx.ftz.f32) "
      "and division (swiglu_details/_swiglu.py), are not IEEE [SPEC-formats 3.5a]",
      "rsf_in_topk=false: matmul_ogs has no routed scaling factor (gpt-oss has none, 1.0); a caller that "
      "had one would scale the finalized output [UNVERIFIED for rsf != 1]",
      "bf16_after_gemm1=false, bf16_after_activation: triton_kernels matmul_ogs_details/_matmul_ogs.py "
      "epilogue: acc (fp32, bf16 WGMMA) + bias, then the fused swiglu on the fp32 values, stored bf16 "
      "[SPEC-formats 3.5a]",
      "silu_may_round_bf16=false: triton_kernels swiglu_details/_swiglu.py compute_swiglu: s = gate / (1 + "
      "exp(-alpha gate)) in fp32, out = fma(s, lin, s) = s (lin + 1): beta is 1, as gpt-oss's [SPEC-formats "
      "3.5a]",
      "bf16_after_gemm2=false, combine bf16(acc*w) + fp32 sum: _matmul_ogs.py GEMM2 epilogue acc * gammas "
      "(the routing weights) stored bf16 per slot (split_k = 1 on Hopper: vllm-project/vllm#30528, "
      "sgl-project/sglang#16014); _finalize_matmul.py fp32 tl.sum over the active slots, one cast "
      "[SPEC-formats 3.5a]",
      "quantizer, zero_scale_rule, per_expert_act_scales, fp8_*: unused (W4A16: bf16 activations, MXFP4 "
      "weights); the built-in defaults [SPEC-formats 3.4]",
      "sigmoid_form, bias_dtype: unused (softmax routing, no correction bias) [SPEC-formats 3.4]",
      "expert biases (b1 before the SwiGLU, b2 before the routing weight, fp32 in vLLM) are a layer "
      "property, not the profile's: recipe expert_bias [SPEC-formats 3.4, 3.5a]",
  };
  return p;
}

}  // namespace

const std::vector<Profile>& all_profiles() {
  static const std::vector<Profile> profiles = {
      sglang_triton(), sglang_cutlass_fp4(),   flashinfer_cutlass(), trtllm_gen(),       vllm(),
      deepseek_ref(),  flashinfer_reference(), vllm_deepgemm(),      triton_matmul_ogs()};
  return profiles;
}

namespace {
// Built at load time, before main starts a thread: a plugin child forked by run_isolated while
// another thread was first building the table would wait forever on its guard
// (kernels/isolated_run.h). The function-local static stays, for callers during static init.
[[maybe_unused]] const std::vector<Profile>& kProfilesBuiltAtLoad = all_profiles();
}  // namespace

const Profile& profile_by_name(std::string_view name) {
  std::string known;
  for (const auto& p : all_profiles()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw InputError("unknown profile '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace moefuzz
