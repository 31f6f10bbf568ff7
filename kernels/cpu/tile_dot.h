#pragma once
// The inner product of the CPU GEMMs (kernels/cpu/cpu_gemm.cpp): activation rows times a decoded
// weight tile [K, nt] (N contiguous), with per-16-element block scales on both sides, summed in the
// kernel's fp32 association:
//
//   for each column n: acc = 0; per group of `group` K blocks: part = 0;
//     per block kb: p = sum over its 16 j in order of x[j] * w[j][n]      (mul, then add: no FMA)
//                   part += p * (sa[sb] * sw[sb][n])   sb = kb, or the group's first block
//     acc += part                       (then rounded to bf16 when bf16_accumulator: a mutant)
//
// Each column's sums run in that order whatever the loop order, so the AVX2 path (two activation
// rows and 32 columns at a time: eight independent add chains where the scalar loop had two, which
// left it waiting on add latency) gives the scalar path's bits; tests/kernels/tile_dot_test.cpp
// holds it to them, ties, subnormals and signed zeros included.
//
// Example:
//   const float* x[2] = {row0.data(), row1.data()};   // K activations (codes or bf16 values)
//   const float* s[2] = {scale0.data(), scale1.data()};  // K/16 block scales
//   float* acc[2] = {out0, out1};                     // nt each
//   moefuzz::cpu::tile_dot_rows(2, x, s, tile.codes.data(), tile.scales.data(),
//                               {.K = K, .nt = 32, .group = 1}, acc, moefuzz::cpu_has_avx2());
#include <cstdint>

namespace moefuzz::cpu {

struct TileDotShape {
  int64_t K = 0;   // multiple of 16
  int64_t nt = 0;  // tile width, multiple of 16 (the AVX2 path takes multiples of 32)
  int group = 1;   // K blocks per fp32 partial sum (tactic 1: 4)
  // TACTIC mutant: every block of a group takes the group's first block scales.
  bool first_scale_of_group = false;
  // ORACLE mutant: the accumulator is rounded to bf16 after every group.
  bool bf16_accumulator = false;
};

// acc[r][0..nt) for rows r < `rows` (1 or 2): codes [K, nt] and scales [K/16, nt] are the tile;
// x[r] (K values) and s[r] (K/16 block scales) the activation rows. `simd`: the AVX2 path where
// the CPU has it (the same bits).
void tile_dot_rows(int rows, const float* const x[2], const float* const s[2], const float* codes,
                   const float* scales, const TileDotShape& shape, float* const acc[2], bool simd);

// W4A4 (E2M1 activations and weights), the same sums from twice the code values as int8 (integers in
// [-12, 12]; the format mutant's -0.5 included). A block's 16 products are multiples of 1/4 and their
// in-order fp32 sum p never rounds (|p| <= 576), so summing the integer products pairwise (AVX2
// maddubs, int16) and scaling by 1/4 gives tile_dot_rows' p bit for bit, +0 for a zero sum as its
// +0 + ... does; the block scales, groups and accumulator then take tile_dot_rows' fp32 operations.
// Weights as code pairs: pairs[k2 * nt + n] holds twice the values of K elements 2 k2 (low byte) and
// 2 k2 + 1 (high byte) of column n, so one 32-byte load gives sixteen columns' pairs.
//
// Example (two rows against a 32-column tile, only where fp4_tile_dot_available()):
//   const int8_t* x2[2] = {twice0.data(), twice1.data()};  // K values each
//   moefuzz::cpu::fp4_tile_dot_rows(2, x2, s, pairs.data(), tile.scales.data(), {.K = K, .nt = 32}, acc);
bool fp4_tile_dot_available();  // AVX2, and x86-64 at all
// Throws std::logic_error where fp4_tile_dot_available() is false or nt is not a multiple of 32.
void fp4_tile_dot_rows(int rows, const int8_t* const x2[2], const float* const s[2], const uint16_t* pairs,
                       const float* scales, const TileDotShape& shape, float* const acc[2]);

}  // namespace moefuzz::cpu
