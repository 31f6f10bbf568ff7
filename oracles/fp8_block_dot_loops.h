#pragma once
// The loops behind fp8_block_dot_rows (oracles/fp8_block_dot.h), one per instruction set, chosen at
// run time: the fastest one the CPU has. Every loop computes the same exact integers (the header's
// argument: every product and partial sum is an integer below 2^43, exact in double in any order),
// so they are interchangeable bit for bit; tests run each one the CPU has against the scalar loop.
//
// Example:
//   for (moefuzz::Fp8DotLoop l : {moefuzz::Fp8DotLoop::kAvx512, moefuzz::Fp8DotLoop::kAvx2})
//     if (moefuzz::fp8_block_dot_loop_available(l)) moefuzz::fp8_block_dot_rows_with(l, a, 0, 4, w, d);
#include <cstdint>

#include "oracles/fp8_block_dot.h"

namespace moefuzz {

enum class Fp8DotLoop {
  kScalar,  // portable int64 loop from the codes (fp8_block_dot_rows_scalar)
  kAvx2,    // AVX2 + FMA + F16C: 4 double lanes, weight blocks decoded to a 2 KB buffer
  kAvx512,  // AVX-512 F/BW/DQ/VL: 8 double lanes, weight blocks decoded in registers
};

// Name for logs and test output: "scalar", "avx2", "avx512".
const char* fp8_dot_loop_name(Fp8DotLoop loop);
// True when this CPU (and OS) runs the loop.
bool fp8_block_dot_loop_available(Fp8DotLoop loop);
// The loop fp8_block_dot_rows uses here: the widest available.
Fp8DotLoop fp8_block_dot_best_loop();
// fp8_block_dot_rows through one given loop (same checks and outputs). Throws InputError when the
// loop is not available on this CPU.
void fp8_block_dot_rows_with(Fp8DotLoop loop, const DecodedFp8& a, int64_t ra, int na, Fp8Row w,
                             Fp8BlockDot* out);

namespace detail {
// The AVX-512 loop (oracles/fp8_block_dot_avx512.cpp); outputs already sized, arguments checked.
void fp8_block_dot_rows_avx512(const DecodedFp8& a, int64_t ra, int na, Fp8Row w, Fp8BlockDot* out);
// The element order of the AVX-512 loop's interleaved groups (128 entries: position p holds element
// order[p] of each block), the order its byte transposition of weight blocks produces. Only where
// that loop is available.
const uint8_t* fp8_interleave_order();
}  // namespace detail

}  // namespace moefuzz
