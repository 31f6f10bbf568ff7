#pragma once
// The GPU exact-dot device (docs/oracle.md, "Exact dots on the GPU"): one expert's W4A4 GEMM dots,
// every activation row against every weight row, evaluated with integer arithmetic on the GPU
// (oracles/gpu/dot_math.h, dp4a per 4 codes, __int128 totals) and bit-identical to exact_dot_rows.
// Per call it uploads the expert's packed weight rows and E4M3 bytes once and the activation rows'
// decoded tables once, launches one kernel over all (row, weight row) pairs and downloads the sums.
// Buffers and the stream are per thread and per CUDA device (worker threads bound to different GPUs
// each use their own), grown as needed and reused across calls.
//
// Selection: `use_oracle_device("gpu")` (what `moefuzz --oracle-device gpu` and
// MOEFUZZ_ORACLE_DEVICE=gpu do) installs it process-wide; without a usable GPU, or in a build without
// CUDA, it throws InputError (exit 2): a request for the GPU never falls back to the CPU silently.
// `auto` (the default) uses it where the kernel under test runs on the GPU anyway.
//
// Example:
//   moefuzz::gpu::use_oracle_device(moefuzz::gpu::oracle_device_choice(cli_value));  // cpu | gpu | auto
//   std::string why;
//   if (moefuzz::gpu::gpu_exact_dots_available(&why)) { auto d = moefuzz::gpu::make_gpu_exact_dots(); }
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "oracles/exact_dot_device.h"

namespace moefuzz::gpu {

// True when this build has CUDA and a CUDA device is usable; otherwise `why` says why not.
bool gpu_exact_dots_available(std::string* why);
// The GPU device (throws InputError when gpu_exact_dots_available is false). Calls of fewer than
// `smallest_call` multiply-adds stay on the CPU (ExactDotDevice::smallest_call).
std::shared_ptr<ExactDotDevice> make_gpu_exact_dots(int64_t smallest_call = 0);

// The smallest call `auto` sends to the GPU: 2^21 multiply-adds take ~0.1 ms on one core, about the
// fixed cost of a device call (upload, launch, synchronization, download) with 16 workers on one GPU.
inline constexpr int64_t kAutoSmallestCall = int64_t{1} << 21;

// The oracle-device choice: `flag` when non-empty (the --oracle-device value), else the environment
// variable MOEFUZZ_ORACLE_DEVICE when set and non-empty, else "auto".
std::string oracle_device_choice(std::string_view flag);
// Installs the choice process-wide: "cpu" (exact_dot_rows), "gpu" (make_gpu_exact_dots, every call)
// or "auto" (the GPU, for calls of kAutoSmallestCall multiply-adds and more, once a kernel that runs
// on a GPU in this process was made and a GPU is usable; the CPU otherwise: CUDA is never initialized
// for the oracle alone, so forked device-memory plugins keep working). Anything else, or "gpu" without a
// usable GPU, throws InputError with one clear message.
void use_oracle_device(std::string_view choice);

}  // namespace moefuzz::gpu
