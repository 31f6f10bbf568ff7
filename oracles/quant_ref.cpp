#include "oracles/quant_ref.h"

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <string>

#include "core/e2m1.h"
#include "core/e4m3.h"
#include "core/errors.h"
#include "core/nvfp4.h"

namespace moefuzz {
namespace {

constexpr uint8_t kNoAlternative = 0xFF;

// rcp.approx.ftz.f32(6.0f) = 0x3E2AAAAB = RN(1/6) [MEASURED, SPEC.md §1.5]; the exact path's
// constant 1.0f/6.0f is the same float.
const float kRcp6 = std::bit_cast<float>(0x3E2AAAABu);

// rcp.approx.ftz.f32 emulated as RN(1/x) (86.8% of inputs exactly; the rest are 1 ulp off and are
// covered by alternative codes). .ftz: a subnormal input is read as a signed zero (-> +-Inf) and a
// subnormal result is written as a signed zero.
float rcp_approx_ftz(float x) {
  if (std::fpclassify(x) == FP_SUBNORMAL) x = std::copysign(0.0f, x);
  float r = 1.0f / x;
  if (std::fpclassify(r) == FP_SUBNORMAL) r = std::copysign(0.0f, r);
  return r;
}

// The codes on both sides of the E2M1 decision threshold nearest to |y|, if |y| is within the fast-
// math error window of it; else kNoAlternative.
//
// Window derivation. Let r = RN(1/S) be the emulated rcp(S) and r' the kernel's, r' = r(1+a) with
// |a| <= 2^-23 (rcp.approx is at most 1 ulp from RN [MEASURED], and 1 ulp <= 2^-23 relative).
// p = RN(sfd*r) = sfd*r(1+e1) and p' = RN(sfd*r') = sfd*r(1+a)(1+e2), |e1|,|e2| <= 2^-24.
// o = RN(1/p) = (1+e3)/p, o' = rcp(p') = (1+b)/p' with |b| <= 2^-24 + 2^-23 (RN error plus 1 ulp).
// So o'/o = (1+e1)(1+b) / ((1+a)(1+e2)(1+e3)): first order |o'/o - 1| <= 4*2^-24 + 2*2^-23 = 4*2^-23.
// Both element values y = RN(x*o) and y' = RN(x*o') add one 2^-24 rounding each: 5*2^-23, plus
// second-order terms (~2^-44). kFastMathYRelWindow = 6*2^-23 covers this with margin; it is still
// ~2^-20 relative, far narrower than the E2M1 spacing, so at most one threshold is ever in range.
uint8_t fast_math_alternative(float y, uint8_t code) {
  const double mag = std::fabs(static_cast<double>(y));
  if (!std::isfinite(mag)) return kNoAlternative;
  for (size_t i = 0; i < kE2m1Thresholds.size(); ++i) {
    const double t = kE2m1Thresholds[i];
    if (std::fabs(mag - t) <= kFastMathYRelWindow * std::max(mag, t)) {
      const uint8_t sign = code & 0x8;
      const uint8_t below = static_cast<uint8_t>(i), above = static_cast<uint8_t>(i + 1);
      const uint8_t other = (code & 0x7) == below ? above : below;
      return sign | other;
    }
  }
  return kNoAlternative;
}

struct BlockScales {
  uint8_t scale_byte = 0;
  float out_scale = 0;
};

BlockScales block_scales(float amax, float s_q, QuantizerVariant variant, ZeroScaleRule zero_rule) {
  BlockScales b;
  switch (variant) {
    case QuantizerVariant::kFastMath: {
      const float sf32 = s_q * (amax * kRcp6);
      b.scale_byte = e4m3_from_float(sf32);
      const float sfd = e4m3_to_float(b.scale_byte);
      const bool nonzero = zero_rule == ZeroScaleRule::kVecMaxTest ? amax != 0.0f : sfd != 0.0f;
      b.out_scale = nonzero ? rcp_approx_ftz(sfd * rcp_approx_ftz(s_q)) : 0.0f;
      break;
    }
    case QuantizerVariant::kExact: {
      const float sf32 = amax != 0.0f ? amax * (s_q * kRcp6) : 0.0f;
      b.scale_byte = e4m3_from_float(sf32);
      const float sfd = e4m3_to_float(b.scale_byte);
      const bool nonzero = zero_rule == ZeroScaleRule::kVecMaxTest ? amax != 0.0f : sfd != 0.0f;
      b.out_scale = nonzero ? std::fmin(1.0f / (sfd * (1.0f / s_q)), FLT_MAX) : 0.0f;
      break;
    }
    case QuantizerVariant::kReference: {
      // vLLM ref_nvfp4_quant: torch.clamp(scale, -448, 448) then .to(float8_e4m3fn) (RN, and within
      // range after the clamp, so the saturating conversion gives the same byte).
      const float sf32 = std::clamp(s_q * (amax * kRcp6), -kE4m3Max, kE4m3Max);
      b.scale_byte = e4m3_from_float(sf32);
      const float sfd = e4m3_to_float(b.scale_byte);
      // get_reciprocal(x) = where(x == 0, 0, 1/x), applied to S and to the product.
      const float inv_s = s_q == 0.0f ? 0.0f : 1.0f / s_q;
      const float p = sfd * inv_s;
      b.out_scale = p == 0.0f ? 0.0f : 1.0f / p;
      break;
    }
  }
  return b;
}

}  // namespace

bool QuantizedRowRef::admits(size_t element, uint8_t code) const {
  if (!unverified.empty() && unverified[element / kNvfp4BlockSize]) return true;
  const uint8_t c = e2m1_canonical(code);
  if (c == e2m1_canonical(codes[element])) return true;
  return alt_codes[element] != kNoAlternative && c == e2m1_canonical(alt_codes[element]);
}

bool QuantizedRowRef::admits_scale(size_t block, uint8_t scale) const {
  if (!unverified.empty() && unverified[block]) return true;
  return scale == scales[block] || (alt_scales[block] != kNoAlternative && scale == alt_scales[block]);
}

QuantizedRowRef quantize_row_ref(std::span<const float> x, float s_q, QuantizerVariant variant,
                                 ZeroScaleRule zero_rule) {
  if (x.size() % kNvfp4BlockSize != 0) {
    throw InputError("quantize_row_ref: row length " + std::to_string(x.size()) + " is not a multiple of 16");
  }
  const size_t n = x.size(), blocks = n / kNvfp4BlockSize;
  QuantizedRowRef q;
  q.codes.assign(n, 0);
  q.scaled.assign(n, 0.0f);
  q.alt_codes.assign(n, kNoAlternative);
  q.scales.assign(blocks, 0);
  q.alt_scales.assign(blocks, kNoAlternative);  // sf32 is emulated bit-exactly in every variant
  q.unverified.assign(blocks, 0);
  for (size_t b = 0; b < blocks; ++b) {
    const size_t begin = b * kNvfp4BlockSize;
    float amax = 0.0f;  // |x| and max are exact in any type
    bool has_nan = false;
    for (size_t i = begin; i < begin + kNvfp4BlockSize; ++i) {
      has_nan |= std::isnan(x[i]);
      amax = std::max(amax, std::fabs(x[i]));
    }
    const BlockScales s = block_scales(amax, s_q, variant, zero_rule);
    q.scales[b] = s.scale_byte;
    q.unverified[b] = has_nan ? 1 : 0;
    for (size_t i = begin; i < begin + kNvfp4BlockSize; ++i) {
      float y = x[i] * s.out_scale;
      // The references clamp to [-6, 6] before the cast; cvt.satfinite saturates: same codes.
      if (variant == QuantizerVariant::kReference && !std::isnan(y)) y = std::clamp(y, -kE2m1Max, kE2m1Max);
      q.scaled[i] = y;
      q.codes[i] = e2m1_from_float(y);
      if (variant == QuantizerVariant::kFastMath && std::isfinite(s.out_scale) && s.out_scale != 0.0f) {
        q.alt_codes[i] = fast_math_alternative(y, q.codes[i]);
      }
    }
  }
  return q;
}

}  // namespace moefuzz
