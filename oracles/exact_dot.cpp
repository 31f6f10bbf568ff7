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
  std::vector<uint8_t> codes(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = packed.data() + r * (cols / 2);
    for (int64_t i = 0; i < cols; ++i) codes[static_cast<size_t>(i)] = fp4_code_at(row, i);
    d.set_row(r, codes, scales.subspan(static_cast<size_t>(r * (cols / 16)), static_cast<size_t>(cols / 16)));
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

W4A16Dot w4a16_dot(std::span<const float> x, const DecodedNvfp4& w, int64_t rw) {
  if (static_cast<int64_t>(x.size()) != w.cols()) throw InputError("w4a16_dot: operand lengths differ");
  W4A16Dot out;
  int min_exp = std::numeric_limits<int>::max();
  for (int64_t i = 0; i < w.cols(); ++i) {
    const double wi = w.operand(rw, i);
    const double p = static_cast<double>(x[static_cast<size_t>(i)]) * wi;  // exact (<= 15 significant bits)
    out.value += p;
    out.abs_value += std::fabs(p);
    if (p != 0 && std::isfinite(p)) {
      int ex = 0;
      (void)std::frexp(static_cast<double>(x[static_cast<size_t>(i)]), &ex);
      min_exp = std::min(min_exp, ex - 8 - 10);  // bf16 ulp 2^(ex-8) times the 2^-10 operand grid
    }
  }
  if (!std::isfinite(out.value)) return out;
  // Every partial sum is a multiple of 2^min_exp; below 2^(53 + min_exp) it is representable.
  const double limit = min_exp == std::numeric_limits<int>::max() ? INFINITY : std::ldexp(1.0, 53 + min_exp);
  out.exact = out.abs_value < limit;
  if (!out.exact) {
    const double n = static_cast<double>(w.cols());
    const double u = 0x1p-53;
    out.error_bound = n * u / (1 - n * u) * out.abs_value * (1 + 4 * u);  // gamma_n; abs_value's own rounding
  }
  return out;
}

}  // namespace moefuzz
