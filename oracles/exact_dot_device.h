#pragma once
// Where the W4A4 GEMM stages (oracles/stages/gemm1.cpp, gemm2.cpp) evaluate their exact dots: on the
// CPU by default (exact_dot_rows, the reference), or on a device that computes all of one expert's
// dots at once, bit-identical to exact_dot_rows (oracles/gpu/gpu_exact_dots.h: the GPU), and with
// them the flip magnitudes of the dots' bounds where the CPU's order can be repeated (DotFlips).
// Everything else of the oracle (envelopes, intervals, W4A16 dots) stays on the CPU. The choice is
// process-wide (`moefuzz --oracle-device gpu|cpu|auto`, MOEFUZZ_ORACLE_DEVICE; auto, the default: the
// GPU in a process whose kernel under test runs on it) and can be overridden per thread (tests and
// benchmarks compare both paths in one process).
//
// Example:
//   moefuzz::set_exact_dot_device(moefuzz::gpu::make_gpu_exact_dots());   // every thread: GPU dots
//   { moefuzz::ScopedExactDotDevice cpu(nullptr);                          // this thread: CPU again
//     const moefuzz::OracleEvaluation ev = moefuzz::evaluate(c, p, result); }
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "core/case.h"
#include "core/content_hasher.h"
#include "core/nvfp4.h"
#include "core/shared_vector.h"
#include "oracles/exact_dot.h"

namespace moefuzz {

// One weight matrix of a dots() call. `content`, when set, names the matrix's bytes (weight_content_key):
// the device may keep a copy under it and skip the upload when a later call names the same content.
struct DeviceWeights {
  const Nvfp4Matrix* matrix = nullptr;
  std::optional<Hash128> content;
};

// The content key of one NVFP4 matrix of expert e ("which": 0 gate, 1 up, 2 down), from the expert's
// remembered content hash (core/expert_fingerprint.h: hashed once while the expert cannot change).
Hash128 weight_content_key(const SharedVector<ExpertWeights>& experts, size_t e, int which);

// The flip magnitudes a dots() call computes along with its dots: for activation row r (its code flips
// rows[r]) and row o of a matrix, out at the dot's position holds the flip sum the GEMM bounds take
// (flips_are_dense ? weighted_abs_sum_rows of the per-column sums : sparse_weighted_abs_sum), bit for
// bit where weighted_abs_sum_rows_is_fused() (the stages hand flips to a device only there); NaN (any
// payload) where the CPU's is NaN.
struct DotFlips {
  std::span<const FlipList> rows;  // one per activation row of the call
  double* out = nullptr;           // one per dot, laid out as the dots
};

class ExactDotDevice {
 public:
  virtual ~ExactDotDevice() = default;
  virtual std::string name() const = 0;
  // Rows [0, rows) of `a` against every row of each matrix of `weights` (each matrix's cols ==
  // a.cols()). `out` holds the results matrix after matrix, each block [rows][matrix rows]
  // (sum_m rows * matrix rows entries); every entry equals RoundedDot::of(exact_dot_rows(...)) bit for
  // bit; with `flips`, their flip sums too. Throws ToolError (core/errors.h) on a device failure:
  // moefuzz's own, never the kernel's.
  virtual void dots(const DecodedNvfp4& a, int64_t rows, std::span<const DeviceWeights> weights,
                    RoundedDot* out, const DotFlips* flips) = 0;
  // Calls of fewer multiply-adds stay on the CPU (where the device's fixed cost per call would exceed
  // the CPU's time for them); 0: every call goes to the device.
  virtual int64_t smallest_call() const { return 0; }
};

// Process-wide device (nullptr: CPU). Set before any evaluation starts (the CLI sets it at start).
void set_exact_dot_device(std::shared_ptr<ExactDotDevice> device);
// `--oracle-device auto`: with no process-wide device set, the device `make` gives (nullptr: none, the
// CPU) once a kernel that runs on a GPU in this process has been made (core/cuda_in_process.h); made
// on first use, once. Until then, and in processes without such a kernel, the CPU. nullptr clears it.
void set_exact_dot_device_for_gpu_kernels(std::function<std::shared_ptr<ExactDotDevice>()> make);
// The device this thread's evaluations use: the thread's override if one is active, else the
// process-wide one, else the one for GPU kernels (above); nullptr means exact_dot_rows on the CPU.
ExactDotDevice* exact_dot_device();
// True when a call of `macs` multiply-adds goes to `device` (non-null and not below its smallest call).
inline bool use_dot_device(const ExactDotDevice* device, int64_t macs) {
  return device != nullptr && macs > 0 && macs >= device->smallest_call();
}

// Overrides the device for the current thread while alive (nullptr: CPU); restores the previous
// override on destruction.
class ScopedExactDotDevice {
 public:
  explicit ScopedExactDotDevice(ExactDotDevice* device);
  ~ScopedExactDotDevice();
  ScopedExactDotDevice(const ScopedExactDotDevice&) = delete;
  ScopedExactDotDevice& operator=(const ScopedExactDotDevice&) = delete;

 private:
  bool had_override_;
  ExactDotDevice* previous_;
};

}  // namespace moefuzz
