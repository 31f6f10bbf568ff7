// Device-to-device copies of many segments in one launch. A `cuda` run assembles its weight buffers
// from the thread's resident expert copies (kernels/cuda/resident_experts.h): four segments per
// expert, 256 at the M shape. As separate cudaMemcpyAsync calls they cost ~6% of a `check -j 16`'s CPU
// time in the driver (cuMemcpyDtoDAsync, device profile in docs/perf.md); one table upload and one
// launch replace them.
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "kernels/cuda/launch.h"

namespace moefuzz::cuda {
namespace {

constexpr unsigned kCopyThreads = 256;
constexpr int64_t kBytesPerBlock = int64_t{kCopyThreads} * 16 * 8;  // eight 16-byte loads per thread

// blockIdx.y: the segment; blockIdx.x strides over its bytes. 16-byte moves where both ends and the
// length allow them (the pipeline's segments are multiples of 16 bytes at 256-byte-aligned bases),
// bytes otherwise.
__global__ void copy_segments_kernel(const CopySegment* __restrict__ segments) {
  const CopySegment s = segments[blockIdx.y];
  const bool wide = ((reinterpret_cast<uintptr_t>(s.src) | reinterpret_cast<uintptr_t>(s.dst) |
                      static_cast<uintptr_t>(s.bytes)) &
                     15) == 0;
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  const int64_t first = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (wide) {
    const auto* in = reinterpret_cast<const uint4*>(s.src);
    auto* out = reinterpret_cast<uint4*>(s.dst);
    for (int64_t i = first; i < s.bytes / 16; i += stride) out[i] = in[i];
  } else {
    for (int64_t i = first; i < s.bytes; i += stride) s.dst[i] = s.src[i];
  }
}

}  // namespace

void launch_copy_segments(const std::vector<CopySegment>& segments, cudaStream_t s) {
  if (segments.empty()) return;
  int64_t largest = 0;
  for (const CopySegment& c : segments) largest = std::max(largest, c.bytes);
  if (largest == 0) return;
  const size_t table_bytes = segments.size() * sizeof(CopySegment);
  void* table = nullptr;
  MOEFUZZ_CUDA_CHECK(cudaMallocAsync(&table, table_bytes, s));
  // From pageable memory: the call returns once the table is staged, so `segments` may go.
  MOEFUZZ_CUDA_CHECK(cudaMemcpyAsync(table, segments.data(), table_bytes, cudaMemcpyHostToDevice, s));
  const auto blocks_x =
      static_cast<unsigned>(std::min<int64_t>((largest + kBytesPerBlock - 1) / kBytesPerBlock, 1024));
  // gridDim.y is limited to 65535: larger tables go in slices.
  constexpr size_t kMaxY = 65535;
  for (size_t first = 0; first < segments.size(); first += kMaxY) {
    const auto n = static_cast<unsigned>(std::min(kMaxY, segments.size() - first));
    copy_segments_kernel<<<dim3(blocks_x, n), kCopyThreads, 0, s>>>(static_cast<const CopySegment*>(table) +
                                                                    first);
    MOEFUZZ_CUDA_CHECK(cudaGetLastError());
  }
  MOEFUZZ_CUDA_CHECK(cudaFreeAsync(table, s));
}

}  // namespace moefuzz::cuda
