#pragma once
// Activation global QUANTIZATION scales S_q of a case (a1 = FC1 input, a2 = FC2 input; SPEC.md §1.4,
// §1.9), drawn per ActScaleProfile:
//   kCalibrated  a1 = FlashInfer's fl(fl(1/amax) * 2688) over the hidden tensor; a2 the same over a
//                cheap upper estimate of the FC2 input amax (see estimate_fc2_input_amax).
//   kFar         the calibrated value times 2^(+-j), j in [4, 12]: clipping and E4M3 saturation at
//                448 (2^+j) or block-scale underflow (2^-j). Powers of two keep every other
//                property of the value exact.
// ActScaleMode::kPerExpert gives E + shared values, each the global one divided by a deterministic
// per-expert factor 1 + n/8 (n in 0..8), so a per-expert S_q never exceeds the calibrated one (no
// saturation unless the profile asks for it). Under HiddenProfile::kThresholds the factor is 1 or 2,
// which keeps the power-of-two scale that makes thresholds exact.
//
// Only IEEE basic operations and ldexp are used (no libm transcendental): bit-identical everywhere.
//
// Example:
//   std::vector<float> a1 = moefuzz::draw_a1_scale(r, c.hidden);
//   std::vector<float> a2 = moefuzz::draw_a2_scale(r, c.hidden, c.experts);
#include <cstdint>
#include <span>
#include <vector>

#include "core/case.h"
#include "core/recipe.h"

namespace moefuzz {

// S_q for a calibration amax: fl(fl(1/amax) * 2688). An amax of 0, subnormal, Inf or NaN (an all-zero
// tensor, or an estimate that underflowed) gives 1.0 rather than an infinite scale.
float calibrated_quant_scale(float amax);

std::vector<float> draw_a1_scale(const CaseRecipe& r, std::span<const uint16_t> hidden);

// Upper estimate of max |silu(g) * u| over the FC2 inputs, without libm: for sampled (token, expert)
// pairs and sampled intermediate rows n, g_n and u_n are computed in double from the bf16 hidden row
// and the dequantized gate/up rows, and |silu(g) * (u + beta)| <= |g| * (min(|u|, limit) + |beta|)
// bounds the SwiGLU output. All pairs and rows are used when T * (E+S) * I * H <= 2^21; otherwise
// 8 pairs and as many rows as keep the work near 2^21 multiply-adds (a few ms at DeepSeek-V3 size).
// simd = false takes the scalar loop only (tests hold the AVX-512 path, eight dots in one register,
// to it bit for bit); the result is the same either way.
double estimate_fc2_input_amax(const CaseRecipe& r, std::span<const uint16_t> hidden,
                               const SharedVector<ExpertWeights>& experts, bool simd = true);

std::vector<float> draw_a2_scale(const CaseRecipe& r, std::span<const uint16_t> hidden,
                                 const SharedVector<ExpertWeights>& experts);

}  // namespace moefuzz
