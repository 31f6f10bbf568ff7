#pragma once
// Whether something in this process has initialized CUDA, and what: a forked child cannot use CUDA
// once its parent has, so the device-memory plugins (kernels/device_plugin.h, which run in forked
// children) must refuse to load in such a process instead of failing every call as a "device error"
// of the plugin. The GPU exact dots of the oracle (oracles/gpu/gpu_exact_dots.h) mark it.
//
// Example:
//   moefuzz::mark_cuda_in_process("--oracle-device gpu");
//   if (const std::string by = moefuzz::cuda_in_process(); !by.empty()) throw InputError(... + by);
#include <string>

namespace moefuzz {

// Records that `by` initializes CUDA in this process (the first caller's name is kept).
void mark_cuda_in_process(const std::string& by);
// Empty when nothing marked; else who initialized CUDA here.
std::string cuda_in_process();

}  // namespace moefuzz
