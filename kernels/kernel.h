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
#include <memory>
#include <string>
#include <vector>

#include "core/case.h"
#include "core/layer_io.h"

namespace moefuzz {

struct KernelClaims {
  bool deterministic = true;     // REPEAT: bit-identical output on identical input
  bool batch_invariant = true;   // BATCH: a token's output does not depend on other tokens
  int tactics = 1;               // TACTIC: tile configurations selectable through RunOptions::tactic
};

struct RunOptions {
  int tactic = 0;                // 0 .. claims().tactics-1
  int threads = 1;
  // CANARY: the framework pre-fills outputs with this NaN payload; a kernel must overwrite all.
  uint32_t poison_bits = 0x7FC00001u;
};

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
