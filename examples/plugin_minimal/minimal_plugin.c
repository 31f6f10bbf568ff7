/*
 * The minimal moefuzz plugin: a routing-stage kernel (softmax top-k and DeepSeek-V3 sigmoid grouped
 * top-k, SPEC.md 2.1-2.2) written against include/moefuzz/plugin.h only. moefuzz composes it with
 * its built-in CPU pipeline (quantize, GEMMs, SiLU*mul, combine), so this routing kernel is tested
 * inside a whole MoE layer. It is also the template of docs/plugins.md.
 *
 * Build out of tree:
 *   gcc -std=c99 -O2 -fPIC -shared -I<moefuzz>/include minimal_plugin.c -o libmine.so -lm
 */
#include <math.h>
#include <stddef.h>

#include "moefuzz/plugin.h"

/* Largest expert count this kernel handles (it keeps per-token scores on the stack). */
#define MAX_EXPERTS 512
/* The renormalization epsilon of the claimed profile, flashinfer-cutlass (mSumEpsilon). */
#define RENORM_EPSILON 1e-20f

static const char* minimal_supports(const moefuzz_case_desc* c) {
  if (c->routing_mode == MOEFUZZ_ROUTING_HASH) return "hash routing is not implemented";
  if (c->experts > MAX_EXPERTS) return "more than 512 experts";
  if (c->top_k > c->experts || c->n_group < 1 || c->experts % c->n_group != 0) return "invalid shape";
  return NULL;
}

/* Index of the largest score not yet taken; ties go to the lower index (SPEC.md 2.1, CUDA kernels). */
static int64_t argmax_free(const float* score, const unsigned char* taken, int64_t n) {
  int64_t e, best = -1;
  for (e = 0; e < n; ++e)
    if (!taken[e] && (best < 0 || score[e] > score[best])) best = e;
  return best;
}

static void softmax_scores(const float* x, int64_t n, float* p) {
  int64_t e;
  float mx = x[0], sum = 0.0f;
  for (e = 1; e < n; ++e) mx = x[e] > mx ? x[e] : mx;
  for (e = 0; e < n; ++e) {
    p[e] = expf(x[e] - mx);
    sum += p[e];
  }
  for (e = 0; e < n; ++e) p[e] = p[e] / sum;
}

/* Sigmoid + correction bias; experts outside the topk_group best groups get -inf selection scores. */
static void grouped_selection_scores(const moefuzz_case_desc* c, const float* x, float* s, float* sel) {
  const float* bias = c->correction_bias && c->bias.data ? (const float*)c->bias.data : NULL;
  int64_t e, g, j, group_size = c->experts / c->n_group;
  float gscore[MAX_EXPERTS];
  unsigned char gtaken[MAX_EXPERTS] = {0};
  for (e = 0; e < c->experts; ++e) {
    s[e] = 1.0f / (1.0f + expf(-x[e]));
    sel[e] = bias ? s[e] + bias[e * c->bias.strides[0]] : s[e];
  }
  for (g = 0; g < c->n_group; ++g) { /* sum of the top-2 with bias, else the max */
    float a = -INFINITY, b = -INFINITY;
    for (j = 0; j < group_size; ++j) {
      float v = sel[g * group_size + j];
      if (v > a) {
        b = a;
        a = v;
      } else if (v > b) {
        b = v;
      }
    }
    gscore[g] = bias && group_size > 1 ? a + b : a;
  }
  for (j = 0; j < c->topk_group; ++j) {
    int64_t best = argmax_free(gscore, gtaken, c->n_group);
    if (best >= 0) gtaken[best] = 1;
  }
  for (e = 0; e < c->experts; ++e)
    if (!gtaken[e / group_size]) sel[e] = -INFINITY;
}

static const char* minimal_route(const moefuzz_case_desc* c, moefuzz_tensor* ids, moefuzz_tensor* weights) {
  int64_t t, e, s;
  float score[MAX_EXPERTS], sel[MAX_EXPERTS];
  for (t = 0; t < c->tokens; ++t) {
    const float* x = (const float*)c->logits.data + t * c->logits.strides[0];
    int32_t* id = (int32_t*)ids->data + t * ids->strides[0];
    float* w = (float*)weights->data + t * weights->strides[0];
    unsigned char taken[MAX_EXPERTS] = {0};
    float sum = 0.0f;
    if (c->routing_mode == MOEFUZZ_ROUTING_SOFTMAX) {
      softmax_scores(x, c->experts, score);
      for (e = 0; e < c->experts; ++e) sel[e] = score[e];
    } else {
      grouped_selection_scores(c, x, score, sel);
    }
    for (s = 0; s < c->top_k; ++s) {
      int64_t best = argmax_free(sel, taken, c->experts);
      if (best < 0) return "top_k exceeds the number of experts";
      taken[best] = 1;
      id[s] = (int32_t)best;
      w[s] = score[best]; /* weights from the UNBIASED score */
      sum += w[s];
    }
    for (s = 0; s < c->top_k; ++s) {
      /* w / (sum + 1e-20), as FlashInfer's noAuxTc kernel (SPEC.md 2.1): with very negative logits
         every sigmoid underflows to 0 and a plain w / sum is 0/0 = NaN (BUGZOO Z5). */
      if (c->renormalize) w[s] = w[s] / (sum + RENORM_EPSILON);
      if (c->rsf_in_topk) w[s] = w[s] * c->routed_scaling_factor;
    }
    /* Fused shared experts: extra slots E + j with weight 1/rsf before the rsf multiply. */
    for (s = c->top_k; s < c->slots; ++s) {
      id[s] = (int32_t)(c->experts + (s - c->top_k));
      w[s] = 1.0f / c->routed_scaling_factor;
      if (c->rsf_in_topk) w[s] = w[s] * c->routed_scaling_factor;
    }
  }
  return NULL;
}

static const moefuzz_plugin_v1 kMinimalPlugin = {
    MOEFUZZ_PLUGIN_ABI_VERSION,
    sizeof(moefuzz_plugin_v1),
    "example-route",      /* name */
    "flashinfer-cutlass", /* claimed profile */
    "example plugin: softmax / sigmoid-grouped top-k routing, CPU pipeline for the rest",
    1, /* deterministic */
    1, /* batch_invariant */
    1, /* tactics */
    MOEFUZZ_STAGE_ROUTE,
    0, /* wants_device */
    minimal_supports,
    NULL, /* layer */
    minimal_route,
    NULL, /* quantize */
    NULL, /* gemm1 */
    NULL, /* activation */
    NULL, /* gemm2 */
    NULL  /* combine */
};

MOEFUZZ_PLUGIN_EXPORT const moefuzz_plugin_v1* moefuzz_plugin_entry(void) { return &kMinimalPlugin; }
