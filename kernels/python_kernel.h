#pragma once
// PythonKernel: a kernel written in Python (PyTorch, Triton, numpy, or a CUDA extension called from
// Python), named on the command line as `--kernel py:MODULE:ATTR`. docs/python.md is the user guide.
//
// The kernel runs in a worker process (kernels/python_worker.h) that imports it once and keeps its
// CUDA context; moefuzz talks to it through framed messages. It implements the whole layer or any
// subset of the stages (route, quantize, gemm1, activation, gemm2, combine); moefuzz's CPU pipeline
// computes the rest under the profile the kernel claims (kernels/composed_pipeline.h), exactly as
// for a C plugin, so the oracle checks the Python stage where it happens.
//
// Tensors cross the process boundary once per content: the case's inputs and its expert weights are
// each sent under a 128-bit content key and cached by the worker, so the dozen runs an invariant
// suite makes on one case (and on transformed cases sharing its weights) ship the weights once.
//
// Faults: a Python exception is a kPluginError finding, a CUDA error kDeviceError, an out-of-memory
// kOutOfMemory, a crash kCrash, a hang kTimeout (MOEFUZZ_PLUGIN_TIMEOUT_S, default 30 s per call), a
// malformed output kBadResult. After a crash, hang or CUDA error the worker is replaced by a fresh
// one (a new CUDA context) and the campaign goes on. A module that cannot be imported, or a kernel
// object that does not describe itself correctly, is bad input (InputError, exit 2).
//
// Example:
//   auto k = moefuzz::make_python_kernel("py:examples.python.torch_moe:layer");
//   if (k->supports(recipe).empty()) k->run_layer(c, {}, result);   // KernelFault on a fault
#include <memory>
#include <string>

#include "kernels/kernel.h"

namespace moefuzz {

// True for "py:..." kernel names.
bool is_python_kernel_spec(const std::string& name);

// Starts the worker and reads the kernel's description. Throws InputError for a malformed spec, an
// interpreter or module that cannot be loaded, or an invalid description (unknown profile, no stage).
std::unique_ptr<Kernel> make_python_kernel(const std::string& spec);

}  // namespace moefuzz
