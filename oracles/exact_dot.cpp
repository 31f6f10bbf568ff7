#include "oracles/exact_dot.h"

#include <cmath>
#include <cstring>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/e2m1.h"
#include "core/e4m3.h"
#include "core/errors.h"
#include "core/fp4_packing.h"

namespace moefuzz {
namespace {

// Position p of a group of 8 block scales holds block kBlockAtPosition[p]: the order in which three
// rounds of _mm256_hadd_epi32 leave the eight per-block sums (low lane 0,2,4,6; high lane 1,3,5,7).
constexpr int kBlockAtPosition[8] = {0, 2, 4, 6, 1, 3, 5, 7};
constexpr int kPositionOfBlock[8] = {0, 4, 1, 5, 2, 6, 3, 7};

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
  double d = static_cast<double>(x);
  if (static_cast<__int128>(d) < x) d = std::nextafter(d, std::numeric_limits<double>::infinity());
  return d;
}

// Largest int64 lane growth per group is 2 * 2^30 * 2^18 = 2^49; flushing every 2^12 groups keeps
// each lane below 2^61.
constexpr int64_t kFlushGroups = int64_t{1} << 12;

#if defined(__x86_64__)
__attribute__((target("avx2"))) __int128 hsum_epi64(__m256i v) {
  alignas(32) int64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
  return static_cast<__int128>(lanes[0]) + lanes[1] + lanes[2] + lanes[3];
}

// One group of 8 blocks: per-block integer sums (permuted order) of products of codes.
__attribute__((target("avx2"))) inline void group_block_sums(const int8_t* a, const int8_t* a_abs,
                                                              const int8_t* w, const int8_t* w_abs,
                                                              __m256i& signed_sums, __m256i& abs_sums) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i s[4], m[4];
  for (int c = 0; c < 4; ++c) {
    const __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + 32 * c));
    const __m256i vaa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a_abs + 32 * c));
    const __m256i vw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 32 * c));
    const __m256i vwa = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w_abs + 32 * c));
    // |a| (unsigned) x sign(a) w (signed): pair sums <= 2 * 144, no saturation.
    s[c] = _mm256_madd_epi16(_mm256_maddubs_epi16(vaa, _mm256_sign_epi8(vw, va)), ones);
    m[c] = _mm256_madd_epi16(_mm256_maddubs_epi16(vaa, vwa), ones);
  }
  signed_sums = _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
  abs_sums = _mm256_hadd_epi32(_mm256_hadd_epi32(m[0], m[1]), _mm256_hadd_epi32(m[2], m[3]));
}

// sum_b sums[b] * sa[b] * sw[b] into int64 lanes: |sums * sa| <= 2304 * 229376 < 2^30 fits int32.
__attribute__((target("avx2"))) inline __m256i scaled_lanes(__m256i sums, const int32_t* sa, const int32_t* sw) {
  const __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sa));
  const __m256i vw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sw));
  const __m256i t = _mm256_mullo_epi32(sums, va);
  const __m256i even = _mm256_mul_epi32(t, vw);
  const __m256i odd = _mm256_mul_epi32(_mm256_srli_epi64(t, 32), _mm256_srli_epi64(vw, 32));
  return _mm256_add_epi64(even, odd);
}

__attribute__((target("avx2"))) ExactDot exact_dot_avx2(const DecodedNvfp4& a, int64_t ra,
                                                         const DecodedNvfp4& w, int64_t rw) {
  const int8_t* ac = a.code_row(ra);
  const int8_t* aa = a.abs_code_row(ra);
  const int8_t* wc = w.code_row(rw);
  const int8_t* wa = w.abs_code_row(rw);
  const int32_t* as = a.scale_row(ra);
  const int32_t* aas = a.abs_scale_row(ra);
  const int32_t* ws = w.scale_row(rw);
  const int32_t* was = w.abs_scale_row(rw);
  ExactDot out;
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
  return out;
}
#endif

bool cpu_has_avx2() {
#if defined(__x86_64__)
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
#else
  return false;
#endif
}

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
    c[i] = kTwiceE2m1[codes[static_cast<size_t>(i)] & 0xF];
    ca[i] = static_cast<int8_t>(c[i] < 0 ? -c[i] : c[i]);
  }
  bool nan = false;
  int32_t* s = scale_.data() + r * groups_ * 8;
  int32_t* sa = abs_scale_.data() + r * groups_ * 8;
  for (int64_t b = 0; b < cols_ / 16; ++b) {
    const int64_t pos = (b / 8) * 8 + kPositionOfBlock[b % 8];
    s[pos] = scale_times_512(scale_bytes[static_cast<size_t>(b)], nan);
    sa[pos] = s[pos] < 0 ? -s[pos] : s[pos];
  }
  nan_[static_cast<size_t>(r)] = nan ? 1 : 0;
}

DecodedNvfp4 DecodedNvfp4::from_packed(int64_t rows, int64_t cols, std::span<const uint8_t> packed,
                                       std::span<const uint8_t> scales) {
  DecodedNvfp4 d(rows, cols);
  if (static_cast<int64_t>(packed.size()) < rows * cols / 2 || static_cast<int64_t>(scales.size()) < rows * cols / 16)
    throw InputError("DecodedNvfp4: packed/scales shorter than rows x cols");
  // Straight from the packed bytes (low nibble first) and a 256-entry scale table: decoding every
  // expert's weights was a third of an oracle evaluation when it went through set_row per element.
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
  static const ScaleTable table;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = packed.data() + r * (cols / 2);
    int8_t* c = d.code_.data() + r * d.groups_ * 128;
    int8_t* ca = d.abs_code_.data() + r * d.groups_ * 128;
    for (int64_t i = 0; i < cols / 2; ++i) {
      const int8_t lo = kTwiceE2m1[row[i] & 0xF], hi = kTwiceE2m1[row[i] >> 4];
      c[2 * i] = lo;
      c[2 * i + 1] = hi;
      ca[2 * i] = static_cast<int8_t>(lo < 0 ? -lo : lo);
      ca[2 * i + 1] = static_cast<int8_t>(hi < 0 ? -hi : hi);
    }
    const uint8_t* sb = scales.data() + r * (cols / 16);
    int32_t* s = d.scale_.data() + r * d.groups_ * 8;
    int32_t* sa = d.abs_scale_.data() + r * d.groups_ * 8;
    bool nan = false;
    for (int64_t b = 0; b < cols / 16; ++b) {
      const int64_t pos = (b / 8) * 8 + kPositionOfBlock[b % 8];
      s[pos] = table.v[sb[b]];
      sa[pos] = s[pos] < 0 ? -s[pos] : s[pos];
      nan |= table.nan[sb[b]];
    }
    d.nan_[static_cast<size_t>(r)] = nan ? 1 : 0;
  }
  return d;
}

DecodedNvfp4 DecodedNvfp4::from_matrix(const Nvfp4Matrix& m) {
  return from_packed(m.rows, m.cols, m.packed, m.scales);
}

double DecodedNvfp4::operand(int64_t r, int64_t i) const {
  const int64_t b = i / 16;
  const int64_t pos = (b / 8) * 8 + kPositionOfBlock[b % 8];
  if (row_has_nan(r) && scale_row(r)[pos] == 0) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(code_row(r)[i]) * static_cast<double>(scale_row(r)[pos]) * 0x1p-10;
}

double ExactDot::value() const {
  if (nan) return std::numeric_limits<double>::quiet_NaN();
  return static_cast<double>(sum) * 0x1p-20;  // int128 -> double rounds once; * 2^-20 is exact
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
    for (int j = 0; j < 16; ++j) {
      const int32_t p = ac[b * 16 + j] * wc[b * 16 + j];
      s += p;
      m += p < 0 ? -p : p;
    }
    const int64_t pos = (b / 8) * 8 + kPositionOfBlock[b % 8];
    const int64_t scale = static_cast<int64_t>(as[pos]) * ws[pos];
    out.sum += static_cast<__int128>(scale) * s;
    out.abs_sum += static_cast<__int128>(scale < 0 ? -scale : scale) * m;
  }
  (void)kBlockAtPosition;
  return out;
}

bool exact_dot_uses_simd() { return cpu_has_avx2(); }

ExactDot exact_dot(const DecodedNvfp4& a, int64_t ra, const DecodedNvfp4& w, int64_t rw) {
#if defined(__x86_64__)
  if (cpu_has_avx2()) {
    if (a.cols() != w.cols()) throw InputError("exact_dot: operand lengths differ");
    ExactDot out = exact_dot_avx2(a, ra, w, rw);
    out.nan = a.row_has_nan(ra) || w.row_has_nan(rw);
    return out;
  }
#endif
  return exact_dot_scalar(a, ra, w, rw);
}

namespace {

// Exponent of the grid a float lies on: x is an integer multiple of 2^grid_exponent(x). A bf16 value
// (low 16 mantissa bits zero) has 8 significant bits, any other float 24; subnormals use exponent 1.
inline int grid_exponent(uint32_t bits) {
  const int biased = static_cast<int>((bits >> 23) & 0xFF);
  return (biased == 0 ? 1 : biased) - ((bits & 0xFFFF) == 0 ? 134 : 150);
}

// Certify or bound a W4A16 sum: every product is a multiple of 2^min_exp, so while the exact sum of
// magnitudes stays below 2^(53 + min_exp) no partial sum (in any order) was rounded.
W4A16Dot certify(double value, double abs_value, int min_exp, int64_t n_terms) {
  W4A16Dot out;
  out.value = value;
  out.abs_value = abs_value;
  if (!std::isfinite(value)) return out;
  const double limit = min_exp == std::numeric_limits<int>::max() ? INFINITY : std::ldexp(1.0, 53 + min_exp);
  out.exact = abs_value < limit;
  if (!out.exact) {
    // Any summation order: |error| <= gamma_{n-1} * sum|p|, and the computed abs_value is itself at
    // most gamma_{n-1} below the exact sum of magnitudes, so inflate it before using it.
    const double n = static_cast<double>(n_terms);
    const double u = 0x1p-53;
    const double g = n * u / (1 - n * u);
    out.abs_value = abs_value * (1 + g) * (1 + 4 * u);
    out.error_bound = g * out.abs_value * (1 + 4 * u);
  }
  return out;
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
  return certify(value, abs_value, min_exp, w.cols());
}

#if defined(__x86_64__)
namespace {

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
  const __m256i exp_mask = _mm256_set1_epi32(0xFF), one = _mm256_set1_epi32(1), low16 = _mm256_set1_epi32(0xFFFF);
  const __m256i off_bf16 = _mm256_set1_epi32(134 + 10), off_fp32 = _mm256_set1_epi32(150 + 10);
  const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF), zero = _mm256_setzero_si256();
  const int64_t blocks = w.cols() / 16;
  for (int64_t b = 0; b < blocks; ++b) {
    const __m256d s = _mm256_set1_pd(static_cast<double>(scale[(b / 8) * 8 + kPositionOfBlock[b % 8]]) * 0x1p-10);
    const __m128i codes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(code + b * 16));
    for (int h = 0; h < 2; ++h) {
      const __m256 xf = _mm256_loadu_ps(x + b * 16 + 8 * h);
      const __m256i c32 = _mm256_cvtepi8_epi32(h == 0 ? codes : _mm_srli_si128(codes, 8));
      // Grid exponent of each x (see grid_exponent), counted where x != 0, finite, and code != 0.
      const __m256i bits = _mm256_castps_si256(xf);
      const __m256i biased = _mm256_max_epi32(_mm256_and_si256(_mm256_srli_epi32(bits, 23), exp_mask), one);
      const __m256i is_bf16 = _mm256_cmpeq_epi32(_mm256_and_si256(bits, low16), zero);
      const __m256i e = _mm256_sub_epi32(biased, _mm256_blendv_epi8(off_fp32, off_bf16, is_bf16));
      const __m256i nonzero = _mm256_andnot_si256(_mm256_cmpeq_epi32(_mm256_and_si256(bits, abs_mask), zero),
                                                  _mm256_andnot_si256(_mm256_cmpeq_epi32(c32, zero), _mm256_set1_epi32(-1)));
      const __m256i finite = _mm256_andnot_si256(
          _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_srli_epi32(bits, 23), exp_mask), exp_mask), _mm256_set1_epi32(-1));
      min_exp = _mm256_min_epi32(min_exp, _mm256_blendv_epi8(big, e, _mm256_and_si256(nonzero, finite)));
      for (int q = 0; q < 2; ++q) {
        const __m256d xd = _mm256_cvtps_pd(q == 0 ? _mm256_castps256_ps128(xf) : _mm256_extractf128_ps(xf, 1));
        const __m256d cd = _mm256_cvtepi32_pd(q == 0 ? _mm256_castsi256_si128(c32) : _mm256_extracti128_si256(c32, 1));
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
  return certify((vv[0] + vv[1]) + (vv[2] + vv[3]), (mm[0] + mm[1]) + (mm[2] + mm[3]), me, w.cols());
}

}  // namespace
#endif

#if defined(__x86_64__)
namespace {
__attribute__((target("avx2"))) double weighted_abs_sum_avx2(const double* r, const DecodedNvfp4& w, int64_t rw) {
  const int8_t* code = w.abs_code_row(rw);
  const int32_t* scale = w.abs_scale_row(rw);
  __m256d acc[4] = {_mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd(), _mm256_setzero_pd()};
  const int64_t blocks = w.cols() / 16;
  for (int64_t b = 0; b < blocks; ++b) {
    const __m256d s = _mm256_set1_pd(static_cast<double>(scale[(b / 8) * 8 + kPositionOfBlock[b % 8]]) * 0x1p-10);
    const __m128i codes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(code + b * 16));
    const __m256i c32a = _mm256_cvtepi8_epi32(codes), c32b = _mm256_cvtepi8_epi32(_mm_srli_si128(codes, 8));
    const __m256d c0 = _mm256_cvtepi32_pd(_mm256_castsi256_si128(c32a)), c1 = _mm256_cvtepi32_pd(_mm256_extracti128_si256(c32a, 1));
    const __m256d c2 = _mm256_cvtepi32_pd(_mm256_castsi256_si128(c32b)), c3 = _mm256_cvtepi32_pd(_mm256_extracti128_si256(c32b, 1));
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
  if (static_cast<int64_t>(r.size()) != w.cols()) throw InputError("weighted_abs_sum: operand lengths differ");
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

}  // namespace moefuzz
