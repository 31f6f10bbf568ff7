#include "core/cuda_in_process.h"

#include <atomic>
#include <mutex>

namespace moefuzz {
namespace {
std::mutex g_mutex;
std::string g_by;
std::atomic<bool> g_gpu_kernel{false};
}  // namespace

void mark_cuda_in_process(const std::string& by) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (g_by.empty()) g_by = by;
}

std::string cuda_in_process() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  return g_by;
}

void mark_gpu_kernel_in_process() { g_gpu_kernel.store(true, std::memory_order_relaxed); }

bool gpu_kernel_in_process() { return g_gpu_kernel.load(std::memory_order_relaxed); }

}  // namespace moefuzz
