// Rank sets as people read them in reports of thousands of ranks.
#include "fr/base/rank_set.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace fr {
namespace {

TEST(FormatRankSetTest, RangesAscendingWithoutDuplicates) {
  EXPECT_EQ(FormatRankSet({}), "");
  EXPECT_EQ(FormatRankSet({5}), "5");
  EXPECT_EQ(FormatRankSet({9, 0, 1, 2, 3, 5, 7, 8, 3}), "0-3,5,7-9");
  EXPECT_EQ(FormatRankSet({4, 5}), "4-5");
}

TEST(FormatRankSetTest, RunsOfOneStrideAreOneRange) {
  // A 512-rank job's DP group with TP x PP = 8: 64 numbers, read as one range.
  std::vector<int64_t> dp;
  for (int64_t r = 0; r < 512; r += 8) dp.push_back(r);
  EXPECT_EQ(FormatRankSet(dp), "0-504 step 8");
  EXPECT_EQ(FormatRankSet({3, 7, 11, 12, 13}), "3,7,11-13");  // a consecutive run keeps its first
  EXPECT_EQ(FormatRankSet({0, 8, 9, 10}), "0,8-10");          // two make no stride
  EXPECT_EQ(FormatRankSet({1, 5, 9, 20, 30, 40, 41}), "1-9 step 4,20,30,40-41");
}

TEST(FormatRankSetTest, WithinAGroupTheShorterFormWins) {
  std::vector<int64_t> group;
  for (int64_t r = 0; r < 4096; ++r) group.push_back(r);
  std::vector<int64_t> all_but_one;
  for (int64_t r = 0; r < 4096; r += 2) all_but_one.push_back(r);  // evens: no short form
  EXPECT_EQ(FormatRankSetWithin({1, 2}, group), "1-2");
  std::vector<int64_t> except_three;
  for (int64_t r : group) {
    if (r != 17 && r != 100 && r != 2000) except_three.push_back(r);
  }
  EXPECT_EQ(FormatRankSetWithin(except_three, group), "0-4095 except 17,100,2000");
  std::vector<int64_t> except17 = group;
  except17.erase(except17.begin() + 17);
  EXPECT_EQ(FormatRankSetWithin(except17, group), "0-16,18-4095");  // as short: plain ranges
  EXPECT_EQ(FormatRankSetWithin(all_but_one, group).find("except"), std::string::npos);
}

}  // namespace
}  // namespace fr
