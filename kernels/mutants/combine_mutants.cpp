// Combine mutants (SPEC.md §3.6).
#include "kernels/mutants/mutant_entry.h"

namespace moefuzz::mutants {

void add_combine_mutants(std::vector<KernelEntry>& out) {
  // BUGZOO Z6 (SGLang #11183, a missing sync): simulated as a lost update on every odd-numbered run of
  // the same kernel object, so identical inputs give different outputs while the kernel claims determinism.
  out.push_back(mutant_entry("mutant/z6-racy-combine", "BUGZOO Z6: racy combine loses one slot on odd-numbered runs",
                             {"REPEAT"}, [](cpu::CpuConfig& c) { c.dev.racy_combine = true; }));
  // BUGZOO Z13 (seed scenario): the combine's running sum held in bf16 (stored by truncation, `>> 16`)
  // where the profile accumulates in fp32. Per call each slot add loses < 1 bf16 ulp (2^-8 relative),
  // comparable to the output's own rounding; truncation always shrinks magnitudes, a bias that
  // accumulates over layers and tokens (DRIFT).
  out.push_back(mutant_entry("mutant/z13-bf16-truncated-combine", "BUGZOO Z13: combine accumulator truncated to bf16 (fp32 meant)",
                             {"DRIFT"}, [](cpu::CpuConfig& c) { c.dev.bf16_truncated_products = true; }));
}

}  // namespace moefuzz::mutants
