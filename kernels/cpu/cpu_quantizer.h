#pragma once
// The CPU pipeline's own NVFP4 activation quantizer (SPEC.md §1.5), written independently of the
// oracle's: the fast-math path emulates rcp.approx.ftz as RN(1/x) with FTZ on input and output, which
// is bit-exact for step 2 (rcp(6) = RN(1/6)) and within one ulp for step 3 (SPEC.md §1.5 [MEASURED]).
// Format mutants hook in through QuantizerFlags.
//
// Example:
//   moefuzz::cpu::QuantizerFlags f{.variant = profile.quantizer, .zero_rule = profile.zero_scale_rule};
//   moefuzz::cpu::quantize_nvfp4_row(row.data(), 64, s_q, f, packed.data(), scales.data());
#include <cstdint>

#include "core/profile.h"

namespace moefuzz::cpu {

struct QuantizerFlags {
  QuantizerVariant variant = QuantizerVariant::kFastMath;
  ZeroScaleRule zero_rule = ZeroScaleRule::kVecMaxTest;
  bool e4m3_truncate = false;         // mutant: block scale rounded toward zero
  bool e4m3_no_saturation = false;    // mutant: block scale >= 464 becomes NaN (0x7F)
  bool e2m1_ties_away = false;        // mutant: E2M1 ties away from zero
  bool nibble_order_swapped = false;  // mutant: element 2j in the HIGH nibble
};

// rcp.approx.ftz.f32 emulated as RN(1/x), flushing subnormal inputs and results to signed zero.
float rcp_approx_ftz(float x);

// Quantizes `n` (multiple of 16) bf16-valued elements with quantization scale s_q: writes n/2 packed
// bytes and n/16 E4M3 scale bytes. If `scaled` is non-null it receives y_i = fl(x_i * outScale).
void quantize_nvfp4_row(const float* x, int64_t n, float s_q, const QuantizerFlags& flags, uint8_t* packed,
                        uint8_t* scales, float* scaled = nullptr);

}  // namespace moefuzz::cpu
