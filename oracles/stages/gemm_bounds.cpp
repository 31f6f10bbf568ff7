#include "oracles/stages/gemm_bounds.h"

#include <algorithm>
#include <cmath>

#include "core/cpu_features.h"
#include "core/e4m3.h"
#include "oracles/interval_avx2.h"
#include "oracles/stages/stage_types.h"

namespace moefuzz::stages {
namespace {

// A correct fp32 kernel may overflow to Inf/NaN once a partial sum can reach FLT_MAX. Kernels differ
// in where they fold the global scales into the operands (raw products, alpha-scaled, or one S_d
// folded), so the test allows a folding factor up to 2^20 beyond max(1, |alpha|): past it nothing can
// be said (the element is left to FINITE, like any non-finite intermediate). Found by the moe_layer
// fuzzer: a bf16-max activation (3.4e38) in W4A16 made the kernel's GEMM1 overflow. The same
// allowance covers alpha itself: a global scale edited to 3e38 makes fl32(S_a * S_w) = Inf, and
// Inf * (an all-zero accumulator) = NaN in a correct kernel although the exact product is 0 (found by
// the H200 GPU campaign, on the CPU kernel too: corpora/moe_layer_fuzzer seeds).
constexpr double kFp32Max = 0x1.fffffep127;
constexpr double kFoldingWatch = kFp32Max * 0x1p-20;  // past it an intermediate may overflow
// Every GEMM bound here is itself evaluated in double (a handful of roundings): grown by 8 double
// units so that it never ends up below the real-valued bound it stands for.
constexpr double kBoundGrowth = 1 + 8 * kDoubleUnit;
// add_expert_bias: no statement near the fp32 overflow (past 2^127 an fp32 sum may round to Inf), and
// the kernel's one fp32 rounding plus the two double additions of the ends as the widening.
constexpr double kBiasedLimit = 0x1p127;
constexpr double kBiasWiden = kFp32Unit + 4 * kDoubleUnit;

// 6 * sum over [begin, end) of |center_k| + radius_k: the largest raw partial of x_k * code_k there
// (|code| <= 6; radius empty = a point input).
double raw_partial_bound(std::span<const float> center, std::span<const float> radius, size_t begin,
                         size_t end) {
  double m = 0;
  for (size_t k = begin; k < end; ++k)
    m += std::fabs(static_cast<double>(center[k])) + (radius.empty() ? 0.0 : static_cast<double>(radius[k]));
  return 6 * m;
}

}  // namespace

double gemm_floor(int64_t k, double sda, double sdw) {
  return static_cast<double>(k + kGemmExtraRoundings) * kUnderflowFloor * (1 + kMaxOperand * std::fabs(sda)) *
         (1 + kMaxOperand * std::fabs(sdw));
}

double dense_gemm_floor(int64_t k) {
  return static_cast<double>(2 * k + kGemmExtraRoundings) * kUnderflowFloor;
}

bool fp32_may_overflow(double abs_sum, double alpha, double v, double b) {
  const double a = std::max(1.0, std::fabs(alpha));
  return a >= kFoldingWatch || abs_sum * a >= kFoldingWatch || std::fabs(v) + b >= kFp32Max;
}

// W4A16 kernels may apply a block's scale after the block's 16-term partial sum of x_k * code_k
// (kernels/cpu/cpu_gemm.cpp does). A zero block scale hides that partial from the dequantized
// magnitude fp32_may_overflow sees, yet Inf * 0 = NaN in a correct kernel: found by the moe_layer
// campaign on the H200 host (a 3e38 activation against a zero gate block scale). True when a
// zero-scale block of weight row `row` may see its raw partial reach the overflow range (>= 2^-20
// FLT_MAX, the allowance of fp32_may_overflow).
bool zero_scale_partial_may_overflow(std::span<const float> center, std::span<const float> radius,
                                     const Nvfp4Matrix& w, int64_t row) {
  const int64_t blocks = w.cols / 16;
  for (int64_t b = 0; b < blocks; ++b)
    if (e4m3_to_float(w.scales[static_cast<size_t>(row * blocks + b)]) == 0.0f &&
        raw_partial_bound(center, radius, static_cast<size_t>(b * 16), static_cast<size_t>(b * 16 + 16)) >=
            kFoldingWatch)
      return true;
  return false;
}

// A row sum bounds every block sum, so ordinary rows never scan the weight scales.
bool row_may_overflow_a_partial(std::span<const float> center, std::span<const float> radius) {
  return raw_partial_bound(center, radius, 0, center.size()) >= kFoldingWatch;
}

DeviceWeights device_weights(const Case& c, const ExpertRows& rows, const ExpertWeights& W,
                             const Nvfp4Matrix& m, int which) {
  DeviceWeights out{.matrix = &m};
  if (rows.size() == 0) return out;
  const size_t e = static_cast<size_t>(rows.row(0).expert);
  if (e < c.experts.size() && &c.experts[e] == &W) out.content = weight_content_key(c.experts, e, which);
  return out;
}

Interval gemm_interval(const RoundedDot& d, double alpha, double flip_sum, double gk, double floor) {
  if (std::isnan(d.value)) return {kNaN, kNaN};  // a NaN scale in an operand row
  const double v = alpha * d.value;
  const double a = std::fabs(alpha);
  const double b = (gk * a * (d.abs_value + flip_sum) + a * flip_sum) * kBoundGrowth + floor;
  if (!std::isfinite(v) || !std::isfinite(b) || fp32_may_overflow(d.abs_value + flip_sum, alpha, v, b))
    return {kNaN, kNaN};
  return {v - b, v + b};
}

namespace {

void gemm_row_intervals_scalar(const GemmEpilogue& e, const RoundedDot* dots, const double* flips,
                               int64_t begin, int64_t end, Interval* out) {
  for (int64_t o = begin; o < end; ++o)
    out[o] = gemm_epilogue(
        e, gemm_interval(dots[o], e.alpha, flips != nullptr ? flips[o] : 0.0, e.gk, e.floor), o);
}

// gemm_row_intervals four columns at a time: gemm_interval's, add_expert_bias's and round_to_bf16's
// operations in their order, so their bits. The lanes hold columns (o, o+2, o+1, o+3): the order in
// which two loads of RoundedDot pairs unpack into values and magnitudes, and in which unpacking
// (lo, hi) stores Interval pairs back.
__attribute__((target("avx2"))) void gemm_row_intervals_avx2(const GemmEpilogue& e, const RoundedDot* dots,
                                                             const double* flips, int64_t cols,
                                                             Interval* out) {
  using avx2::abs_pd;
  const double a = std::fabs(e.alpha), overflow_factor = std::max(1.0, a);  // fp32_may_overflow's
  const bool alpha_overflows = overflow_factor >= kFoldingWatch;
  const __m256d alpha = _mm256_set1_pd(e.alpha), abs_alpha = _mm256_set1_pd(a),
                gka = _mm256_set1_pd(e.gk * a), grow = _mm256_set1_pd(kBoundGrowth),
                floor = _mm256_set1_pd(e.floor), factor = _mm256_set1_pd(overflow_factor),
                watch = _mm256_set1_pd(kFoldingWatch), fp32_max = _mm256_set1_pd(kFp32Max),
                inf = _mm256_set1_pd(kInf), nan = _mm256_set1_pd(kNaN),
                bias_limit = _mm256_set1_pd(kBiasedLimit), bias_widen = _mm256_set1_pd(kBiasWiden);
  const int64_t c4 = cols / 4 * 4;
  for (int64_t o = 0; o < c4; o += 4) {
    const __m256d d01 = _mm256_loadu_pd(&dots[o].value), d23 = _mm256_loadu_pd(&dots[o + 2].value);
    const __m256d value = _mm256_unpacklo_pd(d01, d23), magnitude = _mm256_unpackhi_pd(d01, d23);
    const __m256d flip = flips == nullptr
                             ? _mm256_setzero_pd()
                             : _mm256_permute4x64_pd(_mm256_loadu_pd(flips + o), _MM_SHUFFLE(3, 1, 2, 0));
    // gemm_interval
    const __m256d sum = _mm256_add_pd(magnitude, flip);
    const __m256d v = _mm256_mul_pd(alpha, value);
    const __m256d b = _mm256_add_pd(
        _mm256_mul_pd(_mm256_add_pd(_mm256_mul_pd(gka, sum), _mm256_mul_pd(abs_alpha, flip)), grow), floor);
    __m256d bad = _mm256_cmp_pd(value, value, _CMP_UNORD_Q);
    bad = _mm256_or_pd(bad, _mm256_cmp_pd(abs_pd(v), inf, _CMP_NLT_UQ));
    bad = _mm256_or_pd(bad, _mm256_cmp_pd(abs_pd(b), inf, _CMP_NLT_UQ));
    bad = _mm256_or_pd(bad, _mm256_cmp_pd(_mm256_mul_pd(sum, factor), watch, _CMP_GE_OQ));
    bad = _mm256_or_pd(bad, _mm256_cmp_pd(_mm256_add_pd(abs_pd(v), b), fp32_max, _CMP_GE_OQ));
    if (alpha_overflows) bad = _mm256_cmp_pd(v, v, _CMP_TRUE_UQ);
    __m256d lo = _mm256_sub_pd(v, b), hi = _mm256_add_pd(v, b);
    // gemm_epilogue
    if (!e.bias.empty()) {
      const __m256d bias =
          _mm256_permute4x64_pd(_mm256_cvtps_pd(_mm_loadu_ps(e.bias.data() + o)), _MM_SHUFFLE(3, 1, 2, 0));
      lo = _mm256_add_pd(lo, bias);
      hi = _mm256_add_pd(hi, bias);
      const __m256d m = avx2::std_max(abs_pd(lo), abs_pd(hi));
      bad = _mm256_or_pd(bad, _mm256_cmp_pd(m, bias_limit, _CMP_NLT_UQ));
      const __m256d widen = _mm256_mul_pd(bias_widen, m);
      lo = _mm256_sub_pd(lo, widen);
      hi = _mm256_add_pd(hi, widen);
    }
    if (e.bf16) {
      lo = avx2::round_bits_to_bf16(avx2::outward_float_bits</*kDown=*/true>(lo));
      hi = avx2::round_bits_to_bf16(avx2::outward_float_bits</*kDown=*/false>(hi));
    }
    lo = _mm256_blendv_pd(lo, nan, bad);
    hi = _mm256_blendv_pd(hi, nan, bad);
    _mm256_storeu_pd(&out[o].lo, _mm256_unpacklo_pd(lo, hi));
    _mm256_storeu_pd(&out[o + 2].lo, _mm256_unpackhi_pd(lo, hi));
  }
  gemm_row_intervals_scalar(e, dots, flips, c4, cols, out);
}

}  // namespace

void gemm_row_intervals(const GemmEpilogue& e, const RoundedDot* dots, const double* flips, int64_t cols,
                        Interval* out, bool simd) {
  if (simd && cpu_has_avx2())
    gemm_row_intervals_avx2(e, dots, flips, cols, out);
  else
    gemm_row_intervals_scalar(e, dots, flips, 0, cols, out);
}

Interval w4a16_point_interval(const W4A16Dot& d, double alpha, double gk, double floor) {
  if (!std::isfinite(d.value)) return {kNaN, kNaN};
  const double v = alpha * d.value, a = std::fabs(alpha);
  const double b = (gk * a * d.abs_value + a * d.error_bound) * kBoundGrowth + floor;
  if (!std::isfinite(b) || fp32_may_overflow(d.abs_value, alpha, v, b)) return {kNaN, kNaN};
  return {v - b, v + b};
}

Interval w4a16_radius_interval(const W4A16Dot& d, const W4A16Dot& r, double alpha, double gk, double floor) {
  const double a = std::fabs(alpha), fs = r.abs_value + r.error_bound;
  const double v = alpha * d.value;
  const double b = (gk * a * (d.abs_value + fs) + a * (fs + d.error_bound)) * kBoundGrowth + floor;
  return std::isfinite(v) && std::isfinite(b) && !fp32_may_overflow(d.abs_value + fs, alpha, v, b)
             ? Interval{v - b, v + b}
             : Interval{kNaN, kNaN};
}

Interval add_expert_bias(Interval v, double b) {
  if (is_nan(v)) return v;
  const double lo = v.lo + b, hi = v.hi + b, m = std::max(std::fabs(lo), std::fabs(hi));
  if (!(m < kBiasedLimit)) return {kNaN, kNaN};
  const double widen = kBiasWiden * m;
  return {lo - widen, hi + widen};
}

namespace {

// No row of the call flips a code: every flip sum is +0 (DeviceGemm::zero_flips).
bool no_row_flips(const QuantizedInputs& q, int64_t n) {
  return std::all_of(q.flips.begin(), q.flips.begin() + n, [](const FlipList& f) { return f.empty(); });
}

}  // namespace

DeviceGemm device_gemm(ExactDotDevice& device, const QuantizedInputs& q, int64_t n,
                       std::span<const DeviceWeights> weights) {
  int64_t dots = 0;
  for (const DeviceWeights& w : weights) dots += n * w.matrix->rows;
  DeviceGemm out;
  out.dots.resize(static_cast<size_t>(dots));
  // Rows conditioned on a kernel's codes flip nothing: every flip sum is +0 (what flip_sums gives for
  // an empty list), so the device computes and returns the dots alone.
  out.zero_flips = no_row_flips(q, n);
  if (out.zero_flips || !weighted_abs_sum_rows_is_fused()) {
    device.dots(q.rows, n, weights, out.dots.data(), nullptr);
    return out;
  }
  out.flips.resize(static_cast<size_t>(dots));
  const DotFlips flips{.rows = std::span<const FlipList>(q.flips.data(), static_cast<size_t>(n)),
                       .out = out.flips.data()};
  device.dots(q.rows, n, weights, out.dots.data(), &flips);
  return out;
}

namespace {

// dots (when given) and flip sums (when `fl` is non-empty) of rows [0, n) against each matrix, in
// device_gemm's layout: matrix after matrix, each [rows][matrix rows].
void cpu_dots_and_flips(const QuantizedInputs& q, int64_t n, std::span<const DeviceWeights> weights,
                        const std::vector<FlipTerms>& fl, RoundedDot* dots, double* flips) {
  size_t base = 0;
  for (const DeviceWeights& dw : weights) {
    const Nvfp4Matrix& w = *dw.matrix;
    const int64_t N = w.rows;
    for (int64_t j0 = 0; j0 < n; j0 += 2 * kDotRows) {
      const int na = static_cast<int>(std::min<int64_t>(2 * kDotRows, n - j0));
      RoundedDot d[2 * kDotRows];
      double f[2 * kDotRows];
      for (int64_t o = 0; o < N; ++o) {
        const PackedNvfp4Row row = packed_row(w, o);
        if (dots != nullptr) {
          rounded_dot_rows(q.rows, j0, na, row, d);
          for (int r = 0; r < na; ++r) dots[base + static_cast<size_t>((j0 + r) * N + o)] = d[r];
        }
        if (!fl.empty()) {
          flip_sums(fl, j0, na, row, f);
          for (int r = 0; r < na; ++r) flips[base + static_cast<size_t>((j0 + r) * N + o)] = f[r];
        }
      }
    }
    base += static_cast<size_t>(n * N);
  }
}

std::vector<FlipTerms> all_flip_terms(const QuantizedInputs& q, int64_t n, int64_t cols) {
  std::vector<FlipTerms> fl(static_cast<size_t>(n));
  for (size_t j = 0; j < fl.size(); ++j) fl[j] = flip_terms(q.flips[j], cols);
  return fl;
}

size_t dot_count(int64_t n, std::span<const DeviceWeights> weights) {
  size_t dots = 0;
  for (const DeviceWeights& w : weights) dots += static_cast<size_t>(n * w.matrix->rows);
  return dots;
}

}  // namespace

DeviceGemm cpu_gemm(const QuantizedInputs& q, int64_t n, std::span<const DeviceWeights> weights) {
  DeviceGemm out;
  out.dots.resize(dot_count(n, weights));
  out.zero_flips = no_row_flips(q, n);
  if (!out.zero_flips) out.flips.resize(out.dots.size());
  const std::vector<FlipTerms> fl =
      out.zero_flips ? std::vector<FlipTerms>{} : all_flip_terms(q, n, q.rows.cols());
  cpu_dots_and_flips(q, n, weights, fl, out.dots.data(), out.flips.data());
  return out;
}

void add_cpu_flips(const QuantizedInputs& q, int64_t n, std::span<const DeviceWeights> weights,
                   DeviceGemm& g) {
  if (g.flips_known()) return;
  g.flips.resize(dot_count(n, weights));
  cpu_dots_and_flips(q, n, weights, all_flip_terms(q, n, q.rows.cols()), nullptr, g.flips.data());
}

FlipTerms flip_terms(const FlipList& flips, int64_t cols) {
  FlipTerms t;
  t.sparse = &flips;
  if (flips_are_dense(flips.size(), cols)) {
    t.dense.assign(static_cast<size_t>(cols), 0.0);
    for (const auto& [i, r] : flips) t.dense[static_cast<size_t>(i)] += r;
  }
  return t;
}

void flip_sums(const std::vector<FlipTerms>& fl, int64_t j0, int na, PackedNvfp4Row w, double* out) {
  const double* dense[8];
  int which[8], nd = 0;
  for (int r = 0; r < na; ++r) {
    const FlipTerms& t = fl[static_cast<size_t>(j0 + r)];
    if (!t.dense.empty()) {
      dense[nd] = t.dense.data();
      which[nd++] = r;
    } else {
      out[r] = sparse_weighted_abs_sum(*t.sparse, w);  // 0 for no flips
    }
  }
  if (nd == 0) return;
  double got[8];
  weighted_abs_sum_rows(dense, nd, w, got);
  for (int k = 0; k < nd; ++k) out[which[k]] = got[k];
}

double flip_sum(const FlipList& flips, PackedNvfp4Row w) {
  const std::vector<FlipTerms> terms{flip_terms(flips, w.cols)};
  double out = 0;
  flip_sums(terms, 0, 1, w, &out);
  return out;
}

}  // namespace moefuzz::stages
