#pragma once
// FP8 E4M3 ("E4M3FN"): the NVFP4 block-scale format (SPEC.md §1.3) and the element format of FP8
// block-scaled W8A8 (SPEC-formats.md §1).
// s eeee mmm, bias 7, no Inf, NaN = S.1111.111, max finite 448 (0x7E), min subnormal 2^-9.
//
// Example:
//   uint8_t code = moefuzz::e4m3_from_float(1.0625f);  // 0x38 (1.0: tie to even)
//   float v = moefuzz::e4m3_to_float(0x7E);            // 448.0f
//   uint8_t n = moefuzz::e4m3_from_float_clamped(NAN);  // 0xFE (-448: fmaxf(NaN, -448) = -448)
#include <array>
#include <cstdint>

namespace moefuzz {

inline constexpr float kE4m3Max = 448.0f;
inline constexpr uint8_t kE4m3MaxCode = 0x7E;
inline constexpr uint8_t kE4m3NaNCode = 0x7F;

// The conversion production kernels use: cvt.rn.satfinite.e4m3x2.f32 (= __nv_cvt_float_to_fp8 with
// __NV_SATFINITE, __NV_E4M3). Round to nearest even, every finite |x| >= 448 and +-Inf saturate to
// +-448, |x| <= 2^-10 becomes (signed) zero, NaN of either sign becomes 0x7F (the H200 measurement in
// SPEC.md §1.3). Bit-identical to CUDA 13's host __nv_cvt_float_to_fp8 on all 2^32 inputs; its
// __nv_cvt_double_to_fp8 differs only on negative NaN (0xFF) (tests/core/cuda_reference_test.cpp).
uint8_t e4m3_from_float(float x);
// The element quantization of vLLM's CUDA per_token_group_quant (SPEC-formats.md §1.2, vLLM CUDA row):
// e4m3(fminf(fmaxf(x, -448), 448)). Equal to e4m3_from_float for every non-NaN x (that one already
// saturates); the device's fmaxf (PTX max.f32) drops any NaN operand, signaling ones included, so
// every NaN becomes -448 (0xFE) instead of 0x7F.
uint8_t e4m3_from_float_clamped(float x);
// __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3): round to nearest even like e4m3_from_float, but
// |x| > 464 (448 plus half an ulp) and +-Inf become NaN (sign | 0x7F); NaN becomes 0x7F. torch's
// non-saturating .to(torch.float8_e4m3fn), the cast of DeepGEMM's reference quantizers
// (SPEC-formats.md §1.2, DeepGEMM reference row), is the same except that it keeps a NaN's sign.
uint8_t e4m3_from_float_nosat(float x);
// Exact decode; 0x7F / 0xFF decode to NaN.
float e4m3_to_float(uint8_t code);
// The same decode as a table indexed by code, for loops that read it per element (constant data:
// no first-use initialization).
const std::array<float, 256>& e4m3_values();

}  // namespace moefuzz
