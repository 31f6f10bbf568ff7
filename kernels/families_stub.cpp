// Placeholder family hooks until each family lands; each family's file replaces its line here.
#include "kernels/registry.h"

namespace moefuzz {
#ifndef MOEFUZZ_WITH_CUDA
void add_cuda_kernels(std::vector<KernelEntry>&) {}
#endif
}  // namespace moefuzz
