#pragma once
// InputError: bad input from outside (case file, flag, plugin, size). Drivers print what() once
// and exit with code 2 (kExitUsage). ToolError: moefuzz's own machinery failed outside the kernel
// (a CUDA error of the oracle's GPU dots): never a finding of the kernel; drivers print what() once
// and exit with code 2, as for moefuzz's own out-of-memory. Anything else escaping is a bug in moefuzz.
//
// Example:
//   throw moefuzz::InputError("recipe line 7: field 'top_k': 9 exceeds experts (8)");
//   throw moefuzz::ToolError("GPU exact dots: cudaMalloc failed: cudaErrorMemoryAllocation (...)");
#include <stdexcept>
#include <string>

namespace moefuzz {

inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitUsage = 2;

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what) : std::runtime_error(what) {}
};

class ToolError : public std::runtime_error {
 public:
  explicit ToolError(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace moefuzz
