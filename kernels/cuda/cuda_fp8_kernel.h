#pragma once
// The `cuda-fp8` kernel (registry name "cuda-fp8", defined when MOEFUZZ_WITH_CUDA): the CUDA MoE
// pipeline's FP8 block-scaled W8A8 path (moe_pipeline.h, PipelineConfig::fp8) behind moefuzz::Kernel,
// claiming profile "vllm" for its FP8 contract (vLLM CUDA per-token-group quantizer, FP8 tensor-core
// dots of 64 K with a fresh accumulator, Triton scale order) and its routing/combine contract
// ([gate; up], routed scale applied in the combine, fp32 routing weights, bf16 combine products).
// It runs FP8 cases only (weight_format fp8_block, activations fp8_group); `cuda` runs NVFP4 ones.
//
// A CudaFp8KernelSpec with deviation bits makes a `cuda-fp8-mutant/...` (one deliberate device-side
// bug, the invariants that must kill it).
//
// Example:
//   std::unique_ptr<moefuzz::Kernel> k = moefuzz::make_cuda_fp8_kernel();
//   std::string why = k->supports(recipe);   // "" for an FP8 recipe on a machine with a GPU
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernel.h"

namespace moefuzz {

struct CudaFp8KernelSpec {
  std::string name = "cuda-fp8";
  std::string description =
      "CUDA pipeline, FP8 block W8A8: per-token-group E4M3 quantization, mma.sync e4m3 grouped GEMMs with "
      "128x128 block scales";
  uint32_t deviation = 0;            // cuda::CudaDeviation bits; 0 = the correct kernel
  std::vector<std::string> killers;  // expected_killers(); empty = not a mutant
};

std::unique_ptr<Kernel> make_cuda_fp8_kernel(CudaFp8KernelSpec spec = {});
// The registry entries: `cuda-fp8` and its mutants (called by add_cuda_kernels).
struct KernelEntry;
void add_cuda_fp8_kernels(std::vector<KernelEntry>& out);

}  // namespace moefuzz
