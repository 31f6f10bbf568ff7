// Routing: one warp per token; softmax top-k, sigmoid + bias grouped top-k, and hash routing
// (SPEC.md §2.1, §2.2, §2.5). Top-k is an iterative warp argmax over 64-bit keys
// (ordered value << 32 | ~index), so equal values go to the LOWER expert index (TieRule::
// kLowerIndexWins), -0 < +0 as in cub's TwiddleIn, and the result is deterministic.
#include <cuda_runtime.h>

#include <cmath>

#include "core/recipe.h"
#include "kernels/cuda/launch.h"

namespace moefuzz::cuda {
namespace {

constexpr int kWarp = 32;

__device__ __forceinline__ uint32_t ordered_bits(float f) {
  const uint32_t u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ uint64_t topk_key(float v, int idx) {
  return (static_cast<uint64_t>(ordered_bits(v)) << 32) | (0xFFFFFFFFu - static_cast<uint32_t>(idx));
}
__device__ __forceinline__ int key_index(uint64_t key) {
  return static_cast<int>(0xFFFFFFFFu - static_cast<uint32_t>(key));
}
__device__ __forceinline__ uint64_t warp_max_u64(uint64_t v) {
  for (int o = 16; o > 0; o >>= 1) {
    const uint64_t other = __shfl_xor_sync(0xFFFFFFFFu, v, o);
    v = other > v ? other : v;
  }
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {  // fixed butterfly: deterministic
  for (int o = 16; o > 0; o >>= 1) v = __fadd_rn(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
  return v;
}

__device__ __forceinline__ float sigmoid_f(float x) { return __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-x))); }
__device__ __forceinline__ float sqrt_softplus_f(float x) {
  return sqrtf(__fadd_rn(fmaxf(x, 0.0f), log1pf(expf(-fabsf(x)))));
}

// Softmax over the token's E logits into `score` (probabilities: exp(x - max) * (1/sum)).
__device__ void softmax_row(const float* x, float* score, int E, int lane) {
  float m = -INFINITY;
  for (int e = lane; e < E; e += kWarp) m = fmaxf(m, x[e]);
  m = warp_max(m);
  float s = 0.0f;
  for (int e = lane; e < E; e += kWarp) {
    const float v = expf(__fsub_rn(x[e], m));
    score[e] = v;
    s = __fadd_rn(s, v);
  }
  s = warp_sum(s);
  const float inv = __frcp_rn(s);
  __syncwarp();
  for (int e = lane; e < E; e += kWarp) score[e] = __fmul_rn(score[e], inv);
  __syncwarp();
}

struct RoutingArgs {
  PipelineConfig cfg;
  DeviceBuffers b;
};

constexpr int kMaxGroups = 256;

// Dynamic shared memory: score[E], select[E], taken[E] (bytes).
__global__ void routing_kernel(RoutingArgs a) {
  extern __shared__ float smem[];
  const PipelineConfig& cfg = a.cfg;
  const int E = static_cast<int>(cfg.experts);
  const int K = static_cast<int>(cfg.top_k);
  const int64_t t = blockIdx.x;
  const int lane = threadIdx.x;
  float* score = smem;
  float* select = smem + E;
  unsigned char* taken = reinterpret_cast<unsigned char*>(select + E);
  const float* x = a.b.logits + t * E;
  const int64_t S = cfg.all_slots();
  int32_t* ids = a.b.ids + t * S;
  float* w = a.b.weights + t * S;
  const auto mode = static_cast<RoutingMode>(cfg.mode);

  for (int e = lane; e < E; e += kWarp) taken[e] = 0;
  if (mode == RoutingMode::kSoftmax) {
    softmax_row(x, score, E, lane);
    for (int e = lane; e < E; e += kWarp) select[e] = score[e];
  } else if (mode == RoutingMode::kSigmoidGrouped) {
    for (int e = lane; e < E; e += kWarp) {
      const float s = sigmoid_f(x[e]);
      score[e] = s;
      select[e] = cfg.has_bias ? __fadd_rn(s, a.b.bias[e]) : s;
    }
    __syncwarp();
    const int groups = static_cast<int>(cfg.n_group);
    if (groups > 1) {
      const int G = E / groups;
      // Group score: sum of the top-2 biased scores (with bias), else the max (SPEC.md §2.1).
      // Each lane scores groups lane, lane+32, ...; then lane 0 selects topk_group of them
      // serially (lower group index wins ties) and masks the rest to -inf.
      __shared__ float group_score[kMaxGroups];
      __shared__ unsigned char group_keep[kMaxGroups];
      for (int g = lane; g < groups; g += kWarp) {
        float best = -INFINITY, second = -INFINITY;
        for (int j = 0; j < G; ++j) {
          const float v = select[g * G + j];
          if (v > best) {
            second = best;
            best = v;
          } else if (v > second)
            second = v;
        }
        group_score[g] = (cfg.has_bias && G >= 2) ? __fadd_rn(best, second) : best;
        group_keep[g] = 0;
      }
      __syncwarp();
      if (lane == 0) {
        for (int r = 0; r < cfg.topk_group; ++r) {
          int bi = -1;
          uint64_t bk = 0;
          for (int g = 0; g < groups; ++g) {
            if (group_keep[g]) continue;
            const uint64_t k = topk_key(group_score[g], g);
            if (bi < 0 || k > bk) {
              bk = k;
              bi = g;
            }
          }
          group_keep[bi] = 1;
        }
      }
      __syncwarp();
      for (int e = lane; e < E; e += kWarp)
        if (!group_keep[e / G]) select[e] = -INFINITY;
    }
  } else {  // kHash: experts from the table, weights from the scores
    const auto fn = static_cast<ScoreFunc>(cfg.hash_score);
    if (fn == ScoreFunc::kSoftmax) {
      softmax_row(x, score, E, lane);
    } else {
      for (int e = lane; e < E; e += kWarp)
        score[e] = fn == ScoreFunc::kSigmoid ? sigmoid_f(x[e]) : sqrt_softplus_f(x[e]);
    }
  }
  __syncwarp();

  // Selection.
  if (mode == RoutingMode::kHash) {
    if (lane == 0) {
      const int64_t row = a.b.token_ids[t];
      for (int j = 0; j < K; ++j) ids[j] = a.b.hash_table[row * K + j];
    }
  } else {
    for (int j = 0; j < K; ++j) {
      uint64_t best = 0;
      for (int e = lane; e < E; e += kWarp)
        if (!taken[e]) {
          const uint64_t k = topk_key(select[e], e);
          best = k > best ? k : best;
        }
      best = warp_max_u64(best);
      if (lane == 0) {
        const int e = key_index(best);
        ids[j] = e;
        taken[e] = 1;
      }
      __syncwarp();
    }
  }
  __syncwarp();

  // Weights (lane 0: k is small; slot order fixes the fp32 sum order).
  if (lane == 0) {
    const bool softmax_scores =
        mode == RoutingMode::kSoftmax ||
        (mode == RoutingMode::kHash && static_cast<ScoreFunc>(cfg.hash_score) == ScoreFunc::kSoftmax);
    const bool renorm = cfg.renormalize && !(mode == RoutingMode::kHash && softmax_scores);
    float sum = 0.0f;
    for (int j = 0; j < K; ++j) {
      w[j] = score[ids[j]];
      sum = __fadd_rn(sum, w[j]);
    }
    const float denom = __fadd_rn(sum, cfg.renorm_epsilon);
    // Every selected score underflowed under a 0-epsilon profile (`vllm`): 0/0. The weights are then
    // unspecified but must be finite (FINITE, STRUCT), so they are 0, as in the CPU kernel
    // (kernels/cpu/cpu_routing.cpp). A positive epsilon never gets here.
    const bool all_underflowed = denom == 0.0f;
    for (int j = 0; j < K; ++j) {
      float v = renorm ? (all_underflowed ? 0.0f : __fdiv_rn(w[j], denom)) : w[j];
      if (cfg.rsf_in_topk) v = __fmul_rn(v, cfg.rsf);
      w[j] = v;
    }
    for (int j = 0; j < cfg.fused_shared; ++j) {
      // Net contribution 1.0: weight 1/rsf, multiplied by rsf where rsf is applied (SPEC.md §2.4).
      float v = cfg.fused_shared_weight_inv_rsf ? __fdiv_rn(1.0f, cfg.rsf) : 1.0f;
      if (cfg.rsf_in_topk && cfg.fused_shared_weight_inv_rsf) v = __fmul_rn(v, cfg.rsf);
      ids[K + j] = static_cast<int32_t>(cfg.experts + j);
      w[K + j] = v;
    }
    for (int j = 0; j < cfg.separate_shared; ++j) {
      ids[K + cfg.fused_shared + j] = static_cast<int32_t>(cfg.experts + cfg.fused_shared + j);
      w[K + cfg.fused_shared + j] = 1.0f;
    }
  }
}

}  // namespace

void launch_routing(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s) {
  if (cfg.tokens == 0) return;
  const size_t smem = static_cast<size_t>(cfg.experts) * (2 * sizeof(float) + 1);
  routing_kernel<<<static_cast<unsigned>(cfg.tokens), kWarp, smem, s>>>(RoutingArgs{cfg, b});
  MOEFUZZ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace moefuzz::cuda
