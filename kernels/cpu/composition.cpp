// The composition matrix (SPEC.md §2.3): SGLang splits routed_scaling_factor between a top-k op and
// an expert runner, coordinated by should_fuse_routed_scaling_factor_in_topk. Each cell
//   compose/<topk>/<runner>/<fuse>/<shared>
//   topk   : softmax | grouped | hash           which top-k implementation routes
//   runner : scaling | plain                    the runner's sum-reduce multiplies rsf, or not
//   fuse   : fuse | nofuse                      the top-k multiplies rsf into the weights, or not
//   shared : separate | fused                   shared experts added after, or as extra top-k slots
// is a CPU pipeline with that split. Consistent cells (fuse+plain, nofuse+scaling) apply rsf once and
// are correct kernels; the others apply it twice (x s^2, BUGZOO Z1) or never (x 1, Z2) and are
// mutants expected to be killed by SCALE1 and ORACLE.
#include <string>

#include "kernels/cpu/cpu_kernel.h"
#include "kernels/registry.h"

namespace moefuzz {

void add_composition_kernels(std::vector<KernelEntry>& out) {
  struct TopK {
    const char* name;
    RoutingMode mode;
  };
  static const TopK topks[] = {{"softmax", RoutingMode::kSoftmax},
                               {"grouped", RoutingMode::kSigmoidGrouped},
                               {"hash", RoutingMode::kHash}};
  for (const TopK& tk : topks)
    for (bool runner_scales : {true, false})
      for (bool fuse : {true, false})
        for (SharedFusion shared : {SharedFusion::kSeparate, SharedFusion::kFused}) {
          const std::string name = std::string("compose/") + tk.name + "/" +
                                   (runner_scales ? "scaling" : "plain") + "/" + (fuse ? "fuse" : "nofuse") +
                                   "/" + (shared == SharedFusion::kFused ? "fused" : "separate");
          const bool consistent = fuse != runner_scales;
          const RoutingMode mode = tk.mode;
          const std::string topk_name = tk.name;
          out.push_back({name, KernelKind::kComposition, [=] {
                           cpu::CpuKernel::Spec s;
                           s.name = name;
                           // The top-k flag decides the contract the cell claims: fused -> the profile whose
                           // weights carry rsf; not fused -> the profile whose combine applies it.
                           s.profile = fuse ? "sglang-cutlass-fp4" : "sglang-triton";
                           s.description =
                               consistent ? "composition cell: rsf applied exactly once"
                                          : (fuse ? "composition cell: rsf applied twice (x s^2, BUGZOO Z1)"
                                                  : "composition cell: rsf never applied (x 1, BUGZOO Z2)");
                           s.adjust = [=](cpu::CpuConfig& c) {
                             c.topk_applies_rsf = fuse;
                             c.combine_applies_rsf = runner_scales;
                           };
                           s.extra_supports = [=](const CaseRecipe& r) -> std::string {
                             if (r.routing.mode != mode) return "cell needs " + topk_name + " routing";
                             if (r.routing.shared_fusion != shared)
                               return "cell needs its shared-expert fusion";
                             return "";
                           };
                           if (!consistent) s.killers = {"SCALE1", "ORACLE"};
                           return std::make_unique<cpu::CpuKernel>(std::move(s));
                         }});
        }
}

}  // namespace moefuzz
