#include <cstdlib>
#include <string>

#include "core/errors.h"
#include "oracles/gpu/gpu_exact_dots.h"

namespace moefuzz::gpu {

std::string oracle_device_choice(std::string_view flag) {
  if (!flag.empty()) return std::string(flag);
  if (const char* env = std::getenv("MOEFUZZ_ORACLE_DEVICE"); env != nullptr && *env != '\0') return env;
  return "auto";
}

void use_oracle_device(std::string_view choice) {
  set_exact_dot_device(nullptr);
  set_exact_dot_device_for_gpu_kernels(nullptr);
  if (choice == "cpu") return;
  if (choice == "auto") {
    set_exact_dot_device_for_gpu_kernels([]() -> std::shared_ptr<ExactDotDevice> {
      std::string why;
      return gpu_exact_dots_available(&why) ? make_gpu_exact_dots(kAutoSmallestCall) : nullptr;
    });
    return;
  }
  if (choice != "gpu")
    throw InputError(
        "oracle device must be 'cpu', 'gpu' or 'auto' (--oracle-device, MOEFUZZ_ORACLE_DEVICE), got '" +
        std::string(choice) + "'");
  std::string why;
  if (!gpu_exact_dots_available(&why))
    throw InputError("oracle device 'gpu' requested (--oracle-device / MOEFUZZ_ORACLE_DEVICE) but " + why +
                     "; use --oracle-device cpu");
  set_exact_dot_device(make_gpu_exact_dots());
}

}  // namespace moefuzz::gpu
