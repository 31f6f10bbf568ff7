#include "drivers/progress_line.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/terminal_width.h"

namespace moefuzz {

std::string format_progress_line(double fraction, int64_t cases, int64_t findings, double seconds,
                                 int columns) {
  const std::string text = fmt::format("{} cases, {} findings, {:.1f}s", cases, findings, seconds);
  // "[" + bar + "] " + text within columns - 1; the bar is 30 wide when there is room, and is dropped
  // below 10 (a shorter bar shows nothing useful).
  constexpr int kFullBar = 30, kShortestBar = 10;
  const int room = columns - 1 - static_cast<int>(text.size()) - 3;
  const int bar = std::min(kFullBar, room);
  if (bar < kShortestBar) return fit_to_columns(text, columns);
  const int filled = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * bar);
  return fmt::format("[{:<{}}] {}", std::string(static_cast<size_t>(filled), '#'), bar, text);
}

}  // namespace moefuzz
