// cpu_route: softmax top-k (SPEC.md §2.2), sigmoid + correction bias grouped top-k (§2.1), hash
// routing (§2.5). fp32 throughout like the production kernels; selection is value-descending with the
// lower index winning ties (the CUDA kernels' packed-key rule); NaN scores are never preferred.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "core/errors.h"
#include "kernels/cpu/cpu_stages.h"
#include "kernels/cpu/deviation_hooks.h"

namespace moefuzz::cpu {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Index of the largest value not yet taken (lower index wins ties; NaN ranks below -inf). Returns the
// lowest untaken index when every candidate is NaN, so a row always gets k ids.
int64_t argmax_untaken(const float* v, int64_t n, const std::vector<uint8_t>& taken) {
  int64_t best = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (taken[i] || std::isnan(v[i])) continue;
    if (best < 0 || v[i] > v[best]) best = i;
  }
  if (best < 0)
    for (int64_t i = 0; i < n; ++i)
      if (!taken[i]) return i;
  return best;
}

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float sqrt_softplus(float x) { return std::sqrt(std::fmax(x, 0.0f) + std::log1p(std::exp(-std::fabs(x)))); }

void softmax(const float* x, int64_t n, float* p) {
  float m = kNegInf;
  for (int64_t i = 0; i < n; ++i) m = std::fmax(m, x[i]);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += (p[i] = std::exp(x[i] - m));
  const float inv = 1.0f / sum;  // sgl-kernel topk_softmax: reciprocal-multiply
  for (int64_t i = 0; i < n; ++i) p[i] *= inv;
}

// SHIFT mutant: a half-precision softmax without max subtraction (exp of the raw logit in fp16, the
// sum and reciprocal in fp32). Shift-variant twice over: the fp16 precision of x and exp(x) depends on
// where the logits sit, and exp overflows to inf (NaN weights) once a logit passes 11.09.
void softmax_fp16_no_max(const float* x, int64_t n, float* p) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += (p[i] = round_to_fp16(std::exp(round_to_fp16(x[i]))));
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) p[i] *= inv;
}

void route_softmax(const float* x, int64_t n, float* p, const CpuConfig& cfg) {
  if (cfg.dev.fp16_softmax_no_max)
    softmax_fp16_no_max(x, n, p);
  else
    softmax(x, n, p);
}

// Grouped selection on biased scores sb (SPEC.md §2.1): group score = sum of its top-2 (with bias) or
// its max; the best topk_group groups survive, the rest are masked to -inf (0 in the Z3 mutant) and
// marked in `excluded`, so the expert top-k never falls back to a masked expert when a selected
// group holds a NaN score (NaN ranks below -inf in argmax_untaken; found by the routing fuzzer).
void mask_unselected_groups(std::vector<float>& sb, std::vector<uint8_t>& excluded, const CpuConfig& cfg) {
  std::fill(excluded.begin(), excluded.end(), 0);
  const int64_t groups = cfg.n_group, per = cfg.experts / cfg.n_group;
  if (groups <= 1) return;
  std::vector<float> gscore(groups);
  for (int64_t g = 0; g < groups; ++g) {
    float a = kNegInf, b = kNegInf;  // top-2
    for (int64_t i = g * per; i < (g + 1) * per; ++i) {
      const float v = std::isnan(sb[i]) ? kNegInf : sb[i];
      if (v > a)
        b = a, a = v;
      else if (v > b)
        b = v;
    }
    gscore[g] = cfg.correction_bias && per >= 2 ? a + b : a;
  }
  std::vector<uint8_t> taken(groups, 0);
  for (int64_t j = 0; j < cfg.topk_group; ++j) taken[argmax_untaken(gscore.data(), groups, taken)] = 1;
  const float masked = cfg.dev.group_mask_zero ? 0.0f : kNegInf;
  for (int64_t g = 0; g < groups; ++g)
    if (!taken[g])
      for (int64_t i = g * per; i < (g + 1) * per; ++i) {
        sb[i] = masked;
        excluded[i] = cfg.dev.group_mask_zero ? 0 : 1;  // Z3's zero mask keeps them eligible: its bug
      }
}

}  // namespace

RoutingDecision cpu_route(const Case& c, const CpuConfig& cfg) {
  const int64_t T = cfg.tokens, E = cfg.experts, k = cfg.top_k, slots = cfg.slots;
  RoutingDecision out;
  out.tokens = T;
  out.slots = slots;
  out.ids.assign(static_cast<size_t>(T * slots), 0);
  out.weights.assign(static_cast<size_t>(T * slots), 0.0f);
  if (static_cast<int64_t>(c.logits.size()) != T * E) throw InputError("logits size does not match [T, E]");
  std::vector<float> score(E), select(E);
  std::vector<uint8_t> taken(E), excluded(E, 0);
  for (int64_t t = 0; t < T; ++t) {
    const float* x = c.logits.data() + t * E;
    int32_t* ids = out.ids.data() + t * slots;
    float* w = out.weights.data() + t * slots;
    switch (cfg.mode) {
      case RoutingMode::kSoftmax:
        route_softmax(x, E, score.data(), cfg);
        select = score;
        break;
      case RoutingMode::kSigmoidGrouped:
        for (int64_t i = 0; i < E; ++i) score[i] = sigmoid(x[i]);
        select = score;
        if (cfg.correction_bias) {
          if (static_cast<int64_t>(c.bias.size()) != E) throw InputError("bias size does not match E");
          for (int64_t i = 0; i < E; ++i) select[i] = score[i] + c.bias[i];  // bias: selection only
        }
        mask_unselected_groups(select, excluded, cfg);
        break;
      case RoutingMode::kHash:
        if (cfg.hash_score == ScoreFunc::kSoftmax)
          route_softmax(x, E, score.data(), cfg);
        else
          for (int64_t i = 0; i < E; ++i)
            score[i] = cfg.hash_score == ScoreFunc::kSigmoid ? sigmoid(x[i]) : sqrt_softplus(x[i]);
        break;
    }
    if (cfg.mode == RoutingMode::kHash) {
      if (static_cast<int64_t>(c.token_ids.size()) != T) throw InputError("token_ids size does not match T");
      const int64_t row = c.token_ids[t];
      if (row < 0 || (row + 1) * k > static_cast<int64_t>(c.hash_table.size()))
        throw InputError("token id " + std::to_string(row) + " outside the hash table");
      for (int64_t s = 0; s < k; ++s) {
        const int32_t e = c.hash_table[row * k + s];
        if (e < 0 || e >= E)
          throw InputError("hash table expert id " + std::to_string(e) + " outside [0, E)");
        ids[s] = e;
      }
    } else {
      taken = excluded;  // unselected groups are never candidates (all zero outside grouped routing)
      for (int64_t s = 0; s < k; ++s) {
        const int64_t e = argmax_untaken(select.data(), E, taken);
        taken[e] = 1;
        ids[s] = static_cast<int32_t>(e);
      }
    }
    // Weights: the unbiased score of each selected expert, renormalized if asked.
    const bool raw = cfg.dev.raw_scores_without_renorm && !cfg.renormalize;  // Z4
    float sum = 0.0f;
    for (int64_t s = 0; s < k; ++s) sum += (w[s] = raw ? x[ids[s]] : score[ids[s]]);
    if (cfg.renormalize) {
      const float eps = cfg.dev.no_renorm_epsilon ? 0.0f : cfg.renorm_epsilon;  // Z5
      const float denom = sum + eps;
      // Every selected score underflowed under a 0-epsilon profile: 0/0. The weights are then
      // unspecified (the routing oracle leaves them unconstrained in [0, scale]) but must be finite
      // (FINITE, STRUCT; BUGZOO Z5 is the kernel that divides anyway), so they are 0.
      const bool all_underflowed = denom == 0.0f && !cfg.dev.no_renorm_epsilon;
      for (int64_t s = 0; s < k; ++s) w[s] = all_underflowed ? 0.0f : w[s] / denom;
    }
    if (cfg.topk_applies_rsf)
      for (int64_t s = 0; s < k; ++s) w[s] *= cfg.rsf;
    // Fused shared experts (SPEC.md §2.4): id E + j, weight 1/rsf, brought to 1 by the rsf multiply.
    for (int64_t j = 0; j < slots - k; ++j) {
      ids[k + j] = static_cast<int32_t>(E + j);
      float sw = 1.0f;
      if (cfg.shared_weight_inv_rsf) {
        sw = 1.0f / cfg.rsf;
        if (cfg.topk_applies_rsf) sw *= cfg.rsf;
      }
      w[k + j] = sw;
    }
    if (cfg.weights_bf16)
      for (int64_t s = 0; s < slots; ++s) w[s] = round_to_bf16(w[s]);
  }
  return out;
}

}  // namespace moefuzz::cpu
