// Device-side random fill for benchmarks: weights and activations of DeepSeek-sized layers are
// generated where they live (SplitMix64 per byte), so no multi-GB host copy is timed or needed.
#include <cuda_runtime.h>

#include "kernels/cuda/launch.h"

namespace moefuzz::cuda {
namespace {

constexpr unsigned kFillThreads = 256;
__global__ void fill_random_kernel(uint8_t* p, int64_t bytes, uint64_t seed, uint8_t and_mask,
                                   uint8_t or_mask) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= bytes) return;
  uint64_t z = seed + static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull;  // SplitMix64
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  p[i] = static_cast<uint8_t>((z & and_mask) | or_mask);
}

}  // namespace

void launch_fill_random(uint8_t* p, int64_t bytes, uint64_t seed, uint8_t and_mask, uint8_t or_mask,
                        cudaStream_t s) {
  if (bytes == 0) return;
  fill_random_kernel<<<static_cast<unsigned>((bytes + kFillThreads - 1) / kFillThreads), kFillThreads, 0,
                       s>>>(p, bytes, seed, and_mask, or_mask);
  MOEFUZZ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace moefuzz::cuda
