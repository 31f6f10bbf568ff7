#pragma once
// Per-token-group FP8 activation quantization (SPEC-formats.md §1.2): row r of x [rows, cols] is cut
// into groups of `group` consecutive columns (1 x 128 by default); each group gets one fp32 scale s
// with x ~ fp32(q) * s and E4M3 codes q. cols must be a multiple of the group: every production path
// asserts K % 128 == 0, so there is no partial activation group.
//
// Two production variants, bit-exact with their cited formulas (IEEE fp32 arithmetic):
//   kVllmCuda (default), vLLM csrc per_token_group_quant.cu:
//     amax = fmaxf over |x| seeded 1e-10 (fmaxf drops NaN); s = fl(amax / 448);
//     UE8M0: s = 2^ceil(log2(max(s, 1e-10))) (exponent-bit test: e8m0_ceil_by_carry),
//     q = e4m3(clamp(fl(x * (1/s))));
//     otherwise q = e4m3(clamp(fl(x / s))), clamp = fminf(fmaxf(., -448), 448) (a NaN element -> -448).
//   kDeepGemmReference, DeepGEMM deep_gemm/utils/math.py per_token_cast_to_fp8:
//     amax = max |x| (NaN propagates), clamped below at 1e-4; s = fl(amax / 448);
//     UE8M0: s = ceil_to_ue8m0(s) (ue8m0_ceil_clamped); q = torch cast of fl(x * fl(1 / s))
//     (e4m3_from_float_nosat: no saturation, |v| > 464 -> NaN).
// Inf and NaN elements follow these formulas through IEEE arithmetic (SPEC-formats.md §1.2, "NaN/Inf"):
// e.g. vLLM: an Inf element makes s = Inf, the finite elements of its group 0, the Inf element
// Inf/Inf = NaN -> -448 (0xFE).
// Triton paths (div.full, not IEEE) and sgl-kernel (s = fl(amax * RN(1/448))) are not emulated bit for
// bit: kTriton names them, and quantizes with kVllmCuda's formula (vLLM's Triton fallback
// _per_token_group_quant_fp8 writes the same formula, evaluated with div.full on the device). The
// oracle admits their results within a slack (oracles/fp8_act_envelope.h: 2 scale ulps, one code).
//
// Example:
//   std::vector<float> x(2 * 256, 1.0f);
//   x[3] = -448.0f;                                        // row 0, group 0: amax 448, s = 1
//   auto q = moefuzz::quantize_fp8_per_token_group(x, 2, 256);
//   // q.scales.size() == 4 ([2, 2] row-major); q.scale(0, 0) == 1.0f; q.code(0, 3) == 0xFE
//   float v = q.dequant(0, 3);                             // -448.0f
#include <cstdint>
#include <span>
#include <vector>

#include "core/e4m3.h"

namespace moefuzz {

inline constexpr int64_t kFp8ActivationGroup = 128;

enum class Fp8GroupQuantVariant : uint8_t { kVllmCuda, kDeepGemmReference, kTriton };

struct Fp8GroupQuantOptions {
  int64_t group = kFp8ActivationGroup;
  bool ue8m0 = false;  // scales rounded up to powers of two (DeepSeek V3.1 scale_fmt: ue8m0)
  Fp8GroupQuantVariant variant = Fp8GroupQuantVariant::kVllmCuda;
};

struct Fp8GroupQuantized {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t group = kFp8ActivationGroup;
  std::vector<uint8_t> codes;  // [rows, cols] E4M3, row-major
  std::vector<float> scales;   // [rows, cols / group] fp32, row-major (Triton fused_moe's layout)

  int64_t groups_per_row() const { return cols / group; }
  uint8_t code(int64_t r, int64_t c) const { return codes[static_cast<size_t>(r * cols + c)]; }
  float scale(int64_t r, int64_t g) const { return scales[static_cast<size_t>(r * groups_per_row() + g)]; }
  // fl(e4m3 * s): the value a GEMM multiplies (exact unless it underflows/overflows fp32).
  float dequant(int64_t r, int64_t c) const { return e4m3_to_float(code(r, c)) * scale(r, c / group); }
};

// Throws moefuzz::InputError unless rows, cols >= 0, group > 0, cols % group == 0 and
// x.size() == rows * cols.
Fp8GroupQuantized quantize_fp8_per_token_group(std::span<const float> x, int64_t rows, int64_t cols,
                                               const Fp8GroupQuantOptions& options = {});

}  // namespace moefuzz
