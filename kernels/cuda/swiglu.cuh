#pragma once
// The gated activation of one element (SPEC.md §3.3), shared by the NVFP4 (activation.cu) and FP8
// (fp8_activation.cu) stages: silu(gate) * up in fp32, optionally the clamped SwiGLU
// gate = min(gate, L), up = clamp(up, -L, L), out = gate * sigmoid(a * gate) * (up + b).
// exp is the correctly-rounded-within-2-ulp expf, not fast-math __expf (docs/gpu.md); explicit
// __fdiv_rn / __fmul_rn / __fadd_rn: no contraction, IEEE division.
//
// Example (device code):
//   const uint16_t h = float_to_bf16_bits(swiglu(bf16_bits_to_float(g), bf16_bits_to_float(u), cfg));
#include <cuda_runtime.h>

#include "kernels/cuda/moe_pipeline.h"

namespace moefuzz::cuda {

__device__ __forceinline__ float swiglu(float gate, float up, const PipelineConfig& cfg) {
  if (cfg.swiglu_clamped) {
    gate = fminf(gate, cfg.swiglu_limit);
    up = fmaxf(fminf(up, cfg.swiglu_limit), -cfg.swiglu_limit);
  }
  const float silu = __fdiv_rn(gate, __fadd_rn(1.0f, expf(-__fmul_rn(cfg.swiglu_alpha, gate))));
  return __fmul_rn(silu, __fadd_rn(up, cfg.swiglu_beta));
}

}  // namespace moefuzz::cuda
