// The Slurm family (lib/fr/logs/families/slurm.cc): srun's failed tasks, slurmstepd's OOM
// events and cancellations, on real lines from public issues (tests/data/logs/real) and lines of
// the documented shapes.
#include <string>
#include <vector>

#include "fr/logs/log_parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/logs/log_test_util.h"

namespace fr {
namespace {

using log_test::Kinds;
using log_test::Parse;
using log_test::ParseReal;
using ::testing::ElementsAre;

TEST(RealLogs, SlurmOom) {
  LogSet old = ParseReal("slurm_oom_old.log");
  // The step cancelled after the OOM events is read as a cancel without a reason; the verdict
  // weighs it against them (RootCauseTest.AStepCancelledAfterATaskFailedIsNotTheCause).
  ASSERT_THAT(Kinds(old),
              ElementsAre("slurm_oom_event", "slurm_oom_event", "host_kill", "worker_failed"));
  EXPECT_EQ(old.events[0].reason, "3495064.0");
  EXPECT_EQ(old.events[1].rank, 4);
  EXPECT_EQ(old.events[1].host, "Orion-01-01");
  EXPECT_EQ(old.events[2].reason, "step cancelled");
  EXPECT_EQ(old.events[3].rank, 289);
  EXPECT_EQ(old.events[3].signal, 7);
  LogSet current = ParseReal("slurm_oom.log");
  ASSERT_THAT(Kinds(current), ElementsAre("slurm_oom_event", "slurm_oom_event"));
  EXPECT_EQ(current.events[0].reason, "11300781.0");
}

TEST(Recognizers, SlurmCancelReasons) {
  LogSet logs = Parse(
      "slurmstepd: error: *** JOB 123 ON node05 CANCELLED AT 2026-12-01T12:03:04 DUE TO TIME LIMIT "
      "***\n"
      "slurmstepd: error: *** JOB 124 ON node06 CANCELLED AT 2026-12-01T12:03:04 DUE TO PREEMPTION "
      "***\n"
      "slurmstepd: error: *** JOB 125 ON node07 CANCELLED AT 2026-12-01T12:03:04 DUE TO NODE "
      "FAILURE ***\n"
      "slurmstepd: error: *** JOB 126 ON node08 CANCELLED AT 2026-12-01T12:03:04 ***\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("host_kill", "host_kill", "host_kill", "host_kill"));
  EXPECT_EQ(logs.events[0].reason, "time limit");
  EXPECT_EQ(logs.events[0].host, "node05");
  EXPECT_EQ(logs.events[0].raw_time.kind, LogTime::Kind::kLocal);
  EXPECT_EQ(logs.events[1].reason, "preemption");
  EXPECT_EQ(logs.events[2].reason, "node failure");
  EXPECT_EQ(logs.events[3].reason, "cancelled");
}

TEST(Recognizers, SrunKilledAndExitCode) {
  LogSet logs = Parse(
      "srun: error: node05: task 37: Killed\n"
      "srun: error: node05: task 3: Exited with exit code 1\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("worker_failed", "worker_failed"));
  EXPECT_EQ(logs.events[0].rank, 37);
  EXPECT_EQ(logs.events[0].signal, 9);
  EXPECT_EQ(logs.events[0].host, "node05");
  EXPECT_EQ(logs.events[1].exit_code, 1);
}

TEST(RealLogs, SlurmStepCancelledWithoutAReasonIsACancelToWeigh) {
  // A step cancel names no reason: scancel, or srun ending the step after a task failed. The
  // line is a kill for the verdict to weigh against what else failed; here the only death is
  // the task it terminated.
  LogSet logs = ParseReal("slurm_step_cancelled.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("host_kill", "worker_failed"));
  EXPECT_EQ(logs.events[0].reason, "step cancelled");
  EXPECT_EQ(logs.events[0].host, "DEL2212S020");
  EXPECT_EQ(logs.events[1].rank, 0);
  EXPECT_EQ(logs.events[1].host, "DEL2212S020");
  EXPECT_EQ(logs.events[1].signal, 15);
  EXPECT_EQ(logs.events[1].launcher, Launcher::kSlurm);
}

TEST(RealLogs, SlurmTimeLimitOnARedactedNode) {
  LogSet logs = ParseReal("slurm_time_limit.log");
  // The job's and the step's line: a reason makes each a kill from outside.
  ASSERT_THAT(Kinds(logs), ElementsAre("host_kill", "host_kill"));
  for (const LogEvent& e : logs.events) {
    EXPECT_EQ(e.reason, "time limit");
    EXPECT_EQ(e.host, "") << "\"ON ...\" names no node";
    EXPECT_EQ(e.raw_time.kind, LogTime::Kind::kLocal);
  }
}

}  // namespace
}  // namespace fr
