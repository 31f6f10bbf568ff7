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

#include <algorithm>
#include <atomic>
#include <cstdint>

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
  const uint16_t* a;    // bf16 [rows, K]
  const uint8_t* w;     // [experts][N][K/2]
  const uint8_t* w_sf;  // [experts][sf_bytes_128x4(N, K/16)]
  const float* alpha;   // [experts][alpha_per_expert]
  uint16_t* out;        // bf16 [rows, N]
  const int32_t* tile_expert;
  const int32_t* num_tiles;
  const int32_t* expert_offset;  // first row of each expert
  const int32_t* expert_count;   // real rows of each expert (the rest of its segment is padding)
  int64_t n, k;
  int alpha_per_expert;  // 2: GEMM1 halves [0, N/2) and [N/2, N) have their own alpha
  uint32_t deviation;    // CudaDeviation bits (mutants only; 0 in the `cuda` kernel)
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
        wraw[j] =
            valid ? __ldg(reinterpret_cast<const uint2*>(w_e + n * (K / 2) + kb * 8)) : make_uint2(0, 0);
        wsc[j] = valid ? __ldg(sf_e + sf_offset_128x4(n, kb, kb_count)) : 0;
      }
      uint4 araw[kMmaRowTiles][2][2];
#pragma unroll
      for (int m = 0; m < kMmaRowTiles; ++m)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int64_t arow = row0 + 16 * m + 8 * h + group;
          const uint4* src =
              reinterpret_cast<const uint4*>(g.a + elem_offset(arow * K, g.deviation) + kb * 16);
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
          const uint32_t byte0 = (word >> (16 * (s4 & 1))) & 0xFF,
                         byte1 = (word >> (16 * (s4 & 1) + 8)) & 0xFF;
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

// ---------------------------------------------------------------------------------------------
// Tactic "stream" (tactic 2): the same arithmetic as the split-K kernel, organized differently: no
// cross-warp reduction, weights streamed through a cp.async ring. It earns its place as a tactic
// whose work distribution differs from tactics 0 and 1 in every loop while its results must stay
// bit-identical (the TACTIC invariant compares them on every case). It is not faster than tactic 0
// on the H200 (docs/perf.md, GPU), which stays the default.
//
// Layout: a block owns BN columns of one 16-row tile and ALL of K. Weights (packed FP4, 16-byte
// cp.async; 8-byte copies when K % 32 != 0), their 128x4 scale groups and the tile's real A rows
// stream through a STAGES-deep cp.async ring in shared memory (KS 64-element chunks per stage).
// Each warp owns BN / WARPS columns over all of K and keeps FOUR accumulator chains: chunk c goes to
// chain c mod 4 and the chains are summed ((c0 + c1) + c2) + c3 at the end. That is exactly the
// split-K kernel's arithmetic (its warp w accumulates chunks w, w + 4, ... and the partials are
// summed in warp order), with the same per-quad K permutation inside each chunk, the same
// byte -> bf16x2 table and the same exact scale multiply: every MMA sees the same operands in the
// same order, so the results are bit-identical to tactics 0 and 1 (TACTIC on every checked case, and
// tests/gpu at the full DeepSeek-V3 decode sizes). No cross-warp
// reduction, one __syncthreads per stage; column blocks vary fastest in the grid.
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, int src_bytes) {
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(d), "l"(gmem), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async8(void* smem, const void* gmem) {
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(d), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async8z(void* smem, const void* gmem,
                                           int src_bytes) {  // zero-fills past src_bytes
  const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(d), "l"(gmem), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

template <int BN_, int WARPS_, int KS_, int STAGES_>
struct StreamCfg {
  static constexpr int BN = BN_, WARPS = WARPS_, KS = KS_, STAGES = STAGES_;
  static constexpr int kThreads = 32 * WARPS;
  static constexpr int kWarpCols = BN / WARPS;
  static constexpr int J = kWarpCols / 8;  // n8 MMA tiles per warp
  static_assert(kWarpCols % 16 == 0, "a warp owns whole 16-column steps");
  static_assert(KS == 1 || KS == 2 || KS == 4, "4 / KS stages form one 4-chunk group");
  static_assert(BN == 64 || BN % 128 == 0, "scale groups: half or whole 128-row groups");
  static constexpr int kWRowBytes = KS * 32;  // one weight row's bytes per stage
  static constexpr int kWBytes = BN * kWRowBytes;
  static constexpr int kSfGroups = (BN + 127) / 128;
  static constexpr int kSfBytes = kSfGroups * KS * 512;
  static constexpr int kARowElems = KS * 64 + 8;  // +16 bytes: conflict-free 16-byte fragment loads
  static constexpr int kABytes = 16 * kARowElems * 2;
  static constexpr int kStageBytes = kWBytes + kSfBytes + kABytes;
  static constexpr int kLutBytes = 256 * kLutCopies * 4;
  static constexpr int kSmem = kLutBytes + STAGES * kStageBytes;
  static constexpr int kSwzShift = KS == 2 ? 1 : 0;  // XOR swizzle of 32-byte chunk slots per row
  static_assert((BN * 2 * KS) % kThreads == 0, "weight pieces per stage split evenly");
  __device__ static int swz(int row, int slot) { return slot ^ ((row >> kSwzShift) & (KS - 1)); }
};

template <class C>
__global__ void __launch_bounds__(C::kThreads, 2) grouped_gemm_stream_kernel(GemmArgs g) {
  extern __shared__ __align__(16) uint8_t smem[];
  uint32_t* lut = reinterpret_cast<uint32_t*>(smem);
  uint8_t* ring = smem + C::kLutBytes;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int quad = lane & 3, group = lane >> 2;
  const int64_t K = g.k, N = g.n, kb_count = K / 16, chunks = (kb_count + 3) / 4;
  // Column blocks vary fastest (blockIdx.x): the blocks running at once share few tiles, so each
  // tile's A rows are read from HBM once and then hit in L2, and one expert's weights stream in order.
  const int64_t n_cta0 = static_cast<int64_t>(blockIdx.x) * C::BN;
  const int num_tiles = *g.num_tiles;

  for (int tile = blockIdx.y; tile < num_tiles; tile += gridDim.y) {
    const int expert = g.tile_expert[tile];
    const int64_t row0 = static_cast<int64_t>(tile) * 16;
    const int64_t real_end = static_cast<int64_t>(g.expert_offset[expert]) + g.expert_count[expert];
    const int64_t rows_left = real_end - row0;
    const int n_real = rows_left <= 0 ? 0 : (rows_left >= 16 ? 16 : static_cast<int>(rows_left));
    const uint8_t* w_e = g.w + elem_offset(static_cast<int64_t>(expert) * N * (K / 2), g.deviation);
    const uint8_t* sf_e = g.w_sf + static_cast<int64_t>(expert) * sf_bytes_128x4(N, kb_count);
    const int64_t nstages = (chunks + C::KS - 1) / C::KS;
    const bool w_rows_16b_aligned = (K / 2) % 16 == 0;

    auto issue_stage = [&](int64_t st) {
      if (st < nstages) {
        uint8_t* base = ring + (st % C::STAGES) * C::kStageBytes;
        uint8_t* w_s = base;
        uint8_t* sf_s = base + C::kWBytes;
        uint8_t* a_s = base + C::kWBytes + C::kSfBytes;
        const int64_t c0 = st * C::KS;
#pragma unroll
        for (int it = 0; it < C::BN * 2 * C::KS / C::kThreads; ++it) {
          const int p = threadIdx.x + it * C::kThreads;
          const int row = p / (2 * C::KS), pr = p % (2 * C::KS), slot = pr >> 1, h = pr & 1;
          const int64_t n = n_cta0 + row, kb = 4 * (c0 + slot) + 2 * h;
          uint8_t* dst = w_s + row * C::kWRowBytes + C::swz(row, slot) * 32 + h * 16;
          if (w_rows_16b_aligned) {
            const int64_t left = n < N ? (kb_count - kb) * 8 : 0;
            const int bytes = left <= 0 ? 0 : (left >= 16 ? 16 : static_cast<int>(left));
            cp_async16(dst, bytes ? w_e + n * (K / 2) + kb * 8 : w_e, bytes);
          } else {  // K % 32 != 0: rows start 8-byte aligned only; one 8-byte copy per 16-element block
#pragma unroll
            for (int hb = 0; hb < 2; ++hb) {
              const bool ok = n < N && kb + hb < kb_count;
              cp_async8z(dst + 8 * hb, ok ? w_e + n * (K / 2) + (kb + hb) * 8 : w_e, ok ? 8 : 0);
            }
          }
        }
        if constexpr (C::BN >= 128) {
          for (int p = threadIdx.x; p < C::kSfGroups * C::KS * 32; p += C::kThreads) {
            const int gi = p / (C::KS * 32), slot = (p / 32) % C::KS, r = p % 32;
            const int64_t c = c0 + slot;
            const int64_t m128 = n_cta0 / 128 + gi;
            const bool ok = c < chunks && m128 * 128 < (N + 127) / 128 * 128;
            cp_async16(sf_s + (gi * C::KS + slot) * 512 + r * 16,
                       ok ? sf_e + (m128 * chunks + c) * 512 + r * 16 : sf_e, ok ? 16 : 0);
          }
        } else {  // BN == 64: this block's half of each 128-row group, 8 bytes per 32-row line
          const int half = static_cast<int>((n_cta0 % 128) / 64);
          for (int p = threadIdx.x; p < C::KS * 32; p += C::kThreads) {
            const int slot = p / 32, r = p % 32;
            const int64_t c = c0 + slot;
            if (c < chunks)
              cp_async8(sf_s + slot * 512 + r * 16 + half * 8,
                        sf_e + ((n_cta0 / 128) * chunks + c) * 512 + r * 16 + half * 8);
          }
        }
        for (int p = threadIdx.x; p < n_real * 8 * C::KS; p += C::kThreads) {
          const int r = p / (8 * C::KS), pc = p % (8 * C::KS);
          const int64_t k = c0 * 64 + pc * 8;
          const bool ok = k < K;
          const uint16_t* src = g.a + elem_offset((row0 + r) * K, g.deviation) + (ok ? k : 0);
          cp_async16(a_s + (r * C::kARowElems + pc * 8) * 2, src, ok ? 16 : 0);
        }
      }
      cp_async_commit();
    };

    // Prologue: STAGES-1 stages in flight, then (overlapping them) the table and the zero padding rows.
#pragma unroll
    for (int st = 0; st < C::STAGES - 1; ++st) issue_stage(st);
    if (tile == static_cast<int>(blockIdx.y)) {
      constexpr uint16_t kE2m1Bf16[8] = {0x0000, 0x3F00, 0x3F80, 0x3FC0, 0x4000, 0x4040, 0x4080, 0x40C0};
      // The same table as the split-K kernel, written 4 copies (16 bytes) per store.
      for (int i = threadIdx.x; i < 256 * kLutCopies / 4; i += C::kThreads) {
        const int byte = i / (kLutCopies / 4);
        const int first = (g.deviation & kDevNibbleSwap) ? (byte >> 4) : byte;  // element 0: low nibble
        const int second = (g.deviation & kDevNibbleSwap) ? byte : (byte >> 4);
        const uint32_t lo = kE2m1Bf16[first & 7] | ((first & 0x08) ? 0x8000u : 0u);
        const uint32_t hi = kE2m1Bf16[second & 7] | ((second & 0x08) ? 0x8000u : 0u);
        const uint32_t v = lo | (hi << 16);
        reinterpret_cast<uint4*>(lut)[i] = make_uint4(v, v, v, v);
      }
    }
    {  // padding rows of A read as zeros (their cp.async is skipped)
      constexpr int kVecPerRow = C::kARowElems * 2 / 16;
      const int pad_rows = 16 - n_real;
      for (int p = threadIdx.x; p < C::STAGES * pad_rows * kVecPerRow; p += C::kThreads) {
        const int stage = p / (pad_rows * kVecPerRow), rem = p % (pad_rows * kVecPerRow);
        const int r = n_real + rem / kVecPerRow, v = rem % kVecPerRow;
        *reinterpret_cast<uint4*>(ring + stage * C::kStageBytes + C::kWBytes + C::kSfBytes +
                                  r * C::kARowElems * 2 + v * 16) = make_uint4(0, 0, 0, 0);
      }
    }

    float acc[4][C::J][4];
#pragma unroll
    for (int ch = 0; ch < 4; ++ch)
#pragma unroll
      for (int j = 0; j < C::J; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[ch][j][i] = 0.0f;
    const int wcol0 = warp * C::kWarpCols;  // local first column of this warp

    for (int64_t s0 = 0; s0 < nstages; s0 += 4 / C::KS) {
#pragma unroll
      for (int u = 0; u < 4 / C::KS; ++u) {
        const int64_t st = s0 + u;
        if (st < nstages) {  // block-uniform
          cp_async_wait<C::STAGES - 2>();
          __syncthreads();
          issue_stage(st + C::STAGES - 1);
          const uint8_t* base = ring + (st % C::STAGES) * C::kStageBytes;
          const uint8_t* w_s = base;
          const uint8_t* sf_s = base + C::kWBytes;
          const uint16_t* a_s = reinterpret_cast<const uint16_t*>(base + C::kWBytes + C::kSfBytes);
#pragma unroll
          for (int i = 0; i < C::KS; ++i) {
            const int64_t c = st * C::KS + i;
            if (c < chunks) {  // block-uniform
              const int64_t kb = 4 * c + quad;
              const bool valid = kb < kb_count;
              uint32_t r0[8], r1[8];
              {
                const uint4* src =
                    reinterpret_cast<const uint4*>(a_s + group * C::kARowElems + i * 64 + quad * 16);
                const uint4 x0 = src[0], x1 = src[1];
                r0[0] = x0.x;
                r0[1] = x0.y;
                r0[2] = x0.z;
                r0[3] = x0.w;
                r0[4] = x1.x;
                r0[5] = x1.y;
                r0[6] = x1.z;
                r0[7] = x1.w;
              }
              if (n_real > 8) {  // block-uniform; rows 8..15 of a decode tile are usually all padding
                const uint4* src =
                    reinterpret_cast<const uint4*>(a_s + (8 + group) * C::kARowElems + i * 64 + quad * 16);
                const uint4 x0 = src[0], x1 = src[1];
                r1[0] = x0.x;
                r1[1] = x0.y;
                r1[2] = x0.z;
                r1[3] = x0.w;
                r1[4] = x1.x;
                r1[5] = x1.y;
                r1[6] = x1.z;
                r1[7] = x1.w;
              } else {
#pragma unroll
                for (int t = 0; t < 8; ++t) r1[t] = 0;
              }
#pragma unroll
              for (int j = 0; j < C::J; ++j) {
                if (n_cta0 + wcol0 + 8 * j < N) {  // warp-uniform (N is a multiple of 16)
                  const int nl = wcol0 + 8 * j + group;
                  const uint2 wraw = *reinterpret_cast<const uint2*>(w_s + nl * C::kWRowBytes +
                                                                     C::swz(nl, i) * 32 + quad * 8);
                  const int64_t n = n_cta0 + nl;
                  const uint8_t wsc = valid ? sf_s[(nl / 128) * (C::KS * 512) + i * 512 + (n % 32) * 16 +
                                                   ((n % 128) / 32) * 4 + quad]
                                            : 0;
                  const __nv_bfloat16 sb = __float2bfloat16_rn(e4m3_to_float_hw(wsc));  // exact
                  const __nv_bfloat162 s2 = __halves2bfloat162(sb, sb);
                  const uint32_t s2u = *reinterpret_cast<const uint32_t*>(&s2);
#pragma unroll
                  for (int s4 = 0; s4 < 4; ++s4) {
                    const uint32_t word = s4 < 2 ? wraw.x : wraw.y;
                    const uint32_t byte0 = (word >> (16 * (s4 & 1))) & 0xFF,
                                   byte1 = (word >> (16 * (s4 & 1) + 8)) & 0xFF;
                    const uint32_t b0 = bf16x2_mul(lut[byte0 * kLutCopies + lane], s2u);
                    const uint32_t b1 = bf16x2_mul(lut[byte1 * kLutCopies + lane], s2u);
                    const uint32_t a[4] = {r0[2 * s4], r1[2 * s4], r0[2 * s4 + 1], r1[2 * s4 + 1]};
                    mma_bf16(acc[(u * C::KS + i) & 3][j], a, b0, b1);
                  }
                }
              }
            }
          }
        }
      }
    }
    cp_async_wait<0>();

    // Epilogue: the four chains in chain order (= the split-K kernel's warp order), alpha, bf16.
#pragma unroll
    for (int j = 0; j < C::J; ++j) {
      const int64_t col = n_cta0 + wcol0 + 8 * j + 2 * quad;
      if (n_cta0 + wcol0 + 8 * j < N) {
        const int which = (g.alpha_per_expert == 2 && col >= N / 2) ? 1 : 0;
        const float alpha = g.alpha[static_cast<int64_t>(expert) * g.alpha_per_expert + which];
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          float v[2];
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int i = 2 * half + e;
            v[e] = __fadd_rn(__fadd_rn(__fadd_rn(acc[0][j][i], acc[1][j][i]), acc[2][j][i]), acc[3][j][i]);
          }
          const int64_t row = row0 + 8 * half + group;
          const uint32_t lo = float_to_bf16_bits(__fmul_rn(alpha, v[0]));
          const uint32_t hi = float_to_bf16_bits(__fmul_rn(alpha, v[1]));
          *reinterpret_cast<uint32_t*>(g.out + elem_offset(row * N, g.deviation) + col) = lo | (hi << 16);
        }
      }
    }
    __syncthreads();  // the ring is reused by the block's next tile
  }
}

template <class C>
void launch_stream(const PipelineConfig& cfg, const GemmArgs& args, cudaStream_t s) {
  // A function attribute belongs to one device's context: set once per device (check -j binds
  // worker threads to different GPUs, kernels/worker_device.h). Two threads setting it at once on
  // one device set the same value: harmless.
  static std::atomic<uint64_t> attr_set_on{0};
  int device = 0;
  MOEFUZZ_CUDA_CHECK(cudaGetDevice(&device));
  const uint64_t bit = uint64_t{1} << (device & 63);
  if ((attr_set_on.load(std::memory_order_acquire) & bit) == 0) {
    MOEFUZZ_CUDA_CHECK(cudaFuncSetAttribute(grouped_gemm_stream_kernel<C>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSmem));
    attr_set_on.fetch_or(bit, std::memory_order_acq_rel);
  }
  // Tiles that exist at most: every expert with rows has ceil(count / 16) <= 1 + count / 16 tiles, so
  // min(experts, rows) + rows / 16 bounds num_tiles (read on the device); blocks past the real tiles
  // exit at once, but at decode max_rows / 16 is ~8x the real tiles and empty blocks cost launches.
  const int64_t pairs = cfg.pairs();
  const int64_t bound = std::min<int64_t>(cfg.total_experts(), pairs) + pairs / 16;
  const int64_t tiles = std::min<int64_t>(
      {cfg.max_rows() / 16, std::max<int64_t>(1, bound), 65535});  // grid.y limit: blocks loop
  const int64_t col_blocks = (args.n + C::BN - 1) / C::BN;
  const dim3 grid(static_cast<unsigned>(col_blocks), static_cast<unsigned>(tiles));
  grouped_gemm_stream_kernel<C><<<grid, C::kThreads, C::kSmem, s>>>(args);
  MOEFUZZ_CUDA_CHECK(cudaGetLastError());
}

// The stream tactic's tile: 128 columns per block, 8 warps (16 columns each), 2 64-element chunks
// per stage, 4 stages (54 KB of weights in flight per SM at 2 blocks per SM).
using StreamTile = StreamCfg<128, 8, 2, 4>;

void launch_gemm(const PipelineConfig& cfg, const GemmArgs& args, cudaStream_t s) {
  if (kTactics[cfg.tactic].stream) {
    launch_stream<StreamTile>(cfg, args, s);
    return;
  }
  const int rows_per_tile = kTactics[cfg.tactic].rows_per_tile;
  const int64_t max_tiles = cfg.max_rows() / rows_per_tile;
  if (max_tiles == 0) return;
  const int64_t col_steps =
      (args.n + kColsPerBlockStep * kBlockSteps - 1) / (kColsPerBlockStep * kBlockSteps);
  const dim3 grid(static_cast<unsigned>(max_tiles), static_cast<unsigned>(col_steps));
  if (rows_per_tile == 16)
    grouped_gemm_kernel<1><<<grid, kThreads, 0, s>>>(args);
  else
    grouped_gemm_kernel<4><<<grid, kThreads, 0, s>>>(args);
  MOEFUZZ_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_gemm1(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s) {
  launch_gemm(cfg,
              GemmArgs{b.a1_dq, b.w13, b.w13_sf, b.alpha1, b.g1, b.tile_expert, b.num_tiles, b.expert_offset,
                       b.expert_count, 2 * cfg.inter, cfg.hidden, 2, cfg.deviation},
              s);
}

void launch_gemm2(const PipelineConfig& cfg, const DeviceBuffers& b, cudaStream_t s) {
  launch_gemm(cfg,
              GemmArgs{b.a2_dq, b.w2, b.w2_sf, b.alpha2, b.y, b.tile_expert, b.num_tiles, b.expert_offset,
                       b.expert_count, cfg.hidden, cfg.inter, 1, cfg.deviation},
              s);
}

}  // namespace moefuzz::cuda
