#pragma once
// What `-j` means for the commands that check many cases (check, mutants, replay): how many worker
// threads by default, and how each worker gets its own kernel (drivers/campaign.h,
// CampaignOptions::jobs).
//
// Example:
//   o.jobs = moefuzz::cli::default_jobs();                  // the cores this process may use
//   o.jobs = moefuzz::cli::default_check_jobs("cuda");      // 2 per core for a GPU kernel: check_jobs
//   o.worker_kernel = moefuzz::cli::worker_kernel_factory("cuda");   // worker w on GPU w % GPUs
#include <algorithm>
#include <functional>
#include <memory>
#include <string>

#include "kernels/kernel.h"
#include "kernels/worker_device.h"

namespace moefuzz::cli {

// The cores this process may run on (its CPU affinity mask), at least 1.
int default_jobs();
// Whether `kernel` is a registry kernel of the CUDA kind (it runs on a GPU of this process).
bool runs_on_a_gpu(const std::string& kernel);
// `check -j`'s default for `kernel`: check_jobs(default_jobs(), GPUs visible) for a kernel of the
// registry's CUDA kind, default_jobs() for the others.
int default_check_jobs(const std::string& kernel);
// Before a check's `jobs` workers start: for a kernel of the registry's CUDA kind, tells the resident
// caches how many workers share each visible GPU (set_workers_per_gpu) and sets how the workers wait
// for their GPUs (set_gpu_wait(gpu_wait_for(jobs, default_jobs()))); nothing for other kernels.
void set_gpu_workers(const std::string& kernel, int jobs);
// Workers for `cores` cores and `gpus` GPUs a GPU kernel runs on (0: a CPU kernel, or no GPU): one per
// core, and for a GPU kernel twice as many, the extra ones at most up to kMaxWorkersPerGpu per GPU. A
// GPU kernel's worker waits on its GPU for part of every run (the run, its two batched reads, the
// oracle's device dots) while the GPU stays mostly idle (~34% of its SMs busy at `-j 16`), so one worker
// per core leaves cores idle: `-j 32` checked 1.15x the all-invariant cases of `-j 16` on a 16-core H100
// host (docs/perf.md); after the waits of `-j 32` were made to yield (gpu_wait_for), 1.09x `-j 16`. The
// workers' resident caches shrink as more share a GPU (core/resident_cache_budget.h, set by set_gpu_workers),
// so they keep at most half of it whatever N.
inline constexpr int kMaxWorkersPerGpu = 32;
constexpr int check_jobs(int cores, int gpus) {
  return gpus <= 0 ? cores : std::max(cores, std::min(2 * cores, kMaxWorkersPerGpu * gpus));
}
// How `jobs` workers on `cores` cores wait for their GPU: yielding their cores when there are more
// workers than cores (check_jobs' default for a GPU kernel), else spinning. Measured on a 16-core H100
// host at `-j 32` (docs/perf.md): yielding checked 1.06x the all-invariant cases of spinning; blocking
// (sleeping until the GPU signals) 0.71x, its wake-ups being slower than a run's short waits.
constexpr GpuWait gpu_wait_for(int jobs, int cores) {
  return jobs > cores ? GpuWait::kYield : GpuWait::kSpin;
}
// make_kernel(kernel) for each worker, on the worker's own thread: a plugin or Python kernel gets its
// own worker process per worker. For a kernel of the registry's CUDA kind the thread is first bound
// to GPU worker % (GPUs visible), so every GPU of the host gets a set of workers
// (kernels/worker_device.h). Device-memory plugins are not bound: their forked calls run on the
// process's first visible GPU (CUDA_VISIBLE_DEVICES picks it).
std::function<std::unique_ptr<Kernel>(int worker)> worker_kernel_factory(const std::string& kernel);

}  // namespace moefuzz::cli
