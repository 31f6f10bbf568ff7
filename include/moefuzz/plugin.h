/*
 * moefuzz kernel plugin ABI, version 1 (C89/C99, no C++).
 *
 * A plugin is a shared library that exports one function, moefuzz_plugin_entry(), returning a
 * static description of the kernel: its name, the profile (semantic contract) it claims, its
 * claims, which stages it implements and one function pointer per stage. moefuzz loads it with
 * `--kernel ./libmine.so`, runs it in a forked child process (a crash or hang becomes a finding,
 * never takes moefuzz down) and checks it like any built-in kernel. A plugin that implements only
 * some stages (say, only `route`) is composed with moefuzz's built-in CPU pipeline for the rest,
 * so one routing kernel can be tested in the context of a whole MoE layer. docs/plugins.md is the
 * user guide.
 *
 * Complete minimal plugin (a softmax top-k routing kernel; the framework supplies the rest):
 *
 *   #include <math.h>
 *   #include "moefuzz/plugin.h"
 *
 *   static const char* my_supports(const moefuzz_case_desc* c) {
 *     if (c->routing_mode != MOEFUZZ_ROUTING_SOFTMAX) return "only softmax routing";
 *     if (c->slots != c->top_k) return "no fused shared experts";
 *     return NULL;                                   // NULL = supported
 *   }
 *
 *   static const char* my_route(const moefuzz_case_desc* c, moefuzz_tensor* ids, moefuzz_tensor* w) {
 *     int64_t t, e, s;
 *     for (t = 0; t < c->tokens; ++t) {
 *       const float* x = (const float*)c->logits.data + t * c->logits.strides[0];
 *       int32_t* id = (int32_t*)ids->data + t * ids->strides[0];
 *       float* wt = (float*)w->data + t * w->strides[0];
 *       float mx = x[0], sum = 0, ksum = 0;
 *       for (e = 1; e < c->experts; ++e) if (x[e] > mx) mx = x[e];
 *       for (e = 0; e < c->experts; ++e) sum += expf(x[e] - mx);
 *       for (s = 0; s < c->top_k; ++s) {            // iterative argmax, lower index wins
 *         int64_t best = -1;
 *         for (e = 0; e < c->experts; ++e) {
 *           int64_t j, taken = 0;
 *           for (j = 0; j < s; ++j) taken |= id[j] == e;
 *           if (!taken && (best < 0 || x[e] > x[best])) best = e;
 *         }
 *         id[s] = (int32_t)best; wt[s] = expf(x[best] - mx) / sum; ksum += wt[s];
 *       }
 *       for (s = 0; s < c->top_k; ++s) {
 *         if (c->renormalize) wt[s] /= ksum;
 *         if (c->rsf_in_topk) wt[s] *= c->routed_scaling_factor;
 *       }
 *     }
 *     return NULL;                                   // NULL = success, else a message
 *   }
 *
 *   static const moefuzz_plugin_v1 kPlugin = {
 *     MOEFUZZ_PLUGIN_ABI_VERSION, sizeof(moefuzz_plugin_v1),
 *     "my-softmax-topk", "flashinfer-cutlass", "softmax top-k, one thread per token",
 *     1, 1, 1,                                       // deterministic, batch_invariant, tactics
 *     MOEFUZZ_STAGE_ROUTE, 0,                        // stages implemented, device buffers: no
 *     my_supports, NULL, my_route,                   // supports, layer, route
 *     NULL, NULL, NULL, NULL, NULL                   // quantize, gemm1, activation, gemm2, combine
 *   };
 *   MOEFUZZ_PLUGIN_EXPORT const moefuzz_plugin_v1* moefuzz_plugin_entry(void) { return &kPlugin; }
 *
 * Build:  gcc -std=c99 -O2 -fPIC -shared -I<moefuzz>/include mine.c -o libmine.so -lm
 * Run:    moefuzz check --kernel ./libmine.so
 *
 * Device-memory plugin (wants_device = 1, moefuzz built with CUDA): every tensor is a device pointer on
 * c->device_ordinal and the work goes on c->stream; moefuzz synchronizes the stream after the call.
 * A CUDA combine stage, the rest composed with moefuzz's CPU pipeline (the complete file:
 * examples/plugin_device/device_combine_plugin.cu):
 *
 *   __global__ void combine(const float* y, const float* w, int64_t T, int64_t S, int64_t H, float* out) {
 *     ...                                          // out[t, h] = sum over s of y[t * S + s, h] * w[t, s]
 *   }
 *
 *   static const char* my_combine(const moefuzz_case_desc* c, const moefuzz_tensor* y,
 *                                 const moefuzz_tensor* ids, const moefuzz_tensor* w, moefuzz_tensor* out) {
 *     const int64_t n = c->tokens * c->hidden;
 *     combine<<<(n + 255) / 256, 256, 0, (cudaStream_t)c->stream>>>((const float*)y->data,
 *         (const float*)w->data, c->tokens, ids->shape[1], c->hidden, (float*)out->data);
 *     return cudaGetLastError() == cudaSuccess ? NULL : "launch failed";
 *   }
 *   ... MOEFUZZ_STAGE_COMBINE, 1,                  // stages implemented, device buffers: yes
 *
 * Build:  nvcc -O2 -Xcompiler -fPIC -shared -I<moefuzz>/include mine.cu -o libmine.so
 * Device outputs are pre-filled with the NaN canary between sentinel bands; a store outside an output,
 * a modified input and a CUDA error are findings. c->expert_weights (the array) is host memory;
 * its tensors' data are device pointers. A build without CUDA, or a machine without a GPU, refuses
 * such a plugin with a clear error (exit 2).
 *
 * Conventions, all stages:
 *  - Tensors are row-major views (moefuzz_tensor); strides count ELEMENTS of the tensor's dtype
 *    (for MOEFUZZ_DTYPE_FP4X2 an element is one byte holding two codes). Inputs are read-only.
 *  - Outputs are allocated by moefuzz and pre-filled with a NaN canary; a stage must overwrite every
 *    element it owns.
 *  - A stage returns NULL on success, or a static/global string saying why it failed (reported as
 *    a finding: the case was one the plugin said it supports).
 *  - Calls happen in a child process, one case at a time; the plugin may use threads inside a call
 *    but must not keep state across calls that changes results (claims.deterministic).
 */
#ifndef MOEFUZZ_PLUGIN_H_
#define MOEFUZZ_PLUGIN_H_

#include <stddef.h> /* NULL, for plugins */
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any incompatible change of the structs below; moefuzz refuses other versions. */
#define MOEFUZZ_PLUGIN_ABI_VERSION 1
/* The one symbol moefuzz looks up (dlsym). */
#define MOEFUZZ_PLUGIN_ENTRY_SYMBOL "moefuzz_plugin_entry"

#if defined(__GNUC__)
#define MOEFUZZ_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define MOEFUZZ_PLUGIN_EXPORT
#endif

/* ---- Tensors --------------------------------------------------------------------------------- */

typedef enum moefuzz_dtype {
  MOEFUZZ_DTYPE_NONE = 0,  /* absent tensor (data == NULL, ndim == 0) */
  MOEFUZZ_DTYPE_F32 = 1,   /* float */
  MOEFUZZ_DTYPE_BF16 = 2,  /* uint16_t bf16 bits */
  MOEFUZZ_DTYPE_FP4X2 = 3, /* uint8_t, two E2M1 codes per byte, low nibble = even column */
  MOEFUZZ_DTYPE_E4M3 = 4,  /* uint8_t FP8-E4M3 bits (block scales) */
  MOEFUZZ_DTYPE_I32 = 5    /* int32_t */
} moefuzz_dtype;

/* A view of a row-major tensor. shape/strides beyond ndim are 0. For FP4X2 the last dimension counts
   bytes (= logical columns / 2). */
typedef struct moefuzz_tensor {
  void* data;
  int32_t dtype; /* moefuzz_dtype */
  int32_t ndim;  /* 0..4 */
  int64_t shape[4];
  int64_t strides[4]; /* in elements */
} moefuzz_tensor;

/* An NVFP4 matrix [rows, cols]: codes FP4X2 [rows, cols/2], E4M3 scales [rows, cols/16] (one per 16
   consecutive elements of a row, linear layout), and the fp32 global DEquantization scale S_d.
   Value of element (r, c) = e2m1(code) * fl(e4m3(scale[r][c/16]) * S_d)  (SPEC.md 1.7). */
typedef struct moefuzz_nvfp4 {
  moefuzz_tensor codes;
  moefuzz_tensor scales;
  float global_dequant;
} moefuzz_nvfp4;

/* One expert's weights in SEMANTIC form: gate [I, H], up [I, H], down [H, I]. A kernel applies its
   backend's w13 order itself. */
typedef struct moefuzz_expert {
  moefuzz_nvfp4 gate;
  moefuzz_nvfp4 up;
  moefuzz_nvfp4 down;
} moefuzz_expert;

/* ---- The case --------------------------------------------------------------------------------- */

typedef enum moefuzz_routing_mode {
  MOEFUZZ_ROUTING_SOFTMAX = 0,         /* softmax top-k (Mixtral, Qwen3-MoE), SPEC.md 2.2 */
  MOEFUZZ_ROUTING_SIGMOID_GROUPED = 1, /* DeepSeek-V3 noaux_tc, SPEC.md 2.1 */
  MOEFUZZ_ROUTING_HASH = 2             /* DeepSeek-V4 hash layers, SPEC.md 2.5 */
} moefuzz_routing_mode;
typedef enum moefuzz_score_func {
  MOEFUZZ_SCORE_SQRT_SOFTPLUS = 0,
  MOEFUZZ_SCORE_SIGMOID = 1,
  MOEFUZZ_SCORE_SOFTMAX = 2
} moefuzz_score_func;
typedef enum moefuzz_scale_placement {
  MOEFUZZ_RSF_IN_TOPK = 0,
  MOEFUZZ_RSF_IN_COMBINE = 1
} moefuzz_scale_placement;
typedef enum moefuzz_shared_fusion {
  MOEFUZZ_SHARED_SEPARATE = 0,
  MOEFUZZ_SHARED_FUSED = 1
} moefuzz_shared_fusion;
typedef enum moefuzz_act_format { MOEFUZZ_ACT_NVFP4 = 0, MOEFUZZ_ACT_BF16 = 1 } moefuzz_act_format;
typedef enum moefuzz_act_scales {
  MOEFUZZ_ACT_SCALE_GLOBAL = 0,
  MOEFUZZ_ACT_SCALE_PER_EXPERT = 1
} moefuzz_act_scales;

/* Everything one MoE layer invocation needs: the recipe's configuration and the input tensors.
   Read-only for the plugin; valid for the duration of one call. */
typedef struct moefuzz_case_desc {
  uint32_t struct_size;       /* sizeof(moefuzz_case_desc) of the framework; fields are only appended */
  const char* profile;        /* profile the PLUGIN claims (moefuzz_plugin_v1.profile) */
  const char* recipe_profile; /* profile named in the recipe (informational) */
  /* Shapes. */
  int64_t tokens;         /* T */
  int64_t hidden;         /* H, multiple of 16 */
  int64_t inter;          /* I, multiple of 16 */
  int64_t experts;        /* E, routed experts */
  int64_t top_k;          /* k, routed slots */
  int64_t n_group;        /* expert groups (sigmoid grouped routing) */
  int64_t topk_group;     /* selected groups */
  int64_t shared_experts; /* shared experts; shared expert j has expert id E + j */
  int64_t slots;          /* top-k slots per token: k, plus shared_experts when shared_fusion == FUSED */
  int64_t hash_vocab;     /* rows of hash_table */
  /* Routing. */
  int32_t routing_mode;             /* moefuzz_routing_mode */
  int32_t hash_score;               /* moefuzz_score_func, hash routing only */
  int32_t renormalize;              /* 1: selected weights divided by their sum */
  int32_t correction_bias;          /* 1: sigmoid grouped routing adds `bias` for selection */
  int32_t scale_placement;          /* moefuzz_scale_placement as written in the recipe */
  int32_t rsf_in_topk;              /* 1: the CLAIMED profile multiplies routed_scaling_factor in top-k (the
                                       weights sum to rsf); 0: the combine multiplies it. Follow this one. */
  int32_t shared_fusion;            /* moefuzz_shared_fusion; fused shared slot weight is 1/rsf (times rsf
                                       when rsf_in_topk) */
  float routed_scaling_factor;      /* rsf as kernels take it (fp32) */
  double routed_scaling_factor_f64; /* rsf as written (some kernels compute in double) */
  /* Quantization and activation. */
  int32_t act_format;  /* moefuzz_act_format: NVFP4 (W4A4) or BF16 (W4A16) activations */
  int32_t act_scales;  /* moefuzz_act_scales: a1/a2_scale of size 1 or E + shared_experts */
  double swiglu_limit; /* +inf = no clamp; gate = min(gate, L), up = clamp(up, -L, L) */
  double swiglu_alpha; /* out = gate * sigmoid(alpha * gate) * (up + beta) */
  double swiglu_beta;
  /* Run options. */
  int32_t tactic;  /* 0 .. claims.tactics - 1 */
  int32_t threads; /* threads the plugin may use */
  int32_t device;  /* 1: every tensor's data (and each stage's operands and outputs) is a device
                      pointer on device `device_ordinal`; work goes on `stream` (plugins that asked
                      with wants_device = 1). 0: host pointers. */
  int32_t reserved0;
  /* Inputs. */
  moefuzz_tensor hidden_states;         /* BF16 [T, H] */
  moefuzz_tensor logits;                /* F32 [T, E] router logits */
  moefuzz_tensor bias;                  /* F32 [E] e_score_correction_bias, or NONE */
  moefuzz_tensor token_ids;             /* I32 [T] (hash routing), or NONE */
  moefuzz_tensor hash_table;            /* I32 [hash_vocab, k] tid2eid (hash routing), or NONE */
  const moefuzz_expert* expert_weights; /* [num_weight_experts]: routed 0..E-1, then shared */
  int64_t num_weight_experts;           /* E + shared_experts */
  moefuzz_tensor a1_scale;              /* F32 [1] or [E + shared]: FC1-input global QUANTIZATION scale S_q */
  moefuzz_tensor a2_scale;              /* F32 [1] or [E + shared]: FC2-input global QUANTIZATION scale S_q */
  /* Appended for device-memory plugins: read them only when struct_size covers them
     (struct_size >= offsetof(moefuzz_case_desc, reserved1) + sizeof(int32_t)). */
  void* stream; /* device == 1: the cudaStream_t to launch on (moefuzz synchronizes it after the
                   call); NULL for host plugins */
  int32_t
      device_ordinal; /* device == 1: the CUDA device the pointers live on (current when called); else -1 */
  int32_t reserved1;
} moefuzz_case_desc;

/* Outputs of a whole-layer run, allocated by moefuzz. */
typedef struct moefuzz_layer_out {
  moefuzz_tensor output;       /* F32 [T, H]: the layer output (bf16-valued if the profile rounds) */
  moefuzz_tensor topk_ids;     /* I32 [T, slots]: the experts the kernel selected, slot order as produced */
  moefuzz_tensor topk_weights; /* F32 [T, slots]: their weights, as the kernel used them */
} moefuzz_layer_out;

/* ---- Stages ----------------------------------------------------------------------------------- */

/* Bits of moefuzz_plugin_v1.stages. LAYER means the plugin computes everything itself (the other bits
   are then ignored). Any other subset is composed with moefuzz's CPU pipeline. */
#define MOEFUZZ_STAGE_LAYER 0x01u
#define MOEFUZZ_STAGE_ROUTE 0x02u
#define MOEFUZZ_STAGE_QUANTIZE 0x04u /* both FC1-input and FC2-input activation quantization */
#define MOEFUZZ_STAGE_GEMM1 0x08u
#define MOEFUZZ_STAGE_ACTIVATION 0x10u
#define MOEFUZZ_STAGE_GEMM2 0x20u
#define MOEFUZZ_STAGE_COMBINE 0x40u

/* Expanded rows: stages after routing work on rows = T * slots, row t * slots + s holding token t's
   slot s, for expert topk_ids[t][s]. */

/* Whole layer: fill out->output, out->topk_ids and out->topk_weights. */
typedef const char* (*moefuzz_layer_fn)(const moefuzz_case_desc* c, moefuzz_layer_out* out);
/* Routing: topk_ids I32 [T, slots], topk_weights F32 [T, slots] (see rsf_in_topk, shared_fusion). */
typedef const char* (*moefuzz_route_fn)(const moefuzz_case_desc* c, moefuzz_tensor* topk_ids,
                                        moefuzz_tensor* topk_weights);
/* NVFP4 activation quantization of rows [R, K]: input F32 (bf16-valued) [R, K], global_scale F32 [R]
   (S_q of each row's expert); codes FP4X2 [R, K/2], scales E4M3 [R, K/16], linear layout. Called for
   the FC1 input (K = H, a1 scales) and the FC2 input (K = I, a2 scales). */
typedef const char* (*moefuzz_quantize_fn)(const moefuzz_case_desc* c, const moefuzz_tensor* input,
                                           const moefuzz_tensor* global_scale, moefuzz_tensor* codes,
                                           moefuzz_tensor* scales);
/* GEMM1 per expanded row: a = quantized FC1 input (codes FP4X2 [R, H/2] + scales E4M3 [R, H/16], or
   BF16 [R, H] in a_codes with a_scales NONE for W4A16); out F32 [R, 2I] in SEMANTIC order
   [gate | up], after the profile's rounding point. */
typedef const char* (*moefuzz_gemm1_fn)(const moefuzz_case_desc* c, const moefuzz_tensor* topk_ids,
                                        const moefuzz_tensor* a_codes, const moefuzz_tensor* a_scales,
                                        moefuzz_tensor* out);
/* SiLU*mul (with the optional SwiGLU clamp): gemm1_out F32 [R, 2I] -> out F32 [R, I]. */
typedef const char* (*moefuzz_activation_fn)(const moefuzz_case_desc* c, const moefuzz_tensor* gemm1_out,
                                             moefuzz_tensor* out);
/* GEMM2 per expanded row: a = quantized FC2 input (FP4X2 [R, I/2] + E4M3 [R, I/16], or BF16 [R, I]);
   out F32 [R, H] after the profile's rounding point. */
typedef const char* (*moefuzz_gemm2_fn)(const moefuzz_case_desc* c, const moefuzz_tensor* topk_ids,
                                        const moefuzz_tensor* a_codes, const moefuzz_tensor* a_scales,
                                        moefuzz_tensor* out);
/* Combine: gemm2_out F32 [R, H], topk_ids/topk_weights [T, slots] -> output F32 [T, H] (routed sum,
   times rsf when !rsf_in_topk; the separate shared-expert add is done by moefuzz). */
typedef const char* (*moefuzz_combine_fn)(const moefuzz_case_desc* c, const moefuzz_tensor* gemm2_out,
                                          const moefuzz_tensor* topk_ids, const moefuzz_tensor* topk_weights,
                                          moefuzz_tensor* output);

/* ---- The plugin ------------------------------------------------------------------------------- */

typedef struct moefuzz_plugin_v1 {
  uint32_t abi_version;    /* MOEFUZZ_PLUGIN_ABI_VERSION */
  uint32_t struct_size;    /* sizeof(moefuzz_plugin_v1) as compiled into the plugin */
  const char* name;        /* kernel name shown in reports, non-NULL, non-empty */
  const char* profile;     /* name of the profile it claims ("flashinfer-cutlass", see `moefuzz list`) */
  const char* description; /* one line, may be NULL */
  /* Claims (checked by the REPEAT, BATCH and TACTIC invariants). */
  int32_t deterministic;   /* 1: bit-identical output on identical input */
  int32_t batch_invariant; /* 1: a token's output does not depend on other tokens */
  int32_t tactics;         /* >= 1: tile configurations selectable through moefuzz_case_desc.tactic */
  uint32_t stages;         /* MOEFUZZ_STAGE_* bits: which function pointers below are set */
  int32_t wants_device;    /* 1: give me device (CUDA) buffers; 0: host buffers */
  /* NULL when the case is in the kernel's domain, else a static string saying why not. NULL pointer
     = every case is supported. Called before the case is materialized: only the configuration
     fields of `c` are valid, every tensor is NONE and expert_weights is NULL. Runs in a child
     process like the stages. */
  const char* (*supports)(const moefuzz_case_desc* c);
  moefuzz_layer_fn layer;
  moefuzz_route_fn route;
  moefuzz_quantize_fn quantize;
  moefuzz_gemm1_fn gemm1;
  moefuzz_activation_fn activation;
  moefuzz_gemm2_fn gemm2;
  moefuzz_combine_fn combine;
} moefuzz_plugin_v1;

/* The entry point every plugin exports. Returns a pointer to static storage (never freed). */
typedef const moefuzz_plugin_v1* (*moefuzz_plugin_entry_fn)(void);
MOEFUZZ_PLUGIN_EXPORT const moefuzz_plugin_v1* moefuzz_plugin_entry(void);

#ifdef __cplusplus
}
#endif

#endif /* MOEFUZZ_PLUGIN_H_ */
