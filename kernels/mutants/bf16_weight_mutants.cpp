// Mutants of layers with bf16 weights (weight_format bf16, SPEC-formats.md §4 "BF16"). They deviate
// only on bf16-weight cases; on NVFP4 cases they are the `cpu` kernel.
#include "kernels/mutants/mutant_entry.h"

namespace moefuzz::mutants {

void add_bf16_weight_mutants(std::vector<KernelEntry>& out) {
  // SPEC-formats B7 (vllm-project/vllm#42436): a tensor-descriptor fused_moe kernel miscompiled the
  // ragged last K tile (K = 511). Here both bf16 GEMMs drop the elements past the last full 64-wide
  // K tile: H or I not a multiple of 64. PAD's padding to a multiple of 128 removes the ragged tile.
  out.push_back(mutant_entry(
      "mutant/b7-ragged-k-tile-dropped", "SPEC-formats B7: bf16 GEMMs drop a ragged last 64-wide K tile",
      {"ORACLE", "PAD"}, [](cpu::CpuConfig& c) { c.dev.ragged_k_tile_dropped = true; }));
}

}  // namespace moefuzz::mutants
