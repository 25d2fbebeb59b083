// Matching from small hand-built jobs: who is blocked by whom, desyncs with their minority,
// collectives stuck with everyone inside, p2p channels, batches that completed, and the edge of
// a wrapped ring buffer. Each job is the Document torch would have pickled, read by the normalizer
// (tests/support), so the matcher sees what it sees in real files; expectations come from the job
// each test builds.
#include "fr/match/matcher.h"

#include <string>
#include <vector>

#include "fr/index/job_index.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/rank_dump_builder.h"

namespace fr {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

using test_support::kSecond;
using test_support::kStart;
using test_support::Rank;
constexpr int64_t kLater = kStart + 3600 * kSecond;  // dump time: everything pending is stuck
using Op = test_support::TestOp;

struct Matched {
  LoadedTrace trace;
  JobIndex index;
  MatchResult result;
};

// RankDumps are move-only, so they come as arguments rather than an initializer list.
template <typename... Dumps>
Matched Match(Dumps... dumps) {
  Matched m;
  (m.trace.ranks.push_back(std::move(dumps)), ...);
  m.index = BuildJobIndex(m.trace, kLater);
  m.result = MatchJob(m.trace, m.index);
  return m;
}

TEST(MatcherTest, MemberThatNeverIssuedBlocksTheOthers) {
  Matched m = Match(Rank(0, 3, {{"all_reduce", 1, "completed"}, {"all_reduce", 2, "started"}}),
                    Rank(1, 3, {{"all_reduce", 1, "completed"}, {"all_reduce", 2, "started"}}),
                    Rank(2, 3, {{"all_reduce", 1, "completed"}}));
  ASSERT_EQ(m.result.blocks.size(), 1u);
  const Block& block = m.result.blocks[0];
  EXPECT_EQ(block.reason, BlockReason::kNeverIssued);
  EXPECT_EQ(block.seq, 2);
  EXPECT_THAT(block.waiters, ElementsAre(0, 1));
  EXPECT_THAT(block.blockers, ElementsAre(2));
  EXPECT_THAT(m.result.stuck, IsEmpty());
  EXPECT_EQ(m.result.groups[0].first_divergence, 2);
}

TEST(MatcherTest, DesyncBlamesTheMinority) {
  Matched m = Match(Rank(0, 3, {{"all_reduce", 1, "started"}}),
                    Rank(1, 3, {{"all_reduce", 1, "started", {4}, "BFloat16"}}),
                    Rank(2, 3, {{"all_reduce", 1, "started"}}));
  ASSERT_EQ(m.result.mismatches.size(), 1u);
  const Mismatch& mismatch = m.result.mismatches[0];
  EXPECT_EQ(mismatch.kind, MismatchKind::kDtype);
  EXPECT_THAT(mismatch.minority, ElementsAre(1));
  EXPECT_THAT(mismatch.majority, ElementsAre(0, 2));
  EXPECT_FALSE(mismatch.tie);
  ASSERT_EQ(m.result.blocks.size(), 1u);
  EXPECT_EQ(m.result.blocks[0].reason, BlockReason::kDtypeMismatch);
  EXPECT_THAT(m.result.blocks[0].blockers, ElementsAre(1));
}

TEST(MatcherTest, EveryoneInsideAndNoneDoneIsAStuckCollective) {
  Matched m =
      Match(Rank(0, 2, {{"all_reduce", 1, "started"}}), Rank(1, 2, {{"all_reduce", 1, "started"}}));
  EXPECT_THAT(m.result.blocks, IsEmpty());
  ASSERT_EQ(m.result.stuck.size(), 1u);
  EXPECT_THAT(m.result.stuck[0].ranks, ElementsAre(0, 1));
  EXPECT_TRUE(m.result.stuck[0].all_started);
}

TEST(MatcherTest, YoungOpInADesyncedCollectiveStillWaitsForTheCulprit) {
  // Rank 1 issued broadcast where rank 0 issued all_reduce. Rank 0 was late: when rank 1 gave
  // up and exited, rank 0's op was seconds old, and rank 0 dumped before its failed op was
  // retired. Young as it is, the op can never complete, so rank 0 waits there for rank 1.
  Matched m;
  m.trace.ranks.push_back(
      Rank(0, 2, {{"all_reduce", 1, "completed"}, {"all_reduce", 2, "scheduled"}}));
  m.trace.ranks.push_back(
      Rank(1, 2, {{"all_reduce", 1, "completed"}, {"broadcast", 2, "scheduled"}}));
  // Op 2 was created at kStart + 2 s on both ranks (the Rank helper); its timeout is 10 min.
  m.trace.ranks[0].file_mtime_ns = kStart + 5 * kSecond;
  m.trace.ranks[1].file_mtime_ns = kLater;
  m.index = BuildJobIndex(m.trace);
  m.result = MatchJob(m.trace, m.index);
  ASSERT_EQ(m.result.mismatches.size(), 1u);
  EXPECT_EQ(m.result.in_flight_ops, 0);
  ASSERT_EQ(m.result.blocks.size(), 1u);
  const Block& block = m.result.blocks[0];
  EXPECT_EQ(block.reason, BlockReason::kOpMismatch);
  EXPECT_EQ(block.seq, 2);
  EXPECT_THAT(block.waiters, ElementsAre(0));
  EXPECT_THAT(block.blockers, ElementsAre(1));
}

TEST(MatcherTest, SendWithoutItsRecvIsUnmatched) {
  Matched m = Match(Rank(0, 2, {{"send 0->1", 1, "started"}}),
                    Rank(1, 2, {{"all_reduce", 1, "completed"}}));
  ASSERT_EQ(m.result.blocks.size(), 1u);
  EXPECT_TRUE(m.result.blocks[0].is_p2p);
  EXPECT_EQ(m.result.blocks[0].reason, BlockReason::kNoMatchingRecv);
  EXPECT_THAT(m.result.blocks[0].waiters, ElementsAre(0));
  EXPECT_THAT(m.result.blocks[0].blockers, ElementsAre(1));
}

TEST(MatcherTest, CompletedBatchWhoseMembersStayScheduledIsDone) {
  // batch_isend_irecv as PyTorch records it: members without events, then the closing entry.
  // The closing entry carries the batch's p2p seq and, as PyTorch writes it, is_p2p false.
  std::vector<Op> rank0 = {{"send 0->1", 1, "scheduled"},
                           {"recv 0<-1", 1, "scheduled"},
                           {"coalesced", 0, "completed", {}, "", 1}};
  std::vector<Op> rank1 = {{"recv 1<-0", 1, "scheduled"},
                           {"send 1->0", 1, "scheduled"},
                           {"coalesced", 0, "completed", {}, "", 1}};
  Matched m = Match(Rank(0, 2, rank0), Rank(1, 2, rank1));
  EXPECT_THAT(m.result.blocks, IsEmpty());
  EXPECT_THAT(m.result.stuck, IsEmpty());
  EXPECT_EQ(m.index.first_unfinished_entry[0], -1);
}

TEST(MatcherTest, UnitCutByTheRingBufferIsNoDesync) {
  // Rank 1's buffer wrapped inside coalesced group #1: it kept only the group's last op.
  std::vector<Op> whole = {{"all_reduce", 1, "scheduled", {4}},
                           {"all_reduce", 1, "scheduled", {6}},
                           {"all_reduce_coalesced", 1, "completed"},
                           {"all_reduce", 2, "completed"}};
  std::vector<Op> cut = {{"all_reduce", 1, "scheduled", {6}},
                         {"all_reduce_coalesced", 1, "completed"},
                         {"all_reduce", 2, "completed"}};
  Matched m = Match(Rank(0, 2, whole), Rank(1, 2, cut, /*first_record=*/57));
  EXPECT_THAT(m.result.mismatches, IsEmpty());
  EXPECT_THAT(m.result.blocks, IsEmpty());
}

}  // namespace
}  // namespace fr
