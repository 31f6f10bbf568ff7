#pragma once
// `moefuzz --version`: the CMake project version, plus `git describe` of the source tree when it was a
// git checkout at configure time (a release tarball has only the project version).
//
// Example:
//   version_string()  // "moefuzz 0.1.0 (git 0b7dc3d)"
#include <string>

namespace moefuzz::cli {

std::string version_string();

}  // namespace moefuzz::cli
