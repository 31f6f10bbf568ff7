#pragma once
// The kernel a fuzz target checks: $MOEFUZZ_KERNEL (a registry name such as `cpu`,
// `cpu-flashinfer`, `mutant/z1-rsf-twice`, or a plugin .so path; kernels/registry.h), default `cpu`.
// Made once and cached; the replay runner can override it per file (a regression names its kernel).
// An unknown name is bad outside input: the message is printed and the process exits with 2.
//
// Example:
//   const moefuzz::Kernel& k = moefuzz::fuzz::target_kernel();
//   const std::string& name = moefuzz::fuzz::target_kernel_name();
#include <string>

#include "kernels/kernel.h"

namespace moefuzz::fuzz {

const Kernel& target_kernel();
const std::string& target_kernel_name();
// "" = back to $MOEFUZZ_KERNEL / `cpu`. Throws InputError for an unknown name.
void set_target_kernel(const std::string& name);

}  // namespace moefuzz::fuzz
