#pragma once
// What a run CUDA pipeline returns to the oracle for chosen tokens: their routing decisions, every
// exposed stage (FC1/FC2 codes: NVFP4, or E4M3 with fp32 group scales for FP8; GEMM1 in semantic [gate | up]
// order, activation, GEMM2, separate shared-expert output) and their output rows, in the LayerResult layout
// of the sub-case that holds only those tokens (properties/case_transforms.h select_tokens). The `cuda`
// kernel reads all tokens; the GPU tests past 2^31 elements read a sample, since the host oracle cannot
// afford the whole case.
//
// Example:
//   moefuzz::cuda::MoePipeline p(cfg);
//   p.upload_case(c);
//   p.run();
//   moefuzz::LayerResult res = moefuzz::cuda::pipeline_result(p, {0, 17, T - 1}, cuda::Exposure::kAll);
#include <cstdint>
#include <vector>

#include "core/layer_io.h"
#include "kernels/cuda/moe_pipeline.h"

namespace moefuzz::cuda {

// What a result holds besides routing and output.
enum class Exposure {
  kNone,       // nothing more
  kDecisions,  // the FC1/FC2 codes (NVFP4, or E4M3 with group scales): RunOptions::intermediates off
  kAll,        // the codes and every intermediate value (GEMM1, activation, GEMM2, shared output)
};

// `tokens`: case token indices, in the order of the result's rows.
LayerResult pipeline_result(const MoePipeline& p, const std::vector<int64_t>& tokens, Exposure exposure);

// What the `cuda` and `cuda-fp8` kernels return for a whole case: upload, run, then every token's
// result with `exposure`, while the exposed host copies stay within 1 GiB (above that, routing and
// output only; the GPU tests read sampled rows through pipeline_result instead).
LayerResult run_whole_case(const PipelineConfig& cfg, const Case& c, Exposure exposure = Exposure::kAll);

}  // namespace moefuzz::cuda
