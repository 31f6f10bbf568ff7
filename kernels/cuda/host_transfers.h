#pragma once
// Internal to kernels/cuda: batched copies between host vectors and device buffers through the
// calling thread's pinned buffers, one round trip per batch. A `cuda` run used to read its results
// with ~20 copies into pageable memory, each followed by a stream synchronization, and to write its
// inputs with ~10 pageable copies; with 32 check workers sharing 16 cores and one GPU, those waits
// and the driver's staging copies were ~14% of the check's CPU time (docs/perf.md). A batch enqueues
// every copy of one step on the stream and waits once.
//
// Example:
//   DeviceReads reads;
//   const auto out = reads.add(b.out, T * H * sizeof(uint16_t));
//   const auto ids = reads.add(b.ids, n * sizeof(int32_t));
//   reads.fetch(kStream);                                  // one synchronization
//   std::vector<uint16_t> y = reads.vector<uint16_t>(out, T * H);
//
//   DeviceWrites writes;
//   writes.add(d_hidden, c.hidden.data(), c.hidden.size() * 2);   // `c` must live until flush()
//   writes.flush(kStream);   // copies into pinned memory, enqueues, returns without waiting
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace moefuzz::cuda {

// Device-to-host copies gathered into one batch.
class DeviceReads {
 public:
  using Handle = size_t;  // where a read's bytes start in the batch
  // Queues `bytes` at device address `src`; valid after fetch().
  Handle add(const void* src, size_t bytes);
  // Enqueues every queued copy on `stream` into the thread's pinned read buffer and waits for them.
  // The buffer is the thread's: read the results before this thread's next fetch().
  void fetch(cudaStream_t stream);
  const uint8_t* data(Handle h) const { return base_ + h; }
  template <typename T>
  std::vector<T> vector(Handle h, int64_t count) const {
    std::vector<T> v(static_cast<size_t>(count));
    if (count > 0) std::memcpy(v.data(), data(h), v.size() * sizeof(T));
    return v;
  }

 private:
  struct Read {
    const void* src;
    size_t bytes;
    size_t offset;
  };
  std::vector<Read> reads_;
  size_t total_ = 0;
  const uint8_t* base_ = nullptr;
};

// Host-to-device copies gathered into one batch.
class DeviceWrites {
 public:
  // Queues `bytes` from host `src` (read at flush()) to device address `dst`.
  void add(void* dst, const void* src, size_t bytes);
  template <typename T>
  void add(T* dst, const std::vector<T>& src) {
    add(dst, src.data(), src.size() * sizeof(T));
  }
  // Copies every queued source into the thread's pinned write buffer (first waiting for the thread's
  // previous batch to leave it) and enqueues the copies on `stream`; returns without waiting for them.
  void flush(cudaStream_t stream);

 private:
  struct Write {
    void* dst;
    const void* src;
    size_t bytes;
  };
  std::vector<Write> writes_;
};

}  // namespace moefuzz::cuda
