// Device-side gather of the rows a download needs: the permuted stage buffers hold every expert's
// rows padded to whole tiles (up to 63 padding rows per expert, ~5x the routed rows at the M shape),
// and a run returns only the routed ones, so they are packed on the device before the copy to the
// host instead of copying the whole buffer and picking rows there.
#include <cuda_runtime.h>

#include "kernels/cuda/launch.h"

namespace moefuzz::cuda {
namespace {

constexpr unsigned kGatherThreads = 256;

// One block per output row; a row index outside [0, limit) (a faulty permutation) gives 0xFF bytes.
__global__ void gather_rows_kernel(const uint8_t* __restrict__ src, int64_t row_bytes,
                                   const int64_t* __restrict__ rows, int64_t limit,
                                   uint8_t* __restrict__ dst) {
  const int64_t i = blockIdx.x;
  const int64_t r = rows[i];
  uint8_t* out = dst + i * row_bytes;
  const bool valid = r >= 0 && r < limit;
  const uint8_t* in = src + (valid ? r : 0) * row_bytes;
  for (int64_t b = threadIdx.x; b < row_bytes; b += blockDim.x) out[b] = valid ? in[b] : uint8_t{0xFF};
}

}  // namespace

void launch_gather_rows(const uint8_t* src, int64_t row_bytes, const int64_t* rows, int64_t n, int64_t limit,
                        uint8_t* dst, cudaStream_t s) {
  if (n == 0 || row_bytes == 0) return;
  gather_rows_kernel<<<static_cast<unsigned>(n), kGatherThreads, 0, s>>>(src, row_bytes, rows, limit, dst);
  MOEFUZZ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace moefuzz::cuda
