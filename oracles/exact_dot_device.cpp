#include "oracles/exact_dot_device.h"

#include <atomic>
#include <utility>

#include "core/expert_fingerprint.h"

namespace moefuzz {
namespace {

// The process-wide device: owned here, read lock-free by every evaluating thread.
std::shared_ptr<ExactDotDevice>& owned_device() {
  static std::shared_ptr<ExactDotDevice> device;
  return device;
}
std::atomic<ExactDotDevice*> g_device{nullptr};

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

ExactDotDevice* exact_dot_device() {
  return t_override.active ? t_override.device : g_device.load(std::memory_order_relaxed);
}

ScopedExactDotDevice::ScopedExactDotDevice(ExactDotDevice* device)
    : had_override_(t_override.active), previous_(t_override.device) {
  t_override = {true, device};
}
ScopedExactDotDevice::~ScopedExactDotDevice() { t_override = {had_override_, previous_}; }

}  // namespace moefuzz
