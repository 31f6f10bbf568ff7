#pragma once
// AVX2 forms of oracles/bounds.h's scalar steps, four doubles at a time with the scalar results bit
// for bit: std::min/std::max with their NaN behaviour, fabs, float_down/float_up and bf16 rounding.
// For the oracle's SIMD loops (oracles/stages/combine_rows.cpp, gemm_bounds.cpp), which take them only
// where cpu_has_avx2() (core/cpu_features.h) and keep the scalar loop as their reference.
//
// Example (inside a function built with __attribute__((target("avx2")))):
//   const __m256d lo = moefuzz::avx2::round_bits_to_bf16(moefuzz::avx2::outward_float_bits<true>(x));
#include <immintrin.h>

namespace moefuzz::avx2 {

// std::min(a, b) is (b < a) ? b : a and std::max(a, b) is (a < b) ? b : a, NaN operands included;
// _mm256_min_pd(x, y) is (x < y) ? x : y and _mm256_max_pd(x, y) is (x > y) ? x : y, so both take
// their operands swapped.
__attribute__((target("avx2"))) inline __m256d std_min(__m256d a, __m256d b) { return _mm256_min_pd(b, a); }
__attribute__((target("avx2"))) inline __m256d std_max(__m256d a, __m256d b) { return _mm256_max_pd(b, a); }
__attribute__((target("avx2"))) inline __m256d abs_pd(__m256d x) {
  return _mm256_andnot_pd(_mm256_set1_pd(-0.0), x);
}

// The low 32 bits of each 64-bit lane of a comparison mask, as a 4 x 32-bit mask.
__attribute__((target("avx2"))) inline __m128i narrow_mask(__m256d m) {
  const __m256i idx = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
  return _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(_mm256_castpd_si256(m), idx));
}

// float_down (kDown) or float_up of four doubles (oracles/bounds.h): RN to float, then one step
// toward -inf (+inf) where the float lies above (below) the double; a zero steps to -+2^-149. A
// template: the comparison predicate must be a constant (clang requires it).
template <bool kDown>
__attribute__((target("avx2"))) inline __m128i outward_float_bits(__m256d x) {
  const __m128 f = _mm256_cvtpd_ps(x);
  const __m256d back = _mm256_cvtps_pd(f);
  const __m128i step = narrow_mask(_mm256_cmp_pd(back, x, kDown ? _CMP_GT_OQ : _CMP_LT_OQ));
  const __m128i bits = _mm_castps_si128(f);
  const __m128i zero = _mm_castps_si128(_mm_cmpeq_ps(f, _mm_setzero_ps()));
  const __m128i positive = _mm_castps_si128(_mm_cmpgt_ps(f, _mm_setzero_ps()));
  const __m128i one = _mm_set1_epi32(1);
  // Down: positive b - 1, negative b + 1; up: the reverse.
  const __m128i toward = kDown
                             ? _mm_blendv_epi8(_mm_add_epi32(bits, one), _mm_sub_epi32(bits, one), positive)
                             : _mm_blendv_epi8(_mm_sub_epi32(bits, one), _mm_add_epi32(bits, one), positive);
  const __m128i tiny = _mm_castps_si128(_mm_set1_ps(kDown ? -0x1p-149f : 0x1p-149f));
  const __m128i stepped = _mm_blendv_epi8(toward, tiny, zero);
  return _mm_blendv_epi8(bits, stepped, step);
}

// bf16_from_float then back (core/bf16.h) on four float bit patterns, widened to double.
__attribute__((target("avx2"))) inline __m256d round_bits_to_bf16(__m128i u) {
  const __m128i abs = _mm_and_si128(u, _mm_set1_epi32(0x7FFFFFFF));
  const __m128i is_nan = _mm_cmpgt_epi32(abs, _mm_set1_epi32(0x7F800000));
  const __m128i quiet = _mm_or_si128(u, _mm_set1_epi32(0x00400000));
  const __m128i lsb = _mm_and_si128(_mm_srli_epi32(u, 16), _mm_set1_epi32(1));
  const __m128i rne = _mm_add_epi32(u, _mm_add_epi32(_mm_set1_epi32(0x7FFF), lsb));
  const __m128i r =
      _mm_and_si128(_mm_blendv_epi8(rne, quiet, is_nan), _mm_set1_epi32(static_cast<int>(0xFFFF0000u)));
  return _mm256_cvtps_pd(_mm_castsi128_ps(r));
}

}  // namespace moefuzz::avx2
