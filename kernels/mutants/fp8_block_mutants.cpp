// Mutants of FP8 block-scaled W8A8 layers (weight_format fp8_block, SPEC-formats.md §4 "FP8 block
// W8A8"). They deviate only on FP8 cases (kernels/cpu/cpu_fp8.cpp), and like the FP8-only kernels they
// stand for they decline the other weight formats. The activation-quantizer mutants are caught where the
// oracle admits the exposed FC1/FC2 codes and scales (the quantize stages of ORACLE); the weight-scale ones
// by the GEMM stages.
#include "kernels/mutants/mutant_entry.h"

namespace moefuzz::mutants {

void add_fp8_block_mutants(std::vector<KernelEntry>& out) {
  // F1 (deepseek-ai/DeepSeek-V3 82f6008): the reference's amax floor written `min(amax, 1e-4)`, a
  // ceiling: every group with amax above 1e-4 gets the scale 1e-4 / 448 and saturates to +-448.
  out.push_back(mutant_entry(
      "mutant/f1-amax-floor-as-ceiling",
      "SPEC-formats F1: activation amax min(amax, 1e-4) (a ceiling, not a floor)", {"ORACLE"},
      [](cpu::CpuConfig& c) { c.dev.fp8_amax_floor_as_ceiling = true; },
      only_weight_format(WeightFormat::kFp8Block)));
  // F4 (sgl-project/sglang#31210 class): a UE8M0 activation scale rounded to the NEAREST power of two
  // instead of up, so |x| / s exceeds 448 for up to half the groups (their largest codes clip). Only
  // fp8_scales = ue8m0 cases.
  out.push_back(mutant_entry(
      "mutant/f3-ue8m0-not-rounded-up",
      "SPEC-formats F4: UE8M0 activation scale rounded to the nearest power of two", {"ORACLE"},
      [](cpu::CpuConfig& c) { c.dev.fp8_ue8m0_to_nearest = true; },
      only_weight_format(WeightFormat::kFp8Block)));
  // F5 (sgl-project/sglang#33005): Triton MoE ignored scale_fmt ue8m0 for the activations: fp32
  // scales where powers of two are the contract. Only fp8_scales = ue8m0 cases.
  out.push_back(mutant_entry(
      "mutant/f5-act-ue8m0-ignored", "SPEC-formats F5: fp32 activation scales under scale_fmt ue8m0",
      {"ORACLE"}, [](cpu::CpuConfig& c) { c.dev.fp8_act_ue8m0_ignored = true; },
      only_weight_format(WeightFormat::kFp8Block)));
  // F9 (vllm-project/vllm#52915, sgl-project/sglang#3345): the up half of w13 reads its weight-scale
  // block row one block too early in the stacked [gate; up] scales (its first block row is gate's last).
  out.push_back(mutant_entry(
      "mutant/f9-scale-block-row-offset",
      "SPEC-formats F9: w13 up half's weight-scale block row shifted by one", {"ORACLE"},
      [](cpu::CpuConfig& c) { c.dev.fp8_scale_block_row_offset = true; },
      only_weight_format(WeightFormat::kFp8Block)));
  // K-major vs MN-major scale layouts (issue #17; DeepGEMM accepts both, SPEC-formats.md §1.4): the
  // weight scales [N/128, K/128] read as [K/128, N/128]. Visible where both counts exceed 1.
  out.push_back(mutant_entry(
      "mutant/f-kmajor-scale-transposed",
      "FP8 weight block scales [nb][kb] read as [kb][nb] (K-major vs MN-major)", {"ORACLE"},
      [](cpu::CpuConfig& c) { c.dev.fp8_scales_transposed = true; },
      only_weight_format(WeightFormat::kFp8Block)));
  // Quantizer / GEMM group-size mismatch (issue #17): the quantizer writes one scale per 64 columns,
  // the GEMM reads one per 128 at the 128-group stride (wrong scales past the first ones of a row).
  out.push_back(mutant_entry(
      "mutant/f-act-group-64", "FP8 activation quantizer groups of 64, GEMM one scale per 128", {"ORACLE"},
      [](cpu::CpuConfig& c) { c.dev.fp8_act_group_64 = true; }, only_weight_format(WeightFormat::kFp8Block)));
  // Per-tensor instead of per-token-group activation scales (issue #17): one amax for the whole tensor,
  // so small tokens lose their precision (and their codes flush toward zero).
  out.push_back(mutant_entry(
      "mutant/f-per-tensor-act-scale",
      "FP8 activations with one scale for the whole tensor (not per token group)", {"ORACLE"},
      [](cpu::CpuConfig& c) { c.dev.fp8_per_tensor_act_scale = true; },
      only_weight_format(WeightFormat::kFp8Block)));
}

}  // namespace moefuzz::mutants
