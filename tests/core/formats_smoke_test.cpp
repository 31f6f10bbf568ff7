#include <gtest/gtest.h>

#include "core/bf16.h"
#include "core/e2m1.h"
#include "core/e4m3.h"

TEST(FormatsSmoke, KnownValues) {
  EXPECT_EQ(moefuzz::e4m3_from_float(448.0f), 0x7E);
  EXPECT_EQ(moefuzz::e2m1_from_float(2.5f), 0x4);
  EXPECT_EQ(moefuzz::bf16_from_float(1.0f), 0x3F80);
}
