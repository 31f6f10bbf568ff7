#pragma once
// The flip magnitudes of the W4A4 GEMM bounds (oracles/stages/gemm_bounds.h flip_sums), written once
// for the host and the device: the GPU dot device (oracles/gpu/gpu_exact_dots.cu) computes them with
// its dots, and the CPU unit test (tests/oracles/gpu_flip_math_test.cpp) checks the same code against
// the CPU's weighted_abs_sum_rows and sparse_weighted_abs_sum (oracles/exact_dot.h) bit for bit where
// CI has no GPU.
//
// A flip sum bounds how far the code flips of an activation row (column, weight r) can move a dot:
// sum r * |operand(w, column)|, accumulated in double and inflated by gamma_{n+2}. It is a bound, not
// an exact value, so its bits depend on the order of the additions; these loops repeat the CPU's order
// exactly:
// - dense (flips_are_dense: one weight per column): the AVX2 path of weighted_abs_sum_rows, two
//   accumulators of four lanes, element 16b + 4q + l fused-multiply-added into accumulator q % 2, lane
//   l, block after block; then the lanes (acc0 + acc1 per lane, (l0 + l1) + (l2 + l3)). The GEMM
//   stages use the device's flips only where the CPU runs that path (weighted_abs_sum_rows_is_fused).
// - sparse: sparse_weighted_abs_sum, one unfused multiply and add per list entry, in list order.
// Every other operation is a single IEEE double operation (the oracle's device code is compiled with
// --fmad=false, the host's with -ffp-contract=off), so host and device give the same bits.
//
// Example (host or device):
//   double d = moefuzz::gpu::dense_flip_sum(weights_per_column, w_packed, w_scales, cols);
//   double s = moefuzz::gpu::sparse_flip_sum(columns, weights, count, w_packed, w_scales);
#include <cmath>
#include <cstdint>
#include <limits>

#include "oracles/gpu/dot_math.h"

namespace moefuzz::gpu {

// a * b + c rounded once: the device's fma instruction, the C library's fma on the host.
MOEFUZZ_HOST_DEVICE double fused_multiply_add(double a, double b, double c) {
#if defined(__CUDA_ARCH__)
  return __fma_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// A quiet NaN (the payload does not matter: a NaN flip sum makes its GEMM element NaN).
MOEFUZZ_HOST_DEVICE double flip_nan() {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(0x7FF8000000000000ll);
#else
  return std::numeric_limits<double>::quiet_NaN();
#endif
}

// The gamma_{n} inflation both CPU loops end with: sum * (1 + n u / (1 - n u)), n = terms + 2.
MOEFUZZ_HOST_DEVICE double inflate_flip_sum(double sum, double terms) {
  const double n = terms + 2, u = 0x1p-53;
  return sum * (1 + n * u / (1 - n * u));
}

// |operand| of element i of a packed weight row without its NaN test: |2 e2m1| * |e4m3 * 2^9| * 2^-10
// (exact in double).
MOEFUZZ_HOST_DEVICE double abs_packed_operand(const uint8_t* w_packed, const uint8_t* w_scales, int64_t i,
                                              bool& nan) {
  const int32_t code = twice_e2m1((static_cast<uint32_t>(w_packed[i / 2]) >> (4 * (i & 1))) & 0x7u);
  const int32_t s = e4m3_times_512(w_scales[i / 16], nan);
  return static_cast<double>(code) * static_cast<double>(s < 0 ? -s : s) * 0x1p-10;
}

// weighted_abs_sum_rows (AVX2 + FMA path) of one dense weight vector r (cols long) against one packed
// weight row: NaN when any scale byte of the row is NaN.
MOEFUZZ_HOST_DEVICE double dense_flip_sum(const double* r, const uint8_t* w_packed, const uint8_t* w_scales,
                                          int64_t cols) {
  const int64_t blocks = cols / 16;
  for (int64_t b = 0; b < blocks; ++b)
    if ((w_scales[b] & 0x7Fu) == 0x7Fu) return flip_nan();
  double acc[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
  for (int64_t b = 0; b < blocks; ++b) {
    bool nan = false;
    const int32_t sv = e4m3_times_512(w_scales[b], nan);
    const double s = static_cast<double>(sv < 0 ? -sv : sv) * 0x1p-10;
    const uint32_t lo = load_u32(w_packed + 8 * b), hi = load_u32(w_packed + 8 * b + 4);
    for (int q = 0; q < 4; ++q) {
      const uint32_t word = q < 2 ? lo : hi;  // elements 8h .. 8h+7 sit in word h
      for (int l = 0; l < 4; ++l) {
        const int e = 4 * (q & 1) + l;  // element within the word's 8
        const int32_t code = twice_e2m1((word >> (4 * e)) & 0x7u);
        const double d = static_cast<double>(code) * s;
        acc[q & 1][l] = fused_multiply_add(r[16 * b + 4 * q + l], d, acc[q & 1][l]);
      }
    }
  }
  double lanes[4];
  for (int l = 0; l < 4; ++l) lanes[l] = acc[0][l] + acc[1][l];
  return inflate_flip_sum((lanes[0] + lanes[1]) + (lanes[2] + lanes[3]), static_cast<double>(cols));
}

// sparse_weighted_abs_sum of `count` (column, weight) entries against one packed weight row: 0 for
// none, NaN when a listed column's scale byte is NaN.
MOEFUZZ_HOST_DEVICE double sparse_flip_sum(const int32_t* columns, const double* weights, int64_t count,
                                           const uint8_t* w_packed, const uint8_t* w_scales) {
  if (count == 0) return 0;
  double s = 0;
  for (int64_t k = 0; k < count; ++k) {
    bool nan = false;
    const double op = abs_packed_operand(w_packed, w_scales, columns[k], nan);
    s += weights[k] * (nan ? flip_nan() : op);
  }
  return inflate_flip_sum(s, static_cast<double>(count));
}

}  // namespace moefuzz::gpu
