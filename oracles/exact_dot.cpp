#include "oracles/exact_dot.h"

#include "oracles/certified_sum.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/cpu_features.h"
#include "core/e2m1.h"
#include "core/e4m3.h"
#include "core/errors.h"
#include "core/fp4_packing.h"

namespace moefuzz {
namespace {

// Position p of a group of 8 block scales holds block kBlockAtPosition[p]: the order in which
// madd + one _mm256_hadd_epi32 leave the eight per-block sums of the even/odd split code layout
// (chunk 0 = blocks 0-3, chunk 1 = blocks 4-7; low lane 0,1,4,5; high lane 2,3,6,7). Self-inverse.
constexpr int kBlockAtPosition[8] = {0, 1, 4, 5, 2, 3, 6, 7};
constexpr int kPositionOfBlock[8] = {0, 1, 4, 5, 2, 3, 6, 7};
inline int64_t scale_position(int64_t b) { return (b / 8) * 8 + kPositionOfBlock[b % 8]; }

// 2 * e2m1 value of a code: an integer in [-12, 12].
constexpr int8_t kTwiceE2m1[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// e4m3 value * 2^9 as an exact integer (|.| <= 448 * 512); NaN codes give 0 and set `nan`.
int32_t scale_times_512(uint8_t byte, bool& nan) {
  const float v = e4m3_to_float(byte);
  if (std::isnan(v)) {
    nan = true;
    return 0;
  }
  return static_cast<int32_t>(v * 512.0f);  // exact: every E4M3 value is a multiple of 2^-9
}

double int128_to_double_up(__int128 x) {
  if (x >= 0 && x < (__int128{1} << 62)) {  // the common case, without the __int128 library calls
    const int64_t y = static_cast<int64_t>(x);
    double d = static_cast<double>(y);  // < 2^62: converting back cannot overflow
    if (static_cast<int64_t>(d) < y) d = std::nextafter(d, std::numeric_limits<double>::infinity());
    return d;
  }
  double d = static_cast<double>(x);
  if (static_cast<__int128>(d) < x) d = std::nextafter(d, std::numeric_limits<double>::infinity());
  return d;
}

// Decoded E4M3 bytes (value * 2^9, NaN bytes 0 and flagged), shared by every decoder.
struct ScaleTable {
  int32_t v[256];
  bool nan[256];
  ScaleTable() {
    for (int b = 0; b < 256; ++b) {
      bool n = false;
      v[b] = scale_times_512(static_cast<uint8_t>(b), n);
      nan[b] = n;
    }
  }
};
const ScaleTable& scale_table() {
  static const ScaleTable table;
  return table;
}

// Largest int64 lane growth per group is 2 * 2^30 * 2^18 = 2^49; flushing every 2^12 groups keeps
// each lane below 2^61.
constexpr int64_t kFlushGroups = int64_t{1} << 12;

#if defined(__x86_64__)
// Sum of the four int64 lanes: each lane stays below 2^61 between flushes (kFlushGroups), so the sum
// fits int64 and is added to the __int128 total once.
__attribute__((target("avx2"))) __int128 hsum_epi64(__m256i v) {
  const __m128i h = _mm_add_epi64(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  return static_cast<__int128>(_mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1));
}

// Per-block sums of one group from the four 32-byte code vectors of each operand (even/odd split
// layout: vectors 0,1 = chunk 0 even/odd elements, 2,3 = chunk 1): |a| (unsigned) x sign(a) w
// (signed) pair sums <= 2 * 144, two of them added <= 576 in int16, then madd to int32 (two lanes
// per block) and one hadd: block sums in kBlockAtPosition order.
__attribute__((target("avx2"))) inline __m256i block_sums(const __m256i p[4]) {
  const __m256i ones = _mm256_set1_epi16(1);
  const __m256i c0 = _mm256_madd_epi16(_mm256_add_epi16(p[0], p[1]), ones);
  const __m256i c1 = _mm256_madd_epi16(_mm256_add_epi16(p[2], p[3]), ones);
  return _mm256_hadd_epi32(c0, c1);
}

// 32 int8 values. A function, not a lambda: a lambda returning a vector is not covered by the
// enclosing target attribute's ABI (-Wpsabi).
__attribute__((target("avx2"), always_inline)) inline __m256i ld(const int8_t* q) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
}

__attribute__((target("avx2"))) inline void group_block_sums(const int8_t* a, const int8_t* a_abs,
                                                             const int8_t* w, const int8_t* w_abs,
                                                             __m256i& signed_sums, __m256i& abs_sums) {
  const __m256i a0 = ld(a_abs), a1 = ld(a_abs + 32), a2 = ld(a_abs + 64), a3 = ld(a_abs + 96);
  const __m256i s[4] = {_mm256_maddubs_epi16(a0, _mm256_sign_epi8(ld(w), ld(a))),
                        _mm256_maddubs_epi16(a1, _mm256_sign_epi8(ld(w + 32), ld(a + 32))),
                        _mm256_maddubs_epi16(a2, _mm256_sign_epi8(ld(w + 64), ld(a + 64))),
                        _mm256_maddubs_epi16(a3, _mm256_sign_epi8(ld(w + 96), ld(a + 96)))};
  const __m256i m[4] = {_mm256_maddubs_epi16(a0, ld(w_abs)), _mm256_maddubs_epi16(a1, ld(w_abs + 32)),
                        _mm256_maddubs_epi16(a2, ld(w_abs + 64)), _mm256_maddubs_epi16(a3, ld(w_abs + 96))};
  signed_sums = block_sums(s);
  abs_sums = block_sums(m);
}

// sum_b sums[b] * sa[b] * sw[b] into int64 lanes: |sums * sa| <= 2304 * 229376 < 2^30 fits int32.
__attribute__((target("avx2"))) inline __m256i scaled_lanes(__m256i sums, const int32_t* sa,
                                                            const int32_t* sw) {
  const __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sa));
  const __m256i vw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sw));
  const __m256i t = _mm256_mullo_epi32(sums, va);
  const __m256i even = _mm256_mul_epi32(t, vw);
  const __m256i odd = _mm256_mul_epi32(_mm256_srli_epi64(t, 32), _mm256_srli_epi64(vw, 32));
  return _mm256_add_epi64(even, odd);
}

// Adds into `out` (the caller's return object: copying a just-written ExactDot out of a local costs
// a store-forwarding stall that was a third of a K=256 dot).
__attribute__((target("avx2"))) void exact_dot_avx2(const DecodedNvfp4& a, int64_t ra, const DecodedNvfp4& w,
                                                    int64_t rw, ExactDot& out) {
  const int8_t* ac = a.code_row(ra);
  const int8_t* aa = a.abs_code_row(ra);
  const int8_t* wc = w.code_row(rw);
  const int8_t* wa = w.abs_code_row(rw);
  const int32_t* as = a.scale_row(ra);
  const int32_t* aas = a.abs_scale_row(ra);
  const int32_t* ws = w.scale_row(rw);
  const int32_t* was = w.abs_scale_row(rw);
  const int64_t groups = a.groups();
  for (int64_t g0 = 0; g0 < groups; g0 += kFlushGroups) {
    const int64_t g1 = g0 + kFlushGroups < groups ? g0 + kFlushGroups : groups;
    __m256i acc = _mm256_setzero_si256(), acc_abs = _mm256_setzero_si256();
    for (int64_t g = g0; g < g1; ++g) {
      __m256i ss, ms;
      group_block_sums(ac + g * 128, aa + g * 128, wc + g * 128, wa + g * 128, ss, ms);
      acc = _mm256_add_epi64(acc, scaled_lanes(ss, as + g * 8, ws + g * 8));
      acc_abs = _mm256_add_epi64(acc_abs, scaled_lanes(ms, aas + g * 8, was + g * 8));
    }
    out.sum += hsum_epi64(acc);
    out.abs_sum += hsum_epi64(acc_abs);
  }
}
#endif

}  // namespace

DecodedNvfp4::DecodedNvfp4(int64_t rows, int64_t cols) : rows_(rows), cols_(cols) {
  if (rows < 0 || cols < 0 || cols % 16 != 0) throw InputError("DecodedNvfp4: cols must be a multiple of 16");
  groups_ = (cols / 16 + 7) / 8;
  code_.assign(static_cast<size_t>(rows * groups_ * 128), 0);
  abs_code_.assign(code_.size(), 0);
  scale_.assign(static_cast<size_t>(rows * groups_ * 8), 0);
  abs_scale_.assign(scale_.size(), 0);
  nan_.assign(static_cast<size_t>(rows), 0);
}

void DecodedNvfp4::set_row(int64_t r, std::span<const uint8_t> codes, std::span<const uint8_t> scale_bytes) {
  int8_t* c = code_.data() + r * groups_ * 128;
  int8_t* ca = abs_code_.data() + r * groups_ * 128;
  for (int64_t i = 0; i < cols_; ++i) {
    const int8_t v = kTwiceE2m1[codes[static_cast<size_t>(i)] & 0xF];
    const int64_t p = code_position(i);
    c[p] = v;
    ca[p] = static_cast<int8_t>(v < 0 ? -v : v);
  }
  const ScaleTable& table = scale_table();
  bool nan = false;
  int32_t* s = scale_.data() + r * groups_ * 8;
  int32_t* sa = abs_scale_.data() + r * groups_ * 8;
  for (int64_t b = 0; b < cols_ / 16; ++b) {
    const uint8_t byte = scale_bytes[static_cast<size_t>(b)];
    const int64_t pos = scale_position(b);
    s[pos] = table.v[byte];
    sa[pos] = s[pos] < 0 ? -s[pos] : s[pos];
    nan |= table.nan[byte];
  }
  nan_[static_cast<size_t>(r)] = nan ? 1 : 0;
}

#if defined(__x86_64__)
namespace {
// Low / high nibbles of 32 packed bytes through 16-entry tables (both 128-bit lanes hold the table).
__attribute__((target("avx2"))) inline void decode_nibbles(__m256i packed, __m256i table, __m256i& lo,
                                                           __m256i& hi) {
  const __m256i nib = _mm256_set1_epi8(0x0F);
  lo = _mm256_shuffle_epi8(table, _mm256_and_si256(packed, nib));
  hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(packed, 4), nib));
}
__attribute__((target("avx2"))) inline __m256i code_table() {
  return _mm256_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12, 0, 1, 2, 3, 4, 6, 8, 12, 0,
                          -1, -2, -3, -4, -6, -8, -12);
}
__attribute__((target("avx2"))) inline __m256i abs_code_table() {
  return _mm256_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, 1, 2, 3, 4, 6, 8, 12, 0, 1, 2, 3, 4, 6, 8, 12, 0, 1, 2,
                          3, 4, 6, 8, 12);
}
// Whole 64-element chunks of a packed row into the even/odd split code tables.
__attribute__((target("avx2"))) void decode_chunks_avx2(const uint8_t* packed, int64_t chunks, int8_t* c,
                                                        int8_t* ca) {
  const __m256i t = code_table(), ta = abs_code_table();
  for (int64_t k = 0; k < chunks; ++k) {
    const __m256i p = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(packed + 32 * k));
    __m256i lo, hi, alo, ahi;
    decode_nibbles(p, t, lo, hi);
    decode_nibbles(p, ta, alo, ahi);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + 64 * k), lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + 64 * k + 32), hi);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(ca + 64 * k), alo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(ca + 64 * k + 32), ahi);
  }
}
}  // namespace
#endif

void DecodedNvfp4::set_packed_row(int64_t r, const uint8_t* packed, const uint8_t* scale_bytes) {
  int8_t* c = code_.data() + r * groups_ * 128;
  int8_t* ca = abs_code_.data() + r * groups_ * 128;
  int64_t done = 0;  // elements decoded by whole 64-element chunks
#if defined(__x86_64__)
  if (cpu_has_avx2()) {
    decode_chunks_avx2(packed, cols_ / 64, c, ca);
    done = cols_ / 64 * 64;
  }
#endif
  for (int64_t i = done; i < cols_; ++i) {
    const int8_t v = kTwiceE2m1[(packed[i / 2] >> (4 * (i & 1))) & 0xF];
    const int64_t p = code_position(i);
    c[p] = v;
    ca[p] = static_cast<int8_t>(v < 0 ? -v : v);
  }
  const ScaleTable& table = scale_table();
  int32_t* s = scale_.data() + r * groups_ * 8;
  int32_t* sa = abs_scale_.data() + r * groups_ * 8;
  bool nan = false;
  for (int64_t b = 0; b < cols_ / 16; ++b) {
    const int64_t pos = scale_position(b);
    s[pos] = table.v[scale_bytes[b]];
    sa[pos] = s[pos] < 0 ? -s[pos] : s[pos];
    nan |= table.nan[scale_bytes[b]];
  }
  nan_[static_cast<size_t>(r)] = nan ? 1 : 0;
}

DecodedNvfp4 DecodedNvfp4::from_packed(int64_t rows, int64_t cols, std::span<const uint8_t> packed,
                                       std::span<const uint8_t> scales) {
  DecodedNvfp4 d(rows, cols);
  if (static_cast<int64_t>(packed.size()) < rows * cols / 2 ||
      static_cast<int64_t>(scales.size()) < rows * cols / 16)
    throw InputError("DecodedNvfp4: packed/scales shorter than rows x cols");
  for (int64_t r = 0; r < rows; ++r)
    d.set_packed_row(r, packed.data() + r * (cols / 2), scales.data() + r * (cols / 16));
  return d;
}

DecodedNvfp4 DecodedNvfp4::from_matrix(const Nvfp4Matrix& m) {
  return from_packed(m.rows, m.cols, m.packed, m.scales);
}

double DecodedNvfp4::operand(int64_t r, int64_t i) const {
  const int64_t pos = scale_position(i / 16);
  if (row_has_nan(r) && scale_row(r)[pos] == 0) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(code_row(r)[code_position(i)]) * static_cast<double>(scale_row(r)[pos]) *
         0x1p-10;
}

double ExactDot::value() const {
  if (nan) return std::numeric_limits<double>::quiet_NaN();
  // int128 (or int64 when it fits: the same correctly rounded value) -> double rounds once; * 2^-20 is exact
  const int64_t narrow = static_cast<int64_t>(sum);
  return (narrow == sum ? static_cast<double>(narrow) : static_cast<double>(sum)) * 0x1p-20;
}
double ExactDot::abs_value() const {
  if (nan) return std::numeric_limits<double>::quiet_NaN();
  return int128_to_double_up(abs_sum) * 0x1p-20;
}

ExactDot exact_dot_scalar(const DecodedNvfp4& a, int64_t ra, const DecodedNvfp4& w, int64_t rw) {
  if (a.cols() != w.cols()) throw InputError("exact_dot: operand lengths differ");
  ExactDot out;
  out.nan = a.row_has_nan(ra) || w.row_has_nan(rw);
  const int8_t* ac = a.code_row(ra);
  const int8_t* wc = w.code_row(rw);
  const int32_t* as = a.scale_row(ra);
  const int32_t* ws = w.scale_row(rw);
  for (int64_t b = 0; b < a.cols() / 16; ++b) {
    int32_t s = 0, m = 0;
    for (int64_t i = b * 16; i < b * 16 + 16; ++i) {
      const int64_t p = DecodedNvfp4::code_position(i);
      const int32_t prod = ac[p] * wc[p];
      s += prod;
      m += prod < 0 ? -prod : prod;
    }
    const int64_t pos = scale_position(b);
    const int64_t scale = static_cast<int64_t>(as[pos]) * ws[pos];
    out.sum += static_cast<__int128>(scale) * s;
    out.abs_sum += static_cast<__int128>(scale < 0 ? -scale : scale) * m;
  }
  (void)kBlockAtPosition;
  return out;
}

bool exact_dot_uses_simd() { return cpu_has_avx2(); }

ExactDot exact_dot(const DecodedNvfp4& a, int64_t ra, const DecodedNvfp4& w, int64_t rw) {
  ExactDot out;  // the only return value: built in the caller's slot (NRVO), never copied
#if defined(__x86_64__)
  if (cpu_has_avx2()) {
    if (a.cols() != w.cols()) throw InputError("exact_dot: operand lengths differ");
    out.nan = a.row_has_nan(ra) || w.row_has_nan(rw);
    exact_dot_avx2(a, ra, w, rw, out);
    return out;
  }
#endif
  out = exact_dot_scalar(a, ra, w, rw);
  return out;
}

namespace {

// Exponent of the grid a float lies on: x is an integer multiple of 2^grid_exponent(x). A bf16 value
// (low 16 mantissa bits zero) has 8 significant bits, any other float 24; subnormals use exponent 1.
inline int grid_exponent(uint32_t bits) {
  const int biased = static_cast<int>((bits >> 23) & 0xFF);
  return (biased == 0 ? 1 : biased) - ((bits & 0xFFFF) == 0 ? 134 : 150);
}

}  // namespace

// Reference loop (one operand at a time); also the path for rows holding a NaN scale.
W4A16Dot w4a16_dot_scalar(std::span<const float> x, const DecodedNvfp4& w, int64_t rw) {
  if (static_cast<int64_t>(x.size()) != w.cols()) throw InputError("w4a16_dot: operand lengths differ");
  double value = 0, abs_value = 0;
  int min_exp = std::numeric_limits<int>::max();
  for (int64_t i = 0; i < w.cols(); ++i) {
    const float xi = x[static_cast<size_t>(i)];
    const double p = static_cast<double>(xi) * w.operand(rw, i);  // exact (<= 31 significant bits)
    value += p;
    abs_value += std::fabs(p);
    if (p != 0 && std::isfinite(p)) {
      uint32_t bits;
      std::memcpy(&bits, &xi, 4);
      min_exp = std::min(min_exp, grid_exponent(bits) - 10);  // times the 2^-10 operand grid
    }
  }
  return certify_double_sum(value, abs_value, min_exp, w.cols());
}

#if defined(__x86_64__)
namespace {

// The 16 codes of block b in natural element order: 8 even elements and 8 odd ones interleaved back.
__attribute__((target("avx2"))) inline __m128i load_block_codes(const int8_t* code, int64_t b) {
  const int8_t* chunk = code + (b / 4) * 64 + (b % 4) * 8;
  return _mm_unpacklo_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(chunk)),
                           _mm_loadl_epi64(reinterpret_cast<const __m128i*>(chunk + 32)));
}

// AVX2 loop: per 16-block, 16 floats x (code * scale) as 4 x 4 exact double products into four
// vector accumulators (the certification holds for every summation order). A product is nonzero and
// finite exactly when x is nonzero and finite and the code is nonzero (|code * scale| <= 12 * 448,
// no underflow in double), so the grid exponent is tracked in int32 lanes without the products.
__attribute__((target("avx2"))) W4A16Dot w4a16_dot_avx2(const float* x, const DecodedNvfp4& w, int64_t rw) {
  const int8_t* code = w.code_row(rw);
  const int32_t* scale = w.scale_row(rw);
  const __m256d sign = _mm256_set1_pd(-0.0);
  __m256d v[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
  __m256d m[4] = {v[0], v[0], v[0], v[0]};
  const __m256i big = _mm256_set1_epi32(std::numeric_limits<int>::max());
  __m256i min_exp = big;
  const __m256i exp_mask = _mm256_set1_epi32(0xFF), one = _mm256_set1_epi32(1),
                low16 = _mm256_set1_epi32(0xFFFF);
  const __m256i off_bf16 = _mm256_set1_epi32(134 + 10), off_fp32 = _mm256_set1_epi32(150 + 10);
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF), zero = _mm256_setzero_si256();
  const int64_t blocks = w.cols() / 16;
  for (int64_t b = 0; b < blocks; ++b) {
    const __m256d s = _mm256_set1_pd(static_cast<double>(scale[scale_position(b)]) * 0x1p-10);
    const __m128i codes = load_block_codes(code, b);
    for (int h = 0; h < 2; ++h) {
      const __m256 xf = _mm256_loadu_ps(x + b * 16 + 8 * h);
      const __m256i c32 = _mm256_cvtepi8_epi32(h == 0 ? codes : _mm_srli_si128(codes, 8));
      // Grid exponent of each x (see grid_exponent), counted where x != 0, finite, and code != 0.
      const __m256i bits = _mm256_castps_si256(xf);
      const __m256i biased = _mm256_max_epi32(_mm256_and_si256(_mm256_srli_epi32(bits, 23), exp_mask), one);
      const __m256i is_bf16 = _mm256_cmpeq_epi32(_mm256_and_si256(bits, low16), zero);
      const __m256i e = _mm256_sub_epi32(biased, _mm256_blendv_epi8(off_fp32, off_bf16, is_bf16));
      const __m256i nonzero =
          _mm256_andnot_si256(_mm256_cmpeq_epi32(_mm256_and_si256(bits, abs_mask), zero),
                              _mm256_andnot_si256(_mm256_cmpeq_epi32(c32, zero), _mm256_set1_epi32(-1)));
      const __m256i finite = _mm256_andnot_si256(
          _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_srli_epi32(bits, 23), exp_mask), exp_mask),
          _mm256_set1_epi32(-1));
      min_exp = _mm256_min_epi32(min_exp, _mm256_blendv_epi8(big, e, _mm256_and_si256(nonzero, finite)));
      for (int q = 0; q < 2; ++q) {
        const __m256d xd =
            _mm256_cvtps_pd(q == 0 ? _mm256_castps256_ps128(xf) : _mm256_extractf128_ps(xf, 1));
        const __m256d cd =
            _mm256_cvtepi32_pd(q == 0 ? _mm256_castsi256_si128(c32) : _mm256_extracti128_si256(c32, 1));
        const __m256d p = _mm256_mul_pd(xd, _mm256_mul_pd(cd, s));  // exact
        v[2 * h + q] = _mm256_add_pd(v[2 * h + q], p);
        m[2 * h + q] = _mm256_add_pd(m[2 * h + q], _mm256_andnot_pd(sign, p));
      }
    }
  }
  alignas(32) double vv[4], mm[4];
  alignas(32) int32_t ee[8];
  _mm256_store_pd(vv, _mm256_add_pd(_mm256_add_pd(v[0], v[1]), _mm256_add_pd(v[2], v[3])));
  _mm256_store_pd(mm, _mm256_add_pd(_mm256_add_pd(m[0], m[1]), _mm256_add_pd(m[2], m[3])));
  _mm256_store_si256(reinterpret_cast<__m256i*>(ee), min_exp);
  int me = std::numeric_limits<int>::max();
  for (int32_t e : ee) me = std::min(me, static_cast<int>(e));
  return certify_double_sum((vv[0] + vv[1]) + (vv[2] + vv[3]), (mm[0] + mm[1]) + (mm[2] + mm[3]), me,
                            w.cols());
}

}  // namespace
#endif

#if defined(__x86_64__)
namespace {
__attribute__((target("avx2"))) double weighted_abs_sum_avx2(const double* r, const DecodedNvfp4& w,
                                                             int64_t rw) {
  const int8_t* code = w.abs_code_row(rw);
  const int32_t* scale = w.abs_scale_row(rw);
  __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
  const int64_t blocks = w.cols() / 16;
  for (int64_t b = 0; b < blocks; ++b) {
    const __m256d s = _mm256_set1_pd(static_cast<double>(scale[scale_position(b)]) * 0x1p-10);
    const __m128i codes = load_block_codes(code, b);
    const __m256i c32a = _mm256_cvtepi8_epi32(codes), c32b = _mm256_cvtepi8_epi32(_mm_srli_si128(codes, 8));
    const __m256d c0 = _mm256_cvtepi32_pd(_mm256_castsi256_si128(c32a)),
                  c1 = _mm256_cvtepi32_pd(_mm256_extracti128_si256(c32a, 1));
    const __m256d c2 = _mm256_cvtepi32_pd(_mm256_castsi256_si128(c32b)),
                  c3 = _mm256_cvtepi32_pd(_mm256_extracti128_si256(c32b, 1));
    const double* rb = r + b * 16;
    acc[0] = _mm256_add_pd(acc[0], _mm256_mul_pd(_mm256_loadu_pd(rb), _mm256_mul_pd(c0, s)));
    acc[1] = _mm256_add_pd(acc[1], _mm256_mul_pd(_mm256_loadu_pd(rb + 4), _mm256_mul_pd(c1, s)));
    acc[2] = _mm256_add_pd(acc[2], _mm256_mul_pd(_mm256_loadu_pd(rb + 8), _mm256_mul_pd(c2, s)));
    acc[3] = _mm256_add_pd(acc[3], _mm256_mul_pd(_mm256_loadu_pd(rb + 12), _mm256_mul_pd(c3, s)));
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(_mm256_add_pd(acc[0], acc[1]), _mm256_add_pd(acc[2], acc[3])));
  return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
}
}  // namespace
#endif

double weighted_abs_sum(std::span<const double> r, const DecodedNvfp4& w, int64_t rw) {
  if (static_cast<int64_t>(r.size()) != w.cols())
    throw InputError("weighted_abs_sum: operand lengths differ");
  double sum = 0;
#if defined(__x86_64__)
  if (cpu_has_avx2() && !w.row_has_nan(rw)) {
    sum = weighted_abs_sum_avx2(r.data(), w, rw);
  } else
#endif
  {
    for (int64_t i = 0; i < w.cols(); ++i) sum += r[static_cast<size_t>(i)] * std::fabs(w.operand(rw, i));
  }
  // Each product rounds once (<= u) and the nonnegative sum of n terms loses at most gamma_{n-1}.
  const double n = static_cast<double>(w.cols()) + 2, u = 0x1p-53;
  return sum * (1 + n * u / (1 - n * u));
}

W4A16Dot w4a16_dot(std::span<const float> x, const DecodedNvfp4& w, int64_t rw) {
  if (static_cast<int64_t>(x.size()) != w.cols()) throw InputError("w4a16_dot: operand lengths differ");
#if defined(__x86_64__)
  if (cpu_has_avx2() && !w.row_has_nan(rw)) return w4a16_dot_avx2(x.data(), w, rw);
#endif
  return w4a16_dot_scalar(x, w, rw);
}

// ---- Packed weight rows ----

double packed_operand(PackedNvfp4Row w, int64_t i) {
  const ScaleTable& table = scale_table();
  const uint8_t byte = w.scales[i / 16];
  if (table.nan[byte]) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(kTwiceE2m1[(w.packed[i / 2] >> (4 * (i & 1))) & 0xF]) *
         static_cast<double>(table.v[byte]) * 0x1p-10;
}

bool packed_row_has_nan(PackedNvfp4Row w) {
  for (int64_t b = 0; b < w.cols / 16; ++b)
    if ((w.scales[b] & 0x7F) == 0x7F) return true;
  return false;
}

void exact_dot_rows_scalar(const DecodedNvfp4& a, int64_t ra, int na, PackedNvfp4Row w, ExactDot* out) {
  if (a.cols() != w.cols) throw InputError("exact_dot_rows: operand lengths differ");
  const ScaleTable& table = scale_table();
  const bool wnan = packed_row_has_nan(w);
  for (int r = 0; r < na; ++r) {
    ExactDot d;
    d.nan = wnan || a.row_has_nan(ra + r);
    const int8_t* ac = a.code_row(ra + r);
    const int32_t* as = a.scale_row(ra + r);
    for (int64_t b = 0; b < w.cols / 16; ++b) {
      int32_t s = 0, m = 0;
      for (int64_t i = b * 16; i < b * 16 + 16; ++i) {
        const int32_t prod =
            ac[DecodedNvfp4::code_position(i)] * kTwiceE2m1[(w.packed[i / 2] >> (4 * (i & 1))) & 0xF];
        s += prod;
        m += prod < 0 ? -prod : prod;
      }
      const int64_t scale = static_cast<int64_t>(as[scale_position(b)]) * table.v[w.scales[b]];
      d.sum += static_cast<__int128>(scale) * s;
      d.abs_sum += static_cast<__int128>(scale < 0 ? -scale : scale) * m;
    }
    out[r] = d;
  }
}

#if defined(__x86_64__)
namespace {

// Eight E4M3 bytes (blocks 0..7 of a group) to value * 2^9 in kBlockAtPosition order: e == 0 gives m,
// else (8 + m) << (e - 1); NaN bytes give 0 and set lanes of `nan`.
__attribute__((target("avx2"))) inline void decode_scales(const uint8_t* bytes, __m256i& v, __m256i& v_abs,
                                                          __m256i& nan) {
  const __m256i order = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7);
  const __m256i b = _mm256_permutevar8x32_epi32(
      _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes))), order);
  const __m256i one = _mm256_set1_epi32(1), zero = _mm256_setzero_si256();
  const __m256i e = _mm256_and_si256(_mm256_srli_epi32(b, 3), _mm256_set1_epi32(15));
  const __m256i m = _mm256_and_si256(b, _mm256_set1_epi32(7));
  const __m256i normal = _mm256_andnot_si256(_mm256_cmpeq_epi32(e, zero), _mm256_set1_epi32(8));
  const __m256i shift = _mm256_max_epi32(_mm256_sub_epi32(e, one), zero);
  const __m256i is_nan =
      _mm256_cmpeq_epi32(_mm256_and_si256(b, _mm256_set1_epi32(0x7F)), _mm256_set1_epi32(0x7F));
  v_abs = _mm256_andnot_si256(is_nan, _mm256_sllv_epi32(_mm256_or_si256(m, normal), shift));
  const __m256i neg = _mm256_cmpgt_epi32(b, _mm256_set1_epi32(0x7F));
  v = _mm256_sub_epi32(_mm256_xor_si256(v_abs, neg), neg);  // negate where the sign bit is set
  nan = _mm256_or_si256(nan, is_nan);
}

// NA activation rows against one packed weight row. Per group the weight's 128 codes (signed and
// magnitude) and 8 scales are decoded once into registers; each row then costs 8 maddubs, 4 adds,
// 4 madds, 2 hadds and the int64 scaling of both sums.
template <int NA>
__attribute__((target("avx2"))) void exact_dot_rows_avx2(const DecodedNvfp4& a, int64_t ra, PackedNvfp4Row w,
                                                         ExactDot* out) {
  const int64_t groups = a.groups();
  const int64_t full = w.cols / 128;  // groups whose packed bytes and scales are all inside the row
  const __m256i t = code_table(), ta = abs_code_table();
  __m256i nan = _mm256_setzero_si256();
  alignas(32) uint8_t tail_packed[64] = {};
  uint8_t tail_scales[8] = {};
  if (full < groups) {  // last partial group: zero-padded copy (zero codes and scales add nothing)
    std::memcpy(tail_packed, w.packed + full * 64, static_cast<size_t>((w.cols - full * 128) / 2));
    std::memcpy(tail_scales, w.scales + full * 8, static_cast<size_t>((w.cols - full * 128) / 16));
  }
  for (int r = 0; r < NA; ++r) out[r] = ExactDot{};
  for (int64_t g0 = 0; g0 < groups; g0 += kFlushGroups) {
    const int64_t g1 = g0 + kFlushGroups < groups ? g0 + kFlushGroups : groups;
    __m256i acc[NA], acc_abs[NA];
    for (int r = 0; r < NA; ++r) acc[r] = acc_abs[r] = _mm256_setzero_si256();
    for (int64_t g = g0; g < g1; ++g) {
      const uint8_t* pk = g < full ? w.packed + g * 64 : tail_packed;
      const uint8_t* sb = g < full ? w.scales + g * 8 : tail_scales;
      __m256i wc[4], wa[4];
      const __m256i p0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pk));
      const __m256i p1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pk + 32));
      decode_nibbles(p0, t, wc[0], wc[1]);
      decode_nibbles(p1, t, wc[2], wc[3]);
      decode_nibbles(p0, ta, wa[0], wa[1]);
      decode_nibbles(p1, ta, wa[2], wa[3]);
      __m256i sw, swa;
      decode_scales(sb, sw, swa, nan);
      const __m256i sw_odd = _mm256_srli_epi64(sw, 32), swa_odd = _mm256_srli_epi64(swa, 32);
#pragma GCC unroll 4
      for (int r = 0; r < NA; ++r) {
        const int8_t* ac = a.code_row(ra + r) + g * 128;
        const int8_t* aa = a.abs_code_row(ra + r) + g * 128;
        const __m256i a0 = ld(aa), a1 = ld(aa + 32), a2 = ld(aa + 64), a3 = ld(aa + 96);
        // Signed: |a| x sign(a) w; magnitude: |a| x |w|. Pair sums <= 288, two added <= 576 (int16).
        const __m256i s0 = _mm256_add_epi16(_mm256_maddubs_epi16(a0, _mm256_sign_epi8(wc[0], ld(ac))),
                                            _mm256_maddubs_epi16(a1, _mm256_sign_epi8(wc[1], ld(ac + 32))));
        const __m256i s1 = _mm256_add_epi16(_mm256_maddubs_epi16(a2, _mm256_sign_epi8(wc[2], ld(ac + 64))),
                                            _mm256_maddubs_epi16(a3, _mm256_sign_epi8(wc[3], ld(ac + 96))));
        const __m256i m0 = _mm256_add_epi16(_mm256_maddubs_epi16(a0, wa[0]), _mm256_maddubs_epi16(a1, wa[1]));
        const __m256i m1 = _mm256_add_epi16(_mm256_maddubs_epi16(a2, wa[2]), _mm256_maddubs_epi16(a3, wa[3]));
        const __m256i ones = _mm256_set1_epi16(1);
        const __m256i hs = _mm256_hadd_epi32(_mm256_madd_epi16(s0, ones), _mm256_madd_epi16(s1, ones));
        const __m256i hm = _mm256_hadd_epi32(_mm256_madd_epi16(m0, ones), _mm256_madd_epi16(m1, ones));
        const __m256i ts = _mm256_mullo_epi32(
            hs, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.scale_row(ra + r) + g * 8)));
        const __m256i tm = _mm256_mullo_epi32(
            hm, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.abs_scale_row(ra + r) + g * 8)));
        acc[r] = _mm256_add_epi64(
            acc[r],
            _mm256_add_epi64(_mm256_mul_epi32(ts, sw), _mm256_mul_epi32(_mm256_srli_epi64(ts, 32), sw_odd)));
        acc_abs[r] = _mm256_add_epi64(acc_abs[r],
                                      _mm256_add_epi64(_mm256_mul_epi32(tm, swa),
                                                       _mm256_mul_epi32(_mm256_srli_epi64(tm, 32), swa_odd)));
      }
    }
    for (int r = 0; r < NA; ++r) {
      out[r].sum += hsum_epi64(acc[r]);
      out[r].abs_sum += hsum_epi64(acc_abs[r]);
    }
  }
  const bool wnan = !_mm256_testz_si256(nan, nan);
  for (int r = 0; r < NA; ++r) out[r].nan = wnan || a.row_has_nan(ra + r);
}

}  // namespace
#endif

void exact_dot_rows(const DecodedNvfp4& a, int64_t ra, int na, PackedNvfp4Row w, ExactDot* out) {
  if (a.cols() != w.cols) throw InputError("exact_dot_rows: operand lengths differ");
#if defined(__x86_64__)
  if (cpu_has_avx2()) {
    switch (na) {
      case 1:
        return exact_dot_rows_avx2<1>(a, ra, w, out);
      case 2:
        return exact_dot_rows_avx2<2>(a, ra, w, out);
      case 3:
        return exact_dot_rows_avx2<3>(a, ra, w, out);
      case 4:
        return exact_dot_rows_avx2<4>(a, ra, w, out);
      default:
        break;
    }
  }
#endif
  for (int r = 0; r < na; r += 4) exact_dot_rows_scalar(a, ra + r, std::min(4, na - r), w, out + r);
}

void rounded_dot_rows(const DecodedNvfp4& a, int64_t ra, int na, PackedNvfp4Row w, RoundedDot* out) {
  constexpr int kMostRows = 4;  // exact_dot_rows' largest call
  for (int r0 = 0; r0 < na; r0 += kMostRows) {
    const int nr = std::min(kMostRows, na - r0);
    ExactDot e[kMostRows];
    exact_dot_rows(a, ra + r0, nr, w, e);
    for (int r = 0; r < nr; ++r) out[r0 + r] = RoundedDot::of(e[r]);
  }
}

#if defined(__x86_64__)
namespace {
// NA (<= 4) weight vectors against one packed row: per block the 16 |codes| (natural order) times
// |scale| become four exact double vectors, shared by the NA rows. Two FMA chains per row, whatever
// NA is: a row's sum is the same bits with any other rows beside it (the oracle's row memo,
// oracles/row_memo.h, relies on that), and 4 rows x 2 chains keep the FMA units busy.
template <int NA>
__attribute__((target("avx2,fma"))) void weighted_abs_sum_rows_avx2(const double* const* r, PackedNvfp4Row w,
                                                                    double* out) {
  static_assert(NA >= 1 && NA <= 4, "more rows than the 16 vector registers hold accumulators for");
  constexpr int A = 2;
  const ScaleTable& table = scale_table();
  const __m128i nib = _mm_set1_epi8(0x0F);
  const __m128i tabs = _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, 1, 2, 3, 4, 6, 8, 12);
  __m256d acc[NA][A];
#pragma GCC unroll 8
  for (int k = 0; k < NA; ++k)
    for (int q = 0; q < A; ++q) acc[k][q] = _mm256_setzero_pd();
  const int64_t blocks = w.cols / 16;
  for (int64_t b = 0; b < blocks; ++b) {
    const int32_t sv = table.v[w.scales[b]];
    const __m256d s = _mm256_set1_pd(static_cast<double>(sv < 0 ? -sv : sv) * 0x1p-10);
    const __m128i p = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(w.packed + 8 * b));
    const __m128i codes = _mm_shuffle_epi8(
        tabs, _mm_unpacklo_epi8(_mm_and_si128(p, nib), _mm_and_si128(_mm_srli_epi16(p, 4), nib)));
    const __m256i c32a = _mm256_cvtepu8_epi32(codes), c32b = _mm256_cvtepu8_epi32(_mm_srli_si128(codes, 8));
    const __m256d d[4] = {_mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(c32a)), s),
                          _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(c32a, 1)), s),
                          _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(c32b)), s),
                          _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(c32b, 1)), s)};
#pragma GCC unroll 8
    for (int k = 0; k < NA; ++k) {
      const double* rb = r[k] + b * 16;
#pragma GCC unroll 4
      for (int q = 0; q < 4; ++q)
        acc[k][q % A] = _mm256_fmadd_pd(_mm256_loadu_pd(rb + 4 * q), d[q], acc[k][q % A]);
    }
  }
  for (int k = 0; k < NA; ++k) {
    alignas(32) double lanes[4];
    _mm256_store_pd(lanes, _mm256_add_pd(acc[k][0], acc[k][1]));
    out[k] = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  }
}

}  // namespace
#endif

bool weighted_abs_sum_rows_is_fused() { return cpu_has_avx2() && cpu_has_fma(); }

void weighted_abs_sum_rows(const double* const* r, int na, PackedNvfp4Row w, double* out) {
  if (packed_row_has_nan(w)) {
    for (int k = 0; k < na; ++k) out[k] = std::numeric_limits<double>::quiet_NaN();
    return;
  }
  bool done = false;
#if defined(__x86_64__)
  if (weighted_abs_sum_rows_is_fused()) {
    done = true;
    for (int k0 = 0; k0 < na; k0 += 4) {  // groups of at most 4 rows (one weight decode each)
      switch (std::min(4, na - k0)) {
        case 1:
          weighted_abs_sum_rows_avx2<1>(r + k0, w, out + k0);
          break;
        case 2:
          weighted_abs_sum_rows_avx2<2>(r + k0, w, out + k0);
          break;
        case 3:
          weighted_abs_sum_rows_avx2<3>(r + k0, w, out + k0);
          break;
        default:
          weighted_abs_sum_rows_avx2<4>(r + k0, w, out + k0);
      }
    }
  }
#endif
  if (!done)
    for (int k = 0; k < na; ++k) {
      double sum = 0;
      for (int64_t i = 0; i < w.cols; ++i) sum += r[k][i] * std::fabs(packed_operand(w, i));
      out[k] = sum;
    }
  // As weighted_abs_sum: every term passes through at most cols/4 + 4 roundings (FMA chains of one
  // lane, then the lane sums), well inside gamma_{cols+2}.
  const double n = static_cast<double>(w.cols) + 2, u = 0x1p-53;
  for (int k = 0; k < na; ++k) out[k] *= 1 + n * u / (1 - n * u);
}

double sparse_weighted_abs_sum(std::span<const std::pair<int32_t, double>> r, PackedNvfp4Row w) {
  if (r.empty()) return 0;
  const ScaleTable& table = scale_table();
  double s = 0;
  for (const auto& [i, ri] : r) {
    const uint8_t byte = w.scales[i / 16];
    const int32_t code = kTwiceE2m1[(w.packed[i / 2] >> (4 * (i & 1))) & 0x7];  // |2 * e2m1|
    const double op = table.nan[byte]
                          ? std::numeric_limits<double>::quiet_NaN()
                          : static_cast<double>(code) *
                                static_cast<double>(table.v[byte] < 0 ? -table.v[byte] : table.v[byte]) *
                                0x1p-10;
    s += ri * op;  // op = |packed_operand(w, i)|, exact
  }
  const double n = static_cast<double>(r.size()) + 2, u = 0x1p-53;
  return s * (1 + n * u / (1 - n * u));
}

}  // namespace moefuzz
