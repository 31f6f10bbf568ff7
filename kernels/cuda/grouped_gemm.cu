// Grouped NVFP4 GEMM (GEMM1 and GEMM2): out[r, n] = bf16( fl( alpha[e] * sum_k A[r, k] * W_e[n, k] ) )
// for the rows r of each expert tile (SPEC.md §3.2, §3.5), on tensor cores (mma.sync m16n8k16 bf16
// -> fp32).
//
// Exactness: A arrives dequantized as e2m1 * e4m3 (exact in bf16, nvfp4_block.cuh); W is
// dequantized on the fly the same way: a 256-entry table maps a packed byte to the bf16x2 of its two
// E2M1 values (32 copies in shared memory, one per lane, so lookups never conflict), then one bf16x2
// multiply by the E4M3 block scale (<= 6 significant bits: exact). The products of two such bf16
// values are exact in fp32, so the only rounding is the MMA's fp32 accumulation and the epilogue.
//
// K permutation: the dot product is order-free, so lane q of a quad takes a whole 16-element block
// (4 * chunk + q) per 64-element chunk: one 8-byte load, one scale, where the mma fragment layout
// would otherwise scatter 2-element pieces. A and B use the same permutation.
//
// Split-K: the block's 4 warps take chunks c = warp, warp + 4, ...; their fp32 partials are summed in
// warp order. The partition does not depend on the tactic (rows per tile), so all tactics give
// bit-identical results; a row's result never depends on other rows (batch invariance).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/device_formats.cuh"
#include "kernels/cuda/launch.h"

namespace moefuzz::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kColsPerBlockStep = 16;  // two n8 MMA tiles
constexpr int kBlockSteps = 4;         // n ranges per block (amortizes the table fill)
constexpr int kLutCopies = 32;

struct GemmArgs {
  const uint16_t* a;        // bf16 [rows, K]
  const uint8_t* w;         // [experts][N][K/2]
  const uint8_t* w_sf;      // [experts][sf_bytes_128x4(N, K/16)]
  const float* alpha;       // [experts][alpha_per_expert]
  uint16_t* out;            // bf16 [rows, N]
  const int32_t* tile_expert;
  const int32_t* num_tiles;
  const int32_t* expert_offset;  // first row of each expert
  const int32_t* expert_count;   // real rows of each expert (the rest of its segment is padding)
  int64_t n, k;
  int alpha_per_expert;     // 2: GEMM1 halves [0, N/2) and [N/2, N) have their own alpha
  uint32_t deviation;       // CudaDeviation bits (mutants only; 0 in the `cuda` kernel)
};

// An element offset as the kernel forms it: int64, or (kDevInt32Offsets mutant) wrapped the way an
// int32 product would wrap, keeping the low 31 bits so the access stays inside the allocation and
// the damage is silent garbage, as in BUGZOO Z7's second report.
__device__ __forceinline__ int64_t elem_offset(int64_t off, uint32_t deviation) {
  return (deviation & kDevInt32Offsets) ? (off & 0x7FFFFFFF) : off;
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t bf16x2_mul(uint32_t x, uint32_t y) {
  __nv_bfloat162 r = __hmul2(*reinterpret_cast<__nv_bfloat162*>(&x), *reinterpret_cast<__nv_bfloat162*>(&y));
  return *reinterpret_cast<uint32_t*>(&r);
}

template <int kMmaRowTiles>  // 16-row MMA tiles per tile: rows per tile = 16 * kMmaRowTiles
__global__ void __launch_bounds__(kThreads) grouped_gemm_kernel(GemmArgs g) {
  constexpr int kRows = 16 * kMmaRowTiles;
  constexpr int kAcc = kMmaRowTiles * 2 * 4;
  __shared__ uint32_t lut[256 * kLutCopies];
  __shared__ float partial[kWarps][kAcc][32];
  const int tile = blockIdx.x;
  if (tile >= *g.num_tiles) return;
  const int expert = g.tile_expert[tile];
  const int64_t row0 = static_cast<int64_t>(tile) * kRows;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int quad = lane & 3, group = lane >> 2;
  // Padding rows hold zeros: skip their A loads (at decode most of a 16-row tile is padding).
  const int64_t real_end = static_cast<int64_t>(g.expert_offset[expert]) + g.expert_count[expert];

  constexpr uint16_t kE2m1Bf16[8] = {0x0000, 0x3F00, 0x3F80, 0x3FC0, 0x4000, 0x4040, 0x4080, 0x40C0};
  for (int i = threadIdx.x; i < 256 * kLutCopies; i += kThreads) {
    const int byte = i / kLutCopies;
    const int first = (g.deviation & kDevNibbleSwap) ? (byte >> 4) : byte;  // element 0: low nibble
    const int second = (g.deviation & kDevNibbleSwap) ? byte : (byte >> 4);
    const uint32_t lo = kE2m1Bf16[first & 7] | ((first & 0x08) ? 0x8000u : 0u);
    const uint32_t hi = kE2m1Bf16[second & 7] | ((second & 0x08) ? 0x8000u : 0u);
    lut[i] = lo | (hi << 16);
  }
  __syncthreads();

  const int64_t K = g.k, N = g.n, kb_count = K / 16, chunks = (kb_count + 3) / 4;
  const uint8_t* w_e = g.w + elem_offset(static_cast<int64_t>(expert) * N * (K / 2), g.deviation);
  const uint8_t* sf_e = g.w_sf + static_cast<int64_t>(expert) * sf_bytes_128x4(N, kb_count);

  for (int step = 0; step < kBlockSteps; ++step) {
    const int64_t n0 = (static_cast<int64_t>(blockIdx.y) * kBlockSteps + step) * kColsPerBlockStep;
    if (n0 >= N) break;
    float acc[kMmaRowTiles][2][4];
#pragma unroll
    for (int m = 0; m < kMmaRowTiles; ++m)
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[m][j][i] = 0.0f;

#pragma unroll 4
    for (int64_t c = warp; c < chunks; c += kWarps) {
      const int64_t kb = 4 * c + quad;
      const bool valid = kb < kb_count;
      uint2 wraw[2];
      uint8_t wsc[2];
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int64_t n = n0 + 8 * j + group;
        wraw[j] = valid ? __ldg(reinterpret_cast<const uint2*>(w_e + n * (K / 2) + kb * 8)) : make_uint2(0, 0);
        wsc[j] = valid ? __ldg(sf_e + sf_offset_128x4(n, kb, kb_count)) : 0;
      }
      uint4 araw[kMmaRowTiles][2][2];
#pragma unroll
      for (int m = 0; m < kMmaRowTiles; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int64_t arow = row0 + 16 * m + 8 * h + group;
          const uint4* src = reinterpret_cast<const uint4*>(g.a + elem_offset(arow * K, g.deviation) + kb * 16);
          const bool load = valid && arow < real_end;
          araw[m][h][0] = load ? src[0] : make_uint4(0, 0, 0, 0);
          araw[m][h][1] = load ? src[1] : make_uint4(0, 0, 0, 0);
        }
      uint32_t b[2][4][2];
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const __nv_bfloat16 s = __float2bfloat16_rn(e4m3_to_float_hw(wsc[j]));  // exact
        const __nv_bfloat162 s2 = __halves2bfloat162(s, s);
        const uint32_t s2u = *reinterpret_cast<const uint32_t*>(&s2);
#pragma unroll
        for (int s4 = 0; s4 < 4; ++s4) {
          const uint32_t word = s4 < 2 ? wraw[j].x : wraw[j].y;
          const uint32_t byte0 = (word >> (16 * (s4 & 1))) & 0xFF, byte1 = (word >> (16 * (s4 & 1) + 8)) & 0xFF;
          b[j][s4][0] = bf16x2_mul(lut[byte0 * kLutCopies + lane], s2u);
          b[j][s4][1] = bf16x2_mul(lut[byte1 * kLutCopies + lane], s2u);
        }
      }
#pragma unroll
      for (int m = 0; m < kMmaRowTiles; ++m) {
        const uint32_t r0[8] = {araw[m][0][0].x, araw[m][0][0].y, araw[m][0][0].z, araw[m][0][0].w,
                                araw[m][0][1].x, araw[m][0][1].y, araw[m][0][1].z, araw[m][0][1].w};
        const uint32_t r1[8] = {araw[m][1][0].x, araw[m][1][0].y, araw[m][1][0].z, araw[m][1][0].w,
                                araw[m][1][1].x, araw[m][1][1].y, araw[m][1][1].z, araw[m][1][1].w};
#pragma unroll
        for (int s4 = 0; s4 < 4; ++s4) {
          const uint32_t a[4] = {r0[2 * s4], r1[2 * s4], r0[2 * s4 + 1], r1[2 * s4 + 1]};
#pragma unroll
          for (int j = 0; j < 2; ++j) mma_bf16(acc[m][j], a, b[j][s4][0], b[j][s4][1]);
        }
      }
    }

    // Split-K reduction in warp order, then the fp32 alpha epilogue and bf16 rounding.
#pragma unroll
    for (int m = 0; m < kMmaRowTiles; ++m)
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) partial[warp][(m * 2 + j) * 4 + i][lane] = acc[m][j][i];
    __syncthreads();
    for (int idx = warp; idx < kMmaRowTiles * 2 * 2; idx += kWarps) {  // (m, j, row half) per warp
      const int m = idx / 4, j = (idx / 2) % 2, half = idx % 2;
      const int i0 = (m * 2 + j) * 4 + 2 * half;
      float v[2];
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        float s = partial[0][i0 + u][lane];
#pragma unroll
        for (int w = 1; w < kWarps; ++w) s = __fadd_rn(s, partial[w][i0 + u][lane]);
        v[u] = s;
      }
      const int64_t row = row0 + 16 * m + 8 * half + group;
      const int64_t col = n0 + 8 * j + 2 * quad;
      const int which = (g.alpha_per_expert == 2 && col >= N / 2) ? 1 : 0;
      const float alpha = g.alpha[static_cast<int64_t>(expert) * g.alpha_per_expert + which];
      const uint32_t lo = float_to_bf16_bits(__fmul_rn(alpha, v[0]));
      const uint32_t hi = float_to_bf16_bits(__fmul_rn(alpha, v[1]));
      *reinterpret_cast<uint32_t*>(g.out + elem_offset(row * N, g.deviation) + col) = lo | (hi << 16);
    }
    __syncthreads();
  }
}

void launch_gemm(const PipelineConfig& cfg, const GemmArgs& args, cudaStream_t s) {
  const int rows_per_tile = kTactics[cfg.tactic].rows_per_tile;
  const int64_t max_tiles = cfg.max_rows() / rows_per_tile;
  if (max_tiles == 0) return;
  const int64_t col_steps = (args.n + kColsPerBlockStep * kBlockSteps - 1) / (kColsPerBlockStep * kBlockSteps);
  const dim3 grid(static_cast<unsigned>(max_tiles), static_cast<unsigned>(col_steps));
  if (rows_per_tile == 16) grouped_gemm_kernel<1><<<grid, kThreads, 0, s>>>(args);
  else grouped_gemm_kernel<4><<<grid, kThreads, 0, s>>>(args);
  MOEFUZZ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_gemm1(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s) {
  launch_gemm(cfg, GemmArgs{b.a1_dq, b.w13, b.w13_sf, b.alpha1, b.g1, b.tile_expert, b.num_tiles, b.expert_offset,
                            b.expert_count, 2 * cfg.inter,
                            cfg.hidden, 2, cfg.deviation},
              s);
}

void launch_gemm2(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s) {
  launch_gemm(cfg, GemmArgs{b.a2_dq, b.w2, b.w2_sf, b.alpha2, b.y, b.tile_expert, b.num_tiles, b.expert_offset,
                            b.expert_count, cfg.hidden, cfg.inter, 1, cfg.deviation},
              s);
}

}  // namespace moefuzz::cuda
