// Ranks are int64_t everywhere and checked once where they are read: what fits the report's int32
// rank fields is a rank, anything else is unknown (-1).
#include "fr/base/rank.h"

#include "gtest/gtest.h"

namespace fr {
namespace {

TEST(RankTest, WhatFitsTheReportIsARank) {
  EXPECT_EQ(RankOrUnknown(0), 0);
  EXPECT_EQ(RankOrUnknown(4095), 4095);
  EXPECT_EQ(RankOrUnknown(2147483647), 2147483647);
}

TEST(RankTest, NegativeOrTooLargeIsUnknown) {
  EXPECT_EQ(RankOrUnknown(-1), -1);
  EXPECT_EQ(RankOrUnknown(-5), -1);
  EXPECT_EQ(RankOrUnknown(2147483648), -1);
  EXPECT_EQ(RankOrUnknown(int64_t{1} << 40), -1);
}

}  // namespace
}  // namespace fr
