// FC1 input quantization: each permuted row (one (token, slot) pair) is the token's bf16 hidden row
// quantized to NVFP4 with its expert's activation scale S_q (global or per expert, SPEC.md §3.2).
// One thread per 16-element block; padding rows are written as zeros.
#include <cuda_runtime.h>

#include "kernels/cuda/launch.h"
#include "kernels/cuda/nvfp4_block.cuh"

namespace moefuzz::cuda {
namespace {

__global__ void quantize_fc1_kernel(PipelineConfig cfg, DeviceBuffers b, int64_t max_rows) {
  const int64_t H = cfg.hidden, blocks_per_row = H / 16;
  const int64_t total_rows = b.expert_offset[cfg.total_experts()];
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= max_rows * blocks_per_row) return;
  const int64_t row = i / blocks_per_row, kb = i % blocks_per_row;
  if (row >= total_rows) return;
  const int32_t pair = b.row_pair[row];
  float x[16];
  float s_q = 1.0f;
  if (pair >= 0) {
    const int64_t t = pair / cfg.all_slots();
    s_q = b.a1_scale_q[b.ids[pair]];
    const uint4* src = reinterpret_cast<const uint4*>(b.hidden + t * H + kb * 16);
    const uint4 v0 = src[0], v1 = src[1];
    const uint32_t w[8] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w};
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      x[2 * j] = __uint_as_float(w[j] << 16);
      x[2 * j + 1] = __uint_as_float(w[j] & 0xFFFF0000u);
    }
  } else {
#pragma unroll
    for (int j = 0; j < 16; ++j) x[j] = 0.0f;
  }
  Nvfp4Block q = quantize_block(x, s_q, cfg.zero_scale_by_vecmax);
  if (pair < 0) q.scale = 0;
  store_block(q, row, kb, H, b.a1_packed, b.a1_sf, b.a1_dq);
}

}  // namespace

void launch_quantize_fc1(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s) {
  const int64_t n = cfg.max_rows() * (cfg.hidden / 16);
  if (n == 0) return;
  constexpr int kThreads = 256;
  quantize_fc1_kernel<<<static_cast<unsigned>((n + kThreads - 1) / kThreads), kThreads, 0, s>>>(
      cfg, b, cfg.max_rows());
  MOEFUZZ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace moefuzz::cuda
