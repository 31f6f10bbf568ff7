// Token permutation per expert (moe_align_block_size style): count the (token, slot) pairs of each
// expert, pad each expert's segment to a multiple of the tile height, and place pairs STABLY (in
// pair order t * slots + slot) so the permutation -- and hence every result -- is deterministic.
// The GEMMs then walk a list of tiles, each holding rows of exactly one expert.
#include <cuda_runtime.h>

#include "kernels/cuda/launch.h"

namespace moefuzz::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

__global__ void count_kernel(const int32_t* ids, int64_t pairs, int32_t* count) {
  __shared__ int n;
  if (threadIdx.x == 0) n = 0;
  __syncthreads();
  const int e = blockIdx.x;
  int mine = 0;
  for (int64_t p = threadIdx.x; p < pairs; p += kThreads) mine += ids[p] == e;
  atomicAdd(&n, mine);  // integer: order-free
  __syncthreads();
  if (threadIdx.x == 0) count[e] = n;
}

__global__ void scan_kernel(const int32_t* count, int experts, int rows_per_tile, int32_t* offset,
                            int32_t* tile_expert, int32_t* num_tiles) {
  int64_t off = 0, tiles = 0;
  offset[0] = 0;
  for (int e = 0; e < experts; ++e) {
    const int64_t padded = (count[e] + rows_per_tile - 1) / rows_per_tile * rows_per_tile;
    for (int64_t i = 0; i < padded / rows_per_tile; ++i) tile_expert[tiles++] = e;
    off += padded;
    offset[e + 1] = static_cast<int32_t>(off);
  }
  *num_tiles = static_cast<int32_t>(tiles);
}

__global__ void place_kernel(const int32_t* ids, int64_t pairs, const int32_t* count, const int32_t* offset,
                             int32_t* row_pair, int64_t* pair_row) {
  __shared__ int warp_total[kWarps];
  __shared__ int warp_base[kWarps];
  const int e = blockIdx.x;
  const int64_t base = offset[e];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  int64_t running = 0;
  for (int64_t start = 0; start < pairs; start += kThreads) {
    const int64_t p = start + threadIdx.x;
    const bool mine = p < pairs && ids[p] == e;
    const unsigned ballot = __ballot_sync(0xFFFFFFFFu, mine);
    if (lane == 0) warp_total[warp] = __popc(ballot);
    __syncthreads();
    if (threadIdx.x == 0) {
      int acc = 0;
      for (int w = 0; w < kWarps; ++w) {
        warp_base[w] = acc;
        acc += warp_total[w];
      }
    }
    __syncthreads();
    if (mine) {
      const int64_t row = base + running + warp_base[warp] + __popc(ballot & ((1u << lane) - 1u));
      row_pair[row] = static_cast<int32_t>(p);
      pair_row[p] = row;
    }
    running += warp_base[kWarps - 1] + warp_total[kWarps - 1];
    __syncthreads();
  }
  for (int64_t r = base + count[e] + threadIdx.x; r < offset[e + 1]; r += kThreads) row_pair[r] = -1;
}

}  // namespace

void launch_align(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s) {
  const int experts = static_cast<int>(cfg.total_experts());
  const int64_t pairs = cfg.pairs();
  count_kernel<<<experts, kThreads, 0, s>>>(b.ids, pairs, b.expert_count);
  MOEFUZZ_CUDA_CHECK(cudaGetLastError());
  scan_kernel<<<1, 1, 0, s>>>(b.expert_count, experts, kTactics[cfg.tactic].rows_per_tile, b.expert_offset,
                              b.tile_expert, b.num_tiles);
  MOEFUZZ_CUDA_CHECK(cudaGetLastError());
  place_kernel<<<experts, kThreads, 0, s>>>(b.ids, pairs, b.expert_count, b.expert_offset, b.row_pair,
                                            b.pair_row);
  MOEFUZZ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace moefuzz::cuda
