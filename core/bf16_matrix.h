#pragma once
// A bf16 weight matrix (W16A16 layers, SPEC-formats.md §2): row-major bf16 bits, [rows, cols] =
// [N, K] like Nvfp4Matrix (out features, in features).
//
// Example:
//   moefuzz::Bf16Matrix w(4, 64);                       // zeros
//   w.at(1, 3) = moefuzz::bf16_from_float(0.5f);
//   float x = w.value(1, 3);                            // 0.5f
//   std::span<const uint16_t> row = w.row(1);           // 64 bf16 values
#include <cstdint>
#include <span>
#include <vector>

#include "core/bf16.h"

namespace moefuzz {

struct Bf16Matrix {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<uint16_t> bits;  // rows * cols

  Bf16Matrix() = default;
  // Zeros. Throws moefuzz::InputError unless rows, cols >= 0 with rows * cols below 2^40 elements.
  Bf16Matrix(int64_t r, int64_t c);

  uint16_t& at(int64_t r, int64_t c) { return bits[static_cast<size_t>(r * cols + c)]; }
  uint16_t at(int64_t r, int64_t c) const { return bits[static_cast<size_t>(r * cols + c)]; }
  float value(int64_t r, int64_t c) const { return bf16_to_float(at(r, c)); }
  std::span<const uint16_t> row(int64_t r) const {
    return {bits.data() + r * cols, static_cast<size_t>(cols)};
  }
  bool empty() const { return bits.empty(); }
  bool operator==(const Bf16Matrix&) const = default;
};

}  // namespace moefuzz
