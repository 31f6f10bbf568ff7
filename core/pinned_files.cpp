#include "core/pinned_files.h"

#include <fmt/format.h>

#include <filesystem>

#include "core/errors.h"
#include "core/sha256.h"

namespace moefuzz {
namespace {

void absolute_against(std::string& path, const std::string& base_dir) {
  if (path.empty() || std::filesystem::path(path).is_absolute()) return;
  std::error_code ec;
  const std::filesystem::path base =
      base_dir.empty() ? std::filesystem::current_path(ec) : std::filesystem::path(base_dir);
  std::filesystem::path p = std::filesystem::absolute(base / path, ec);
  if (ec) throw InputError(fmt::format("{}: cannot make the path absolute: {}", path, ec.message()));
  path = p.lexically_normal().string();
}

void verify(const char* what, const std::string& path, const std::string& pinned, const std::string& origin) {
  if (pinned.empty()) return;
  std::string actual;
  try {
    actual = sha256_file(path);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: the recipe's {} file cannot be read: {}", origin, what, e.what()));
  }
  if (actual != pinned)
    throw InputError(fmt::format(
        "{}: {} file {} has SHA-256 {}, but the recipe pins {} (the file changed since the finding was "
        "written; restore it, or pass --{} to check against this file)",
        origin, what, path, actual, pinned, what));
}

}  // namespace

void resolve_file_paths(ExternalTensors& files, const std::string& base_dir) {
  absolute_against(files.weights, base_dir);
  absolute_against(files.inputs, base_dir);
}

void pin_files(ExternalTensors& files) {
  resolve_file_paths(files, "");
  files.weights_sha256 = files.weights.empty() ? "" : sha256_file(files.weights);
  files.inputs_sha256 = files.inputs.empty() ? "" : sha256_file(files.inputs);
}

void verify_pinned_files(const ExternalTensors& files, const std::string& origin) {
  verify("weights", files.weights, files.weights_sha256, origin);
  verify("inputs", files.inputs, files.inputs_sha256, origin);
}

}  // namespace moefuzz
