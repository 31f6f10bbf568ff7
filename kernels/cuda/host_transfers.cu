// kernels/cuda/host_transfers.h: the thread's pinned buffers and the batched copies through them.
#include "kernels/cuda/host_transfers.h"

#include <algorithm>

#include "kernels/cuda/launch.h"

namespace moefuzz::cuda {
namespace {

// Offsets in a batch are 16-byte aligned, so every element type is aligned in the pinned buffer.
constexpr size_t kAlign = 16;
// A new buffer holds at least this much (an M run reads ~2 MB), so most threads allocate once.
constexpr size_t kMinPinnedBytes = size_t{4} << 20;

size_t aligned(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// A pinned host buffer that grows (to twice the need) and is freed at thread exit; `done` is recorded
// after the last batch that used it, so a writer waits for it before overwriting.
struct PinnedBuffer {
  uint8_t* data = nullptr;
  size_t bytes = 0;
  cudaEvent_t done = nullptr;
  int device = -1;  // the device `done` was created on

  ~PinnedBuffer() {  // errors at thread or process teardown are ignored (the context may be gone)
    if (data != nullptr) (void)cudaFreeHost(data);
    if (done != nullptr) (void)cudaEventDestroy(done);
  }
  uint8_t* reserve(size_t need) {
    if (need > bytes) {
      wait();  // an earlier batch may still read the old buffer
      if (data != nullptr) MOEFUZZ_CUDA_CHECK(cudaFreeHost(data));
      data = nullptr;
      bytes = 0;
      const size_t grown = std::max(kMinPinnedBytes, 2 * need);
      MOEFUZZ_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&data), grown));
      bytes = grown;
    }
    return data;
  }
  void wait() {
    if (done != nullptr) MOEFUZZ_CUDA_CHECK(cudaEventSynchronize(done));
  }
  void record(cudaStream_t stream) {
    int current = 0;
    MOEFUZZ_CUDA_CHECK(cudaGetDevice(&current));
    if (done != nullptr && device != current) {  // an event is recorded on its own device's streams
      MOEFUZZ_CUDA_CHECK(cudaEventSynchronize(done));
      MOEFUZZ_CUDA_CHECK(cudaEventDestroy(done));
      done = nullptr;
    }
    if (done == nullptr) {
      MOEFUZZ_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
      device = current;
    }
    MOEFUZZ_CUDA_CHECK(cudaEventRecord(done, stream));
  }
};

PinnedBuffer& thread_read_buffer() {
  thread_local PinnedBuffer b;
  return b;
}
PinnedBuffer& thread_write_buffer() {
  thread_local PinnedBuffer b;
  return b;
}

}  // namespace

DeviceReads::Handle DeviceReads::add(const void* src, size_t bytes) {
  const size_t offset = total_;
  reads_.push_back({src, bytes, offset});
  total_ += aligned(bytes);
  return offset;
}

void DeviceReads::fetch(cudaStream_t stream) {
  PinnedBuffer& buffer = thread_read_buffer();
  uint8_t* host = buffer.reserve(std::max<size_t>(total_, 1));
  for (const Read& r : reads_)
    if (r.bytes > 0)
      MOEFUZZ_CUDA_CHECK(cudaMemcpyAsync(host + r.offset, r.src, r.bytes, cudaMemcpyDeviceToHost, stream));
  MOEFUZZ_CUDA_CHECK(cudaStreamSynchronize(stream));
  base_ = host;
}

void DeviceWrites::add(void* dst, const void* src, size_t bytes) {
  if (bytes > 0) writes_.push_back({dst, src, bytes});
}

void DeviceWrites::flush(cudaStream_t stream) {
  if (writes_.empty()) return;
  size_t total = 0;
  for (const Write& w : writes_) total += aligned(w.bytes);
  PinnedBuffer& buffer = thread_write_buffer();
  buffer.wait();  // the previous batch's copies read the buffer until they are done
  uint8_t* host = buffer.reserve(total);
  size_t offset = 0;
  for (const Write& w : writes_) {
    std::memcpy(host + offset, w.src, w.bytes);
    MOEFUZZ_CUDA_CHECK(cudaMemcpyAsync(w.dst, host + offset, w.bytes, cudaMemcpyHostToDevice, stream));
    offset += aligned(w.bytes);
  }
  buffer.record(stream);
  writes_.clear();
}

}  // namespace moefuzz::cuda
