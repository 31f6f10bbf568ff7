#include "core/output_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "core/atomic_file.h"
#include "core/errors.h"

namespace moefuzz {

void check_output_file(const std::string& path) {
  if (path == "-") return;
  if (path.empty()) throw InputError("output path is empty (use - for standard output)");
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw InputError("output " + path +
                     " exists and is not a regular file (a symlink, pipe, device or directory is never "
                     "replaced; use - for standard output)");
  const std::string parent_path = std::filesystem::path(path).parent_path().string();
  const std::string parent = parent_path.empty() ? std::string(".") : parent_path;
  struct stat pst {};
  if (::stat(parent.c_str(), &pst) != 0 || !S_ISDIR(pst.st_mode))
    throw InputError("output " + path + ": folder " + parent + " does not exist");
  if (::access(parent.c_str(), W_OK) != 0)
    throw InputError("output " + path + ": folder " + parent + " is not writable: " + std::strerror(errno));
}

void check_output_dir(const std::string& dir) {
  if (dir.empty()) throw InputError("output directory is empty");
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
    throw InputError("output directory " + dir + " exists and is not a directory");
  make_directories(dir);
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw InputError("output directory " + dir + " is not writable: " + std::strerror(errno));
}

void write_output(const std::string& path, const std::string& content) {
  if (path == "-") {
    std::cout << content << std::flush;
    return;
  }
  write_file_atomically(path, content);
}

}  // namespace moefuzz
