#pragma once
// The `cuda` kernel (registry name "cuda", defined when MOEFUZZ_WITH_CUDA): the CUDA MoE pipeline
// behind moefuzz::Kernel. GPU tests construct it directly, without the registry.
//
// Example:
//   std::unique_ptr<moefuzz::Kernel> k = moefuzz::make_cuda_kernel();
//   const moefuzz::Profile& p = moefuzz::cuda_kernel_profile();   // the contract it claims
#include <memory>

#include "core/profile.h"
#include "kernels/kernel.h"

namespace moefuzz {

std::unique_ptr<Kernel> make_cuda_kernel();
const Profile& cuda_kernel_profile();

}  // namespace moefuzz
