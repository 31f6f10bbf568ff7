#include "core/repro_command.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace moefuzz {
namespace {

namespace fs = std::filesystem;

fs::path self_executable() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : p;
}

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec) && !ec;
}

// The file PATH runs for `name`, or empty.
fs::path on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return {};
  const std::string p = path;
  for (size_t a = 0, b; a <= p.size(); a = b + 1) {
    b = p.find(':', a);
    if (b == std::string::npos) b = p.size();
    // An empty PATH entry is the current directory, which changes with the user: never rely on it.
    if (b == a) continue;
    const fs::path candidate = fs::path(p.substr(a, b - a)) / name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

std::string find_program() {
  const fs::path self = self_executable();
  fs::path binary;
  if (!self.empty() && self.filename() == "moefuzz") {
    binary = self;
  } else if (!self.empty() && ::access((self.parent_path() / "moefuzz").c_str(), X_OK) == 0) {
    binary = self.parent_path() / "moefuzz";
  } else {
    return "moefuzz";  // no binary known: the installed name is the best guess
  }
  const fs::path found = on_path("moefuzz");
  if (!found.empty() && same_file(found, binary)) return "moefuzz";
  return shell_quote(binary.lexically_normal().string());
}

}  // namespace

const std::string& repro_program() {
  static const std::string program = find_program();
  return program;
}

std::string shell_quote(const std::string& word) {
  const bool safe = !word.empty() && word.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789_-./:=+,@%") == std::string::npos;
  if (safe) return word;
  std::string out = "'";
  for (const char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string repro_replay_command(const std::string& recipe_path, const std::string& kernel_name) {
  std::error_code ec;
  fs::path recipe = fs::absolute(recipe_path, ec);
  if (ec) recipe = recipe_path;
  return repro_program() + " replay " + shell_quote(recipe.lexically_normal().string()) + " --kernel " +
         shell_quote(kernel_name);
}

}  // namespace moefuzz
