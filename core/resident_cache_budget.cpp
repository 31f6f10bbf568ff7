#include "core/resident_cache_budget.h"

#include <algorithm>
#include <atomic>

namespace moefuzz {
namespace {

std::atomic<int> g_workers_per_gpu{1};

// Up to this many workers per GPU each cache keeps 1/64 of the GPU (two caches per worker: half).
constexpr int kFullShareWorkers = 16;
constexpr size_t kMaxCacheBytes = size_t{1} << 30;

}  // namespace

void set_workers_per_gpu(int workers) { g_workers_per_gpu.store(std::max(1, workers)); }
int workers_per_gpu() { return g_workers_per_gpu.load(); }

size_t resident_cache_bytes(size_t total_bytes) {
  const size_t sharers = static_cast<size_t>(std::max(kFullShareWorkers, workers_per_gpu()));
  return std::min(kMaxCacheBytes, total_bytes / (4 * sharers));
}

}  // namespace moefuzz
