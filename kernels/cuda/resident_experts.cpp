#include "kernels/cuda/resident_experts.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>

#include "core/content_hasher.h"
#include "core/expert_fingerprint.h"
#include "core/resident_cache_budget.h"
#include "core/swizzle.h"
#include "kernels/cuda/launch.h"

namespace moefuzz::cuda {
namespace {

// The staging ring: a medium-shape expert is at most ~0.9 MB, so a case's 64 new experts wait ~4 times; 32
// workers hold 512 MiB of pinned host memory.
constexpr size_t kStagingRingBytes = size_t{16} << 20;
constexpr size_t kStagingAlign = 256;

// The expert's content (core/expert_fingerprint.h) in this layout.
Hash128 layout_key(const Hash128& content, const ExpertLayout& l) {
  ContentHasher h;
  const int64_t layout[3] = {l.hidden, l.inter, l.up_first ? 1 : 0};
  h.add_bytes(layout, sizeof layout);
  h.add_bytes(&content, sizeof content);
  return h.value128();
}

}  // namespace

void write_expert_layout(const ExpertWeights& ew, const ExpertLayout& l, uint8_t* dst) {
  const Nvfp4Matrix& first = l.up_first ? ew.up : ew.gate;
  const Nvfp4Matrix& second = l.up_first ? ew.gate : ew.up;
  const size_t half = static_cast<size_t>(l.w13_bytes() / 2);
  std::memcpy(dst, first.packed.data(), half);
  std::memcpy(dst + half, second.packed.data(), half);
  dst += l.w13_bytes();
  std::memcpy(dst, ew.down.packed.data(), static_cast<size_t>(l.w2_bytes()));
  dst += l.w2_bytes();
  std::vector<uint8_t> lin(first.scales);
  lin.insert(lin.end(), second.scales.begin(), second.scales.end());
  const std::vector<uint8_t> sw = swizzle_128x4(lin, 2 * l.inter, l.hidden / 16);
  const std::vector<uint8_t> sw2 = swizzle_128x4(ew.down.scales, l.hidden, l.inter / 16);
  if (static_cast<int64_t>(sw.size()) != l.w13_sf || static_cast<int64_t>(sw2.size()) != l.w2_sf)
    throw std::logic_error("write_expert_layout: the layout's scale sizes are not the swizzled sizes");
  std::memcpy(dst, sw.data(), sw.size());
  dst += l.w13_sf;
  std::memcpy(dst, sw2.data(), sw2.size());
}

ResidentExperts::ResidentExperts(size_t capacity_bytes) : capacity_(capacity_bytes) {}

ResidentExperts::~ResidentExperts() {
  // Errors at thread or process teardown are ignored (the context may already be gone).
  for (const Copy& c : lru_) (void)cudaFree(c.device);
  if (staging_ != nullptr) (void)cudaFreeHost(staging_);
}

uint8_t* ResidentExperts::staging(size_t bytes, cudaStream_t stream) {
  const size_t need = (bytes + kStagingAlign - 1) / kStagingAlign * kStagingAlign;
  if (staging_used_ > 0 && (staging_used_ + need > staging_bytes_ || stream != staging_stream_)) {
    MOEFUZZ_CUDA_CHECK(cudaStreamSynchronize(staging_stream_));  // the copies out of the ring are done
    staging_used_ = 0;
  }
  if (need > staging_bytes_) {
    if (staging_ != nullptr) MOEFUZZ_CUDA_CHECK(cudaFreeHost(staging_));
    staging_ = nullptr;
    staging_bytes_ = 0;
    const size_t grown = std::max(need, kStagingRingBytes);
    MOEFUZZ_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&staging_), grown));
    staging_bytes_ = grown;
  }
  uint8_t* p = staging_ + staging_used_;
  staging_used_ += need;
  staging_stream_ = stream;
  return p;
}

void ResidentExperts::evict_oldest(cudaStream_t stream) {
  const Copy& c = lru_.back();
  MOEFUZZ_CUDA_CHECK(cudaFreeAsync(c.device, stream));
  held_ -= c.bytes;
  index_.erase(c.key);
  lru_.pop_back();
}

ResidentExperts::Key ResidentExperts::key_of(const SharedVector<ExpertWeights>& experts, size_t e,
                                             const ExpertLayout& l) {
  const Hash128 h = layout_key(expert_content_hash(experts, e), l);
  return {h.low, h.high};
}

const uint8_t* ResidentExperts::find(const Key& key) {
  const auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  ++hits_;
  return static_cast<const uint8_t*>(it->second->device);
}

const uint8_t* ResidentExperts::find_or_upload(const SharedVector<ExpertWeights>& experts, size_t e,
                                               const ExpertLayout& l, cudaStream_t stream) {
  const Key key = key_of(experts, e, l);
  if (const uint8_t* d = find(key)) return d;
  return upload(key, experts[e], l, stream);
}

const uint8_t* ResidentExperts::upload(const Key& key, const ExpertWeights& ew, const ExpertLayout& l,
                                       cudaStream_t stream) {
  const size_t bytes = static_cast<size_t>(l.bytes());
  if (bytes > capacity_) return nullptr;
  ++misses_;
  while (held_ + bytes > capacity_) evict_oldest(stream);
  void* device = nullptr;
  for (;;) {
    const cudaError_t e = cudaMallocAsync(&device, bytes, stream);
    if (e == cudaSuccess) break;
    if (e != cudaErrorMemoryAllocation) MOEFUZZ_CUDA_CHECK(e);
    (void)cudaGetLastError();  // an allocation failure is not sticky: clear it
    if (lru_.empty()) return nullptr;
    evict_oldest(stream);
  }
  uint8_t* host = staging(bytes, stream);
  write_expert_layout(ew, l, host);
  MOEFUZZ_CUDA_CHECK(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream));
  lru_.push_front({key, device, bytes});
  index_[key] = lru_.begin();
  held_ += bytes;
  return static_cast<const uint8_t*>(device);
}

ResidentExperts& thread_resident_experts() {
  thread_local std::map<int, std::unique_ptr<ResidentExperts>> by_device;
  int device = 0;
  MOEFUZZ_CUDA_CHECK(cudaGetDevice(&device));
  std::unique_ptr<ResidentExperts>& r = by_device[device];
  if (!r) {
    size_t free_bytes = 0, total_bytes = 0;
    MOEFUZZ_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    r = std::make_unique<ResidentExperts>(resident_cache_bytes(total_bytes));
  }
  return *r;
}

}  // namespace moefuzz::cuda
