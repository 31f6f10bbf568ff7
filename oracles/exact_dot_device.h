#pragma once
// Where the W4A4 GEMM stages (oracles/stages/gemm1.cpp, gemm2.cpp) evaluate their exact dots: on the
// CPU by default (exact_dot_rows, the reference), or on a device that computes all of one expert's
// dots at once, bit-identical to exact_dot_rows (oracles/gpu/gpu_exact_dots.h: the GPU). Everything
// else of the oracle (envelopes, flips, bounds, W4A16 dots) stays on the CPU. The choice is
// process-wide (`moefuzz --oracle-device gpu`, MOEFUZZ_ORACLE_DEVICE=gpu) and can be overridden per
// thread (tests and benchmarks compare both paths in one process).
//
// Example:
//   moefuzz::set_exact_dot_device(moefuzz::gpu::make_gpu_exact_dots());   // every thread: GPU dots
//   { moefuzz::ScopedExactDotDevice cpu(nullptr);                          // this thread: CPU again
//     const moefuzz::OracleEvaluation ev = moefuzz::evaluate(c, p, result); }
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "core/nvfp4.h"
#include "oracles/exact_dot.h"

namespace moefuzz {

class ExactDotDevice {
 public:
  virtual ~ExactDotDevice() = default;
  virtual std::string name() const = 0;
  // Rows [0, rows) of `a` against every row of each matrix of `weights` (each weights[m]->cols ==
  // a.cols()). `out` holds the results matrix after matrix, each block [rows][weights[m]->rows]
  // (sum_m rows * weights[m]->rows entries); every entry equals exact_dot_rows' bit for bit (sum,
  // abs_sum, nan). Throws ToolError (core/errors.h) on a device failure: moefuzz's own, never the kernel's.
  virtual void dots(const DecodedNvfp4& a, int64_t rows, std::span<const Nvfp4Matrix* const> weights,
                    ExactDot* out) = 0;
};

// Process-wide device (nullptr: CPU). Set before any evaluation starts (the CLI sets it at start).
void set_exact_dot_device(std::shared_ptr<ExactDotDevice> device);
// The device this thread's evaluations use: the thread's override if one is active, else the
// process-wide one; nullptr means exact_dot_rows on the CPU.
ExactDotDevice* exact_dot_device();

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
