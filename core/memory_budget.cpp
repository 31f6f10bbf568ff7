#include "core/memory_budget.h"

#include <fstream>
#include <sstream>
#include <string>

#include "core/recipe.h"

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

}  // namespace moefuzz
