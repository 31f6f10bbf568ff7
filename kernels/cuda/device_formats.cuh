#pragma once
// Device-side number formats shared by the stages (SPEC.md §1). sm_90 has no e2m1 cvt (Blackwell
// only), so fp32 -> E2M1 is done in software with the cvt.rn.satfinite semantics; E4M3 uses the
// hardware cvt.rn.satfinite.e4m3x2.f32 through __nv_cvt_float_to_fp8, as production kernels do.
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cstdint>

namespace moefuzz::cuda {

// rcp.approx.ftz.f32: the fast-math reciprocal of the FlashInfer/TRT-LLM quantizer (SPEC.md §1.5).
__device__ __forceinline__ float rcp_approx_ftz(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// cvt.rn.satfinite.e2m1 semantics (SPEC.md §1.1): RN-even on the thresholds, |x| > 5 and +-Inf
// saturate to 6, NaN -> +6 (code 0x7), sign kept (small negatives give 0x8).
__device__ __forceinline__ uint32_t e2m1_from_float_sw(float x) {
  if (x != x) return 0x7u;
  const uint32_t sign = (__float_as_uint(x) >> 28) & 0x8u;
  const float a = fabsf(x);
  uint32_t m;
  if (a <= 0.25f)
    m = 0;
  else if (a < 0.75f)
    m = 1;
  else if (a <= 1.25f)
    m = 2;
  else if (a < 1.75f)
    m = 3;
  else if (a <= 2.5f)
    m = 4;
  else if (a < 3.5f)
    m = 5;
  else if (a <= 5.0f)
    m = 6;
  else
    m = 7;
  return sign | m;
}

__device__ __forceinline__ uint8_t e4m3_from_float_hw(float x) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
}

// Exact decode (through f16, which holds every E4M3 value).
__device__ __forceinline__ float e4m3_to_float_hw(uint8_t code) {
  __half_raw h = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(code), __NV_E4M3);
  return __half2float(__half(h));
}

__device__ __forceinline__ float bf16_bits_to_float(uint16_t b) {
  return __uint_as_float(static_cast<uint32_t>(b) << 16);
}
__device__ __forceinline__ uint16_t float_to_bf16_bits(float f) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(f));
}

// E2M1 magnitude table {0, .5, 1, 1.5, 2, 3, 4, 6}, signed by bit 3.
__device__ __forceinline__ float e2m1_to_float_dev(uint32_t code) {
  const uint32_t m = code & 7u;
  float v = (m < 2) ? 0.5f * static_cast<float>(m)
                    : (m < 4 ? 1.0f + 0.5f * (m - 2) : (m < 6 ? 2.0f + (m - 4) : (m == 6 ? 4.0f : 6.0f)));
  return (code & 8u) ? -v : v;
}

}  // namespace moefuzz::cuda
