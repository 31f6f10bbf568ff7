#include "kernels/cpu/cpu_quantizer.h"

#include <cfloat>
#include <cmath>

#include "core/e2m1.h"
#include "core/e4m3.h"

namespace moefuzz::cpu {
namespace {

float flush_subnormal(float v) { return std::fabs(v) < FLT_MIN ? std::copysign(0.0f, v) : v; }

// Truncating E4M3 conversion (the "scale truncated instead of RNE" mutant); saturating like satfinite.
uint8_t e4m3_truncated(float x) {
  if (std::isnan(x)) return kE4m3NaNCode;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const double a = std::fabs(static_cast<double>(x));
  if (a >= 448.0) return sign | kE4m3MaxCode;
  if (a < 0x1p-6) return sign | static_cast<uint8_t>(std::floor(a * 0x1p9));
  int e = 0;
  (void)std::frexp(a, &e);
  const int exponent = e - 1;
  const int q = static_cast<int>(std::floor(std::ldexp(a, 3 - exponent)));  // [8, 16)
  return sign | static_cast<uint8_t>(((exponent + 7) << 3) | (q - 8));
}

uint8_t e4m3_with_flags(float x, const QuantizerFlags& f) {
  // Without satfinite, RN overflows to NaN (E4M3 has no Inf) above the 464 rounding boundary.
  if (f.e4m3_no_saturation && !(std::fabs(x) < 464.0f)) return kE4m3NaNCode;
  return f.e4m3_truncate ? e4m3_truncated(x) : e4m3_from_float(x);
}

uint8_t e2m1_with_flags(float y, const QuantizerFlags& f) {
  const uint8_t code = e2m1_from_float(y);
  if (!f.e2m1_ties_away || std::isnan(y)) return code;
  // Ties that RN-even sends DOWN (toward the even neighbour 0/1/2/4): 0.25, 1.25, 2.5, 5.
  const float a = std::fabs(y);
  if (a == 0.25f || a == 1.25f || a == 2.5f || a == 5.0f) return static_cast<uint8_t>(code + 1);
  return code;
}

}  // namespace

float rcp_approx_ftz(float x) { return flush_subnormal(1.0f / flush_subnormal(x)); }

void quantize_nvfp4_row(const float* x, int64_t n, float s_q, const QuantizerFlags& f, uint8_t* packed,
                        uint8_t* scales, float* scaled) {
  // RN(1/6) as an fp32 constant (0x3E2AAAAB) = rcp.approx(6.0f), SPEC.md §1.5 [MEASURED].
  const float inv6 = 1.0f / 6.0f;
  for (int64_t b = 0; b < n / 16; ++b) {
    const float* xb = x + b * 16;
    float vec_max = 0.0f;
    // max(vec_max, |x|) ignoring NaN, as std::fmax (a libm call per element) does: vec_max starts at +0
    // and is never NaN, |x| is never -0, so a comparison gives the same value.
    for (int j = 0; j < 16; ++j) {
      const float a = std::fabs(xb[j]);
      vec_max = a > vec_max ? a : vec_max;
    }
    float sf32 = 0.0f, out_scale = 0.0f;
    uint8_t sf8 = 0;
    switch (f.variant) {
      case QuantizerVariant::kFastMath: {
        sf32 = s_q * (vec_max * rcp_approx_ftz(6.0f));
        sf8 = e4m3_with_flags(sf32, f);
        const float sfd = e4m3_to_float(sf8);
        const bool nonzero = f.zero_rule == ZeroScaleRule::kVecMaxTest ? vec_max != 0.0f : sfd != 0.0f;
        out_scale = nonzero ? rcp_approx_ftz(sfd * rcp_approx_ftz(s_q)) : 0.0f;
        break;
      }
      case QuantizerVariant::kExact: {
        sf32 = vec_max != 0.0f ? vec_max * (s_q * inv6) : 0.0f;
        sf8 = e4m3_with_flags(sf32, f);
        const float sfd = e4m3_to_float(sf8);
        const bool nonzero = f.zero_rule == ZeroScaleRule::kVecMaxTest ? vec_max != 0.0f : sfd != 0.0f;
        out_scale = nonzero ? std::fmin(1.0f / (sfd * (1.0f / s_q)), FLT_MAX) : 0.0f;
        break;
      }
      case QuantizerVariant::kReference: {
        // vLLM ref_nvfp4_quant: scale = S*(vec_max*(1/6)) clamped to 448; 1/(scale*(1/S)), 0 if scale is 0.
        sf32 = std::fmin(s_q * (vec_max * inv6), 448.0f);
        sf8 = e4m3_with_flags(sf32, f);
        const float sfd = e4m3_to_float(sf8);
        out_scale = sfd != 0.0f ? 1.0f / (sfd * (1.0f / s_q)) : 0.0f;
        break;
      }
    }
    scales[b] = sf8;
    // The block's scaled values, then their codes, then the packing: loops the compiler vectorizes.
    float y[16];
    uint8_t c[16];
    for (int j = 0; j < 16; ++j) y[j] = xb[j] * out_scale;
    if (scaled)
      for (int j = 0; j < 16; ++j) scaled[b * 16 + j] = y[j];
    if (f.e2m1_ties_away) {
      for (int j = 0; j < 16; ++j) c[j] = e2m1_with_flags(y[j], f) & 0xF;
    } else {
      for (int j = 0; j < 16; ++j) c[j] = e2m1_from_float(y[j]) & 0xF;
    }
    for (int j = 0; j < 16; j += 2)
      packed[b * 8 + j / 2] = f.nibble_order_swapped ? static_cast<uint8_t>((c[j] << 4) | c[j + 1])
                                                     : static_cast<uint8_t>((c[j + 1] << 4) | c[j]);
  }
}

}  // namespace moefuzz::cpu
