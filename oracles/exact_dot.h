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
// Activation rows are decoded once into int8 "2 x code value" tables and int32 "scale x 2^9" tables:
// within each 64-element chunk the even elements come first, then the odd ones (the order in which
// the low and high nibbles of 32 packed bytes come out of a byte shuffle), blocks padded to groups
// of 8 and their scales permuted to the order the AVX2 reduction produces. Weight rows are read in
// their PACKED form (PackedNvfp4Row: nibbles + E4M3 bytes, decoded in registers), so the layer oracle
// never materializes decoded weight matrices, and exact_dot_rows runs up to 4 activation rows against
// one weight row, decoding each weight group once. The inner loop is pure int8/int16/int32/int64 SIMD
// (AVX2 when the CPU has it, checked at run time; a scalar loop otherwise).
//
// Overflow margins of the AVX2 loops: maddubs pair sums |a|*|w| <= 2*144 (int16), two of them added
// <= 576; a block sum |S_b| <= 2304 (int32); S_b * n_a <= 2304 * 229376 < 2^30 (int32); times n_w
// < 2^48 per int64 lane and block, two blocks per lane per group: < 2^49 per group, flushed to
// __int128 every 2^12 groups (< 2^61).
//
// Example:
//   moefuzz::DecodedNvfp4 a = moefuzz::DecodedNvfp4::from_matrix(activations);   // [M, K]
//   moefuzz::DecodedNvfp4 w = moefuzz::DecodedNvfp4::from_matrix(expert.gate);   // [N, K]
//   moefuzz::ExactDot d = moefuzz::exact_dot(a, 0, w, 5);
//   double v = d.value();             // sum_i a_i w_i (no global scales), exact up to one rounding
//   double m = d.abs_value();         // sum_i |a_i w_i|, the magnitude the rounding bounds scale with
//   moefuzz::ExactDot four[4];        // rows 0..3 of a against packed row 5 of expert.gate, at once
//   moefuzz::exact_dot_rows(a, 0, 4, moefuzz::packed_row(expert.gate, 5), four);
#include <cstdint>
#include <span>
#include <utility>
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
  // Overwrite one row from packed codes (cols/2 bytes, low nibble first) and scale bytes.
  void set_packed_row(int64_t r, const uint8_t* packed, const uint8_t* scale_bytes);
  // Position of element i inside a code row (the even/odd split of each 64-element chunk).
  static int64_t code_position(int64_t i) { return (i & ~int64_t{63}) | ((i & 1) << 5) | ((i & 63) >> 1); }

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t groups() const { return groups_; }  // groups of 8 blocks (128 elements) per row
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
  std::vector<int8_t> code_, abs_code_;     // 2 * e2m1 value, rows x groups*128
  std::vector<int32_t> scale_, abs_scale_;  // e4m3 value * 2^9, rows x groups*8 (permuted)
  std::vector<uint8_t> nan_;                // a NaN scale byte (0x7F / 0xFF) in the row
};

// The exact sum as an integer count of 2^-20, plus the exact sum of magnitudes.
struct ExactDot {
  __int128 sum = 0;          // sum_i a_i w_i * 2^20
  __int128 abs_sum = 0;      // sum_i |a_i w_i| * 2^20
  bool nan = false;          // an operand row had a NaN scale
  double value() const;      // sum * 2^-20, rounded once (NaN if nan)
  double abs_value() const;  // abs_sum * 2^-20, rounded up (never below the exact magnitude)
};

// A dot as the GEMM bounds read it: its ExactDot's value() and abs_value(), both NaN when an operand
// row had a NaN scale. What a dot device returns (oracles/exact_dot_device.h): 16 bytes a dot.
struct RoundedDot {
  double value = 0;
  double abs_value = 0;
  static RoundedDot of(const ExactDot& d) { return {d.value(), d.abs_value()}; }
};

// Exact dot of row ra of `a` with row rw of `w` (same cols).
ExactDot exact_dot(const DecodedNvfp4& a, int64_t ra, const DecodedNvfp4& w, int64_t rw);

// One NVFP4 row in its stored form: cols/2 packed bytes (low nibble first), cols/16 E4M3 bytes.
struct PackedNvfp4Row {
  const uint8_t* packed = nullptr;
  const uint8_t* scales = nullptr;
  int64_t cols = 0;
};
inline PackedNvfp4Row packed_row(const Nvfp4Matrix& m, int64_t r) {
  return {m.packed.data() + r * (m.cols / 2), m.scales.data() + r * (m.cols / 16), m.cols};
}
// Exact operand i of a packed row (e2m1 * e4m3, no global scale); NaN for a NaN scale byte.
double packed_operand(PackedNvfp4Row w, int64_t i);
// True when a scale byte of the row is NaN (0x7F / 0xFF).
bool packed_row_has_nan(PackedNvfp4Row w);
// Rows ra .. ra+na-1 (1 <= na <= 4) of `a` against packed weight row `w` (same cols): out[0..na).
// Bit-identical to exact_dot against the decoded row; the weight's codes and scales are decoded once
// per group for all na rows. No allocation; lengths are checked once per call.
void exact_dot_rows(const DecodedNvfp4& a, int64_t ra, int na, PackedNvfp4Row w, ExactDot* out);
// Rows ra .. ra+na-1 (any na >= 1) against `w`, each dot as the GEMM bounds read it
// (RoundedDot::of), exact_dot_rows four rows at a time.
void rounded_dot_rows(const DecodedNvfp4& a, int64_t ra, int na, PackedNvfp4Row w, RoundedDot* out);
// The portable loop exact_dot_rows is tested against.
void exact_dot_rows_scalar(const DecodedNvfp4& a, int64_t ra, int na, PackedNvfp4Row w, ExactDot* out);
// The portable scalar loop (the reference the SIMD loop is tested against).
ExactDot exact_dot_scalar(const DecodedNvfp4& a, int64_t ra, const DecodedNvfp4& w, int64_t rw);
// True when exact_dot uses the AVX2 loop on this CPU.
bool exact_dot_uses_simd();

// W4A16 (fp32 / bf16 activations x NVFP4 weight row). Every product x_i * (e2m1*e4m3) is exact in
// double (at most 24 + 3 + 4 significant bits). The sum is accumulated in double and CERTIFIED: `exact` is
// true when a magnitude test proves no partial sum was rounded (all products are multiples of 2^q and sum
// |products| < 2^(53+q)); otherwise `error_bound` bounds the double rounding error (gamma_{K-1}(2^-53) * sum
// |products|) and callers add it to their bound.
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
// The same bound for na (1..8) weight vectors r[0..na) (each w.cols long, natural element order)
// against one packed row: the row's |codes| and scales are decoded once for all of them. Same
// inflation (gamma_{cols+2}) as weighted_abs_sum; NaN for every output when the row has a NaN scale.
// Each output is the same bits whatever na and the other rows are (the row memo relies on it).
void weighted_abs_sum_rows(const double* const* r, int na, PackedNvfp4Row w, double* out);
// The same bound for a sparse list of (column, weight) pairs: sum r * |operand(w, column)|, inflated
// by gamma_{n+2} (n = list length). NaN when a listed column's block scale is NaN.
double sparse_weighted_abs_sum(std::span<const std::pair<int32_t, double>> r, PackedNvfp4Row w);
// True when weighted_abs_sum_rows runs its AVX2 + FMA loop on this CPU (the order a dot device's flip
// sums repeat, oracles/gpu/flip_math.h).
bool weighted_abs_sum_rows_is_fused();

// The code flips of one quantized activation row: (column, weight) pairs, weight >= 0. The GEMM bounds
// sum them against a weight row with weighted_abs_sum_rows over the weights summed per column when
// they are many (flips_are_dense), else with sparse_weighted_abs_sum (oracles/stages/gemm_bounds.h).
using FlipList = std::vector<std::pair<int32_t, double>>;
inline bool flips_are_dense(size_t count, int64_t cols) { return static_cast<int64_t>(count) * 16 > cols; }

}  // namespace moefuzz
