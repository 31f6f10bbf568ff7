#pragma once
// Builds a registry entry for a mutant: the CPU pipeline (kernels/cpu/) claiming the `cpu` kernel's
// profile with one CpuDeviation flag (or config adjustment) set. Mutants are small deviations of the
// real pipeline, never copies, so a mutant differs from `cpu` only where its bug lives.
//
// Example:
//   out.push_back(mutant_entry("mutant/z3-group-mask-zero", "BUGZOO Z3: ...", {"STRUCT", "ORACLE"},
//                              [](cpu::CpuConfig& c) { c.dev.group_mask_zero = true; }));
#include <functional>
#include <string>
#include <vector>

#include "core/recipe_text.h"
#include "kernels/cpu/cpu_kernel.h"
#include "kernels/registry.h"

namespace moefuzz::mutants {

// The profile every mutant claims: the same as the `cpu` kernel, so `cpu` is each mutant's twin.
inline constexpr const char* kMutantProfile = "sglang-cutlass-fp4";

// `domain` (optional) narrows the cases the mutant accepts, as a kernel that implements one format
// only declines the others: a mutant of an MXFP4-only path is an MXFP4 kernel ("" = accepted).
inline KernelEntry mutant_entry(std::string name, std::string description, std::vector<std::string> killers,
                                std::function<void(cpu::CpuConfig&)> deviate,
                                std::function<std::string(const CaseRecipe&)> domain = {}) {
  return {name, KernelKind::kMutant, [=] {
            cpu::CpuKernel::Spec s;
            s.name = name;
            s.profile = kMutantProfile;
            s.description = description;
            s.adjust = deviate;
            s.extra_supports = domain;
            s.killers = killers;
            return std::make_unique<cpu::CpuKernel>(std::move(s));
          }};
}

// The domain of a mutant whose bug lives on one weight format's path.
inline std::function<std::string(const CaseRecipe&)> only_weight_format(WeightFormat f) {
  return [f](const CaseRecipe& r) {
    return r.quant.weights == f ? std::string()
                                : "this mutant's path reads " + std::string(name_of(f)) + " weights only";
  };
}

// Each family file adds its mutants (kernels/mutants/*.cpp).
void add_scale_mutants(std::vector<KernelEntry>& out);
void add_routing_mutants(std::vector<KernelEntry>& out);
void add_combine_mutants(std::vector<KernelEntry>& out);
void add_memory_mutants(std::vector<KernelEntry>& out);
void add_weight_scale_mutants(std::vector<KernelEntry>& out);
void add_format_mutants(std::vector<KernelEntry>& out);
void add_execution_mutants(std::vector<KernelEntry>& out);
void add_index_overflow_mutants(std::vector<KernelEntry>& out);
void add_bf16_weight_mutants(std::vector<KernelEntry>& out);
void add_mxfp4_weight_mutants(std::vector<KernelEntry>& out);

}  // namespace moefuzz::mutants
