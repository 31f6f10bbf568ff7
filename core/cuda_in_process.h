#pragma once
// Whether something in this process has initialized CUDA, and what: a forked child cannot use CUDA
// once its parent has, so the device-memory plugins (kernels/device_plugin.h, which run in forked
// children) must refuse to load in such a process instead of failing every call as a "device error"
// of the plugin. The GPU exact dots of the oracle (oracles/gpu/gpu_exact_dots.h) mark it.
//
// Separately, whether a kernel under test that runs on a GPU in this process (the `cuda` kernels,
// KernelKind::kCuda) was made: `--oracle-device auto` puts the oracle's dots on the GPU only then
// (oracles/exact_dot_device.h), where the GPU is in use anyway.
//
// Example:
//   moefuzz::mark_cuda_in_process("--oracle-device gpu");
//   if (const std::string by = moefuzz::cuda_in_process(); !by.empty()) throw InputError(... + by);
//   moefuzz::mark_gpu_kernel_in_process();   // kernels/registry.cpp, making a kCuda kernel
//   bool gpu_kernel = moefuzz::gpu_kernel_in_process();
#include <string>

namespace moefuzz {

// Records that `by` initializes CUDA in this process (the first caller's name is kept).
void mark_cuda_in_process(const std::string& by);
// Empty when nothing marked; else who initialized CUDA here.
std::string cuda_in_process();

// Records that a kernel running on a GPU in this process was made (never cleared); lock-free to read.
void mark_gpu_kernel_in_process();
bool gpu_kernel_in_process();

}  // namespace moefuzz
