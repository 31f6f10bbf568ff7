#include "fuzz/target_kernel.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

#include "core/errors.h"
#include "kernels/registry.h"

namespace moefuzz::fuzz {
namespace {

std::string& override_name() {
  static std::string s;
  return s;
}

std::string env_name() {
  const char* e = std::getenv("MOEFUZZ_KERNEL");
  return e != nullptr && *e != '\0' ? e : "cpu";
}

const Kernel& kernel_named(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Kernel>> cache;
  auto& k = cache[name];
  if (!k) k = make_kernel(name);
  return *k;
}

}  // namespace

const std::string& target_kernel_name() {
  static const std::string from_env = env_name();
  return override_name().empty() ? from_env : override_name();
}

const Kernel& target_kernel() {
  try {
    return kernel_named(target_kernel_name());
  } catch (const InputError& e) {
    std::fprintf(stderr, "moefuzz-fuzz: MOEFUZZ_KERNEL: %s\n", e.what());
    std::exit(2);
  }
}

void set_target_kernel(const std::string& name) {
  if (!name.empty()) kernel_named(name);  // throws InputError for an unknown name
  override_name() = name;
}

}  // namespace moefuzz::fuzz
