#include "fr/model/shared_ranks.h"

#include <cstdint>
#include <numeric>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace fr {
namespace {

std::vector<int64_t> World(int64_t n) {
  std::vector<int64_t> ranks(n);
  std::iota(ranks.begin(), ranks.end(), 0);
  return ranks;
}

TEST(SharedRanksTest, ReadsLikeTheListItWasMadeFrom) {
  SharedRanks ranks(std::vector<int64_t>{4, 5, 7});
  EXPECT_EQ(ranks.size(), 3u);
  EXPECT_EQ(ranks[2], 7);
  EXPECT_EQ(ranks.front(), 4);
  EXPECT_EQ(ranks.back(), 7);
  EXPECT_EQ(ranks.ToVector(), (std::vector<int64_t>{4, 5, 7}));
  EXPECT_TRUE(ranks == (std::vector<int64_t>{4, 5, 7}));
  EXPECT_FALSE(ranks == (std::vector<int64_t>{4, 5}));
  SharedRanks none;
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.begin(), none.end());
  EXPECT_EQ(none.storage(), nullptr);
  EXPECT_TRUE(none == SharedRanks(std::vector<int64_t>{}));
}

TEST(SharedRanksTest, EqualListsAreEqualWhetherOrNotTheyShare) {
  SharedRanks a(World(100)), b(World(100)), c(World(101));
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a.SharesStorageWith(b));
  EXPECT_FALSE(a == c);
  SharedRanks copy = a;
  EXPECT_TRUE(copy.SharesStorageWith(a));
}

TEST(RankListPoolTest, EqualLongListsBecomeOneList) {
  RankListPool pool;
  std::vector<SharedRanks> dumps;
  for (int d = 0; d < 64; ++d) dumps.emplace_back(World(4096));
  for (SharedRanks& ranks : dumps) pool.Intern(&ranks);
  for (const SharedRanks& ranks : dumps) EXPECT_TRUE(ranks.SharesStorageWith(dumps.front()));
  EXPECT_EQ(pool.distinct_lists(), 1u);
}

TEST(RankListPoolTest, ListsThatOnlyLookAlikeStayApart) {
  // Same size, first, middle and last rank (the pool's hash): only the contents tell them apart.
  std::vector<int64_t> a = World(1000), b = World(1000);
  std::swap(b[10], b[11]);
  SharedRanks first(a), second(b), third(a);
  RankListPool pool;
  pool.Intern(&first);
  pool.Intern(&second);
  pool.Intern(&third);
  EXPECT_FALSE(second.SharesStorageWith(first));
  EXPECT_TRUE(third.SharesStorageWith(first));
  EXPECT_EQ(second.ToVector(), b);
  EXPECT_EQ(pool.distinct_lists(), 2u);
}

TEST(RankListPoolTest, ShortListsAreLeftAlone) {
  RankListPool pool;
  SharedRanks a(World(4)), b(World(4));
  pool.Intern(&a);
  pool.Intern(&b);
  EXPECT_FALSE(a.SharesStorageWith(b));
  EXPECT_EQ(pool.distinct_lists(), 0u);
}

TEST(RankListPoolTest, ThreadsInterningTogetherAgreeOnOneList) {
  RankListPool pool;
  std::vector<SharedRanks> lists(200, SharedRanks());
  for (size_t i = 0; i < lists.size(); ++i) lists[i] = World(2048);
  std::thread other([&] {
    for (size_t i = 0; i < lists.size(); i += 2) pool.Intern(&lists[i]);
  });
  for (size_t i = 1; i < lists.size(); i += 2) pool.Intern(&lists[i]);
  other.join();
  for (const SharedRanks& ranks : lists) EXPECT_TRUE(ranks.SharesStorageWith(lists.front()));
}

}  // namespace
}  // namespace fr
