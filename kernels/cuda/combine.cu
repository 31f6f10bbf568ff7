// Combine (SPEC.md §3.6). kFp32SlotOrder (CUTLASS finalizeMoeRoutingKernel): out[t] = bf16( sum over slots in
// slot order of fl(w[t, s] * y[t, s]) in fp32 [* rsf when the profile applies it here] ), then, for a
// separately computed shared expert. kBf16Products replaces each term by bf16(y * bf16(w)).
// For a separately computed shared expert, the bf16 add out = bf16(out + shared(x)) (§2.4). Explicit
// __fmul_rn / __fadd_rn: no FMA contraction, so the host reproduces it bit for bit.
#include <cuda_runtime.h>

#include "kernels/cuda/device_formats.cuh"
#include "kernels/cuda/launch.h"

namespace moefuzz::cuda {
namespace {

__global__ void combine_kernel(PipelineConfig cfg, DeviceBuffers b) {
  const int64_t H = cfg.hidden;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= cfg.tokens * H) return;
  const int64_t t = i / H, h = i % H;
  const int64_t S = cfg.all_slots(), routed = cfg.routed_slots();
  float acc = 0.0f;
  for (int64_t s = 0; s < routed; ++s) {
    const int64_t row = b.pair_row[t * S + s];
    const float y = bf16_bits_to_float(b.y[row * H + h]);
    const float w = b.weights[t * S + s];
    // kBf16Products (SGLang cutlass_moe_fp4): bf16(y * bf16(w)), summed in fp32 (slot order here).
    const float term =
        cfg.combine_bf16_products
            ? bf16_bits_to_float(float_to_bf16_bits(__fmul_rn(y, bf16_bits_to_float(float_to_bf16_bits(w)))))
            : __fmul_rn(w, y);
    acc = __fadd_rn(acc, term);
  }
  if (!cfg.rsf_in_topk || (cfg.deviation & kDevRsfTwice)) acc = __fmul_rn(acc, cfg.rsf);
  float out = bf16_bits_to_float(float_to_bf16_bits(acc));
  for (int64_t s = routed; s < S; ++s) {
    const int64_t row = b.pair_row[t * S + s];
    out = bf16_bits_to_float(float_to_bf16_bits(__fadd_rn(out, bf16_bits_to_float(b.y[row * H + h]))));
  }
  b.out[i] = float_to_bf16_bits(out);
}

}  // namespace

void launch_combine(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s) {
  const int64_t n = cfg.tokens * cfg.hidden;
  if (n == 0) return;
  constexpr int kThreads = 256;
  combine_kernel<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads, 0, s>>>(cfg, b);
  MOEFUZZ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace moefuzz::cuda
