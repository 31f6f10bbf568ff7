// The AVX-512 loop of fp8_block_dot_rows (oracles/fp8_block_dot_loops.h): 8 double lanes per FMA,
// each 32-byte piece of a weight block decoded in registers (no buffer) and used by up to 8
// activation rows at once; the row sums and magnitude sums of a block are reduced together.
// Exactness is the header's (oracles/fp8_block_dot.h): products n_a * n_w are integers below 2^35.7
// and every partial sum of a block an integer below 2^43, exact in double in any order.
#include <algorithm>
#include <array>
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
// -W(maybe-)uninitialized reports in every caller (a header false positive, not this file's).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

// 32 E4M3 bytes to four vectors of 8 doubles (elements 0-7, 8-15, 16-23, 24-31), each the E4M3 value
// times 2^-8, by the fp16 trick of the header (sign << 15 | (code & 0x7F) << 7 is an fp16 holding
// value * 2^-8 exactly, subnormals included). kNan: the bytes may hold NaN codes (0x7F, 0xFF), which
// give 0; without it (the caller checked) the masking is skipped.
template <bool kNan>
MOEFUZZ_AVX512 inline void decode32(const uint8_t* bytes, __m512d w[4]) {
  const __m512i x = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(bytes)));
  const __m512i mag = _mm512_and_si512(_mm512_slli_epi16(x, 7), _mm512_set1_epi16(0x3F80));
  const __m512i sign =
      _mm512_and_si512(_mm512_slli_epi16(x, 8), _mm512_set1_epi16(static_cast<int16_t>(0x8000)));
  __m512i h = _mm512_or_si512(mag, sign);
  if constexpr (kNan) {
    const __mmask32 is_nan = _mm512_cmpeq_epi16_mask(mag, _mm512_set1_epi16(0x3F80));
    h = _mm512_maskz_mov_epi16(static_cast<__mmask32>(~is_nan), h);
  }
  const __m512 f0 = _mm512_cvtph_ps(_mm512_castsi512_si256(h));
  const __m512 f1 = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(h, 1));
  w[0] = _mm512_cvtps_pd(_mm512_castps512_ps256(f0));
  w[1] = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f0), 1)));
  w[2] = _mm512_cvtps_pd(_mm512_castps512_ps256(f1));
  w[3] = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f1), 1)));
}

// Bytes 0..63 of 8 blocks (block j at src + j * stride) transposed: each of the 8 output vectors
// holds 8 positions, each position one element of all 8 blocks (byte j = block j). Three rounds of
// unpacks (bytes, words, dwords) within 128-bit lanes; the element order they leave is whatever it
// is: fp8_interleave_order() records it by transposing the identity.
// Also ORs into `nan` the bytes that are NaN codes.
MOEFUZZ_AVX512 inline void transpose_8x64(const uint8_t* src, int64_t stride, __m512i out[8],
                                          __mmask64& nan) {
  __m512i x[8], a[8], b[8];
  const __m512i low7 = _mm512_set1_epi8(0x7F);
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j) {
    x[j] = _mm512_loadu_si512(src + j * stride);
    nan |= _mm512_cmpeq_epi8_mask(_mm512_and_si512(x[j], low7), low7);
  }
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {  // a: blocks 2k, 2k+1 byte-interleaved (low, high half of each lane)
    a[2 * k] = _mm512_unpacklo_epi8(x[2 * k], x[2 * k + 1]);
    a[2 * k + 1] = _mm512_unpackhi_epi8(x[2 * k], x[2 * k + 1]);
  }
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h)  // b: blocks 4h..4h+3 word-interleaved
#pragma GCC unroll 2
    for (int k = 0; k < 2; ++k) {
      b[4 * h + 2 * k] = _mm512_unpacklo_epi16(a[4 * h + k], a[4 * h + 2 + k]);
      b[4 * h + 2 * k + 1] = _mm512_unpackhi_epi16(a[4 * h + k], a[4 * h + 2 + k]);
    }
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {  // all 8 blocks: one element per qword
    out[2 * k] = _mm512_unpacklo_epi32(b[k], b[4 + k]);
    out[2 * k + 1] = _mm512_unpackhi_epi32(b[k], b[4 + k]);
  }
}

// One group of 8 blocks of 128 bytes (block j at src + j * kFp8DotBlock) into 128 positions of 8
// bytes (dst, 1 KB). Returns whether a byte is a NaN code.
MOEFUZZ_AVX512 inline bool transpose_group(const uint8_t* src, uint8_t* dst) {
  __mmask64 nan = 0;
#pragma GCC unroll 2
  for (int h = 0; h < 2; ++h) {
    __m512i t[8];
    transpose_8x64(src + 64 * h, kFp8DotBlock, t, nan);
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) _mm512_store_si512(dst + 512 * h + 64 * k, t[k]);
  }
  return nan != 0;
}

// The 32 chunks (4 positions each) of one transposed group for NR rows: decode each chunk into
// 4 + 4 registers (values, magnitudes), then per row one load, one AND and two FMAs per 8 products.
template <int NR, int A, bool kNan>
MOEFUZZ_AVX512 __attribute__((always_inline)) inline void group_products(const double* const* tv, int64_t off,
                                                                         const uint8_t* t,
                                                                         __m512d (&acc)[NR][A],
                                                                         __m512d (&acc_abs)[NR][A]) {
  for (int c = 0; c < kFp8DotBlock / 4; ++c) {
    __m512d w[4], wa[4];
    decode32<kNan>(t + 32 * c, w);
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) wa[q] = _mm512_abs_pd(w[q]);
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q)
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) {
        const __m512d y = _mm512_loadu_pd(tv[r] + off + 32 * c + 8 * q);
        acc[r][q % A] = _mm512_fmadd_pd(y, w[q], acc[r][q % A]);
        acc_abs[r][q % A] = _mm512_fmadd_pd(_mm512_abs_pd(y), wa[q], acc_abs[r][q % A]);
      }
  }
}

// NR (1..8) activation rows (interleaved tables) against one weight row, 8 blocks at a time: each
// FMA lane belongs to one block, so a group's accumulators ARE its 8 block sums (no per-block
// reduction). Per group the weight's 1 KB is transposed once and decoded 32 bytes (4 positions) at a
// time into 4 + 4 registers (values, magnitudes) used by every row: one load, one AND and two FMAs
// per row and 8 products. A accumulators per sum and row keep each chain's FMA latency (4 cycles per
// FMA) below the time the two FMA ports need for the chunk's 8 NR FMAs (A = 2 at 4 rows measured a
// few percent faster than 1); 2 * NR * A + 8 <= 32 registers.
template <int NR>
MOEFUZZ_AVX512 void rows_avx512(const double* const* tv, const uint8_t* codes, int64_t cols, int64_t blocks,
                                int64_t* const* sums, int64_t* const* abs_sums, bool& nan_out) {
  bool nan = false;
  constexpr int A = NR <= 2 ? 4 : (NR <= 5 ? 2 : 1);
  constexpr int64_t kGroup = 8 * kFp8DotBlock;
  const int64_t groups = (blocks + 7) / 8, full = cols / kGroup;  // groups whose bytes are all in the row
  alignas(64) uint8_t t[kGroup];
  alignas(64) uint8_t pad[kGroup];
  for (int64_t g = 0; g < groups; ++g) {
    bool group_nan;
    if (g < full) {
      group_nan = transpose_group(codes + g * kGroup, t);
    } else {  // last group: zero-padded copy (zero codes add nothing; missing blocks stay 0)
      std::memset(pad, 0, sizeof pad);
      std::memcpy(pad, codes + g * kGroup, static_cast<size_t>(cols - g * kGroup));
      group_nan = transpose_group(pad, t);
    }
    nan = nan || group_nan;
    const int64_t off = g * kGroup;
    __m512d acc[NR][A], acc_abs[NR][A];
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r)
#pragma GCC unroll 4
      for (int q = 0; q < A; ++q) acc[r][q] = acc_abs[r][q] = _mm512_setzero_pd();
    if (group_nan)  // rare: NaN codes are masked to 0 in the decode
      group_products<NR, A, true>(tv, off, t, acc, acc_abs);
    else
      group_products<NR, A, false>(tv, off, t, acc, acc_abs);
    // Lane j = block 8g + j; integer-valued sums below 2^43: exact, converted exactly.
    const __mmask8 live = static_cast<__mmask8>(blocks - 8 * g >= 8 ? 0xFF : (1u << (blocks - 8 * g)) - 1);
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) {
      __m512d s = acc[r][0], m = acc_abs[r][0];
#pragma GCC unroll 4
      for (int q = 1; q < A; ++q) {
        s = _mm512_add_pd(s, acc[r][q]);
        m = _mm512_add_pd(m, acc_abs[r][q]);
      }
      _mm512_mask_storeu_epi64(sums[r] + 8 * g, live, _mm512_cvtpd_epi64(s));
      _mm512_mask_storeu_epi64(abs_sums[r] + 8 * g, live, _mm512_cvtpd_epi64(m));
    }
  }
  nan_out = nan_out || nan;
}

using RowsFn = void (*)(const double* const*, const uint8_t*, int64_t, int64_t, int64_t* const*,
                        int64_t* const*, bool&);
constexpr RowsFn kRowsFn[9] = {nullptr,        rows_avx512<1>, rows_avx512<2>, rows_avx512<3>, rows_avx512<4>,
                               rows_avx512<5>, rows_avx512<6>, rows_avx512<7>, rows_avx512<8>};

MOEFUZZ_AVX512 void interleave_order(uint8_t order[kFp8DotBlock]) {
  alignas(64) uint8_t id[8 * kFp8DotBlock], t[8 * kFp8DotBlock];
  for (int i = 0; i < 8 * kFp8DotBlock; ++i) id[i] = static_cast<uint8_t>(i % kFp8DotBlock);
  (void)transpose_group(id, t);
  for (int p = 0; p < kFp8DotBlock; ++p) order[p] = t[8 * p];
}

}  // namespace

const uint8_t* fp8_interleave_order() {
  static const auto order = [] {
    std::array<uint8_t, kFp8DotBlock> o{};
    interleave_order(o.data());
    return o;
  }();
  return order.data();
}

void fp8_block_dot_rows_avx512(const DecodedFp8& a, int64_t ra, int na, Fp8Row w, Fp8BlockDot* out) {
  bool nan = false;
  // Rows in ceil(na / 8) groups of near-equal size (17 rows: 5, 6, 6): each group decodes the weight
  // row once, so fewer, fuller groups decode less.
  const int groups = (na + 7) / 8;
  for (int g = 0, r0 = 0; g < groups; ++g) {
    const int n = (na - r0) / (groups - g);
    const double* tv[8];
    int64_t* sums[8];
    int64_t* abs_sums[8];
    for (int r = 0; r < n; ++r) {
      tv[r] = a.interleaved_row(ra + r0 + r);
      sums[r] = out[r0 + r].sum.data();
      abs_sums[r] = out[r0 + r].abs_sum.data();
    }
    kRowsFn[n](tv, w.codes, w.cols, a.blocks(), sums, abs_sums, nan);
    r0 += n;
  }
  for (int r = 0; r < na; ++r) out[r].nan = nan || a.row_has_nan(ra + r);
}
#else
void fp8_block_dot_rows_avx512(const DecodedFp8&, int64_t, int, Fp8Row, Fp8BlockDot*) {}
const uint8_t* fp8_interleave_order() { return nullptr; }
#endif

}  // namespace moefuzz::detail
