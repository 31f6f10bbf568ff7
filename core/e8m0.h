#pragma once
// E8M0 ("UE8M0"): the power-of-two scale format of MXFP4 blocks and of DeepGEMM's power-of-two FP8
// scales (SPEC-formats.md §1.2 "UE8M0", §3.1). Eight exponent bits, bias 127, no sign, no mantissa:
// code c in [0, 254] is 2^(c - 127), code 0xFF is NaN; there is no zero and no infinity. Code 0 is
// 2^-127, a subnormal fp32 (bits 0x00400000).
//
// Encoders differ in production only in how they round a non-power-of-two, and at the edges (zero,
// subnormal, Inf, NaN). Three families, each named after what computes it:
//   * e8m0_from_float: the CUDA Toolkit's __nv_cvt_float_to_e8m0 (PTX cvt.{rz,rp}.ue8m0x2.f32), the
//     definition, tested bit-exactly against the toolkit on every bf16 pattern and every exponent
//     boundary (tests/core/e8m0_cuda_reference_test.cpp);
//   * e8m0_ceil_by_carry / e8m0_floor_by_mask: the fp32 bit arithmetic of triton_kernels
//     downcast_to_mxfp (ROUND_UP / ROUND_DOWN, SPEC-formats.md §3.2);
//   * ue8m0_ceil_clamped: DeepGEMM's ceil_to_ue8m0 (SPEC-formats.md §1.2, DeepGEMM reference row).
// All of them round UP (ceil of log2) by default: SPEC-formats.md §1.2 finds no production path that
// rounds an E8M0 scale to nearest (docs/decisions.md, "E8M0 scales round up").
//
// Example:
//   float s = moefuzz::e8m0_to_float(127);                               // 1.0f
//   uint8_t c = moefuzz::e8m0_from_float(0.75f, moefuzz::E8m0Rounding::kUp);          // 127 (2^0)
//   uint8_t d = moefuzz::e8m0_from_float(0.75f, moefuzz::E8m0Rounding::kTowardZero);  // 126 (2^-1)
//   float z = moefuzz::e8m0_decode(0, moefuzz::E8m0Decode::kExponentShift);            // +0.0f
#include <cstdint>

namespace moefuzz {

inline constexpr int kE8m0Bias = 127;
inline constexpr uint8_t kE8m0NaNCode = 0xFF;
inline constexpr uint8_t kE8m0MaxCode = 0xFE;  // 2^127
inline constexpr uint8_t kE8m0OneCode = 0x7F;  // 2^0

// Exact decode: 2^(code - 127) as fp32 (code 0 gives the subnormal 2^-127); 0xFF gives a quiet NaN.
float e8m0_to_float(uint8_t code);

// Direction of the power-of-two rounding of |x|.
enum class E8m0Rounding : uint8_t {
  kUp,          // ceil(log2 |x|): cudaRoundPosInf, cvt.rp. Keeps |x| / 2^e <= 1, so no element clips.
  kTowardZero,  // floor(log2 |x|), i.e. the fp32 exponent field: cudaRoundZero, cvt.rz.
};
// How a path turns a scale code into a number (SPEC-formats.md §3.3): they differ at codes 0 and 0xFF.
enum class E8m0Decode : uint8_t {
  kOcp,            // e8m0_to_float: 0 -> 2^-127, 0xFF -> NaN (OCP MX; triton_kernels upcast_from_mxfp)
  kExponentShift,  // bf16 bits code << 7: 0 -> +0, 0xFF -> +Inf (Triton tl.dot_scaled on Hopper with
                   // fast_math, hopper_value.py mxfp4_to_bf16_triton; [MEASURED] on the H200)
  kLdexp,          // ldexp(1, code - 127) in fp32: 0 -> 2^-127, 0xFF -> +Inf (gpt-oss torch reference)
};
float e8m0_decode(uint8_t code, E8m0Decode decode);

// What a result above 2^127 becomes.
enum class E8m0Overflow : uint8_t {
  kSaturate,  // __NV_SATFINITE: 0xFE (2^127); Inf input too. NaN stays 0xFF.
  kNaN,       // __NV_NOSAT: 0xFF.
};

// __nv_cvt_float_to_e8m0(x, saturate, rounding) of CUDA 13, host path: the sign of x is ignored;
// results below 2^-127 (zero and tiny subnormals included) clip to code 0 (2^-127); results above
// 2^127 and +-Inf follow `overflow`; NaN gives 0xFF.
uint8_t e8m0_from_float(float x, E8m0Rounding rounding, E8m0Overflow overflow = E8m0Overflow::kSaturate);
// __nv_cvt_bfloat16raw_to_e8m0 on a bf16 bit pattern, same rules (the toolkit's float path rounds x
// to bf16 in the direction of `rounding` first, which does not change the result).
uint8_t e8m0_from_bf16(uint16_t bits, E8m0Rounding rounding, E8m0Overflow overflow = E8m0Overflow::kSaturate);

// triton_kernels downcast_to_mxfp ROUND_UP (SPEC-formats.md §3.2): ((bits(s) + 0x7FFFFF) & 0x7F800000)
// >> 23 for s >= 0. Equal to ceil(log2 s) + 127 for normal s; differs from e8m0_from_float at the
// edges: s = 0 gives 0 (the quantizer then multiplies by 0), subnormal s gives 1 (2^-126), s above
// 2^127 or +Inf gives 0xFF (a NaN block), a positive NaN gives 0. Negative s: the sign bit is masked off
// first, as in the quantizers' amax (never negative there).
uint8_t e8m0_ceil_by_carry(float s);
// triton_kernels ROUND_DOWN: (bits(s) & 0x7F800000) >> 23: the exponent field (0 for zero and every
// subnormal, 0xFF for Inf and NaN).
uint8_t e8m0_floor_by_mask(float s);
// DeepGEMM ceil_to_ue8m0 (SPEC-formats.md §1.2): exponent field + (mantissa != 0), clamped to
// [1, 254]: zero gives 1 (2^-126), Inf 254, NaN 254. Returns the code; the scale is e8m0_to_float.
uint8_t ue8m0_ceil_clamped(float s);

}  // namespace moefuzz
