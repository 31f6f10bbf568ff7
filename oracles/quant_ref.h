#pragma once
// Reference NVFP4 activation quantizer (SPEC.md §1.5), every profile variant, emulating the kernel's
// fp32 arithmetic bit-exactly in the kernel's order. Where the real kernel's arithmetic is not
// reproducible (rcp.approx.ftz is RN(1/x) in 86.8% of inputs and 1 ulp off otherwise, SPEC.md §1.5
// [MEASURED]), the reference returns the admissible alternative code as well.
//
// Example:
//   moefuzz::QuantizedRowRef q = moefuzz::quantize_row_ref(row, s_q, profile.quantizer, profile.zero_scale_rule);
//   bool ok = q.admits(i, kernel_code);    // kernel's code for element i is admissible
#include <cstdint>
#include <span>
#include <vector>

#include "core/profile.h"

namespace moefuzz {

struct QuantizedRowRef {
  std::vector<uint8_t> codes;      // one E2M1 code per element (unpacked), as the emulation computes
  std::vector<uint8_t> scales;     // one E4M3 byte per 16-element block
  std::vector<float> scaled;       // y_i = fl(x_i * outScale) before the E2M1 conversion
  std::vector<uint8_t> alt_codes;  // per element: a second admissible code, or 0xFF if none
  std::vector<uint8_t> alt_scales; // per block: a second admissible scale byte, or 0xFF if none

  // Codes 0x0 and 0x8 are equal (both zero).
  bool admits(size_t element, uint8_t code) const;
  bool admits_scale(size_t block, uint8_t scale) const;
};

// `x` holds the (bf16-valued) row, length a multiple of 16; `s_q` is the quantization global scale.
QuantizedRowRef quantize_row_ref(std::span<const float> x, float s_q, QuantizerVariant variant,
                                 ZeroScaleRule zero_rule);

}  // namespace moefuzz
