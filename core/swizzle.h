#pragma once
// Scale-factor layouts of NVFP4 block scales (SPEC.md §1.8). A scale matrix is [rows, scale_cols]
// with scale_cols = K/16.
// SWIZZLED_128x4 (fp4_quantize default, CUTLASS/FlashInfer GEMM and MoE operands): rows padded to a
//   multiple of 128, scale columns to a multiple of 4, padding bytes 0;
//   offset(m, kb) = (m/128)*(Kbp/4)*512 + (kb/4)*512 + (m%32)*16 + ((m%128)/32)*4 + kb%4,
//   i.e. sf_padded.reshape(Mp/128, 4, 32, Kbp/4, 4).permute(0, 3, 2, 1, 4) made contiguous.
//   Batched (one matrix per expert / batch entry): add batch * Mp * Kbp.
// SWIZZLED_8x4 (is_sf_8x4_layout): rows padded to a multiple of 8, columns to a multiple of 4;
//   offset(m, kb) = (m/8)*(Kbp/4)*32 + (kb/4)*32 + (m%8)*4 + kb%4,
//   i.e. sf_padded.reshape(Mp/8, 8, Kbp/4, 4).permute(0, 2, 1, 3) made contiguous.
// LINEAR: row-major [rows, scale_cols], no padding (ModelOpt checkpoints, golden files).
//
// Example:
//   auto sw = moefuzz::swizzle_128x4(linear, /*rows=*/200, /*scale_cols=*/6);  // 256 * 8 bytes
//   auto back = moefuzz::unswizzle_128x4(sw, 200, 6);                           // == linear
//   int64_t at = moefuzz::swizzled_128x4_offset(/*m=*/130, /*kb=*/5, /*scale_cols=*/6);  // 1024+512+32+1
#include <cstdint>
#include <span>
#include <vector>

namespace moefuzz {

inline int64_t padded_rows_128x4(int64_t rows) { return (rows + 127) / 128 * 128; }
inline int64_t padded_scale_cols_128x4(int64_t scale_cols) { return (scale_cols + 3) / 4 * 4; }
inline int64_t padded_rows_8x4(int64_t rows) { return (rows + 7) / 8 * 8; }
inline int64_t padded_scale_cols_8x4(int64_t scale_cols) { return padded_scale_cols_128x4(scale_cols); }

// Byte offset of scale (m, kb) in the 128x4 layout of a [rows, scale_cols] scale matrix.
inline int64_t swizzled_128x4_offset(int64_t m, int64_t kb, int64_t scale_cols) {
  const int64_t kbp = padded_scale_cols_128x4(scale_cols);
  return (m / 128) * (kbp / 4) * 512 + (kb / 4) * 512 + (m % 32) * 16 + ((m % 128) / 32) * 4 + (kb % 4);
}
// Bytes of one padded 128x4 matrix: the stride between batch entries of the batched variant.
inline int64_t swizzled_128x4_size(int64_t rows, int64_t scale_cols) {
  return padded_rows_128x4(rows) * padded_scale_cols_128x4(scale_cols);
}
// Batched 128x4 (fp4_quantize on a 3-D tensor, per-expert weight scales): matrices back to back.
inline int64_t swizzled_128x4_batched_offset(int64_t batch, int64_t m, int64_t kb, int64_t rows,
                                             int64_t scale_cols) {
  return batch * swizzled_128x4_size(rows, scale_cols) + swizzled_128x4_offset(m, kb, scale_cols);
}
// Byte offset of scale (m, kb) in the 8x4 layout.
inline int64_t swizzled_8x4_offset(int64_t m, int64_t kb, int64_t scale_cols) {
  const int64_t kbp = padded_scale_cols_8x4(scale_cols);
  return (m / 8) * (kbp / 4) * 32 + (kb / 4) * 32 + (m % 8) * 4 + (kb % 4);
}
inline int64_t swizzled_8x4_size(int64_t rows, int64_t scale_cols) {
  return padded_rows_8x4(rows) * padded_scale_cols_8x4(scale_cols);
}

// Linear -> swizzled, padding bytes 0. Throws moefuzz::InputError when linear.size() != rows * scale_cols
// or a dimension is negative.
std::vector<uint8_t> swizzle_128x4(std::span<const uint8_t> linear, int64_t rows, int64_t scale_cols);
// Inverse; padding bytes are dropped (callers that care check them separately). Throws InputError
// when swizzled.size() != swizzled_128x4_size(rows, scale_cols).
std::vector<uint8_t> unswizzle_128x4(std::span<const uint8_t> swizzled, int64_t rows, int64_t scale_cols);
std::vector<uint8_t> swizzle_8x4(std::span<const uint8_t> linear, int64_t rows, int64_t scale_cols);
std::vector<uint8_t> unswizzle_8x4(std::span<const uint8_t> swizzled, int64_t rows, int64_t scale_cols);

}  // namespace moefuzz
