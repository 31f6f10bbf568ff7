// Routed-scaling-factor placement mutants.
#include "kernels/mutants/mutant_entry.h"

namespace moefuzz::mutants {

void add_scale_mutants(std::vector<KernelEntry>& out) {
  // BUGZOO Z1 (vLLM #45037): rsf applied in the experts AND on the output -> x s^2.
  out.push_back(mutant_entry("mutant/z1-rsf-twice",
                             "BUGZOO Z1: routed scale applied in top-k and again in the combine (x s^2)",
                             {"SCALE1", "ORACLE"}, [](cpu::CpuConfig& c) {
                               c.topk_applies_rsf = true;
                               c.combine_applies_rsf = true;
                             }));
  // BUGZOO Z2 (SGLang #8333): the FP4 path never multiplied rsf -> x 1/s.
  out.push_back(mutant_entry("mutant/z2-rsf-never", "BUGZOO Z2: routed scale never applied (x 1/s)",
                             {"SCALE1", "ORACLE"}, [](cpu::CpuConfig& c) {
                               c.topk_applies_rsf = false;
                               c.combine_applies_rsf = false;
                             }));
}

}  // namespace moefuzz::mutants
