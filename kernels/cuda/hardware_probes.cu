#include "kernels/cuda/hardware_probes.h"

#include <cuda_runtime.h>

#include "kernels/cuda/device_formats.cuh"
#include "kernels/cuda/launch.h"

namespace moefuzz::cuda {
namespace {

__global__ void rcp_probe_kernel(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = rcp_approx_ftz(x[i]);
}

}  // namespace

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
