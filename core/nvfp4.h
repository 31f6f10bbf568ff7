#pragma once
// An NVFP4 matrix: packed E2M1 codes, one E4M3 scale per 16 consecutive elements of a row (linear
// layout [rows, cols/16]) and one fp32 global DEquantization scale S_d (SPEC.md §1.2-1.4, §1.7).
// The two global-scale conventions (core/global_scale.h): S_q multiplies the data before
// quantization (2688/amax), S_d = 1/S_q multiplies decoded values. This struct always stores S_d;
// quantizers take S_q.
//
// Example:
//   moefuzz::Nvfp4Matrix w(4, 32);           // 4 rows, K = 32: 16 bytes of codes, 8 scales
//   w.set_code(0, 17, 0x3);                  // element (0,17) = 1.5 * scale
//   w.scale(0, 1) = moefuzz::e4m3_from_float(2.0f);
//   float x = w.dequant(0, 17);              // fl(1.5 * fl(2.0 * S_d))
#include <cstdint>
#include <vector>

#include "core/e2m1.h"
#include "core/e4m3.h"
#include "core/fp4_packing.h"

namespace moefuzz {

inline constexpr int64_t kNvfp4BlockSize = 16;

// Where the one non-exact rounding of a dequantized element happens. e2m1 * e4m3 is exact in fp32
// (2 + 4 significant bits), so the orders differ only in which product meets S_d first; they differ by
// one ulp on elements with |e2m1| in {1.5, 3, 6} (odd significands) for some S_d.
enum class Nvfp4DequantOrder : uint8_t {
  // SPEC.md §1.7, the definition: fl(e2m1 * fl(e4m3 * S_d)). TRT-LLM E2M1AndUFP8SFScaleToFloatV2,
  // vLLM dequantize_to_dtype, ModelOpt dequantize.
  kScaleTimesGlobalFirst,
  // fl(fl(e2m1 * e4m3) * S_d): FlashInfer's pure-torch _e2m1_and_ufp8sf_scale_to_float_cpu, which the
  // golden MoE layer file (tests/golden/moe_layer_golden.json) was computed with.
  kCodeTimesScaleFirst,
};

// Value of one element with E2M1 code `code` (low 4 bits), E4M3 block scale byte `scale` and S_d.
float nvfp4_dequant_value(uint8_t code, uint8_t scale, float global_dequant,
                          Nvfp4DequantOrder order = Nvfp4DequantOrder::kScaleTimesGlobalFirst);

struct Nvfp4Matrix {
  int64_t rows = 0;
  int64_t cols = 0;             // K, a multiple of 16
  std::vector<uint8_t> packed;  // rows * cols / 2 bytes, row-major, low nibble first
  std::vector<uint8_t> scales;  // rows * cols / 16 E4M3 bytes, linear layout
  float global_dequant = 1.0f;  // S_d

  Nvfp4Matrix() = default;
  // Zero codes and zero scales. Throws moefuzz::InputError unless rows >= 0 and cols is a
  // non-negative multiple of 16 with rows * cols below 2^40 elements (the allocation is bounded).
  Nvfp4Matrix(int64_t r, int64_t c);

  int64_t blocks_per_row() const { return cols / kNvfp4BlockSize; }
  uint8_t code(int64_t r, int64_t c) const { return fp4_code_at(packed.data() + r * (cols / 2), c); }
  void set_code(int64_t r, int64_t c, uint8_t v) { set_fp4_code(packed.data() + r * (cols / 2), c, v); }
  uint8_t& scale(int64_t r, int64_t block) {
    return scales[static_cast<size_t>(r * blocks_per_row() + block)];
  }
  uint8_t scale(int64_t r, int64_t block) const {
    return scales[static_cast<size_t>(r * blocks_per_row() + block)];
  }
  // SPEC.md §1.7 (TRT-LLM E2M1AndUFP8SFScaleToFloatV2): scaleFloat = fl(e4m3 * S_d), then e2m1 * scaleFloat.
  float dequant(int64_t r, int64_t c) const;
  // out[c] = dequant(r, c) for every column c, bit for bit, with each block's factor formed once (the
  // draws of the other weight formats decode whole rows).
  void dequant_row(int64_t r, float* out) const;
  bool operator==(const Nvfp4Matrix&) const = default;
};

}  // namespace moefuzz
