// FP8 SiLU*mul (SPEC.md §3.3) and FC2 input quantization (SPEC-formats.md §1.2), fused: per permuted
// row and 128-column group of I, one warp computes h = bf16(swiglu(gate, up)) from the bf16 GEMM1
// output (gate = the half the profile's w13 order says; swiglu.cuh), stores it to act, and quantizes
// the bf16 values per token group (fp8_group_quant.cuh) into a2_fp8 / a2_fp8_scale. Padding rows
// get h = 0, zero codes and scale 0.
#include <cuda_runtime.h>

#include "kernels/cuda/device_formats.cuh"
#include "kernels/cuda/fp8_group_quant.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/swiglu.cuh"

namespace moefuzz::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;

__global__ void fp8_activation_kernel(PipelineConfig cfg, DeviceBuffers b, int64_t max_rows) {
  const int64_t I = cfg.inter, groups = I / kFp8GroupSize;
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (warp >= max_rows * groups) return;  // whole warps: the quantizer's shuffles need all 32 lanes
  const int64_t row = warp / groups, g = warp % groups;
  if (row >= b.expert_offset[cfg.total_experts()]) return;
  const int32_t pair = b.row_pair[row];
  const int64_t col = g * kFp8GroupSize + lane * kFp8PerLane;
  const uint16_t* g1 = b.g1 + row * (2 * I);
  const uint16_t* gate = g1 + (cfg.up_first ? I : 0) + col;
  const uint16_t* up = g1 + (cfg.up_first ? 0 : I) + col;
  float h[kFp8PerLane];
  uint16_t bits[kFp8PerLane];
#pragma unroll
  for (int j = 0; j < kFp8PerLane; ++j) {
    bits[j] = pair >= 0
                  ? float_to_bf16_bits(swiglu(bf16_bits_to_float(gate[j]), bf16_bits_to_float(up[j]), cfg))
                  : uint16_t{0};
    h[j] = bf16_bits_to_float(bits[j]);  // the profile rounds the activation to bf16 before FC2
  }
  *reinterpret_cast<uint2*>(b.act + row * I + col) = make_uint2(
      bits[0] | (static_cast<uint32_t>(bits[1]) << 16), bits[2] | (static_cast<uint32_t>(bits[3]) << 16));
  const Fp8GroupCodes q = quantize_fp8_group_warp(h, cfg.fp8_ue8m0);
  *reinterpret_cast<uint32_t*>(b.a2_fp8 + row * I + col) = pair >= 0 ? q.codes : 0u;
  if (lane == 0) b.a2_fp8_scale[row * groups + g] = pair >= 0 ? q.scale : 0.0f;
}

}  // namespace

void launch_fp8_activation(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s) {
  const int64_t warps = cfg.max_rows() * (cfg.inter / kFp8GroupSize);
  if (warps == 0) return;
  fp8_activation_kernel<<<static_cast<unsigned>((warps + kWarpsPerBlock - 1) / kWarpsPerBlock), kThreads, 0,
                          s>>>(cfg, b, cfg.max_rows());
  MOEFUZZ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace moefuzz::cuda
