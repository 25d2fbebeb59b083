// What PyTorch's recorder means beyond what it writes (recorder_semantics.h), checked on dumps
// written by the torch-exact writer in the shapes real PyTorch records: NCCL coalesced groups and
// p2p batches whose members carry no events, Gloo's op-id pg_status and its placeholder
// pg_config. Expected values come from the spec each test writes.
#include "fr/normalize/recorder_semantics.h"

#include <string>

#include "fr/base/buffer.h"
#include "fr/decode/pickle_decoder.h"
#include "fr/normalize/normalize.h"
#include "fr/write/dump_spec.h"
#include "fr/write/dump_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

RankDump Normalize(const DumpSpec& spec) {
  absl::StatusOr<Document> doc = DecodePickle(Buffer::FromString(WriteDumpPickle(spec)));
  EXPECT_TRUE(doc.ok()) << doc.status();
  absl::StatusOr<RankDump> dump = NormalizeDump(*doc, 0);
  EXPECT_TRUE(dump.ok()) << dump.status();
  return *std::move(dump);
}

EntrySpec Op(std::string name, int64_t seq, int64_t p2p_seq, int64_t op_id, std::string group) {
  EntrySpec e;
  e.record_id = op_id - 1;
  e.pg_name = group;
  e.pg_desc = group == "0" ? "default_pg" : "PP";
  e.pg_id = group == "0" ? 0 : 1;
  e.collective_seq_id = seq;
  e.p2p_seq_id = p2p_seq;
  e.op_id = op_id;
  e.profiling_name = std::move(name);
  e.time_created_ns = 1'000'000'000 * op_id;
  return e;
}

void Complete(EntrySpec* e) {
  e->state = "completed";
  e->retired = true;
  e->time_discovered_started_ns = e->time_created_ns + 10;
  e->time_discovered_completed_ns = e->time_created_ns + 20;
}

DumpSpec TwoGroups() {
  DumpSpec spec;
  spec.process_groups = {{"0", "default_pg", {0, 1}, 0}, {"1", "PP", {0, 1}, 1}};
  return spec;
}

TEST(RecorderSemanticsTest, BatchMembersTakeTheStateOfTheEntryClosingTheBatch) {
  DumpSpec spec = TwoGroups();
  // batch_isend_irecv: send and recv share p2p seq 1, then the closing entry, which PyTorch
  // writes with is_p2p false and the last member's op id.
  EntrySpec send = Op("nccl:send 0->1", 0, 1, 1, "1");
  send.is_p2p = true;
  EntrySpec recv = Op("nccl:recv 0<-1", 0, 1, 2, "1");
  recv.is_p2p = true;
  EntrySpec end = Op("nccl:coalesced", 0, 1, 2, "1");
  Complete(&end);
  spec.entries = {send, recv, end};
  RankDump dump = Normalize(spec);
  ASSERT_EQ(dump.entries.size(), 3u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(dump.entries[i].state, EntryState::kCompleted) << i;
    EXPECT_TRUE(dump.entries[i].retired);
    EXPECT_TRUE(dump.entries[i].state_from_batch);
    EXPECT_EQ(dump.entries[i].time_discovered_completed_ns, *end.time_discovered_completed_ns);
  }
  EXPECT_TRUE(dump.entries[2].is_p2p) << "the closing entry of a p2p batch is a p2p entry";
  EXPECT_EQ(dump.entries[2].op, OpKind::kCoalesced);
  EXPECT_EQ(dump.OddityCount("coalesced_member_state_from_closing_entry"), 2);
}

TEST(RecorderSemanticsTest, CoalescedCollectiveMembersFollowAnUnfinishedClosingEntry) {
  DumpSpec spec = TwoGroups();
  EntrySpec a = Op("nccl:all_reduce", 4, 0, 4, "0");
  EntrySpec b = Op("nccl:all_reduce", 4, 0, 5, "0");
  EntrySpec end = Op("nccl:all_reduce_coalesced", 4, 0, 5, "0");
  end.state = "started";
  end.time_discovered_started_ns = end.time_created_ns + 5;
  spec.entries = {a, b, end};
  RankDump dump = Normalize(spec);
  EXPECT_EQ(dump.entries[0].state, EntryState::kStarted);
  EXPECT_EQ(dump.entries[1].state, EntryState::kStarted);
  EXPECT_FALSE(dump.entries[0].retired);
  EXPECT_FALSE(dump.entries[2].is_p2p);
  EXPECT_EQ(dump.entries[2].op, OpKind::kCoalesced) << "a closing entry, not an all_reduce";
}

TEST(RecorderSemanticsTest, FastPathCoalescedOpAndOrdinaryEntriesAreLeftAlone) {
  DumpSpec spec = TwoGroups();
  EntrySpec before = Op("nccl:all_reduce", 1, 0, 1, "0");  // pending, other seq
  EntrySpec fast = Op("nccl:allreduce_coalesced", 2, 0, 2, "0");
  fast.input_sizes = {{4}, {5}};
  Complete(&fast);
  spec.entries = {before, fast};
  RankDump dump = Normalize(spec);
  EXPECT_EQ(dump.entries[0].state, EntryState::kScheduled);
  EXPECT_FALSE(dump.entries[0].state_from_batch);
  EXPECT_EQ(dump.entries[1].op, OpKind::kAllReduce);
  EXPECT_EQ(dump.OddityCount("coalesced_member_state_from_closing_entry"), 0);
}

TEST(RecorderSemanticsTest, GlooPgStatusInOpIdsBecomesCollectiveSeqIds) {
  // As Gloo 2.13 writes it: collective seq 5 is op 8 (p2p ops took op ids 4-6 unrecorded).
  DumpSpec spec = TwoGroups();
  spec.entries = {Op("gloo:all_reduce", 3, 0, 3, "0"), Op("gloo:all_reduce", 4, 0, 7, "0"),
                  Op("gloo:all_reduce", 5, 0, 8, "0")};
  for (EntrySpec& e : spec.entries) e.retired = true;
  spec.pg_status[0] = {
      .last_enqueued_collective = 8, .last_started_collective = -1, .last_completed_collective = 7};
  RankDump dump = Normalize(spec);
  const ProcessGroup& group = dump.groups[dump.entries[0].group];
  ASSERT_TRUE(group.has_status);
  EXPECT_EQ(group.status.last_enqueued_collective, 5);
  EXPECT_EQ(group.status.last_completed_collective, 4);
  EXPECT_EQ(group.status.last_started_collective, -1);
  EXPECT_EQ(dump.OddityCount("pg_status_in_op_ids"), 1);
}

TEST(RecorderSemanticsTest, PgStatusInSeqIdsIsKept) {
  DumpSpec spec = TwoGroups();
  spec.entries = {Op("nccl:all_reduce", 1, 0, 1, "0"), Op("nccl:all_reduce", 2, 0, 2, "0")};
  spec.pg_status[0] = {
      .last_enqueued_collective = 2, .last_started_collective = 1, .last_completed_collective = 1};
  RankDump dump = Normalize(spec);
  const ProcessGroup& group = dump.groups[dump.entries[0].group];
  EXPECT_EQ(group.status.last_enqueued_collective, 2);
  EXPECT_EQ(group.status.last_completed_collective, 1);
  EXPECT_EQ(dump.OddityCount("pg_status_in_op_ids"), 0);
}

TEST(RecorderSemanticsTest, GlooPlaceholderPgConfigGroupIsNoGroup) {
  DumpSpec spec;
  // 2.14 writes a nameless group whose ranks belong to some other group.
  spec.process_groups = {{"", "", {0, 1}, 0}};
  EntrySpec e = Op("gloo:all_reduce", 1, 0, 1, "0");
  e.retired = true;
  spec.entries = {e};
  RankDump dump = Normalize(spec);
  for (const ProcessGroup& group : dump.groups) {
    EXPECT_NE(dump.strings.view(group.name), "") << "placeholder kept as a group";
  }
  EXPECT_EQ(dump.OddityCount("pg_config_placeholder_group"), 1);
}

}  // namespace
}  // namespace fr
