#include "core/cuda_in_process.h"

#include <mutex>

namespace moefuzz {
namespace {
std::mutex g_mutex;
std::string g_by;
}  // namespace

void mark_cuda_in_process(const std::string& by) {
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (g_by.empty()) g_by = by;
}

std::string cuda_in_process() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  return g_by;
}

}  // namespace moefuzz
