#pragma once
// The two accumulator widths an FP8 block-scaled GEMM contract names (Profile::fp8_mma_accum_bits;
// the model: oracles/fp8_block_gemm.h (a), bits kept below the leading bit of each step).
// Lives in core because profiles (core) and the oracle (oracles) both name them.
//
// Example:
//   moefuzz::Fp8BlockGemmContract c{.mma_accum_mantissa_bits = moefuzz::kHopperFp8MmaAccumBits};

namespace moefuzz {

// The Hopper FP8 tensor core as Triton's e4m3 tl.dot drives it (wgmma): 13 bits below the leading bit
// of the largest addend, lost bits truncated toward zero, measured on an H200 by
// tests/python/triton_fp8_dot_probe.py (2^16 + 2^(16-j) exact for j <= 13, for products and for the
// accumulator operand); SageAttention2 (arXiv:2411.10958) and DeepGEMM#176 report the same e8m13, the
// DeepSeek-V3 report (arXiv:2412.19437) §3.3.2 "around 14 bits" with the sign. The model and its bound:
// oracles/fp8_block_gemm.h (a); mma.sync keeps 23 (tests/gpu/fp8_mma_probe_test.cpp).
inline constexpr int kHopperFp8MmaAccumBits = 13;
// fp32 round to nearest after every addition (the CPU kernels): 24 significant bits.
inline constexpr int kFp32RoundToNearestAccumBits = 24;

}  // namespace moefuzz
