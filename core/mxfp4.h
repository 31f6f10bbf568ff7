#pragma once
// MXFP4 (OCP Microscaling v1.0; SPEC-formats.md §3): 32 consecutive elements of a row share one E8M0
// scale (core/e8m0.h); each element is an E2M1 code (core/e2m1.h); value = e2m1 * 2^(scale - 127),
// scale 0xFF makes the whole block NaN (the OCP decode, SPEC-formats.md §3.3 first row).
//
// Quantization: two production rules for the block scale (SPEC-formats.md §3.2), selected by
// Mxfp4ScaleRule:
//   kTritonRoundUp (default): triton_kernels downcast_to_mxfp, DequantScaleRoundingMode.ROUND_UP (the
//     library whose matmul_ogs vLLM and SGLang run for gpt-oss on Hopper, §3.5): d = fl(amax / 6);
//     scale = e8m0_ceil_by_carry(d) = 2^ceil(log2 d); multiplier m = 0 when the scale's fp32 is 0
//     (d = 0, or a NaN amax), else fl(1 / 2^(scale-127)) (0 when the scale is 0xFF); codes =
//     RN-even E2M1 of fl(x * m), saturating at 6 (e2m1_from_float). Never clips: |x| * m <= 6.
//     amax drops NaN elements (fmaxf, as Triton's tl.max with its default propagate_nan; [DERIVED]);
//     such an element becomes fl(NaN * m) -> code 0x7 (+6), Inf amax -> scale 0xFF (NaN block).
//     d is the IEEE quotient here; Triton's `/` is div.full.f32 (<= 2 ulp), which can move d across a
//     power of two only when amax / 6 is within 2 ulp of one (SPEC-formats.md §1.2, §5.2).
//   kOcp: the OCP rule as the MX authors' library computes it (microxcaling mx_ops.py
//     _shared_exponents/_quantize_mx): e = floor(log2 amax) - 2 (amax = 0 counts as 2^-126), e < -127
//     clamps to -127, a NaN or Inf amax gives NaN (0xFF); codes = E2M1 of x / 2^e rounded half AWAY
//     from zero (e2m1_from_float_ties_away), saturating at 6. Values of |x| / 2^e in (6, 8) clip to 6.
//     floor(log2) is exact here; microxcaling's float log2 can round up for amax just below a power of
//     two (the bug class SPEC-formats.md §4 F4 names for UE8M0).
// Partial last block (cols not a multiple of 32): the torch twin of the Triton quantizer pads with -1
// for the max and 0 for the values (SPEC-formats.md §3.2), so the scale comes from the valid elements
// only and only valid elements get codes. Both rules use that.
//
// Example:
//   std::vector<float> x(32, 0.0f);
//   x[0] = 6.0f; x[1] = -0.75f;                      // amax 6: d = 1, scale 2^0 (code 127)
//   auto q = moefuzz::quantize_mxfp4(x, 1, 32);
//   // q.scale(0, 0) == 127; q.code(0, 0) == 0x7 (6); q.code(0, 1) == 0xA (-1: 0.75 ties to even)
//   float v = q.dequant(0, 1);                       // -1.0f
#include <cstdint>
#include <span>
#include <vector>

#include "core/e2m1.h"
#include "core/e8m0.h"

namespace moefuzz {

inline constexpr int64_t kMxfp4BlockSize = 32;

enum class Mxfp4ScaleRule : uint8_t { kTritonRoundUp, kOcp };

struct Mxfp4Quantized {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t scale_cols = 0;       // ceil(cols / 32)
  std::vector<uint8_t> codes;   // [rows, cols] E2M1 codes, one per byte (pack with core/fp4_packing.h)
  std::vector<uint8_t> scales;  // [rows, ceil(cols / 32)] E8M0 bytes, row-major (gpt-oss *.scales)

  uint8_t code(int64_t r, int64_t c) const { return codes[static_cast<size_t>(r * cols + c)]; }
  uint8_t& code(int64_t r, int64_t c) { return codes[static_cast<size_t>(r * cols + c)]; }
  uint8_t& scale(int64_t r, int64_t block) { return scales[static_cast<size_t>(r * scale_cols + block)]; }
  bool empty() const { return codes.empty(); }
  bool operator==(const Mxfp4Quantized&) const = default;
  uint8_t scale(int64_t r, int64_t block) const {
    return scales[static_cast<size_t>(r * scale_cols + block)];
  }
  // e2m1 * decoded scale in fp32: exact unless it overflows (code 0xFE times 6 is +-Inf). The OCP decode
  // by default (a NaN block for scale 0xFF); the other paths' decodes of codes 0 and 0xFF via `decode`
  // (kExponentShift: code 0 gives +-0, 0xFF gives +-Inf, or NaN for a zero element).
  float dequant(int64_t r, int64_t c, E8m0Decode decode = E8m0Decode::kOcp) const;
};

// Throws moefuzz::InputError unless rows, cols >= 0 and x.size() == rows * cols.
Mxfp4Quantized quantize_mxfp4(std::span<const float> x, int64_t rows, int64_t cols,
                              Mxfp4ScaleRule rule = Mxfp4ScaleRule::kTritonRoundUp);

}  // namespace moefuzz
