// drivers/progress_line.h: the check progress line never wraps. At every terminal width from 1 to
// 300 columns it holds at most columns - 1 characters and no newline; with room it shows the full
// 30-character bar, narrower it shrinks the bar, then drops it, then cuts the text.
#include "drivers/progress_line.h"

#include <gtest/gtest.h>

#include <string>

namespace moefuzz {
namespace {

TEST(ProgressLine, FitsEveryWidthWithoutWrapping) {
  for (int columns = 1; columns <= 300; ++columns) {
    const std::string line = format_progress_line(0.5, 123456, 7, 98765.4, columns);
    EXPECT_LE(line.size(), static_cast<size_t>(columns > 1 ? columns - 1 : 0)) << columns << ": " << line;
    EXPECT_EQ(line.find('\n'), std::string::npos);
    EXPECT_EQ(line.find('\r'), std::string::npos);
  }
}

TEST(ProgressLine, FullBarWhenThereIsRoomShorterBarThenTextOnly) {
  EXPECT_EQ(format_progress_line(0.5, 10, 0, 1.0, 80),
            "[###############               ] 10 cases, 0 findings, 1.0s");
  const std::string narrow = format_progress_line(1.0, 10, 0, 1.0, 45);
  EXPECT_EQ(narrow.rfind("[###############] 10 cases", 0), 0u) << narrow;  // 15-wide bar, all filled
  EXPECT_EQ(format_progress_line(0.5, 10, 0, 1.0, 35), "10 cases, 0 findings, 1.0s");
  EXPECT_EQ(format_progress_line(0.5, 10, 0, 1.0, 12), "10 cases, 0");
}

TEST(ProgressLine, FractionIsClamped) {
  EXPECT_EQ(format_progress_line(7.0, 1, 0, 0.0, 80), format_progress_line(1.0, 1, 0, 0.0, 80));
  EXPECT_EQ(format_progress_line(-1.0, 1, 0, 0.0, 80), format_progress_line(0.0, 1, 0, 0.0, 80));
}

}  // namespace
}  // namespace moefuzz
