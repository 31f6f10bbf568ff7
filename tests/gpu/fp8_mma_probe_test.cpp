// What the FP8 tensor-core accumulator keeps, measured on the GPU (skips visibly without one; CI
// has none), against the parameter the FP8 block GEMM bound assumes: kHopperFp8MmaAccumBits
// (oracles/fp8_block_gemm.h, contract (a): every addend of an MMA step keeps f bits below the
// leading bit of the step's largest addend). One mma.sync m16n8k32 e4m3 with fp32 accumulate
// (kernels/cuda/hardware_probes.h):
//  * layout: small integers, whose sums no accumulator rounds, must come back exactly;
//  * accumulator operand: c = +-2^s plus one product 1: the largest s for which the 1 survives;
//  * products: a product +-2^8 and a product 2^(8-t): the largest t for which the small one survives;
//  * random operands: the error of every output within the contract's per-step allowance
//    (m + 1) 2^-f sum|addends| (m = 33 addends).
// The measured bits must be at least kHopperFp8MmaAccumBits. On an H200 mma.sync keeps 23 (full fp32);
// the 13 of the contract is the wgmma that Triton and DeepGEMM run, which
// tests/python/triton_fp8_dot_probe.py measures through tl.dot.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/e4m3.h"
#include "oracles/fp8_block_gemm.h"

#ifdef MOEFUZZ_WITH_CUDA
#include "kernels/cuda/hardware_probes.h"
#include "kernels/cuda/moe_pipeline.h"
#endif

#ifndef MOEFUZZ_WITH_CUDA
TEST(Fp8MmaProbe, RequiresCudaBuild) { GTEST_SKIP() << "built without nvcc: no device probes"; }
#else
namespace moefuzz {
namespace {

struct Operands {
  std::vector<uint8_t> a = std::vector<uint8_t>(16 * 32, 0);  // [16, 32]
  std::vector<uint8_t> b = std::vector<uint8_t>(32 * 8, 0);   // [32, 8], b[k * 8 + n]
  std::vector<float> c = std::vector<float>(16 * 8, 0.0f);    // [16, 8]
};

double exact(const Operands& o, int m, int n, double* magnitude) {
  double s = o.c[static_cast<size_t>(m * 8 + n)], mag = std::fabs(s);  // sums of <= 33 terms: exact here
  for (int k = 0; k < 32; ++k) {
    const double p = static_cast<double>(e4m3_to_float(o.a[static_cast<size_t>(m * 32 + k)])) *
                     static_cast<double>(e4m3_to_float(o.b[static_cast<size_t>(k * 8 + n)]));
    s += p;
    mag += std::fabs(p);
  }
  if (magnitude) *magnitude = mag;
  return s;
}

uint8_t pow2(int e) { return e4m3_from_float(std::ldexp(1.0f, e)); }  // exact for e in [-9, 8]

bool device_ready(std::string* why) {
  if (!cuda::cuda_device_available(why)) return false;
  Operands o;
  const std::vector<float> d = cuda::fp8_mma_m16n8k32_on_device(o.a, o.b, o.c);
  if (std::isnan(d[0])) {
    *why = "the device has no e4m3 mma (sm_89 or later)";
    return false;
  }
  return true;
}

TEST(Fp8MmaProbe, AccumulatorKeepsTheContractsBits) {
  std::string why;
  if (!device_ready(&why)) GTEST_SKIP() << "no usable CUDA GPU: " << why;
  std::mt19937_64 g(3);

  // Layout: codes of 0, +-0.5, +-1, +-2 and integer c: every sum is exact in any accumulator.
  Operands o;
  const uint8_t small[] = {0x00, 0x30, 0xB0, 0x38, 0xB8, 0x40, 0xC0};
  for (auto& x : o.a) x = small[g() % 7];
  for (auto& x : o.b) x = small[g() % 7];
  for (auto& x : o.c) x = static_cast<float>(static_cast<int>(g() % 64) - 32);
  std::vector<float> d = cuda::fp8_mma_m16n8k32_on_device(o.a, o.b, o.c);
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 8; ++n)
      ASSERT_EQ(d[static_cast<size_t>(m * 8 + n)], exact(o, m, n, nullptr)) << m << "," << n;

  // Accumulator operand: c = +-2^s, one product 1 * 1.
  int c_bits = 23;
  for (int sign : {1, -1})
    for (int s = 1; s <= 23; ++s) {
      Operands p;
      p.c[0] = static_cast<float>(sign) * std::ldexp(1.0f, s);
      p.a[0] = pow2(0);
      p.b[0] = pow2(0);
      if (cuda::fp8_mma_m16n8k32_on_device(p.a, p.b, p.c)[0] != exact(p, 0, 0, nullptr)) {
        c_bits = std::min(c_bits, s - 1);
        break;
      }
    }

  // Products: +-2^8 (256 * 1) and 2^(8-t) (two powers of two), c = 0.
  int p_bits = 23;
  for (int sign : {1, -1})
    for (int t = 1; t <= 23; ++t) {
      Operands p;
      p.a[0] = static_cast<uint8_t>(pow2(8) | (sign < 0 ? 0x80 : 0));
      p.b[0] = pow2(0);
      const int e = 8 - t, e1 = e / 2;  // e in [-15, 7]: both factors in E4M3's [2^-9, 2^8]
      p.a[1] = pow2(e1);
      p.b[8] = pow2(e - e1);  // b[1 * 8 + 0]
      ASSERT_EQ(std::ldexp(1.0, e), static_cast<double>(e4m3_to_float(p.a[1])) * e4m3_to_float(p.b[8]));
      if (cuda::fp8_mma_m16n8k32_on_device(p.a, p.b, p.c)[0] != exact(p, 0, 0, nullptr)) {
        p_bits = std::min(p_bits, t - 1);
        break;
      }
    }

  // Random operands within the contract's per-step allowance.
  double worst = 0;
  const double u = std::ldexp(1.0, -kHopperFp8MmaAccumBits);
  for (int trial = 0; trial < 200; ++trial) {
    Operands r;
    for (auto& x : r.a) x = static_cast<uint8_t>((g() % 0x7F) | (g() & 0x80));
    for (auto& x : r.b) x = static_cast<uint8_t>((g() % 0x7F) | (g() & 0x80));
    for (auto& x : r.c)
      x = trial % 2 ? 0.0f
                    : static_cast<float>((g() & 1 ? 1 : -1) * std::ldexp(1.0 + (g() % 1000) / 1000.0,
                                                                         static_cast<int>(g() % 40) - 10));
    d = cuda::fp8_mma_m16n8k32_on_device(r.a, r.b, r.c);
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 8; ++n) {
        double mag = 0;
        const double e = exact(r, m, n, &mag);
        const double err = std::fabs(static_cast<double>(d[static_cast<size_t>(m * 8 + n)]) - e);
        const double allowance = 34 * u * mag;
        EXPECT_LE(err, allowance) << "trial " << trial << " (" << m << "," << n << ")";
        if (allowance > 0) worst = std::max(worst, err / allowance);
      }
  }
  std::printf(
      "fp8-mma-probe: accumulator operand keeps %d bits below its leading bit, products %d; contract "
      "assumes %d; random operands: worst error / allowance %.3g\n",
      c_bits, p_bits, kHopperFp8MmaAccumBits, worst);
  EXPECT_GE(c_bits, kHopperFp8MmaAccumBits);
  EXPECT_GE(p_bits, kHopperFp8MmaAccumBits);
}

}  // namespace
}  // namespace moefuzz
#endif
