#pragma once
// Hardware facts the oracle relies on, measured on the GPU itself (tests/gpu/cuda_probes_test.cpp):
// the fast-math quantizer's rcp.approx.ftz.f32 (SPEC.md §1.5) is exact on powers of two, which lets
// the oracle drop its 2^-20 outScale widening when S_q and the block scale are both powers of two;
// and what the FP8 tensor-core accumulator keeps (tests/gpu/fp8_mma_probe_test.cpp), the parameter
// mma_accum_mantissa_bits of the FP8 block GEMM bound (oracles/fp8_block_gemm.h).
//
// Example:
//   std::vector<float> x = {1.0f, 6.0f, 0x1p-9f};
//   std::vector<float> y = moefuzz::cuda::rcp_approx_ftz_on_device(x);   // {1, RN(1/6)-ish, 512}
//   std::vector<uint8_t> a(16 * 32, 0x38), b(32 * 8, 0x38);             // all ones
//   std::vector<float> d = moefuzz::cuda::fp8_mma_m16n8k32_on_device(a, b, std::vector<float>(128, 0.0f));
//   // d[i] == 32 for every i
#include <cstdint>
#include <vector>

namespace moefuzz::cuda {

// rcp.approx.ftz.f32 of every input, computed on the current CUDA device.
std::vector<float> rcp_approx_ftz_on_device(const std::vector<float>& x);

// One mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 on the current device: d = a b + c with
// a [16, 32] E4M3 bytes row-major, b [32, 8] E4M3 bytes (b[k * 8 + n]), c and d [16, 8] fp32
// row-major. The e4m3 mma needs sm_89 or later: on an older device every d is NaN (not measured).
// Throws std::invalid_argument on other sizes, std::runtime_error on a CUDA error.
std::vector<float> fp8_mma_m16n8k32_on_device(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                                              const std::vector<float>& c);

}  // namespace moefuzz::cuda
