#pragma once
// One 16-element NVFP4 block quantized exactly as FlashInfer/TRT-LLM cvt_warp_fp16_to_fp4 does on
// its default fast-math path (SPEC.md §1.5), with the E2M1 conversion in software (sm_90 has no
// e2m1 cvt). Besides the codes and the E4M3 scale it returns the dequantized values
// e2m1(code) * fp32(e4m3): a product of <= 2 and <= 4 significant bits, exact in bf16, so the
// GEMMs' bf16 operands carry no rounding; the global scales go into the fp32 epilogue alpha.
#include <cstdint>

#include "kernels/cuda/device_formats.cuh"
#include "kernels/cuda/launch.h"

namespace moefuzz::cuda {

struct Nvfp4Block {
  uint32_t packed[2];  // 16 codes, element 2j in the low nibble of byte j
  uint8_t scale;       // E4M3 byte
  uint32_t dq[8];      // 16 bf16 values, element 2j in the low half of word j
};

// `x` holds 16 bf16-valued floats; `s_q` is the quantization global scale.
__device__ __forceinline__ Nvfp4Block quantize_block(const float (&x)[16], float s_q, bool zero_by_vecmax) {
  float vec_max = 0.0f;
#pragma unroll
  for (int i = 0; i < 16; ++i) vec_max = fmaxf(vec_max, fabsf(x[i]));
  // Step 2: sf32 = fl(S * fl(vecMax * rcp.approx.ftz(6))), bit-reproducible (rcp(6) = RN(1/6)).
  const float sf32 = __fmul_rn(s_q, __fmul_rn(vec_max, rcp_approx_ftz(6.0f)));
  Nvfp4Block out;
  out.scale = e4m3_from_float_hw(sf32);
  const float sfd = e4m3_to_float_hw(out.scale);
  // Step 3: outScale; the zero test is on vecMax (FlashInfer/TRT-LLM) or on the scale (vLLM/sgl).
  const bool nonzero = zero_by_vecmax ? vec_max != 0.0f : sfd != 0.0f;
  const float out_scale = nonzero ? rcp_approx_ftz(__fmul_rn(sfd, rcp_approx_ftz(s_q))) : 0.0f;
  out.packed[0] = out.packed[1] = 0;
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const uint32_t code = e2m1_from_float_sw(__fmul_rn(x[i], out_scale));
    out.packed[i / 8] |= code << (4 * (i % 8));
    const uint32_t bits = float_to_bf16_bits(__fmul_rn(e2m1_to_float_dev(code), sfd));
    if (i % 2 == 0)
      out.dq[i / 2] = bits;
    else
      out.dq[i / 2] |= bits << 16;
  }
  return out;
}

// Stores block `kb` of permuted row `row` of a [rows, cols] activation: packed codes, the scale at
// its 128x4-swizzled offset, and the bf16 dequantized values.
__device__ __forceinline__ void store_block(const Nvfp4Block& q, int64_t row, int64_t kb, int64_t cols,
                                            uint8_t* packed, uint8_t* sf, uint16_t* dq) {
  *reinterpret_cast<uint2*>(packed + row * (cols / 2) + kb * 8) = make_uint2(q.packed[0], q.packed[1]);
  sf[sf_offset_128x4(row, kb, cols / 16)] = q.scale;
  uint4* d = reinterpret_cast<uint4*>(dq + row * cols + kb * 16);
  d[0] = make_uint4(q.dq[0], q.dq[1], q.dq[2], q.dq[3]);
  d[1] = make_uint4(q.dq[4], q.dq[5], q.dq[6], q.dq[7]);
}

}  // namespace moefuzz::cuda
