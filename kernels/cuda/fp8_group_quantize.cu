// FP8 FC1 input quantization (SPEC-formats.md §1.2): each permuted row (one (token, slot) pair) is
// the token's bf16 hidden row, quantized per 128 columns by fp8_group_quant.cuh (dynamic scales: the
// row alone decides them, whatever the expert). One warp per (row, group); padding rows are written
// as zero codes with scale 0, so the GEMM reads zeros there.
#include <cuda_runtime.h>

#include <stdexcept>

#include "kernels/cuda/fp8_device_stages.h"
#include "kernels/cuda/fp8_group_quant.cuh"
#include "kernels/cuda/launch.h"

namespace moefuzz::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;

__global__ void fp8_quantize_fc1_kernel(PipelineConfig cfg, DeviceBuffers b, int64_t max_rows) {
  const int64_t H = cfg.hidden, groups = H / kFp8GroupSize;
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (warp >= max_rows * groups) return;  // whole warps: the shuffles below see all 32 lanes
  const int64_t row = warp / groups, g = warp % groups;
  if (row >= b.expert_offset[cfg.total_experts()]) return;
  const int32_t pair = b.row_pair[row];
  const int64_t col = g * kFp8GroupSize + lane * kFp8PerLane;
  uint32_t* codes = reinterpret_cast<uint32_t*>(b.a1_fp8 + row * H + col);
  float* scale = b.a1_fp8_scale + row * groups + g;
  if (pair < 0) {
    *codes = 0u;
    if (lane == 0) *scale = 0.0f;
    return;
  }
  const int64_t t = pair / cfg.all_slots();
  const uint2 raw = *reinterpret_cast<const uint2*>(b.hidden + t * H + col);
  const float x[kFp8PerLane] = {__uint_as_float(raw.x << 16), __uint_as_float(raw.x & 0xFFFF0000u),
                                __uint_as_float(raw.y << 16), __uint_as_float(raw.y & 0xFFFF0000u)};
  const Fp8GroupCodes q = quantize_fp8_group_warp(x, cfg.fp8_ue8m0);
  *codes = q.codes;
  if (lane == 0) *scale = q.scale;
}

// quantize_fp8_groups_on_device: fp32 rows, one warp per group.
__global__ void fp8_quantize_rows_kernel(const float* x, int64_t rows, int64_t cols, bool ue8m0,
                                         uint8_t* codes, float* scales) {
  const int64_t groups = cols / kFp8GroupSize;
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (warp >= rows * groups) return;
  const int64_t at = warp * kFp8GroupSize + lane * kFp8PerLane;  // row * cols + g * 128 + lane * 4
  float v[kFp8PerLane];
#pragma unroll
  for (int j = 0; j < kFp8PerLane; ++j) v[j] = x[at + j];
  const Fp8GroupCodes q = quantize_fp8_group_warp(v, ue8m0);
  *reinterpret_cast<uint32_t*>(codes + at) = q.codes;
  if (lane == 0) scales[warp] = q.scale;
}

}  // namespace

void launch_fp8_quantize_fc1(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s) {
  const int64_t warps = cfg.max_rows() * (cfg.hidden / kFp8GroupSize);
  if (warps == 0) return;
  fp8_quantize_fc1_kernel<<<static_cast<unsigned>((warps + kWarpsPerBlock - 1) / kWarpsPerBlock), kThreads, 0,
                            s>>>(cfg, b, cfg.max_rows());
  MOEFUZZ_CUDA_CHECK(cudaGetLastError());
}

Fp8GroupQuantized quantize_fp8_groups_on_device(std::span<const float> x, int64_t rows, int64_t cols,
                                                bool ue8m0) {
  if (rows < 1 || cols < kFp8GroupSize || cols % kFp8GroupSize != 0 ||
      x.size() != static_cast<size_t>(rows * cols))
    throw std::invalid_argument("quantize_fp8_groups_on_device: x [rows, cols], cols a multiple of 128");
  Fp8GroupQuantized q;
  q.rows = rows;
  q.cols = cols;
  q.group = kFp8GroupSize;
  q.codes.resize(static_cast<size_t>(rows * cols));
  q.scales.resize(static_cast<size_t>(rows * (cols / kFp8GroupSize)));
  float *dx = nullptr, *ds = nullptr;
  uint8_t* dc = nullptr;
  MOEFUZZ_CUDA_CHECK(cudaMalloc(&dx, x.size() * sizeof(float)));
  MOEFUZZ_CUDA_CHECK(cudaMalloc(&dc, q.codes.size()));
  MOEFUZZ_CUDA_CHECK(cudaMalloc(&ds, q.scales.size() * sizeof(float)));
  MOEFUZZ_CUDA_CHECK(cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  const int64_t warps = rows * (cols / kFp8GroupSize);
  fp8_quantize_rows_kernel<<<static_cast<unsigned>((warps + kWarpsPerBlock - 1) / kWarpsPerBlock),
                             kThreads>>>(dx, rows, cols, ue8m0, dc, ds);
  MOEFUZZ_CUDA_CHECK(cudaGetLastError());
  MOEFUZZ_CUDA_CHECK(cudaMemcpy(q.codes.data(), dc, q.codes.size(), cudaMemcpyDeviceToHost));
  MOEFUZZ_CUDA_CHECK(
      cudaMemcpy(q.scales.data(), ds, q.scales.size() * sizeof(float), cudaMemcpyDeviceToHost));
  cudaFree(dx);
  cudaFree(dc);
  cudaFree(ds);
  return q;
}

}  // namespace moefuzz::cuda
