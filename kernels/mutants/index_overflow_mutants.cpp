// Index-overflow mutants (BUGZOO Z7, OVF): the CPU pipeline with ONE index product
// (core/index_products.h) formed in a 32-bit register. Each is exact on every case whose products stay
// below 2^31 (2^32 for the unsigned one), so only OVF's index-window probes reach the bug: the
// product's logical index is moved next to the crossing and the values past it are compared.
#include <fmt/format.h>

#include "kernels/mutants/mutant_entry.h"

namespace moefuzz::mutants {

void add_index_overflow_mutants(std::vector<KernelEntry>& out) {
  constexpr IndexProduct kAll[] = {
      IndexProduct::kExpertW13,   IndexProduct::kExpertW2,      IndexProduct::kExpertScales,
      IndexProduct::kPermutation, IndexProduct::kExpandedInput, IndexProduct::kGemm1Out,
      IndexProduct::kFc2Input,    IndexProduct::kGemm2Out,      IndexProduct::kCombineOut,
  };
  for (IndexProduct p : kAll) {
    const std::string what(index_product_name(p));
    out.push_back(mutant_entry(
        fmt::format("mutant/ovf-int32-{}", what),
        fmt::format("OVF: the {} index product formed in int32 (wraps past 2^31)", what), {"OVF"},
        [p](cpu::CpuConfig& c) { c.dev.index_widths[static_cast<size_t>(p)] = IndexWidth::kInt32; }));
  }
  // An unsigned 32-bit offset (a uint32 element count or a 32-bit TMA coordinate product): correct up to
  // 2^32, so the 2^31 probes pass it and only the 2^32 ones kill it.
  out.push_back(mutant_entry(
      "mutant/ovf-uint32-gemm1-out", "OVF: the gemm1-out index product formed in uint32 (wraps past 2^32)",
      {"OVF"}, [](cpu::CpuConfig& c) {
        c.dev.index_widths[static_cast<size_t>(IndexProduct::kGemm1Out)] = IndexWidth::kUint32;
      }));
}

}  // namespace moefuzz::mutants
