// The wait-for graph from hand-built blocks: sinks are culprits, everyone else blocked is a
// victim, chains lead to the nearest culprit, cycles are deadlocks. Expectations come from the
// blocks each test writes down.
#include "fr/waitfor/wait_for_graph.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

Block Wait(std::vector<int64_t> waiters, std::vector<int64_t> blockers, uint32_t group = 0,
           BlockReason reason = BlockReason::kNeverIssued) {
  Block block;
  block.group = group;
  block.waiters = std::move(waiters);
  block.blockers = std::move(blockers);
  block.reason = reason;
  return block;
}

TEST(WaitForGraphTest, OneSinkOthersWaitForIsTheCulprit) {
  std::vector<Block> blocks = {Wait({0, 1, 2}, {3})};
  WaitForGraph graph(blocks);
  EXPECT_THAT(graph.culprits(), ElementsAre(3));
  EXPECT_THAT(graph.victims(), ElementsAre(0, 1, 2));
  EXPECT_FALSE(graph.has_cycle());
  EXPECT_EQ(graph.Distance(1), 1);
  EXPECT_EQ(graph.Distance(3), 0);    // the culprit: an empty chain
  EXPECT_EQ(graph.Distance(99), -1);  // not blocked at all
  EXPECT_THAT(graph.BlocksOn(3), ElementsAre(0u));
}

TEST(WaitForGraphTest, ChainAcrossThreeGroupsEndsAtTheRankWaitingForNoOne) {
  // DP waiter 0 -> PP peer 4 (group 1) -> TP peer 5 (group 2) -> 7, which waits for nobody.
  std::vector<Block> blocks = {Wait({0}, {4}, 0), Wait({4}, {5}, 1), Wait({5}, {7}, 2)};
  WaitForGraph graph(blocks);
  EXPECT_THAT(graph.culprits(), ElementsAre(7));
  EXPECT_THAT(graph.victims(), ElementsAre(0, 4, 5));
  std::vector<WaitHop> chain = graph.ChainFrom(0);
  ASSERT_EQ(chain.size(), 3u);
  EXPECT_EQ(chain[0].waits_for, 4);
  EXPECT_EQ(chain[1].waits_for, 5);
  EXPECT_EQ(chain[2].waits_for, 7);
  EXPECT_EQ(chain[2].block, 2u);
}

TEST(WaitForGraphTest, TwoIndependentSinksAreBothCulprits) {
  std::vector<Block> blocks = {Wait({0}, {1}), Wait({2, 3}, {4}, 1)};
  WaitForGraph graph(blocks);
  EXPECT_THAT(graph.culprits(), ElementsAre(1, 4));
  EXPECT_THAT(graph.victims(), ElementsAre(0, 2, 3));
}

TEST(WaitForGraphTest, ACycleWaitingOnlyOnItselfIsADeadlockOfCulprits) {
  // 1 and 2 wait for each other (send/recv posted in mismatched order); 0 waits for 1.
  std::vector<Block> blocks = {Wait({1}, {2}), Wait({2}, {1}), Wait({0}, {1})};
  WaitForGraph graph(blocks);
  EXPECT_TRUE(graph.has_cycle());
  EXPECT_THAT(graph.culprits(), ElementsAre(1, 2));
  EXPECT_THAT(graph.victims(), ElementsAre(0));
}

TEST(WaitForGraphTest, ACycleThatWaitsOnSomeoneElseIsNotTheSink) {
  std::vector<Block> blocks = {Wait({1}, {2}), Wait({2}, {1}), Wait({2}, {9})};
  WaitForGraph graph(blocks);
  EXPECT_THAT(graph.culprits(), ElementsAre(9));
  EXPECT_THAT(graph.victims(), ElementsAre(1, 2));
}

TEST(WaitForGraphTest, TheOneRankEveryCycleCrossesIsTheCulpritOfACycleAcrossGroups) {
  // Rank 2 left the step's order for an op of the default group (3) that its peers never reach;
  // 3 waits for it in TP (0), 0 waits for it in DP (1), 1 waits for 3 in the other DP group (2).
  std::vector<Block> blocks = {Wait({3}, {2}, 0), Wait({0}, {2}, 1), Wait({1}, {3}, 2),
                               Wait({2}, {0, 1, 3}, 3)};
  WaitForGraph graph(blocks);
  EXPECT_TRUE(graph.has_cycle());
  EXPECT_THAT(graph.culprits(), ElementsAre(2));
  EXPECT_THAT(graph.victims(), ElementsAre(0, 1, 3));
  std::vector<WaitHop> chain = graph.ChainFrom(1);
  ASSERT_EQ(chain.size(), 2u);
  EXPECT_EQ(chain[0].waits_for, 3);
  EXPECT_EQ(chain[1].waits_for, 2);
}

TEST(WaitForGraphTest, ARingThatEveryRankBreaksNamesThemAll) {
  // 0 -> 1 -> 2 -> 0: taking out any one rank ends the cycle, so no one rank is singled out.
  std::vector<Block> blocks = {Wait({0}, {1}), Wait({1}, {2}, 1), Wait({2}, {0}, 2)};
  WaitForGraph graph(blocks);
  EXPECT_THAT(graph.culprits(), ElementsAre(0, 1, 2));
  EXPECT_THAT(graph.victims(), IsEmpty());
}

TEST(WaitForGraphTest, NoBlocksNoCulprits) {
  std::vector<Block> blocks;
  WaitForGraph graph(blocks);
  EXPECT_THAT(graph.culprits(), IsEmpty());
  EXPECT_THAT(graph.victims(), IsEmpty());
  EXPECT_THAT(graph.ChainFrom(0), IsEmpty());
}

}  // namespace
}  // namespace fr
