#include "properties/drift.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

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

// z statistic of the mean of x, with a two-pass variance. The one-pass s2/n - mean^2 cancels
// catastrophically when every element has the same value (constant rows, every element at its
// bound): the noise left (~1e-16 mean^2) gave z ~ 1e8 on a correct kernel. Values that agree to
// within the double rounding that produced them (x = err / sqrt(sum bound^2): a few ulps, bounded
// by 2^-50 relative) are one value repeated, not a sample: no bias is claimed from them.
double bias_z(const std::vector<double>& x) {
  if (x.size() < 2) return 0.0;
  const double n = static_cast<double>(x.size());
  double mean = 0, scale = 0;
  for (double v : x) {
    mean += v;
    scale = std::max(scale, std::fabs(v));
  }
  mean /= n;
  double var = 0;
  for (double v : x) var += (v - mean) * (v - mean);
  var /= n;
  if (!(std::sqrt(var) > std::ldexp(scale, -50))) return 0.0;
  return mean / std::sqrt(var / n);
}

DriftPoint summarize(int64_t index, const Accumulator& acc, const std::vector<float>& h,
                     double single_ratio) {
  DriftPoint p;
  p.index = index;
  p.max_single_ratio = single_ratio;
  double e2 = 0, b2 = 0;
  std::vector<double> signed_x, shrink_x;
  for (size_t i = 0; i < acc.err.size(); ++i) {
    e2 += acc.err[i] * acc.err[i];
    b2 += acc.bound2[i];
    if (acc.bound2[i] <= 0) continue;
    const double x = acc.err[i] / std::sqrt(acc.bound2[i]);
    const double s = h[i] > 0 ? x : h[i] < 0 ? -x : 0.0;
    p.max_normalized = std::max(p.max_normalized, std::fabs(x));
    signed_x.push_back(x);
    shrink_x.push_back(s);
  }
  p.rms_error = std::sqrt(e2 / std::max<size_t>(acc.err.size(), 1));
  p.rw_bound = std::sqrt(b2 / std::max<size_t>(acc.err.size(), 1));
  p.z_signed = bias_z(signed_x);
  p.z_shrink = bias_z(shrink_x);
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
    if (std::fabs(p.z_signed) > kDriftZ)
      return Verdict::fail(
          "DRIFT", stage,
          fmt::format("{} {}: systematic signed bias, z = {:.2f}", stage, p.index, p.z_signed));
    if (std::fabs(p.z_shrink) > kDriftZ)
      return Verdict::fail("DRIFT", stage,
                           fmt::format("{} {}: systematic bias toward {} (z = {:.2f})", stage, p.index,
                                       p.z_shrink < 0 ? "zero" : "larger magnitudes", p.z_shrink));
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
    o.error[i] = static_cast<double>(o.output[i]) - out->expected[i];
    o.bound[i] = out->bound[i];
    if (out->bound[i] > 0)
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
    rep.points.push_back(summarize(l + 1, acc, h, o.max_ratio));
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
    rep.points.push_back(summarize(t0, acc, out, single));
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
    f << "kernel,mode,index,max_single_ratio,rms_error,rw_bound,max_normalized,z_signed,z_shrink\n";
    for (const auto& r : reports)
      for (const auto& p : r.points)
        f << fmt::format("{},{},{},{:.6g},{:.6g},{:.6g},{:.6g},{:.4f},{:.4f}\n", r.kernel, r.mode, p.index,
                         p.max_single_ratio, p.rms_error, p.rw_bound, p.max_normalized, p.z_signed,
                         p.z_shrink);
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
