#pragma once
// The form of a --kernel argument that is stored in findings (`# kernel:`) and printed in REPRO lines:
// registry names unchanged, plugin paths absolute, so a replay works from any directory.
//
// Example:
//   stored_kernel_name("mutant/z1-rsf-twice")   // -> "mutant/z1-rsf-twice"
//   stored_kernel_name("build/libmy_kernel.so") // -> "/home/u/repo/build/libmy_kernel.so"
#include <string>

namespace moefuzz {

std::string stored_kernel_name(const std::string& name_or_path);

}  // namespace moefuzz
