// The Gloo inference on dumps real PyTorch wrote (tests/data/torch: Gloo records collectives
// only) and on a simulated NCCL job (which records its send/recv).
#include "fr/verdict/unrecorded_p2p.h"

#include <unistd.h>

#include <filesystem>

#include "fmt/format.h"
#include "fr/index/job_index.h"
#include "fr/load/load.h"
#include "fr/simulate/job_simulator.h"
#include "fr/simulate/job_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;

LoadedTrace LoadReal(const std::string& name) {
  absl::StatusOr<LoadedTrace> trace =
      LoadTrace(std::string(FR_TEST_DATA_DIR) + "/torch/2.13.0/" + name + "/dumps");
  EXPECT_TRUE(trace.ok()) << trace.status();
  return trace.ok() ? *std::move(trace) : LoadedTrace();
}

LoadedTrace LoadSimulated() {
  JobSimulatorOptions options;  // TP 2 x PP 2 x DP 2: the pipeline sends and receives
  options.steps = 4;
  absl::StatusOr<SimulatedJob> job = SimulateJob(options);
  EXPECT_TRUE(job.ok()) << job.status();
  fs::path dir = fs::path(::testing::TempDir()) / fmt::format("fr_unrecorded_p2p_{}", ::getpid());
  fs::remove_all(dir);
  EXPECT_TRUE(WriteSimulatedJob(*job, dir.string(), {}).ok());
  absl::StatusOr<LoadedTrace> trace = LoadTrace(dir.string());
  fs::remove_all(dir);
  EXPECT_TRUE(trace.ok()) << trace.status();
  return trace.ok() ? *std::move(trace) : LoadedTrace();
}

Block Wait(int64_t waiter, int64_t blocker, int64_t time_ns) {
  Block block;
  block.seq = 1;
  block.op = "all_reduce";
  block.waiters = {waiter};
  block.blockers = {blocker};
  block.time_created_ns = time_ns;
  return block;
}

TEST(UnrecordedP2pTest, GlooDumpsHideTheirSendsAndRecvs) {
  // The captured job ran a pipeline (PP 2) on Gloo: its send/recv are in no dump.
  EXPECT_TRUE(PointToPointUnrecorded(LoadReal("healthy")));
}

TEST(UnrecordedP2pTest, RecordedSendsAndRecvsNeedNoInference) {
  EXPECT_FALSE(PointToPointUnrecorded(LoadSimulated()));
  EXPECT_FALSE(PointToPointUnrecorded(LoadedTrace()));
}

TEST(UnrecordedP2pTest, ASinkThatRanOnIsLinkedToTheOneThatStoppedFirst) {
  // Rank 5 stopped before its TP all_reduce; its TP peer 4 issued it, so 4 ran past 5. With two
  // sinks (someone waits on each), the one further on waits, unrecorded, on the other.
  LoadedTrace trace = LoadReal("stuck_before_op");
  JobIndex index = BuildJobIndex(trace);
  ProgramOrder order(trace, index);
  std::vector<Block> blocks = {Wait(0, 5, 100), Wait(1, 4, 200)};
  LinkSinksWaitingInUnrecordedOps(trace, order, &blocks);
  ASSERT_EQ(blocks.size(), 3u);
  const Block& link = blocks.back();
  EXPECT_EQ(link.reason, BlockReason::kUnrecordedP2p);
  EXPECT_EQ(link.group, kNoGroupIndex);
  EXPECT_THAT(link.waiters, ElementsAre(4));
  EXPECT_THAT(link.blockers, ElementsAre(5));
}

TEST(UnrecordedP2pTest, OneSinkOrRecordedP2pAddsNothing) {
  LoadedTrace gloo = LoadReal("stuck_before_op");
  JobIndex gloo_index = BuildJobIndex(gloo);
  std::vector<Block> one_sink = {Wait(0, 5, 100), Wait(1, 5, 200)};
  LinkSinksWaitingInUnrecordedOps(gloo, ProgramOrder(gloo, gloo_index), &one_sink);
  EXPECT_EQ(one_sink.size(), 2u);

  LoadedTrace nccl = LoadSimulated();
  JobIndex nccl_index = BuildJobIndex(nccl);
  std::vector<Block> two_sinks = {Wait(0, 5, 100), Wait(1, 4, 200)};
  LinkSinksWaitingInUnrecordedOps(nccl, ProgramOrder(nccl, nccl_index), &two_sinks);
  EXPECT_EQ(two_sinks.size(), 2u);
}

}  // namespace
}  // namespace fr
