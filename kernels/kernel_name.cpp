#include "kernels/kernel_name.h"

#include <filesystem>
#include <system_error>

#include "kernels/plugin_kernel.h"
#include "kernels/registry.h"

namespace moefuzz {

std::string stored_kernel_name(const std::string& name_or_path) {
  // Registry names first, as make_kernel resolves them: "compose/..." and "mutant/..." hold a '/'.
  for (const auto& e : kernel_registry())
    if (e.name == name_or_path) return name_or_path;
  if (!looks_like_plugin_path(name_or_path)) return name_or_path;
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::absolute(name_or_path, ec);
  return ec ? name_or_path : p.lexically_normal().string();
}

}  // namespace moefuzz
