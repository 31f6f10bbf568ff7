#include "tools/check_workers.h"

#include <sched.h>

#include <algorithm>
#include <thread>

#include "core/resident_cache_budget.h"
#include "kernels/registry.h"
#include "kernels/worker_device.h"

namespace moefuzz::cli {

int default_jobs() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

bool runs_on_a_gpu(const std::string& kernel) {
  const auto& reg = kernel_registry();
  return std::any_of(reg.begin(), reg.end(),
                     [&](const KernelEntry& e) { return e.name == kernel && e.kind == KernelKind::kCuda; });
}

int default_check_jobs(const std::string& kernel) {
  return check_jobs(default_jobs(), runs_on_a_gpu(kernel) ? visible_gpu_count() : 0);
}

void set_gpu_workers(const std::string& kernel, int jobs) {
  if (!runs_on_a_gpu(kernel)) return;
  const int gpus = visible_gpu_count();
  if (gpus <= 0) return;
  set_workers_per_gpu((jobs + gpus - 1) / gpus);
  set_gpu_wait(gpu_wait_for(jobs, default_jobs()));
}

std::function<std::unique_ptr<Kernel>(int)> worker_kernel_factory(const std::string& kernel) {
  const bool gpu = runs_on_a_gpu(kernel);
  return [kernel, gpu](int worker) {
    if (gpu) bind_worker_gpu(worker);
    return make_kernel(kernel);
  };
}

}  // namespace moefuzz::cli
