// Mutants of layers with MXFP4 weights (weight_format mxfp4, SPEC-formats.md §4 "MXFP4"). Their bugs live
// on MXFP4-only paths (gpt-oss kernels), so like those kernels they decline the other weight formats.
#include "kernels/mutants/mutant_entry.h"

namespace moefuzz::mutants {

void add_mxfp4_weight_mutants(std::vector<KernelEntry>& out) {
  // SPEC-formats M1 (vllm-project/vllm#47303): an unmasked load of the Hopper-swizzled scales past K
  // read 0xFF, so the last block became NaN. Here the scales are read in pairs of blocks and the last
  // block of a K that is not a multiple of 64 (H or I = 32 mod 64) reads 0xFF: its rows' outputs are
  // NaN where the oracle's are finite. (PAD cannot see it: it pads K to a multiple of 128, and it
  // leaves tokens whose unpadded output is already NaN alone.)
  out.push_back(mutant_entry(
      "mutant/m1-mx-scale-tail-unmasked",
      "SPEC-formats M1: MXFP4 scale load past K reads 0xFF (last block NaN)", {"ORACLE", "FINITE"},
      [](cpu::CpuConfig& c) { c.dev.mx_scale_tail_unmasked = true; },
      only_weight_format(WeightFormat::kMxfp4)));
  // SPEC-formats M4 (sgl-project/sglang#25519): the E8M0 NaN sentinel tested on the decoded float
  // (`== 128`) instead of on the byte: a block with scale 2^7 (code 134) becomes NaN and 0xFF decodes
  // to +Inf (by exponent shift). Killed by ORACLE: a NaN GEMM1 element is often clamped to a finite
  // value by the SwiGLU limit (fminf(NaN, limit) = limit), so the output need not be NaN.
  out.push_back(mutant_entry(
      "mutant/m4-mx-nan-sentinel-on-float", "SPEC-formats M4: E8M0 scale 128.0 decoded as NaN, 0xFF as +Inf",
      {"ORACLE"}, [](cpu::CpuConfig& c) { c.dev.mx_nan_sentinel_on_float = true; },
      only_weight_format(WeightFormat::kMxfp4)));
  // SPEC-formats M5 (flashinfer-ai/flashinfer#3423): the FC1 bias is accepted but dropped (GPT-OSS
  // accuracy fell). Runs on cases with expert biases only (recipe expert_bias: bf16 or MXFP4 weights),
  // where it is a gpt-oss path; the GEMM1 output misses b1, which ORACLE sees unless the SwiGLU clamp
  // or an all-zero bias hides it.
  out.push_back(mutant_entry(
      "mutant/m5-fc1-bias-dropped", "SPEC-formats M5: FC1 (gate/up) expert bias accepted but never added",
      {"ORACLE"}, [](cpu::CpuConfig& c) { c.dev.fc1_bias_dropped = true; },
      [](const CaseRecipe& r) {
        return r.expert_bias ? std::string()
                             : std::string("runs on cases with expert biases only (expert_bias)");
      }));
}

}  // namespace moefuzz::mutants
