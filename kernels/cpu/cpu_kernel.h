#pragma once
// CpuKernel: the Kernel-interface wrapper of the CPU pipeline (cpu_stages.h). The built-in `cpu`
// kernels, every composition-matrix cell and every mutant are CpuKernels that differ only in their
// Spec: claimed profile, a CpuDeviation, and an optional adjustment of the derived CpuConfig.
//
// Example:
//   moefuzz::cpu::CpuKernel::Spec s;
//   s.name = "cpu"; s.profile = "sglang-cutlass-fp4"; s.description = "optimized CPU pipeline";
//   moefuzz::cpu::CpuKernel k(std::move(s));
//   moefuzz::LayerResult r;
//   k.run_layer(c, {.tactic = 1, .threads = 2}, r);
#include <array>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_stages.h"
#include "kernels/kernel.h"

namespace moefuzz::cpu {

class CpuKernel : public Kernel {
 public:
  struct Spec {
    std::string name;
    std::string profile;
    std::string description;
    CpuDeviation deviation;
    std::function<void(CpuConfig&)> adjust;                        // applied after make_cpu_config
    std::function<std::string(const CaseRecipe&)> extra_supports;  // narrower domain ("" = ok)
    std::vector<std::string> killers;                              // expected_killers() (mutants)
  };

  explicit CpuKernel(Spec spec) : spec_(std::move(spec)) {}

  std::string name() const override { return spec_.name; }
  std::string profile() const override { return spec_.profile; }
  std::string description() const override { return spec_.description; }
  KernelClaims claims() const override {
    return {.deterministic = true, .batch_invariant = true, .tactics = kCpuTactics, .index_window = true};
  }
  std::string supports(const CaseRecipe& recipe) const override;
  void run_layer(const Case& c, const RunOptions& opts, LayerResult& out) const override;
  std::vector<std::string> expected_killers() const override { return spec_.killers; }

  // The config run_layer would use (tests, composition of stages).
  CpuConfig config_for(const Case& c, const RunOptions& opts) const;

 private:
  Spec spec_;
  // The call history the stateful mutants read, counted since the last call of another check
  // (RunOptions::check_id): a case's runs see the same history whichever worker checks it and
  // whatever it checked before (check -j N gives the same findings for any N).
  mutable std::mutex history_mu_;
  mutable uint64_t history_check_ = 0;
  mutable int64_t runs_ = 0;  // run_index for the racy-combine mutant
  // Calls per shape for the autotune-switch mutant (REPEAT): its "autotuner" profiles a shape on the
  // first two calls and switches to the tuned tactic from the third on.
  mutable std::map<std::array<int64_t, 6>, int64_t> shape_calls_;
};

}  // namespace moefuzz::cpu
