// The `cuda-fp8` kernel: the CUDA pipeline with PipelineConfig::fp8 (cuda_fp8_kernel.h).
//
// Why profile `vllm`: its FP8 fields name exactly what the device code does (vLLM's CUDA
// per_token_group_quant formula, IEEE; BLOCK_SIZE_K 64 -> 2 fresh tensor-core dots per 128-block,
// accumulator bounded by kHopperFp8MmaAccumBits; Triton scale order), and its other fields are ones
// the shared routing / align / combine stages implement ([gate; up], rsf multiplied in the combine,
// renorm epsilon 0, fp32 routing weights, bf16(y * bf16(w)) combine products, bf16 at every rounding
// point). docs/decisions.md keeps the choice.
#include <vector>

#include "core/errors.h"
#include "core/profile.h"
#include "kernels/cuda/cuda_fp8_kernel.h"
#include "kernels/cuda/moe_pipeline.h"
#include "kernels/cuda/pipeline_result.h"
#include "kernels/registry.h"

namespace moefuzz {
namespace {

constexpr const char* kProfileName = "vllm";

const Profile& claimed_profile() { return profile_by_name(kProfileName); }

class CudaFp8Kernel final : public Kernel {
 public:
  explicit CudaFp8Kernel(CudaFp8KernelSpec spec) : spec_(std::move(spec)) {}
  std::string name() const override { return spec_.name; }
  std::string profile() const override { return kProfileName; }
  std::string description() const override { return spec_.description; }
  std::vector<std::string> expected_killers() const override { return spec_.killers; }
  KernelClaims claims() const override {
    // One tile configuration; a row's quantization and GEMM read that row only (batch invariant).
    return {.deterministic = true, .batch_invariant = true, .tactics = 1};
  }
  std::string supports(const CaseRecipe& r) const override {
    std::string why;
    if (!cuda::cuda_device_available(&why)) return "cuda-fp8: no usable GPU (" + why + ")";
    return cuda::fp8_unsupported_reason(r, claimed_profile());
  }
  void run_layer(const Case& c, const RunOptions& opts, LayerResult& out) const override {
    // One tactic: RunOptions::tactic is always 0 here.
    const CaseRecipe& r = c.recipe;
    const std::string why = supports(r);
    if (!why.empty()) throw InputError(why);
    cuda::PipelineConfig cfg = cuda::config_for(r, claimed_profile(), 0);
    cfg.deviation = spec_.deviation;
    out =
        cuda::run_whole_case(cfg, c, opts.intermediates ? cuda::Exposure::kAll : cuda::Exposure::kDecisions);
  }

 private:
  CudaFp8KernelSpec spec_;
};

}  // namespace

std::unique_ptr<Kernel> make_cuda_fp8_kernel(CudaFp8KernelSpec spec) {
  return std::make_unique<CudaFp8Kernel>(std::move(spec));
}

void add_cuda_fp8_kernels(std::vector<KernelEntry>& out) {
  out.push_back({"cuda-fp8", KernelKind::kCuda, [] { return make_cuda_fp8_kernel(); }});
  // The activation scale dropped in the GEMM epilogue (acc += dot * b_scale): every output scaled by
  // 1/sa, which the layer oracle sees on any case whose activation scales are not 1.
  CudaFp8KernelSpec drop{.name = "cuda-fp8-mutant/drop-act-scale",
                         .description =
                             "FP8 GEMM epilogue applies the weight block scale only (activation "
                             "group scale dropped)",
                         .deviation = cuda::kDevFp8DropActScale,
                         .killers = {"ORACLE"}};
  out.push_back({drop.name, KernelKind::kCuda, [drop] { return make_cuda_fp8_kernel(drop); }});
}

}  // namespace moefuzz
