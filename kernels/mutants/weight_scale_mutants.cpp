// Weight-scale mutants: swizzle padding, per-half global scales, per-expert scale strides.
#include "kernels/mutants/mutant_entry.h"

namespace moefuzz::mutants {

void add_weight_scale_mutants(std::vector<KernelEntry>& out) {
  // BUGZOO Z10 (TensorRT-LLM #10331): the partial last 128-row tile of the 128x4 swizzled scales is
  // indexed with its 32x4 atom transposed; rows past the end read zero padding. Only when a weight
  // matrix's row count (I or H) is not a multiple of 128.
  out.push_back(mutant_entry(
      "mutant/z10-swizzle-tail", "BUGZOO Z10: scale swizzle of the partial last 128-row tile mishandled",
      {"PAD", "ORACLE"}, [](cpu::CpuConfig& c) { c.dev.swizzle_tail_transposed = true; }));
  // BUGZOO Z11 (vLLM #54974): the gate's global scale used for the up half too.
  out.push_back(mutant_entry(
      "mutant/z11-up-uses-gate-global", "BUGZOO Z11: up half dequantized with the gate's global scale",
      {"GSCALE", "ORACLE"}, [](cpu::CpuConfig& c) { c.dev.up_uses_gate_global = true; }));
  // BUGZOO Z12 (vLLM #57092): weight-scale expert stride 0, every expert reads expert 0's block scales.
  out.push_back(mutant_entry(
      "mutant/z12-expert0-scales", "BUGZOO Z12: every expert reads expert 0's weight block scales",
      {"PERM", "ORACLE"}, [](cpu::CpuConfig& c) { c.dev.expert0_weight_scales = true; }));
  // BUGZOO Z10 on the down projection alone: w2's partial last 128-row scale tile (H rows) read with
  // its 32x4 atom transposed. Downstream of every quantization decision, so the relations see it:
  // PAD's zero-padding to a multiple of 128 removes the partial tile and with it the bug.
  out.push_back(mutant_entry(
      "mutant/z10-down-swizzle-tail", "BUGZOO Z10: w2's partial last 128-row scale tile read transposed",
      {"PAD", "ORACLE"}, [](cpu::CpuConfig& c) { c.dev.down_swizzle_tail_transposed = true; }));
  // GSCALE class (a global scale applied twice, like Z1's scale): w2's global dequant scale is folded
  // into alpha and multiplied again in the epilogue. Exchanging 2^k between block and global scales
  // then changes the output by 2^-k.
  out.push_back(mutant_entry("mutant/down-global-twice", "GSCALE: w2's global dequant scale multiplied twice",
                             {"GSCALE", "ORACLE"},
                             [](cpu::CpuConfig& c) { c.dev.down_global_twice = true; }));
  // BUGZOO Z12 class (per-expert pointer arithmetic): an off-by-one in the per-expert w2 table - the
  // last expert reads expert E-2's whole down projection. Consistent in its scales (GSCALE holds),
  // but which expert is last is a label: relabeling experts moves the bug (PERM).
  out.push_back(mutant_entry(
      "mutant/last-expert-neighbour-w2", "Z12 class: the last expert reads expert E-2's down projection",
      {"PERM", "ORACLE"}, [](cpu::CpuConfig& c) { c.dev.last_expert_neighbour_down = true; }));
}

}  // namespace moefuzz::mutants
