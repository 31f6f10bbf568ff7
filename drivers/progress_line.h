#pragma once
// The one-line progress display of `moefuzz check`, fitted to the terminal: the bar shrinks, then
// goes, then the text is cut, so the line never wraps at any width.
//
// Example:
//   log << "\r" << format_progress_line(0.5, 100, 0, 12.3, terminal_columns(STDERR_FILENO)) << "\x1b[K";
//   // 80 columns: "[###############               ] 100 cases, 0 findings, 12.3s"
#include <cstdint>
#include <string>

namespace moefuzz {

// `fraction` of the budget done (clamped to [0, 1]); the result has at most columns - 1 characters.
std::string format_progress_line(double fraction, int64_t cases, int64_t findings, double seconds,
                                 int columns);

}  // namespace moefuzz
