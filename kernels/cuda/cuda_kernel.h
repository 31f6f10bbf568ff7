#pragma once
// The `cuda` kernel (registry name "cuda", defined when MOEFUZZ_WITH_CUDA): the CUDA MoE pipeline
// behind moefuzz::Kernel. GPU tests construct it directly, without the registry.
//
// A CudaKernelSpec with deviation bits (moe_pipeline.h, CudaDeviation) makes a `cuda-mutant/...`:
// the same pipeline with one deliberate device-side bug and the invariants expected to kill it.
//
// Example:
//   std::unique_ptr<moefuzz::Kernel> k = moefuzz::make_cuda_kernel();
//   const moefuzz::Profile& p = moefuzz::cuda_kernel_profile();   // the contract it claims
//   auto m = moefuzz::make_cuda_kernel({.name = "cuda-mutant/x", .deviation = 1, .killers = {"ORACLE"}});
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/profile.h"
#include "kernels/kernel.h"

namespace moefuzz {

struct CudaKernelSpec {
  std::string name = "cuda";
  std::string description =
      "CUDA pipeline: warp top-k routing, NVFP4 quantization (software E2M1), mma.sync bf16 grouped GEMMs";
  uint32_t deviation = 0;            // cuda::CudaDeviation bits; 0 = the correct kernel
  std::vector<std::string> killers;  // expected_killers(); empty = not a mutant
};

std::unique_ptr<Kernel> make_cuda_kernel();
std::unique_ptr<Kernel> make_cuda_kernel(CudaKernelSpec spec);
const Profile& cuda_kernel_profile();
// Registers the `cuda-mutant/...` kernels (cuda_mutants.cpp); called by add_cuda_kernels.
struct KernelEntry;
void add_cuda_mutants(std::vector<KernelEntry>& out);

}  // namespace moefuzz
