#include "tools/check_workers.h"

#include <sched.h>

#include <algorithm>
#include <thread>

#include "kernels/registry.h"
#include "kernels/worker_device.h"

namespace moefuzz::cli {

int default_jobs() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

std::function<std::unique_ptr<Kernel>(int)> worker_kernel_factory(const std::string& kernel) {
  const auto& reg = kernel_registry();
  const bool gpu = std::any_of(reg.begin(), reg.end(), [&](const KernelEntry& e) {
    return e.name == kernel && e.kind == KernelKind::kCuda;
  });
  return [kernel, gpu](int worker) {
    if (gpu) bind_worker_gpu(worker);
    return make_kernel(kernel);
  };
}

}  // namespace moefuzz::cli
