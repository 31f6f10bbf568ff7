#include "oracles/routing_bounds.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace moefuzz {

double exp_error_ulps(const Profile& p, double a) { return p.fast_math_exp ? 2.0 + 1.5 * std::fabs(a) : 2.0; }

double sigmoid_error_bound(const Profile& p, double x, double s) {
  if (p.sigmoid_form == SigmoidForm::kTanh) {
    // s = 0.5f*tanhf(0.5f*x) + 0.5f. 0.5*x and 0.5*t are exact; tanhf errs by <= 2 ulp of |t| <= 1,
    // i.e. <= 2^-22 absolute, halved by the 0.5 multiply: 2^-23; the final +0.5 rounds a value in
    // [0, 1] by <= 2^-25. Total 2^-23 + 2^-25. Taken as 2^-21 (4x) because the fast-math build's tanhf
    // may itself use approximate exponentials whose accuracy is not documented. The error is
    // ABSOLUTE: below x ~ -17 the result is exactly 0 while s > 0.
    return 0x1p-21 + kFp32FlushFloor;
  }
  // s = 1/(1 + expf(-x)) (or __fdividef(1, 1 + __expf(-x))): relative error of e = expf(-x) enters s
  // scaled by e/(1+e) <= 1; 1 + e rounds once (2^-24); the division errs by 0.5 ulp (IEEE) or
  // <= 2 ulp (__fdividef). So rel(s) <= (E_exp + 0.5 + 2) ulp, taken as (E_exp + 3) ulp. Results
  // below 2^-126 may flush (FTZ) or overflow of expf(-x) gives exactly 0: kFp32FlushFloor.
  return (exp_error_ulps(p, x) + 3.0) * kFp32Ulp * s + kFp32FlushFloor;
}

double sqrt_softplus_error_bound(const Profile& p, double x, double v) {
  // v = sqrtf(max(x,0) + log1pf(expf(-|x|))) (FlashInfer hash_topk.cuh). l = log1p(e) with e =
  // expf(-|x|): the relative error of e passes through log1p with factor e/((1+e)log1p(e)) <= 1, and
  // log1pf adds <= 2 ulp; the add of max(x,0) >= 0 does not amplify a relative error and rounds once
  // (0.5 ulp); sqrt halves the relative error and adds <= 3 ulp (sqrt.approx under fast math; IEEE
  // sqrtf is 0.5). Total <= (E_exp + 2 + 0.5)/2 + 3 ulp; taken as (E_exp + 9) ulp for margin.
  // Underflow: below x ~ -87, e = expf(-|x|) is subnormal or flushed (FTZ) to 0, an ABSOLUTE error of
  // up to kFp32FlushFloor in the radicand, which the sqrt turns into sqrt(kFp32FlushFloor) = 2^-62.5
  // absolute in v (found by routing_fuzzer: large negative logits, kernel 0 vs exact 1e-25).
  return (exp_error_ulps(p, x) + 9.0) * kFp32Ulp * v + kFp32FlushFloor + std::sqrt(kFp32FlushFloor);
}

void softmax_error_bounds(const Profile& p, std::span<const float> logits, std::span<const double> probs,
                          std::span<double> bounds) {
  // Kernel: m = max (exact), d_i = fl(x_i - m) (relative 2^-24 of d, which moves e^d by |d| 2^-24
  // relative), e_i = expf(d_i) (E_exp(d) ulp), S = sum e_i in any order (<= (E-1) 2^-24 relative
  // plus the e_i errors weighted by p_i), p_i = e_i * (1/S) or e_i / S (<= 2 ulp for both roundings
  // or __fdividef). Kernels that rank logits directly (FlashInfer Renormalize) are exact in ranking
  // and their weights are within the same bound.
  const size_t n = logits.size();
  if (n == 0) return;
  double m = logits[0];
  for (float x : logits) m = std::fmax(m, static_cast<double>(x));
  std::vector<double> rel(n);
  double sum_rel = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(logits[i]) - m;
    rel[i] = exp_error_ulps(p, d) * kFp32Ulp + std::fabs(d) * kFp32Unit;
    sum_rel += probs[i] * rel[i];
  }
  sum_rel += static_cast<double>(n) * kFp32Unit + static_cast<double>(n) * kFp32FlushFloor;
  for (size_t i = 0; i < n; ++i) {
    bounds[i] = (rel[i] + sum_rel + 2.0 * kFp32Ulp) * probs[i] * (1.0 + 0x1p-20) + kFp32FlushFloor;
  }
}

WeightBound routing_weight_bound(std::span<const double> raw, std::span<const double> raw_bounds, size_t j,
                                 bool normalize, double eps, double scale, WeightDtype dtype) {
  WeightBound wb;
  const double k = static_cast<double>(raw.size());
  double err = 0;
  if (normalize) {
    const double s = std::accumulate(raw.begin(), raw.end(), 0.0) + eps;
    const double b = std::accumulate(raw_bounds.begin(), raw_bounds.end(), 0.0);
    wb.expected = s > 0 ? scale * raw[j] / s : 0.0;
    if (!(b < 0.5 * s)) {
      // The kernel's sum may be anywhere near 0 (e.g. every selected sigmoid underflows): the weight
      // is unconstrained in [0, scale] (and 0/0 without epsilon); only finiteness is checked elsewhere.
      wb.bound = scale + std::fabs(wb.expected);
      return wb;
    }
    // |r'_j/(S'+eps) - r_j/(S+eps)| <= (b_j + w'_j B) / (S + eps - B), exactly (not first order),
    // for |r'_i - r_i| <= b_i, |S' - S| <= B.
    err = scale * (raw_bounds[j] + (raw[j] / s) * b) / (s - b);
    // fp32 roundings: the sum (k - 1), the division, the scale multiply, the scale's fp32 cast and
    // the double->fp32 store: (k + 3) units; taken as (k + 6) units for double-evaluation slack.
    err += (k + 6.0) * kFp32Unit * (std::fabs(wb.expected) + err);
    // Each of those roundings whose result is subnormal (a tiny scale) errs by up to
    // kFp32FlushFloor absolutely (FTZ included), not relatively; a later operation amplifies that
    // error by at most its other operand: the division by the kernel's sum (>= s - b) where the scale
    // multiply comes first, the raw score where scale / sum comes first.
    const double amplify = std::max({1.0, 1.0 / (s - b), raw[j] + raw_bounds[j]});
    err += (k + 6.0) * kFp32FlushFloor * amplify;
    // Where an intermediate (scale * raw_j, or scale / sum) may reach FLT_MAX a correct kernel's
    // weight may be Inf or NaN although the exact weight is finite: nothing can be said.
    if (scale * amplify * (1.0 + (k + 6.0) * kFp32Unit) >= kFp32Max) {
      wb.expected = NAN;
      wb.bound = INFINITY;
      return wb;
    }
  } else {
    wb.expected = scale * raw[j];
    err = scale * raw_bounds[j];
    err += 4.0 * kFp32Unit * (std::fabs(wb.expected) + err);  // scale multiply, scale cast, store
    // The scale multiply and the store may land in subnormals: kFp32FlushFloor each, absolutely.
    err += 2.0 * kFp32FlushFloor;
    if ((std::fabs(wb.expected) + err) >= kFp32Max) {  // the exact product may round to Inf
      wb.expected = NAN;
      wb.bound = INFINITY;
      return wb;
    }
  }
  if (dtype == WeightDtype::kBf16) {
    // RN to bf16 moves a value by <= 2^-8 of itself (plus half the smallest subnormal, 2^-134).
    err += kBf16Unit * (std::fabs(wb.expected) + err) + 0x1p-134;
  }
  wb.bound = err;
  return wb;
}

// RN to 8 significant bits moves a value by up to 2^-8 of itself (unit roundoff; 2^-9 is only the
// spacing bound at the top of a binade - found by zero-fp: trtllm-gen bf16 weights summing to 1.0029
// over 4 slots).
double routing_sum_allowance(const Profile& p, int64_t n, double abs_sum) {
  const double u = kFp32Unit;
  const double gamma = (n + 2) * u / (1 - (n + 2) * u);
  const double bf16 = p.routing_weight_dtype == WeightDtype::kBf16 ? kBf16Unit : 0.0;
  return (gamma + bf16 * (1 + gamma)) * abs_sum;
}

double routing_sum_underflow_allowance(const Profile& p, int64_t n, double amplify) {
  // Per weight: (n + 6) fp32 roundings as in routing_weight_bound, each up to kFp32FlushFloor
  // absolutely when its result is subnormal, amplified by at most `amplify`; bf16 weights add half
  // the bf16 subnormal spacing (2^-134) each. The checker's double sum of n weights is exact to
  // 2^-53 relative, inside routing_sum_allowance's extra fp32 unit.
  const double per_weight = (static_cast<double>(n) + 6.0) * kFp32FlushFloor * std::max(1.0, amplify) +
                            (p.routing_weight_dtype == WeightDtype::kBf16 ? 0x1p-134 : 0.0);
  return static_cast<double>(n) * per_weight;
}

namespace {
ScoreFunc score_func_of(const Routing& r) {
  return r.mode == RoutingMode::kSigmoidGrouped ? ScoreFunc::kSigmoid
         : r.mode == RoutingMode::kSoftmax      ? ScoreFunc::kSoftmax
                                                : r.hash_score;
}
}  // namespace

double selected_raw_score(const Case& c, int64_t t, int32_t e) {
  const double x = c.logits[static_cast<size_t>(t * c.recipe.shape.experts + e)];
  const ScoreFunc f = score_func_of(c.recipe.routing);
  if (f == ScoreFunc::kSigmoid) return 1.0 / (1.0 + std::exp(-x));
  if (f == ScoreFunc::kSqrtSoftplus) return std::sqrt(std::log1p(std::exp(-std::fabs(x))) + std::max(x, 0.0));
  return 1.0;  // softmax weights are normalized by construction; no epsilon term
}

// The profile's score error bound, doubled to cover selected_raw_score's own libm rounding (a few
// ulps of double, far below the fp32 bound) and second-order terms, plus 2^-40 relative: an
// allowance, not a derivation, for the double libm calls above (each < 1 ulp = 2^-52 relative).
double selected_raw_score_error(const Case& c, const Profile& p, int64_t t, int32_t e) {
  const double x = c.logits[static_cast<size_t>(t * c.recipe.shape.experts + e)];
  const ScoreFunc f = score_func_of(c.recipe.routing);
  const double s = selected_raw_score(c, t, e);
  if (f == ScoreFunc::kSigmoid) return 2 * sigmoid_error_bound(p, x, s) + 0x1p-40 * s;
  if (f == ScoreFunc::kSqrtSoftplus) return 2 * sqrt_softplus_error_bound(p, x, s) + 0x1p-40 * s;
  return 0.0;
}

}  // namespace moefuzz
