#include "core/fp4_packing.h"

#include <stdexcept>

namespace moefuzz {

std::vector<uint8_t> pack_fp4(std::span<const uint8_t> codes) {
  if (codes.size() % 2 != 0) throw std::invalid_argument("pack_fp4: odd number of codes");
  std::vector<uint8_t> out(codes.size() / 2, 0);
  for (size_t i = 0; i < codes.size(); ++i) set_fp4_code(out.data(), static_cast<int64_t>(i), codes[i]);
  return out;
}

std::vector<uint8_t> unpack_fp4(std::span<const uint8_t> packed) {
  std::vector<uint8_t> out(packed.size() * 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = fp4_code_at(packed.data(), static_cast<int64_t>(i));
  return out;
}

}  // namespace moefuzz
