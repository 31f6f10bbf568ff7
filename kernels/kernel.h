#pragma once
// Kernel: something under test. Built-in CPU kernels, CUDA kernels, mutants and plugins all
// implement this interface; the check engine (properties/) calls only this.
//
// A kernel implements the whole layer (run_layer), declares the profile it claims and its claims
// (deterministic, batch-invariant), and says which recipes it supports so it is never called
// outside its domain. It returns outputs AND its discrete decisions (core/layer_io.h).
//
// Example:
//   std::unique_ptr<moefuzz::Kernel> k = moefuzz::make_kernel("cpu");   // kernels/registry.h
//   if (k->supports(recipe).empty()) {
//     moefuzz::LayerResult r = k->run_layer(c, {.tactic = 1});
//   }
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/case.h"
#include "core/index_products.h"
#include "core/layer_io.h"

namespace moefuzz {

struct KernelClaims {
  bool deterministic = true;    // REPEAT: bit-identical output on identical input
  bool batch_invariant = true;  // BATCH: a token's output does not depend on other tokens
  int tactics = 1;              // TACTIC: tile configurations selectable through RunOptions::tactic
  // OVF: the kernel honours RunOptions::index_window (forms its index products on logical indices),
  // so OVF probes every product past 2^31 on the case itself, without a 2^31-element tensor.
  bool index_window = false;
  // OVF: the kernel runs on a device with room for a case whose expert arena really crosses 2^31
  // (~4 GiB); OVF then runs that materialized probe (once per kernel and profile in a process).
  bool materialized_ovf = false;
};

struct RunOptions {
  int tactic = 0;  // 0 .. claims().tactics-1
  int threads = 1;
  // CANARY: the framework pre-fills outputs with this NaN payload; a kernel must overwrite all.
  uint32_t poison_bits = 0x7FC00001u;
  // CANARY (kernels/canary.h): when non-null, the framework owns a guarded buffer of exactly T*H
  // floats here (poisoned, with sentinel bands before and after) and the kernel writes its [T, H]
  // output into it instead of out.output; run_guarded copies it back. Kernels that ignore it still
  // work (their out.output is used, without band checks). Use output_span() below.
  float* output_data = nullptr;
  // Floats allocated after output_data's T*H (the trailing sentinel band). A correct kernel never
  // touches them; they only let an overhanging mutant's stray store stay memory-safe (CANARY sees it).
  int64_t output_slack = 0;
  // OVF (core/index_products.h): where the case's tokens and experts sit in a larger logical index
  // space. Only kernels whose claims say index_window receive a non-empty one; the output is the
  // same as without it for a correct kernel.
  IndexWindow index_window;
  // False: the caller reads only the output, the routing and the quantized codes (a metamorphic
  // comparison, whose oracle evaluation is conditioned on those decisions alone). A kernel may then
  // leave gemm1, activation, gemm2 and shared_output unset: the `cuda` kernel skips their downloads
  // (most of a run's host time). Ignoring it is always correct.
  bool intermediates = true;
  // The check (one case's invariants, drivers/check_engine.cpp check_case) this run belongs to, unique
  // in the process; 0: none. A kernel with call history (the stateful mutants: a race that follows
  // the run count, an autotuner) starts it afresh when this changes, so that a case's verdicts do not
  // depend on what its worker checked before (`check -j N` gives the same findings for any N).
  uint64_t check_id = 0;
};

// Where a kernel writes its [T, H] output: the guarded buffer when the framework supplies one, else
// out.output resized to `elements`.
//
// Example:
//   std::span<float> y = moefuzz::output_span(opts, out.output, T * H);
inline std::span<float> output_span(const RunOptions& opts, std::vector<float>& output, int64_t elements) {
  if (opts.output_data != nullptr) return {opts.output_data, static_cast<size_t>(elements)};
  if (static_cast<int64_t>(output.size()) != elements) output.resize(static_cast<size_t>(elements));
  return {output.data(), output.size()};
}

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual std::string name() const = 0;
  virtual std::string profile() const = 0;      // name of the Profile it claims (core/profile.h)
  virtual std::string description() const = 0;  // one line; mutants cite their BUGZOO row
  virtual KernelClaims claims() const = 0;
  // "" when the recipe is in the kernel's domain, else why not (shape, mode, size limits).
  virtual std::string supports(const CaseRecipe& recipe) const = 0;
  // The whole layer. The framework allocates, poisons and guards the output buffers (CANARY) through
  // `out`: a kernel writes into out.output (already sized [T, H] and poisoned) and fills decisions.
  virtual void run_layer(const Case& c, const RunOptions& opts, LayerResult& out) const = 0;
  // Invariants a mutant is expected to be killed by (empty for correct kernels).
  virtual std::vector<std::string> expected_killers() const { return {}; }
  bool is_mutant() const { return !expected_killers().empty(); }
};

}  // namespace moefuzz
