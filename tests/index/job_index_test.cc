// The cross-rank index from small hand-built jobs: what each member achieved (a retired op that
// failed, the default group's members), and when the dumps were taken. Expectations come from the
// jobs each test builds.
#include "fr/index/job_index.h"

#include <map>
#include <string>
#include <vector>

#include "fr/index/dump_time.h"
#include "fr/write/dump_spec.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/rank_dump_builder.h"

namespace fr {
namespace {

using ::testing::ElementsAre;
using ::testing::StartsWith;

constexpr int64_t kSecond = 1'000'000'000;
constexpr int64_t kStart = 1'800'000'000 * kSecond;

// A Gloo-style entry: scheduled forever, retired once it ended (completed or failed).
EntrySpec GlooOp(std::string op, int64_t seq, int64_t created_s, bool retired) {
  EntrySpec e;
  e.record_id = seq - 1;
  e.pg_name = "0";
  e.pg_desc = "default_pg";
  e.collective_seq_id = seq;
  e.op_id = seq;
  e.profiling_name = "gloo:" + op;
  e.time_created_ns = kStart + created_s * kSecond;
  e.time_discovered_started_ns.reset();
  e.time_discovered_completed_ns.reset();
  e.retired = retired;
  e.timeout_ms = 3000;
  e.input_sizes = {{4}};
  e.output_sizes = {{4}};
  e.input_dtypes = {"Float"};
  e.output_dtypes = {"Float"};
  return e;
}

RankDump Dump(int64_t rank, std::vector<EntrySpec> entries, int64_t mtime_ns) {
  DumpSpec spec;
  spec.comm_lib_version = "";
  spec.include_stacks = false;
  spec.entries = std::move(entries);
  RankDump dump = test_support::NormalizedDump(rank, spec);
  dump.file_mtime_ns = mtime_ns;
  return dump;
}

const GroupMember& Member(const JobIndex& index, int64_t rank) {
  for (const GroupMember& member : index.groups.at(0).members) {
    if (member.rank == rank) return member;
  }
  ADD_FAILURE() << "no member " << rank;
  return index.groups.at(0).members.at(0);
}

TEST(JobIndexTest, RetiredOpThatAPeerNeverIssuedInTimeFailed) {
  LoadedTrace trace;
  // Rank 0 issued #2 at t=10 s and Gloo retired it (its timeout, 3 s); rank 1 stopped after #1
  // and dumped at t=20 s, long after #2 would have needed it.
  trace.ranks.push_back(Dump(0,
                             {GlooOp("all_reduce", 1, 0, true), GlooOp("all_reduce", 2, 10, true)},
                             kStart + 14 * kSecond));
  trace.ranks.push_back(Dump(1, {GlooOp("all_reduce", 1, 0, true)}, kStart + 20 * kSecond));
  JobIndex index = BuildJobIndex(trace);
  const GroupMember& culprit_peer = Member(index, 0);
  ASSERT_EQ(culprit_peer.units.size(), 2u);
  EXPECT_TRUE(culprit_peer.units[1].retired_failed);
  EXPECT_EQ(culprit_peer.units[1].state, EntryState::kScheduled);
  EXPECT_FALSE(culprit_peer.units[0].retired_failed);
  EXPECT_EQ(culprit_peer.units[0].state, EntryState::kCompleted);
  EXPECT_EQ(culprit_peer.last_completed, 1);
  EXPECT_EQ(index.first_unfinished_entry[0], 1) << "rank 0 waits at its #2";
  EXPECT_EQ(index.first_unfinished_entry[1], -1);
  EXPECT_EQ(index.retired_failed_units, 1);
}

TEST(JobIndexTest, RetiredOpOfAnOnDemandDumpTakenBeforeThePeerArrivedCompleted) {
  LoadedTrace trace;
  // The peer dumped 1 s after #2 was issued: younger than the timeout, it may still have come.
  trace.ranks.push_back(Dump(0,
                             {GlooOp("all_reduce", 1, 0, true), GlooOp("all_reduce", 2, 10, true)},
                             kStart + 12 * kSecond));
  trace.ranks.push_back(Dump(1, {GlooOp("all_reduce", 1, 0, true)}, kStart + 11 * kSecond));
  JobIndex index = BuildJobIndex(trace);
  EXPECT_FALSE(Member(index, 0).units[1].retired_failed);
  EXPECT_EQ(Member(index, 0).units[1].state, EntryState::kCompleted);
  EXPECT_EQ(index.first_unfinished_entry[0], -1);
}

TEST(JobIndexTest, RetiredOpThatAPeerIssuedDifferentlyFailed) {
  LoadedTrace trace;
  trace.ranks.push_back(Dump(0, {GlooOp("all_reduce", 1, 0, true)}, kStart + 2 * kSecond));
  trace.ranks.push_back(Dump(1, {GlooOp("all_gather", 1, 0, false)}, kStart + 2 * kSecond));
  JobIndex index = BuildJobIndex(trace);
  EXPECT_TRUE(Member(index, 0).units[0].retired_failed);
}

TEST(JobIndexTest, AnAllReduceAPeerWentPastCompletedThoughAMemberLeftNoDump) {
  // accelerate launch (tests/data/accelerate/1.16.0/exception): rank 2 raised after its #2, the
  // step's DDP all_reduce; ranks 1 and 3 went on to #3 and wait there; rank 0 was SIGTERMed
  // before it dumped. #2 completed on ranks 1 and 3, so every member, rank 0 included, took part:
  // rank 2's #2 did not end in a death's error, and rank 2 waits for no one.
  LoadedTrace trace;
  std::vector<EntrySpec> on_peers = {GlooOp("all_reduce", 1, 0, true),
                                     GlooOp("all_reduce", 2, 1, true),
                                     GlooOp("all_reduce", 3, 2, true)};
  trace.ranks.push_back(Dump(1, on_peers, kStart + 9 * kSecond));
  trace.ranks.push_back(Dump(2,
                             {GlooOp("all_reduce", 1, 0, true), GlooOp("all_reduce", 2, 1, true)},
                             kStart + 8 * kSecond));
  trace.ranks.push_back(Dump(3, on_peers, kStart + 9 * kSecond));
  trace.missing_ranks = {0};
  JobIndex index = BuildJobIndex(trace);
  EXPECT_FALSE(Member(index, 2).units[1].retired_failed);
  EXPECT_EQ(Member(index, 2).units[1].state, EntryState::kCompleted);
  // The peers' own last op is still the one the missing rank's death may have ended.
  EXPECT_TRUE(Member(index, 1).units[2].retired_failed);
  EXPECT_TRUE(Member(index, 3).units[2].retired_failed);
}

TEST(JobIndexTest, ABroadcastAPeerWentPastSaysNothingOfTheOtherMembers) {
  // A broadcast completes on a receiver once the root sent: no proof that every member was in it.
  LoadedTrace trace;
  trace.ranks.push_back(Dump(1, {GlooOp("broadcast", 1, 0, true), GlooOp("all_reduce", 2, 1, true)},
                             kStart + 9 * kSecond));
  trace.ranks.push_back(Dump(2, {GlooOp("broadcast", 1, 0, true)}, kStart + 8 * kSecond));
  trace.missing_ranks = {0};
  JobIndex index = BuildJobIndex(trace);
  EXPECT_TRUE(Member(index, 2).units[0].retired_failed);
}

TEST(JobIndexTest, DefaultGroupWithoutPgConfigSpansTheJob) {
  LoadedTrace trace;
  trace.ranks.push_back(Dump(0, {GlooOp("barrier", 1, 0, true)}, kStart + kSecond));
  trace.ranks.push_back(Dump(3, {GlooOp("barrier", 1, 0, true)}, kStart + kSecond));
  trace.missing_ranks = {1, 2};
  JobIndex index = BuildJobIndex(trace);
  ASSERT_EQ(index.groups.size(), 1u);
  const JobGroup& group = index.groups[0];
  EXPECT_EQ(group.desc, "default_pg");
  EXPECT_TRUE(group.ranks_inferred);
  EXPECT_THAT(group.ranks, ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(Member(index, 2).dump, -1);
}

EntrySpec GroupOp(int64_t seq, std::string name, std::string desc) {
  EntrySpec e = GlooOp("all_reduce", seq, 0, false);
  e.pg_name = std::move(name);
  e.pg_desc = std::move(desc);
  return e;
}

// A real job's shape (tests/data/torchrun/2.13.0/sigkill_highest_rank): 4 ranks, TP groups
// {0,1} and {2,3}, DP groups {0,2} and {1,3}; rank 3, the highest, was SIGKILLed and left no
// dump. Gloo's dumps list no group members, so no dump names rank 3. The logs saying it died make
// it a rank without a file; without logs, the one TP and the one DP group each short of one
// member say the same: either way the job spans 4 ranks and both short groups get rank 3.
TEST(JobIndexTest, ADeadHighestRankIsMissingThoughNoDumpNamesIt) {
  LoadedTrace trace;
  trace.ranks.push_back(Dump(0, {GroupOp(1, "1", "TP"), GroupOp(1, "3", "DP")}, kStart));
  trace.ranks.push_back(Dump(1, {GroupOp(1, "1", "TP"), GroupOp(1, "4", "DP")}, kStart));
  trace.ranks.push_back(Dump(2, {GroupOp(1, "2", "TP"), GroupOp(1, "3", "DP")}, kStart));
  for (std::vector<int64_t> died : {std::vector<int64_t>{3}, std::vector<int64_t>{}}) {
    JobIndex index = BuildJobIndex(trace, kUnknown, 1, died);
    EXPECT_THAT(index.ranks_without_file, ElementsAre(3));
    ASSERT_EQ(index.groups.size(), 4u);
    EXPECT_THAT(index.groups[0].ranks, ElementsAre(0, 1));
    EXPECT_THAT(index.groups[1].ranks, ElementsAre(2, 3));
    EXPECT_THAT(index.groups[2].ranks, ElementsAre(0, 2));
    EXPECT_THAT(index.groups[3].ranks, ElementsAre(1, 3));
    EXPECT_TRUE(index.groups[3].ranks_inferred);
  }
}

// Where the groups' gaps do not say which ranks are missing, nothing is assumed: two DP groups
// short whose full sibling is no arithmetic progression (which of them holds rank 4, which rank
// 5?), or groups of two kinds that share more than one rank (no mesh). A rank the logs say died
// whose dump was read is never missing.
TEST(JobIndexTest, GroupGapsThatDoNotSayWhoIsMissingAddNoRank) {
  LoadedTrace two_short;
  two_short.ranks.push_back(Dump(0, {GroupOp(1, "1", "DP")}, kStart));
  two_short.ranks.push_back(Dump(1, {GroupOp(1, "2", "DP")}, kStart));
  two_short.ranks.push_back(Dump(2, {GroupOp(1, "3", "DP")}, kStart));
  two_short.ranks.push_back(Dump(3, {GroupOp(1, "1", "DP")}, kStart));
  two_short.ranks.push_back(Dump(5, {GroupOp(1, "1", "DP")}, kStart));
  EXPECT_TRUE(BuildJobIndex(two_short).ranks_without_file.empty());

  LoadedTrace kinds_disagree;
  // TP {0,1} {2,3} {4}: one rank short; DP {0,1,2,3} {4}: three short.
  kinds_disagree.ranks.push_back(Dump(0, {GroupOp(1, "1", "TP"), GroupOp(1, "3", "DP")}, kStart));
  kinds_disagree.ranks.push_back(Dump(1, {GroupOp(1, "1", "TP"), GroupOp(1, "3", "DP")}, kStart));
  kinds_disagree.ranks.push_back(Dump(2, {GroupOp(1, "2", "TP"), GroupOp(1, "3", "DP")}, kStart));
  kinds_disagree.ranks.push_back(Dump(3, {GroupOp(1, "2", "TP"), GroupOp(1, "3", "DP")}, kStart));
  kinds_disagree.ranks.push_back(Dump(4, {GroupOp(1, "5", "TP"), GroupOp(1, "4", "DP")}, kStart));
  EXPECT_TRUE(BuildJobIndex(kinds_disagree).ranks_without_file.empty());

  // A real job (tests/data/torchrun/2.13.0 sweep, rank 0 raised before its first DP op): DP
  // {2} is short, but rank 0, loaded, is in no DP group: it is the member DP {2} lacks.
  LoadedTrace not_yet_in_dp;
  not_yet_in_dp.ranks.push_back(Dump(0, {GroupOp(1, "1", "TP")}, kStart));
  not_yet_in_dp.ranks.push_back(Dump(1, {GroupOp(1, "1", "TP"), GroupOp(1, "4", "DP")}, kStart));
  not_yet_in_dp.ranks.push_back(Dump(2, {GroupOp(1, "2", "TP"), GroupOp(1, "3", "DP")}, kStart));
  not_yet_in_dp.ranks.push_back(Dump(3, {GroupOp(1, "2", "TP"), GroupOp(1, "4", "DP")}, kStart));
  EXPECT_TRUE(BuildJobIndex(not_yet_in_dp).ranks_without_file.empty());

  LoadedTrace complete;
  complete.ranks.push_back(Dump(0, {GroupOp(1, "1", "DP")}, kStart));
  complete.ranks.push_back(Dump(1, {GroupOp(1, "1", "DP")}, kStart));
  EXPECT_TRUE(BuildJobIndex(complete, kUnknown, 1, {1}).ranks_without_file.empty());
}

// A mesh's groups are progressions of one stride (DP {0,3} of a 6-rank job with TP x PP = 3):
// short groups of the kind are completed along it, each with the one placement on ranks no
// sibling holds, and ranks above the highest dump become ranks without a file. As when rank 5
// exits and ranks 6 and 7 of a TP 2 x DP 4 job left no dump (tests/data/torch rank_exits).
TEST(JobIndexTest, ShortGroupsOfAMeshAreCompletedAlongItsStride) {
  LoadedTrace trace;
  trace.ranks.push_back(Dump(0, {GroupOp(1, "1", "DP")}, kStart));
  trace.ranks.push_back(Dump(1, {GroupOp(1, "2", "DP")}, kStart));
  trace.ranks.push_back(Dump(2, {GroupOp(1, "3", "DP")}, kStart));
  trace.ranks.push_back(Dump(3, {GroupOp(1, "1", "DP")}, kStart));
  JobIndex index = BuildJobIndex(trace);
  EXPECT_THAT(index.ranks_without_file, ElementsAre(4, 5));
  std::map<std::string, std::vector<int64_t>> ranks_of_group;
  for (const JobGroup& group : index.groups) ranks_of_group[group.name] = group.ranks;
  EXPECT_THAT(ranks_of_group["2"], ElementsAre(1, 4));
  EXPECT_THAT(ranks_of_group["3"], ElementsAre(2, 5));
}

// Dumps are indexed on several threads; a trace built by hand may hold two dumps of one rank,
// which then share their members: the index is the one thread's, and nothing races.
TEST(JobIndexTest, TwoDumpsOfOneRankIndexAsOnOneThread) {
  LoadedTrace trace;
  for (int copy = 0; copy < 2; ++copy) {
    for (int64_t rank = 0; rank < 200; ++rank) {
      trace.ranks.push_back(
          Dump(rank, {GlooOp("all_reduce", 1, 0, true), GlooOp("all_reduce", 2, 1, false)},
               kStart + 5 * kSecond));
    }
  }
  JobIndex parallel = BuildJobIndex(trace, kUnknown, /*jobs=*/4);
  JobIndex serial = BuildJobIndex(trace, kUnknown, /*jobs=*/1);
  ASSERT_EQ(parallel.groups.size(), serial.groups.size());
  for (size_t g = 0; g < serial.groups.size(); ++g) {
    ASSERT_EQ(parallel.groups[g].members.size(), serial.groups[g].members.size());
    for (size_t m = 0; m < serial.groups[g].members.size(); ++m) {
      const GroupMember& a = parallel.groups[g].members[m];
      const GroupMember& b = serial.groups[g].members[m];
      EXPECT_EQ(a.dump, b.dump);
      EXPECT_EQ(a.units.size(), b.units.size());
      EXPECT_EQ(a.last_completed, b.last_completed);
    }
  }
  EXPECT_EQ(parallel.first_unfinished_entry, serial.first_unfinished_entry);
  // Both copies of a rank landed in its one member, in dump order.
  EXPECT_EQ(Member(serial, 7).units.size(), 4u);
  EXPECT_EQ(Member(serial, 7).dump, 207);
}

TEST(DumpTimeTest, FileTimesOlderThanTheDumpsOwnRecordsAreRefused) {
  LoadedTrace trace;
  trace.ranks.push_back(Dump(0, {GlooOp("all_reduce", 1, 10, true)}, 0));       // copied: mtime 0
  trace.ranks.push_back(Dump(1, {GlooOp("all_reduce", 1, 10, true)}, kStart));  // before t=10 s
  DumpTimes times = EstimateDumpTimes(trace, kUnknown);
  EXPECT_EQ(times.file_times_rejected, 2);
  EXPECT_THAT(times.per_dump, ElementsAre(kUnknown, kUnknown));
  EXPECT_THAT(times.source, StartsWith("unknown"));
  EXPECT_EQ(times.confidence, Confidence::kLow);
  EXPECT_THAT(times.newest_record, ElementsAre(kStart + 10 * kSecond, kStart + 10 * kSecond));
}

TEST(DumpTimeTest, ConsistentFileTimesAreUsedAndARefusedOneTakesTheJobTime) {
  LoadedTrace trace;
  trace.ranks.push_back(Dump(0, {GlooOp("all_reduce", 1, 10, true)}, kStart + 30 * kSecond));
  trace.ranks.push_back(Dump(1, {GlooOp("all_reduce", 1, 10, true)}, kStart + 31 * kSecond));
  DumpTimes times = EstimateDumpTimes(trace, kUnknown);
  EXPECT_EQ(times.source, "file modification time");
  EXPECT_EQ(times.confidence, Confidence::kMedium);
  EXPECT_EQ(times.job_ns, kStart + 31 * kSecond);
  trace.ranks[0].file_mtime_ns = 0;
  times = EstimateDumpTimes(trace, kUnknown);
  EXPECT_EQ(times.per_dump[0], kStart + 31 * kSecond);
  EXPECT_EQ(times.confidence, Confidence::kLow);
  EXPECT_THAT(times.source, StartsWith("file modification time (1 file(s) refused"));
}

TEST(DumpTimeTest, AGivenTimeWins) {
  LoadedTrace trace;
  trace.ranks.push_back(Dump(0, {GlooOp("all_reduce", 1, 10, true)}, 0));
  DumpTimes times = EstimateDumpTimes(trace, kStart + 99 * kSecond);
  EXPECT_THAT(times.per_dump, ElementsAre(kStart + 99 * kSecond));
  EXPECT_EQ(times.source, "option");
  EXPECT_EQ(times.confidence, Confidence::kHigh);
}

}  // namespace
}  // namespace fr
