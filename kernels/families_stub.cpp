// Placeholder family hooks until each family lands; each family's file replaces its line here.
#include "kernels/registry.h"

namespace moefuzz {
void add_cpu_kernels(std::vector<KernelEntry>&) {}
void add_composition_kernels(std::vector<KernelEntry>&) {}
void add_mutant_kernels(std::vector<KernelEntry>&) {}
#ifndef MOEFUZZ_WITH_CUDA
void add_cuda_kernels(std::vector<KernelEntry>&) {}
#endif
}  // namespace moefuzz
