// kernels/worker_device.h for CUDA builds.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kernels/worker_device.h"

namespace moefuzz {
namespace {

void wait_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("cannot set how threads wait for the GPU: ") + what + ": " +
                             cudaGetErrorString(e));
}

}  // namespace

int visible_gpu_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // no driver or GPU: not sticky, cleared so later calls see no stale error
    return 0;
  }
  return n;
}

int bind_worker_gpu(int worker) {
  const int n = visible_gpu_count();
  if (n <= 0) return -1;
  const int ordinal = (worker < 0 ? 0 : worker) % n;
  const cudaError_t e = cudaSetDevice(ordinal);
  if (e != cudaSuccess)
    throw std::runtime_error("cannot bind GPU " + std::to_string(ordinal) +
                             " to a check worker: " + cudaGetErrorString(e));
  return ordinal;
}

void set_gpu_wait(GpuWait wait) {
  const int n = visible_gpu_count();
  if (n <= 0) return;
  int current = 0;
  wait_check(cudaGetDevice(&current), "cudaGetDevice");
  const unsigned flags = wait == GpuWait::kYield ? cudaDeviceScheduleYield : cudaDeviceScheduleSpin;
  for (int d = 0; d < n; ++d) {
    wait_check(cudaSetDevice(d), "cudaSetDevice");
    wait_check(cudaSetDeviceFlags(flags), "cudaSetDeviceFlags");
  }
  wait_check(cudaSetDevice(current), "cudaSetDevice");
}

}  // namespace moefuzz
