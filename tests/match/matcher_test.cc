// Matching from small hand-built jobs: who is blocked by whom, desyncs with their minority,
// collectives stuck with everyone inside, p2p channels, batches that completed, and the edge of
// a wrapped ring buffer. Each job is written with the torch-exact writer and read back, so the
// matcher sees what it sees in real files; expectations come from the job each test writes.
#include "fr/match/matcher.h"

#include <string>
#include <vector>

#include "fr/base/buffer.h"
#include "fr/decode/pickle_decoder.h"
#include "fr/index/job_index.h"
#include "fr/normalize/normalize.h"
#include "fr/write/dump_spec.h"
#include "fr/write/dump_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kStart = 1'800'000'000 * kSecond;
constexpr int64_t kLater = kStart + 3600 * kSecond;  // dump time: everything pending is stuck

struct Op {
  std::string name;   // "all_reduce", "send 0->1", "coalesced", ...
  int64_t seq = 0;    // collective seq (or p2p seq for send/recv)
  std::string state;  // scheduled | started | completed
  std::vector<int64_t> size = {4};
  std::string dtype = "Float";
  int64_t closes_batch = 0;  // for a closing entry: the p2p seq of the batch it closes
};

// One rank's dump: all ops in group "0" of `world` ranks, in order.
RankDump Rank(int64_t rank, int64_t world, const std::vector<Op>& ops, int64_t first_record = 0) {
  DumpSpec spec;
  std::vector<int64_t> ranks;
  for (int64_t r = 0; r < world; ++r) ranks.push_back(r);
  spec.process_groups = {{"0", "default_pg", ranks, 0}};
  spec.pg_status.clear();
  int64_t op_id = 0, record = first_record;
  for (const Op& op : ops) {
    EntrySpec e;
    e.record_id = record++;
    e.pg_name = "0";
    e.pg_desc = "default_pg";
    bool p2p = op.name.starts_with("send") || op.name.starts_with("recv");
    e.is_p2p = p2p;
    e.collective_seq_id = p2p ? 0 : op.seq;
    e.p2p_seq_id = p2p ? op.seq : op.closes_batch;
    e.op_id = ++op_id;
    e.profiling_name = "nccl:" + op.name;
    e.time_created_ns = kStart + e.op_id * kSecond;
    e.state = op.state;
    e.retired = op.state == "completed";
    if (op.state != "scheduled") e.time_discovered_started_ns = e.time_created_ns + 1;
    if (op.state == "completed") e.time_discovered_completed_ns = e.time_created_ns + 2;
    if (!op.name.ends_with("coalesced")) {  // a closing entry records no tensors
      e.input_sizes = {op.size};
      e.output_sizes = {op.size};
      e.input_dtypes = {op.dtype};
      e.output_dtypes = {op.dtype};
    }
    spec.entries.push_back(e);
  }
  absl::StatusOr<Document> doc = DecodePickle(Buffer::FromString(WriteDumpPickle(spec)));
  EXPECT_TRUE(doc.ok()) << doc.status();
  absl::StatusOr<RankDump> dump = NormalizeDump(*doc, rank);
  EXPECT_TRUE(dump.ok()) << dump.status();
  return *std::move(dump);
}

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
