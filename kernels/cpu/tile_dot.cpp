#include "kernels/cpu/tile_dot.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "core/bf16.h"
#include "core/cpu_features.h"

namespace moefuzz::cpu {
namespace {

// One row, 16 columns at a time (the reference order; the compiler keeps it in SSE registers).
void tile_dot_row_scalar(const float* x, const float* s, const float* codes, const float* scales,
                         const TileDotShape& shape, float* acc) {
  constexpr int64_t kCols = 16;
  const int64_t Kb = shape.K / 16, nt = shape.nt;
  for (int64_t c0 = 0; c0 < nt; c0 += kCols) {
    float* out = acc + c0;
    for (int64_t n = 0; n < kCols; ++n) out[n] = 0.0f;
    for (int64_t g0 = 0; g0 < Kb; g0 += shape.group) {
      float part[kCols] = {};
      for (int64_t kb = g0; kb < std::min(Kb, g0 + shape.group); ++kb) {
        float p[kCols] = {};
        for (int64_t j = 0; j < 16; ++j) {
          const float xj = x[kb * 16 + j];
          const float* wj = codes + (kb * 16 + j) * nt + c0;
          for (int64_t n = 0; n < kCols; ++n) p[n] += xj * wj[n];
        }
        const int64_t sb = shape.first_scale_of_group ? g0 : kb;
        const float sa = s[sb];
        const float* sw = scales + sb * nt + c0;
        for (int64_t n = 0; n < kCols; ++n) part[n] += p[n] * (sa * sw[n]);
      }
      for (int64_t n = 0; n < kCols; ++n) out[n] += part[n];
      if (shape.bf16_accumulator)
        for (int64_t n = 0; n < kCols; ++n) out[n] = round_to_bf16(out[n]);
    }
  }
}

constexpr int kRegs = 4;  // 32 columns per pass: four registers of eight fp32 lanes

// The kernel's fp32 association around a tile's block sums, kRows rows x 32 columns per pass in
// registers: per group of blocks part += p * (sa * sw) block by block, then acc += part (rounded to
// bf16 under the mutant). `sums.block(kb, c0, p)` gives block kb's 16-term sums p[r][i] (eight
// columns each) of the columns from c0. No FMA in this target: each product and sum rounds on its own.
template <int kRows, class Sums>
__attribute__((target("avx2"), always_inline)) inline void tile_pass(const Sums& sums,
                                                                     const float* const s[2],
                                                                     const float* scales,
                                                                     const TileDotShape& shape,
                                                                     float* const acc[2]) {
  const int64_t Kb = shape.K / 16, nt = shape.nt;
  for (int64_t c0 = 0; c0 < nt; c0 += 8 * kRegs) {
    __m256 out[kRows][kRegs];
    for (int r = 0; r < kRows; ++r)
      for (int i = 0; i < kRegs; ++i) out[r][i] = _mm256_setzero_ps();
    for (int64_t g0 = 0; g0 < Kb; g0 += shape.group) {
      __m256 part[kRows][kRegs];
      for (int r = 0; r < kRows; ++r)
        for (int i = 0; i < kRegs; ++i) part[r][i] = _mm256_setzero_ps();
      for (int64_t kb = g0; kb < std::min(Kb, g0 + shape.group); ++kb) {
        __m256 p[kRows][kRegs];
        sums.template block<kRows>(kb, c0, p);
        const int64_t sb = shape.first_scale_of_group ? g0 : kb;
        const float* sw = scales + sb * nt + c0;
        for (int r = 0; r < kRows; ++r) {
          const __m256 sa = _mm256_broadcast_ss(s[r] + sb);
          for (int i = 0; i < kRegs; ++i)
            part[r][i] = _mm256_add_ps(
                part[r][i], _mm256_mul_ps(p[r][i], _mm256_mul_ps(sa, _mm256_loadu_ps(sw + 8 * i))));
        }
      }
      for (int r = 0; r < kRows; ++r)
        for (int i = 0; i < kRegs; ++i) out[r][i] = _mm256_add_ps(out[r][i], part[r][i]);
      if (shape.bf16_accumulator)
        for (int r = 0; r < kRows; ++r)
          for (int i = 0; i < kRegs; ++i) {
            alignas(32) float v[8];
            _mm256_store_ps(v, out[r][i]);
            for (float& e : v) e = round_to_bf16(e);
            out[r][i] = _mm256_load_ps(v);
          }
    }
    for (int r = 0; r < kRows; ++r)
      for (int i = 0; i < kRegs; ++i) _mm256_storeu_ps(acc[r] + c0 + 8 * i, out[r][i]);
  }
}

// Block sums of float operands (codes [K, nt]): p = sum over the block's 16 j in order of x[j] * w[j]
// per column, each product and sum rounded (eight add chains per row in flight).
struct FloatBlockSums {
  const float* const* x;
  const float* codes;
  int64_t nt;
  template <int kRows>
  __attribute__((target("avx2"), always_inline)) void block(int64_t kb, int64_t c0,
                                                            __m256 (&p)[kRows][kRegs]) const {
    for (int r = 0; r < kRows; ++r)
      for (int i = 0; i < kRegs; ++i) p[r][i] = _mm256_setzero_ps();
    const float* w = codes + kb * 16 * nt + c0;
    for (int64_t j = 0; j < 16; ++j, w += nt) {
      __m256 xj[kRows];
      for (int r = 0; r < kRows; ++r) xj[r] = _mm256_broadcast_ss(x[r] + kb * 16 + j);
      for (int i = 0; i < kRegs; ++i) {
        const __m256 wi = _mm256_loadu_ps(w + 8 * i);
        for (int r = 0; r < kRows; ++r) p[r][i] = _mm256_add_ps(p[r][i], _mm256_mul_ps(xj[r], wi));
      }
    }
  }
};

// Block sums of E2M1 code pairs (twice the values, pairs [K/2, nt]): the pairwise products summed in
// int16 (|sum| <= 16 x 144), widened to fp32 and scaled by 1/4, exactly the float sum.
struct PairBlockSums {
  const int8_t* const* x2;
  const uint16_t* pairs;
  int64_t nt;
  template <int kRows>
  __attribute__((target("avx2"), always_inline)) void block(int64_t kb, int64_t c0,
                                                            __m256 (&p)[kRows][kRegs]) const {
    __m256i sums[kRows][2];
    for (int r = 0; r < kRows; ++r) sums[r][0] = sums[r][1] = _mm256_setzero_si256();
    const uint16_t* w = pairs + kb * 8 * nt + c0;
    for (int q = 0; q < 8; ++q, w += nt) {
      const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
      const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16));
      for (int r = 0; r < kRows; ++r) {
        uint16_t pair;
        std::memcpy(&pair, x2[r] + kb * 16 + 2 * q, sizeof pair);
        const __m256i xp = _mm256_set1_epi16(static_cast<short>(pair));
        const __m256i xa = _mm256_abs_epi8(xp);  // |x| x (w with x's sign): maddubs wants one unsigned
        sums[r][0] = _mm256_add_epi16(sums[r][0], _mm256_maddubs_epi16(xa, _mm256_sign_epi8(w0, xp)));
        sums[r][1] = _mm256_add_epi16(sums[r][1], _mm256_maddubs_epi16(xa, _mm256_sign_epi8(w1, xp)));
      }
    }
    const __m256 quarter = _mm256_set1_ps(0.25f);
    for (int r = 0; r < kRows; ++r)
      for (int h = 0; h < 2; ++h) {
        const __m256i lo = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(sums[r][h]));
        const __m256i hi = _mm256_cvtepi16_epi32(_mm256_extracti128_si256(sums[r][h], 1));
        p[r][2 * h] = _mm256_mul_ps(_mm256_cvtepi32_ps(lo), quarter);
        p[r][2 * h + 1] = _mm256_mul_ps(_mm256_cvtepi32_ps(hi), quarter);
      }
  }
};

template <int kRows>
__attribute__((target("avx2"))) void tile_dot_rows_avx2(const float* const x[2], const float* const s[2],
                                                        const float* codes, const float* scales,
                                                        const TileDotShape& shape, float* const acc[2]) {
  tile_pass<kRows>(FloatBlockSums{x, codes, shape.nt}, s, scales, shape, acc);
}

template <int kRows>
__attribute__((target("avx2"))) void fp4_tile_dot_rows_avx2(const int8_t* const x2[2],
                                                            const float* const s[2], const uint16_t* pairs,
                                                            const float* scales, const TileDotShape& shape,
                                                            float* const acc[2]) {
  tile_pass<kRows>(PairBlockSums{x2, pairs, shape.nt}, s, scales, shape, acc);
}

}  // namespace

bool fp4_tile_dot_available() { return cpu_has_avx2(); }

void fp4_tile_dot_rows(int rows, const int8_t* const x2[2], const float* const s[2], const uint16_t* pairs,
                       const float* scales, const TileDotShape& shape, float* const acc[2]) {
  if (rows < 1 || rows > 2) throw std::logic_error("fp4_tile_dot_rows: one or two rows at a time");
  if (shape.K % 16 != 0 || shape.nt % 32 != 0 || shape.group < 1)
    throw std::logic_error("fp4_tile_dot_rows: K must be a multiple of 16 and the tile width of 32");
  if (!fp4_tile_dot_available()) throw std::logic_error("fp4_tile_dot_rows: this CPU has no AVX2");
  if (rows == 2)
    fp4_tile_dot_rows_avx2<2>(x2, s, pairs, scales, shape, acc);
  else
    fp4_tile_dot_rows_avx2<1>(x2, s, pairs, scales, shape, acc);
}

void tile_dot_rows(int rows, const float* const x[2], const float* const s[2], const float* codes,
                   const float* scales, const TileDotShape& shape, float* const acc[2], bool simd) {
  if (rows < 1 || rows > 2) throw std::logic_error("tile_dot_rows: one or two rows at a time");
  if (shape.K % 16 != 0 || shape.nt % 16 != 0 || shape.group < 1)
    throw std::logic_error("tile_dot_rows: K and the tile width must be multiples of 16");
  if (simd && shape.nt % 32 == 0 && cpu_has_avx2()) {
    if (rows == 2)
      tile_dot_rows_avx2<2>(x, s, codes, scales, shape, acc);
    else
      tile_dot_rows_avx2<1>(x, s, codes, scales, shape, acc);
    return;
  }
  for (int r = 0; r < rows; ++r) tile_dot_row_scalar(x[r], s[r], codes, scales, shape, acc[r]);
}

}  // namespace moefuzz::cpu
