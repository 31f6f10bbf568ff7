// Number-format mutants (BUGZOO.md "format-level classes": seen in review, no single thread).
#include "kernels/mutants/mutant_entry.h"

namespace moefuzz::mutants {

void add_format_mutants(std::vector<KernelEntry>& out) {
  out.push_back(mutant_entry("mutant/fp4-nibble-swap", "format: quantizer packs element 0 in the high nibble",
                             {"ORACLE"}, [](cpu::CpuConfig& c) { c.dev.nibble_order_swapped = true; }));
  out.push_back(mutant_entry("mutant/e4m3-truncate",
                             "format: E4M3 block scale truncated instead of rounded to nearest even",
                             {"ORACLE"}, [](cpu::CpuConfig& c) { c.dev.e4m3_truncate = true; }));
  // Known gap (docs/mutants.md): the oracle admits both codes at an exact tie, so ORACLE cannot see it.
  out.push_back(mutant_entry("mutant/e2m1-ties-away", "format: E2M1 ties rounded away from zero", {"ORACLE"},
                             [](cpu::CpuConfig& c) { c.dev.e2m1_ties_away = true; }));
  // The NaN scale is an exposed decision: ORACLE rejects the code; FINITE compares with the oracle
  // conditioned on that very code (NaN there too), so it is not a killer of this one.
  out.push_back(mutant_entry("mutant/e4m3-no-saturation",
                             "format: block scale above 448 becomes NaN (no satfinite)", {"ORACLE"},
                             [](cpu::CpuConfig& c) { c.dev.e4m3_no_saturation = true; }));
  out.push_back(mutant_entry("mutant/fp4-negative-zero", "format: E2M1 code 0x8 (-0) decoded as -0.5",
                             {"ORACLE"}, [](cpu::CpuConfig& c) { c.dev.negative_zero_nonzero = true; }));
}

}  // namespace moefuzz::mutants
