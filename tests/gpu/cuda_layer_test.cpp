// GPU tests of the `cuda` kernel against an independent host computation (double precision, every
// stage conditioned on the kernel's own previous stage and discrete decisions), with bounds derived
// below from each stage's precision contract. Skips visibly without a GPU (CI has none).
//
//   MOEFUZZ_GPU_CASES=N    random layers in RandomLayersMatchHostReference (default 300)
//   MOEFUZZ_GPU_LARGE=1    run the T*k*H > 2^31 case (about 6 GB of device memory)
//   MOEFUZZ_GPU_BENCH=1    print the grouped-GEMM bandwidth table on decode shapes
//
// The host reference is this file's own (the project oracle, oracles/oracle.h, was not yet
// implemented when this was written); it uses only core/ number formats.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "core/case.h"
#include "core/e2m1.h"
#include "core/e4m3.h"
#include "core/errors.h"
#include "kernels/kernel.h"
#ifdef MOEFUZZ_WITH_CUDA
#include "kernels/cuda/cuda_kernel.h"
#include "kernels/cuda/moe_pipeline.h"
#endif

#ifndef MOEFUZZ_WITH_CUDA
TEST(CudaLayer, RequiresCudaBuild) { GTEST_SKIP() << "built without nvcc: the cuda kernel is not compiled"; }
#else
namespace moefuzz {
namespace {

constexpr double kU = 0x1p-24;  // fp32 unit roundoff (RN)

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoll(v) : fallback;
}

#define SKIP_WITHOUT_GPU()                                                                  \
  do {                                                                                      \
    std::string why;                                                                        \
    if (!cuda::cuda_device_available(&why)) GTEST_SKIP() << "no CUDA GPU present: " << why; \
  } while (0)

// ---------------------------------------------------------------------------------------------
// Random cases (built here; materialize() of core/case.h is used when it is implemented).
struct CaseGen {
  std::mt19937_64 rng;
  explicit CaseGen(uint64_t seed) : rng(seed) {}
  double uni(double a, double b) { return std::uniform_real_distribution<double>(a, b)(rng); }
  int64_t pick(int64_t a, int64_t b) { return std::uniform_int_distribution<int64_t>(a, b)(rng); }
  double normal() { return std::normal_distribution<double>(0, 1)(rng); }

  Nvfp4Matrix matrix(int64_t rows, int64_t cols) {
    Nvfp4Matrix m(rows, cols);
    for (auto& b : m.packed) b = static_cast<uint8_t>(pick(0, 255));
    for (auto& s : m.scales) s = pick(0, 19) == 0 ? 0 : static_cast<uint8_t>(pick(0x08, 0x6E));  // no NaN
    m.global_dequant = static_cast<float>(std::ldexp(uni(1, 2), static_cast<int>(pick(-14, -6))));
    return m;
  }

  Case random_case(const CaseRecipe& r) {
    Case c;
    c.recipe = r;
    const int64_t T = r.shape.tokens, H = r.shape.hidden, I = r.shape.inter, E = r.shape.experts;
    c.hidden.resize(T * H);
    const double mag = std::ldexp(1.0, static_cast<int>(pick(-6, 6)));
    double amax = 0;
    for (int64_t i = 0; i < T * H; ++i) {
      double v = (i / 16) % 11 == 3 ? 0.0 : normal() * mag * (pick(0, 63) == 0 ? 30 : 1);
      c.hidden[i] = bf16_from_float(static_cast<float>(v));
      amax = std::max(amax, std::fabs(static_cast<double>(bf16_to_float(c.hidden[i]))));
    }
    const int lp = static_cast<int>(pick(0, 3));
    c.logits.resize(T * E);
    for (auto& l : c.logits) {
      double v = normal() * 2;
      if (lp == 1) v = -std::fabs(v) - 3;            // all negative
      if (lp == 2) v = std::round(v * 2) / 2;        // exact ties
      if (lp == 3) v = std::round(v * 4096) / 4096;  // near ties
      l = static_cast<float>(v);
    }
    if (r.routing.mode == RoutingMode::kSigmoidGrouped && r.routing.correction_bias) {
      c.bias.resize(E);
      for (auto& b : c.bias) b = static_cast<float>(normal() * (pick(0, 1) ? 0.01 : 1.0));
    }
    if (r.routing.mode == RoutingMode::kHash) {
      const int64_t V = r.hash_vocab();
      c.token_ids.resize(T);
      for (auto& t : c.token_ids) t = static_cast<int32_t>(pick(0, V - 1));
      c.hash_table.resize(V * r.shape.top_k);
      for (int64_t v = 0; v < V; ++v) {
        std::vector<int32_t> perm(E);
        for (int64_t e = 0; e < E; ++e) perm[e] = static_cast<int32_t>(e);
        std::shuffle(perm.begin(), perm.end(), rng);
        for (int64_t j = 0; j < r.shape.top_k; ++j)
          c.hash_table[v * r.shape.top_k + j] = pick(0, 4) == 0 ? perm[0] : perm[j];  // duplicates too
      }
    }
    const int64_t X = r.total_experts();
    for (int64_t e = 0; e < X; ++e) c.experts.push_back({matrix(I, H), matrix(I, H), matrix(H, I)});
    const bool per_expert = r.quant.act_scales == ActScaleMode::kPerExpert;
    const double s1 = 2688.0 / std::max(amax, 1e-6);
    for (int64_t e = 0; e < (per_expert ? X : 1); ++e) {
      c.a1_scale.push_back(static_cast<float>(s1 * uni(0.25, 2)));
      c.a2_scale.push_back(static_cast<float>(std::ldexp(uni(1, 2), static_cast<int>(pick(0, 12)))));
    }
    return c;
  }

  CaseRecipe random_recipe() {
    CaseRecipe r;
    r.seed = rng();
    r.routing.mode = static_cast<RoutingMode>(pick(0, 2));
    r.shape.tokens = pick(1, 40);
    r.shape.hidden = 16 * pick(1, 16);
    r.shape.inter = 16 * pick(1, 10);
    r.shape.experts = pick(1, 16);
    if (r.routing.mode == RoutingMode::kSigmoidGrouped) {
      std::vector<int64_t> divs;
      for (int64_t d = 1; d <= r.shape.experts; ++d)
        if (r.shape.experts % d == 0) divs.push_back(d);
      r.shape.n_group = divs[pick(0, static_cast<int64_t>(divs.size()) - 1)];
      r.shape.topk_group = pick(1, r.shape.n_group);
      const int64_t avail = r.shape.topk_group * (r.shape.experts / r.shape.n_group);
      r.shape.top_k = pick(1, std::min<int64_t>(avail, 8));
      r.routing.correction_bias = pick(0, 3) != 0;
    } else {
      r.shape.top_k = pick(1, std::min<int64_t>(r.shape.experts, 8));
    }
    r.routing.hash_score = static_cast<ScoreFunc>(pick(0, 2));
    r.routing.renormalize = pick(0, 3) != 0;
    r.routing.routed_scaling_factor = pick(0, 1) ? 2.5 : 1.0;
    r.shape.shared_experts = pick(0, 2) == 0 ? 1 : 0;
    r.routing.shared_fusion = pick(0, 1) ? SharedFusion::kFused : SharedFusion::kSeparate;
    r.quant.act_scales = pick(0, 1) ? ActScaleMode::kPerExpert : ActScaleMode::kGlobal;
    if (pick(0, 4) == 0) r.swiglu = {.limit = 7.0, .alpha = 1.702, .beta = 1.0};
    return r;
  }
};

// Every other case comes from the project's materialize() when it accepts the recipe (it was being
// written in parallel with this test), the rest from CaseGen; `from_materialize` counts which.
Case case_for(CaseGen& gen, const CaseRecipe& r, bool try_materialize, bool& from_materialize) {
  from_materialize = false;
  if (try_materialize) {
    try {
      Case c = materialize(r);
      from_materialize = true;
      return c;
    } catch (const InputError&) {
    }
  }
  return gen.random_case(r);
}

// ---------------------------------------------------------------------------------------------
// Host reference, stage by stage.
struct Failure {
  std::string what;
  bool operator()(bool ok, const std::string& msg) {
    if (!ok && what.empty()) what = msg;
    return ok;
  }
};

std::string loc(const char* stage, int64_t t, int64_t s, int64_t col, double got, double want, double bound) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%s t=%lld slot=%lld col=%lld got=%.9g expected=%.9g bound=%.3g err/bound=%.3g", stage,
                static_cast<long long>(t), static_cast<long long>(s), static_cast<long long>(col), got, want,
                bound, bound > 0 ? std::fabs(got - want) / bound : INFINITY);
  return buf;
}

// Routing of token t. Scores are recomputed in double; the kernel's fp32 scores carry at most the
// relative errors derived per mode below. A selection is admissible if every chosen expert could
// outrank every unchosen eligible one within those errors (near-ties accepted either way).
void check_routing(const Case& c, const cuda::PipelineConfig& cfg, int64_t t, const int32_t* ids,
                   const float* w, Failure& f) {
  const int64_t E = cfg.experts, K = cfg.top_k;
  const float* x = c.logits.data() + t * E;
  std::vector<double> score(E), sel(E), rel(E), err(E);
  const auto mode = static_cast<RoutingMode>(cfg.mode);
  const bool softmax =
      mode == RoutingMode::kSoftmax ||
      (mode == RoutingMode::kHash && static_cast<ScoreFunc>(cfg.hash_score) == ScoreFunc::kSoftmax);
  if (softmax) {
    double m = -INFINITY, sum = 0;
    for (int64_t e = 0; e < E; ++e) m = std::max(m, static_cast<double>(x[e]));
    for (int64_t e = 0; e < E; ++e) sum += std::exp(x[e] - m);
    for (int64_t e = 0; e < E; ++e) {
      score[e] = std::exp(x[e] - m) / sum;
      // expf <= 2 ulp (4u), x - max rounding amplified by |x - max|, sum of E positive terms
      // (E u), reciprocal and product (2u); doubled for slack in the ulp-vs-u conversion.
      rel[e] = 2 * (4 + std::fabs(x[e] - m) + E + 2) * kU;
    }
  } else {
    for (int64_t e = 0; e < E; ++e) {
      const double xe = x[e];
      if (mode == RoutingMode::kHash && static_cast<ScoreFunc>(cfg.hash_score) == ScoreFunc::kSqrtSoftplus) {
        score[e] = std::sqrt(std::max(xe, 0.0) + std::log1p(std::exp(-std::fabs(xe))));
        rel[e] = 16 * kU;  // expf, log1pf (<= 2 ulp each), add, sqrt: <= 8 ulp, halved by sqrt; doubled
      } else {
        score[e] = 1.0 / (1.0 + std::exp(-xe));
        rel[e] = 8 * kU;  // expf 2 ulp (4u), add u, division u; s is no more sensitive than 1+e^-x
      }
    }
  }
  for (int64_t e = 0; e < E; ++e) {
    sel[e] = score[e] + (cfg.has_bias ? c.bias[e] : 0.0);
    err[e] = rel[e] * score[e] + (cfg.has_bias ? kU * std::fabs(sel[e]) * 2 : 0.0);
  }
  std::vector<char> chosen(E, 0);
  for (int64_t j = 0; j < K; ++j) {
    if (!f(ids[j] >= 0 && ids[j] < E, loc("route(id range)", t, j, ids[j], ids[j], 0, 0))) return;
    if (mode != RoutingMode::kHash &&
        !f(!chosen[ids[j]], loc("route(duplicate id)", t, j, ids[j], ids[j], 0, 0)))
      return;
    chosen[ids[j]] = 1;
  }
  if (mode == RoutingMode::kHash) {
    for (int64_t j = 0; j < K; ++j) {
      const int32_t want = c.hash_table[static_cast<int64_t>(c.token_ids[t]) * K + j];
      if (!f(ids[j] == want, loc("route(hash id)", t, j, -1, ids[j], want, 0))) return;
    }
  } else {
    std::vector<char> eligible(E, 1);
    if (mode == RoutingMode::kSigmoidGrouped && cfg.n_group > 1) {
      const int64_t G = E / cfg.n_group;
      std::vector<double> gs(cfg.n_group), ge(cfg.n_group);
      for (int64_t g = 0; g < cfg.n_group; ++g) {
        std::vector<std::pair<double, double> > v;
        for (int64_t j = 0; j < G; ++j) v.push_back({sel[g * G + j], err[g * G + j]});
        std::sort(v.begin(), v.end(), [](auto a, auto b) { return a.first > b.first; });
        const bool two = cfg.has_bias && G >= 2;
        gs[g] = v[0].first + (two ? v[1].first : 0);
        ge[g] = v[0].second + (two ? v[1].second + kU * std::fabs(gs[g]) * 2 : 0);
      }
      std::vector<char> used(cfg.n_group, 0);
      for (int64_t j = 0; j < K; ++j) used[ids[j] / G] = 1;
      int64_t n_used = 0;
      for (int64_t g = 0; g < cfg.n_group; ++g) n_used += used[g];
      if (!f(n_used <= cfg.topk_group, loc("route(groups)", t, -1, n_used, n_used, cfg.topk_group, 0)))
        return;
      for (int64_t g = 0; g < cfg.n_group; ++g) {
        if (!used[g]) continue;
        int64_t beaten_by = 0;
        for (int64_t h = 0; h < cfg.n_group; ++h) beaten_by += (gs[h] - ge[h] > gs[g] + ge[g]);
        if (!f(beaten_by < cfg.topk_group, loc("route(group admissible)", t, -1, g, gs[g], 0, ge[g]))) return;
      }
      for (int64_t e = 0; e < E; ++e) eligible[e] = used[e / G];
    }
    for (int64_t j = 0; j < K; ++j)
      for (int64_t u = 0; u < E; ++u) {
        if (chosen[u] || !eligible[u]) continue;
        const int64_t c0 = ids[j];
        if (!f(sel[c0] + err[c0] >= sel[u] - err[u],
               loc("route(selection admissible)", t, j, u, sel[c0], sel[u], err[c0] + err[u])))
          return;
      }
  }
  // Weights, conditioned on the kernel's ids.
  const bool renorm = cfg.renormalize && !(mode == RoutingMode::kHash && softmax);
  double sum = 0, max_rel = 0;
  for (int64_t j = 0; j < K; ++j) {
    sum += score[ids[j]];
    max_rel = std::max(max_rel, rel[ids[j]]);
  }
  for (int64_t j = 0; j < K; ++j) {
    double want = score[ids[j]];
    if (renorm) want /= (sum + cfg.renorm_epsilon);
    if (cfg.rsf_in_topk) want *= cfg.rsf;
    // score error, sum of K (K u), division (u), rsf product (u): doubled.
    const double bound =
        (renorm ? 2 * max_rel : max_rel) * std::fabs(want) + 2 * (K + 3) * kU * std::fabs(want) + 0x1p-126;
    if (!f(std::fabs(w[j] - want) <= bound, loc("route(weight)", t, j, ids[j], w[j], want, bound))) return;
  }
}

// NVFP4 quantization of one row (SPEC.md §1.5 fast-math). Step 2 is bit-reproducible, so the scale
// byte must match exactly; step 3 uses rcp.approx (<= 1 ulp off RN), so each code may be any code
// reachable by y within 3 ulp (two rcp, two products).
void check_quant(const char* stage, const std::vector<float>& x, float s_q, bool vecmax_rule,
                 const uint8_t* packed, const uint8_t* scales, int64_t t, int64_t slot, Failure& f) {
  const int64_t cols = static_cast<int64_t>(x.size());
  const float r6 = static_cast<float>(1.0 / 6.0);  // rcp.approx(6) == RN(1/6) [MEASURED, SPEC.md §1.5]
  for (int64_t b = 0; b < cols / 16; ++b) {
    float vmax = 0;
    for (int j = 0; j < 16; ++j) vmax = std::max(vmax, std::fabs(x[b * 16 + j]));
    const float sf32 = s_q * (vmax * r6);
    const uint8_t want_sf = e4m3_from_float(sf32);
    if (!f(scales[b] == want_sf, loc(stage, t, slot, b, scales[b], want_sf, 0) + " (scale byte)")) return;
    const double sfd = e4m3_to_float(want_sf);
    const bool nonzero = vecmax_rule ? vmax != 0 : sfd != 0;
    for (int j = 0; j < 16; ++j) {
      const int64_t col = b * 16 + j;
      const uint8_t got = e2m1_canonical(fp4_code_at(packed, col));
      uint8_t lo, hi;
      if (!nonzero) {
        lo = hi = 0;
      } else if (sfd == 0) {  // rcp(0) = +Inf: y = x * Inf (0 * Inf = NaN -> +6)
        lo = hi = e2m1_canonical(e2m1_from_float(x[col] == 0 ? NAN : std::copysign(INFINITY, x[col])));
      } else {
        const double y = x[col] / (sfd / s_q);
        const double d = 4 * 0x1p-23 * std::fabs(y);
        lo = e2m1_canonical(e2m1_from_float(static_cast<float>(y - d)));
        hi = e2m1_canonical(e2m1_from_float(static_cast<float>(y + d)));
      }
      const float gv = e2m1_to_float(got), lv = e2m1_to_float(lo), hv = e2m1_to_float(hi);
      if (!f(gv >= std::min(lv, hv) && gv <= std::max(lv, hv),
             loc(stage, t, slot, col, gv, lv, hv - lv) + " (code)"))
        return;
    }
  }
}

// One GEMM row: kernel = bf16(fl(alpha * acc32)), acc32 the tensor-core fp32 sum of exact products.
// |acc32 - acc| <= (K + 8) * 2^-23 * sum|terms|: one 2^-23 (truncation-safe) per accumulated
// product plus the 4-way split-K adds. Then fl(alpha * .) (u) and bf16 RN (8 significant bits: 2^-8
// relative).
void check_gemm_row(const char* stage, const uint8_t* a_packed, const uint8_t* a_sf, const Nvfp4Matrix& w,
                    float alpha, const float* got, int64_t t, int64_t slot, Failure& f) {
  const int64_t K = w.cols;
  std::vector<double> a(K);
  for (int64_t k = 0; k < K; ++k)
    a[k] = e2m1_to_float(fp4_code_at(a_packed, k)) * static_cast<double>(e4m3_to_float(a_sf[k / 16]));
  for (int64_t n = 0; n < w.rows; ++n) {
    double acc = 0, mag = 0;
    const uint8_t* wr = w.packed.data() + n * (K / 2);
    for (int64_t k = 0; k < K; ++k) {
      const double p =
          a[k] * e2m1_to_float(fp4_code_at(wr, k)) * static_cast<double>(e4m3_to_float(w.scale(n, k / 16)));
      acc += p;
      mag += std::fabs(p);
    }
    const double want = static_cast<double>(alpha) * acc;
    const double acc_err = std::fabs(alpha) * (K + 8) * 0x1p-23 * mag;
    const double bound = acc_err * (1 + kU) + (0x1p-8 + kU) * (std::fabs(want) + acc_err) + 0x1p-133;
    if (!f(std::fabs(got[n] - want) <= bound, loc(stage, t, slot, n, got[n], want, bound))) return;
  }
}

// h = bf16(silu(g) * u) from the kernel's own bf16 GEMM1 outputs; the fp32 pre-rounding value has
// relative error <= (8 + |alpha g|) u (expf 2 ulp, the product alpha*g amplified by |alpha g|,
// add, divide, multiply, u + beta), then bf16 RN (2^-8 relative).
void check_activation_row(const Case& c, const float* gemm1, const float* got, int64_t I, int64_t t,
                          int64_t slot, Failure& f) {
  const Swiglu& s = c.recipe.swiglu;
  const bool clamp = std::isfinite(s.limit);
  const double L = static_cast<float>(s.limit), al = static_cast<float>(s.alpha),
               be = static_cast<float>(s.beta);
  for (int64_t i = 0; i < I; ++i) {
    double g = gemm1[i], u = gemm1[I + i];
    if (clamp) {
      g = std::min(g, L);
      u = std::clamp(u, -L, L);
    }
    const double silu = g / (1 + std::exp(-al * g));
    const double want = silu * (u + be);
    const double rel = 2 * (8 + std::fabs(al * g)) * kU;
    // (u + beta) is rounded once: error u*|u+beta| relative to itself, covered by `rel` unless u ~ -beta.
    // Range: when exp(-alpha g) overflows fp32 (-alpha g > ln(FLT_MAX) ~ 88.7) the kernel's silu is
    // +-0 while |silu| < |g| 2^-128; a subnormal fp32 product is off by at most 2^-150.
    const double overflow = (-al * g > 88.0) ? std::fabs(g) * 0x1p-127 * (std::fabs(u) + std::fabs(be)) : 0.0;
    const double abs_pre =
        rel * std::fabs(want) + kU * std::fabs(silu) * (std::fabs(u) + std::fabs(be)) + overflow + 0x1p-149;
    const double bound = abs_pre + 0x1p-8 * (std::fabs(want) + abs_pre) + 0x1p-133;
    if (!f(std::fabs(got[i] - want) <= bound, loc("activation", t, slot, i, got[i], want, bound))) return;
  }
}

// Checks token rows of a kernel result. `tokens[i]` is the case token of result row i.
void check_tokens(const Case& c, const cuda::PipelineConfig& cfg, const std::vector<int64_t>& tokens,
                  const LayerResult& res, Failure& f) {
  const int64_t H = cfg.hidden, I = cfg.inter, R = cfg.routed_slots();
  for (size_t ti = 0; ti < tokens.size() && f.what.empty(); ++ti) {
    const int64_t t = tokens[ti];
    const int32_t* ids = res.routing.ids.data() + ti * R;
    const float* w = res.routing.weights.data() + ti * R;
    check_routing(c, cfg, t, ids, w, f);
    std::vector<float> x(H);
    for (int64_t h = 0; h < H; ++h) x[h] = bf16_to_float(c.hidden[t * H + h]);
    for (int64_t s = 0; s < R && f.what.empty(); ++s) {
      const int64_t row = static_cast<int64_t>(ti) * R + s, e = ids[s];
      const ExpertWeights& ew = c.experts[e];
      const uint8_t* p1 = res.fc1_input->packed.data() + row * H / 2;
      const uint8_t* s1 = res.fc1_input->scales.data() + row * H / 16;
      check_quant("fc1_quant", x, c.a1_scale_for(e), cfg.zero_scale_by_vecmax, p1, s1, t, s, f);
      const float a1d = 1.0f / c.a1_scale_for(e), a2d = 1.0f / c.a2_scale_for(e);
      const float* g1 = res.gemm1->data() + row * 2 * I;
      check_gemm_row("gemm1(gate)", p1, s1, ew.gate, a1d * ew.gate.global_dequant, g1, t, s, f);
      check_gemm_row("gemm1(up)", p1, s1, ew.up, a1d * ew.up.global_dequant, g1 + I, t, s, f);
      const float* act = res.activation->data() + row * I;
      check_activation_row(c, g1, act, I, t, s, f);
      const uint8_t* p2 = res.fc2_input->packed.data() + row * I / 2;
      const uint8_t* s2 = res.fc2_input->scales.data() + row * I / 16;
      check_quant("fc2_quant", std::vector<float>(act, act + I), c.a2_scale_for(e), cfg.zero_scale_by_vecmax,
                  p2, s2, t, s, f);
      check_gemm_row("gemm2", p2, s2, ew.down, a2d * ew.down.global_dequant, res.gemm2->data() + row * H, t,
                     s, f);
    }
    // Combine: fp32 in slot order (terms bf16(y * bf16(w)) under kBf16Products), reproduced bit for bit.
    for (int64_t h = 0; h < H && f.what.empty(); ++h) {
      float acc = 0;
      for (int64_t s = 0; s < R; ++s) {
        const float y = (*res.gemm2)[(ti * R + s) * H + h];
        acc = acc + (cfg.combine_bf16_products ? round_to_bf16(y * round_to_bf16(w[s])) : w[s] * y);
      }
      if (!cfg.rsf_in_topk) acc = acc * cfg.rsf;
      float want = round_to_bf16(acc);
      if (cfg.separate_shared) want = round_to_bf16(want + res.shared_output[ti * H + h]);
      const float got = res.output[ti * H + h];
      f(std::memcmp(&got, &want, 4) == 0 || (std::isnan(got) && std::isnan(want)),
        loc("combine(bit-exact)", t, -1, h, got, want, 0));
    }
  }
}

// ---------------------------------------------------------------------------------------------
TEST(CudaLayer, RandomLayersMatchHostReference) {
  SKIP_WITHOUT_GPU();
  const int64_t n = env_int("MOEFUZZ_GPU_CASES", 300);
  auto kernel = make_cuda_kernel();
  CaseGen gen(20250101);
  int64_t checked = 0, per_mode[3] = {0, 0, 0}, tactic_pairs = 0, n_materialized = 0;
  for (int64_t i = 0; i < n; ++i) {
    const CaseRecipe r = gen.random_recipe();
    if (!kernel->supports(r).empty()) continue;
    bool materialized = false;
    const Case c = case_for(gen, r, i % 2 == 1, materialized);
    n_materialized += materialized;
    // MOEFUZZ_GPU_TACTIC=t: every case on tactic t (the bit-identity pairs still sweep all tactics).
    const int forced = static_cast<int>(env_int("MOEFUZZ_GPU_TACTIC", -1));
    const int tactic =
        forced >= 0 && forced < cuda::kNumTactics ? forced : static_cast<int>(i % cuda::kNumTactics);
    LayerResult res;
    res.output.assign(r.shape.tokens * r.shape.hidden, NAN);  // CANARY
    kernel->run_layer(c, {.tactic = tactic}, res);
    ASSERT_TRUE(res.fc1_input && res.gemm1 && res.activation && res.fc2_input && res.gemm2);
    const cuda::PipelineConfig cfg = cuda::config_for(r, cuda_kernel_profile(), tactic);
    std::vector<int64_t> tokens(r.shape.tokens);
    for (int64_t t = 0; t < r.shape.tokens; ++t) tokens[t] = t;
    Failure f;
    check_tokens(c, cfg, tokens, res, f);
    ASSERT_TRUE(f.what.empty()) << "case " << i << " mode " << static_cast<int>(r.routing.mode)
                                << " T=" << r.shape.tokens << " H=" << r.shape.hidden
                                << " I=" << r.shape.inter << " E=" << r.shape.experts
                                << " k=" << r.shape.top_k << " tactic " << tactic << ": " << f.what;
    if (i % 10 == 0) {  // TACTIC and REPEAT: bit-identical across every tactic and runs
      for (int t2 = 0; t2 < cuda::kNumTactics; ++t2) {
        LayerResult other;
        other.output.assign(res.output.size(), NAN);
        kernel->run_layer(c, {.tactic = t2}, other);
        ASSERT_EQ(0, std::memcmp(res.output.data(), other.output.data(), res.output.size() * 4))
            << "case " << i << " tactic " << tactic << " vs " << t2;
        ++tactic_pairs;
      }
    }
    ++checked;
    ++per_mode[static_cast<int>(r.routing.mode)];
    if (checked % 25 == 0) {  // progress survives a timeout kill
      std::printf("[cuda] progress: %lld cases checked (last i=%lld, tactic %d)\n",
                  static_cast<long long>(checked), static_cast<long long>(i), tactic);
      std::fflush(stdout);
    }
  }
  std::printf(
      "[cuda] %lld random layers checked against the host reference (softmax %lld, sigmoid-grouped %lld, "
      "hash %lld); "
      "%lld tactic/repeat pairs bit-identical; %lld cases from materialize()\n",
      static_cast<long long>(checked), static_cast<long long>(per_mode[0]),
      static_cast<long long>(per_mode[1]), static_cast<long long>(per_mode[2]),
      static_cast<long long>(tactic_pairs), static_cast<long long>(n_materialized));
  EXPECT_GT(checked, n / 2);
}

// T * k * H > 2^31 (T = 40000, k = 8, H = 7168): every stage of sampled tokens -- the first, the
// last (rows whose element offsets exceed 2^31) and random ones -- against the host reference.
TEST(CudaLayer, IndicesPast2Pow31AreCorrectOnSampledTokens) {
  SKIP_WITHOUT_GPU();
  if (env_int("MOEFUZZ_GPU_LARGE", 0) == 0)
    GTEST_SKIP() << "opt-in: MOEFUZZ_GPU_LARGE=1 (about 6 GB of device memory)";
  CaseRecipe r;
  r.shape = {.tokens = env_int("MOEFUZZ_GPU_LARGE_TOKENS", 40000),
             .hidden = 7168,
             .inter = 64,
             .experts = 8,
             .top_k = 8};
  r.routing.mode = RoutingMode::kSoftmax;
  r.routing.routed_scaling_factor = 2.5;
  CaseGen gen(7);
  CaseRecipe small = r;
  small.shape.tokens = 1;
  Case c = gen.random_case(small);  // weights, scales; hidden and logits filled below (fast)
  c.recipe = r;
  const int64_t T = r.shape.tokens, H = r.shape.hidden, E = r.shape.experts;
  c.hidden.resize(T * H);
  c.logits.resize(T * E);
  std::mt19937_64 bits(99);
  for (auto& h : c.hidden) {
    const uint64_t z = bits();
    h = static_cast<uint16_t>((z & 0x807F) | ((0x78 + (z >> 16) % 12) << 7));  // +-[2^-7, 2^4)
  }
  for (auto& l : c.logits) l = static_cast<float>(gen.normal());
  const cuda::PipelineConfig cfg = cuda::config_for(r, cuda_kernel_profile(), 0);
  ASSERT_GT(T * r.shape.top_k * H, int64_t{1} << 31);
  cuda::MoePipeline p(cfg);
  p.upload_case(c);
  p.run();

  std::vector<int64_t> sample = {0, 1, T / 2, T - 2, T - 1};
  for (int i = 0; i < 27; ++i) sample.push_back(gen.pick(0, T - 1));
  const int64_t S = cfg.all_slots(), R = cfg.routed_slots(), I = cfg.inter;
  std::vector<int32_t> ids;
  std::vector<float> w;
  p.download_routing(ids, w);
  const cuda::Permutation perm = p.download_permutation();
  LayerResult res;
  std::vector<int64_t> rows;
  int64_t max_row = 0;
  for (int64_t t : sample)
    for (int64_t s = 0; s < R; ++s) {
      res.routing.ids.push_back(ids[t * S + s]);
      res.routing.weights.push_back(w[t * S + s]);
      rows.push_back(perm.pair_row[t * S + s]);
      max_row = std::max(max_row, rows.back());
    }
  res.fc1_input.emplace();
  res.fc2_input.emplace();
  p.download_fc1_rows(rows, res.fc1_input->packed, res.fc1_input->scales);
  p.download_fc2_rows(rows, res.fc2_input->packed, res.fc2_input->scales);
  const std::vector<uint16_t> g1 = p.download_gemm1_rows(rows);
  res.gemm1.emplace(g1.size());
  for (size_t i = 0; i < rows.size(); ++i)
    for (int64_t n = 0; n < 2 * I; ++n) {
      const int64_t semantic = cfg.up_first ? (n < I ? n + I : n - I) : n;
      (*res.gemm1)[i * 2 * I + semantic] = bf16_to_float(g1[i * 2 * I + n]);
    }
  auto widen = [](const std::vector<uint16_t>& v) {
    std::vector<float> f(v.size());
    for (size_t i = 0; i < v.size(); ++i) f[i] = bf16_to_float(v[i]);
    return f;
  };
  res.activation = widen(p.download_act_rows(rows));
  res.gemm2 = widen(p.download_gemm2_rows(rows));
  const std::vector<uint16_t> out = p.download_output();
  for (int64_t t : sample)
    for (int64_t h = 0; h < H; ++h) res.output.push_back(bf16_to_float(out[t * H + h]));
  Failure f;
  check_tokens(c, cfg, sample, res, f);
  EXPECT_TRUE(f.what.empty()) << f.what;
  EXPECT_GT(max_row * H, int64_t{1} << 31) << "no sampled row lies past 2^31 elements";
  std::printf(
      "[cuda] T=%lld k=8 H=7168: T*k*H = %lld (2^31 = %lld); %zu sampled tokens checked, largest row offset "
      "%lld\n",
      static_cast<long long>(T), static_cast<long long>(T * 8 * H), 1LL << 31, sample.size(),
      static_cast<long long>(max_row * H));
}

}  // namespace
}  // namespace moefuzz
#endif  // MOEFUZZ_WITH_CUDA
