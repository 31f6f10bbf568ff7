#include "core/nvfp4.h"

#include <string>

#include "core/errors.h"

namespace moefuzz {
namespace {

// 2^40 elements = 512 GiB of packed codes: far beyond any real layer, small enough that rows * cols
// cannot overflow int64 and a hostile shape fails here with a message instead of in the allocator.
constexpr int64_t kMaxElements = int64_t{1} << 40;

}  // namespace

float nvfp4_dequant_value(uint8_t code, uint8_t scale, float global_dequant, Nvfp4DequantOrder order) {
  const float element = e2m1_to_float(code);
  const float block_scale = e4m3_to_float(scale);
  if (order == Nvfp4DequantOrder::kCodeTimesScaleFirst) {
    const float exact_product = element * block_scale;
    return exact_product * global_dequant;
  }
  const float scale_float = block_scale * global_dequant;
  return element * scale_float;
}

Nvfp4Matrix::Nvfp4Matrix(int64_t r, int64_t c) : rows(r), cols(c) {
  if (r < 0 || c < 0 || c % kNvfp4BlockSize != 0) {
    throw InputError(
        "NVFP4 matrix shape [" + std::to_string(r) + ", " + std::to_string(c) +
        "]: need rows >= 0 and K a non-negative multiple of 16 (one E4M3 scale per 16 elements)");
  }
  if (c > 0 && r > kMaxElements / c) {
    throw InputError("NVFP4 matrix shape [" + std::to_string(r) + ", " + std::to_string(c) +
                     "]: more than 2^40 elements");
  }
  packed.assign(static_cast<size_t>(r * c / 2), 0);
  scales.assign(static_cast<size_t>(r * c / kNvfp4BlockSize), 0);
}

float Nvfp4Matrix::dequant(int64_t r, int64_t c) const {
  return nvfp4_dequant_value(code(r, c), scale(r, c / kNvfp4BlockSize), global_dequant);
}

void Nvfp4Matrix::dequant_row(int64_t r, float* out) const {
  const int64_t blocks = cols / kNvfp4BlockSize;
  for (int64_t b = 0; b < blocks; ++b) {
    // nvfp4_dequant_value's default order: element * fl(block scale * S_d).
    const float factor = e4m3_to_float(scales[static_cast<size_t>(r * blocks + b)]) * global_dequant;
    const uint8_t* in = packed.data() + (r * cols + b * kNvfp4BlockSize) / 2;
    float* o = out + b * kNvfp4BlockSize;
    for (int64_t j = 0; j < kNvfp4BlockSize / 2; ++j) {  // low nibble first
      o[2 * j] = e2m1_to_float(in[j] & 0xF) * factor;
      o[2 * j + 1] = e2m1_to_float(in[j] >> 4) * factor;
    }
  }
}

}  // namespace moefuzz
