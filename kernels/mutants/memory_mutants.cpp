// Memory / indexing mutants: overflowing offsets, tile overhang, reading unwritten output, writing input.
#include "kernels/mutants/mutant_entry.h"

namespace moefuzz::mutants {

void add_memory_mutants(std::vector<KernelEntry>& out) {
  // BUGZOO Z7 (SGLang #4727, vLLM #34507): index products computed in int32. The expert's packed w13
  // is found at byte offset `e * (2I x H/2)` of one flat weight arena, and the expanded-row output
  // offset is `row * stride`; both wrap only past 2^31, so the kernel is exact on every small case
  // and reads another expert's weights from the expert whose offset reaches 2^31 on (OVF's index
  // window moves the case's experts and rows there; kernels/mutants/index_overflow_mutants.cpp has one
  // mutant per product).
  out.push_back(mutant_entry("mutant/z7-int32-row-offset",
                             "BUGZOO Z7: expert-arena and row offsets computed in int32 (wrap past 2^31)",
                             {"OVF"}, [](cpu::CpuConfig& c) {
                               c.dev.index_widths[static_cast<size_t>(IndexProduct::kExpertW13)] =
                                   IndexWidth::kInt32;
                               c.dev.index_widths[static_cast<size_t>(IndexProduct::kGemm2Out)] =
                                   IndexWidth::kInt32;
                             }));
  // BUGZOO Z9 (kernels-community #1153): the output store is masked only in M; with H not a multiple of
  // the N tile the overhang writes into the next token's row (and past the last row).
  out.push_back(mutant_entry(
      "mutant/z9-tile-overhang", "BUGZOO Z9: output tile store not masked in N (overhang into next row)",
      {"CANARY", "ORACLE"}, [](cpu::CpuConfig& c) { c.dev.store_tile_overhang = true; }));
  // CANARY class (no single thread): the combine adds into the output buffer as if it were zeroed.
  out.push_back(mutant_entry(
      "mutant/reads-unwritten-output", "CANARY: combine accumulates into the uninitialized output buffer",
      {"CANARY", "FINITE", "ORACLE"}, [](cpu::CpuConfig& c) { c.dev.accumulate_into_output = true; }));
  // CANARY class: the kernel writes its (const) input tensor in place.
  out.push_back(mutant_entry("mutant/writes-input",
                             "CANARY: the quantization prologue writes back into the input hidden states",
                             {"CANARY"}, [](cpu::CpuConfig& c) { c.dev.writes_input = true; }));
}

}  // namespace moefuzz::mutants
