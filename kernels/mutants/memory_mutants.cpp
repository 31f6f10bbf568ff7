// Memory / indexing mutants: overflowing offsets, tile overhang, reading unwritten output, writing input.
#include "kernels/mutants/mutant_entry.h"

namespace moefuzz::mutants {

void add_memory_mutants(std::vector<KernelEntry>& out) {
  // BUGZOO Z7 (SGLang #4727, vLLM #34507): `int32 offset = row * stride`; wraps only once
  // T*slots*max(2I, H) >= 2^31, where stores land at the wrapped offset or are lost.
  out.push_back(mutant_entry("mutant/z7-int32-row-offset", "BUGZOO Z7: expanded-row offset computed in int32 (wraps past 2^31)",
                             {"OVF"}, [](cpu::CpuConfig& c) { c.dev.int32_row_offset = true; }));
  // BUGZOO Z9 (kernels-community #1153): the output store is masked only in M; with H not a multiple of
  // the N tile the overhang writes into the next token's row (and past the last row).
  out.push_back(mutant_entry("mutant/z9-tile-overhang", "BUGZOO Z9: output tile store not masked in N (overhang into next row)",
                             {"CANARY", "ORACLE"}, [](cpu::CpuConfig& c) { c.dev.store_tile_overhang = true; }));
  // CANARY class (no single thread): the combine adds into the output buffer as if it were zeroed.
  out.push_back(mutant_entry("mutant/reads-unwritten-output", "CANARY: combine accumulates into the uninitialized output buffer",
                             {"CANARY", "FINITE", "ORACLE"}, [](cpu::CpuConfig& c) { c.dev.accumulate_into_output = true; }));
  // CANARY class: the kernel writes its (const) input tensor in place.
  out.push_back(mutant_entry("mutant/writes-input", "CANARY: the quantization prologue writes back into the input hidden states",
                             {"CANARY"}, [](cpu::CpuConfig& c) { c.dev.writes_input = true; }));
}

}  // namespace moefuzz::mutants
