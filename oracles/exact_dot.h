#pragma once
// Exact NVFP4 dot products: the heart of the GEMM oracle (docs/oracle.md, "Exact dot").
//
// An E2M1 value is m/2 with integer |m| <= 12, an E4M3 scale is n * 2^-9 with integer |n| <= 229376,
// so every decoded operand (global scale kept OUT of the inner loop) is an integer multiple of 2^-10
// and the product of two operands is an integer multiple of 2^-20 below 2^23. The dot is therefore
// an integer: per 16-block b, S_b = sum_j m_a[j] m_w[j] (|S_b| <= 2304) is multiplied by
// n_a[b] n_w[b] (< 2^36) and summed in int64 lanes, flushed to __int128 long before overflow.
// The result is exact; it is rounded once, to double, when read.
//
// Rows are decoded once into int8 "2 x code value" tables and int32 "scale x 2^9" tables (blocks
// padded to groups of 8 and permuted to the order the AVX2 reduction produces), so the inner loop is
// pure int8/int32/int64 SIMD (AVX2 when the CPU has it, checked at run time; a scalar loop otherwise).
//
// Example:
//   moefuzz::DecodedNvfp4 a = moefuzz::DecodedNvfp4::from_matrix(activations);   // [M, K]
//   moefuzz::DecodedNvfp4 w = moefuzz::DecodedNvfp4::from_matrix(expert.gate);   // [N, K]
//   moefuzz::ExactDot d = moefuzz::exact_dot(a, 0, w, 5);
//   double v = d.value();             // sum_i a_i w_i (no global scales), exact up to one rounding
//   double m = d.abs_value();         // sum_i |a_i w_i|, the magnitude the rounding bounds scale with
#include <cstdint>
#include <span>
#include <vector>

#include "core/nvfp4.h"

namespace moefuzz {

// Rows of NVFP4 data decoded for the exact dot. Operand (r, i) = code2(r,i) * scale512(r, i/16) * 2^-10.
class DecodedNvfp4 {
 public:
  DecodedNvfp4() = default;
  DecodedNvfp4(int64_t rows, int64_t cols);
  static DecodedNvfp4 from_matrix(const Nvfp4Matrix& m);
  // Packed codes (cols/2 bytes per row, low nibble first) and linear E4M3 scales (cols/16 per row).
  static DecodedNvfp4 from_packed(int64_t rows, int64_t cols, std::span<const uint8_t> packed,
                                  std::span<const uint8_t> scales);

  // Overwrite one row from unpacked codes (one per element) and scale bytes (one per block).
  void set_row(int64_t r, std::span<const uint8_t> codes, std::span<const uint8_t> scale_bytes);

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t groups() const { return groups_; }      // groups of 8 blocks (128 elements) per row
  bool row_has_nan(int64_t r) const { return nan_[static_cast<size_t>(r)] != 0; }
  // Exact operand value (r, i) without the global scale: e2m1 * e4m3.
  double operand(int64_t r, int64_t i) const;

  // Raw tables (padded row strides), used by the dot kernels.
  const int8_t* code_row(int64_t r) const { return code_.data() + r * groups_ * 128; }
  const int8_t* abs_code_row(int64_t r) const { return abs_code_.data() + r * groups_ * 128; }
  const int32_t* scale_row(int64_t r) const { return scale_.data() + r * groups_ * 8; }
  const int32_t* abs_scale_row(int64_t r) const { return abs_scale_.data() + r * groups_ * 8; }

 private:
  int64_t rows_ = 0, cols_ = 0, groups_ = 0;
  std::vector<int8_t> code_, abs_code_;       // 2 * e2m1 value, rows x groups*128
  std::vector<int32_t> scale_, abs_scale_;    // e4m3 value * 2^9, rows x groups*8 (permuted)
  std::vector<uint8_t> nan_;                  // a NaN scale byte (0x7F / 0xFF) in the row
};

// The exact sum as an integer count of 2^-20, plus the exact sum of magnitudes.
struct ExactDot {
  __int128 sum = 0;       // sum_i a_i w_i * 2^20
  __int128 abs_sum = 0;   // sum_i |a_i w_i| * 2^20
  bool nan = false;       // an operand row had a NaN scale
  double value() const;      // sum * 2^-20, rounded once (NaN if nan)
  double abs_value() const;  // abs_sum * 2^-20, rounded up (never below the exact magnitude)
};

// Exact dot of row ra of `a` with row rw of `w` (same cols).
ExactDot exact_dot(const DecodedNvfp4& a, int64_t ra, const DecodedNvfp4& w, int64_t rw);
// The portable scalar loop (the reference the SIMD loop is tested against).
ExactDot exact_dot_scalar(const DecodedNvfp4& a, int64_t ra, const DecodedNvfp4& w, int64_t rw);
// True when exact_dot uses the AVX2 loop on this CPU.
bool exact_dot_uses_simd();

// W4A16 (fp32 / bf16 activations x NVFP4 weight row). Every product x_i * (e2m1*e4m3) is exact in
// double (at most 24 + 3 + 4 significant bits). The sum is accumulated in double and CERTIFIED: `exact` is true when a
// magnitude test proves no partial sum was rounded (all products are multiples of 2^q and
// sum |products| < 2^(53+q)); otherwise `error_bound` bounds the double rounding error
// (gamma_{K-1}(2^-53) * sum |products|) and callers add it to their bound.
struct W4A16Dot {
  double value = 0;
  double abs_value = 0;
  double error_bound = 0;
  bool exact = true;
};
W4A16Dot w4a16_dot(std::span<const float> x, const DecodedNvfp4& w, int64_t rw);
// The one-operand-at-a-time loop w4a16_dot is tested against (same certification).
W4A16Dot w4a16_dot_scalar(std::span<const float> x, const DecodedNvfp4& w, int64_t rw);

// An upper bound on sum_i r_i * |operand(rw, i)| for nonnegative weights r (one per column): the
// magnitude a set of code flips can move a dot product by. Accumulated in double and inflated by
// gamma_n so rounding never makes it smaller than the exact sum. Rows with a NaN scale give NaN.
double weighted_abs_sum(std::span<const double> r, const DecodedNvfp4& w, int64_t rw);

}  // namespace moefuzz
