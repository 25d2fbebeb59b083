#include "fr/base/parallel_for.h"

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace fr {
namespace {

TEST(ParallelForTest, EveryItemRunsOnceOnAnyNumberOfThreads) {
  for (int jobs : {0, 1, 2, 7}) {
    std::vector<std::atomic<int>> runs(1000);
    ParallelFor(runs.size(), jobs, [&](size_t i) { ++runs[i]; });
    for (size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i].load(), 1) << "item " << i;
  }
  int none = 0;
  ParallelFor(0, 4, [&](size_t) { ++none; });
  EXPECT_EQ(none, 0);
}

TEST(ParallelForTest, OneJobRunsOnTheCallingThreadInOrder) {
  std::vector<size_t> order;
  std::thread::id caller = std::this_thread::get_id();
  bool elsewhere = false;
  ParallelFor(50, 1, [&](size_t i) {
    order.push_back(i);
    elsewhere |= std::this_thread::get_id() != caller;
  });
  EXPECT_FALSE(elsewhere);
  ASSERT_EQ(order.size(), 50u);
  for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i], i);
}

TEST(ParallelForTest, FewItemsPerThreadUseFewerThreads) {
  std::mutex mutex;
  std::set<std::thread::id> threads;
  ParallelFor(
      10, 8,
      [&](size_t) {
        std::lock_guard<std::mutex> lock(mutex);
        threads.insert(std::this_thread::get_id());
      },
      /*cancel=*/nullptr, /*min_items_per_thread=*/64);
  EXPECT_EQ(threads.size(), 1u);
}

TEST(ParallelForTest, CancelStopsClaimingItems) {
  std::atomic<bool> cancel{false};
  std::atomic<int> ran{0};
  ParallelFor(
      100000, 2,
      [&](size_t i) {
        ++ran;
        if (i == 10) cancel = true;
      },
      &cancel);
  // Items claimed before the cancel may still run or be dropped; the rest are never started.
  EXPECT_TRUE(cancel.load());
  EXPECT_LT(ran.load(), 1000);
}

}  // namespace
}  // namespace fr
