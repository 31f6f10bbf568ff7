// The GPU exact-dot device in a build without nvcc: never available, so a request for it is exit 2.
#include "core/errors.h"
#include "oracles/gpu/gpu_exact_dots.h"

namespace moefuzz::gpu {

bool gpu_exact_dots_available(std::string* why) {
  if (why != nullptr) *why = "this moefuzz was built without CUDA (nvcc was not found at build time)";
  return false;
}

std::shared_ptr<ExactDotDevice> make_gpu_exact_dots(int64_t) {
  std::string why;
  gpu_exact_dots_available(&why);
  throw InputError("GPU exact dots: " + why);
}

}  // namespace moefuzz::gpu
