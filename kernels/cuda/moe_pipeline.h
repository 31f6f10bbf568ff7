#pragma once
// The CUDA MoE pipeline at the level of device buffers: what the `cuda` kernel (cuda_kernel.cpp)
// runs for a Case, and what the GPU tests and the bandwidth benchmark drive directly (sizes past
// 2^31 elements, weights generated on the device). No CUDA types appear here, so plain C++ files
// include it.
//
// Stages, in production order (SPEC.md §3.7), each a kernel in its own file:
//   route (routing.cu) -> align per expert (align.cu) -> quantize A1 to NVFP4 (nvfp4_quantize.cu)
//   -> GEMM1 (grouped_gemm.cu) -> SiLU*mul + requantize A2 (activation.cu) -> GEMM2 -> combine.
// FP8 block-scaled W8A8 (PipelineConfig::fp8, the `cuda-fp8` kernel) swaps the quantize, GEMM and
// activation stages for their FP8 forms and keeps routing, align and combine:
//   route -> align -> quantize A1 per token and 128 columns to E4M3 (fp8_group_quantize.cu)
//   -> GEMM1 on FP8 tensor cores (fp8_block_gemm.cu) -> SiLU*mul + requantize A2 (fp8_activation.cu)
//   -> GEMM2 -> combine.
//
// Example:
//   moefuzz::cuda::PipelineConfig cfg = moefuzz::cuda::config_for(recipe, profile, /*tactic=*/0);
//   moefuzz::cuda::MoePipeline p(cfg);
//   p.upload_case(c);                 // or p.fill_random_device(seed) for benchmarks
//   p.run();
//   std::vector<uint16_t> out = p.download_output();     // bf16 [T, H]
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/case.h"
#include "core/profile.h"

// PipelineConfig travels to the kernels by value; its helpers are callable on both sides.
#ifdef __CUDACC__
#define MOEFUZZ_HOST_DEVICE __host__ __device__
#else
#define MOEFUZZ_HOST_DEVICE
#endif

namespace moefuzz::cuda {

// GEMM tile configurations (RunOptions::tactic). Every tactic splits K into the same 4 chains
// (64-element chunk c -> chain c mod 4, chains summed in order) with the same per-quad K permutation,
// so every tactic computes bit-identical results (TACTIC invariant); they differ in rows per tile
// and in how the work is spread:
//   0: split-K kernel, 16-row tiles (4 warps = the 4 chains, 4 x 16 columns per block);
//   1: split-K kernel, 64-row tiles (prefill);
//   2: "stream" kernel, 16-row tiles: a block owns 128 columns over all of K, weights/scales/A
//      stream through a multi-stage cp.async ring, each warp keeps the 4 chains (no cross-warp
//      reduction). Not faster than tactic 0 (docs/perf.md, GPU), so tactic 0 is the default.
struct Tactic {
  int rows_per_tile;  // BM: rows of one expert per tile (16 decode, 64 prefill)
  bool stream;        // the stream kernel (grouped_gemm.cu) instead of the split-K kernel
};
inline constexpr int kNumTactics = 3;
inline constexpr Tactic kTactics[kNumTactics] = {{16, false}, {64, false}, {16, true}};
inline constexpr int kMaxRowsPerTile = 64;

// Deliberate CUDA-side bugs for the `cuda-mutant/...` kernels (cuda_mutants.cpp): each flag is a
// small deviation of the real device code, never a copy, so the invariants that must kill it are
// exercised on the GPU path itself. 0 in the `cuda` kernel.
enum CudaDeviation : uint32_t {
  kDevNone = 0,
  kDevRsfTwice = 1u << 0,         // BUGZOO Z1: rsf applied in top-k AND again in the combine (x s^2)
  kDevInt32Offsets = 1u << 1,     // BUGZOO Z7: GEMM expert/row element offsets formed in int32; the
                                  // mutant keeps the low 31 bits (lands at the wrapped offset, no fault)
  kDevNibbleSwap = 1u << 2,       // GEMM weight decode reads the HIGH nibble as element 0
  kDevFp8DropActScale = 1u << 3,  // FP8 GEMM epilogue multiplies the weight block scale only
};

struct PipelineConfig {
  int64_t tokens = 0, hidden = 0, inter = 0, experts = 0, top_k = 0;
  int64_t n_group = 1, topk_group = 1;
  int64_t shared_experts = 0;   // weights E .. E+shared-1
  int64_t fused_shared = 0;     // shared experts routed as extra top-k slots
  int64_t separate_shared = 0;  // shared experts computed apart and added after the routed sum
  int64_t vocab = 0;            // hash table rows
  int mode = 0;                 // RoutingMode
  int hash_score = 0;           // ScoreFunc
  bool renormalize = true;
  bool has_bias = false;
  float rsf = 1.0f;
  bool rsf_in_topk = true;
  float renorm_epsilon = 0.0f;
  bool fused_shared_weight_inv_rsf = true;
  bool up_first = false;               // w13 rows [up; gate] (FlashInfer/TRT-LLM) instead of [gate; up]
  bool zero_scale_by_vecmax = true;    // ZeroScaleRule::kVecMaxTest
  bool combine_bf16_products = false;  // CombineAccum::kBf16Products (else kFp32SlotOrder)
  float swiglu_limit = 0, swiglu_alpha = 1, swiglu_beta = 0;
  bool swiglu_clamped = false;
  // FP8 block W8A8 (weight_format fp8_block + activations fp8_group): E4M3 weights with fp32 128x128
  // block scales, activations quantized per token and 128 columns (vLLM CUDA formula, IEEE).
  bool fp8 = false;
  bool fp8_ue8m0 = false;  // activation group scales rounded up to powers of two (fp8_scales ue8m0)
  int tactic = 0;
  uint32_t deviation = kDevNone;  // CudaDeviation bits (mutants only)

  MOEFUZZ_HOST_DEVICE int64_t routed_slots() const {
    return top_k + fused_shared;
  }  // slots visible in LayerResult
  MOEFUZZ_HOST_DEVICE int64_t all_slots() const { return routed_slots() + separate_shared; }
  MOEFUZZ_HOST_DEVICE int64_t pairs() const { return tokens * all_slots(); }
  MOEFUZZ_HOST_DEVICE int64_t total_experts() const { return experts + shared_experts; }
  // Upper bound on permuted rows after padding every expert to a multiple of the tile height.
  int64_t max_rows() const;
};

// Why a recipe/profile is outside this pipeline's NVFP4 domain ("" when supported).
std::string unsupported_reason(const CaseRecipe& r, const Profile& p);
// Why a recipe/profile is outside this pipeline's FP8 block W8A8 domain ("" when supported): FP8
// recipes with H and I multiples of 128, and the FP8 contract the device code implements (vLLM CUDA
// quantizer, 2 fresh-accumulator dots per 128-block, Triton scale order, a tensor-core accumulator
// of at most kHopperFp8MmaAccumBits bits claimed).
std::string fp8_unsupported_reason(const CaseRecipe& r, const Profile& p);
PipelineConfig config_for(const CaseRecipe& r, const Profile& p, int tactic);

// Which pair (t * all_slots + slot) each permuted row holds (-1 = padding), and each pair's row.
struct Permutation {
  std::vector<int32_t> row_pair;  // [rows]
  std::vector<int64_t> pair_row;  // [pairs]
  int64_t rows = 0;
};

class MoePipeline {
 public:
  explicit MoePipeline(const PipelineConfig& cfg);
  ~MoePipeline();
  MoePipeline(const MoePipeline&) = delete;
  MoePipeline& operator=(const MoePipeline&) = delete;

  const PipelineConfig& config() const;
  // Host Case -> device (weights in the profile's w13 order, scales 128x4-swizzled per expert).
  void upload_case(const Case& c);
  // Benchmarks: random codes/scales/activations written by a device kernel (no host copy).
  void fill_random_device(uint64_t seed);
  void run();                      // all stages; synchronizes and throws std::runtime_error on CUDA errors
  float time_gemms_ms(int iters);  // median time of GEMM1 + GEMM2 alone over `iters` replays

  // Downloads (host order). Row-returning calls take permuted row indices.
  std::vector<uint16_t> download_output() const;                                        // bf16 [T, H]
  void download_routing(std::vector<int32_t>& ids, std::vector<float>& weights) const;  // [T, all_slots]
  Permutation download_permutation() const;
  // FP8 pipelines: per permuted row, the E4M3 codes [n, cols] and fp32 group scales [n, cols/128].
  Fp8GroupQuantized download_fc1_fp8_rows(const std::vector<int64_t>& rows) const;
  Fp8GroupQuantized download_fc2_fp8_rows(const std::vector<int64_t>& rows) const;
  // Per permuted row: packed codes (cols/2 bytes) and LINEAR scales (cols/16 bytes), read out of the
  // 128x4-swizzled device layout.
  void download_fc1_rows(const std::vector<int64_t>& rows, std::vector<uint8_t>& packed,
                         std::vector<uint8_t>& scales) const;
  void download_fc2_rows(const std::vector<int64_t>& rows, std::vector<uint8_t>& packed,
                         std::vector<uint8_t>& scales) const;
  std::vector<uint16_t> download_gemm1_rows(
      const std::vector<int64_t>& rows) const;  // bf16 [n, 2I] KERNEL order
  std::vector<uint16_t> download_act_rows(const std::vector<int64_t>& rows) const;    // bf16 [n, I]
  std::vector<uint16_t> download_gemm2_rows(const std::vector<int64_t>& rows) const;  // bf16 [n, H]
  // Batched reads, one round trip each (kernels/cuda/host_transfers.h): what pipeline_result reads.
  // Every token's output, routing and pair-to-row map, and the permuted rows in use.
  struct RunReadout {
    std::vector<uint16_t> output;   // bf16 [T, H]
    std::vector<int32_t> ids;       // [T, all_slots]
    std::vector<float> weights;     // [T, all_slots]
    std::vector<int64_t> pair_row;  // [pairs]
    int64_t rows = 0;               // permuted rows in use
  };
  RunReadout read_run() const;
  // The exposed stages of permuted rows `rows`, in their order: the FC1/FC2 codes (NVFP4 packed codes
  // and LINEAR scales, or FP8 codes and group scales) and, when `values`, GEMM1 (KERNEL order), the
  // activation and GEMM2, and GEMM2 of `shared_rows` (the separate shared expert's rows). `in_use`:
  // the permuted rows in use (RunReadout::rows); a row index outside them reads 0xFF bytes.
  struct StageReadout {
    std::vector<uint8_t> fc1_packed, fc1_scales, fc2_packed, fc2_scales;  // NVFP4 pipelines
    Fp8GroupQuantized fc1_fp8, fc2_fp8;                                   // FP8 pipelines
    std::vector<uint16_t> gemm1, act, gemm2, shared;                      // bf16, when `values`
  };
  StageReadout read_stages(const std::vector<int64_t>& rows, const std::vector<int64_t>& shared_rows,
                           bool values, int64_t in_use) const;
  // Bytes GEMM1 + GEMM2 must move at least: weights (codes + scales) of experts with >= 1 row,
  // activations read once, outputs written once.
  int64_t gemm_min_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Device-to-device copy bandwidth in GB/s (bytes read + bytes written over the median time of
// `iters` cudaMemcpy calls of `bytes` each): the ceiling the GEMM bandwidth is compared against.
double measure_copy_gbs(int64_t bytes, int iters);

// True when a CUDA device is present and usable (tests skip otherwise).
bool cuda_device_available(std::string* why = nullptr);
std::string cuda_device_name();

}  // namespace moefuzz::cuda
