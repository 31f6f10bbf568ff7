#pragma once
// The FP8 block W8A8 device stages of the CUDA pipeline, callable one at a time on host data: what
// the GPU unit tests (tests/gpu/cuda_fp8_test.cpp) compare with the host quantizer and the oracle's
// GEMM bound, on inputs the layer would rarely produce (hostile groups and blocks). The code that
// runs is the pipeline's own (fp8_group_quant.cuh, fp8_block_gemm.cu), not a copy. No CUDA types
// here, so plain C++ files include it.
//
// Example:
//   std::vector<float> x(2 * 256, 1.0f);
//   moefuzz::Fp8GroupQuantized q = moefuzz::cuda::quantize_fp8_groups_on_device(x, 2, 256, false);
//   // q == moefuzz::quantize_fp8_per_token_group(x, 2, 256), bit for bit
//   std::vector<float> y = moefuzz::cuda::fp8_block_gemm_on_device(q.codes, q.scales, w, ws, 2, 128, 256);
#include <cstdint>
#include <span>
#include <vector>

#include "core/fp8_group_quant.h"

namespace moefuzz::cuda {

// The pipeline's per-token-group quantizer (vLLM CUDA formula) on x [rows, cols], cols a positive
// multiple of 128. Throws std::invalid_argument on bad sizes, std::runtime_error on a CUDA error.
Fp8GroupQuantized quantize_fp8_groups_on_device(std::span<const float> x, int64_t rows, int64_t cols,
                                                bool ue8m0);

// The pipeline's FP8 block-scaled GEMM on one expert, the fp32 accumulator before any bf16 rounding:
// out[m, n] for a [M, K] E4M3 codes with fp32 scales [M, K/128], w [N, K] E4M3 codes with fp32
// scales [N/128, K/128]; K and N positive multiples of 128. Returns [M, N] row-major.
std::vector<float> fp8_block_gemm_on_device(std::span<const uint8_t> a, std::span<const float> a_scales,
                                            std::span<const uint8_t> w, std::span<const float> w_scales,
                                            int64_t m, int64_t n, int64_t k);

}  // namespace moefuzz::cuda
