// The ProcessGroupNCCL family (lib/fr/logs/families/process_group_nccl.cc): torch's watchdog
// cascade, on real lines from public issues (tests/data/logs/real, each naming its source).
#include <string>
#include <vector>

#include "fr/logs/log_parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/logs/log_test_util.h"

namespace fr {
namespace {

using log_test::Kinds;
using log_test::ParseReal;
using ::testing::ElementsAre;

TEST(RealLogs, WatchdogTimeoutDefaultGroup) {
  LogSet logs = ParseReal("watchdog_default_pg.log");
  ASSERT_THAT(Kinds(logs),
              ElementsAre("watchdog_timeout", "work_timeout_seqs", "watchdog_timeout"));
  const LogEvent& e = logs.events[0];
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.line, 2);
  EXPECT_EQ(e.seq, 808);
  EXPECT_EQ(e.op, "ALLREDUCE");
  EXPECT_EQ(e.numel_in, 9801523);
  EXPECT_EQ(e.numel_out, 9801523);
  EXPECT_EQ(e.timeout_ms, 600000);
  EXPECT_EQ(e.ran_for_ms, 600020);
  EXPECT_EQ(e.raw_time.kind, LogTime::Kind::kNoYear);
  EXPECT_EQ(e.raw_time.month, 6);
  EXPECT_EQ(e.raw_time.day, 26);
  EXPECT_EQ(e.raw_time.ns, ((6 * 60 + 24) * 60 + 44) * 1000000000LL + 903881913);
  const LogEvent& seqs = logs.events[1];
  EXPECT_EQ(seqs.seq, 808);
  EXPECT_EQ(seqs.last_enqueued_seq, 811);
  EXPECT_EQ(seqs.last_completed_seq, 807);
  EXPECT_EQ(seqs.process_group, "0");
  EXPECT_EQ(logs.files[0].format, "glog");
}

TEST(RealLogs, WatchdogTimeoutSubgroupCascade) {
  LogSet logs = ParseReal("watchdog_subgroup.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("watchdog_timeout", "work_timeout_seqs", "work_timeout_seqs",
                                       "watchdog_timeout", "process_taken_down"));
  EXPECT_EQ(logs.events[0].op, "COALESCED");
  EXPECT_EQ(logs.events[2].seq, 610);
  EXPECT_EQ(logs.events[2].last_enqueued_seq, 616);
  EXPECT_EQ(logs.events[2].process_group, "9");
  EXPECT_EQ(logs.events[2].rank, 4);  // from the "[rank4]:" prefix, not the group rank
  EXPECT_EQ(logs.events[3].seq, -1);
}

TEST(RealLogs, WatchdogTimeoutTorch1) {
  LogSet logs = ParseReal("watchdog_torch1.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("watchdog_timeout", "watchdog_timeout"));
  EXPECT_EQ(logs.events[0].seq, 96120);
  EXPECT_EQ(logs.events[0].numel_in, -1);
  EXPECT_EQ(logs.events[0].timeout_ms, 1800000);
  EXPECT_EQ(logs.events[0].ran_for_ms, 25624887);
  EXPECT_EQ(logs.events[0].raw_time.kind, LogTime::Kind::kNone);
  // "[Rank 7]" without a group tag may be a group rank: it is not taken as the global rank.
  EXPECT_EQ(logs.events[1].rank, -1);
}

TEST(RealLogs, DumpSignal) {
  LogSet logs = ParseReal("dump_signal.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("dump_signal", "dump_signal"));
  EXPECT_EQ(logs.events[0].reason, "local");
  EXPECT_EQ(logs.events[1].rank, 0);
  EXPECT_EQ(logs.events[1].peer_rank, 1);
  EXPECT_EQ(logs.events[1].last_enqueued_seq, 233659);
}

TEST(RealLogs, HeartbeatMonitor) {
  LogSet logs = ParseReal("heartbeat.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("watchdog_stuck"));
  EXPECT_EQ(logs.events[0].rank, 144);
}

TEST(WorldLogs, TorchsCollectiveMismatchCheckIsTheExceptionThatEndsTheJob) {
  LogSet logs = log_test::ParseWorld("simpletuner_mismatch_seq0_reduce");
  ASSERT_THAT(Kinds(logs), ElementsAre("python_exception"));
  EXPECT_EQ(logs.events[0].reason,
            "RuntimeError (collectives differ across ranks: rank 1 runs ALLGATHER (seq 101), "
            "rank 7 runs REDUCE (seq 0))");
}
}  // namespace
}  // namespace fr
