#include "oracles/fp8_block_dot.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "core/cpu_features.h"
#include "core/e4m3.h"
#include "core/errors.h"
#include "oracles/fp8_block_dot_loops.h"

namespace moefuzz {
namespace {

constexpr bool is_nan_code(uint8_t c) { return (c & 0x7F) == 0x7F; }

// n = value * 2^9 of every E4M3 code (an integer, |n| <= 229376); NaN codes 0.
struct E4m3IntTable {
  int32_t n[256];
  E4m3IntTable() {
    for (int c = 0; c < 256; ++c) {
      const float v = e4m3_to_float(static_cast<uint8_t>(c));
      n[c] = std::isnan(v) ? 0 : static_cast<int32_t>(v * 512.0f);  // exact: multiples of 2^-9
    }
  }
};
const E4m3IntTable& int_table() {
  static const E4m3IntTable table;
  return table;
}

bool cpu_has_fp8_dot_simd() {
#if defined(__x86_64__)
  // F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports does not know "f16c".
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
    return f16c && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return has;
#else
  return false;
#endif
}

bool cpu_has_fp8_dot_avx512() { return cpu_has_avx512(); }

void check_rows(const DecodedFp8& a, int64_t ra, int na, Fp8Row w) {
  if (a.cols() != w.cols) throw InputError("fp8_block_dot_rows: operand lengths differ");
  if (na < 1 || ra < 0 || ra + na > a.rows()) throw InputError("fp8_block_dot_rows: row range out of bounds");
}

void prepare(Fp8BlockDot& d, const DecodedFp8& a) {
  d.cols = a.cols();
  d.sum.resize(static_cast<size_t>(a.blocks()));
  d.abs_sum.resize(static_cast<size_t>(a.blocks()));
  d.nan = false;
}

bool weight_row_has_nan(Fp8Row w) {
  for (int64_t i = 0; i < w.cols; ++i)
    if (is_nan_code(w.codes[i])) return true;
  return false;
}

}  // namespace

DecodedFp8::DecodedFp8(int64_t rows, int64_t cols)
    : rows_(rows), cols_(cols), blocks_((cols + kFp8DotBlock - 1) / kFp8DotBlock) {
  if (rows < 0 || cols < 0) throw InputError("DecodedFp8: negative size");
  const size_t n = static_cast<size_t>(rows * blocks_ * kFp8DotBlock);
  code_.assign(n, 0);
  value_.assign(n, 0.0);
  if (fp8_block_dot_loop_available(Fp8DotLoop::kAvx512))
    interleaved_.assign(static_cast<size_t>(rows * groups() * 8 * kFp8DotBlock), 0.0);
  nan_.assign(static_cast<size_t>(rows), 0);
}

DecodedFp8 DecodedFp8::from_codes(int64_t rows, int64_t cols, std::span<const uint8_t> codes) {
  if (rows < 0 || cols < 0 || codes.size() != static_cast<size_t>(rows * cols))
    throw InputError("DecodedFp8::from_codes: expected rows * cols codes");
  DecodedFp8 d(rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    d.set_row(r, codes.subspan(static_cast<size_t>(r * cols), static_cast<size_t>(cols)));
  return d;
}

void DecodedFp8::set_row(int64_t r, std::span<const uint8_t> codes) {
  if (r < 0 || r >= rows_ || static_cast<int64_t>(codes.size()) != cols_)
    throw InputError("DecodedFp8::set_row: row out of range or wrong length");
  const E4m3IntTable& t = int_table();
  const size_t base = static_cast<size_t>(r * blocks_ * kFp8DotBlock);
  bool nan = false;
  for (int64_t i = 0; i < cols_; ++i) {
    const uint8_t c = codes[static_cast<size_t>(i)];
    nan = nan || is_nan_code(c);
    const double v = std::ldexp(static_cast<double>(t.n[c]), 17);  // n * 2^17, exact
    code_[base + static_cast<size_t>(i)] = c;
    value_[base + static_cast<size_t>(i)] = v;
  }
  nan_[static_cast<size_t>(r)] = nan ? 1 : 0;
  if (!interleaved_.empty()) {
    const uint8_t* order = detail::fp8_interleave_order();
    double* t = interleaved_.data() + r * groups() * 8 * kFp8DotBlock;
    for (int64_t g = 0; g < groups(); ++g)
      for (int64_t p = 0; p < kFp8DotBlock; ++p)
        for (int64_t j = 0; j < 8; ++j) {
          const int64_t b = 8 * g + j;
          t[(g * kFp8DotBlock + p) * 8 + j] =
              b < blocks_ ? value_[base + static_cast<size_t>(b * kFp8DotBlock + order[p])] : 0.0;
        }
  }
}

double DecodedFp8::operand(int64_t r, int64_t i) const {
  const uint8_t c = code_row(r)[i];
  if (is_nan_code(c)) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(int_table().n[c]) * 0x1p-9;
}

void fp8_block_dot_rows_scalar(const DecodedFp8& a, int64_t ra, int na, Fp8Row w, Fp8BlockDot* out) {
  check_rows(a, ra, na, w);
  const E4m3IntTable& t = int_table();
  const bool wnan = weight_row_has_nan(w);
  for (int r = 0; r < na; ++r) {
    Fp8BlockDot& d = out[r];
    prepare(d, a);
    d.nan = wnan || a.row_has_nan(ra + r);
    const uint8_t* ac = a.code_row(ra + r);
    for (int64_t b = 0; b < a.blocks(); ++b) {
      int64_t s = 0, m = 0;  // |s|, m <= 128 * 2^35.7 = 2^42.7 (header)
      for (int64_t i = b * kFp8DotBlock; i < std::min(w.cols, (b + 1) * kFp8DotBlock); ++i) {
        const int64_t p = static_cast<int64_t>(t.n[ac[i]]) * t.n[w.codes[i]];
        s += p;
        m += p < 0 ? -p : p;
      }
      d.sum[static_cast<size_t>(b)] = s;
      d.abs_sum[static_cast<size_t>(b)] = m;
    }
  }
}

bool fp8_block_dot_uses_simd() { return fp8_block_dot_best_loop() != Fp8DotLoop::kScalar; }

#if defined(__x86_64__)
namespace {

// 16 E4M3 bytes to four vectors of 4 doubles (value * 2^-8) and their magnitudes; NaN codes give 0
// and set lanes of `nan`. fp16 bits: sign << 15 | (code & 0x7F) << 7 (header: exact, subnormals too).
__attribute__((target("avx2,f16c"))) inline void decode16(const uint8_t* bytes, __m256d w[4], __m256d wa[4],
                                                          __m256i& nan) {
  const __m256i x = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes)));
  const __m256i mag = _mm256_and_si256(_mm256_slli_epi16(x, 7), _mm256_set1_epi16(0x3F80));
  const __m256i sign =
      _mm256_and_si256(_mm256_slli_epi16(x, 8), _mm256_set1_epi16(static_cast<int16_t>(0x8000)));
  const __m256i is_nan = _mm256_cmpeq_epi16(mag, _mm256_set1_epi16(0x3F80));
  nan = _mm256_or_si256(nan, is_nan);
  const __m256i h = _mm256_andnot_si256(is_nan, _mm256_or_si256(mag, sign));
  const __m256 f0 = _mm256_cvtph_ps(_mm256_castsi256_si128(h));
  const __m256 f1 = _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1));
  const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFF));
  w[0] = _mm256_cvtps_pd(_mm256_castps256_ps128(f0));
  w[1] = _mm256_cvtps_pd(_mm256_extractf128_ps(f0, 1));
  w[2] = _mm256_cvtps_pd(_mm256_castps256_ps128(f1));
  w[3] = _mm256_cvtps_pd(_mm256_extractf128_ps(f1, 1));
  for (int q = 0; q < 4; ++q) wa[q] = _mm256_and_pd(w[q], abs_mask);
}

// Sum of 4 lanes, each an integer-valued double below 2^43 in magnitude: exact.
__attribute__((target("avx2"))) inline int64_t lanes_to_int(__m256d v) {
  const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return static_cast<int64_t>(_mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s))));
}

// Block sums of NR (1..4) activation rows against one decoded weight block (wv values, wav
// magnitudes): one FMA per 4 products for the signed sum and one for the magnitudes (|a| by a mask,
// so each row costs one load per 4 products). A accumulators per sum and row keep >= 8 FMA chains.
template <int NR>
__attribute__((target("avx2,fma"), always_inline)) inline void row_group(const double* const* av, int64_t off,
                                                                         const double* wv, const double* wav,
                                                                         int64_t b, Fp8BlockDot* out) {
  constexpr int A = NR >= 4 ? 1 : (NR == 1 ? 4 : 2);
  const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFF));
  __m256d acc[NR][A], acc_abs[NR][A];
  for (int r = 0; r < NR; ++r)
    for (int q = 0; q < A; ++q) acc[r][q] = acc_abs[r][q] = _mm256_setzero_pd();
  for (int k = 0; k < kFp8DotBlock; k += 4 * A) {
#pragma GCC unroll 4
    for (int q = 0; q < A; ++q) {
      const __m256d x = _mm256_load_pd(wv + k + 4 * q), xa = _mm256_load_pd(wav + k + 4 * q);
#pragma GCC unroll 4
      for (int r = 0; r < NR; ++r) {
        const __m256d y = _mm256_loadu_pd(av[r] + off + k + 4 * q);
        acc[r][q] = _mm256_fmadd_pd(y, x, acc[r][q]);
        acc_abs[r][q] = _mm256_fmadd_pd(_mm256_and_pd(y, abs_mask), xa, acc_abs[r][q]);
      }
    }
  }
  for (int r = 0; r < NR; ++r) {
    __m256d s = acc[r][0], m = acc_abs[r][0];
    for (int q = 1; q < A; ++q) {
      s = _mm256_add_pd(s, acc[r][q]);
      m = _mm256_add_pd(m, acc_abs[r][q]);
    }
    out[r].sum[static_cast<size_t>(b)] = lanes_to_int(s);
    out[r].abs_sum[static_cast<size_t>(b)] = lanes_to_int(m);
  }
}

// na activation rows against one weight row: each 128-byte weight block is decoded once into a 2 KB
// buffer (values and magnitudes) and then read by every row, four rows at a time.
__attribute__((target("avx2,fma,f16c"))) void fp8_block_dot_rows_avx2(const DecodedFp8& a, int64_t ra, int na,
                                                                      Fp8Row w, Fp8BlockDot* out) {
  const int64_t blocks = a.blocks();
  const int64_t full = w.cols / kFp8DotBlock;  // blocks whose bytes are all inside the row
  alignas(32) double wv[kFp8DotBlock], wav[kFp8DotBlock];
  alignas(32) uint8_t tail[kFp8DotBlock] = {};
  if (full < blocks)  // last partial block: zero-padded copy (zero codes add nothing)
    std::memcpy(tail, w.codes + full * kFp8DotBlock, static_cast<size_t>(w.cols - full * kFp8DotBlock));
  __m256i nan = _mm256_setzero_si256();
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* wb = b < full ? w.codes + b * kFp8DotBlock : tail;
    for (int c = 0; c < kFp8DotBlock / 16; ++c) {
      __m256d d[4], da[4];
      decode16(wb + 16 * c, d, da, nan);
      for (int q = 0; q < 4; ++q) {
        _mm256_store_pd(wv + 16 * c + 4 * q, d[q]);
        _mm256_store_pd(wav + 16 * c + 4 * q, da[q]);
      }
    }
    const int64_t off = b * kFp8DotBlock;
    for (int r0 = 0; r0 < na; r0 += 4) {
      const double* av[4];
      const int n = std::min(4, na - r0);
      for (int r = 0; r < n; ++r) av[r] = a.value_row(ra + r0 + r);
      switch (n) {
        case 1:
          row_group<1>(av, off, wv, wav, b, out + r0);
          break;
        case 2:
          row_group<2>(av, off, wv, wav, b, out + r0);
          break;
        case 3:
          row_group<3>(av, off, wv, wav, b, out + r0);
          break;
        default:
          row_group<4>(av, off, wv, wav, b, out + r0);
          break;
      }
    }
  }
  const bool wnan = !_mm256_testz_si256(nan, nan);
  for (int r = 0; r < na; ++r) out[r].nan = wnan || a.row_has_nan(ra + r);
}

}  // namespace
#endif

const char* fp8_dot_loop_name(Fp8DotLoop loop) {
  switch (loop) {
    case Fp8DotLoop::kAvx512:
      return "avx512";
    case Fp8DotLoop::kAvx2:
      return "avx2";
    default:
      return "scalar";
  }
}

bool fp8_block_dot_loop_available(Fp8DotLoop loop) {
  switch (loop) {
    case Fp8DotLoop::kAvx512:
      return cpu_has_fp8_dot_avx512();
    case Fp8DotLoop::kAvx2:
      return cpu_has_fp8_dot_simd();
    default:
      return true;
  }
}

Fp8DotLoop fp8_block_dot_best_loop() {
  if (cpu_has_fp8_dot_avx512()) return Fp8DotLoop::kAvx512;
  if (cpu_has_fp8_dot_simd()) return Fp8DotLoop::kAvx2;
  return Fp8DotLoop::kScalar;
}

void fp8_block_dot_rows_with(Fp8DotLoop loop, const DecodedFp8& a, int64_t ra, int na, Fp8Row w,
                             Fp8BlockDot* out) {
  if (!fp8_block_dot_loop_available(loop))
    throw InputError(std::string("fp8_block_dot_rows: the ") + fp8_dot_loop_name(loop) +
                     " loop is not available on this CPU");
  check_rows(a, ra, na, w);
#if defined(__x86_64__)
  if (loop != Fp8DotLoop::kScalar) {
    for (int r = 0; r < na; ++r) prepare(out[r], a);
    if (loop == Fp8DotLoop::kAvx512)
      detail::fp8_block_dot_rows_avx512(a, ra, na, w, out);
    else
      fp8_block_dot_rows_avx2(a, ra, na, w, out);
    return;
  }
#endif
  fp8_block_dot_rows_scalar(a, ra, na, w, out);
}

void fp8_block_dot_rows(const DecodedFp8& a, int64_t ra, int na, Fp8Row w, Fp8BlockDot* out) {
  static const Fp8DotLoop best = fp8_block_dot_best_loop();
  static const Fp8DotLoop few_blocks =  // AVX-512 CPUs have AVX2, FMA and F16C, but check
      fp8_block_dot_loop_available(Fp8DotLoop::kAvx2) ? Fp8DotLoop::kAvx2 : best;
  // The AVX-512 loop gives each block of a group of 8 one vector lane: with 4 blocks or fewer most
  // lanes are empty and the AVX2 loop is faster per MAC (docs/perf.md, "FP8 block dot": K 128-512).
  fp8_block_dot_rows_with(a.blocks() <= kFp8Avx2MaxBlocks ? few_blocks : best, a, ra, na, w, out);
}

}  // namespace moefuzz
