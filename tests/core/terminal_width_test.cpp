// core/terminal_width.h: the width comes from the terminal, else from a valid $COLUMNS, else 80; lines
// are cut to columns - 1 characters.
#include "core/terminal_width.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

namespace moefuzz {
namespace {

// A file descriptor that is not a terminal, so $COLUMNS decides.
class NotATerminal : public ::testing::Test {
 protected:
  void SetUp() override {
    fd_ = ::open("/dev/null", O_RDONLY);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override {
    ::close(fd_);
    ::unsetenv("COLUMNS");
  }
  int fd_ = -1;
};

TEST_F(NotATerminal, ColumnsFromTheEnvironmentElseEighty) {
  ::setenv("COLUMNS", "37", 1);
  EXPECT_EQ(terminal_columns(fd_), 37);
  for (const char* bad : {"", "0", "-4", "12abc", "99999999999999999999"}) {
    ::setenv("COLUMNS", bad, 1);
    EXPECT_EQ(terminal_columns(fd_), 80) << "'" << bad << "'";
  }
  ::unsetenv("COLUMNS");
  EXPECT_EQ(terminal_columns(fd_), 80);
}

TEST(FitToColumns, CutsToOneLessThanTheWidth) {
  EXPECT_EQ(fit_to_columns("abcdef", 80), "abcdef");
  EXPECT_EQ(fit_to_columns("abcdef", 4), "abc");
  EXPECT_EQ(fit_to_columns("abcdef", 7), "abcdef");
  EXPECT_EQ(fit_to_columns("abcdef", 1), "");
  EXPECT_EQ(fit_to_columns("abcdef", 0), "");
}

}  // namespace
}  // namespace moefuzz
