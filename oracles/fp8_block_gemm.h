#pragma once
// Expected value and derived bound of one FP8 block-scaled GEMM output element (SPEC-formats.md §1.3,
// §1.4; docs/oracle.md, "FP8 block-scaled GEMM"), from the exact per-block dots of
// oracles/fp8_block_dot.h and the fp32 scales of each K-block b: sa_b (the activation row's group
// scale) and sb_b (the weight's 128x128 block scale for this output column).
//
// Ideal value: E = sum_b P_b sa_b sb_b, P_b the exact block dot, M_b its exact sum of magnitudes.
//
// Accumulation contract (the model; its parameters are Fp8BlockGemmContract):
//  (a) Inside a block the tensor core sums the products in steps: a step takes up to kFp8MmaChunk
//      products (the K of one e4m3 mma/wgmma instruction) plus the running accumulator, aligns them
//      to the largest addend's exponent and keeps f = mma_accum_mantissa_bits bits below that
//      addend's leading bit, truncating the rest of every addend (toward zero or toward -inf); the
//      step's result is stored with f fraction bits, truncated. Each addend then loses less than
//      2^-f max|addend| and the result less than 2^-f |result|, both <= 2^-f sum|addends|: a step of
//      m addends errs by at most (m + 1) 2^-f sum|addends|. Chaining the steps (induction on
//      A + E_g <= (A + E_{g-1})(1 + c_g u), A = M_b) gives |P~_b - P_b| <= ((1+u)^N - 1) M_b <=
//      gamma_N(2^-f) M_b with N = sum_g c_g <= n_b + 2 ceil(n_b / 32) (n_b products in the block).
//      The same bound covers a sequential accumulator that truncates or rounds to f fraction bits
//      (one rounding per addition), so f = 24 covers fp32 round-to-nearest accumulation (CPU
//      kernels). A block split into several fresh-accumulator dots (Triton BK = 64: dots_per_block
//      2) errs by the sum of the parts' errors, also <= gamma_N M_b.
//      Source of f: measured. tests/python/triton_fp8_dot_probe.py runs Triton's e4m3 tl.dot (wgmma on
//      Hopper) on rows holding a largest addend 2^16 (a product of mantissas 1.0, the worst case: a
//      mantissa product in [2, 4) keeps one bit more) and one small addend 2^(16-j): on an H200 the sum
//      is exact for j <= 13 and the lost addend is truncated toward zero, with the large value as a
//      product or as the accumulator operand: kHopperFp8MmaAccumBits = 13. SageAttention2
//      (arXiv:2411.10958; thu-ml/SageAttention#287) and DeepGEMM#176 report the same e8m13; the
//      DeepSeek-V3 report (arXiv:2412.19437) §3.3.2 and §3.5.2 describe products aligned to the largest
//      exponent of 32 and "around 14 bits" kept (13 with the sign). Not a tolerance: a model whose
//      parameter the probes measure on the device (mma.sync: kernels/cuda/hardware_probes.h, 23 bits).
//  (b) Scale application per dot, both production orders: Triton t = fl(fl(P~ sa) sb) and DeepGEMM
//      t = fl(fl(sa sb) P~), each with the add separate or fused (FMA): every term passes through at
//      most 2 multiplicative roundings of fp32 RN (2^-24).
//  (c) fp32 accumulation across the J = blocks * dots_per_block terms, in any order: at most J - 1
//      additions per term, so |acc - sum_j P~_j s_j| <= gamma_{J+1}(2^-24) sum_j |P~_j| |s_j| and
//      sum_j |P~_j||s_j| <= sum_b (1 + gamma_N) M_b |sa_b sb_b|.
//  (d) Underflow (FTZ included): each fp32 operation may further lose 2^-126 absolute; an underflowed
//      fl(P~ sa) is multiplied by sb, an underflowed fl(sa sb) by P~: per term
//      2^-126 (2 + |sb| + (1 + gamma_N) M_b), doubled for the later (1 + delta) factors.
//  (e) Overflow: where an intermediate (P~ sa, sa sb, a term, a partial sum) may reach FLT_MAX, or an
//      operand code or scale is NaN or Inf, the element's bound is NaN: nothing is said (as
//      oracles/stages/gemm_bounds.h).
// Bound = sum_b gamma_N M_b |s_b| + gamma_{J+1}(2^-24) sum_b (1 + gamma_N) M_b |s_b| + the oracle's
// own double error (E summed in double: gamma_{J+1}(2^-53) sum M_b |s_b|) + floor, every partial sum
// inflated for its double rounding.
//
// Example:
//   moefuzz::Fp8BlockDot d;                      // from fp8_block_dot_rows
//   std::vector<float> sa = ..., sb = ...;       // d.blocks() scales each
//   moefuzz::Fp8GemmBound e = moefuzz::fp8_block_gemm_element(d, sa, sb, {});
//   if (!e.says_nothing()) assert(std::fabs(kernel_fp32_acc - e.expected) <= e.bound);
#include <cstdint>
#include <span>

#include "core/fp8_accum_bits.h"
#include "oracles/fp8_block_dot.h"

namespace moefuzz {

// Products one tensor-core step adds at once: the K of mma.sync m16n8k32 / wgmma k32 for e4m3.
inline constexpr int64_t kFp8MmaChunk = 32;
// kHopperFp8MmaAccumBits (bits below the leading bit the Hopper FP8 MMA accumulator keeps, (a)) is
// in core/fp8_accum_bits.h, which profiles name too.

struct Fp8BlockGemmContract {
  int mma_accum_mantissa_bits = kHopperFp8MmaAccumBits;  // f in (a); 24 for fp32 RN accumulation
  int dots_per_block = 1;  // fresh-accumulator dots per 128-block (Triton 128 / BK)
};

struct Fp8GemmBound {
  double expected = 0;  // sum_b P_b sa_b sb_b (double; its error is inside `bound`)
  double bound = 0;     // |kernel fp32 accumulator - expected| <= bound; NaN: nothing said
  bool says_nothing() const { return bound != bound; }
};

// gamma_N(2^-f), N = n + 2 ceil(n / kFp8MmaChunk): the relative (to M_b) error of one block of n
// products under contract (a).
double fp8_mma_block_error(int64_t n, int mma_accum_mantissa_bits);

// The element's expected value and bound. sa, sb: one fp32 scale per block of d (d.blocks() each).
// Throws InputError on a length mismatch or a contract outside 1 <= f <= 52, dots_per_block >= 1.
Fp8GemmBound fp8_block_gemm_element(const Fp8BlockDot& d, std::span<const float> sa,
                                    std::span<const float> sb, const Fp8BlockGemmContract& contract);

}  // namespace moefuzz
