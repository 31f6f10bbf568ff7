#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/errors.h"

namespace moefuzz {
void write_file_atomically(const std::string& path, const std::string& content) {
  // rename() would replace whatever is at `path`: only a regular file may be replaced, never a
  // symlink (or what it points to), a pipe, a device or a directory.
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw InputError("cannot write " + path +
                     ": it exists and is not a regular file (a symlink, pipe, device or directory is never "
                     "replaced)");
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const std::string parent_path = std::filesystem::path(path).parent_path().string();
  const std::string parent = parent_path.empty() ? std::string(".") : parent_path;
  // Preferred: an unnamed file (O_TMPFILE) that the kernel removes if we are killed while writing;
  // it gets the temporary name only once complete and synced, for the instant before the rename.
  // Fallback (filesystems without O_TMPFILE): the named temporary file from the start.
  int fd = ::open(parent.c_str(), O_TMPFILE | O_WRONLY, 0644);
  const bool unnamed = fd >= 0;
  if (!unnamed) {
    // O_EXCL | O_NOFOLLOW: a planted file or symlink at the temporary name is not written through.
    ::unlink(tmp.c_str());  // our own leftover from a killed earlier run with the same pid
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
  }
  if (fd < 0) throw InputError("cannot write " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      if (!unnamed) ::unlink(tmp.c_str());
      throw InputError("cannot write " + tmp + ": " + std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  ::fsync(fd);
  if (unnamed) {
    const std::string self = "/proc/self/fd/" + std::to_string(fd);
    ::unlink(tmp.c_str());
    if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, tmp.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      const int e = errno;
      ::close(fd);
      throw InputError("cannot write " + tmp + ": " + std::strerror(e));
    }
  }
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw InputError("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
  }
}

void make_directories(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) throw InputError("cannot create directory " + path + ": " + ec.message());
}

}  // namespace moefuzz
