#include "tools/version.h"

// Defined for this file only by tools/CMakeLists.txt, so a new commit recompiles nothing else.
#ifndef MOEFUZZ_VERSION
#error "MOEFUZZ_VERSION must be defined by the build (tools/CMakeLists.txt)"
#endif
#ifndef MOEFUZZ_GIT_DESCRIBE
#define MOEFUZZ_GIT_DESCRIBE ""
#endif

namespace moefuzz::cli {

std::string version_string() {
  const std::string git = MOEFUZZ_GIT_DESCRIBE;
  return std::string("moefuzz ") + MOEFUZZ_VERSION + (git.empty() ? "" : " (git " + git + ")");
}

}  // namespace moefuzz::cli
