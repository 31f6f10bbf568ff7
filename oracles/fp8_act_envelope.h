#pragma once
// What a correct per-token-group FP8 activation quantizer (SPEC-formats.md §1.2, core/fp8_group_quant.h)
// may produce, for the FP8 block-scaled W8A8 layer's two quantization stages (docs/oracle.md, "FP8
// block-scaled layer"): admission of the codes and scales a kernel exposes, and a per-element bound on
// |q s - x| where it exposes nothing.
//
// The model (Fp8ActQuantModel, from the profile's FP8 contract): a variant of core/fp8_group_quant.h and
// the UE8M0 option. kVllmCuda and kDeepGemmReference are IEEE (fp32 division or multiplication by an
// fp32 reciprocal, round to nearest even): the kernel's scale and codes are the formula's, bit for bit.
// kTriton is not: Triton's fp32 `/` lowers to div.full (<= 2 ulp) and sgl-kernel computes
// fl(amax * RN(1/448)) and x * fl(448 / amax); both are modelled by vLLM's formula with a slack: the
// fp32 scale before any UE8M0 ceil within kTritonScaleUlps ulps of fl(amax / 448) (the UE8M0 ceil with or
// without vLLM's 1e-10 floor on s: Triton's exp2(ceil(log2 s)) has none), each code within one
// E4M3 code (rank, below) of the formula's code of x under the kernel's own scale (SPEC-formats.md §5.2:
// "allow one-code differences", measured 5.2e-4 of elements for div.full, 2.9e-4 for sgl-kernel).
//
// FC1 (the exact bf16 input, a point): fp8_point_group_admits compares exposed codes and scale with the
// model: equal (IEEE), or within the slack (kTriton). Unexposed: the oracle uses the variant's codes and
// scale; for kTriton every element additionally carries fp8_point_deviation (the kernel's q' s' and
// the formula's q s both lie within fp8_quant_error of x).
//
// FC2 (the SwiGLU output, known per element only as an interval [lo_i, hi_i] that holds the kernel's
// fp32 value x_i): the error bound fp8_quant_error, derived here. Let A = max_i |x_i| be the kernel's
// group amax, s its scale, y = the kernel's fp32 quotient (x / s, or x * fl(1/s)).
//  * Scale. s = fl(A' / 448), A' = max(A, floor) (floor 1e-10 vLLM, 1e-4 DeepGEMM); UE8M0 takes the
//    power of two at or above it, at most doubling it. The scale is monotone in A, so with A <= a_hi =
//    max_i max(|lo_i|, |hi_i|): s <= s_max = fp8_scale_upper(a_hi): the formula at a_hi, rounded up
//    (kTriton: plus its ulps) and, for UE8M0, ceiled. (For a point group s_max is the scale itself.)
//  * Quotient. y = (x / s)(1 + d1)(1 + d2) + eta: one fp32 rounding for x / s, two for x * fl(1 / s)
//    (|d| <= 2^-24), eta <= 2^-150 when the quotient underflows. Since A' / s <= 448 (1 + 2^-24) / (1 -
//    2^-24), |y| stays below 448 (1 + 2^-21): the clamp at 448 (vLLM) and the non-saturating cast
//    (DeepGEMM: NaN only above 464) both round y to 448 at worst, an error below 2^-4 |y|.
//  * Code. E4M3 round to nearest: |q - y| <= 2^-4 |y| for normal |y| >= 2^-6 (3 fraction bits, half an
//    ulp <= 2^-4 of the value, saturation included), <= 2^-10 in the subnormal range (spacing 2^-9);
//    the sum of both covers every y. kTriton: one code from the formula's code r, one spacing more
//    (at most 2^-3 |r| <= 2^-3 ((1 + 2^-4) |y| + 2^-10), or 2^-9): |q - y| <= (2^-3 + 2^-4 + 2^-7) |y| +
//    (2^-10 + 2^-9 + 2^-13), below (2^-3 + 2^-4 + 2^-7) |y| + 2^-8.
//  * Together: |q s - x| <= |q - y| s + |y s - x| <= c_rel |x| + c_abs s, with
//      IEEE:   c_rel = 2^-4 + 2^-22 (>= 2^-4 (1 + 2^-24)^2 + (1 + 2^-24)^2 - 1), c_abs = 2^-10 + 2^-149;
//      kTriton (codes relative to the formula's fl(x / s) under the kernel's own s):
//              c_rel = 2^-3 + 2^-4 + 2^-7 + 2^-20, c_abs = 2^-8 + 2^-148.
//    fp8_quant_error(m_i, s_max) with m_i = max(|lo_i|, |hi_i|) >= |x_i| bounds every element of every
//    correct kernel. (All-zero groups: q = 0, error |x| = 0; amax below the floor: the floor's scale,
//    the error c_abs s is then below the floor's resolution; saturating groups: the 448 clamp above.)
//  * Non-finite inputs (NaN/Inf per SPEC-formats.md §1.2) are not bounded: the caller says nothing.
//
// Admission of exposed FC2 codes and scale (fp8_interval_group_admits), each a necessary condition for
// some x_i in [lo_i, hi_i] and the group's amax rule: (1) s lies in the model's scale range for amaxes
// in [a_lo, a_hi] (a_lo = max_i of the distance of [lo_i, hi_i] from 0); (2) each code lies between the
// model's codes of the interval's ends under the kernel's s (monotone in x; kTriton: +-1 rank);
// (3) the amax element: every amax A with scale s is at least A*(s), the smallest float whose scale
// reaches s, so the largest |code| is at least the model's code of A*(s) (kTriton: minus one rank).
// A kernel whose scale comes from a floor (A*(s) = 0) passes (3) trivially.
//
// Example:
//   moefuzz::Fp8ActQuantModel m{.variant = moefuzz::Fp8GroupQuantVariant::kVllmCuda};
//   const double s_max = moefuzz::fp8_scale_upper(group_amax_hi, m);
//   const double e = moefuzz::fp8_quant_error(std::fmax(std::fabs(lo), std::fabs(hi)), s_max, m);
//   // |q s - x| <= e for any correct kernel's code q and scale s of an x in [lo, hi]
//   int64_t bad = moefuzz::fp8_interval_group_admits(lo_span, hi_span, codes, scale, m);
//   if (bad != moefuzz::kFp8Admitted) { /* fail ORACLE at the quantize stage */ }
#include <cstdint>
#include <span>

#include "core/fp8_group_quant.h"

namespace moefuzz {

// kTriton's fp32 scale: within this many ulps of fl(amax / 448) (div.full is within 2 ulp, SPEC-formats.md
// §1.2; sgl-kernel's fl(amax * RN(1/448)) within 1.5).
inline constexpr int kTritonScaleUlps = 2;

struct Fp8ActQuantModel {
  Fp8GroupQuantVariant variant = Fp8GroupQuantVariant::kVllmCuda;
  bool ue8m0 = false;
};

// True for the variants whose scale and codes a correct kernel reproduces bit for bit.
bool fp8_act_quant_is_ieee(Fp8GroupQuantVariant v);

// Signed rank of an E4M3 code in value order (-0 and +0 share rank 0; 0x7E is 126, 0xFE -126); NaN
// codes have no rank (fp8_code_is_nan).
int fp8_code_rank(uint8_t code);
inline bool fp8_code_is_nan(uint8_t code) { return (code & 0x7F) == 0x7F; }

// The model's scale of a finite amax >= 0 (IEEE variants: the formula; kTriton: vLLM's formula).
float fp8_group_scale(float amax, const Fp8ActQuantModel& m);
// The model's code of x under scale s (the variant's element formula; kTriton: vLLM's).
uint8_t fp8_group_code(float x, float s, const Fp8ActQuantModel& m);
// The largest scale a correct kernel may use for a group whose amax is at most a_hi (finite, >= 0).
double fp8_scale_upper(double a_hi, const Fp8ActQuantModel& m);
// c_rel * m + c_abs * s_max (header): a bound on |q s - x| for |x| <= m and the kernel's s <= s_max.
double fp8_quant_error(double m, double s_max, const Fp8ActQuantModel& m_model);

inline constexpr int64_t kFp8Admitted = -2;
inline constexpr int64_t kFp8ScaleInadmissible = -1;

// FC1: x (one group, finite or not), the kernel's codes and scale. Returns kFp8Admitted, or
// kFp8ScaleInadmissible, or the index of the first inadmissible code. IEEE: equal to
// quantize_fp8_per_token_group's (NaN codes compare equal to each other); kTriton: scale within
// kTritonScaleUlps of the formula's fp32 scale (ceiled for UE8M0), codes within one rank of
// fp8_group_code(x, s) under the kernel's s; a non-finite group admits anything (its GEMM is left to FINITE).
int64_t fp8_point_group_admits(std::span<const float> x, std::span<const uint8_t> codes, float scale,
                               const Fp8ActQuantModel& m);

// FC1 unexposed, kTriton: |q' s' - q s| for one element x of a group whose formula scale is s (0 for IEEE
// variants: the kernel's values are the formula's).
double fp8_point_deviation(float x, float s, const Fp8ActQuantModel& m);

// FC2: the kernel's codes and scale of one group whose fp32 inputs lie in [lo_i, hi_i] (finite). Returns
// kFp8Admitted, kFp8ScaleInadmissible, or the first inadmissible code's index (conditions (1)-(3) of the
// header; a failed (3) names the group's largest code).
int64_t fp8_interval_group_admits(std::span<const double> lo, std::span<const double> hi,
                                  std::span<const uint8_t> codes, float scale, const Fp8ActQuantModel& m);

}  // namespace moefuzz
