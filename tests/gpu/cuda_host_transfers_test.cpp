// Batched host<->device copies through the thread's pinned buffers (kernels/cuda/host_transfers.h):
// every byte of every read and write arrives, at odd sizes and past the buffers' first size; a write
// batch's sources may change once it is flushed; a read batch sees what the stream wrote before it.
// And how threads wait for the GPU (kernels/worker_device.h set_gpu_wait) reaches the device's flags.
// Skips visibly without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "kernels/worker_device.h"
#ifdef MOEFUZZ_WITH_CUDA
#include <cuda_runtime.h>

#include "kernels/cuda/host_transfers.h"
#include "support/require_gpu.h"
#endif

#ifndef MOEFUZZ_WITH_CUDA
TEST(CudaHostTransfers, RequiresCudaBuild) {
  GTEST_SKIP() << "built without nvcc: the cuda kernel is not compiled";
}
#else
namespace moefuzz::cuda {
namespace {

// Odd sizes, and one past the buffers' first size (4 MiB), so the batch regrows.
const std::vector<size_t> kSizes = {1, 3, 17, 4096, (size_t{5} << 20) + 7};

std::vector<uint8_t> pattern(size_t bytes, uint8_t seed) {
  std::vector<uint8_t> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<uint8_t>(seed + i * 131 + (i >> 9));
  return v;
}

struct DeviceBlocks {
  std::vector<void*> blocks;
  explicit DeviceBlocks(const std::vector<size_t>& sizes) {
    for (size_t b : sizes) {
      void* p = nullptr;
      EXPECT_EQ(cudaMalloc(&p, b), cudaSuccess);
      blocks.push_back(p);
    }
  }
  ~DeviceBlocks() {
    for (void* p : blocks) cudaFree(p);
  }
};

std::vector<uint8_t> device_bytes(const void* d, size_t bytes) {
  std::vector<uint8_t> v(bytes);
  EXPECT_EQ(cudaMemcpy(v.data(), d, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return v;
}

TEST(CudaHostTransfers, ReadsReturnEveryByteOfEveryBuffer) {
  MOEFUZZ_REQUIRE_GPU();
  DeviceBlocks d(kSizes);
  for (int round = 0; round < 2; ++round) {  // the second batch must not see the first's bytes
    for (size_t i = 0; i < kSizes.size(); ++i) {
      const std::vector<uint8_t> want = pattern(kSizes[i], static_cast<uint8_t>(10 * round + i));
      // Written on the stream the batch reads on, without waiting: stream order alone must suffice.
      ASSERT_EQ(
          cudaMemcpyAsync(d.blocks[i], want.data(), want.size(), cudaMemcpyHostToDevice, cudaStreamPerThread),
          cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);  // `want` is pageable
    }
    DeviceReads reads;
    std::vector<DeviceReads::Handle> handles;
    for (size_t i = 0; i < kSizes.size(); ++i) handles.push_back(reads.add(d.blocks[i], kSizes[i]));
    reads.fetch(cudaStreamPerThread);
    for (size_t i = 0; i < kSizes.size(); ++i) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(reads.data(handles[i])) % 16, 0u) << "aligned for any element";
      EXPECT_EQ(reads.vector<uint8_t>(handles[i], static_cast<int64_t>(kSizes[i])),
                pattern(kSizes[i], static_cast<uint8_t>(10 * round + i)))
          << "buffer " << i << ", round " << round;
    }
  }
}

TEST(CudaHostTransfers, WritesLandAndTheirSourcesMayChangeAfterTheFlush) {
  MOEFUZZ_REQUIRE_GPU();
  DeviceBlocks first(kSizes), second(kSizes);
  std::vector<std::vector<uint8_t> > src;
  for (size_t i = 0; i < kSizes.size(); ++i) src.push_back(pattern(kSizes[i], static_cast<uint8_t>(i)));
  DeviceWrites a;
  for (size_t i = 0; i < kSizes.size(); ++i) a.add(first.blocks[i], src[i].data(), src[i].size());
  a.flush(cudaStreamPerThread);
  // Overwrite the sources and flush a second batch at once: it reuses the pinned buffer only after
  // the first batch's copies are done, so the first destinations keep the first bytes.
  for (size_t i = 0; i < kSizes.size(); ++i) src[i] = pattern(kSizes[i], static_cast<uint8_t>(100 + i));
  DeviceWrites b;
  for (size_t i = 0; i < kSizes.size(); ++i) b.add(static_cast<uint8_t*>(second.blocks[i]), src[i]);
  b.flush(cudaStreamPerThread);
  ASSERT_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
  for (size_t i = 0; i < kSizes.size(); ++i) {
    EXPECT_EQ(device_bytes(first.blocks[i], kSizes[i]), pattern(kSizes[i], static_cast<uint8_t>(i))) << i;
    EXPECT_EQ(device_bytes(second.blocks[i], kSizes[i]), pattern(kSizes[i], static_cast<uint8_t>(100 + i)))
        << i;
  }
}

TEST(CudaHostTransfers, SetGpuWaitSetsTheDevicesScheduleFlag) {
  MOEFUZZ_REQUIRE_GPU();
  const auto schedule = [] {
    unsigned flags = 0;
    EXPECT_EQ(cudaGetDeviceFlags(&flags), cudaSuccess);
    return flags & cudaDeviceScheduleMask;
  };
  set_gpu_wait(GpuWait::kYield);
  EXPECT_EQ(schedule(), static_cast<unsigned>(cudaDeviceScheduleYield));
  set_gpu_wait(GpuWait::kSpin);
  EXPECT_EQ(schedule(), static_cast<unsigned>(cudaDeviceScheduleSpin));
}

}  // namespace
}  // namespace moefuzz::cuda
#endif
