#include "kernels/registry.h"

#include "core/cuda_in_process.h"
#include "core/errors.h"
#include "kernels/plugin_kernel.h"
#include "kernels/python_kernel.h"

namespace moefuzz {

const std::vector<KernelEntry>& kernel_registry() {
  static const std::vector<KernelEntry> entries = [] {
    std::vector<KernelEntry> v;
    add_cpu_kernels(v);
    add_composition_kernels(v);
    add_mutant_kernels(v);
#ifdef MOEFUZZ_WITH_CUDA  // kernels/cuda/ is compiled only where nvcc was found (cmake/Cuda.cmake)
    add_cuda_kernels(v);
#endif
    return v;
  }();
  return entries;
}

std::unique_ptr<Kernel> make_kernel(const std::string& name_or_path) {
  // Registry names first: composition cells and mutants have '/' in their names
  // ("compose/grouped/plain/fuse/separate", "mutant/z1-rsf-twice"), which would otherwise look like paths.
  for (const auto& e : kernel_registry())
    if (e.name == name_or_path) {
      if (e.kind == KernelKind::kCuda) mark_gpu_kernel_in_process();  // --oracle-device auto reads it
      return e.make();
    }
  if (is_python_kernel_spec(name_or_path))
    return make_python_kernel(name_or_path);  // kernels/python_kernel.h
  if (looks_like_plugin_path(name_or_path))
    return make_plugin_kernel(name_or_path);  // kernels/plugin_kernel.h
  std::string known;
  for (const auto& e : kernel_registry()) known += (known.empty() ? "" : ", ") + e.name;
  throw InputError("unknown kernel '" + name_or_path + "' (known: " + (known.empty() ? "none" : known) + ")");
}

}  // namespace moefuzz
