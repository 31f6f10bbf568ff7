#pragma once
// A sweep of fp32 bit patterns on every core, for the format tests that compare moefuzz's conversions
// with the CUDA Toolkit's: D::check(uint32_t bits) is called for bits = start, start + stride, ...
// (mod 2^32), `count` of them, each thread on its own D, merged at the end with D::merge.
//
// Example:
//   const Disagreements d = parallel_bit_sweep<Disagreements>(0, 61, uint64_t{1} << 26);
//   EXPECT_EQ(d.mismatches, 0u);
#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace moefuzz::test_support {

template <class D>
D parallel_bit_sweep(uint64_t start, uint64_t stride, uint64_t count) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<D> partial(threads);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const uint64_t begin = count * t / threads, end = count * (t + 1) / threads;
      for (uint64_t i = begin; i < end; ++i) partial[t].check(static_cast<uint32_t>(start + i * stride));
    });
  }
  for (auto& th : pool) th.join();
  D total;
  for (const auto& p : partial) total.merge(p);
  return total;
}

}  // namespace moefuzz::test_support
