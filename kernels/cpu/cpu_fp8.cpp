// The FP8 block-scaled W8A8 stages of the CPU pipeline (weight_format fp8_block, DeepSeek-V3 FP8;
// SPEC-formats.md §1): each GEMM input is quantized per token and 128-column group (dynamic scales,
// the vLLM CUDA per_token_group_quant formula of core/fp8_group_quant.h, UE8M0 when the recipe says),
// and each GEMM is Triton fused_moe's block-wise branch (SPEC-formats.md §1.3) with BK = 128:
//
//   acc = 0 (fp32); for each K block kb of 128:
//     P   = sum over the block of e4m3(a) * e4m3(w)      exact, then rounded to fp32 once
//     acc = acc + fl(fl(P * sa[row, kb]) * sb[n / 128, kb])
//   out = bf16(acc)                                      where the profile rounds after the GEMM
//
// E4M3 x E4M3 products are exact in fp32 (4 + 4 significant bits, |p| in [2^-18, 448^2]) and 128 of
// them sum exactly in double (43 bits of range), so P is the exact block dot rounded to fp32: the
// contract of an fp32 round-to-nearest in-block accumulator (profile fp8_mma_accum_bits = 24) is met
// with room. Between the GEMMs the SiLU*mul and its bf16 rounding are the bf16 path's (cpu_activation).
//
// Deviation hooks (kernels/mutants/fp8_block_mutants.cpp, SPEC-formats.md §4 F-rows): the activation
// quantizer's amax floor, UE8M0 rounding and group size, a per-tensor scale, and the weight-scale
// indexing of GEMM1's up half and of K-major scales.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <vector>

#include "core/bf16.h"
#include "core/cpu_features.h"
#include "core/e4m3.h"
#include "core/e8m0.h"
#include "core/errors.h"
#include "core/fp8_block_quant.h"
#include "core/fp8_group_quant.h"
#include "kernels/cpu/cpu_stages.h"
#include "kernels/cpu/fp8_row_dot.h"
#include "kernels/cpu/index_math.h"
#include "kernels/cpu/parallel.h"

namespace moefuzz::cpu {
namespace {

// vLLM's amax seed (SPEC-formats.md §1.2); DeepSeek's reference floor, the one F1 wrote as a ceiling.
constexpr float kVllmAmaxSeed = 1e-10f;
constexpr float kDeepSeekAmaxFloor = 1e-4f;

bool quantizer_deviates(const CpuDeviation& d) {
  return d.fp8_amax_floor_as_ceiling || d.fp8_ue8m0_to_nearest || d.fp8_act_ue8m0_ignored ||
         d.fp8_act_group_64 || d.fp8_per_tensor_act_scale;
}

// The vLLM CUDA formula with the quantizer deviations (only mutants come here; the correct kernel
// calls core's quantizer). `tensor_amax` is the whole tensor's (per-tensor mutant).
Fp8GroupQuantized deviant_quantize(std::span<const float> x, int64_t rows, int64_t K, bool ue8m0,
                                   const CpuDeviation& d) {
  Fp8GroupQuantized q;
  q.rows = rows;
  q.cols = K;
  q.group = d.fp8_act_group_64 ? 64 : kFp8ActivationGroup;
  q.codes.assign(static_cast<size_t>(rows * K), 0);
  q.scales.assign(static_cast<size_t>(rows * (K / q.group)), 0.0f);
  float tensor_amax = kVllmAmaxSeed;
  for (float v : x) tensor_amax = std::fmax(tensor_amax, std::fabs(v));
  const bool pow2 = ue8m0 && !d.fp8_act_ue8m0_ignored;  // F5: UE8M0 ignored for the activations
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < K / q.group; ++g) {
      const float* xg = x.data() + r * K + g * q.group;
      float amax = kVllmAmaxSeed;
      for (int64_t i = 0; i < q.group; ++i) amax = std::fmax(amax, std::fabs(xg[i]));
      if (d.fp8_per_tensor_act_scale) amax = tensor_amax;
      if (d.fp8_amax_floor_as_ceiling) amax = std::fmin(amax, kDeepSeekAmaxFloor);  // F1
      float s = amax / kE4m3Max;
      if (pow2) {
        // F4 (sglang#31210 class): 2^round(log2 s), the nearest power of two, instead of the ceiling.
        s = d.fp8_ue8m0_to_nearest
                ? std::exp2(std::nearbyint(std::log2(s)))
                : std::bit_cast<float>(static_cast<uint32_t>(e8m0_ceil_by_carry(std::fmax(s, kVllmAmaxSeed)))
                                       << 23);
      }
      uint8_t* codes = q.codes.data() + r * K + g * q.group;
      for (int64_t i = 0; i < q.group; ++i)
        codes[i] = e4m3_from_float_clamped(pow2 ? xg[i] * (1.0f / s) : xg[i] / s);
      q.scales[static_cast<size_t>(r * (K / q.group) + g)] = s;
    }
  return q;
}

Fp8GroupQuantized quantize(std::span<const float> x, int64_t rows, int64_t K, const CpuConfig& cfg) {
  if (quantizer_deviates(cfg.dev)) return deviant_quantize(x, rows, K, cfg.fp8_ue8m0, cfg.dev);
  return quantize_fp8_per_token_group(x, rows, K, {.ue8m0 = cfg.fp8_ue8m0, .variant = cfg.fp8_act_quant});
}

// The weight scale the GEMM applies to output row n and K block kb of `w`. `up_half_of` (GEMM1's up
// half only) is the gate matrix stacked before it in w13, for the F9 mutant.
float weight_scale(const Fp8BlockQuantized& w, const Fp8BlockQuantized* up_half_of, int64_t n, int64_t kb,
                   const CpuDeviation& d) {
  const int64_t bn = n / kFp8WeightBlock;
  if (d.fp8_scale_block_row_offset && up_half_of != nullptr) {
    // F9 (sglang#3345 class): the up half's scale block row is computed one block too early in the
    // stacked [gate; up] scale tensor, so its first block row reads gate's last one.
    if (bn == 0) return up_half_of->scale(up_half_of->scale_rows - 1, kb);
    return w.scale(bn - 1, kb);
  }
  if (d.fp8_scales_transposed) {
    // K-major scales read as MN-major: the flat [nb][kb] array indexed [kb][nb].
    return w.scales[static_cast<size_t>(kb * w.scale_rows + bn)];
  }
  return w.scale(bn, kb);
}

// The scale of activation row `read`, K block kb, as the GEMM indexes it: one per 128 columns in a
// [rows, K/128] array (a quantizer that wrote [rows, K/64] is read with the wrong stride).
float act_scale(const Fp8GroupQuantized& a, int64_t read, int64_t kb) {
  const int64_t per_row = a.cols / kFp8ActivationGroup;
  return a.scales[static_cast<size_t>(read * per_row + kb)];
}

// out[k] = the E4M3 value of codes[k], k < n: eight table lookups per AVX2 gather where the CPU has
// it (the same table, so the same values).
__attribute__((target("avx2"))) void decode_e4m3_avx2(const uint8_t* codes, int64_t n, float* out) {
  const float* table = e4m3_values().data();
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    const __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + k)));
    _mm256_storeu_ps(out + k, _mm256_i32gather_ps(table, idx, 4));
  }
  for (; k < n; ++k) out[k] = table[codes[k]];
}

void decode_e4m3(const uint8_t* codes, int64_t n, float* out) {
  static const bool simd = cpu_has_avx2();
  if (simd) return decode_e4m3_avx2(codes, n, out);
  const std::array<float, 256>& table = e4m3_values();
  for (int64_t k = 0; k < n; ++k) out[k] = table[codes[k]];
}

// out[off(r) + col0 + n] for n in [0, N) of matrix w, for the rows of one expert. Each activation row
// is decoded once and each weight row once, K contiguous: the block dots run along K, which their
// exactness allows (a tile with N contiguous had to be decoded with a store per element 32 floats
// apart, which cost more than the dots at a few rows per expert); four weight rows at a time
// (kernels/cpu/fp8_row_dot.h).
void fp8_matmul(const std::vector<int64_t>& rows, const Fp8BlockQuantized& w,
                const Fp8BlockQuantized* up_half_of, const Fp8GroupQuantized& a, IndexProduct input_product,
                IndexProduct product, int64_t ldo, int64_t col0, bool round, const CpuConfig& cfg,
                std::vector<float>& out) {
  const int64_t K = w.cols, N = w.rows, Kb = K / kFp8WeightBlock, R = static_cast<int64_t>(rows.size());
  const int64_t out_rows = static_cast<int64_t>(out.size()) / ldo;
  std::vector<float> x(static_cast<size_t>(R * K)), sa(static_cast<size_t>(R * Kb));
  for (int64_t i = 0; i < R; ++i) {
    const int64_t read =
        cpu_unit_read(cfg, input_product, rows[static_cast<size_t>(i)], K, a.rows, cfg.slots);
    decode_e4m3(a.codes.data() + read * a.cols, K, x.data() + i * K);
    for (int64_t kb = 0; kb < Kb; ++kb) sa[static_cast<size_t>(i * Kb + kb)] = act_scale(a, read, kb);
  }
  // Four weight rows at a time (a 128-row scale block holds whole groups of four).
  std::vector<float> wrows(static_cast<size_t>(4 * K)), sb(static_cast<size_t>(Kb));
  static const Fp8RowLoop loop = fp8_row_loop();
  for (int64_t n0 = 0; n0 < N; n0 += 4) {
    const int64_t cols = std::min<int64_t>(4, N - n0);
    for (int64_t c = 0; c < cols; ++c) decode_e4m3(w.codes.data() + (n0 + c) * K, K, wrows.data() + c * K);
    if (n0 % kFp8WeightBlock == 0)  // one scale row per 128 weight rows
      for (int64_t kb = 0; kb < Kb; ++kb)
        sb[static_cast<size_t>(kb)] = weight_scale(w, up_half_of, n0, kb, cfg.dev);
    for (int64_t i = 0; i < R; ++i) {
      float acc[4] = {};
      fp8_row_columns(loop, x.data() + i * K, sa.data() + i * Kb, wrows.data(), static_cast<int>(cols), K,
                      sb.data(), acc);
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t idx =
            cpu_offset(cfg, product, rows[static_cast<size_t>(i)], ldo, col0 + n0 + c, out_rows);
        if (idx < 0) continue;  // a narrowed offset left the buffer: the store is lost
        out[static_cast<size_t>(idx)] = round ? round_to_bf16(acc[c]) : acc[c];
      }
    }
  }
}

}  // namespace

Fp8GroupQuantized cpu_fp8_quantize_fc1(const Case& c, const RoutingDecision& route, const CpuConfig& cfg) {
  const int64_t H = cfg.hidden, slots = route.slots, rows = route.tokens * slots;
  if (static_cast<int64_t>(c.hidden.size()) != cfg.tokens * H)
    throw InputError("hidden size does not match [T, H]");
  // The token's row for every expanded row: dynamic quantization sees only the row itself.
  std::vector<float> x(static_cast<size_t>(rows * H));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < H; ++h)
      x[static_cast<size_t>(r * H + h)] = bf16_to_float(c.hidden[(r / slots) * H + h]);
  Fp8GroupQuantized q = quantize(x, rows, H, cfg);
  if (cfg.dev.writes_input) {
    // CANARY mutant, as on the NVFP4 path: each token's first element stored back, negated.
    auto& hidden = const_cast<std::vector<uint16_t>&>(c.hidden);
    for (int64_t t = 0; t < cfg.tokens; ++t) hidden[t * H] = bf16_from_float(-x[t * slots * H] + 1.0f);
  }
  return q;
}

Fp8GroupQuantized cpu_fp8_quantize_fc2(const RoutingDecision& route, std::span<const float> activation,
                                       const CpuConfig& cfg) {
  const int64_t I = cfg.inter, rows = route.tokens * route.slots;
  if (static_cast<int64_t>(activation.size()) != rows * I)
    throw InputError("activation size does not match [rows, I]");
  return quantize(activation, rows, I, cfg);
}

std::vector<float> cpu_fp8_gemm1(const Case& c, const RoutingDecision& route, const Fp8GroupQuantized& fc1,
                                 const CpuConfig& cfg) {
  const int64_t I = cfg.inter, rows = route.tokens * route.slots;
  const int64_t total = static_cast<int64_t>(c.experts.size());
  std::vector<float> out(static_cast<size_t>(rows * 2 * I), 0.0f);
  const auto by_expert = rows_by_expert(route, total, cfg);
  parallel_for(total, cfg.threads, [&](int64_t e) {
    if (by_expert[e].empty()) return;
    const Fp8ExpertWeights& w = c.experts[expert_read(cfg, IndexProduct::kExpertW13, e, c)].fp8;
    // The backend's w13 order only changes which half is computed first; columns stay semantic.
    const bool up_first = cfg.w13_order == W13Order::kUpGate;
    for (int half = 0; half < 2; ++half) {
      const bool is_up = (half == 0) == up_first;
      fp8_matmul(by_expert[e], is_up ? w.up : w.gate, is_up ? &w.gate : nullptr, fc1,
                 IndexProduct::kExpandedInput, IndexProduct::kGemm1Out, 2 * I, is_up ? I : 0,
                 cfg.bf16_after_gemm1, cfg, out);
    }
  });
  return out;
}

std::vector<float> cpu_fp8_gemm2(const Case& c, const RoutingDecision& route, const Fp8GroupQuantized& fc2,
                                 const CpuConfig& cfg) {
  const int64_t H = cfg.hidden, rows = route.tokens * route.slots;
  const int64_t total = static_cast<int64_t>(c.experts.size());
  std::vector<float> out(static_cast<size_t>(rows * H), 0.0f);
  const auto by_expert = rows_by_expert(route, total, cfg);
  parallel_for(total, cfg.threads, [&](int64_t e) {
    if (by_expert[e].empty()) return;
    const Fp8ExpertWeights& w = c.experts[expert_read(cfg, IndexProduct::kExpertW2, e, c)].fp8;
    fp8_matmul(by_expert[e], w.down, nullptr, fc2, IndexProduct::kFc2Input, IndexProduct::kGemm2Out, H, 0,
               cfg.bf16_after_gemm2, cfg, out);
  });
  return out;
}

}  // namespace moefuzz::cpu
