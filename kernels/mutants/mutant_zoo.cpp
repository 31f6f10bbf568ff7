// add_mutant_kernels: the whole zoo, family by family (docs/kernels.md has the table).
#include "kernels/mutants/mutant_entry.h"

namespace moefuzz {

void add_mutant_kernels(std::vector<KernelEntry>& out) {
  mutants::add_scale_mutants(out);
  mutants::add_routing_mutants(out);
  mutants::add_combine_mutants(out);
  mutants::add_memory_mutants(out);
  mutants::add_weight_scale_mutants(out);
  mutants::add_format_mutants(out);
  mutants::add_execution_mutants(out);
  mutants::add_index_overflow_mutants(out);
  mutants::add_bf16_weight_mutants(out);
  mutants::add_mxfp4_weight_mutants(out);
  mutants::add_fp8_block_mutants(out);
}

}  // namespace moefuzz
