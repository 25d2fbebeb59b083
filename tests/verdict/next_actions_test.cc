// What to do next, per failure class: the advice a user reads must fit the class and the
// evidence (a culprit without a dump, missing dumps, a backend that records no timing).
#include "fr/verdict/next_actions.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(NextActionsTest, CulpritThatLeftNoDumpIsLookedForInItsLogs) {
  NextActionContext c;
  c.failure_class = FailureClass::kMissingParticipant;
  c.culprits = {37};
  c.culprit_dump_missing = true;
  std::vector<std::string> actions = NextActions(c);
  ASSERT_FALSE(actions.empty());
  EXPECT_THAT(actions[0], AllOf(HasSubstr("rank 37 left no dump"), HasSubstr("OOM")));
}

TEST(NextActionsTest, CulpritStuckOutsideCommunicationGetsItsStackRead) {
  NextActionContext c;
  c.failure_class = FailureClass::kMissingParticipant;
  c.culprits = {3, 4};
  std::vector<std::string> actions = NextActions(c);
  EXPECT_THAT(actions[0], AllOf(HasSubstr("ranks 3-4"), HasSubstr("stack")));
  EXPECT_THAT(actions, Contains(HasSubstr("TORCH_NCCL_ENABLE_TIMING")));
}

TEST(NextActionsTest, ACulpritTheLogsShowDyingIsNotLookedForWhereItHangs) {
  NextActionContext c;
  c.failure_class = FailureClass::kMissingParticipant;
  c.culprits = {2};
  c.stop_explained = true;
  for (bool dump_missing : {false, true}) {
    c.culprit_dump_missing = dump_missing;
    std::vector<std::string> actions = NextActions(c);
    EXPECT_THAT(actions, Not(Contains(HasSubstr("stuck outside communication"))));
    EXPECT_THAT(actions, Not(Contains(HasSubstr("swallowed"))));
    EXPECT_THAT(actions, Not(Contains(HasSubstr("left no dump"))));
  }
  // What the dumps lacked is still said.
  EXPECT_THAT(NextActions(c), Contains(HasSubstr("shared storage")));
}

TEST(NextActionsTest, TimingAdviceOnlyWhereTheBackendCanRecordIt) {
  NextActionContext c;
  c.failure_class = FailureClass::kStuckCollective;
  c.timing_recordable = false;  // Gloo
  EXPECT_THAT(NextActions(c), Not(Contains(HasSubstr("TORCH_NCCL_ENABLE_TIMING"))));
  c.timing_recordable = true;
  c.timing_known = true;
  EXPECT_THAT(NextActions(c), Not(Contains(HasSubstr("TORCH_NCCL_ENABLE_TIMING"))));
}

TEST(NextActionsTest, EachClassGetsItsOwnFirstStep) {
  auto first = [](FailureClass fc) {
    NextActionContext c;
    c.failure_class = fc;
    c.culprits = {1};
    c.ranks_missing = {6, 7};
    return NextActions(c).at(0);
  };
  EXPECT_THAT(first(FailureClass::kGpuStall), HasSubstr("GPU never started"));
  EXPECT_THAT(first(FailureClass::kDtypeMismatch), HasSubstr("rank-dependent control flow"));
  EXPECT_THAT(first(FailureClass::kP2pUnmatched), HasSubstr("pipeline schedule"));
  EXPECT_THAT(first(FailureClass::kStuckCollective), HasSubstr("nccl-tests"));
  EXPECT_THAT(first(FailureClass::kInsufficientEvidence), HasSubstr("ranks 6-7"));
  EXPECT_THAT(first(FailureClass::kNone), HasSubstr("Nothing is stuck"));
}

TEST(NextActionsTest, FailureClassNamesAreTheContractsStrings) {
  for (const char* name :
       {"none", "missing_participant", "gpu_stall", "op_mismatch", "size_mismatch",
        "dtype_mismatch", "p2p_unmatched", "stuck_collective", "insufficient_evidence"}) {
    std::optional<FailureClass> c = ParseFailureClass(name);
    ASSERT_TRUE(c.has_value()) << name;
    EXPECT_EQ(FailureClassName(*c), name);
  }
  EXPECT_FALSE(ParseFailureClass("straggler").has_value());
  EXPECT_EQ(ClassOfReason(BlockReason::kNotStarted), FailureClass::kGpuStall);
  EXPECT_EQ(ClassOfReason(BlockReason::kSendHeldByBatch), FailureClass::kP2pUnmatched);
  EXPECT_EQ(ClassOfReason(BlockReason::kDumpMissing), FailureClass::kMissingParticipant);
}

}  // namespace
}  // namespace fr
