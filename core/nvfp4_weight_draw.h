#pragma once
// The NVFP4 weight draw (core/value_profiles.cpp's expert weights, and through it the bf16, MXFP4 and
// FP8 weight draws): every block of a matrix from two 64-bit bulk draws of its stream. 16 E2M1 codes
// of 7 bits each (6 bits pick a magnitude with a quantized Gaussian's frequencies, the 7th the sign),
// one element set to the block max +-6, and a block scale by the weight profile (zero blocks, wide or
// tiny scales, kNormal's realistic spread). The case's bytes, so fixed for every seed: the pinned case
// hashes (tests/core/case_determinism_test.cpp) hold it.
//
// Example:
//   moefuzz::Nvfp4Matrix w(512, 1024);
//   moefuzz::draw_nvfp4_weights(moefuzz::Stream(seed, "weights.gate"), moefuzz::WeightProfile::kNormal, w);
#include "core/nvfp4.h"
#include "core/recipe.h"
#include "core/rng.h"

namespace moefuzz {

// Fills m's codes and block scales (not its global scale). `simd` false: one block at a time (the
// reference the tests hold the AVX-512 path to; that path runs eight blocks at a time where the CPU
// has AVX-512 with VBMI, cpu_has_avx512_vbmi()).
void draw_nvfp4_weights(const Stream& s, WeightProfile p, Nvfp4Matrix& m, bool simd = true);

}  // namespace moefuzz
