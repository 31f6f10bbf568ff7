#pragma once
// Rigorous error-bound derivations for the layer oracle (docs/oracle.md, "Bounds"). Every bound the
// oracle reports is built from the few facts here; no tolerance is typed in anywhere else.
//
//  * Floating-point sums in ANY order: |fl(sum) - sum| <= gamma_n(u) * sum|terms| where n counts every
//    rounding a term passes through (Higham, Accuracy and Stability, Lemma 3.1 / eq. 3.4).
//  * Rounding points are interval maps: RN is monotone, so a value known to lie in [lo, hi] lies in
//    [RN(lo'), RN(hi')] afterwards (lo', hi' the fp32 values outward of lo, hi).
//  * SiLU-mul propagation: d/dg [g sigmoid(a g)] = s(z)(1 + z(1 - s(z))), z = a g, whose range is
//    [-0.0999, 1.0999] (extrema at z = -+2.3994), independent of a: the slope bound is 1.1.
//  * Quantization: the NVFP4 block quantizer is monotone in each element and in the block amax, so the
//    set of codes a kernel may produce from inputs known to an interval is an interval of codes
//    (nvfp4_envelope); a kernel's codes are admissible iff they lie in it (nvfp4_admits).
//
// Example:
//   double g = moefuzz::gamma_n(1024 + moefuzz::kGemmExtraRoundings, moefuzz::kFp32Unit);
//   moefuzz::Interval y = moefuzz::round_to_bf16({v - b, v + b});   // after a bf16 rounding point
#include <bit>
#include <cstdint>
#include <span>
#include <vector>

#include "core/bf16.h"
#include "core/profile.h"
#include "core/recipe.h"

namespace moefuzz {

inline constexpr double kFp32Unit = 0x1p-24;    // unit roundoff of fp32 RN
inline constexpr double kBf16Unit = 0x1p-8;     // unit roundoff of bf16 RN (8 significant bits)
inline constexpr double kDoubleUnit = 0x1p-53;  // unit roundoff of double RN
// Largest absolute error of one fp32 or bf16 operation whose result lies in the subnormal range,
// including flush-to-zero (FTZ) of fast-math builds: the smallest normal, 2^-126.
inline constexpr double kUnderflowFloor = 0x1p-126;
// Roundings a GEMM term passes through besides the K-1 additions, in the worst correct kernel model
// ("dequantize first"): fl(1/S_q) 1, operand dequant fl(e2m1*e4m3*S_d) 2, product 1, and 1 unit that
// absorbs the oracle's own double roundings (< 8 * 2^-53 relative, far below one 2^-24). The
// "alpha epilogue" model needs fewer: 1/S_q, alpha = S_da*S_dw, alpha*acc.
inline constexpr int64_t kGemmExtraRoundings = 5;
// Slope bound of s(g) = g sigmoid(a g) (header comment), rounded up.
inline constexpr double kSiluSlopeMax = 1.1;
// Relative error of the oracle's own double evaluation of SiLU-mul: <= 16 double operations
// (libm exp < 1 ulp), 16 * 2^-53 = 2^-49.
inline constexpr double kOracleTranscendentalError = 0x1p-49;

// gamma_n(u) = n u / (1 - n u); +inf when n u >= 1.
double gamma_n(double n, double u);

// The bound of a metamorphic relation ideal(a) == scale * ideal(b) at one element, for two runs a
// correct kernel makes within their oracle bounds (|a - E_a| <= B_a, |b - E_b| <= B_b):
// |a - scale*b| <= B_a + |scale| B_b + |E_a - scale E_b|, the last term zero when the relation is
// exact on the emulated roundings too. The relation is itself evaluated in double: |a - s*b| and the
// bound's terms each carry a few roundings of their operands (2^-53 relative each), so 4 units of
// the operands' magnitudes are added (a correct kernel exactly on its bound must not fail on them:
// found by moe_layer_fuzzer, SCALE1 ratio 1 + 7e-16). NaN where either side has no bound.
//   double b = moefuzz::relation_bound(a_got, b_got, a_exp, a_bound, b_exp, b_bound, 2.5);
double relation_bound(double a_got, double b_got, double a_expected, double a_bound, double b_expected,
                      double b_bound, double scale);

// Closed interval of reals (lo <= hi); NaN bounds mean "unknown".
struct Interval {
  double lo = 0, hi = 0;
  double center() const { return lo == hi ? lo : lo + (hi - lo) / 2; }
  double radius() const { return hi - lo == 0 ? 0 : (hi - lo) / 2 * (1 + 2 * kDoubleUnit); }
  static Interval around(double c, double r) { return {c - r, c + r}; }
};

// Largest float <= x and smallest float >= x (x finite or infinite; NaN stays NaN). Inline and
// nextafter-free: the quantization envelope calls them twice per element and bound. Branch-free: the
// step is taken on about half of all inputs, unpredictably, and the GEMM epilogues' bf16 rounding
// points spent most of their time in mispredicted branches here (docs/perf.md).
inline float float_down(double x) {
  const float f = static_cast<float>(x);
  const uint32_t b = std::bit_cast<uint32_t>(f);
  // One step toward -inf: b - 1 above zero, b + 1 below, -0x1p-149 from either zero.
  const uint32_t positive = 0u - static_cast<uint32_t>(f > 0.0f);
  const uint32_t zero = 0u - static_cast<uint32_t>(f == 0.0f);
  const uint32_t stepped = ((b + 1 + 2 * positive) & ~zero) | (0x80000001u & zero);
  const uint32_t take = 0u - static_cast<uint32_t>(static_cast<double>(f) > x);  // false for NaN
  return std::bit_cast<float>(b ^ ((b ^ stepped) & take));
}
inline float float_up(double x) {
  const float f = static_cast<float>(x);
  const uint32_t b = std::bit_cast<uint32_t>(f);
  // One step toward +inf: b + 1 above zero, b - 1 below, 0x1p-149 from either zero.
  const uint32_t negative = 0u - static_cast<uint32_t>(f < 0.0f);
  const uint32_t zero = 0u - static_cast<uint32_t>(f == 0.0f);
  const uint32_t stepped = ((b + 1 + 2 * negative) & ~zero) | (0x00000001u & zero);
  const uint32_t take = 0u - static_cast<uint32_t>(static_cast<double>(f) < x);
  return std::bit_cast<float>(b ^ ((b ^ stepped) & take));
}
// std::fmax without the library call (under -fno-fast-math std::fmax stays a call into libm, a few
// percent of the FP8 GEMM stages' time): the larger of a and b, a NaN operand ignored, as std::fmax.
// Equal operands give a (std::fmax may give either of +0 and -0): for results that are only compared.
inline double fmax_inline(double a, double b) { return a >= b || b != b ? a : b; }

// The interval a value in `x` occupies after RN to bf16 (monotone, so the ends map outward). Inline:
// the oracle applies it to every element of each bf16 rounding point.
inline Interval round_to_bf16(Interval x) {
  return {static_cast<double>(moefuzz::round_to_bf16(float_down(x.lo))),
          static_cast<double>(moefuzz::round_to_bf16(float_up(x.hi)))};
}

// SwiGLU with optional clamp (recipe Swiglu): g' = min(g, L), v = clamp(u, -L, L) + beta,
// out = g' sigmoid(alpha g') v, evaluated in double (error <= kOracleTranscendentalError relative).
double swiglu(double gate, double up, const Swiglu& s);
// What a correct kernel's fp32 activation output (before any bf16 rounding point) may be when its
// gate and up inputs lie in the given intervals: propagation by the slope bound plus the evaluation
// error of a fast-math fp32 kernel (swiglu_eval_relative_error).
Interval swiglu_kernel_interval(Interval gate, Interval up, const Swiglu& s);
// Relative error of a fast-math fp32 evaluation of g sigmoid(a g) v at z = a g: __expf
// (2 + 1.173|z|) ulp [CUDA C Programming Guide, intrinsic functions], __fdividef 2 ulp, five
// roundings of 1/2 ulp (a*g, 1+e, g*sigma, *v, +beta) and the rounding of z (|z| u in sigma), one
// ulp = 2^-23 relative: (8 + 2|z|) 2^-23 with 1.5 ulp to spare for second-order terms. Below
// z = -80 the kernel's sigmoid may flush (exp overflow, __fdividef of huge denominators): error 100%.
double swiglu_eval_relative_error(double z);
// swiglu_kernel_interval of n elements: out[i] from gate[i] and up[i]. `simd` false: the element loop
// (the reference the tests hold the AVX2 path to; that path is taken only where cpu_has_avx2()).
void swiglu_kernel_intervals(const Interval* gate, const Interval* up, int64_t n, const Swiglu& s,
                             Interval* out, bool simd = true);

// ---- NVFP4 activation quantization as a rounding point -------------------------------------------
// Relative error of the kernel's y = fl(x * outScale) against x * S_q / sfd over every quantizer
// variant (SPEC.md §1.5): rcp.approx is within 1 ulp (2^-23) [MEASURED], outScale passes through at
// most rcp, fl(*), rcp (2^-23 + 2^-24 + 2^-23) and y through one more fl (2^-24): < 2^-21 + 2^-23,
// rounded up to 2^-20. This holds while rcp(S) and fl(sfd * rcp(S)) stay normal; where a fast-math
// kernel may flush either (S above ~2^126, or amax ~ 6 * 2^-126), bounds.cpp admits outScale = +Inf.
inline constexpr double kQuantScaleRelError = 0x1p-20;

// Everything a correct quantizer may produce for one row whose elements are known to intervals.
// Operand values are e2m1 * e4m3 (global scale excluded), the unit of exact_dot.
struct Nvfp4Envelope {
  std::vector<uint8_t> center_codes;        // a representative quantization (inside the envelope)
  std::vector<uint8_t> center_scales;       // its block scale bytes
  std::vector<double> lo, hi;               // per element: range of the operand value over all outcomes
  std::vector<uint8_t> scale_lo, scale_hi;  // per block: range of admissible E4M3 bytes
  bool indeterminate = false;               // a non-finite input or scale: nothing can be said
  double radius(size_t i, double center) const;
};
// `lo`/`hi`: per-element interval of the values the kernel quantizes (fp32/bf16 values);
// `center`: a representative point inside (e.g. the oracle's value); `s_q`: the quantization scale.
// The unflushed E2M1 value range [umin, umax] the envelope and nvfp4_admits take for the 16 elements
// [lo, hi] of one block under S_q and block scale value sfd: four elements at a time where the CPU
// has AVX2 and `simd` is set, else one at a time (the same operations; tests hold the two to each
// other). False, nothing written, when sfd is 0 or a flush is possible (those blocks take the
// element-wise path).
bool nvfp4_unflushed_codes16(const double* lo, const double* hi, float s_q, float sfd, bool simd, float* umin,
                             float* umax);

// `simd` false: every block element by element (the reference the tests hold the AVX2 path to).
Nvfp4Envelope nvfp4_envelope(std::span<const double> lo, std::span<const double> hi,
                             std::span<const double> center, float s_q, bool simd = true);
// True when nothing can be said about the row's quantization (a non-finite input or scale): the
// envelope's `indeterminate`, without computing the envelope.
bool nvfp4_indeterminate(std::span<const double> lo, std::span<const double> hi, float s_q);
// First element (or -1 - block for a scale byte) whose kernel decision lies outside the envelope;
// kAdmitted when all are admissible. Codes are unpacked (one per element), 0x0 == 0x8. `simd` false:
// every block element by element (the reference the tests hold the AVX2 path to).
inline constexpr int64_t kAdmitted = INT64_MIN;
int64_t nvfp4_admits(std::span<const double> lo, std::span<const double> hi, float s_q,
                     std::span<const uint8_t> codes, std::span<const uint8_t> scales, bool simd = true);

}  // namespace moefuzz
