#pragma once
// What the CPU running moefuzz can do, asked once per process: the SIMD loops (oracles/exact_dot.cpp,
// dense_dot.cpp, bounds.cpp, stages/, core/elementwise_compare.cpp, the case draws in core/) check it
// before taking their AVX2, FMA or AVX-512 path and keep a portable loop for CPUs without.
//
// Example:
//   if (moefuzz::cpu_has_avx2()) return sum_avx2(x);  // a function built with target("avx2")
//   return sum_scalar(x);
namespace moefuzz {

// AVX2 (false off x86-64).
bool cpu_has_avx2();
// FMA3 (false off x86-64).
bool cpu_has_fma();
// AVX-512 F, BW, DQ and VL (false off x86-64).
bool cpu_has_avx512();
// cpu_has_avx512() and AVX-512 VBMI.
bool cpu_has_avx512_vbmi();

}  // namespace moefuzz
