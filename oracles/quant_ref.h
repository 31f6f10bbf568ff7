#pragma once
// Reference NVFP4 activation quantizer (SPEC.md §1.5), every profile variant, emulating the kernel's
// fp32 arithmetic bit-exactly in the kernel's order. Where the real kernel's arithmetic is not
// reproducible (rcp.approx.ftz is RN(1/x) in 86.8% of inputs and 1 ulp off otherwise, SPEC.md §1.5
// [MEASURED]), the reference returns the admissible alternative code as well.
//
// Variants (QuantizerVariant, core/profile.h), per 16-element block with amax = max|x_i|:
//   kFastMath  sf32 = fl(S * fl(amax * rcp(6)))            rcp(6) = 0x3E2AAAAB = RN(1/6) [MEASURED]
//              outScale = test ? rcp(fl(sfd * rcp(S))) : 0  rcp = rcp.approx.ftz, emulated as RN(1/x)
//              with FTZ (subnormal in -> +Inf, subnormal out -> 0); alt codes cover its 1-ulp error.
//   kExact     sf32 = amax != 0 ? fl(amax * fl(S * RN(1/6))) : 0
//              outScale = test ? fminf(RN(1 / fl(sfd * RN(1/S))), FLT_MAX) : 0     (bit-exact)
//   kReference the torch references (vLLM ref_nvfp4_quant, FlashInfer ref_fp4_quant):
//              sf32 = fl(S * fl(amax * RN(1/6))), clamped to 448, torch E4M3 cast (RN);
//              p = fl(sfd * RN(1/S)); outScale = p != 0 ? RN(1/p) : 0; y clamped to [-6, 6].
//              The zero test is always the reference's own (on p); `zero_rule` is ignored.
//              FlashInfer's ref_fp4_quant omits the 448 clamp, so torch's cast turns sf32 > 464 into
//              a NaN scale (0x7F). That is a torch artefact of a test helper, not the contract of the
//              kernel it stands for (fp4_quantize saturates), and never happens when S is calibrated on
//              the same tensor (golden README). kReference therefore always clamps (vLLM's behaviour).
//   test: ZeroScaleRule::kVecMaxTest (amax != 0, FlashInfer/TRT-LLM) or kScaleTest (sfd != 0,
//         vLLM/sgl-kernel). Under kVecMaxTest an E4M3-underflowed block (sfd = 0, amax != 0) gets
//         outScale = rcp(0) = +Inf (fast math: codes +-6, and 0*Inf = NaN -> +6) or FLT_MAX (exact).
// Elements: y = fl(x * outScale), code = cvt.rn.satfinite.e2m1(y) (|y| > 5 -> 6, NaN -> +6).
//
// A block with a NaN input is marked `unverified`: __hmax2's NaN behaviour and cvt's NaN output are
// [UNVERIFIED] (SPEC.md §5), so every code and scale is admitted there and the caller decides.
//
// Example:
//   moefuzz::QuantizedRowRef q = moefuzz::quantize_row_ref(row, s_q, profile.quantizer,
//   profile.zero_scale_rule); bool ok = q.admits(i, kernel_code);    // kernel's code for element i is
//   admissible
#include <cstdint>
#include <span>
#include <vector>

#include "core/profile.h"

namespace moefuzz {

struct QuantizedRowRef {
  std::vector<uint8_t> codes;       // one E2M1 code per element (unpacked), as the emulation computes
  std::vector<uint8_t> scales;      // one E4M3 byte per 16-element block
  std::vector<float> scaled;        // y_i = fl(x_i * outScale) before the E2M1 conversion
  std::vector<uint8_t> alt_codes;   // per element: a second admissible code, or 0xFF if none
  std::vector<uint8_t> alt_scales;  // per block: a second admissible scale byte, or 0xFF if none
  std::vector<uint8_t> unverified;  // per block: 1 where the kernel's behaviour is unspecified (NaN input)

  // Codes 0x0 and 0x8 are equal (both zero).
  bool admits(size_t element, uint8_t code) const;
  bool admits_scale(size_t block, uint8_t scale) const;
};

// `x` holds the (bf16-valued) row, length a multiple of 16; `s_q` is the quantization global scale.
// Throws InputError if the length is not a multiple of 16.
QuantizedRowRef quantize_row_ref(std::span<const float> x, float s_q, QuantizerVariant variant,
                                 ZeroScaleRule zero_rule);

// Relative error window of the fast-math element value y (derived in quant_ref.cpp): an element whose
// |y| is within kFastMathYRelWindow * threshold of an E2M1 decision threshold admits both neighbours.
inline constexpr double kFastMathYRelWindow = 0x1p-21 + 0x1p-22;  // 6 * 2^-23

}  // namespace moefuzz
