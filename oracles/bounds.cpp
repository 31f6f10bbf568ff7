#include "oracles/bounds.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/bf16.h"
#include "core/cpu_features.h"
#include "core/e2m1.h"
#include "core/e4m3.h"
#include "oracles/interval_avx2.h"

namespace moefuzz {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The two association orders of the block scale (SPEC.md §1.5): fast-math and the torch references
// compute fl(S * fl(amax * RN(1/6))); the exact-math path computes fl(amax * fl(S * RN(1/6))).
// rcp.approx(6) == RN(1/6) [MEASURED], so both are exact emulations; each is monotone in amax.
uint8_t scale_byte_fast(float amax, float s_q) {
  const float rcp6 = 1.0f / 6.0f;
  return e4m3_from_float(s_q * (amax * rcp6));
}
uint8_t scale_byte_exact(float amax, float s_q) {
  const float rcp6 = 1.0f / 6.0f;
  return e4m3_from_float(amax * (s_q * rcp6));
}

// The fast-math outScale = rcp.approx.ftz(fl(sfd * rcp.approx.ftz(S))) (SPEC.md §1.5) is +Inf when
// either reciprocal step lands below the smallest normal 2^-126 and is flushed (.ftz; FlashInfer JIT
// builds with -use_fast_math, so the multiply flushes too): rcp(S) flushes when S > ~2^126, and
// p = fl(sfd * rcp(S)) ~ amax/6 flushes for tiny blocks. Both values are within kQuantScaleRelError
// of their exact counterparts 1/S and sfd/S (the chain behind that constant is a superset of theirs),
// so a flush is possible iff min(1, sfd) / S * (1 - kQuantScaleRelError) < 2^-126. Found by the
// moe_layer fuzzer: a1_scale = 3.39e38 made the CPU kernel's fc1 codes all +-6 (outScale = +Inf),
// which the unflushed envelope did not admit.
bool fast_math_scale_may_flush(double s_q, float sfd) {
  return std::min(1.0, static_cast<double>(sfd)) / s_q * (1 - kQuantScaleRelError) < kUnderflowFloor;
}

// Codes the kernel may emit for an element in [lo, hi] under block scale value sfd: the range
// [vmin, vmax] of the unflushed quantizer, plus the flushed outcomes where a flush is possible.
struct CodeRange {
  float vmin, vmax;  // decoded E2M1 values (code value, not times the scale): hull of everything
  float unflushed_min, unflushed_max;         // the unflushed quantizer's range alone
  bool flush_pos = false, flush_neg = false;  // +6 / -6 reachable through outScale = +Inf
  // Exact admissibility (the hull [vmin, vmax] is what bounds use; a code strictly between the
  // unflushed range and +-6 is produced by no variant).
  bool admits(float v) const {
    return (v >= unflushed_min && v <= unflushed_max) || (flush_pos && v == kE2m1Max) ||
           (flush_neg && v == -kE2m1Max);
  }
};
bool is_power_of_two(double v) {
  int e = 0;
  return v > 0 && std::isfinite(v) && std::frexp(v, &e) == 0.5;
}

// Relative error of outScale (and so of y) against S_q / sfd: zero when both are powers of two with
// every intermediate normal - rcp.approx.ftz.f32 is exact on powers of two [MEASURED on H200:
// tests/gpu/cuda_probes_test.cpp, all 2^-126..2^126], the exact and reference variants divide powers
// of two exactly, and y = x * 2^m is exact short of under/overflow (code 0 / saturation either way) -
// so E2M1 ties are decided by the tie rule alone (the e2m1-ties-away mutant is visible); otherwise
// kQuantScaleRelError.
double out_scale_rel_error(double s_q, float sfd) {
  const double ratio = s_q / static_cast<double>(sfd);
  const bool exact = is_power_of_two(s_q) && is_power_of_two(sfd) && s_q <= 0x1p126 && s_q >= 0x1p-126 &&
                     ratio <= 0x1p126 && ratio >= 0x1p-126;
  return exact ? 0.0 : kQuantScaleRelError;
}

// What code_range needs of one (S_q, block scale) pair, computed once per block and byte rather than
// once per element (is_power_of_two and the flush test were a third of an envelope).
struct BlockQuant {
  bool zero;   // sfd == 0: every code decodes to 0 (both zero rules)
  double os;   // S_q / sfd
  double rel;  // out_scale_rel_error
  bool flush;  // fast_math_scale_may_flush
  BlockQuant(double s_q, float sfd)
      : zero(sfd == 0.0f),
        os(zero ? 0.0 : s_q / static_cast<double>(sfd)),
        rel(zero ? 0.0 : out_scale_rel_error(s_q, sfd)),
        flush(!zero && fast_math_scale_may_flush(s_q, sfd)) {}
};

CodeRange code_range(double lo, double hi, const BlockQuant& q) {
  if (q.zero) return {0.0f, 0.0f, 0.0f, 0.0f};
  const double a = lo * q.os, b = hi * q.os;
  const double ymin = std::min(a * (1 - q.rel), a * (1 + q.rel));
  const double ymax = std::max(b * (1 - q.rel), b * (1 + q.rel));
  // e2m1_from_float is monotone (RN onto a monotone grid, saturating), so the ends bound the codes.
  const float umin = e2m1_to_float(e2m1_from_float(float_down(ymin))),
              umax = e2m1_to_float(e2m1_from_float(float_up(ymax)));
  CodeRange r{umin, umax, umin, umax};
  if (q.flush) {
    // outScale = rcp(0) = +Inf: y = x * Inf is +-Inf (code +-6) for x != 0 and NaN (code +6,
    // cuda_fp4.h) for x = +-0. The exact-math path under FTZ (outScale = FLT_MAX: y = x * FLT_MAX
    // has the sign of x and saturates at 6) lands on the same codes.
    r.flush_neg = lo < 0;
    r.flush_pos = hi >= 0;
    if (r.flush_neg) r.vmin = -kE2m1Max;
    if (r.flush_pos) r.vmax = kE2m1Max;
  }
  return r;
}

// The unflushed [umin, umax] of code_range for four elements at once (q not zero): the same
// operations in the same order as code_range, four lanes wide, so the same bits. float_down/float_up:
// the RN conversion, one ulp toward the bound when it went past x (0 -> the smallest subnormal).
// e2m1_to_float(e2m1_from_float(f)) is the sum of the steps of the thresholds |f| passes, with f's
// sign (the thresholds and steps are exact floats).
#if defined(__x86_64__)
// The E2M1 thresholds a magnitude a passes, as e2m1_from_float counts them (ties at 0.25, 1.25, 2.5
// and 5 stay below, those at 0.75, 1.75 and 3.5 go above): one all-ones lane mask per threshold.
__attribute__((target("avx2"), always_inline)) inline void e2m1_passed_avx2(__m128 a, __m128 (&passed)[7]) {
  passed[0] = _mm_cmp_ps(a, _mm_set1_ps(0.25f), _CMP_GT_OQ);
  passed[1] = _mm_cmp_ps(a, _mm_set1_ps(0.75f), _CMP_GE_OQ);
  passed[2] = _mm_cmp_ps(a, _mm_set1_ps(1.25f), _CMP_GT_OQ);
  passed[3] = _mm_cmp_ps(a, _mm_set1_ps(1.75f), _CMP_GE_OQ);
  passed[4] = _mm_cmp_ps(a, _mm_set1_ps(2.5f), _CMP_GT_OQ);
  passed[5] = _mm_cmp_ps(a, _mm_set1_ps(3.5f), _CMP_GE_OQ);
  passed[6] = _mm_cmp_ps(a, _mm_set1_ps(5.0f), _CMP_GT_OQ);
}
__attribute__((target("avx2"), always_inline)) inline __m128 e2m1_round_avx2(__m128 f) {
  const __m128 sign = _mm_and_ps(f, _mm_set1_ps(-0.0f)), a = _mm_andnot_ps(_mm_set1_ps(-0.0f), f);
  __m128 passed[7];
  e2m1_passed_avx2(a, passed);
  // The value steps between consecutive E2M1 magnitudes (exact floats).
  constexpr float kSteps[7] = {0.5f, 0.5f, 0.5f, 0.5f, 1.0f, 1.0f, 2.0f};
  __m128 v = _mm_and_ps(passed[0], _mm_set1_ps(kSteps[0]));
  for (int t = 1; t < 7; ++t) v = _mm_add_ps(v, _mm_and_ps(passed[t], _mm_set1_ps(kSteps[t])));
  return _mm_or_ps(v, sign);
}
__attribute__((target("avx2"))) void unflushed_codes16_avx2(const double* lo, const double* hi,
                                                            const BlockQuant& q, float* umin, float* umax) {
  const __m256d os = _mm256_set1_pd(q.os), down = _mm256_set1_pd(1 - q.rel), up = _mm256_set1_pd(1 + q.rel);
  for (int k = 0; k < 16; k += 4) {
    const __m256d a = _mm256_mul_pd(_mm256_loadu_pd(lo + k), os),
                  b = _mm256_mul_pd(_mm256_loadu_pd(hi + k), os);
    // std::min(x, y) is y < x ? y : x (min_pd(y, x)); std::max(x, y) is x < y ? y : x (max_pd(y, x))
    const __m256d ymin = _mm256_min_pd(_mm256_mul_pd(a, up), _mm256_mul_pd(a, down));
    const __m256d ymax = _mm256_max_pd(_mm256_mul_pd(b, up), _mm256_mul_pd(b, down));
    _mm_storeu_ps(umin + k,
                  e2m1_round_avx2(_mm_castsi128_ps(avx2::outward_float_bits</*kDown=*/true>(ymin))));
    _mm_storeu_ps(umax + k,
                  e2m1_round_avx2(_mm_castsi128_ps(avx2::outward_float_bits</*kDown=*/false>(ymax))));
  }
}

// nvfp4_envelope's hull update of one block under one scale byte value sfd, four elements at a time:
// lo[k] = std::min(lo[k], vmin[k] * sfd) and hi[k] = std::max(hi[k], vmax[k] * sfd), the products in
// double (exact), the same bits as the scalar loop.
__attribute__((target("avx2"))) void widen_block_hull_avx2(const float* vmin, const float* vmax, float sfd,
                                                           double* lo, double* hi) {
  const __m256d f = _mm256_set1_pd(static_cast<double>(sfd));
  for (int k = 0; k < 16; k += 4) {
    const __m256d a = _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(vmin + k)), f);
    const __m256d c = _mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(vmax + k)), f);
    _mm256_storeu_pd(lo + k, avx2::std_min(_mm256_loadu_pd(lo + k), a));
    _mm256_storeu_pd(hi + k, avx2::std_max(_mm256_loadu_pd(hi + k), c));
  }
}

// nvfp4_envelope's representative codes of one block (block scale value not zero), four elements at a
// time: y = fl32(fl32(center) * scale), its E2M1 value clamped into [vmin, vmax], that value's code
// (sign bit 0x8, -0 included), as the scalar loop computes them. y is never NaN (center is finite).
__attribute__((target("avx2"))) void representative_codes_avx2(const double* center, double scale,
                                                               const float* vmin, const float* vmax,
                                                               uint8_t* codes) {
  const __m256d sv = _mm256_set1_pd(scale);
  for (int k = 0; k < 16; k += 4) {
    const __m256d c = _mm256_cvtps_pd(_mm256_cvtpd_ps(_mm256_loadu_pd(center + k)));
    const __m128 r = e2m1_round_avx2(_mm256_cvtpd_ps(_mm256_mul_pd(c, sv)));
    // std::clamp(r, lo, hi): r < lo ? lo : hi < r ? hi : r.
    const __m128 lo = _mm_loadu_ps(vmin + k), hi = _mm_loadu_ps(vmax + k);
    const __m128 upper = _mm_blendv_ps(r, hi, _mm_cmp_ps(hi, r, _CMP_LT_OQ));
    const __m128 v = _mm_blendv_ps(upper, lo, _mm_cmp_ps(r, lo, _CMP_LT_OQ));
    // e2m1_from_float of an E2M1 value: the number of thresholds its magnitude passes, plus the sign.
    __m128 passed[7];
    e2m1_passed_avx2(_mm_andnot_ps(_mm_set1_ps(-0.0f), v), passed);
    __m128i m = _mm_setzero_si128();
    for (const __m128& p : passed) m = _mm_sub_epi32(m, _mm_castps_si128(p));
    const __m128i sign = _mm_srli_epi32(_mm_and_si128(_mm_castps_si128(v), _mm_set1_epi32(INT32_MIN)), 28);
    const __m128i code = _mm_or_si128(m, sign);
    const int packed = _mm_cvtsi128_si32(_mm_packus_epi16(_mm_packus_epi32(code, code), _mm_setzero_si128()));
    std::memcpy(codes + k, &packed, 4);
  }
}
#endif

// The unflushed ranges of 16 elements (one block; q not zero): four lanes at a time where the CPU
// has AVX2 (and simd is set), else code_range one by one.
void unflushed_codes16(const double* lo, const double* hi, const BlockQuant& q, float* umin, float* umax,
                       bool simd = true) {
#if defined(__x86_64__)
  if (simd && cpu_has_avx2()) {
    unflushed_codes16_avx2(lo, hi, q, umin, umax);
    return;
  }
#endif
  for (int k = 0; k < 16; ++k) {
    const CodeRange r = code_range(lo[k], hi[k], q);
    umin[k] = r.unflushed_min;
    umax[k] = r.unflushed_max;
  }
}

}  // namespace

bool nvfp4_unflushed_codes16(const double* lo, const double* hi, float s_q, float sfd, bool simd, float* umin,
                             float* umax) {
  const BlockQuant q(s_q, sfd);
  if (q.zero || q.flush) return false;
  unflushed_codes16(lo, hi, q, umin, umax, simd);
  return true;
}

double gamma_n(double n, double u) {
  const double nu = n * u;
  return nu >= 1 ? kInf : nu / (1 - nu);
}

double relation_bound(double a_got, double b_got, double a_expected, double a_bound, double b_expected,
                      double b_bound, double scale) {
  const double bound = a_bound + std::fabs(scale) * b_bound + std::fabs(a_expected - scale * b_expected);
  return bound + 4 * kDoubleUnit *
                     (std::fabs(a_got) + std::fabs(scale * b_got) + std::fabs(a_expected) +
                      std::fabs(scale * b_expected));
}

double swiglu(double gate, double up, const Swiglu& s) {
  const double g = std::min(gate, s.limit);
  const double v = std::clamp(up, -s.limit, s.limit) + s.beta;
  const double sig = 1.0 / (1.0 + std::exp(-s.alpha * g));
  return g * sig * v;
}

namespace {

// swiglu_eval_relative_error's terms (derivation in bounds.h): below z = kSigmoidFlushZ the kernel's
// sigmoid may flush (error 100%); above, (kEvalUlps + kEvalUlpsPerZ |z|) fp32 ulps of 2^-23.
constexpr double kSigmoidFlushZ = -80;
constexpr double kEvalUlps = 8, kEvalUlpsPerZ = 2, kFp32Ulp = 0x1p-23;
// Below kSigmoidFlushZ the true sigmoid is < e^-80 < 2^-115, and a flushing kernel's lies in [0, 2^-115].
constexpr double kFlushedSigmoid = 0x1p-115;

}  // namespace

double swiglu_eval_relative_error(double z) {
  if (z < kSigmoidFlushZ) return 1.0;
  return (kEvalUlps + kEvalUlpsPerZ * std::fabs(z)) * kFp32Ulp;
}

Interval swiglu_kernel_interval(Interval gate, Interval up, const Swiglu& s) {
  if (std::isnan(gate.lo) || std::isnan(gate.hi) || std::isnan(up.lo) || std::isnan(up.hi)) return {NAN, NAN};
  // Clamps are monotone: map the interval ends.
  const Interval g{std::min(gate.lo, s.limit), std::min(gate.hi, s.limit)};
  const Interval v{std::clamp(up.lo, -s.limit, s.limit) + s.beta,
                   std::clamp(up.hi, -s.limit, s.limit) + s.beta};
  const double gc = g.center(), rg = g.radius();
  const double sc = gc / (1.0 + std::exp(-s.alpha * gc));
  const double rs = kSiluSlopeMax * rg;
  const Interval sv{sc - rs, sc + rs};
  const double p[4] = {sv.lo * v.lo, sv.lo * v.hi, sv.hi * v.lo, sv.hi * v.hi};
  double lo = *std::min_element(p, p + 4), hi = *std::max_element(p, p + 4);
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {NAN, NAN};
  const double mag = std::max(std::fabs(lo), std::fabs(hi));
  const double zmax = std::fabs(s.alpha) * std::max(std::fabs(g.lo), std::fabs(g.hi));
  // Worst |z| also bounds the most negative z; z < kSigmoidFlushZ anywhere in the interval means "may flush".
  const double zmin = std::min(s.alpha * g.lo, s.alpha * g.hi);
  const double eps = std::max(swiglu_eval_relative_error(zmax), swiglu_eval_relative_error(zmin));
  double widen = (eps + kOracleTranscendentalError + 4 * kDoubleUnit) * mag + 4 * kUnderflowFloor;
  // Below z = kSigmoidFlushZ the true sigmoid is < e^-80 < 2^-115 and a kernel's (exp saturating at FLT_MAX
  // or Inf, a flushing divide) lies in [0, 2^-115] too: the product may be anything up to |g| |v| 2^-115.
  if (zmin < kSigmoidFlushZ)
    widen += std::max(std::fabs(g.lo), std::fabs(g.hi)) * std::max(std::fabs(v.lo), std::fabs(v.hi)) *
             kFlushedSigmoid;
  return {lo - widen, hi + widen};
}

namespace {

void swiglu_kernel_intervals_scalar(const Interval* gate, const Interval* up, int64_t begin, int64_t end,
                                    const Swiglu& s, Interval* out) {
  for (int64_t i = begin; i < end; ++i) out[i] = swiglu_kernel_interval(gate[i], up[i], s);
}

// The ends of Intervals x[0..3], lanes in the order (0, 2, 1, 3).
__attribute__((target("avx2"))) inline void unpack_ends(const Interval* x, __m256d& lo, __m256d& hi) {
  const __m256d a = _mm256_loadu_pd(&x[0].lo), b = _mm256_loadu_pd(&x[2].lo);
  lo = _mm256_unpacklo_pd(a, b);
  hi = _mm256_unpackhi_pd(a, b);
}

// std::clamp(x, lo, hi) (x < lo ? lo : hi < x ? hi : x), then + shift.
__attribute__((target("avx2"))) inline __m256d clamp_shift(__m256d x, __m256d lo, __m256d hi, __m256d shift) {
  const __m256d upper = _mm256_blendv_pd(x, hi, _mm256_cmp_pd(hi, x, _CMP_LT_OQ));
  return _mm256_add_pd(_mm256_blendv_pd(upper, lo, _mm256_cmp_pd(x, lo, _CMP_LT_OQ)), shift);
}

// swiglu_eval_relative_error, four at a time.
__attribute__((target("avx2"))) inline __m256d swiglu_eval_error(__m256d z) {
  const __m256d e = _mm256_mul_pd(
      _mm256_add_pd(_mm256_set1_pd(kEvalUlps), _mm256_mul_pd(_mm256_set1_pd(kEvalUlpsPerZ), avx2::abs_pd(z))),
      _mm256_set1_pd(kFp32Ulp));
  return _mm256_blendv_pd(e, _mm256_set1_pd(1.0),
                          _mm256_cmp_pd(z, _mm256_set1_pd(kSigmoidFlushZ), _CMP_LT_OQ));
}

// swiglu_kernel_interval four elements at a time: the same operations in the same order (std::exp
// itself called per element), so the same bits. Lanes hold elements (i, i+2, i+1, i+3): the order in
// which two loads of Interval pairs unpack into ends, and in which unpacking stores them back.
__attribute__((target("avx2"))) void swiglu_kernel_intervals_avx2(const Interval* gate, const Interval* up,
                                                                  int64_t n, const Swiglu& s, Interval* out) {
  using avx2::abs_pd;
  using avx2::std_max;
  using avx2::std_min;
  const __m256d limit = _mm256_set1_pd(s.limit), neg_limit = _mm256_set1_pd(-s.limit),
                beta = _mm256_set1_pd(s.beta), alpha = _mm256_set1_pd(s.alpha),
                neg_alpha = _mm256_set1_pd(-s.alpha), abs_alpha = _mm256_set1_pd(std::fabs(s.alpha)),
                half = _mm256_set1_pd(0.5), radius_grow = _mm256_set1_pd(1 + 2 * kDoubleUnit),
                one = _mm256_set1_pd(1.0), slope = _mm256_set1_pd(kSiluSlopeMax),
                inf = _mm256_set1_pd(std::numeric_limits<double>::infinity()), zero = _mm256_setzero_pd(),
                flush_z = _mm256_set1_pd(kSigmoidFlushZ), extra = _mm256_set1_pd(kOracleTranscendentalError),
                doubles = _mm256_set1_pd(4 * kDoubleUnit), floors = _mm256_set1_pd(4 * kUnderflowFloor),
                tiny = _mm256_set1_pd(kFlushedSigmoid),
                nan = _mm256_set1_pd(std::numeric_limits<double>::quiet_NaN());
  const int64_t n4 = n / 4 * 4;
  for (int64_t i = 0; i < n4; i += 4) {
    __m256d glo, ghi, ulo, uhi;
    unpack_ends(gate + i, glo, ghi);
    unpack_ends(up + i, ulo, uhi);
    const __m256d bad_in =
        _mm256_or_pd(_mm256_cmp_pd(glo, ghi, _CMP_UNORD_Q), _mm256_cmp_pd(ulo, uhi, _CMP_UNORD_Q));
    // Clamps: std::min(x, limit); std::clamp(x, -limit, limit) = x < -limit ? -limit : limit < x ? limit : x.
    const __m256d g_lo = std_min(glo, limit), g_hi = std_min(ghi, limit);
    const __m256d v_lo = clamp_shift(ulo, neg_limit, limit, beta),
                  v_hi = clamp_shift(uhi, neg_limit, limit, beta);
    // Interval::center and Interval::radius of g.
    const __m256d width = _mm256_sub_pd(g_hi, g_lo);
    const __m256d gc = _mm256_blendv_pd(_mm256_add_pd(g_lo, _mm256_mul_pd(width, half)), g_lo,
                                        _mm256_cmp_pd(g_lo, g_hi, _CMP_EQ_OQ));
    const __m256d rg = _mm256_blendv_pd(_mm256_mul_pd(_mm256_mul_pd(width, half), radius_grow), zero,
                                        _mm256_cmp_pd(width, zero, _CMP_EQ_OQ));
    alignas(32) double arg[4], e[4];
    _mm256_store_pd(arg, _mm256_mul_pd(neg_alpha, gc));
    for (int k = 0; k < 4; ++k) e[k] = std::exp(arg[k]);
    const __m256d sc = _mm256_div_pd(gc, _mm256_add_pd(one, _mm256_load_pd(e)));
    const __m256d rs = _mm256_mul_pd(slope, rg);
    const __m256d sv_lo = _mm256_sub_pd(sc, rs), sv_hi = _mm256_add_pd(sc, rs);
    // std::min_element / std::max_element over {lo lo, lo hi, hi lo, hi hi}: the first extreme by <.
    const __m256d p[4] = {_mm256_mul_pd(sv_lo, v_lo), _mm256_mul_pd(sv_lo, v_hi), _mm256_mul_pd(sv_hi, v_lo),
                          _mm256_mul_pd(sv_hi, v_hi)};
    __m256d lo = p[0], hi = p[0];
    for (int k = 1; k < 4; ++k) {
      lo = _mm256_blendv_pd(lo, p[k], _mm256_cmp_pd(p[k], lo, _CMP_LT_OQ));
      hi = _mm256_blendv_pd(hi, p[k], _mm256_cmp_pd(hi, p[k], _CMP_LT_OQ));
    }
    const __m256d bad = _mm256_or_pd(bad_in, _mm256_or_pd(_mm256_cmp_pd(abs_pd(lo), inf, _CMP_NLT_UQ),
                                                          _mm256_cmp_pd(abs_pd(hi), inf, _CMP_NLT_UQ)));
    const __m256d mag = std_max(abs_pd(lo), abs_pd(hi));
    const __m256d g_abs = std_max(abs_pd(g_lo), abs_pd(g_hi));
    const __m256d zmax = _mm256_mul_pd(abs_alpha, g_abs);
    const __m256d zmin = std_min(_mm256_mul_pd(alpha, g_lo), _mm256_mul_pd(alpha, g_hi));
    const __m256d eps = std_max(swiglu_eval_error(zmax), swiglu_eval_error(zmin));
    __m256d widen =
        _mm256_add_pd(_mm256_mul_pd(_mm256_add_pd(_mm256_add_pd(eps, extra), doubles), mag), floors);
    const __m256d flushed = _mm256_mul_pd(_mm256_mul_pd(g_abs, std_max(abs_pd(v_lo), abs_pd(v_hi))), tiny);
    widen = _mm256_blendv_pd(widen, _mm256_add_pd(widen, flushed), _mm256_cmp_pd(zmin, flush_z, _CMP_LT_OQ));
    lo = _mm256_blendv_pd(_mm256_sub_pd(lo, widen), nan, bad);
    hi = _mm256_blendv_pd(_mm256_add_pd(hi, widen), nan, bad);
    _mm256_storeu_pd(&out[i].lo, _mm256_unpacklo_pd(lo, hi));
    _mm256_storeu_pd(&out[i + 2].lo, _mm256_unpackhi_pd(lo, hi));
  }
  swiglu_kernel_intervals_scalar(gate, up, n4, n, s, out);
}

}  // namespace

void swiglu_kernel_intervals(const Interval* gate, const Interval* up, int64_t n, const Swiglu& s,
                             Interval* out, bool simd) {
  if (simd && cpu_has_avx2())
    swiglu_kernel_intervals_avx2(gate, up, n, s, out);
  else
    swiglu_kernel_intervals_scalar(gate, up, 0, n, s, out);
}

double Nvfp4Envelope::radius(size_t i, double center) const {
  return std::max(hi[i] - center, center - lo[i]);
}

namespace {

// Whether a loop with a `simd` switch takes its AVX2 path on this CPU.
bool avx2_path(bool simd) {
#if defined(__x86_64__)
  return simd && cpu_has_avx2();
#else
  (void)simd;
  return false;
#endif
}

// The admissible E4M3 byte range of one block of 16 elements (every variant, SPEC.md §1.5): from the
// smallest and largest amax any input inside the intervals gives. `amax_c` is the center's amax.
struct BlockScaleRange {
  uint8_t lo, hi;
  double amax_c;
};
// The block's three maxima (the smallest and largest amax the intervals allow, the center's amax) of
// finite intervals (the callers test nvfp4_indeterminate first). Every term is >= +0, and the maximum
// of such values does not depend on the order it is taken in (std::max drops a NaN center in either
// form), so the AVX2 form (four lanes, then across them) gives the element loop's bits.
struct BlockAmax {
  double lo, hi, c;
};
BlockAmax block_amax_scalar(const double* lo, const double* hi, const double* center) {
  double amax_lo = 0, amax_hi = 0, amax_c = 0;
  for (size_t i = 0; i < 16; ++i) {
    const double mlo = (lo[i] <= 0 && hi[i] >= 0) ? 0.0 : std::min(std::fabs(lo[i]), std::fabs(hi[i]));
    amax_lo = std::max(amax_lo, mlo);
    amax_hi = std::max(amax_hi, std::max(std::fabs(lo[i]), std::fabs(hi[i])));
    if (center != nullptr)
      amax_c = std::max(amax_c, std::fabs(static_cast<double>(static_cast<float>(center[i]))));
  }
  return {amax_lo, amax_hi, amax_c};
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) double max_of_lanes(__m256d v) {
  const __m128d m = _mm_max_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_max_sd(m, _mm_unpackhi_pd(m, m)));
}

__attribute__((target("avx2"))) BlockAmax block_amax_avx2(const double* lo, const double* hi,
                                                          const double* center) {
  using avx2::abs_pd;
  const __m256d zero = _mm256_setzero_pd();
  __m256d amax_lo = zero, amax_hi = zero, amax_c = zero;
  for (size_t i = 0; i < 16; i += 4) {
    const __m256d l = _mm256_loadu_pd(lo + i), h = _mm256_loadu_pd(hi + i);
    const __m256d al = abs_pd(l), ah = abs_pd(h);
    const __m256d straddles =
        _mm256_and_pd(_mm256_cmp_pd(l, zero, _CMP_LE_OQ), _mm256_cmp_pd(h, zero, _CMP_GE_OQ));
    amax_lo = avx2::std_max(amax_lo, _mm256_andnot_pd(straddles, _mm256_min_pd(al, ah)));
    amax_hi = avx2::std_max(amax_hi, _mm256_max_pd(al, ah));
    if (center != nullptr)  // the center rounded to float, as the kernel's input is (a NaN is dropped)
      amax_c = avx2::std_max(amax_c, abs_pd(_mm256_cvtps_pd(_mm256_cvtpd_ps(_mm256_loadu_pd(center + i)))));
  }
  return {max_of_lanes(amax_lo), max_of_lanes(amax_hi), max_of_lanes(amax_c)};
}
#endif

BlockScaleRange block_scale_range(const double* lo, const double* hi, const double* center, float s_q,
                                  bool simd) {
#if defined(__x86_64__)
  const BlockAmax a = simd ? block_amax_avx2(lo, hi, center) : block_amax_scalar(lo, hi, center);
#else
  (void)simd;
  const BlockAmax a = block_amax_scalar(lo, hi, center);
#endif
  const float alo = float_down(a.lo), ahi = float_up(a.hi);
  return {std::min(scale_byte_fast(alo, s_q), scale_byte_exact(alo, s_q)),
          std::max(scale_byte_fast(ahi, s_q), scale_byte_exact(ahi, s_q)), a.c};
}

}  // namespace

bool nvfp4_indeterminate(std::span<const double> lo, std::span<const double> hi, float s_q) {
  if (!(s_q > 0) || !std::isfinite(s_q)) return true;
  const size_t n = lo.size() / 16 * 16;  // the envelope reads whole blocks only
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(lo[i]) || !std::isfinite(hi[i])) return true;
  return false;
}

Nvfp4Envelope nvfp4_envelope(std::span<const double> lo, std::span<const double> hi,
                             std::span<const double> center, float s_q, bool simd) {
  simd = avx2_path(simd);
  const size_t n = lo.size();
  Nvfp4Envelope env;
  env.center_codes.assign(n, 0);
  env.center_scales.assign(n / 16, 0);
  env.lo.assign(n, 0);
  env.hi.assign(n, 0);
  env.scale_lo.assign(n / 16, 0);
  env.scale_hi.assign(n / 16, 0);
  if (nvfp4_indeterminate(lo, hi, s_q)) {
    env.indeterminate = true;
    return env;
  }
  for (size_t b = 0; b < n / 16; ++b) {
    const BlockScaleRange sr = block_scale_range(&lo[16 * b], &hi[16 * b], &center[16 * b], s_q, simd);
    const uint8_t blo = sr.lo, bhi = sr.hi;
    env.scale_lo[b] = blo;
    env.scale_hi[b] = bhi;
    const uint8_t bc = std::clamp(scale_byte_fast(static_cast<float>(sr.amax_c), s_q), blo, bhi);
    env.center_scales[b] = bc;
    for (size_t i = 16 * b; i < 16 * b + 16; ++i) {
      env.lo[i] = kInf;
      env.hi[i] = -kInf;
    }
    float vmin[16], vmax[16];
    // The code range of each element under q: without a possible flush the unflushed range, for the
    // whole block at once; else code_range's hull.
    const auto ranges = [&](const BlockQuant& q) {
      if (!q.zero && !q.flush) {
        unflushed_codes16(&lo[16 * b], &hi[16 * b], q, vmin, vmax, simd);
        return;
      }
      for (size_t k = 0; k < 16; ++k) {
        const CodeRange r = code_range(lo[16 * b + k], hi[16 * b + k], q);
        vmin[k] = r.vmin;
        vmax[k] = r.vmax;
      }
    };
    // Representative: the center point quantized under bc, clamped into bc's admissible codes
    // (vmin/vmax as ranges() left them for bc).
    const auto representative = [&](float sfd_c) {
#if defined(__x86_64__)
      if (simd && sfd_c != 0.0f) {
        representative_codes_avx2(&center[16 * b], s_q / static_cast<double>(sfd_c), vmin, vmax,
                                  &env.center_codes[16 * b]);
        return;
      }
#endif
      for (size_t k = 0; k < 16; ++k) {
        const size_t i = 16 * b + k;
        float v = 0.0f;
        if (sfd_c != 0.0f) {
          const float y = static_cast<float>(static_cast<double>(static_cast<float>(center[i])) *
                                             (s_q / static_cast<double>(sfd_c)));
          v = std::clamp(e2m1_to_float(e2m1_from_float(y)), vmin[k], vmax[k]);
        }
        env.center_codes[i] = e2m1_from_float(v);  // exact: v is an E2M1 value
      }
    };
    bool represented = false;  // bc lies in [blo, bhi]: the loop passes it and reuses its ranges
    for (int byte = blo; byte <= bhi; ++byte) {
      const float sfd = e4m3_to_float(static_cast<uint8_t>(byte));
      ranges(BlockQuant(s_q, sfd));
      if (byte == bc) {
        representative(sfd);
        represented = true;
      }
#if defined(__x86_64__)
      if (simd) {
        widen_block_hull_avx2(vmin, vmax, sfd, &env.lo[16 * b], &env.hi[16 * b]);
        continue;
      }
#endif
      for (size_t k = 0; k < 16; ++k) {
        const size_t i = 16 * b + k;
        env.lo[i] = std::min(env.lo[i], static_cast<double>(vmin[k]) * sfd);
        env.hi[i] = std::max(env.hi[i], static_cast<double>(vmax[k]) * sfd);
      }
    }
    if (!represented) {
      const float sfd_c = e4m3_to_float(bc);
      ranges(BlockQuant(s_q, sfd_c));
      representative(sfd_c);
    }
  }
  return env;
}

int64_t nvfp4_admits(std::span<const double> lo, std::span<const double> hi, float s_q,
                     std::span<const uint8_t> codes, std::span<const uint8_t> scales, bool simd) {
  // The envelope's block scale ranges and code ranges, without the per-element hull over every
  // admissible byte (only the kernel's byte matters here).
  if (nvfp4_indeterminate(lo, hi, s_q)) return kAdmitted;  // nothing can be said about non-finite inputs
  simd = avx2_path(simd);
  for (size_t b = 0; b < lo.size() / 16; ++b) {
    const BlockScaleRange sr = block_scale_range(&lo[16 * b], &hi[16 * b], nullptr, s_q, simd);
    const uint8_t kb = scales[b];
    const float sfd = e4m3_to_float(kb);
    const bool zero_scale = sfd == 0.0f;
    // Positive bytes are ordered like their values; a zero byte of either sign is the zero scale.
    const bool byte_ok = zero_scale ? sr.lo == 0 : (kb <= 0x7E && kb >= sr.lo && kb <= sr.hi);
    if (!byte_ok) return -1 - static_cast<int64_t>(b);
    if (zero_scale) continue;  // every code decodes to 0
    const BlockQuant q(s_q, sfd);
    if (!q.flush) {
      float umin[16], umax[16];
      unflushed_codes16(&lo[16 * b], &hi[16 * b], q, umin, umax, simd);
      for (size_t k = 0; k < 16; ++k) {
        const float v = e2m1_to_float(codes[16 * b + k]);
        if (!(v >= umin[k] && v <= umax[k])) return static_cast<int64_t>(16 * b + k);
      }
      continue;
    }
    for (size_t i = 16 * b; i < 16 * b + 16; ++i) {
      const CodeRange r = code_range(lo[i], hi[i], q);
      if (!r.admits(e2m1_to_float(codes[i]))) return static_cast<int64_t>(i);
    }
  }
  return kAdmitted;
}

}  // namespace moefuzz
