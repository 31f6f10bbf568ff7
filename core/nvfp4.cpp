#include "core/nvfp4.h"

namespace moefuzz {

float Nvfp4Matrix::dequant(int64_t r, int64_t c) const {
  const float scale_float = e4m3_to_float(scale(r, c / kNvfp4BlockSize)) * global_dequant;
  return e2m1_to_float(code(r, c)) * scale_float;
}

}  // namespace moefuzz
