#pragma once
// The inner product of the CPU pipeline's FP8 block GEMM (kernels/cpu/cpu_fp8.cpp, Triton fused_moe's
// block-wise branch): one activation row against up to four decoded weight rows (K contiguous each),
//
//   acc[c] = 0; per 128-element K block kb: P = the block's exact dot (E4M3 x E4M3 products are exact
//   in fp32 and any partial sum of 128 of them is exact in double), rounded to fp32 once;
//   acc[c] += fl(fl(P * sa[kb]) * sb[kb])
//
// Four columns go side by side in SIMD lanes (their products and exact double sums, then the fp32
// steps in four lanes): each column's steps are the scalar loop's, so the same bits, NaN codes aside
// (a NaN's sign may come from another operand). At a block or two per row (small K) one column's
// chain of dependent steps was most of the GEMM's time. tests/kernels/fp8_row_dot_test.cpp holds each
// loop to the scalar one.
//
// Example (row i of an expert against weight rows n0 .. n0 + 3):
//   float acc[4];
//   moefuzz::cpu::fp8_row_columns(moefuzz::cpu::fp8_row_loop(), x + i * K, sa + i * Kb, wrows, 4, K, sb,
//   acc);
#include <cstdint>

namespace moefuzz::cpu {

enum class Fp8RowLoop { kScalar, kAvx2, kAvx512 };
// The fastest loop this CPU has.
Fp8RowLoop fp8_row_loop();

// acc[0 .. cols) for x (K activation values), sa (K / 128 activation scales), w (cols weight rows of K
// values each, one after another) and sb (K / 128 weight scales, shared by the columns: one 128-row
// scale block). `loop` where this CPU has it and cols is 4, else the scalar loop. Throws
// std::logic_error unless 1 <= cols <= 4 and K is a multiple of 128.
void fp8_row_columns(Fp8RowLoop loop, const float* x, const float* sa, const float* w, int cols, int64_t K,
                     const float* sb, float* acc);

}  // namespace moefuzz::cpu
