#include "core/fp4_packing.h"

#include <string>

#include "core/errors.h"

namespace moefuzz {

std::vector<uint8_t> pack_fp4(std::span<const uint8_t> codes) {
  if (codes.size() % 2 != 0) {
    throw InputError("pack_fp4: " + std::to_string(codes.size()) +
                     " codes; FP4 packs two per byte, need an even count");
  }
  std::vector<uint8_t> out(codes.size() / 2, 0);
  for (size_t i = 0; i < codes.size(); ++i) {
    if (codes[i] > 0xF) {
      throw InputError("pack_fp4: code " + std::to_string(codes[i]) + " at element " + std::to_string(i) +
                       " does not fit in 4 bits");
    }
    set_fp4_code(out.data(), static_cast<int64_t>(i), codes[i]);
  }
  return out;
}

std::vector<uint8_t> unpack_fp4(std::span<const uint8_t> packed) {
  std::vector<uint8_t> out(packed.size() * 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = fp4_code_at(packed.data(), static_cast<int64_t>(i));
  return out;
}

}  // namespace moefuzz
