#pragma once
// Offsets of expanded rows into [rows, stride] buffers. The correct pipeline computes them in int64;
// the Z7 mutant (BUGZOO.md Z7: `stride * token_offset` in int32) computes the product in int32 with
// two's-complement wrap-around, which only differs once row * stride >= 2^31.
//
// Example:
//   int64_t off = moefuzz::cpu::expanded_row_offset(r, H, /*int32_product=*/false);
#include <cstdint>

namespace moefuzz::cpu {

inline int64_t expanded_row_offset(int64_t row, int64_t stride, bool int32_product) {
  if (!int32_product) return row * stride;
  // The wrapped int32 product, computed without signed-overflow UB.
  const uint32_t wrapped = static_cast<uint32_t>(row) * static_cast<uint32_t>(stride);
  return static_cast<int64_t>(static_cast<int32_t>(wrapped));
}

}  // namespace moefuzz::cpu
