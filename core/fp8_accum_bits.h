#pragma once
// The two accumulator widths an FP8 block-scaled GEMM contract names (Profile::fp8_mma_accum_bits;
// the model: oracles/fp8_block_gemm.h (a), bits kept below the leading bit of each step).
// Lives in core because profiles (core) and the oracle (oracles) both name them.
//
// Example:
//   moefuzz::Fp8BlockGemmContract c{.mma_accum_mantissa_bits = moefuzz::kHopperFp8MmaAccumBits};

namespace moefuzz {

// The Hopper FP8 tensor core (wgmma/mma e4m3): DeepSeek-V3 report (arXiv:2412.19437) §3.3.2 "retains
// around 14 bits", read as a 14-bit two's complement window with two integer bits: 11 below the leading
// bit (derivation: oracles/fp8_block_gemm.h (a)).
inline constexpr int kHopperFp8MmaAccumBits = 11;
// fp32 round to nearest after every addition (the CPU kernels): 24 significant bits.
inline constexpr int kFp32RoundToNearestAccumBits = 24;

}  // namespace moefuzz
