#pragma once
// The whole content of a file, as bytes; "" when it cannot be opened. For files moefuzz wrote or has
// already validated (a recipe parse_recipe_file accepted, a finding, a summary, a log): untrusted
// input goes through parse_recipe_file, which checks the file's kind and size before reading.
//
// Example:
//   const moefuzz::FindingHeader h = moefuzz::read_finding_header(moefuzz::file_text(path));
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace moefuzz {

inline std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace moefuzz
