#include "kernels/cpu/fp8_row_dot.h"

#include <immintrin.h>

#include <stdexcept>

#include "core/cpu_features.h"
#include "core/fp8_block_quant.h"

namespace moefuzz::cpu {
namespace {

// The exact dot of one 128-element K block of E4M3 values. Each product is exact in fp32 (4 + 4
// significant bits, |p| in [2^-18, 448^2]), and any partial sum of 128 of them is exact in double
// (multiples of 2^-18 below 2^25: 43 bits), so eight independent lanes and any final order give the
// exact block sum.
double exact_block_dot(const float* x, const float* w) {
  double lane[8] = {};
  for (int64_t k = 0; k < kFp8WeightBlock; k += 8)
    for (int64_t i = 0; i < 8; ++i) lane[i] += static_cast<double>(x[k + i] * w[k + i]);
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

// The steps after one K block's dots of the four columns (col[c]: four double lanes of column c's
// exact partial sums): each column's lanes into one by hadd and a cross-half add (exact: any order),
// P rounded to fp32 once, then acc += fl(fl(P * sa) * sb) in four fp32 lanes.
__attribute__((target("avx2"), always_inline)) inline __m128 add_block(__m128 acc, const __m256d (&col)[4],
                                                                       float sa, float sb) {
  const __m256d t0 = _mm256_hadd_pd(col[0], col[1]), t1 = _mm256_hadd_pd(col[2], col[3]);
  const __m256d sums =
      _mm256_add_pd(_mm256_permute2f128_pd(t0, t1, 0x20), _mm256_permute2f128_pd(t0, t1, 0x31));
  const __m128 block = _mm256_cvtpd_ps(sums);
  return _mm_add_ps(acc, _mm_mul_ps(_mm_mul_ps(block, _mm_set1_ps(sa)), _mm_set1_ps(sb)));
}

// Four columns in lanes: per column eight double lanes of exact products (two registers).
__attribute__((target("avx2"))) void fp8_row_x4_avx2(const float* x, const float* sa, const float* w,
                                                     int64_t K, const float* sb, float acc_out[4]) {
  const int64_t Kb = K / kFp8WeightBlock;
  __m128 acc = _mm_setzero_ps();
  for (int64_t kb = 0; kb < Kb; ++kb) {
    const int64_t k0 = kb * kFp8WeightBlock;
    __m256d lo[4], hi[4];
    for (int c = 0; c < 4; ++c) lo[c] = hi[c] = _mm256_setzero_pd();
    for (int64_t k = k0; k < k0 + kFp8WeightBlock; k += 8) {
      const __m256 xv = _mm256_loadu_ps(x + k);
      for (int c = 0; c < 4; ++c) {
        const __m256 p = _mm256_mul_ps(xv, _mm256_loadu_ps(w + c * K + k));  // exact in fp32
        lo[c] = _mm256_add_pd(lo[c], _mm256_cvtps_pd(_mm256_castps256_ps128(p)));
        hi[c] = _mm256_add_pd(hi[c], _mm256_cvtps_pd(_mm256_extractf128_ps(p, 1)));
      }
    }
    const __m256d col[4] = {_mm256_add_pd(lo[0], hi[0]), _mm256_add_pd(lo[1], hi[1]),
                            _mm256_add_pd(lo[2], hi[2]), _mm256_add_pd(lo[3], hi[3])};
    acc = add_block(acc, col, sa[kb], sb[kb]);
  }
  _mm_storeu_ps(acc_out, acc);
}

// GCC 12's avx512fintrin.h passes _mm512_undefined_* operands to its builtins, which
// -W(maybe-)uninitialized reports in every caller (a header false positive, not this file's).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

// fp8_row_x4_avx2 with sixteen products per multiply and eight double lanes per add (AVX-512F).
__attribute__((target("avx512f,avx2"))) void fp8_row_x4_avx512(const float* x, const float* sa,
                                                               const float* w, int64_t K, const float* sb,
                                                               float acc_out[4]) {
  const int64_t Kb = K / kFp8WeightBlock;
  __m128 acc = _mm_setzero_ps();
  for (int64_t kb = 0; kb < Kb; ++kb) {
    const int64_t k0 = kb * kFp8WeightBlock;
    __m512d lo[4], hi[4];
    for (int c = 0; c < 4; ++c) lo[c] = hi[c] = _mm512_setzero_pd();
    for (int64_t k = k0; k < k0 + kFp8WeightBlock; k += 16) {
      const __m512 xv = _mm512_loadu_ps(x + k);
      for (int c = 0; c < 4; ++c) {
        const __m512 p = _mm512_mul_ps(xv, _mm512_loadu_ps(w + c * K + k));  // exact in fp32
        lo[c] = _mm512_add_pd(lo[c], _mm512_cvtps_pd(_mm512_castps512_ps256(p)));
        hi[c] = _mm512_add_pd(
            hi[c], _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(p), 1))));
      }
    }
    __m256d col[4];
    for (int c = 0; c < 4; ++c) {
      const __m512d s8 = _mm512_add_pd(lo[c], hi[c]);
      col[c] = _mm256_add_pd(_mm512_castpd512_pd256(s8), _mm512_extractf64x4_pd(s8, 1));
    }
    acc = add_block(acc, col, sa[kb], sb[kb]);
  }
  _mm_storeu_ps(acc_out, acc);
}

}  // namespace

Fp8RowLoop fp8_row_loop() {
  if (cpu_has_avx512()) return Fp8RowLoop::kAvx512;
  return cpu_has_avx2() ? Fp8RowLoop::kAvx2 : Fp8RowLoop::kScalar;
}

void fp8_row_columns(Fp8RowLoop loop, const float* x, const float* sa, const float* w, int cols, int64_t K,
                     const float* sb, float* acc) {
  if (cols < 1 || cols > 4 || K % kFp8WeightBlock != 0)
    throw std::logic_error("fp8_row_columns: 1 to 4 columns of a K that is a multiple of 128");
  if (cols == 4 && loop == Fp8RowLoop::kAvx512 && cpu_has_avx512())
    return fp8_row_x4_avx512(x, sa, w, K, sb, acc);
  if (cols == 4 && loop != Fp8RowLoop::kScalar && cpu_has_avx2())
    return fp8_row_x4_avx2(x, sa, w, K, sb, acc);
  const int64_t Kb = K / kFp8WeightBlock;
  for (int c = 0; c < cols; ++c) {
    acc[c] = 0.0f;
    for (int64_t kb = 0; kb < Kb; ++kb) {
      const int64_t k0 = kb * kFp8WeightBlock;
      const float block = static_cast<float>(exact_block_dot(x + k0, w + c * K + k0));
      const float scaled = block * sa[kb];  // Triton order: fl(fl(P * sa) * sb)
      acc[c] += scaled * sb[kb];
    }
  }
}

}  // namespace moefuzz::cpu
