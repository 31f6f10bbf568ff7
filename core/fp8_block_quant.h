#pragma once
// 128x128 block-scaled FP8 weight quantization (SPEC-formats.md §1.1): W [rows = N, cols = K] gets one
// fp32 scale per 128x128 block, S [ceil(N/128), ceil(K/128)] row-major (DeepSeek-V3
// `weight_scale_inv`, a MULTIPLIER: W ~ fp32(Wq[n,k]) * S[n/128, k/128]).
//
// The formula is DeepGEMM's reference quantizer deep_gemm/utils/math.py per_block_cast_to_fp8, the
// per-token row of SPEC-formats.md §1.2 applied to a 2-D block:
//   amax = max |W| over the block (NaN propagates), clamped below at 1e-4;  S = fl(amax / 448);
//   UE8M0: S = ceil_to_ue8m0(S) (ue8m0_ceil_clamped);  Wq = torch cast of fl(W * fl(1 / S))
//   (e4m3_from_float_nosat; |v| <= 448 whenever the inputs are finite, so it never saturates).
// Partial edge blocks (N or K not a multiple of 128) are "zero-padded to 128 before calculating the
// scale" (DeepSeek-V3 README_WEIGHTS.md, SPEC-formats.md §1.1): the padding never raises amax, so a
// partial block's scale is that of its valid elements, and only valid elements get codes.
// (Older DeepGEMM versions multiplied by fl(448 / amax) instead of fl(1 / S); not emulated.)
//
// Example:
//   std::vector<float> w(130 * 200, 0.5f);      // N = 130, K = 200: scales [2, 2], three partial blocks
//   w[129 * 200 + 199] = 7.0f;                  // the last (2x72) block: amax 7
//   auto q = moefuzz::quantize_fp8_block_weight(w, 130, 200);
//   // q.scale_rows == 2, q.scale_cols == 2; q.scale(1, 1) == 7.0f / 448.0f; q.scale(0, 0) == 0.5f / 448
#include <cstdint>
#include <span>
#include <vector>

#include "core/e4m3.h"

namespace moefuzz {

inline constexpr int64_t kFp8WeightBlock = 128;

struct Fp8BlockQuantized {
  int64_t rows = 0;            // N
  int64_t cols = 0;            // K
  int64_t scale_rows = 0;      // ceil(N / 128)
  int64_t scale_cols = 0;      // ceil(K / 128)
  std::vector<uint8_t> codes;  // [N, K] E4M3, row-major
  std::vector<float> scales;   // [ceil(N/128), ceil(K/128)] fp32, row-major

  uint8_t code(int64_t n, int64_t k) const { return codes[static_cast<size_t>(n * cols + k)]; }
  float scale(int64_t bn, int64_t bk) const { return scales[static_cast<size_t>(bn * scale_cols + bk)]; }
  uint8_t& code(int64_t n, int64_t k) { return codes[static_cast<size_t>(n * cols + k)]; }
  float& scale(int64_t bn, int64_t bk) { return scales[static_cast<size_t>(bn * scale_cols + bk)]; }
  bool empty() const { return codes.empty(); }
  bool operator==(const Fp8BlockQuantized&) const = default;
  // fl(e4m3 * S): DeepSeek's weight_dequant (inference/kernel.py weight_dequant_kernel).
  float dequant(int64_t n, int64_t k) const {
    return e4m3_to_float(code(n, k)) * scale(n / kFp8WeightBlock, k / kFp8WeightBlock);
  }
};

// Throws moefuzz::InputError unless rows, cols >= 0 and w.size() == rows * cols. `simd` false: the
// codes one element at a time (core/e4m3_rows.h; the same bytes either way).
Fp8BlockQuantized quantize_fp8_block_weight(std::span<const float> w, int64_t rows, int64_t cols,
                                            bool ue8m0 = false, bool simd = true);

}  // namespace moefuzz
