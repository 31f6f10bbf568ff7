// The AVX-512 loop of fp8_block_dot_rows (oracles/fp8_block_dot_loops.h): 8 double lanes per FMA,
// each 32-byte piece of a weight block decoded in registers (no buffer) and used by up to 8
// activation rows at once; the row sums and magnitude sums of a block are reduced together.
// Exactness is the header's (oracles/fp8_block_dot.h): products n_a * n_w are integers below 2^35.7
// and every partial sum of a block an integer below 2^43, exact in double in any order.
#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "oracles/fp8_block_dot_loops.h"

namespace moefuzz::detail {

#if defined(__x86_64__)
namespace {

#define MOEFUZZ_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))
// GCC 12's avx512fintrin.h passes _mm512_undefined_* operands to its builtins, which
// -Wmaybe-uninitialized reports in every caller (a header false positive, not this file's).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

// 32 E4M3 bytes to four vectors of 8 doubles (elements 0-7, 8-15, 16-23, 24-31), each the E4M3 value
// times 2^-8, by the fp16 trick of the header (sign << 15 | (code & 0x7F) << 7 is an fp16 holding
// value * 2^-8 exactly, subnormals included). NaN codes (0x7F, 0xFF) give 0 and set bits of `nan`.
MOEFUZZ_AVX512 inline void decode32(const uint8_t* bytes, __m512d w[4], __mmask32& nan) {
  const __m512i x = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes)));
  const __m512i mag = _mm512_and_si512(_mm512_slli_epi16(x, 7), _mm512_set1_epi16(0x3F80));
  const __m512i sign =
      _mm512_and_si512(_mm512_slli_epi16(x, 8), _mm512_set1_epi16(static_cast<int16_t>(0x8000)));
  const __mmask32 is_nan = _mm512_cmpeq_epi16_mask(mag, _mm512_set1_epi16(0x3F80));
  nan |= is_nan;
  const __m512i h = _mm512_maskz_mov_epi16(static_cast<__mmask32>(~is_nan), _mm512_or_si512(mag, sign));
  const __m512 f0 = _mm512_cvtph_ps(_mm512_castsi512_si256(h));
  const __m512 f1 = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1));
  w[0] = _mm512_cvtps_pd(_mm512_castps512_ps256(f0));
  w[1] = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f0), 1)));
  w[2] = _mm512_cvtps_pd(_mm512_castps512_ps256(f1));
  w[3] = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f1), 1)));
}

// The block's sum and magnitude sum of one row from its two accumulators, reduced together
// (integer-valued lanes below 2^43: exact in any order) and converted to int64 by one instruction.
MOEFUZZ_AVX512 inline void store_block(__m512d s, __m512d m, int64_t* sum, int64_t* abs_sum) {
  const __m256d s4 = _mm256_add_pd(_mm512_castpd512_pd256(s), _mm512_extractf64x4_pd(s, 1));
  const __m256d m4 = _mm256_add_pd(_mm512_castpd512_pd256(m), _mm512_extractf64x4_pd(m, 1));
  const __m256d h = _mm256_hadd_pd(s4, m4);  // s0+s1, m0+m1, s2+s3, m2+m3
  const __m128i i = _mm_cvtpd_epi64(_mm_add_pd(_mm256_castpd256_pd128(h), _mm256_extractf128_pd(h, 1)));
  *sum = _mm_cvtsi128_si64(i);
  *abs_sum = _mm_extract_epi64(i, 1);
}

// NR (1..8) activation rows against one weight row: per block, each 32-byte piece is decoded into
// 4 + 4 registers (values, magnitudes) and used by every row: one load, one AND and two FMAs per row
// and 8 products (a stored magnitude table instead of the AND measured slower: twice the bytes). A
// accumulators per sum and row keep >= 8 independent FMA chains (latency 4, two FMA ports); 2 * NR * A + 8 <=
// 32 registers.
template <int NR>
MOEFUZZ_AVX512 void rows_avx512(const double* const* av, const uint8_t* codes, int64_t full,
                                const uint8_t* tail, int64_t blocks, int64_t* const* sums,
                                int64_t* const* abs_sums, __mmask32& nan_out) {
  __mmask32 nan = 0;  // a local: the reference would be stored to memory at every update
  constexpr int A = NR >= 4 ? 1 : (NR == 1 ? 4 : 2);
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* wb = b < full ? codes + b * kFp8DotBlock : tail;
    const int64_t off = b * kFp8DotBlock;
    __m512d acc[NR][A], acc_abs[NR][A];
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r)
#pragma GCC unroll 4
      for (int q = 0; q < A; ++q) acc[r][q] = acc_abs[r][q] = _mm512_setzero_pd();
#pragma GCC unroll 4
    for (int c = 0; c < kFp8DotBlock / 32; ++c) {
      __m512d w[4], wa[4];
      decode32(wb + 32 * c, w, nan);
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q) wa[q] = _mm512_abs_pd(w[q]);
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q)
#pragma GCC unroll 8
        for (int r = 0; r < NR; ++r) {
          const int64_t i = off + 32 * c + 8 * q;
          acc[r][q % A] = _mm512_fmadd_pd(_mm512_loadu_pd(av[r] + i), w[q], acc[r][q % A]);
          acc_abs[r][q % A] =
              _mm512_fmadd_pd(_mm512_abs_pd(_mm512_loadu_pd(av[r] + i)), wa[q], acc_abs[r][q % A]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) {
      __m512d s = acc[r][0], m = acc_abs[r][0];
#pragma GCC unroll 4
      for (int q = 1; q < A; ++q) {
        s = _mm512_add_pd(s, acc[r][q]);
        m = _mm512_add_pd(m, acc_abs[r][q]);
      }
      store_block(s, m, sums[r] + b, abs_sums[r] + b);
    }
  }
  nan_out |= nan;
}

using RowsFn = void (*)(const double* const*, const uint8_t*, int64_t, const uint8_t*, int64_t,
                        int64_t* const*, int64_t* const*, __mmask32&);
constexpr RowsFn kRowsFn[9] = {nullptr,        rows_avx512<1>, rows_avx512<2>, rows_avx512<3>, rows_avx512<4>,
                               rows_avx512<5>, rows_avx512<6>, rows_avx512<7>, rows_avx512<8>};

}  // namespace

void fp8_block_dot_rows_avx512(const DecodedFp8& a, int64_t ra, int na, Fp8Row w, Fp8BlockDot* out) {
  const int64_t blocks = a.blocks();
  const int64_t full = w.cols / kFp8DotBlock;  // blocks whose bytes are all inside the row
  alignas(64) uint8_t tail[kFp8DotBlock] = {};
  if (full < blocks)  // last partial block: zero-padded copy (zero codes add nothing)
    std::memcpy(tail, w.codes + full * kFp8DotBlock, static_cast<size_t>(w.cols - full * kFp8DotBlock));
  __mmask32 nan = 0;
  // Rows in ceil(na / 8) groups of near-equal size (17 rows: 6, 6, 5): each group decodes the weight
  // row once, so fewer, fuller groups decode less.
  const int groups = (na + 7) / 8;
  for (int g = 0, r0 = 0; g < groups; ++g) {
    const int n = (na - r0) / (groups - g);
    const double* av[8];
    int64_t* sums[8];
    int64_t* abs_sums[8];
    for (int r = 0; r < n; ++r) {
      av[r] = a.value_row(ra + r0 + r);
      sums[r] = out[r0 + r].sum.data();
      abs_sums[r] = out[r0 + r].abs_sum.data();
    }
    kRowsFn[n](av, w.codes, full, tail, blocks, sums, abs_sums, nan);
    r0 += n;
  }
  const bool wnan = nan != 0;
  for (int r = 0; r < na; ++r) out[r].nan = wnan || a.row_has_nan(ra + r);
}
#else
void fp8_block_dot_rows_avx512(const DecodedFp8&, int64_t, int, Fp8Row, Fp8BlockDot*) {}
#endif

}  // namespace moefuzz::detail
