#include "properties/drift.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>

#include "core/bf16.h"
#include "core/case.h"
#include "core/profile.h"
#include "core/rng.h"
#include "kernels/canary.h"
#include "oracles/oracle.h"

namespace moefuzz {
namespace {

// Running statistics of the accumulated error per element.
struct Accumulator {
  std::vector<double> err;     // D: sum of per-layer errors
  std::vector<double> bound2;  // sum of per-layer bound^2
};

// Two-sided tail P(|T| > t) of Student's t with `dof` degrees of freedom: the regularized incomplete
// beta I_{dof/(dof+t^2)}(dof/2, 1/2), by its continued fraction (modified Lentz; converges fast for
// x < (a+1)/(a+b+2), which holds here for every t >= 1).
double student_t_two_sided_tail(double t, double dof) {
  const double a = dof / 2, b = 0.5, x = dof / (dof + t * t);
  const double log_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) +
                           b * std::log1p(-x) - std::log(a);
  constexpr double kTiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  d = 1 / (std::fabs(d) < kTiny ? kTiny : d);
  double f = d;
  for (int m = 1; m <= 500; ++m) {
    for (int half = 0; half < 2; ++half) {
      const double num = half == 0 ? m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
                                   : -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
      d = 1 + num * d;
      d = 1 / (std::fabs(d) < kTiny ? kTiny : d);
      c = 1 + num / c;
      if (std::fabs(c) < kTiny) c = kTiny;
      f *= c * d;
    }
    if (std::fabs(c * d - 1) < 1e-15) break;
  }
  return std::exp(log_front) * f;
}

// The |t| a Student-t statistic with `dof` degrees of freedom exceeds with the same probability as
// a Gaussian exceeds kDriftZ (6 sigma: 1.97e-9): kDriftZ itself for many clusters, far more for few.
double t_limit(double dof) {
  const double target = std::erfc(kDriftZ / std::sqrt(2.0));
  double lo = kDriftZ, hi = kDriftZ;
  while (student_t_two_sided_tail(hi, dof) > target && hi < 1e12) hi *= 2;
  for (int i = 0; i < 100 && hi - lo > 1e-6 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (student_t_two_sided_tail(mid, dof) > target ? lo : hi) = mid;
  }
  return hi;
}

}  // namespace

void ClusterSum::add(double x) {
  sum += x;
  count += 1;
  scale = std::max(scale, std::fabs(x));
}

BiasTest bias_test(const std::vector<double>& x, const std::vector<int64_t>& cluster) {
  std::map<int64_t, ClusterSum> by_id;
  for (size_t i = 0; i < x.size(); ++i) by_id[cluster[i]].add(x[i]);
  std::vector<ClusterSum> sums;
  for (const auto& [id, s] : by_id) sums.push_back(s);
  return bias_test(sums);
}

BiasTest bias_test(const std::vector<ClusterSum>& clusters) {
  BiasTest out;
  std::vector<ClusterSum> sums;
  double n = 0, total = 0, scale = 0;
  for (const ClusterSum& c : clusters) {
    if (c.count == 0) continue;  // a layer without samples is no cluster
    sums.push_back(c);
    n += c.count;
    total += c.sum;
    scale = std::max(scale, c.scale);
  }
  const double g = static_cast<double>(sums.size());
  out.clusters = static_cast<int64_t>(g);
  if (g < 2) return out;
  const double mean = total / n;
  out.mean = mean;
  // Cluster-robust variance of the mean (two-pass): each cluster's summed deviation from the mean,
  // with the small-sample factor g / (g - 1).
  double v = 0;
  for (const ClusterSum& s : sums) v += (s.sum - s.count * mean) * (s.sum - s.count * mean);
  v = v / (n * n) * g / (g - 1);
  out.limit = t_limit(g - 1);
  // Values that agree to within the double rounding that produced them (x = err / bound: a few
  // ulps, bounded by 2^-50 relative) are one value repeated, not a sample: no bias is claimed.
  if (!(std::sqrt(v) > std::ldexp(scale, -50) / std::sqrt(n))) return out;
  out.z = mean / std::sqrt(v);
  return out;
}

namespace {

// One layer's (or one position bucket's) errors as the judge sees them.
struct LayerOutcome {
  std::vector<float> output;
  std::vector<double> expected, error, bound;
  double max_ratio = 0;
};

// The bf16 value of `v` when v is one exactly (its bits), else nothing.
std::optional<uint16_t> exact_bf16(double v) {
  const float f = static_cast<float>(v);
  if (static_cast<double>(f) != v || !std::isfinite(f)) return std::nullopt;
  const uint16_t b = bf16_from_float(f);
  if (bf16_to_float(b) != f) return std::nullopt;
  return b;
}

// What a bias is measured from. Usually the oracle's value. But where the oracle admits exactly the
// two bf16 neighbours of an exact tie (expected = their midpoint, bound = half their gap), the output
// conversion of every profile is round-to-nearest-even: the reference is the even neighbour. A
// correct kernel breaking true ties to even then shows no bias, however the data places the even
// neighbours (structured values can put most of them toward zero: a token-level and a midpoint-
// referenced test both failed correct kernels so, e.g. 24 of 33 ties even and toward zero), while
// Z13's ties toward zero deviate by one ulp toward zero on the ties whose even neighbour is away.
double bias_reference(double expected, double bound) {
  const auto lo = exact_bf16(expected - bound), hi = exact_bf16(expected + bound);
  if (!lo || !hi || bound <= 0) return expected;
  // Adjacent: hi is the next bf16 above lo (sign-magnitude bits: up is +1 for positive values, -1
  // toward zero for negative ones, and from either zero to the smallest positive subnormal).
  const float flo = bf16_to_float(*lo), fhi = bf16_to_float(*hi);
  const uint16_t up = flo == 0 ? uint16_t{0x0001} : (*lo & 0x8000) ? uint16_t(*lo - 1) : uint16_t(*lo + 1);
  if (bf16_to_float(up) != fhi) return expected;
  return (*lo & 1) == 0 ? static_cast<double>(flo) : static_cast<double>(fhi);
}

// The per-element samples of the bias test: the output's deviation from the bias reference over the
// bound, signed and projected on the sign of the oracle's value. Elements without a bound say
// nothing; an output flushed to zero where the bound admits zero is an admitted underflow, not a
// rounding direction.
struct BiasSamples {
  std::vector<ClusterSum> signed_x, shrink_x;  // one cluster per layer
  void add(const LayerOutcome& o) {
    ClusterSum& sgn = signed_x.emplace_back();
    ClusterSum& shr = shrink_x.emplace_back();
    for (size_t i = 0; i < o.error.size(); ++i) {
      if (!(o.bound[i] > 0)) continue;
      if (o.output[i] == 0 && std::fabs(o.expected[i]) <= o.bound[i]) continue;
      const double x =
          (static_cast<double>(o.output[i]) - bias_reference(o.expected[i], o.bound[i])) / o.bound[i];
      if (!std::isfinite(x)) continue;  // run_one judged it (single-call ratio); not a sample
      sgn.add(x);
      shr.add(o.expected[i] > 0 ? x : o.expected[i] < 0 ? -x : 0.0);
    }
  }
};

DriftPoint summarize(int64_t index, const Accumulator& acc, double single_ratio) {
  DriftPoint p;
  p.index = index;
  p.max_single_ratio = single_ratio;
  double e2 = 0, b2 = 0;
  for (size_t i = 0; i < acc.err.size(); ++i) {
    e2 += acc.err[i] * acc.err[i];
    b2 += acc.bound2[i];
    if (acc.bound2[i] <= 0) continue;
    const double x = acc.err[i] / std::sqrt(acc.bound2[i]);
    if (std::isfinite(x)) p.max_normalized = std::max(p.max_normalized, std::fabs(x));
  }
  p.rms_error = std::sqrt(e2 / std::max<size_t>(acc.err.size(), 1));
  p.rw_bound = std::sqrt(b2 / std::max<size_t>(acc.err.size(), 1));
  return p;
}

void add_bias(DriftPoint& p, const BiasSamples& s) {
  const BiasTest sgn = bias_test(s.signed_x), shr = bias_test(s.shrink_x);
  p.bias_signed = sgn.mean;
  p.bias_shrink = shr.mean;
  p.z_signed = sgn.z;
  p.z_shrink = shr.z;
  p.z_limit = sgn.limit;  // the same layers
}

bool significant_bias(double z, double mean, double limit) {
  return std::fabs(z) > limit && std::fabs(mean) > kDriftMinBias;
}

Verdict judge(const std::vector<DriftPoint>& pts, const std::string& stage) {
  Verdict v = Verdict::pass("DRIFT", stage);
  for (const auto& p : pts) {
    v.max_ratio = std::max(v.max_ratio, p.max_normalized / kDriftKappa);
    if (p.max_single_ratio > 1.0)
      return Verdict::fail("DRIFT", stage,
                           fmt::format("{} {}: single-call error exceeds its bound ({:.3g}x)", stage, p.index,
                                       p.max_single_ratio));
    if (p.max_normalized > kDriftKappa)
      return Verdict::fail("DRIFT", stage,
                           fmt::format("{} {}: accumulated error {:.3g}x the random-walk scale (limit {})",
                                       stage, p.index, p.max_normalized, kDriftKappa));
  }
  // The bias is judged once, over every layer (one test: no multiple-comparison inflation).
  if (pts.empty()) return v;
  const DriftPoint& p = pts.back();
  // How close the bias came to failing: a bias fails when both of its ratios exceed 1.
  for (const auto& [z, mean] : {std::pair{p.z_signed, p.bias_signed}, std::pair{p.z_shrink, p.bias_shrink}})
    v.max_ratio = std::max(v.max_ratio, std::min(std::fabs(z) / p.z_limit, std::fabs(mean) / kDriftMinBias));
  if (significant_bias(p.z_signed, p.bias_signed, p.z_limit))
    return Verdict::fail("DRIFT", stage,
                         fmt::format("over {} {}s: systematic signed bias of {:+.3g} x the bound per element "
                                     "(t = {:.2f}, limit {:.2f}; size limit {:.3g})",
                                     p.index, stage, p.bias_signed, p.z_signed, p.z_limit, kDriftMinBias));
  if (significant_bias(p.z_shrink, p.bias_shrink, p.z_limit))
    return Verdict::fail(
        "DRIFT", stage,
        fmt::format("over {} {}s: systematic bias toward {} of {:+.3g} x the bound per element "
                    "(t = {:.2f}, limit {:.2f}; size limit {:.3g})",
                    p.index, stage, p.bias_shrink < 0 ? "zero" : "larger magnitudes", p.bias_shrink,
                    p.z_shrink, p.z_limit, kDriftMinBias));
  return v;
}

// RMS normalization in double, rounded to bf16: the layer input a model would feed.
std::vector<uint16_t> rmsnorm_bf16(const std::vector<float>& h, int64_t tokens, int64_t hidden) {
  std::vector<uint16_t> out(h.size());
  for (int64_t t = 0; t < tokens; ++t) {
    double ss = 0;
    for (int64_t j = 0; j < hidden; ++j)
      ss += static_cast<double>(h[static_cast<size_t>(t * hidden + j)]) *
            h[static_cast<size_t>(t * hidden + j)];
    const double inv =
        1.0 / std::sqrt(ss / static_cast<double>(hidden) + 1e-6);  // RMSNorm's epsilon (1e-6 in DeepSeek-V3)
    for (int64_t j = 0; j < hidden; ++j) {
      const size_t i = static_cast<size_t>(t * hidden + j);
      out[i] = bf16_from_float(static_cast<float>(h[i] * inv));
    }
  }
  return out;
}

LayerOutcome run_one(const Kernel& kernel, const Profile& profile, const Case& c) {
  const GuardedRun g = run_guarded(kernel, c, RunOptions{});
  const OracleEvaluation ev = evaluate(c, profile, g.result);
  const StageExpectation* out = ev.stage("output");
  LayerOutcome o;
  o.output = g.result.output;
  o.expected.resize(o.output.size());
  o.error.resize(o.output.size());
  o.bound.resize(o.output.size());
  for (size_t i = 0; i < o.output.size(); ++i) {
    if (std::isnan(out->expected[i]) || !std::isfinite(out->bound[i])) {
      // Nothing can be said about this element (a non-finite input, a possible fp32 overflow: left
      // to FINITE): it adds neither error nor bound.
      o.expected[i] = o.error[i] = o.bound[i] = 0;
      continue;
    }
    o.expected[i] = out->expected[i];
    o.error[i] = static_cast<double>(o.output[i]) - out->expected[i];
    o.bound[i] = out->bound[i];
    if (!std::isfinite(o.error[i]))
      o.max_ratio = INFINITY;
    else if (out->bound[i] > 0)
      o.max_ratio = std::max(o.max_ratio, std::fabs(o.error[i]) / out->bound[i]);
    else if (o.error[i] != 0)
      o.max_ratio = INFINITY;
  }
  if (ev.admissibility.failed()) o.max_ratio = INFINITY;
  return o;
}

}  // namespace

DriftReport run_layer_drift(const Kernel& kernel, const CaseRecipe& base, int layers) {
  const Profile& profile = profile_by_name(kernel.profile());
  DriftReport rep;
  rep.kernel = kernel.name();
  rep.mode = "layers";
  Case first = materialize(base);
  const int64_t T = base.shape.tokens, H = base.shape.hidden;
  std::vector<float> h(static_cast<size_t>(T * H));
  for (size_t i = 0; i < h.size(); ++i) h[i] = bf16_to_float(first.hidden[i]);
  Accumulator acc{std::vector<double>(h.size(), 0.0), std::vector<double>(h.size(), 0.0)};
  BiasSamples bias;
  for (int l = 0; l < layers; ++l) {
    CaseRecipe r = base;
    r.seed = derive_seed(base.seed, fmt::format("layer{}", l));
    Case c = materialize(r);
    c.hidden = rmsnorm_bf16(h, T, H);
    const LayerOutcome o = run_one(kernel, profile, c);
    for (size_t i = 0; i < h.size(); ++i) {
      acc.err[i] += o.error[i];
      acc.bound2[i] += o.bound[i] * o.bound[i];
      h[i] += o.output[i];  // the residual stream stays fp32, as in the models
    }
    bias.add(o);
    rep.points.push_back(summarize(l + 1, acc, o.max_ratio));
    add_bias(rep.points.back(), bias);
  }
  rep.verdict = judge(rep.points, "layer");
  return rep;
}

DriftReport run_sequence_drift(const Kernel& kernel, const CaseRecipe& base, int64_t tokens) {
  const Profile& profile = profile_by_name(kernel.profile());
  DriftReport rep;
  rep.kernel = kernel.name();
  rep.mode = "sequence";
  CaseRecipe r = base;
  r.shape.tokens = tokens;
  const Case c = materialize(r);
  const LayerOutcome o = run_one(kernel, profile, c);
  const int64_t H = r.shape.hidden;
  constexpr int64_t kBuckets = 16;  // positions grouped so each bucket has enough elements for the statistics
  const int64_t per = std::max<int64_t>(1, tokens / kBuckets);
  for (int64_t b = 0; b * per < tokens; ++b) {
    const int64_t t0 = b * per, t1 = std::min(tokens, t0 + per);
    Accumulator acc;
    double single = 0;
    for (int64_t t = t0; t < t1; ++t)
      for (int64_t j = 0; j < H; ++j) {
        const size_t i = static_cast<size_t>(t * H + j);
        acc.err.push_back(o.error[i]);
        acc.bound2.push_back(o.bound[i] * o.bound[i]);
        if (o.bound[i] > 0) single = std::max(single, std::fabs(o.error[i]) / o.bound[i]);
      }
    rep.points.push_back(summarize(t0, acc, single));
  }
  rep.verdict = judge(rep.points, "position");
  // Growth with position: the last quarter's error/bound scale may not exceed the first's by more
  // than the random-walk excursion allows.
  if (!rep.verdict.failed() && rep.points.size() >= 8) {
    const size_t q = rep.points.size() / 4;
    double first = 0, last = 0;
    for (size_t i = 0; i < q; ++i) {
      first = std::max(first, rep.points[i].max_normalized);
      last = std::max(last, rep.points[rep.points.size() - 1 - i].max_normalized);
    }
    if (last > 1.0 && last > 4 * std::max(first, 0.25))
      rep.verdict = Verdict::fail(
          "DRIFT", "position",
          fmt::format("error/bound grows with position: {:.3g} in the first quarter, {:.3g} in the last",
                      first, last));
  }
  return rep;
}

void write_drift_csv(const std::vector<DriftReport>& reports, const std::string& path) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << "kernel,mode,index,max_single_ratio,rms_error,rw_bound,max_normalized,z_signed,z_shrink,z_limit,"
         "bias_signed,bias_shrink\n";
    for (const auto& r : reports)
      for (const auto& p : r.points)
        f << fmt::format("{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.4f},{:.4f},{:.4f},{:.6g},{:.6g}\n",
                         r.kernel, r.mode, p.index, p.max_single_ratio, p.rms_error, p.rw_bound,
                         p.max_normalized, p.z_signed, p.z_shrink, p.z_limit, p.bias_signed, p.bias_shrink);
  }
  std::rename(tmp.c_str(), path.c_str());  // atomic: a reader never sees half a file
}

std::string plot_drift(const std::vector<DriftReport>& reports, const std::string& csv_path,
                       const std::string& svg_path) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0)
    return "gnuplot not found (apt-get install gnuplot-nox)";
  const std::string script_path = svg_path + ".gp";
  {
    std::ofstream g(script_path);
    // Two panels: the random-walk excursion (growth) and the bias per element over the layers so far
    // (systematic error), each with its size limit, so the panel that fails is visible (a bias fails
    // only when its t statistic is significant too: the CSV's z columns).
    g << "set terminal svg size 900,760 dynamic background rgb 'white'\n";
    g << fmt::format("set output '{}'\n", svg_path);
    g << "set datafile separator ','\nset key outside right\nset grid\n";
    g << "set multiplot layout 2,1 title 'moefuzz drift: kernel vs oracle (each layer conditioned on the "
         "kernel input)'\n";
    const std::string x = reports.empty() || reports[0].mode == "layers" ? "layer" : "position";
    g << fmt::format("set xlabel '{}'\n", x);
    g << "set ylabel '|D| / random-walk scale (max)'\nset logscale y\n";
    g << "plot ";
    for (const auto& r : reports)
      g << fmt::format(
          "'{}' using 3:(strcol(1) eq '{}' ? ($7 > 1e-12 ? $7 : 1e-12) : NaN) with linespoints title "
          "'{}{}', ",
          csv_path, r.kernel, r.kernel, r.verdict.failed() ? " (FAIL)" : "");
    g << fmt::format("{} with lines dt 2 lw 2 title 'limit {}'\n", kDriftKappa, kDriftKappa);
    g << "unset logscale y\nset ylabel 'bias / bound (shrink toward zero; signed dashed)'\n";
    g << "plot ";
    for (const auto& r : reports) {
      g << fmt::format("'{}' using 3:(strcol(1) eq '{}' ? $12 : NaN) with linespoints title '{} shrink', ",
                       csv_path, r.kernel, r.kernel);
      g << fmt::format("'{}' using 3:(strcol(1) eq '{}' ? $11 : NaN) with lines dt 3 title '{} signed', ",
                       csv_path, r.kernel, r.kernel);
    }
    g << fmt::format(
        "{0} with lines dt 2 lw 2 lc 'red' title 'size limit +-{0:.3g}', -{0} with lines dt 2 lw 2 lc 'red' "
        "notitle\n",
        kDriftMinBias);
    g << "unset multiplot\n";
  }
  const int rc = std::system(fmt::format("gnuplot '{}' 2>/dev/null", script_path).c_str());
  std::remove(script_path.c_str());
  return rc == 0 ? std::string() : "gnuplot failed";
}

}  // namespace moefuzz
