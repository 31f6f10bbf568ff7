// Combine (SPEC.md §3.6): the weighted sum of each token's slot outputs, x rsf when the runner owns
// it, then + shared (a bf16 add). Accumulation follows Profile::combine; on the CPU every variant sums
// in slot order (the bf16-atomics variant's "any order" is fixed to slot order).
//
// The store to `out` is done in N tiles (32 or 64 columns, by tactic) from a tile-sized scratch row,
// the way a GPU epilogue stores; the Z9 mutant forgets the N mask and stores whole tiles.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/bf16.h"
#include "core/errors.h"
#include "kernels/cpu/cpu_stages.h"
#include "kernels/cpu/index_math.h"
#include "kernels/cpu/parallel.h"

namespace moefuzz::cpu {
namespace {

// The Z13 mutant's hand-written bf16 conversion `(bits + 0x7FFF) >> 16`: round to nearest, but the
// missing `+ ((bits >> 16) & 1)` makes exact ties go toward zero instead of to even. It equals RNE
// everywhere but at ties, where it always shrinks the magnitude: each output stays within the
// single-call bound (a tie is admissible both ways), yet the error is biased, and sums of bf16
// terms hit ties often (DRIFT).
float bf16_ties_toward_zero(float x) {
  if (!std::isfinite(x)) return round_to_bf16(x);
  uint32_t b;
  std::memcpy(&b, &x, 4);
  b = (b + 0x7FFFu) & 0xFFFF0000u;
  std::memcpy(&x, &b, 4);
  return x;
}

// One slot's term as Profile::combine forms it (SPEC.md §3.6), and the running sum it is added to.
inline float combine_term(CombineAccum kind, float w, float y) {
  switch (kind) {
    case CombineAccum::kBf16Products:
      return round_to_bf16(y * round_to_bf16(w));
    case CombineAccum::kBf16Atomics:
    case CombineAccum::kBf16EpilogueProducts:  // SGLang Triton: bf16(acc * w) stored by the GEMM2 epilogue
      return round_to_bf16(w * y);
    default:
      return w * y;
  }
}
inline float combine_add(CombineAccum kind, float acc, float term) {
  return kind == CombineAccum::kBf16Atomics ? round_to_bf16(acc + term) : acc + term;
}

// One slot's terms added to a tile's columns; kKind a constant, so the loop vectorizes.
template <CombineAccum kKind>
void add_slot(float* acc, const float* y, float w, int64_t width) {
  for (int64_t j = 0; j < width; ++j) acc[j] = combine_add(kKind, acc[j], combine_term(kKind, w, y[j]));
}

}  // namespace

void cpu_combine(std::span<const float> gemm2, const RoutingDecision& route, std::span<const float> shared,
                 const CpuConfig& cfg, std::span<float> out) {
  const int64_t T = route.tokens, S = route.slots, H = cfg.hidden;
  if (static_cast<int64_t>(gemm2.size()) != T * S * H)
    throw InputError("gemm2 size does not match [rows, H]");
  if (static_cast<int64_t>(out.size()) < T * H) throw InputError("output buffer smaller than [T, H]");
  const bool has_shared = !shared.empty();
  const int64_t tile = cfg.tactic == 1 ? 64 : 32;
  // Z6: a lost update on odd-numbered runs - the last slot of one token (which one depends on the run)
  // is overwritten instead of added, as an unsynchronized read-modify-write would.
  const int64_t racy_token = cfg.dev.racy_combine && (cfg.run_index % 2 == 1) ? (cfg.run_index / 2) % T : -1;
  // Z9: the store loop walks tokens from last to first, as a GPU grid may retire them, so an overhang
  // lands on a row that was already stored.
  const bool reverse = cfg.dev.store_tile_overhang;
  // The weighted sum of column h of token t, one element at a time, with every deviation.
  auto deviant_sum = [&](int64_t t, int64_t h) {
    float acc = 0.0f;
    for (int64_t s = 0; s < S; ++s) {
      if (cfg.dev.duplicate_id_drops_slot) {  // Z8: a repeated id is assumed impossible and skipped
        bool seen = false;
        for (int64_t q = 0; q < s; ++q) seen |= route.ids[t * S + q] == route.ids[t * S + s];
        if (seen) continue;
      }
      const float w = route.weights[t * S + s];
      float y = gemm2[(t * S + s) * H + h];
      // WEIGHT1 mutant: the GEMM2 epilogue already multiplied w (SGLang MUL_ROUTED_WEIGHT, a bf16
      // store) and the weighted sum-reduce multiplies it again.
      if (cfg.dev.weight_applied_twice) y = round_to_bf16(w * y);
      // WEIGHT1 mutant, the softmax top-k's renormalize=false path only (where Z4 lived too): the
      // GEMM2 epilogue multiplies the top-k probability before the routed scale (w / rsf) and the
      // sum-reduce the scaled weight again - quadratic in the weight, linear in rsf (SCALE1 holds).
      if (cfg.dev.weight_twice_unnormalized && cfg.mode == RoutingMode::kSoftmax && !cfg.renormalize &&
          route.ids[t * S + s] < cfg.experts)
        y = round_to_bf16((cfg.topk_applies_rsf ? w / cfg.rsf : w) * y);
      const float term = combine_term(cfg.combine, w, y);
      // Z6 overwrites; a bf16-atomics term is bf16 already, as the sum would be rounded to.
      acc = t == racy_token && s == S - 1 ? term : combine_add(cfg.combine, acc, term);
    }
    return acc;
  };
  // Every deviation that changes a term or the sum; without them (and off Z6's token) a tile is
  // summed slot after slot over all its columns at once, which the compiler vectorizes: each
  // column's terms and sums are the per-element loop's, in slot order.
  const bool deviant_terms =
      cfg.dev.duplicate_id_drops_slot || cfg.dev.weight_applied_twice || cfg.dev.weight_twice_unnormalized;
  // Z13: the output's bf16 conversions done by hand with ties toward zero.
  const auto to_bf16 = cfg.dev.bf16_truncated_products ? bf16_ties_toward_zero : round_to_bf16;
  auto token_job = [&](int64_t job) {
    const int64_t t = reverse ? T - 1 - job : job;
    std::vector<float> scratch(static_cast<size_t>(tile));
    for (int64_t h0 = 0; h0 < H; h0 += tile) {
      std::fill(scratch.begin(), scratch.end(), 0.0f);
      const int64_t width = std::min(tile, H - h0);
      if (!deviant_terms && t != racy_token) {
        float* acc = scratch.data();
        for (int64_t s = 0; s < S; ++s) {
          const float w = route.weights[t * S + s];
          const float* y = gemm2.data() + (t * S + s) * H + h0;
          switch (cfg.combine) {
            case CombineAccum::kBf16Products:
              add_slot<CombineAccum::kBf16Products>(acc, y, w, width);
              break;
            case CombineAccum::kBf16Atomics:
              add_slot<CombineAccum::kBf16Atomics>(acc, y, w, width);
              break;
            case CombineAccum::kBf16EpilogueProducts:
              add_slot<CombineAccum::kBf16EpilogueProducts>(acc, y, w, width);
              break;
            default:  // fp32 products and sums (kFp32SlotOrder, kFp32Unrounded)
              add_slot<CombineAccum::kFp32SlotOrder>(acc, y, w, width);
              break;
          }
        }
      } else {
        for (int64_t j = 0; j < width; ++j) scratch[j] = deviant_sum(t, h0 + j);
      }
      for (int64_t j = 0; j < width; ++j) {
        float acc = scratch[j];
        if (cfg.combine_applies_rsf) acc = acc * cfg.rsf;
        float routed = cfg.bf16_output ? to_bf16(acc) : acc;
        if (has_shared) {
          const float sh = shared[t * H + h0 + j];
          routed = cfg.bf16_output ? to_bf16(routed + sh) : routed + sh;
        }
        scratch[j] = routed;
      }
      const int64_t store = cfg.dev.store_tile_overhang ? tile : width;  // Z9: no N mask
      for (int64_t j = 0; j < store; ++j) {
        // The store through the combine's index product t x H (OVF: another token's row when narrowed
        // past 2^31); the Z9 overhang past the last row stays in the guarded view's slack.
        const int64_t idx =
            h0 + j < H ? cpu_offset(cfg, IndexProduct::kCombineOut, t, H, h0 + j, T) : t * H + h0 + j;
        if (idx < 0) continue;                               // narrowed offset left the buffer: lost
        if (idx >= static_cast<int64_t>(out.size())) break;  // memory-safe: the view ends here
        // CANARY mutant: accumulates into the output buffer as if it were zero-initialized.
        out[idx] = cfg.dev.accumulate_into_output ? out[idx] + scratch[j] : scratch[j];
      }
    }
  };
  // The overhang mutant stores serially (its point is the order); the rest splits tokens over threads.
  if (reverse) {
    for (int64_t job = 0; job < T; ++job) token_job(job);
  } else {
    parallel_for(T, cfg.threads, token_job);
  }
}

}  // namespace moefuzz::cpu
