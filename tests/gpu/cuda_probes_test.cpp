// Hardware facts the oracle relies on, measured on the GPU (skips visibly without one; CI has none).
// RcpApproxIsExactOnPowersOfTwo backs oracles/bounds.cpp: when S_q and the E4M3 block scale are both
// powers of two, the fast-math outScale = rcp(fl(sfd * rcp(S))) is exact, so the quantizer's scaled
// value y is exact and E2M1 ties are decided by the tie rule alone (no 2^-20 widening).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#ifdef MOEFUZZ_WITH_CUDA
#include "kernels/cuda/hardware_probes.h"
#include "kernels/cuda/moe_pipeline.h"
#endif

#ifndef MOEFUZZ_WITH_CUDA
TEST(CudaProbes, RequiresCudaBuild) { GTEST_SKIP() << "built without nvcc: no device probes"; }
#else
namespace moefuzz {
namespace {

TEST(CudaProbes, RcpApproxIsExactOnPowersOfTwo) {
  std::string why;
  if (!cuda::cuda_device_available(&why)) GTEST_SKIP() << "no CUDA GPU present: " << why;
  std::vector<float> x;
  for (int k = -126; k <= 127; ++k) x.push_back(std::ldexp(1.0f, k));
  x.push_back(6.0f);
  const std::vector<float> y = cuda::rcp_approx_ftz_on_device(x);
  int exact = 0;
  for (int k = -126; k <= 127; ++k) {
    const size_t i = static_cast<size_t>(k + 126);
    // 2^-127 is subnormal: .ftz flushes it to 0, the quantizer's flush case (bounds.cpp).
    const float want = k == 127 ? 0.0f : std::ldexp(1.0f, -k);
    EXPECT_EQ(y[i], want) << "rcp.approx.ftz.f32(2^" << k << ")";
    exact += y[i] == want;
  }
  EXPECT_EQ(y.back(), 1.0f / 6.0f) << "rcp.approx(6) = RN(1/6) (SPEC.md §1.5)";
  std::printf("cuda-probe: rcp.approx.ftz.f32 exact on %d of 254 powers of two 2^-126..2^127; rcp(6) = %a\n",
              exact, static_cast<double>(y.back()));
}

}  // namespace
}  // namespace moefuzz
#endif
