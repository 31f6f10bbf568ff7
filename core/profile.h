#pragma once
// Profile: the semantic contract a backend implements, as data (SPEC.md; one row per backend, each
// field with its source in core/profile.cpp and docs/profiles.md). The oracle follows the profile; a kernel
// declares the profile it claims. A profile is a documented contract, never an observed behaviour: where an
// upstream reference violates the layer's semantics, the invariants flag it.
//
// Lives in core (not oracles) because kernels and oracles both read it and must not depend on each
// other (docs/decisions.md).
//
// Example:
//   const moefuzz::Profile& p = moefuzz::profile_by_name("sglang-cutlass-fp4");  // throws InputError
//   if (p.w13_order == moefuzz::W13Order::kUpGate) { ... }
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/fp8_accum_bits.h"
#include "core/fp8_group_quant.h"

namespace moefuzz {

// The layout of a backend's fused w13 (gate and up) weights: halves [gate; up] or [up; gate], or rows
// interleaved (row 2i gate row i, row 2i + 1 up row i: gpt-oss checkpoints, triton_kernels' fused SwiGLU).
enum class W13Order : uint8_t { kGateUp, kUpGate, kInterleaved };
enum class WeightDtype : uint8_t { kFp32, kBf16 };
enum class QuantizerVariant : uint8_t {
  kFastMath,   // FlashInfer/TRT-LLM default: rcp.approx, SPEC.md §1.5 step 2-3
  kExact,      // FLASHINFER_DISABLE_FP4_QUANT_FAST_MATH: __fdiv_rn, (S * RN(1/6)) association
  kReference,  // the torch references (vLLM ref_nvfp4_quant / FlashInfer ref_fp4_quant): true division
};
enum class ZeroScaleRule : uint8_t {
  kVecMaxTest,  // FlashInfer/TRT-LLM: outScale = vecMax != 0 ? rcp(..) : 0 (E4M3 underflow -> Inf -> codes
                // +-6)
  kScaleTest,   // vLLM/sgl-kernel: outScale = sfd != 0 ? .. : 0 (underflow -> codes 0)
};
enum class CombineAccum : uint8_t {
  kFp32SlotOrder,         // fp32 accumulate in slot order, bf16 out (CUTLASS finalize, trtllm-gen finalize)
  kBf16Atomics,           // fused finalize: bf16 products added with bf16 atomics, any order
  kBf16Products,          // SGLang cutlass_moe_fp4: bf16(y * bf16(w)), summed in fp32, bf16 out
  kFp32Unrounded,         // FlashInfer reference: fp32 output, no final bf16 rounding
  kBf16EpilogueProducts,  // SGLang Triton: bf16(fp32_acc * w) in the GEMM2 epilogue (w fp32, not
                          // rounded), fp32 sum in slot order, x rsf if not in top-k, bf16 out
};
enum class TieRule : uint8_t { kLowerIndexWins, kUnspecified };
// How the kernel evaluates sigmoid(x) in fp32 (SPEC.md §2.1 table). The routing oracle derives the
// score error bound from it (oracles/routing_bounds.h): the reciprocal form is accurate relative to
// s, the tanh form only absolutely (0.5*tanhf(0.5x)+0.5 is exactly 0 below x ~ -17).
enum class SigmoidForm : uint8_t {
  kReciprocal,  // 1/(1+expf(-x)) or torch.sigmoid (sgl-kernel moe_fused_gate, torch references)
  kTanh,        // 0.5f*tanhf(0.5f*x)+0.5f (FlashInfer noAuxTc, trtllm-gen routing)
};

// Where an FP8 block-scaled GEMM applies its two fp32 scales to a block's dot P (SPEC-formats.md
// §1.3-1.4; oracles/fp8_block_gemm.h (b) bounds both, so the oracle's verdict does not depend on it).
enum class Fp8ScaleOrder : uint8_t {
  kTriton,    // fl(fl(P * sa) * sb): Triton fused_moe, DeepSeek fp8_gemm_kernel
  kDeepGemm,  // fl(fl(sa * sb) * P): DeepGEMM sm90_fp8_gemm_1d2d
};

struct Profile {
  std::string name;
  std::string summary;
  W13Order w13_order = W13Order::kGateUp;
  bool rsf_in_topk = true;  // routed scale multiplied by the top-k op (else by the combine)
  WeightDtype routing_weight_dtype = WeightDtype::kFp32;
  double renorm_epsilon = 0.0;  // w / (sum + eps)
  TieRule tie_rule = TieRule::kLowerIndexWins;
  // Rounding points (true = the value is rounded to bf16 there).
  bool bf16_after_gemm1 = true;
  bool bf16_after_activation = true;  // SiLU*mul result rounded to bf16 before FC2 quantization
  // silu(gate) MAY be rounded to bf16 before it multiplies up: h = bf16(bf16(silu(g)) * u). Admits both
  // forms (the oracle widens the activation by that rounding), for backends whose path depends on
  // deployment flags (SGLang's Triton runner: sgl_kernel silu_and_mul rounds once, act_and_mul_triton
  // under expert parallelism twice; SPEC-formats.md §2.2).
  bool silu_may_round_bf16 = false;
  bool bf16_after_gemm2 = true;
  bool bf16_output = true;
  QuantizerVariant quantizer = QuantizerVariant::kFastMath;
  ZeroScaleRule zero_scale_rule = ZeroScaleRule::kVecMaxTest;
  bool per_expert_act_scales = false;  // a1/a2 scales per expert (SGLang CUTLASS) or one global
  CombineAccum combine = CombineAccum::kFp32SlotOrder;
  bool shared_fused_weight_inv_rsf = true;  // fused shared expert weight 1/rsf before the rsf multiply
  // Routing arithmetic (bounds only; the oracle itself computes in 50 digits).
  SigmoidForm sigmoid_form = SigmoidForm::kReciprocal;
  bool fast_math_exp = false;  // __expf / __fdividef (-use_fast_math builds), else precise expf
  WeightDtype bias_dtype = WeightDtype::kFp32;  // e_score_correction_bias as the kernel reads it
  // FP8 block-scaled W8A8 layers (weight_format fp8_block; SPEC-formats.md §1.2-1.4; the oracle:
  // oracles/fp8_act_envelope.h, oracles/fp8_block_gemm.h). The defaults are the built-in CPU kernels'
  // contract: vLLM's CUDA activation quantizer, fp32 round-to-nearest accumulation, one dot per block.
  // How the kernel computes its dynamic per-token-group activation scales and codes (kTriton: not IEEE,
  // admitted within 2 scale ulps and one code).
  Fp8GroupQuantVariant fp8_act_quant = Fp8GroupQuantVariant::kVllmCuda;
  // Bits the in-block accumulator keeps (oracles/fp8_block_gemm.h (a)): 24 = fp32 round to nearest,
  // kHopperFp8MmaAccumBits (13, measured) = the Hopper FP8 tensor core.
  int fp8_mma_accum_bits = kFp32RoundToNearestAccumBits;
  // Fresh-accumulator dots per 128-element K block (Triton 128 / BLOCK_SIZE_K).
  int fp8_dots_per_block = 1;
  Fp8ScaleOrder fp8_scale_order = Fp8ScaleOrder::kTriton;
  std::vector<std::string> sources;  // citations: repo + path (+ function) per field
};

// The built-in profiles (core/profile.cpp; each row cites its sources).
const std::vector<Profile>& all_profiles();
// Throws InputError naming the known profiles.
const Profile& profile_by_name(std::string_view name);

}  // namespace moefuzz
