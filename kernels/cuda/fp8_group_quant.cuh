#pragma once
// Per-token-group FP8 quantization on the device, one warp per group of 128 (4 elements a lane):
// vLLM's CUDA per_token_group_quant formula (SPEC-formats.md §1.2, vLLM CUDA row), bit-identical to
// core/fp8_group_quant.h's kVllmCuda variant:
//   amax = fmaxf over |x| seeded 1e-10 (fmaxf drops NaN);  s = fl(amax / 448);
//   UE8M0: s = 2^ceil(log2(max(s, 1e-10))) by the exponent-bit carry, q = e4m3(clamp(fl(x * fl(1 / s))));
//   else q = e4m3(clamp(fl(x / s))), clamp = fminf(fmaxf(., -448), 448) (a NaN becomes -448).
// Every division is __fdiv_rn (IEEE round to nearest, whatever -prec-div / -use_fast_math say), the
// E4M3 conversion is cvt.rn.satfinite (core/e4m3.h e4m3_from_float), and the warp's amax reduction is
// order-free (fmaxf of non-negative values, NaN dropped), so every lane holds the same s.
// tests/gpu/cuda_fp8_test.cpp compares it bit for bit with the host on hostile groups.
//
// Example (device code, a full warp):
//   float x[4] = {...};               // elements 4 * lane .. 4 * lane + 3 of the group
//   Fp8GroupCodes q = quantize_fp8_group_warp(x, /*ue8m0=*/false);
//   // q.codes: byte j = code of x[j]; q.scale the group's fp32 scale (same on every lane)
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cuda/device_formats.cuh"

namespace moefuzz::cuda {

inline constexpr int kFp8GroupSize = 128;
inline constexpr int kFp8PerLane = kFp8GroupSize / 32;

struct Fp8GroupCodes {
  uint32_t codes;  // 4 E4M3 bytes, element j in byte j (little-endian: stored as one 32-bit word)
  float scale;
};

// core/e8m0.h e8m0_ceil_by_carry as fp32 bits: the power of two at or above s (s > 0 or +Inf here).
__device__ __forceinline__ float fp8_ceil_pow2_by_carry(float s) {
  const uint32_t carried = ((__float_as_uint(s) & 0x7FFFFFFFu) + 0x007FFFFFu) & 0x7F800000u;
  return __uint_as_float(carried);
}

__device__ __forceinline__ uint32_t fp8_code_clamped(float v) {
  return e4m3_from_float_hw(fminf(fmaxf(v, -448.0f), 448.0f));
}

__device__ __forceinline__ Fp8GroupCodes quantize_fp8_group_warp(const float (&x)[kFp8PerLane], bool ue8m0) {
  constexpr float kAmaxSeed = 1e-10f;  // vLLM's seed and UE8M0 floor (core/fp8_group_quant.cpp)
  float amax = kAmaxSeed;
#pragma unroll
  for (int j = 0; j < kFp8PerLane; ++j) amax = fmaxf(amax, fabsf(x[j]));
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xFFFFFFFFu, amax, o));
  float s = __fdiv_rn(amax, 448.0f);
  Fp8GroupCodes q{0u, 0.0f};
  if (ue8m0) {
    s = fp8_ceil_pow2_by_carry(fmaxf(s, kAmaxSeed));
    const float inverse = __fdiv_rn(1.0f, s);  // exact: a power of two (0 when s = Inf)
#pragma unroll
    for (int j = 0; j < kFp8PerLane; ++j) q.codes |= fp8_code_clamped(__fmul_rn(x[j], inverse)) << (8 * j);
  } else {
#pragma unroll
    for (int j = 0; j < kFp8PerLane; ++j) q.codes |= fp8_code_clamped(__fdiv_rn(x[j], s)) << (8 * j);
  }
  q.scale = s;
  return q;
}

}  // namespace moefuzz::cuda
