#pragma once
// Internal to kernels/cuda: the device buffers of one pipeline run and the launchers of each stage
// (one .cu file per stage). Every index that can exceed 2^31 (rows * cols, pairs * H) is int64_t.
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/moe_pipeline.h"

namespace moefuzz::cuda {

#define MOEFUZZ_CUDA_CHECK(expr)                                                                          \
  do {                                                                                                    \
    cudaError_t _e = (expr);                                                                              \
    if (_e != cudaSuccess)                                                                                \
      throw std::runtime_error(std::string("CUDA error: ") + cudaGetErrorString(_e) + " at " + __FILE__ + \
                               ":" + std::to_string(__LINE__) + " (" #expr ")");                          \
  } while (0)

// Device pointers; all owned by MoePipeline::Impl.
struct DeviceBuffers {
  // Inputs.
  const uint16_t* hidden = nullptr;     // bf16 [T, H]
  const float* logits = nullptr;        // [T, E]
  const float* bias = nullptr;          // [E] or null
  const int32_t* token_ids = nullptr;   // [T]
  const int32_t* hash_table = nullptr;  // [vocab, k]
  // Weights, per expert e in [0, E + shared): w13 [2I, H/2] in kernel order, w2 [H, I/2]; scales
  // 128x4-swizzled per expert: padded_rows(N) * padded_cols(K/16) bytes each.
  const uint8_t* w13 = nullptr;
  const uint8_t* w13_sf = nullptr;
  const uint8_t* w2 = nullptr;
  const uint8_t* w2_sf = nullptr;
  const float* a1_scale_q = nullptr;  // S_q per expert [E + shared]
  const float* a2_scale_q = nullptr;
  const float* alpha1 = nullptr;  // [E + shared, 2] kernel-order halves of GEMM1 (first, second)
  const float* alpha2 = nullptr;  // [E + shared]
  // FP8 block W8A8 (cfg.fp8): w13 / w2 above hold E4M3 codes, [E + shared][2I][H] (kernel order) and
  // [E + shared][H][I]; these their fp32 128x128 block scales, [E + shared][2I/128][H/128] and
  // [E + shared][H/128][I/128] (multipliers: value = e4m3 * scale).
  const float* w13_fp8_scale = nullptr;
  const float* w2_fp8_scale = nullptr;
  // Routing.
  int32_t* ids = nullptr;    // [T, all_slots]
  float* weights = nullptr;  // [T, all_slots]
  // Alignment.
  int32_t* expert_count = nullptr;   // [E + shared]
  int32_t* expert_offset = nullptr;  // [E + shared + 1], padded to the tile height
  int32_t* tile_expert = nullptr;    // [max_tiles]
  int32_t* num_tiles = nullptr;      // [1]
  int32_t* row_pair = nullptr;       // [max_rows], -1 = padding
  int64_t* pair_row = nullptr;       // [pairs]
  // Activations (permuted rows).
  uint8_t* a1_packed = nullptr;   // [max_rows, H/2]
  uint8_t* a1_sf = nullptr;       // 128x4 over [max_rows, H/16]
  uint16_t* a1_dq = nullptr;      // bf16 [max_rows, H]: e2m1 * e4m3 (exact; S_d goes into alpha)
  uint16_t* g1 = nullptr;         // bf16 [max_rows, 2I] kernel order
  uint16_t* act = nullptr;        // bf16 [max_rows, I]
  uint8_t* a2_packed = nullptr;   // [max_rows, I/2]
  uint8_t* a2_sf = nullptr;       // 128x4 over [max_rows, I/16]
  uint16_t* a2_dq = nullptr;      // bf16 [max_rows, I]
  uint8_t* a1_fp8 = nullptr;      // FP8: E4M3 [max_rows, H], one row per permuted row
  float* a1_fp8_scale = nullptr;  // FP8: fp32 [max_rows, H/128] group scales
  uint8_t* a2_fp8 = nullptr;      // FP8: E4M3 [max_rows, I]
  float* a2_fp8_scale = nullptr;  // FP8: fp32 [max_rows, I/128]
  uint16_t* y = nullptr;          // bf16 [max_rows, H]
  uint16_t* out = nullptr;        // bf16 [T, H]
};

void launch_routing(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s);
void launch_align(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s);
// Quantizes hidden rows (one per permuted row) into a1_packed / a1_sf / a1_dq.
void launch_quantize_fc1(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s);
void launch_gemm1(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s);
// SiLU*mul of g1 into act (bf16), then NVFP4 quantization into a2_packed / a2_sf / a2_dq.
void launch_activation(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s);
void launch_gemm2(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s);
void launch_combine(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s);
// FP8 block W8A8 stages (cfg.fp8). Hidden rows (one per permuted row) quantized per 128 columns into
// a1_fp8 / a1_fp8_scale (fp8_group_quantize.cu); padding rows get zero codes and scales.
void launch_fp8_quantize_fc1(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s);
// a1_fp8 x w13 -> g1 (bf16), a2_fp8 x w2 -> y (bf16), on FP8 tensor cores (fp8_block_gemm.cu).
void launch_fp8_gemm1(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s);
void launch_fp8_gemm2(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s);
// SiLU*mul of g1 into act (bf16), then per-128-column FP8 quantization into a2_fp8 / a2_fp8_scale
// (fp8_activation.cu).
void launch_fp8_activation(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s);
// dst[i] = row rows[i] of src (row_bytes each) for i < n; rows outside [0, limit) give 0xFF bytes
// (kernels/cuda/gather_rows.cu).
void launch_gather_rows(const uint8_t* src, int64_t row_bytes, const int64_t* rows, int64_t n, int64_t limit,
                        uint8_t* dst, cudaStream_t s);
// One device-to-device copy per segment, all in one launch (kernels/cuda/copy_segments.cu); the
// segments' sources must stay allocated until the launch has run (stream order).
struct CopySegment {
  const uint8_t* src = nullptr;
  uint8_t* dst = nullptr;
  int64_t bytes = 0;
};
void launch_copy_segments(const std::vector<CopySegment>& segments, cudaStream_t s);
void launch_fill_random(uint8_t* p, int64_t bytes, uint64_t seed, uint8_t and_mask, uint8_t or_mask,
                        cudaStream_t s);

// 128x4 layout, device and host (same formula as core/swizzle.h).
__host__ __device__ inline int64_t sf_offset_128x4(int64_t m, int64_t kb, int64_t scale_cols) {
  const int64_t kbp = (scale_cols + 3) / 4 * 4;
  return (m / 128) * (kbp / 4) * 512 + (kb / 4) * 512 + (m % 32) * 16 + ((m % 128) / 32) * 4 + (kb % 4);
}
__host__ __device__ inline int64_t sf_bytes_128x4(int64_t rows, int64_t scale_cols) {
  return (rows + 127) / 128 * 128 * ((scale_cols + 3) / 4 * 4);
}

}  // namespace moefuzz::cuda
