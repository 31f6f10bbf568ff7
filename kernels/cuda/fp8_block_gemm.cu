// Grouped FP8 block-scaled GEMM (GEMM1 and GEMM2 of an FP8 W8A8 layer, SPEC-formats.md §1.3) on FP8
// tensor cores: mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 (sm_89+; built for sm_90a).
//
//   out[r, n] = bf16( sum over K blocks kb of 128, and halves h of 64:
//                       fl(fl(D_{kb,h} * sa[r, kb]) * sb[n / 128, kb]) )   (fp32, in K order)
//   D_{kb,h} = the tensor core's dot of the 64 products of that half: a FRESH accumulator (zero),
//              two k32 MMAs chained through it.
// That is the contract of the `vllm` profile: Triton fused_moe with BLOCK_SIZE_K 64 (one fresh
// tl.dot per K tile, fp8_dots_per_block 2), scales applied per tile in Triton order
// acc += (dot * a_scale) * b_scale (fp8_scale_order triton), the in-MMA accumulation bounded by
// fp8_mma_accum_bits (oracles/fp8_block_gemm.h (a)). Explicit __fmul_rn / __fadd_rn: no FMA
// contraction in the epilogue (the build also passes --fmad=false).
//
// Tiles: a block is 4 warps; warp w owns one 16 x 8 output tile (16 rows of one expert's segment, 8
// columns n0 .. n0+7, all inside one 128-row weight scale block). Fragments (PTX ISA, "Matrix
// Fragments for mma.m16n8k32", as kernels/cuda/hardware_probes.cu probes them): lane = 4 group + tig;
// A registers {row group, k 4tig..4tig+3}, {row group+8, same k}, {row group, k 16+4tig..},
// {row group+8, k 16+4tig..}; B registers {n group, k 4tig..}, {n group, k 16+4tig..}, each 4
// consecutive bytes of a row-major [rows, K] / [N, K] array; D {row group, n 2tig, 2tig+1},
// {row group+8, n 2tig, 2tig+1}. Correctness over speed: operands come straight from global memory.
#include <cuda_runtime.h>

#include <stdexcept>

#include "kernels/cuda/device_formats.cuh"
#include "kernels/cuda/fp8_device_stages.h"
#include "kernels/cuda/launch.h"

namespace moefuzz::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kColsPerBlock = 8 * kWarps;
constexpr int64_t kBlockK = 128;  // the scale block along K (activation group, weight block)
constexpr int64_t kDotK = 64;     // K of one fresh-accumulator dot (Triton BLOCK_SIZE_K 64)

struct Fp8GemmArgs {
  const uint8_t* a;      // E4M3 [rows, K]
  const float* a_scale;  // [rows, K/128]
  const uint8_t* w;      // E4M3 [experts][N][K]
  const float* w_scale;  // [experts][N/128][K/128]
  uint16_t* out_bf16;    // bf16 [rows, N], or
  float* out_f32;        // fp32 [rows, N] unrounded (fp8_block_gemm_on_device)
  const int32_t* tile_expert;
  const int32_t* num_tiles;
  int rows_per_tile;  // a multiple of 16
  int64_t n, k;
  uint32_t deviation;  // CudaDeviation bits (mutants only)
};

__device__ __forceinline__ uint32_t load4(const uint8_t* p) { return *reinterpret_cast<const uint32_t*>(p); }

__device__ __forceinline__ void mma_e4m3(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  // Not reached on a device the pipeline runs on (sm_90a SASS); older PTX JIT targets get NaN, never
  // a silently different sum.
  (void)a;
  (void)b;
  for (float& v : d) v = __int_as_float(0x7FC00000);
#endif
}

__global__ void __launch_bounds__(kThreads) fp8_block_gemm_kernel(Fp8GemmArgs g) {
  const int tile = blockIdx.x;
  if (tile >= *g.num_tiles) return;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, group = lane >> 2, tig = lane & 3;
  const int64_t N = g.n, K = g.k, kblocks = K / kBlockK;
  const int64_t n0 = (static_cast<int64_t>(blockIdx.y) * kWarps + warp) * 8;
  if (n0 >= N) return;
  const int64_t expert = g.tile_expert[tile];
  const uint8_t* w_row = g.w + expert * N * K + (n0 + group) * K;  // B column n0 + group
  const float* sb_row = g.w_scale + expert * (N / kBlockK) * kblocks + (n0 / kBlockK) * kblocks;
  const bool drop_act_scale = (g.deviation & kDevFp8DropActScale) != 0;

  for (int m = 0; m < g.rows_per_tile / 16; ++m) {
    const int64_t r_lo = static_cast<int64_t>(tile) * g.rows_per_tile + 16 * m + group, r_hi = r_lo + 8;
    const uint8_t* a_lo = g.a + r_lo * K;
    const uint8_t* a_hi = g.a + r_hi * K;
    float total[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int64_t kb = 0; kb < kblocks; ++kb) {
      const float sb = sb_row[kb];
      const float sa_lo = drop_act_scale ? 1.0f : g.a_scale[r_lo * kblocks + kb];
      const float sa_hi = drop_act_scale ? 1.0f : g.a_scale[r_hi * kblocks + kb];
      for (int64_t k0 = kb * kBlockK; k0 < (kb + 1) * kBlockK; k0 += kDotK) {
        float dot[4] = {0.0f, 0.0f, 0.0f, 0.0f};  // a fresh accumulator per 64 K
#pragma unroll
        for (int step = 0; step < 2; ++step) {
          const int64_t k = k0 + 32 * step + 4 * tig;
          const uint32_t ra[4] = {load4(a_lo + k), load4(a_hi + k), load4(a_lo + k + 16),
                                  load4(a_hi + k + 16)};
          const uint32_t rb[2] = {load4(w_row + k), load4(w_row + k + 16)};
          mma_e4m3(dot, ra, rb);
        }
        // Triton order: acc += fl(fl(dot * a_scale) * b_scale).
        total[0] = __fadd_rn(total[0], __fmul_rn(__fmul_rn(dot[0], sa_lo), sb));
        total[1] = __fadd_rn(total[1], __fmul_rn(__fmul_rn(dot[1], sa_lo), sb));
        total[2] = __fadd_rn(total[2], __fmul_rn(__fmul_rn(dot[2], sa_hi), sb));
        total[3] = __fadd_rn(total[3], __fmul_rn(__fmul_rn(dot[3], sa_hi), sb));
      }
    }
    const int64_t col = n0 + 2 * tig;
    if (g.out_f32 != nullptr) {
      *reinterpret_cast<float2*>(g.out_f32 + r_lo * N + col) = make_float2(total[0], total[1]);
      *reinterpret_cast<float2*>(g.out_f32 + r_hi * N + col) = make_float2(total[2], total[3]);
    } else {
      const uint32_t lo =
          float_to_bf16_bits(total[0]) | (static_cast<uint32_t>(float_to_bf16_bits(total[1])) << 16);
      const uint32_t hi =
          float_to_bf16_bits(total[2]) | (static_cast<uint32_t>(float_to_bf16_bits(total[3])) << 16);
      *reinterpret_cast<uint32_t*>(g.out_bf16 + r_lo * N + col) = lo;
      *reinterpret_cast<uint32_t*>(g.out_bf16 + r_hi * N + col) = hi;
    }
  }
}

void launch(const Fp8GemmArgs& args, int64_t max_tiles, cudaStream_t s) {
  if (max_tiles == 0 || args.n == 0) return;
  const dim3 grid(static_cast<unsigned>(max_tiles),
                  static_cast<unsigned>((args.n + kColsPerBlock - 1) / kColsPerBlock));
  fp8_block_gemm_kernel<<<grid, kThreads, 0, s>>>(args);
  MOEFUZZ_CUDA_CHECK(cudaGetLastError());
}

Fp8GemmArgs pipeline_args(const PipelineConfig& cfg, const DeviceBuffers& b) {
  Fp8GemmArgs g{};
  g.tile_expert = b.tile_expert;
  g.num_tiles = b.num_tiles;
  g.rows_per_tile = kTactics[cfg.tactic].rows_per_tile;
  g.deviation = cfg.deviation;
  return g;
}

}  // namespace

void launch_fp8_gemm1(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s) {
  Fp8GemmArgs g = pipeline_args(cfg, b);
  g.a = b.a1_fp8;
  g.a_scale = b.a1_fp8_scale;
  g.w = b.w13;
  g.w_scale = b.w13_fp8_scale;
  g.out_bf16 = b.g1;
  g.n = 2 * cfg.inter;
  g.k = cfg.hidden;
  launch(g, cfg.max_rows() / g.rows_per_tile, s);
}

void launch_fp8_gemm2(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s) {
  Fp8GemmArgs g = pipeline_args(cfg, b);
  g.a = b.a2_fp8;
  g.a_scale = b.a2_fp8_scale;
  g.w = b.w2;
  g.w_scale = b.w2_fp8_scale;
  g.out_bf16 = b.y;
  g.n = cfg.hidden;
  g.k = cfg.inter;
  launch(g, cfg.max_rows() / g.rows_per_tile, s);
}

std::vector<float> fp8_block_gemm_on_device(std::span<const uint8_t> a, std::span<const float> a_scales,
                                            std::span<const uint8_t> w, std::span<const float> w_scales,
                                            int64_t m, int64_t n, int64_t k) {
  if (m < 1 || n < kBlockK || k < kBlockK || n % kBlockK != 0 || k % kBlockK != 0 ||
      a.size() != static_cast<size_t>(m * k) || a_scales.size() != static_cast<size_t>(m * (k / kBlockK)) ||
      w.size() != static_cast<size_t>(n * k) ||
      w_scales.size() != static_cast<size_t>((n / kBlockK) * (k / kBlockK)))
    throw std::invalid_argument(
        "fp8_block_gemm_on_device: a [m, k], a_scales [m, k/128], w [n, k], w_scales [n/128, k/128], n and k "
        "multiples of 128");
  // One expert; rows padded to whole 16-row tiles with zero codes and scales.
  const int64_t tiles = (m + 15) / 16, rows = tiles * 16, kblocks = k / kBlockK;
  std::vector<uint8_t> a_pad(static_cast<size_t>(rows * k), 0);
  std::vector<float> sa_pad(static_cast<size_t>(rows * kblocks), 0.0f);
  std::copy(a.begin(), a.end(), a_pad.begin());
  std::copy(a_scales.begin(), a_scales.end(), sa_pad.begin());
  std::vector<int32_t> tile_expert(static_cast<size_t>(tiles), 0);
  const int32_t num_tiles = static_cast<int32_t>(tiles);

  uint8_t *da = nullptr, *dw = nullptr;
  float *dsa = nullptr, *dsw = nullptr, *dout = nullptr;
  int32_t *dtile = nullptr, *dnum = nullptr;
  MOEFUZZ_CUDA_CHECK(cudaMalloc(&da, a_pad.size()));
  MOEFUZZ_CUDA_CHECK(cudaMalloc(&dw, w.size()));
  MOEFUZZ_CUDA_CHECK(cudaMalloc(&dsa, sa_pad.size() * sizeof(float)));
  MOEFUZZ_CUDA_CHECK(cudaMalloc(&dsw, w_scales.size() * sizeof(float)));
  MOEFUZZ_CUDA_CHECK(cudaMalloc(&dout, static_cast<size_t>(rows * n) * sizeof(float)));
  MOEFUZZ_CUDA_CHECK(cudaMalloc(&dtile, tile_expert.size() * sizeof(int32_t)));
  MOEFUZZ_CUDA_CHECK(cudaMalloc(&dnum, sizeof(int32_t)));
  MOEFUZZ_CUDA_CHECK(cudaMemcpy(da, a_pad.data(), a_pad.size(), cudaMemcpyHostToDevice));
  MOEFUZZ_CUDA_CHECK(cudaMemcpy(dw, w.data(), w.size(), cudaMemcpyHostToDevice));
  MOEFUZZ_CUDA_CHECK(cudaMemcpy(dsa, sa_pad.data(), sa_pad.size() * sizeof(float), cudaMemcpyHostToDevice));
  MOEFUZZ_CUDA_CHECK(
      cudaMemcpy(dsw, w_scales.data(), w_scales.size() * sizeof(float), cudaMemcpyHostToDevice));
  MOEFUZZ_CUDA_CHECK(
      cudaMemcpy(dtile, tile_expert.data(), tile_expert.size() * sizeof(int32_t), cudaMemcpyHostToDevice));
  MOEFUZZ_CUDA_CHECK(cudaMemcpy(dnum, &num_tiles, sizeof(int32_t), cudaMemcpyHostToDevice));

  Fp8GemmArgs g{};
  g.a = da;
  g.a_scale = dsa;
  g.w = dw;
  g.w_scale = dsw;
  g.out_f32 = dout;
  g.tile_expert = dtile;
  g.num_tiles = dnum;
  g.rows_per_tile = 16;
  g.n = n;
  g.k = k;
  launch(g, tiles, nullptr);
  std::vector<float> out(static_cast<size_t>(rows * n));
  MOEFUZZ_CUDA_CHECK(cudaMemcpy(out.data(), dout, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
  for (void* p :
       {static_cast<void*>(da), static_cast<void*>(dw), static_cast<void*>(dsa), static_cast<void*>(dsw),
        static_cast<void*>(dout), static_cast<void*>(dtile), static_cast<void*>(dnum)})
    cudaFree(p);
  out.resize(static_cast<size_t>(m * n));
  return out;
}

}  // namespace moefuzz::cuda
