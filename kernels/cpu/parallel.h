#pragma once
// A small fork-join loop for the CPU pipeline: items [0, n) handed out one at a time through an
// atomic counter (experts differ wildly in row count, so static chunks would idle threads).
// Results never depend on the thread count: each item writes only its own outputs.
//
// Example:
//   moefuzz::cpu::parallel_for(experts, opts.threads, [&](int64_t e) { run_expert(e); });
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace moefuzz::cpu {

template <class Fn>
void parallel_for(int64_t n, int threads, Fn&& fn) {
  const int64_t workers = std::min<int64_t>(std::max(threads, 1), n);
  if (workers <= 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    try {
      for (int64_t i = next++; i < n; i = next++) fn(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
      next = n;
    }
  };
  std::vector<std::thread> pool;
  for (int64_t w = 1; w < workers; ++w) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace moefuzz::cpu
