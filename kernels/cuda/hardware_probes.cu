#include "kernels/cuda/hardware_probes.h"

#include <cuda_runtime.h>

#include <stdexcept>

#include "kernels/cuda/device_formats.cuh"
#include "kernels/cuda/launch.h"

namespace moefuzz::cuda {
namespace {

__global__ void rcp_probe_kernel(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = rcp_approx_ftz(x[i]);
}

// One warp, one mma.sync m16n8k32 e4m3 with fp32 accumulate. Fragment layouts: PTX ISA, "Matrix
// Fragments for mma.m16n8k32" (8-bit A/B, fp32 C/D); thread t: group = t / 4, lane-in-group = t % 4,
// element i of a fragment register array sits in byte i % 4 of register i / 4.
__global__ void fp8_mma_probe_kernel(const uint8_t* a, const uint8_t* b, const float* c, float* d) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  const int lane = static_cast<int>(threadIdx.x), group = lane >> 2, tig = lane & 3;
  uint32_t ra[4] = {0, 0, 0, 0}, rb[2] = {0, 0};
  for (int i = 0; i < 16; ++i) {
    const int row = (i < 4 || (i >= 8 && i < 12)) ? group : group + 8;
    const int col = tig * 4 + (i & 3) + (i >= 8 ? 16 : 0);
    ra[i / 4] |= static_cast<uint32_t>(a[row * 32 + col]) << (8 * (i % 4));
  }
  for (int i = 0; i < 8; ++i) {
    const int row = tig * 4 + (i & 3) + (i >= 4 ? 16 : 0);
    rb[i / 4] |= static_cast<uint32_t>(b[row * 8 + group]) << (8 * (i % 4));
  }
  float rc[4], rd[4];
  for (int i = 0; i < 4; ++i) rc[i] = c[(i < 2 ? group : group + 8) * 8 + tig * 2 + (i & 1)];
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%10, %11, %12, %13};\n"
      : "=f"(rd[0]), "=f"(rd[1]), "=f"(rd[2]), "=f"(rd[3])
      : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]), "f"(rc[0]), "f"(rc[1]),
        "f"(rc[2]), "f"(rc[3]));
  for (int i = 0; i < 4; ++i) d[(i < 2 ? group : group + 8) * 8 + tig * 2 + (i & 1)] = rd[i];
#else
  (void)a;
  (void)b;
  (void)c;
  for (int i = static_cast<int>(threadIdx.x); i < 128; i += 32) d[i] = __int_as_float(0x7FC00000);
#endif
}

}  // namespace

std::vector<float> fp8_mma_m16n8k32_on_device(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
                                              const std::vector<float>& c) {
  if (a.size() != 16 * 32 || b.size() != 32 * 8 || c.size() != 16 * 8)
    throw std::invalid_argument("fp8_mma_m16n8k32_on_device: a [16, 32], b [32, 8], c [16, 8] expected");
  uint8_t *da = nullptr, *db = nullptr;
  float *dc = nullptr, *dd = nullptr;
  MOEFUZZ_CUDA_CHECK(cudaMalloc(&da, a.size()));
  MOEFUZZ_CUDA_CHECK(cudaMalloc(&db, b.size()));
  MOEFUZZ_CUDA_CHECK(cudaMalloc(&dc, c.size() * sizeof(float)));
  MOEFUZZ_CUDA_CHECK(cudaMalloc(&dd, c.size() * sizeof(float)));
  MOEFUZZ_CUDA_CHECK(cudaMemcpy(da, a.data(), a.size(), cudaMemcpyHostToDevice));
  MOEFUZZ_CUDA_CHECK(cudaMemcpy(db, b.data(), b.size(), cudaMemcpyHostToDevice));
  MOEFUZZ_CUDA_CHECK(cudaMemcpy(dc, c.data(), c.size() * sizeof(float), cudaMemcpyHostToDevice));
  fp8_mma_probe_kernel<<<1, 32>>>(da, db, dc, dd);
  MOEFUZZ_CUDA_CHECK(cudaGetLastError());
  std::vector<float> d(c.size());
  MOEFUZZ_CUDA_CHECK(cudaMemcpy(d.data(), dd, d.size() * sizeof(float), cudaMemcpyDeviceToHost));
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  cudaFree(dd);
  return d;
}

std::vector<float> rcp_approx_ftz_on_device(const std::vector<float>& x) {
  const int n = static_cast<int>(x.size());
  std::vector<float> y(x.size());
  if (n == 0) return y;
  float *dx = nullptr, *dy = nullptr;
  MOEFUZZ_CUDA_CHECK(cudaMalloc(&dx, x.size() * sizeof(float)));
  MOEFUZZ_CUDA_CHECK(cudaMalloc(&dy, x.size() * sizeof(float)));
  MOEFUZZ_CUDA_CHECK(cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  rcp_probe_kernel<<<(n + 255) / 256, 256>>>(dx, dy, n);
  MOEFUZZ_CUDA_CHECK(cudaGetLastError());
  MOEFUZZ_CUDA_CHECK(cudaMemcpy(y.data(), dy, x.size() * sizeof(float), cudaMemcpyDeviceToHost));
  cudaFree(dx);
  cudaFree(dy);
  return y;
}

}  // namespace moefuzz::cuda
