#pragma once
// The width of the terminal a progress line is drawn on, so that the line never wraps (a wrapped line
// is not overwritten by '\r' and floods the screen).
//
// Example:
//   const int columns = terminal_columns(STDERR_FILENO);  // 80 when stderr is not a terminal
#include <string>

namespace moefuzz {

// The terminal's width from ioctl(TIOCGWINSZ) on `fd`; else $COLUMNS when it is a positive number;
// else 80 (the traditional terminal width, a guess only used when nothing says otherwise).
int terminal_columns(int fd);

// `line` cut to at most columns - 1 characters: writing the last column makes some terminals wrap.
std::string fit_to_columns(const std::string& line, int columns);

}  // namespace moefuzz
