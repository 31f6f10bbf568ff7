// core/resident_cache_budget.h: each worker's resident caches (two per worker of a GPU check) take
// 1/64 of a GPU (at most 1 GiB) with up to 16 workers per GPU and proportionally less with more, so
// that all of them together keep at most half of the GPU whatever `check -j` is.
#include <gtest/gtest.h>

#include <cstddef>

#include "core/resident_cache_budget.h"

namespace moefuzz {
namespace {

constexpr size_t kGiB = size_t{1} << 30;

TEST(ResidentCacheBudget, SixteenWorkersOrFewerKeepASixtyFourthAtMostOneGiB) {
  set_workers_per_gpu(1);
  EXPECT_EQ(resident_cache_bytes(24 * kGiB), 24 * kGiB / 64);
  EXPECT_EQ(resident_cache_bytes(80 * kGiB), kGiB);  // 1.25 GiB capped
  set_workers_per_gpu(16);
  EXPECT_EQ(resident_cache_bytes(24 * kGiB), 24 * kGiB / 64);
  set_workers_per_gpu(0);  // nonsense counts as one worker
  EXPECT_EQ(workers_per_gpu(), 1);
}

TEST(ResidentCacheBudget, AllCachesKeepAtMostHalfTheGpuWhateverTheWorkers) {
  for (const size_t total : {16 * kGiB, 24 * kGiB, 80 * kGiB, 141 * kGiB})
    for (const int workers : {1, 8, 16, 17, 32, 64, 256}) {
      set_workers_per_gpu(workers);
      const size_t two_caches_each = 2 * resident_cache_bytes(total) * static_cast<size_t>(workers);
      EXPECT_LE(two_caches_each, total / 2) << total / kGiB << " GiB, " << workers << " workers";
    }
  set_workers_per_gpu(32);
  EXPECT_EQ(resident_cache_bytes(80 * kGiB), 80 * kGiB / 128);
  set_workers_per_gpu(1);
}

}  // namespace
}  // namespace moefuzz
