// The `cuda` kernel: the CUDA MoE pipeline (moe_pipeline.h) behind the moefuzz::Kernel interface,
// claiming profile "sglang-cutlass-fp4" (w13 [gate; up], routed scale in top-k, fast-math NVFP4
// quantizer with the zero test on the scale, combine bf16(y * bf16(w)) summed in fp32, bf16 at every
// rounding point). The pipeline also implements the FlashInfer [up; gate] / vecMax / fp32
// slot-order variants (PipelineConfig), used when a profile asks for them.
#include <vector>

#include "core/errors.h"
#include "core/profile.h"
#include "kernels/cuda/cuda_fp8_kernel.h"
#include "kernels/cuda/cuda_kernel.h"
#include "kernels/cuda/moe_pipeline.h"
#include "kernels/cuda/pipeline_result.h"
#include "kernels/registry.h"

namespace moefuzz {
namespace {

constexpr const char* kProfileName = "sglang-cutlass-fp4";

// The contract this kernel implements: the profile table's row (core/profile.cpp).
const Profile& claimed_profile() { return profile_by_name(kProfileName); }

class CudaKernel final : public Kernel {
 public:
  explicit CudaKernel(CudaKernelSpec spec) : spec_(std::move(spec)) {}
  std::string name() const override { return spec_.name; }
  std::string profile() const override { return kProfileName; }
  std::string description() const override { return spec_.description; }
  std::vector<std::string> expected_killers() const override { return spec_.killers; }
  KernelClaims claims() const override {
    return {.deterministic = true,
            .batch_invariant = true,
            .tactics = cuda::kNumTactics,
            .materialized_ovf = true};
  }
  std::string supports(const CaseRecipe& r) const override {
    std::string why;
    if (!cuda::cuda_device_available(&why)) return "cuda: no usable GPU (" + why + ")";
    return cuda::unsupported_reason(r, claimed_profile());
  }
  void run_layer(const Case& c, const RunOptions& opts, LayerResult& out) const override {
    const CaseRecipe& r = c.recipe;
    const std::string why = supports(r);
    if (!why.empty()) throw InputError(why);
    cuda::PipelineConfig cfg = cuda::config_for(r, claimed_profile(), opts.tactic);
    cfg.deviation = spec_.deviation;
    out =
        cuda::run_whole_case(cfg, c, opts.intermediates ? cuda::Exposure::kAll : cuda::Exposure::kDecisions);
  }

 private:
  CudaKernelSpec spec_;
};

}  // namespace

std::unique_ptr<Kernel> make_cuda_kernel(CudaKernelSpec spec) {
  return std::make_unique<CudaKernel>(std::move(spec));
}
std::unique_ptr<Kernel> make_cuda_kernel() { return make_cuda_kernel(CudaKernelSpec{}); }
const Profile& cuda_kernel_profile() { return claimed_profile(); }

void add_cuda_kernels(std::vector<KernelEntry>& out) {
  out.push_back({"cuda", KernelKind::kCuda, [] { return make_cuda_kernel(); }});
  add_cuda_fp8_kernels(out);  // cuda_fp8_kernel.cpp: `cuda-fp8` (FP8 block W8A8) and its mutant
  add_cuda_mutants(out);      // cuda_mutants.cpp
}

}  // namespace moefuzz
