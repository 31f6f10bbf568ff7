#include "core/e4m3_rows.h"

#include "core/cpu_features.h"
#include "core/e4m3.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace moefuzz {
namespace {

#if defined(__x86_64__)
// e4m3_from_float_nosat of eight floats as eight int32 codes, step for step on the bits (core/e4m3.cpp):
// the normal range keeps the top 3 mantissa bits with ties to even and rebiases the exponent; the
// subnormal range (|v| < 2^-6) rounds |v| * 2^9 to an integer by adding and removing 2^23; 448 < |v|
// <= 464 saturates to 0x7E, |v| > 464 (Inf too) is sign | 0x7F, NaN is 0x7F.
__attribute__((target("avx2"))) __m256i e4m3_nosat_x8(__m256 v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i a = _mm256_and_si256(u, _mm256_set1_epi32(0x7FFFFFFF));
  const __m256i sign = _mm256_and_si256(_mm256_srli_epi32(u, 24), _mm256_set1_epi32(0x80));
  // Normal: kept = (a + 0x7FFFF + ((a >> 20) & 1)) >> 20, code = kept - (120 << 3), at most 0x7E.
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(a, 20), _mm256_set1_epi32(1));
  const __m256i kept =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(a, _mm256_set1_epi32(0x7FFFF)), odd), 20);
  const __m256i normal =
      _mm256_min_epu32(_mm256_sub_epi32(kept, _mm256_set1_epi32(120 << 3)), _mm256_set1_epi32(kE4m3MaxCode));
  // Subnormal: m = (|v| * 2^9 + 2^23) - 2^23, an integer in [0, 8].
  const __m256 m = _mm256_sub_ps(
      _mm256_add_ps(_mm256_mul_ps(_mm256_castsi256_ps(a), _mm256_set1_ps(0x1p9f)), _mm256_set1_ps(0x1p23f)),
      _mm256_set1_ps(0x1p23f));
  const __m256i subnormal = _mm256_cvttps_epi32(m);
  __m256i code = _mm256_blendv_epi8(normal, subnormal, _mm256_cmpgt_epi32(_mm256_set1_epi32(0x3C800000), a));
  code = _mm256_blendv_epi8(code, _mm256_set1_epi32(kE4m3MaxCode),
                            _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x43E00000 - 1)));  // >= 448
  code = _mm256_or_si256(code, sign);
  code = _mm256_blendv_epi8(code, _mm256_or_si256(sign, _mm256_set1_epi32(kE4m3NaNCode)),
                            _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x43E80000)));  // > 464
  return _mm256_blendv_epi8(code, _mm256_set1_epi32(kE4m3NaNCode),
                            _mm256_cmpgt_epi32(a, _mm256_set1_epi32(0x7F800000)));  // NaN
}

__attribute__((target("avx2"))) int64_t e4m3_nosat_codes_avx2(const float* x, int64_t n, float multiplier,
                                                              uint8_t* codes) {
  const __m256 mul = _mm256_set1_ps(multiplier);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i c = e4m3_nosat_x8(_mm256_mul_ps(_mm256_loadu_ps(x + i), mul));
    const __m128i words = _mm_packus_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(codes + i), _mm_packus_epi16(words, words));
  }
  return i;
}
#endif

}  // namespace

void e4m3_nosat_codes(const float* x, int64_t n, float multiplier, uint8_t* codes, bool simd) {
  int64_t i = 0;
#if defined(__x86_64__)
  if (simd && cpu_has_avx2()) i = e4m3_nosat_codes_avx2(x, n, multiplier, codes);
#else
  (void)simd;
#endif
  for (; i < n; ++i) codes[i] = e4m3_from_float_nosat(x[i] * multiplier);
}

}  // namespace moefuzz
