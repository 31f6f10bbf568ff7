#include "core/memory_budget.h"

#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "core/recipe.h"
#include "core/report.h"

namespace moefuzz {

int64_t available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    int64_t kib = -1;
    std::string unit;
    if (fields >> kib >> unit && kib > 0 && unit == "kB") return kib * 1024;
    return -1;
  }
  return -1;
}

int64_t default_max_case_bytes() {
  const int64_t available = available_memory_bytes();
  return available > 0 ? available / kCheckPeakBytesPerCaseByte : kDefaultMaxCaseBytes;
}

namespace {

// Resident memory of moefuzz before any case (binary, libraries, registries, allocator arenas):
// measured 7 MiB (VmHWM of `moefuzz replay` on the smallest recipe, release build); 64 MiB covers
// instrumented builds and the allocator's per-thread arenas.
constexpr double kProcessBytes = 64.0 * (1 << 20);
// Copies of a case alive together: the case the caller holds, the transformed case an invariant
// builds from it and the one it builds from that (pad_dims of a relabelled case), plus the fp32
// weights a kernel or the oracle decodes from the packed FP4 (8 bytes per packed byte, one expert at
// a time in the oracle, all of them in the CPU reference kernel: counted as one more case); taken
// over both the case and its padded twin: 3 + 3. The measured peak is 4x the case (header).
constexpr double kCaseCopies = 3.0;
// Bytes one stage value costs in the runs alive together: the baseline's kernel result (fp32, 4)
// with the kernel's own working copy (4) and its two oracle evaluations (expected and bound in double
// per evaluation, 16 + 16), and an invariant's pair of transformed runs (2 x (8 + 16 + 16)): 120.
// The oracle's transient intervals (lo and hi in double, 16, one stage at a time) fit in the slack of
// counting the pair at the larger of the two shapes.
constexpr double kBytesPerStageValue = 120.0;

double case_bytes_at(CaseRecipe r, int64_t hidden, int64_t inter) {
  r.shape.hidden = hidden;
  r.shape.inter = inter;
  return static_cast<double>(estimate_case_bytes(r));
}

double stage_values_at(const CaseRecipe& r, double hidden, double inter) {
  const double tokens = static_cast<double>(std::max<int64_t>(r.shape.tokens, 0));
  const double slots = static_cast<double>(std::max<int64_t>(r.slots(), 0));
  const double separate_shared = r.routing.shared_fusion == SharedFusion::kFused
                                     ? 0.0
                                     : static_cast<double>(std::max<int64_t>(r.shape.shared_experts, 0));
  const double rows = tokens * (slots + separate_shared);
  return tokens * (2 * hidden + 2 * slots) + rows * (2 * hidden + 4 * inter);
}

}  // namespace

int64_t estimate_check_bytes(const CaseRecipe& r) {
  const int64_t h = std::max<int64_t>(r.shape.hidden, 0), i = std::max<int64_t>(r.shape.inter, 0);
  // PAD's case: the next multiple of 128 strictly above H and I (properties/invariants).
  const int64_t h2 = (h / 128 + 1) * 128, i2 = (i / 128 + 1) * 128;
  const double bytes =
      kProcessBytes + kCaseCopies * (case_bytes_at(r, h, i) + case_bytes_at(r, h2, i2)) +
      kBytesPerStageValue * std::max(stage_values_at(r, static_cast<double>(h), static_cast<double>(i)),
                                     stage_values_at(r, static_cast<double>(h2), static_cast<double>(i2)));
  const double cap = static_cast<double>(std::numeric_limits<int64_t>::max());
  return bytes >= cap || !(bytes == bytes) ? std::numeric_limits<int64_t>::max()
                                           : static_cast<int64_t>(bytes);
}

std::string check_memory_refusal(const CaseRecipe& r, int64_t available) {
  const int64_t needs = estimate_check_bytes(r);
  if (available <= 0 || needs <= available) return "";
  return fmt::format(
      "checking this case needs up to {} (estimate_check_bytes), more than the {} of memory "
      "available: lower tokens, hidden, inter or top_k",
      format_byte_count(needs), format_byte_count(available));
}

}  // namespace moefuzz
