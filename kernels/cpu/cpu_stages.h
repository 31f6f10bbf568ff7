#pragma once
// The stages of the optimized CPU MoE pipeline (kernel `cpu`), as free functions on plain data, so
// that other kernels (plugins, the composition matrix, mutants) can run any prefix/suffix of the
// CPU pipeline around their own stage. The pipeline follows SPEC.md §3.7:
//
//   route -> quantize FC1 input (NVFP4, per expanded row) -> gemm1 (semantic [gate | up])
//         -> SiLU*mul -> quantize FC2 input -> gemm2 -> combine (x rsf here or in route) + shared
//
// Expanded rows: row r = t * slots + s holds token t routed to expert ids[r] (fused shared experts
// are slots k.. with ids E + j). Every per-row tensor below is indexed that way, like LayerResult.
// Semantics (rounding points, rsf placement, quantizer variant, combine accumulation) come from a
// CpuConfig, which make_cpu_config derives from the recipe and the claimed Profile (core/profile.h).
//
// Independence: this file and its .cpp files use only core/ number formats; never oracles/.
//
// Example (compose a plugin's gemm1 with the CPU stages):
//   const moefuzz::Profile& p = moefuzz::profile_by_name("sglang-cutlass-fp4");
//   moefuzz::cpu::CpuConfig cfg = moefuzz::cpu::make_cpu_config(c.recipe, p, opts);
//   moefuzz::RoutingDecision route = moefuzz::cpu::cpu_route(c, cfg);
//   auto fc1 = moefuzz::cpu::cpu_quantize_activations(c, route, cfg);
//   std::vector<float> g1 = my_plugin_gemm1(...);                        // [rows, 2I] [gate | up]
//   std::vector<float> act = moefuzz::cpu::cpu_activation(g1, route.tokens * route.slots, cfg);
//   auto fc2 = moefuzz::cpu::cpu_quantize_fc2_input(c, route, act, cfg);
//   std::vector<float> g2 = moefuzz::cpu::cpu_gemm2(c, route, fc2, act, cfg);
//   std::vector<float> shared = moefuzz::cpu::cpu_shared_experts(c, cfg);
//   std::vector<float> out(c.recipe.shape.tokens * c.recipe.shape.hidden);
//   moefuzz::cpu::cpu_combine(g2, route, shared, cfg, out);
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/case.h"
#include "core/fp8_group_quant.h"
#include "core/index_products.h"
#include "core/layer_io.h"
#include "core/profile.h"
#include "core/recipe.h"

namespace moefuzz {
struct RunOptions;  // kernels/kernel.h
}

namespace moefuzz::cpu {

// Deliberate deviations from the correct pipeline: each mutant (kernels/mutants/) sets one flag.
// All false = the correct `cpu` kernel. Each flag cites its BUGZOO.md row.
struct CpuDeviation {
  bool group_mask_zero = false;            // Z3: unselected groups masked with 0 instead of -inf
  bool raw_scores_without_renorm = false;  // Z4: renormalize=false returns raw logits as weights
  bool no_renorm_epsilon = false;          // Z5: w / sum without epsilon (0/0 NaN on underflow)
  bool racy_combine = false;               // Z6: a lost update on odd-numbered runs (run_index)
  bool duplicate_id_drops_slot = false;    // Z8: a repeated id in a token's row is skipped
  bool store_tile_overhang = false;        // Z9: output store writes whole N tiles past the row end
  bool swizzle_tail_transposed = false;    // Z10: partial last 128-row scale tile read transposed
  bool up_uses_gate_global = false;        // Z11: up half dequantized with the gate's global scale
  bool expert0_weight_scales = false;      // Z12: every expert reads expert 0's block scales
  bool bf16_truncated_products =
      false;  // Z13: output bf16 conversion `(bits + 0x7FFF) >> 16` (ties toward zero)
  bool nibble_order_swapped = false;    // format: quantizer packs element 0 in the HIGH nibble
  bool e4m3_truncate = false;           // format: E4M3 block scale truncated instead of RNE
  bool e2m1_ties_away = false;          // format: E2M1 ties rounded away from zero
  bool e4m3_no_saturation = false;      // format: block scale > 448 becomes NaN (no satfinite)
  bool negative_zero_nonzero = false;   // format: code 0x8 decoded as -0.5 instead of -0
  bool accumulate_into_output = false;  // CANARY: adds into the output buffer without clearing it
  bool writes_input = false;            // CANARY: writes the quantized activations back into hidden
  // Z7 / OVF: the width each index product (core/index_products.h) is formed in; all 64-bit here.
  IndexWidths index_widths{};
  bool weight_applied_twice = false;       // WEIGHT1: w in the GEMM2 epilogue AND in the weighted sum
  bool dynamic_act_scale = false;          // BATCH: FC1 input global scale from the batch's amax
  bool tactic1_group_scale = false;        // TACTIC: tactic 1 uses its K tile's first block scale for all 4
  bool fp16_softmax_no_max = false;        // SHIFT: softmax exp(x) of raw logits in fp16 (no max subtraction)
  bool weight_twice_unnormalized = false;  // WEIGHT1: renormalize=false path applies the probability twice
  bool autotune_switch = false;            // REPEAT: a shape's third call switches to the tuned tactic 1
  bool bf16_accumulator_default = false;   // ORACLE: tactic 0 keeps its GEMM accumulator in bf16
  bool down_swizzle_tail_transposed = false;  // PAD: Z10 on w2 only (H rows not a multiple of 128)
  bool down_global_twice = false;             // GSCALE: w2's global dequant scale multiplied twice
  bool last_expert_neighbour_down = false;    // PERM: the last expert's w2 read from expert E-2
  bool ragged_k_tile_dropped = false;         // SPEC-formats B7: bf16 GEMMs skip a ragged last 64-wide K tile
  bool mx_scale_tail_unmasked = false;        // SPEC-formats M1: MXFP4 last scale read as 0xFF (K % 64 != 0)
  bool mx_nan_sentinel_on_float = false;      // SPEC-formats M4: E8M0 NaN tested as decoded == 128
  bool fc1_bias_dropped = false;              // SPEC-formats M5: FC1 (gate/up) bias accepted, never added
  // FP8 block W8A8 (SPEC-formats.md §4 F-rows; kernels/cpu/cpu_fp8.cpp).
  bool fp8_amax_floor_as_ceiling = false;   // F1: activation amax min(amax, 1e-4) instead of a floor
  bool fp8_ue8m0_to_nearest = false;        // F4: UE8M0 activation scale rounded to the nearest power of 2
  bool fp8_act_ue8m0_ignored = false;       // F5: fp32 activation scales under scale_fmt ue8m0
  bool fp8_act_group_64 = false;            // quantizer groups of 64, GEMM one scale per 128 (stride)
  bool fp8_per_tensor_act_scale = false;    // one activation scale for the whole tensor
  bool fp8_scale_block_row_offset = false;  // F9: up half's weight-scale block row one too early in w13
  bool fp8_scales_transposed = false;       // weight scales [nb][kb] read as [kb][nb]
};

// Everything a stage needs to know, as plain data (derived once per run).
struct CpuConfig {
  // Shape (SPEC.md notation).
  int64_t tokens = 0, hidden = 0, inter = 0, experts = 0, top_k = 0, shared_experts = 0;
  int64_t n_group = 1, topk_group = 1;
  int64_t slots = 0;  // top_k + fused shared experts
  // Routing (SPEC.md §2).
  RoutingMode mode = RoutingMode::kSoftmax;
  ScoreFunc hash_score = ScoreFunc::kSqrtSoftplus;
  bool renormalize = true;
  bool correction_bias = true;
  float rsf = 1.0f;                  // routed_scaling_factor as fp32
  bool topk_applies_rsf = true;      // weights already carry rsf (Profile::rsf_in_topk)
  bool combine_applies_rsf = false;  // the sum-reduce multiplies rsf; exactly one of the two is correct
  float renorm_epsilon = 1e-20f;     // w / (sum + eps)
  bool weights_bf16 = false;         // routing weights emitted in bf16 (trtllm-gen)
  SharedFusion shared_fusion = SharedFusion::kSeparate;
  bool shared_weight_inv_rsf = true;  // fused shared weight 1/rsf before the rsf multiply (else 1)
  // Expert MLP (SPEC.md §1.5, §3).
  bool w4a4 = true;  // false: W4A16 (bf16 activations x FP4 weights) or FP8
  // FP8 block W8A8 (weight_format fp8_block): the GEMM inputs are quantized per token group with this
  // variant (UE8M0 scales when fp8_ue8m0) and the GEMMs are cpu_fp8_gemm1/2 (cpu_fp8.cpp).
  bool fp8 = false;
  bool fp8_ue8m0 = false;
  Fp8GroupQuantVariant fp8_act_quant = Fp8GroupQuantVariant::kVllmCuda;
  W13Order w13_order = W13Order::kGateUp;  // internal w13 layout; outputs are always semantic
  QuantizerVariant quantizer = QuantizerVariant::kFastMath;
  ZeroScaleRule zero_rule = ZeroScaleRule::kVecMaxTest;
  bool bf16_after_gemm1 = true, bf16_after_activation = true, bf16_after_gemm2 = true, bf16_output = true;
  CombineAccum combine = CombineAccum::kFp32SlotOrder;
  float swiglu_limit = 0, swiglu_alpha = 1, swiglu_beta = 0;  // limit: +inf = unclamped
  // Execution.
  int tactic = 0;  // 0: 16-element K blocks summed in order; 1: 4 interleaved partial sums per 64-K tile
  int threads = 1;
  IndexWindow window;  // RunOptions::index_window: where this case sits in the logical index space
  CpuDeviation dev;
  int64_t run_index = 0;  // only the racy-combine mutant reads it
};

// Number of tactics the CPU pipeline implements (RunOptions::tactic in [0, kCpuTactics)).
inline constexpr int kCpuTactics = 2;

// Semantics from the recipe and the claimed profile; execution from opts. Throws InputError for a
// tactic out of range.
CpuConfig make_cpu_config(const CaseRecipe& recipe, const Profile& profile, const RunOptions& opts);

// "" when the CPU pipeline can run the recipe, else why not.
std::string cpu_supports(const CaseRecipe& recipe);

// Route (SPEC.md §2): ids and weights [T, slots] as produced (weights per oracles/routing_ref.h:
// renormalized if asked, x rsf iff topk_applies_rsf, fused shared experts E+j with weight 1/rsf).
RoutingDecision cpu_route(const Case& c, const CpuConfig& cfg);

// NVFP4 quantization of the layer input for every expanded row with that row's expert's a1 scale
// (SPEC.md §1.5, fast-math emulation). nullopt for W4A16.
std::optional<QuantizedRows> cpu_quantize_activations(const Case& c, const RoutingDecision& route,
                                                      const CpuConfig& cfg);

// GEMM1 per expanded row: [rows, 2I], semantic [gate | up], after the bf16 rounding point.
// `fc1_input` nullopt = W4A16 (reads c.hidden directly).
std::vector<float> cpu_gemm1(const Case& c, const RoutingDecision& route,
                             const std::optional<QuantizedRows>& fc1_input, const CpuConfig& cfg);

// SiLU(gate) * up with the SwiGLU clamp/alpha/beta: [rows, I] after the bf16 rounding point.
std::vector<float> cpu_activation(std::span<const float> gemm1, int64_t rows, const CpuConfig& cfg);

// NVFP4 quantization of the activation with each row's expert's a2 scale. nullopt for W4A16.
std::optional<QuantizedRows> cpu_quantize_fc2_input(const Case& c, const RoutingDecision& route,
                                                    std::span<const float> activation, const CpuConfig& cfg);

// GEMM2 per expanded row: [rows, H] after the bf16 rounding point. Reads fc2_input (W4A4) or
// activation (W4A16).
std::vector<float> cpu_gemm2(const Case& c, const RoutingDecision& route,
                             const std::optional<QuantizedRows>& fc2_input, std::span<const float> activation,
                             const CpuConfig& cfg);

// FP8 W8A8 (cfg.fp8; SPEC-formats.md §1, kernels/cpu/cpu_fp8.cpp): the GEMM inputs quantized per
// expanded row and 128-column group (dynamic fp32 scales; core/fp8_group_quant.h), and the block-scaled
// GEMMs (per 128-block exact E4M3 dot rounded to fp32, then fl(fl(P sa) sb) added in fp32, the bf16
// rounding point of the profile). Outputs are shaped as cpu_gemm1 / cpu_gemm2's.
Fp8GroupQuantized cpu_fp8_quantize_fc1(const Case& c, const RoutingDecision& route, const CpuConfig& cfg);
Fp8GroupQuantized cpu_fp8_quantize_fc2(const RoutingDecision& route, std::span<const float> activation,
                                       const CpuConfig& cfg);
std::vector<float> cpu_fp8_gemm1(const Case& c, const RoutingDecision& route, const Fp8GroupQuantized& fc1,
                                 const CpuConfig& cfg);
std::vector<float> cpu_fp8_gemm2(const Case& c, const RoutingDecision& route, const Fp8GroupQuantized& fc2,
                                 const CpuConfig& cfg);

// Separate shared experts (SharedFusion::kSeparate): [T, H], each shared expert run through the same
// MLP (the recipe's formats) on every token, their bf16 outputs summed in fp32 then rounded to bf16. Empty
// when there are none or they are fused into the top-k.
std::vector<float> cpu_shared_experts(const Case& c, const CpuConfig& cfg);

// Combine (SPEC.md §3.6): out[t] = round(sum_s w[t,s] * gemm2[t,s]) (x rsf iff combine_applies_rsf),
// then + shared[t] (bf16 add). `out` is [T, H]; it may be a view into a guarded buffer (CANARY).
void cpu_combine(std::span<const float> gemm2, const RoutingDecision& route, std::span<const float> shared,
                 const CpuConfig& cfg, std::span<float> out);

// The whole layer: every stage above, intermediates stored in `result`, the output written to
// `output` ([T, H]; normally result.output's storage, or a guarded view).
void cpu_run_layer(const Case& c, const CpuConfig& cfg, LayerResult& result, std::span<float> output);

}  // namespace moefuzz::cpu
