#pragma once
// Internal to kernels/cuda: the device copies of NVFP4 expert weights that one thread's `cuda` runs
// keep between runs, found by content. A check runs the kernel ~20 times per case on the case and its
// transforms, which share most experts (GSCALE changes one, PERM reorders them, BATCH and SCALE1 none),
// and the host-to-device copy of the weights was ~88% of a run at M (BM_CudaLayer/M/phases: 127 of
// 145 ms): a run now finds each expert by its content hash (core/expert_fingerprint.h: remembered
// per frozen expert, so the ~3 MB of an M expert are hashed once per case, not once per run) and
// copies the resident copy device to device.
//
// A copy holds one expert in the pipeline's layout, [w13 codes][w2 codes][w13 scales][w2 scales]
// (moe_pipeline.cu: w13 = the kernel-order halves, scales 128x4-swizzled), so a run assembles its
// weight buffers from four device-to-device segments per expert (one launch for all of them,
// kernels/cuda/copy_segments.cu). Work is stream-ordered on the caller's stream: a copy evicted by an
// upload is freed after the copies already enqueued from it.
//
// Example (inside MoePipeline::upload_case):
//   const ExpertLayout l = ...;
//   ResidentExperts& r = thread_resident_experts();
//   const ResidentExperts::Key key = ResidentExperts::key_of(c.experts, e, l);
//   const uint8_t* d = r.find(key);
//   if (d == nullptr) { /* enqueue the reads of earlier find()s first */ d = r.upload(key, ew, l, kStream); }
#include <cuda_runtime.h>

#include <cstdint>
#include <list>
#include <memory>
#include <unordered_map>
#include <vector>

#include "core/case.h"

namespace moefuzz::cuda {

// The pipeline's per-expert weight layout.
struct ExpertLayout {
  int64_t hidden = 0, inter = 0;
  bool up_first = false;          // w13 = [up; gate] instead of [gate; up]
  int64_t w13_sf = 0, w2_sf = 0;  // swizzled scale bytes per expert
  int64_t w13_bytes() const { return 2 * inter * (hidden / 2); }
  int64_t w2_bytes() const { return hidden * (inter / 2); }
  int64_t bytes() const { return w13_bytes() + w2_bytes() + w13_sf + w2_sf; }
};

// Writes expert ew in the layout to dst (l.bytes() bytes): the one definition of a resident copy.
void write_expert_layout(const ExpertWeights& ew, const ExpertLayout& l, uint8_t* dst);

class ResidentExperts {
 public:
  explicit ResidentExperts(size_t capacity_bytes);
  ~ResidentExperts();
  ResidentExperts(const ResidentExperts&) = delete;
  ResidentExperts& operator=(const ResidentExperts&) = delete;

  // The key of expert e's copy in layout l: its content (core/expert_fingerprint.h) and the layout.
  struct Key {
    uint64_t low = 0, high = 0;
    bool operator==(const Key&) const = default;
  };
  static Key key_of(const SharedVector<ExpertWeights>& experts, size_t e, const ExpertLayout& l);
  // The device address of the copy under `key` (it becomes the most recently used), or nullptr.
  const uint8_t* find(const Key& key);
  // Uploads `ew` as the copy under `key` and returns its device address, valid for work enqueued on
  // `stream` after this call. It may evict the least recently used copies: enqueue every read of an
  // address find() gave before calling it. nullptr when the copy cannot be kept (larger than the
  // capacity, or the device has no room even after evicting every copy): the caller uploads directly.
  // Throws std::runtime_error on any other CUDA failure.
  const uint8_t* upload(const Key& key, const ExpertWeights& ew, const ExpertLayout& l, cudaStream_t stream);
  // find(), else upload().
  const uint8_t* find_or_upload(const SharedVector<ExpertWeights>& experts, size_t e, const ExpertLayout& l,
                                cudaStream_t stream);

  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }
  size_t bytes_held() const { return held_; }

 private:
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return static_cast<size_t>(k.low ^ (k.high * 0x9E3779B97F4A7C15ull));
    }
  };
  struct Copy {
    Key key;
    void* device = nullptr;
    size_t bytes = 0;
  };
  void evict_oldest(cudaStream_t stream);
  // `bytes` of the pinned staging ring for a copy enqueued on `stream` next.
  uint8_t* staging(size_t bytes, cudaStream_t stream);

  size_t capacity_, held_ = 0;
  std::list<Copy> lru_;  // most recently used first
  std::unordered_map<Key, std::list<Copy>::iterator, KeyHash> index_;
  // Pinned host memory for uploads, used as a ring: a case's new experts are staged one after another
  // and their copies overlap; only a wrap waits, for the copies out of the ring to finish (a wait
  // per expert was ~64 synchronizations per case at M).
  uint8_t* staging_ = nullptr;
  size_t staging_bytes_ = 0, staging_used_ = 0;
  cudaStream_t staging_stream_ = nullptr;  // the stream of the copies out of the ring
  int64_t hits_ = 0, misses_ = 0;
};

// The calling thread's copies on its current CUDA device (capacity: resident_cache_bytes of the
// device's memory, core/resident_cache_budget.h: 1 GiB or 1/64 of it, whichever is less, with up to 16
// workers per GPU; less with more).
ResidentExperts& thread_resident_experts();

}  // namespace moefuzz::cuda
