#include "properties/drift.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

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

BiasTest bias_test(const std::vector<double>& x, const std::vector<int64_t>& cluster) {
  BiasTest out;
  // Clusters of one value repeated (whole tokens with bitwise identical errors) are one sample.
  std::map<int64_t, std::vector<double>> by_cluster;
  for (size_t i = 0; i < x.size(); ++i) by_cluster[cluster[i]].push_back(x[i]);
  std::map<std::vector<double>, int64_t> distinct;
  for (const auto& [id, values] : by_cluster) distinct.emplace(values, id);
  std::vector<std::pair<double, double>> sums;  // (sum of x, count) per distinct cluster
  double n = 0, total = 0, scale = 0;
  for (const auto& [values, id] : distinct) {
    double sx = 0;
    for (double v : values) {
      sx += v;
      scale = std::max(scale, std::fabs(v));
    }
    sums.emplace_back(sx, static_cast<double>(values.size()));
    n += static_cast<double>(values.size());
    total += sx;
  }
  const double g = static_cast<double>(sums.size());
  out.clusters = static_cast<int64_t>(g);
  if (g < 2) return out;
  const double mean = total / n;
  // Cluster-robust variance of the mean (two-pass): each cluster's summed deviation from the mean,
  // with the small-sample factor g / (g - 1).
  double v = 0;
  for (const auto& [sx, cnt] : sums) v += (sx - cnt * mean) * (sx - cnt * mean);
  v = v / (n * n) * g / (g - 1);
  out.limit = t_limit(g - 1);
  // Values that agree to within the double rounding that produced them (x = err / sqrt(sum bound^2):
  // a few ulps, bounded by 2^-50 relative) are one value repeated, not a sample: no bias is claimed.
  if (!(std::sqrt(v) > std::ldexp(scale, -50) / std::sqrt(n))) return out;
  out.z = mean / std::sqrt(v);
  return out;
}

namespace {

DriftPoint summarize(int64_t index, const Accumulator& acc, const std::vector<float>& h, int64_t cols,
                     double single_ratio) {
  DriftPoint p;
  p.index = index;
  p.max_single_ratio = single_ratio;
  double e2 = 0, b2 = 0;
  std::vector<double> signed_x, shrink_x;
  std::vector<int64_t> token;
  for (size_t i = 0; i < acc.err.size(); ++i) {
    e2 += acc.err[i] * acc.err[i];
    b2 += acc.bound2[i];
    if (acc.bound2[i] <= 0) continue;
    const double x = acc.err[i] / std::sqrt(acc.bound2[i]);
    if (!std::isfinite(x)) continue;  // run_one judged it (single-call ratio); not a sample
    const double s = h[i] > 0 ? x : h[i] < 0 ? -x : 0.0;
    p.max_normalized = std::max(p.max_normalized, std::fabs(x));
    signed_x.push_back(x);
    shrink_x.push_back(s);
    token.push_back(static_cast<int64_t>(i) / cols);
  }
  p.rms_error = std::sqrt(e2 / std::max<size_t>(acc.err.size(), 1));
  p.rw_bound = std::sqrt(b2 / std::max<size_t>(acc.err.size(), 1));
  const BiasTest sgn = bias_test(signed_x, token), shr = bias_test(shrink_x, token);
  p.z_signed = sgn.z;
  p.z_shrink = shr.z;
  p.z_limit = sgn.limit;  // both have the same clusters but for bitwise duplicates
  p.z_limit_shrink = shr.limit;
  return p;
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
    if (std::fabs(p.z_signed) > p.z_limit)
      return Verdict::fail("DRIFT", stage,
                           fmt::format("{} {}: systematic signed bias, t = {:.2f} (limit {:.2f})", stage,
                                       p.index, p.z_signed, p.z_limit));
    if (std::fabs(p.z_shrink) > p.z_limit_shrink)
      return Verdict::fail(
          "DRIFT", stage,
          fmt::format("{} {}: systematic bias toward {} (t = {:.2f}, limit {:.2f})", stage, p.index,
                      p.z_shrink < 0 ? "zero" : "larger magnitudes", p.z_shrink, p.z_limit_shrink));
  }
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

struct LayerOutcome {
  std::vector<float> output;
  std::vector<double> error, bound;
  double max_ratio = 0;
};

LayerOutcome run_one(const Kernel& kernel, const Profile& profile, const Case& c) {
  const GuardedRun g = run_guarded(kernel, c, RunOptions{});
  const OracleEvaluation ev = evaluate(c, profile, g.result);
  const StageExpectation* out = ev.stage("output");
  LayerOutcome o;
  o.output = g.result.output;
  o.error.resize(o.output.size());
  o.bound.resize(o.output.size());
  for (size_t i = 0; i < o.output.size(); ++i) {
    if (std::isnan(out->expected[i]) || !std::isfinite(out->bound[i])) {
      // Nothing can be said about this element (a non-finite input, a possible fp32 overflow: left
      // to FINITE): it adds neither error nor bound.
      o.error[i] = o.bound[i] = 0;
      continue;
    }
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
    rep.points.push_back(summarize(l + 1, acc, h, H, o.max_ratio));
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
    std::vector<float> out;
    double single = 0;
    for (int64_t t = t0; t < t1; ++t)
      for (int64_t j = 0; j < H; ++j) {
        const size_t i = static_cast<size_t>(t * H + j);
        acc.err.push_back(o.error[i]);
        acc.bound2.push_back(o.bound[i] * o.bound[i]);
        out.push_back(o.output[i]);
        if (o.bound[i] > 0) single = std::max(single, std::fabs(o.error[i]) / o.bound[i]);
      }
    rep.points.push_back(summarize(t0, acc, out, H, single));
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
    f << "kernel,mode,index,max_single_ratio,rms_error,rw_bound,max_normalized,z_signed,z_shrink,z_limit\n";
    for (const auto& r : reports)
      for (const auto& p : r.points)
        f << fmt::format("{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.4f},{:.4f},{:.4f}\n", r.kernel, r.mode,
                         p.index, p.max_single_ratio, p.rms_error, p.rw_bound, p.max_normalized, p.z_signed,
                         p.z_shrink, p.z_limit);
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
    // Two panels: the random-walk excursion (growth) and the bias z statistics (systematic error),
    // each with its limit, so the panel that fails is visible.
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
    g << "unset logscale y\nset ylabel 'bias z (shrink toward zero; signed dashed)'\n";
    g << "plot ";
    for (const auto& r : reports) {
      g << fmt::format("'{}' using 3:(strcol(1) eq '{}' ? $9 : NaN) with linespoints title '{} shrink', ",
                       csv_path, r.kernel, r.kernel);
      g << fmt::format("'{}' using 3:(strcol(1) eq '{}' ? $8 : NaN) with lines dt 3 title '{} signed', ",
                       csv_path, r.kernel, r.kernel);
    }
    g << fmt::format(
        "{0} with lines dt 2 lw 2 lc 'red' title 'limit +-{0}', -{0} with lines dt 2 lw 2 lc 'red' notitle\n",
        kDriftZ);
    g << "unset multiplot\n";
  }
  const int rc = std::system(fmt::format("gnuplot '{}' 2>/dev/null", script_path).c_str());
  std::remove(script_path.c_str());
  return rc == 0 ? std::string() : "gnuplot failed";
}

}  // namespace moefuzz
