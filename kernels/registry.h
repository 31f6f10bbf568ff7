#pragma once
// The kernel registry: built-in kernels, composition-matrix cells, mutants and plugins by name.
// `--kernel` takes a registry name or a path to a plugin .so: an exact registry name wins (composition
// cells and mutants contain '/'); otherwise anything containing '/' or ending in .so is loaded as a
// plugin (kernels/plugin_kernel.h).
//
// Example:
//   for (const auto& e : moefuzz::kernel_registry()) std::cout << e.name << "\n";
//   auto k = moefuzz::make_kernel("cpu");            // throws InputError for unknown names
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernel.h"

namespace moefuzz {

enum class KernelKind : uint8_t { kBuiltin, kComposition, kMutant, kCuda, kPlugin };

struct KernelEntry {
  std::string name;
  KernelKind kind;
  std::function<std::unique_ptr<Kernel>()> make;
};

const std::vector<KernelEntry>& kernel_registry();
std::unique_ptr<Kernel> make_kernel(const std::string& name_or_path);
// Families add their entries through explicit functions called once by kernels/registry.cpp (no
// static-initializer registration: it is silently dropped when linking static libraries).
void add_cpu_kernels(std::vector<KernelEntry>& out);          // kernels/cpu/
void add_composition_kernels(std::vector<KernelEntry>& out);  // kernels/cpu/ composition matrix
void add_mutant_kernels(std::vector<KernelEntry>& out);       // kernels/mutants/
void add_cuda_kernels(std::vector<KernelEntry>& out);         // kernels/cuda/ (builds with CUDA only)

}  // namespace moefuzz
