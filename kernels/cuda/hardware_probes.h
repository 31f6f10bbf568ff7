#pragma once
// Hardware facts the oracle relies on, measured on the GPU itself (tests/gpu/cuda_probes_test.cpp):
// the fast-math quantizer's rcp.approx.ftz.f32 (SPEC.md §1.5) is exact on powers of two, which lets
// the oracle drop its 2^-20 outScale widening when S_q and the block scale are both powers of two.
//
// Example:
//   std::vector<float> x = {1.0f, 6.0f, 0x1p-9f};
//   std::vector<float> y = moefuzz::cuda::rcp_approx_ftz_on_device(x);   // {1, RN(1/6)-ish, 512}
#include <vector>

namespace moefuzz::cuda {

// rcp.approx.ftz.f32 of every input, computed on the current CUDA device.
std::vector<float> rcp_approx_ftz_on_device(const std::vector<float>& x);

}  // namespace moefuzz::cuda
