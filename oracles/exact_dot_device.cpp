#include "oracles/exact_dot_device.h"

#include <atomic>
#include <mutex>
#include <utility>

#include "core/cuda_in_process.h"
#include "core/expert_fingerprint.h"

namespace moefuzz {
namespace {

// The process-wide device: owned here, read lock-free by every evaluating thread.
std::shared_ptr<ExactDotDevice>& owned_device() {
  static std::shared_ptr<ExactDotDevice> device;
  return device;
}
std::atomic<ExactDotDevice*> g_device{nullptr};

// --oracle-device auto: the maker, and the device it made (on first use after a GPU kernel was made).
struct ForGpuKernels {
  std::mutex mutex;
  std::function<std::shared_ptr<ExactDotDevice>()> make;
  std::shared_ptr<ExactDotDevice> made;
  bool tried = false;
};
ForGpuKernels& for_gpu_kernels() {
  static ForGpuKernels f;
  return f;
}
std::atomic<bool> g_for_gpu_kernels_set{false};
// Once made (or found impossible: no usable GPU), read without the lock by every later call.
std::atomic<bool> g_for_gpu_kernels_tried{false};
std::atomic<ExactDotDevice*> g_for_gpu_kernels{nullptr};

ExactDotDevice* device_for_gpu_kernels() {
  if (g_for_gpu_kernels_tried.load(std::memory_order_acquire))
    return g_for_gpu_kernels.load(std::memory_order_acquire);
  ForGpuKernels& f = for_gpu_kernels();
  const std::lock_guard<std::mutex> lock(f.mutex);
  if (!f.tried && f.make) {
    f.tried = true;
    f.made = f.make();
    g_for_gpu_kernels.store(f.made.get(), std::memory_order_release);
    g_for_gpu_kernels_tried.store(true, std::memory_order_release);
  }
  return f.made.get();
}

struct ThreadOverride {
  bool active = false;
  ExactDotDevice* device = nullptr;
};
thread_local ThreadOverride t_override;

}  // namespace

Hash128 weight_content_key(const SharedVector<ExpertWeights>& experts, size_t e, int which) {
  const Hash128 expert = expert_content_hash(experts, e);
  const uint64_t words[3] = {expert.low, expert.high, static_cast<uint64_t>(which)};
  ContentHasher h;
  h.add_bytes(words, sizeof words);
  return h.value128();
}

void set_exact_dot_device(std::shared_ptr<ExactDotDevice> device) {
  g_device.store(device.get());
  owned_device() = std::move(device);
}

void set_exact_dot_device_for_gpu_kernels(std::function<std::shared_ptr<ExactDotDevice>()> make) {
  ForGpuKernels& f = for_gpu_kernels();
  const std::lock_guard<std::mutex> lock(f.mutex);
  f.make = std::move(make);
  f.made.reset();
  f.tried = false;
  g_for_gpu_kernels_tried.store(false, std::memory_order_release);
  g_for_gpu_kernels.store(nullptr, std::memory_order_release);
  g_for_gpu_kernels_set.store(static_cast<bool>(f.make), std::memory_order_release);
}

ExactDotDevice* exact_dot_device() {
  if (t_override.active) return t_override.device;
  if (ExactDotDevice* d = g_device.load(std::memory_order_relaxed)) return d;
  if (g_for_gpu_kernels_set.load(std::memory_order_acquire) && gpu_kernel_in_process())
    return device_for_gpu_kernels();
  return nullptr;
}

ScopedExactDotDevice::ScopedExactDotDevice(ExactDotDevice* device)
    : had_override_(t_override.active), previous_(t_override.device) {
  t_override = {true, device};
}
ScopedExactDotDevice::~ScopedExactDotDevice() { t_override = {had_override_, previous_}; }

}  // namespace moefuzz
