// SiLU*mul (SPEC.md §3.3) and FC2 input quantization (§3.4), fused: per permuted row and 16-column
// block, h = bf16(silu(gate) * up) from the bf16 GEMM1 output (gate = the half the profile's w13
// order says), then NVFP4 quantization of the bf16 h with the expert's a2 scale (§1.5; the value is
// rounded to bf16 first, as CUTLASS quantizePackedFPXValue does).
// The element's SiLU*mul (and optional SwiGLU clamp) is swiglu.cuh's.
#include <cuda_runtime.h>

#include "kernels/cuda/launch.h"
#include "kernels/cuda/nvfp4_block.cuh"
#include "kernels/cuda/swiglu.cuh"

namespace moefuzz::cuda {
namespace {

__global__ void activation_kernel(PipelineConfig cfg, DeviceBuffers b, int64_t max_rows) {
  const int64_t I = cfg.inter, blocks_per_row = I / 16;
  const int64_t total_rows = b.expert_offset[cfg.total_experts()];
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= max_rows * blocks_per_row) return;
  const int64_t row = i / blocks_per_row, kb = i % blocks_per_row;
  if (row >= total_rows) return;
  const int32_t pair = b.row_pair[row];
  const uint16_t* g1 = b.g1 + row * (2 * I);
  const uint16_t* gate = g1 + (cfg.up_first ? I : 0) + kb * 16;
  const uint16_t* up = g1 + (cfg.up_first ? 0 : I) + kb * 16;
  float h[16];
  uint32_t hb[8];
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const float v = swiglu(bf16_bits_to_float(gate[j]), bf16_bits_to_float(up[j]), cfg);
    const uint16_t bits = pair >= 0 ? float_to_bf16_bits(v) : 0;
    h[j] = bf16_bits_to_float(bits);
    if (j % 2 == 0)
      hb[j / 2] = bits;
    else
      hb[j / 2] |= static_cast<uint32_t>(bits) << 16;
  }
  uint4* dst = reinterpret_cast<uint4*>(b.act + row * I + kb * 16);
  dst[0] = make_uint4(hb[0], hb[1], hb[2], hb[3]);
  dst[1] = make_uint4(hb[4], hb[5], hb[6], hb[7]);
  const float s_q = pair >= 0 ? b.a2_scale_q[b.ids[pair]] : 1.0f;
  Nvfp4Block q = quantize_block(h, s_q, cfg.zero_scale_by_vecmax);
  if (pair < 0) q.scale = 0;
  store_block(q, row, kb, I, b.a2_packed, b.a2_sf, b.a2_dq);
}

}  // namespace

void launch_activation(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s) {
  const int64_t n = cfg.max_rows() * (cfg.inter / 16);
  if (n == 0) return;
  constexpr int kThreads = 256;
  activation_kernel<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads, 0, s>>>(cfg, b,
                                                                                              cfg.max_rows());
  MOEFUZZ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace moefuzz::cuda
