#include "core/terminal_width.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <cstring>

namespace moefuzz {

int terminal_columns(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* env = std::getenv("COLUMNS")) {
    int value = 0;
    const char* end = env + std::strlen(env);
    const auto [ptr, ec] = std::from_chars(env, end, value);
    if (ec == std::errc() && ptr == end && value > 0) return value;
  }
  return 80;
}

std::string fit_to_columns(const std::string& line, int columns) {
  const size_t room = columns > 1 ? static_cast<size_t>(columns - 1) : 0;
  return line.size() <= room ? line : line.substr(0, room);
}

}  // namespace moefuzz
