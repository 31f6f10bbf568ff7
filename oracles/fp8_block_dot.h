#pragma once
// Exact FP8 E4M3 x E4M3 dot products per K-block of 128: the arithmetic of the FP8 block-scaled
// W8A8 GEMM oracle (SPEC-formats.md §1; docs/oracle.md, "FP8 block-scaled GEMM").
//
// Every finite E4M3 value is an integer n times 2^-9 (subnormals m * 2^-9, normals (8 + m) << (e - 1)
// times 2^-9), |n| <= 448 * 2^9 = 229376 < 2^17.9. A product of two is n_a n_w * 2^-18 with
// |n_a n_w| <= 229376^2 < 2^35.7, and a 128-element block sum is an integer multiple of 2^-18 with
// |S_b| <= 128 * 2^35.7 = 2^42.7: it fits int64 with a margin of 2^20 (and a double's 53-bit
// significand with a margin of 2^10, which is what makes the SIMD loop below exact).
//
// A block is one activation quantization group (1 x 128) and one weight scale block (128 x 128)
// along K: the kernels apply their fp32 scales per block (SPEC-formats.md §1.3 Triton
// acc += (P * sa) * sb, §1.4 DeepGEMM final += fl(sa * sb) * P), so the per-block sums are returned
// separately, with the exact per-block sums of magnitudes that the bound scales with
// (oracles/fp8_block_gemm.h). A last partial block (K not a multiple of 128) is zero-padded: the
// padding adds nothing.
//
// Activation rows are decoded once (DecodedFp8: the codes, and the values as doubles n * 2^17,
// rows padded to whole blocks; where the AVX-512 loop runs, also the same doubles interleaved 8
// blocks to a vector, 8 more bytes per element). Weight rows are read as stored (Fp8Row: E4M3
// bytes); each weight block is decoded once per call for up to 8 of the call's activation rows
// (fp8_block_dot_rows), by the fp16 trick: the E4M3 bits moved into an fp16 (sign to bit 15, the
// other seven bits shifted left by 7) are the E4M3 value times 2^-8 exactly, subnormals included
// (both formats have the same subnormal structure), converted by F16C / AVX-512. Products
// n_a 2^17 x n_w 2^-17 are the integers n_a n_w, and every partial sum of a block is an integer below
// 2^43, so the FMA accumulation in double is exact in any order: the AVX-512 and AVX2 loops
// (run-time dispatch, oracles/fp8_block_dot_loops.h) and the scalar int64 loop give identical
// results. NaN codes (0x7F, 0xFF) decode to 0 and flag the dot. Cost per multiply-add against the
// NVFP4 dots: docs/perf.md, "FP8 block dot".
//
// Example:
//   std::vector<uint8_t> act(4 * 7168), wt(7168);                 // E4M3 codes, row-major
//   moefuzz::DecodedFp8 a = moefuzz::DecodedFp8::from_codes(4, 7168, act);
//   moefuzz::Fp8BlockDot d[4];                                       // reused across calls
//   moefuzz::fp8_block_dot_rows(a, 0, 4, moefuzz::Fp8Row{wt.data(), 7168}, d);
//   double p3 = d[1].block_value(3);   // sum over k in [384, 512) of a[1][k] * w[k], exact
//   double m3 = d[1].block_abs_value(3);  // sum of |a[1][k] * w[k]| over the same block, exact
#include <cstdint>
#include <span>
#include <vector>

namespace moefuzz {

// Elements per K-block: the activation quantization group and the weight scale block along K.
inline constexpr int64_t kFp8DotBlock = 128;
// Rows of at most this many blocks run the AVX2 loop even where the AVX-512 one is available (it fills
// one lane per block of a group of 8; measured: docs/perf.md, "FP8 block dot").
inline constexpr int64_t kFp8Avx2MaxBlocks = 4;
// The unit of Fp8BlockDot's integers: every product of two E4M3 values is a multiple of 2^-18.
inline constexpr double kFp8ProductUnit = 0x1p-18;

// Rows of E4M3 activation codes decoded for the exact dot.
class DecodedFp8 {
 public:
  DecodedFp8() = default;
  DecodedFp8(int64_t rows, int64_t cols);
  // `codes`: rows x cols E4M3 bytes, row-major. Throws InputError on a size mismatch.
  static DecodedFp8 from_codes(int64_t rows, int64_t cols, std::span<const uint8_t> codes);
  // Overwrite row r (cols codes).
  void set_row(int64_t r, std::span<const uint8_t> codes);

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t blocks() const { return blocks_; }  // ceil(cols / 128)
  bool row_has_nan(int64_t r) const { return nan_[static_cast<size_t>(r)] != 0; }
  // Exact E4M3 value of element (r, i); NaN for a NaN code.
  double operand(int64_t r, int64_t i) const;

  // Raw tables, rows padded to blocks() * 128 elements (padding: code 0, value 0).
  const uint8_t* code_row(int64_t r) const { return code_.data() + r * blocks_ * kFp8DotBlock; }
  // n * 2^17 (n = value * 2^9, an integer); NaN codes give 0.
  const double* value_row(int64_t r) const { return value_.data() + r * blocks_ * kFp8DotBlock; }
  // The same values interleaved for the AVX-512 loop (oracles/fp8_block_dot_loops.h): per group of
  // 8 blocks, 128 positions of 8 doubles, one per block (position p holds element
  // detail::fp8_interleave_order()[p] of each block; missing blocks 0). Empty (nullptr) unless the
  // CPU runs that loop.
  const double* interleaved_row(int64_t r) const {
    return interleaved_.empty() ? nullptr : interleaved_.data() + r * groups() * 8 * kFp8DotBlock;
  }
  int64_t groups() const { return (blocks_ + 7) / 8; }  // groups of 8 blocks

 private:
  int64_t rows_ = 0, cols_ = 0, blocks_ = 0;
  std::vector<uint8_t> code_;
  std::vector<double> value_, interleaved_;
  std::vector<uint8_t> nan_;
};

// One E4M3 weight row as stored: cols bytes.
struct Fp8Row {
  const uint8_t* codes = nullptr;
  int64_t cols = 0;
};

// The exact per-block dot of one activation row with one weight row.
struct Fp8BlockDot {
  int64_t cols = 0;              // K; block b holds elements [128 b, min(128 b + 128, K))
  std::vector<int64_t> sum;      // per block: sum a_i w_i / 2^-18 (exact integer)
  std::vector<int64_t> abs_sum;  // per block: sum |a_i w_i| / 2^-18 (exact integer)
  bool nan = false;              // an operand code was NaN: the kernel's result is NaN

  int64_t blocks() const { return static_cast<int64_t>(sum.size()); }
  int64_t block_length(int64_t b) const {
    return b + 1 < blocks() ? kFp8DotBlock : cols - (blocks() - 1) * kFp8DotBlock;
  }
  // Exact (|sum| < 2^43 converts to double exactly; * 2^-18 is exact).
  double block_value(int64_t b) const {
    return static_cast<double>(sum[static_cast<size_t>(b)]) * kFp8ProductUnit;
  }
  double block_abs_value(int64_t b) const {
    return static_cast<double>(abs_sum[static_cast<size_t>(b)]) * kFp8ProductUnit;
  }
};

// Rows ra .. ra+na-1 (na >= 1) of `a` against weight row `w` (same cols): out[0..na). The more rows
// per call (up to 8 share one decode), the fewer times each weight block is decoded (docs/perf.md).
// Per-block sums are resized to a.blocks() (no allocation when the outputs already have that size).
// The AVX-512 loop when the CPU has AVX-512 F/BW/DQ/VL and the rows have more than kFp8Avx2MaxBlocks
// blocks, else the AVX2 loop when the CPU has AVX2, FMA and F16C, else fp8_block_dot_rows_scalar; all
// exact, so identical.
void fp8_block_dot_rows(const DecodedFp8& a, int64_t ra, int na, Fp8Row w, Fp8BlockDot* out);
// The portable int64 loop (from the codes, not the decoded doubles): the reference.
void fp8_block_dot_rows_scalar(const DecodedFp8& a, int64_t ra, int na, Fp8Row w, Fp8BlockDot* out);
// True when fp8_block_dot_rows uses a SIMD loop (AVX-512 or AVX2) on this CPU.
bool fp8_block_dot_uses_simd();

}  // namespace moefuzz
