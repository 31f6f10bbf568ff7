#pragma once
// What `-j` means for the commands that check many cases (check): how many worker threads by
// default, and how each worker gets its own kernel (drivers/campaign.h, CampaignOptions::jobs).
//
// Example:
//   o.jobs = moefuzz::cli::default_jobs();                  // the cores this process may use
//   o.worker_kernel = moefuzz::cli::worker_kernel_factory("cuda");   // worker w on GPU w % GPUs
#include <functional>
#include <memory>
#include <string>

#include "kernels/kernel.h"

namespace moefuzz::cli {

// The cores this process may run on (its CPU affinity mask), at least 1.
int default_jobs();
// make_kernel(kernel) for each worker, on the worker's own thread: a plugin or Python kernel gets its
// own worker process per worker. For a kernel of the registry's CUDA kind the thread is first bound
// to GPU worker % (GPUs visible), so every GPU of the host gets a set of workers
// (kernels/worker_device.h). Device-memory plugins are not bound: their forked calls run on the
// process's first visible GPU (CUDA_VISIBLE_DEVICES picks it).
std::function<std::unique_ptr<Kernel>(int worker)> worker_kernel_factory(const std::string& kernel);

}  // namespace moefuzz::cli
