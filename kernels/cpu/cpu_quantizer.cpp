#include "kernels/cpu/cpu_quantizer.h"

#include <immintrin.h>

#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>

#include "core/cpu_features.h"
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

// e2m1_from_float of 16 values, eight at a time: the magnitude code counts the thresholds passed
// (ordered compares: a NaN passes none), the sign bit of x gives 0x8 (-0 included), a NaN gives 0x7.
// A value on threshold i goes to the even code of i and i + 1 (core/e2m1.h): it stays below the even
// thresholds (strictly greater passes) and passes the odd ones.
__attribute__((target("avx2"))) void e2m1_codes16_avx2(const float* y, uint8_t* codes) {
  for (int k = 0; k < 16; k += 8) {
    const __m256 x = _mm256_loadu_ps(y + k);
    const __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
    __m256i m = _mm256_setzero_si256();
    for (size_t i = 0; i < kE2m1Thresholds.size(); i += 2)
      m = _mm256_sub_epi32(
          m, _mm256_castps_si256(_mm256_cmp_ps(a, _mm256_set1_ps(kE2m1Thresholds[i]), _CMP_GT_OQ)));
    for (size_t i = 1; i < kE2m1Thresholds.size(); i += 2)
      m = _mm256_sub_epi32(
          m, _mm256_castps_si256(_mm256_cmp_ps(a, _mm256_set1_ps(kE2m1Thresholds[i]), _CMP_GE_OQ)));
    const __m256i sign =
        _mm256_srli_epi32(_mm256_and_si256(_mm256_castps_si256(x), _mm256_set1_epi32(INT32_MIN)), 28);
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    const __m256i code = _mm256_blendv_epi8(_mm256_or_si256(m, sign), _mm256_set1_epi32(0x7), nan);
    // 8 x int32 -> 8 bytes (each code < 16).
    const __m128i lo = _mm256_castsi256_si128(code), hi = _mm256_extracti128_si256(code, 1);
    const __m128i bytes = _mm_packus_epi16(_mm_packus_epi32(lo, hi), _mm_setzero_si128());
    _mm_storel_epi64(reinterpret_cast<__m128i*>(codes + k), bytes);
  }
}

}  // namespace

float rcp_approx_ftz(float x) { return flush_subnormal(1.0f / flush_subnormal(x)); }

void quantize_nvfp4_row(const float* x, int64_t n, float s_q, const QuantizerFlags& f, uint8_t* packed,
                        uint8_t* scales, float* scaled) {
  // RN(1/6) as an fp32 constant (0x3E2AAAAB) = rcp.approx(6.0f), SPEC.md §1.5 [MEASURED].
  const float inv6 = 1.0f / 6.0f;
  static const bool simd = cpu_has_avx2();
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
    } else if (simd) {
      e2m1_codes16_avx2(y, c);
    } else {
      for (int j = 0; j < 16; ++j) c[j] = e2m1_from_float(y[j]);
    }
    for (int j = 0; j < 16; j += 2)
      packed[b * 8 + j / 2] = f.nibble_order_swapped ? static_cast<uint8_t>((c[j] << 4) | c[j + 1])
                                                     : static_cast<uint8_t>((c[j + 1] << 4) | c[j]);
  }
}

}  // namespace moefuzz::cpu
