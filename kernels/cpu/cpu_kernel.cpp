#include "kernels/cpu/cpu_kernel.h"

#include "core/errors.h"
#include "kernels/registry.h"

namespace moefuzz::cpu {

std::string CpuKernel::supports(const CaseRecipe& recipe) const {
  try {
    (void)profile_by_name(spec_.profile);
  } catch (const InputError& e) {
    return std::string("claimed profile unavailable: ") + e.what();
  }
  if (std::string why = cpu_supports(recipe); !why.empty()) return why;
  return spec_.extra_supports ? spec_.extra_supports(recipe) : "";
}

CpuConfig CpuKernel::config_for(const Case& c, const RunOptions& opts) const {
  CpuConfig cfg = make_cpu_config(c.recipe, profile_by_name(spec_.profile), opts);
  cfg.dev = spec_.deviation;
  if (spec_.adjust) spec_.adjust(cfg);
  return cfg;
}

void CpuKernel::run_layer(const Case& c, const RunOptions& opts, LayerResult& out) const {
  CpuConfig cfg = config_for(c, opts);
  {
    std::lock_guard<std::mutex> lock(history_mu_);
    if (history_check_ != opts.check_id) {  // another check: a fresh history
      history_check_ = opts.check_id;
      runs_ = 0;
      shape_calls_.clear();
    }
    cfg.run_index = runs_++;
    if (cfg.dev.autotune_switch && opts.tactic == 0) {
      // REPEAT mutant (autotuner class): calls of a shape past the second use the tuned variant
      // (tactic 1, GEMM2's output kept in fp32 into the combine), so identical inputs give different
      // bits; each variant is within the contract's bounds on its own: only determinism is broken.
      const std::array<int64_t, 6> shape{cfg.tokens,  cfg.hidden, cfg.inter,
                                         cfg.experts, cfg.top_k,  cfg.slots};
      if (shape_calls_[shape]++ >= 2) {  // the tuned kernel: tactic 1 with GEMM2 fused into the combine
        cfg.tactic = 1;
        cfg.bf16_after_gemm2 = false;
      }
    }
  }
  const int64_t n = cfg.tokens * cfg.hidden;
  std::span<float> output =
      opts.output_data != nullptr
          ? std::span<float>(opts.output_data,
                             static_cast<size_t>(n + std::max<int64_t>(0, opts.output_slack)))
          : output_span(opts, out.output, n);
  cpu_run_layer(c, cfg, out, output);
}

}  // namespace moefuzz::cpu

namespace moefuzz {

void add_cpu_kernels(std::vector<KernelEntry>& out) {
  struct Builtin {
    const char* name;
    const char* profile;
    const char* what;
  };
  static const Builtin builtins[] = {
      {"cpu", "sglang-cutlass-fp4", "optimized CPU NVFP4 MoE pipeline (SGLang CUTLASS FP4 contract)"},
      {"cpu-flashinfer", "flashinfer-cutlass",
       "optimized CPU NVFP4 MoE pipeline (FlashInfer CUTLASS contract)"},
      {"cpu-trtllm", "trtllm-gen", "optimized CPU NVFP4 MoE pipeline (trtllm-gen contract: bf16 weights)"},
      {"cpu-matmul-ogs", "triton-matmul-ogs",
       "optimized CPU MoE pipeline (triton_kernels matmul_ogs contract: gpt-oss, interleaved w13, fp32 GEMM1 "
       "into the SwiGLU)"},
  };
  for (const Builtin& b : builtins)
    out.push_back({b.name, KernelKind::kBuiltin, [b] {
                     cpu::CpuKernel::Spec spec;
                     spec.name = b.name;
                     spec.profile = b.profile;
                     spec.description = b.what;
                     return std::make_unique<cpu::CpuKernel>(std::move(spec));
                   }});
}

}  // namespace moefuzz
