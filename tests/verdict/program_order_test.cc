// Program progress on dumps real PyTorch wrote (tests/data/torch): where ranks stand after the
// newest collective they finished together, whatever their clocks say.
#include "fr/verdict/program_order.h"

#include <string>

#include "fr/load/load.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

LoadedTrace LoadReal(const std::string& name) {
  absl::StatusOr<LoadedTrace> trace =
      LoadTrace(std::string(FR_TEST_DATA_DIR) + "/torch/2.13.0/" + name + "/dumps");
  EXPECT_TRUE(trace.ok()) << trace.status();
  return trace.ok() ? *std::move(trace) : LoadedTrace();
}

TEST(ProgramOrderTest, ARankThatStoppedHasRecordedLessSinceTheSharedCollective) {
  // Rank 5 never issued the TP all_reduce that its TP peer 4 issued.
  LoadedTrace trace = LoadReal("stuck_before_op");
  JobIndex index = BuildJobIndex(trace);
  ProgramOrder order(trace, index);
  std::map<int64_t, int64_t> progress = order.ProgressSinceLastSharedCollective({4, 5});
  ASSERT_EQ(progress.size(), 2u);
  EXPECT_GT(progress.at(4), progress.at(5));
}

TEST(ProgramOrderTest, PeersThatRanTheSameOpsStandTogether) {
  // A healthy job: the two ranks of a TP pair ran the same program to its end.
  LoadedTrace trace = LoadReal("healthy");
  JobIndex index = BuildJobIndex(trace);
  ProgramOrder order(trace, index);
  std::map<int64_t, size_t> shared = order.LastSharedCollective({4, 5});
  ASSERT_EQ(shared.size(), 2u);
  std::map<int64_t, int64_t> progress = order.ProgressSinceLastSharedCollective({4, 5});
  ASSERT_EQ(progress.size(), 2u);
  EXPECT_EQ(progress.at(4), progress.at(5));
}

TEST(ProgramOrderTest, ARankWithoutADumpHasNoPlace) {
  // rank_exits: rank 5 left no dump.
  LoadedTrace trace = LoadReal("rank_exits");
  JobIndex index = BuildJobIndex(trace);
  ProgramOrder order(trace, index);
  EXPECT_EQ(order.DumpOf(5), nullptr);
  EXPECT_EQ(order.DumpIndexOf(5), -1);
  EXPECT_NE(order.DumpOf(4), nullptr);
  EXPECT_TRUE(order.LastSharedCollective({4, 5}).empty());
  EXPECT_TRUE(order.ProgressSinceLastSharedCollective({4, 5}).empty());
}

TEST(ProgramOrderTest, PointToPointWaitsGetNoPosition) {
  LoadedTrace trace = LoadReal("stuck_before_op");
  JobIndex index = BuildJobIndex(trace);
  ProgramOrder order(trace, index);
  Block p2p;
  p2p.is_p2p = true;
  p2p.seq = 1;
  p2p.waiters = {4};
  p2p.blockers = {5};
  EXPECT_FALSE(order.ProgramPositions(5, {0}, {p2p}).contains(0));
}

}  // namespace
}  // namespace fr
