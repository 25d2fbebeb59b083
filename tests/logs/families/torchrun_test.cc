// The torchrun family (lib/fr/logs/families/torchrun.cc): the elastic agent's lines and its
// ChildFailedError table, on real lines from public issues (tests/data/logs/real) and real
// captures.
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
using log_test::ReadAll;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(RealLogs, TorchrunErrorTable) {
  LogSet logs = ParseReal("torchrun_table.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("worker_failed", "root_cause_table"));
  const LogEvent& root = logs.events[1];
  EXPECT_EQ(root.rank, 0);
  EXPECT_EQ(root.local_rank, 0);
  EXPECT_EQ(root.host, "n136-117-136.byted.org");
  EXPECT_EQ(root.exit_code, 1);
  EXPECT_EQ(root.pid, 78970);
  EXPECT_EQ(root.raw_time.kind, LogTime::Kind::kLocal);
  EXPECT_EQ(logs.events[0].rank, 1);
  EXPECT_EQ(logs.events[0].pid, 78971);
}

TEST(RealLogs, TorchrunRootCauseSigkill) {
  LogSet logs = ParseReal("torchrun_root_sigkill.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("root_cause_table"));
  EXPECT_EQ(logs.events[0].exit_code, -9);
  EXPECT_EQ(logs.events[0].signal, 9);
  EXPECT_EQ(logs.events[0].pid, 14750);
  EXPECT_EQ(logs.events[0].line, 7);
}

TEST(RealLogs, TorchrunAgentTracebackIsCascade) {
  LogSet logs = ParseReal("torchrun_sigkill.log");
  // The agent's own ChildFailedError traceback is not a python_exception root cause.
  ASSERT_THAT(Kinds(logs), ElementsAre("worker_failed"));
  EXPECT_EQ(logs.events[0].exit_code, -9);
  EXPECT_EQ(logs.events[0].signal, 9);
  EXPECT_EQ(logs.events[0].local_rank, 5);
  EXPECT_EQ(logs.events[0].pid, 2630);
}

TEST(RealLogs, TorchrunAgentLines) {
  LogSet glog = ParseReal("torchrun_agent.log");
  ASSERT_THAT(Kinds(glog), ElementsAre("signal_sent", "worker_failed"));
  EXPECT_EQ(glog.events[0].pid, 33051);
  EXPECT_EQ(glog.events[0].signal, 15);
  EXPECT_EQ(glog.events[1].exit_code, 1);
  EXPECT_EQ(glog.events[1].local_rank, 3);
  LogSet logging = ParseReal("torchelastic_logging.log");
  ASSERT_THAT(Kinds(logging), ElementsAre("signal_sent", "worker_failed"));
  EXPECT_EQ(logging.events[0].raw_time.kind, LogTime::Kind::kLocal);
  EXPECT_EQ(logging.files[0].format, "python");
}

TEST(Recognizers, Rendezvous) {
  LogSet logs = Parse(
      "[2026-12-01 12:03:04,123] torch.distributed.elastic.agent.server.api: [INFO] [default] "
      "Rendezvous complete for workers. Result:\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("rendezvous"));
  EXPECT_EQ(logs.events[0].raw_time.kind, LogTime::Kind::kLocal);
  EXPECT_EQ(logs.events[0].raw_time.ns, 1796126584123000000LL);
}

TEST(RealLogs, TorchelasticDeathSignal) {
  LogSet logs = ParseReal("torchelastic_death_signal.log");
  // The agent was signalled (from outside, or by srun ending the step), then signals its workers.
  ASSERT_THAT(Kinds(logs), ElementsAre("host_kill", "signal_sent"));
  EXPECT_EQ(logs.events[0].signal, 15);
  EXPECT_EQ(logs.events[0].reason, "the launcher received signal 15");
  EXPECT_EQ(logs.events[1].pid, 1365);
  EXPECT_EQ(logs.events[1].signal, 15);
  EXPECT_EQ(logs.files[0].launchers, LauncherBit(Launcher::kTorchrun));
}

TEST(RealLogs, TorchrunsBannerMarksTheFile) {
  LogSet logs = ParseReal("debug_server_dumper_keyerror.log");
  ASSERT_FALSE(logs.events.empty());
  EXPECT_EQ(logs.events[0].kind, LogEventKind::kLauncherStart);
  EXPECT_EQ(logs.events[0].line, 3);
  EXPECT_NE(logs.files[0].launchers & LauncherBit(Launcher::kTorchrun), 0u);
}

TEST(Torchrun, ACutOffTableDoesNotSwallowTheLog) {
  // A table without its closing rule: three lines that are none of it end it, and what follows
  // is read as any other line.
  LogSet logs = Parse(
      "Root Cause (first observed failure):\n"
      "[0]:\n"
      "  rank      : 0 (local_rank: 0)\n"
      "  exitcode  : -9 (pid: 14750)\n"
      "pasted by hand, the rest cut\n"
      "more text\n"
      "and more\n"
      "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("root_cause_table", "cuda_error"));
  EXPECT_EQ(logs.events[0].signal, 9);
  EXPECT_EQ(logs.events[0].pid, 14750);
  EXPECT_EQ(logs.events[0].line, 2);
  EXPECT_EQ(logs.events[1].rank, 1);
}

// --- accelerate 1.16 runs torchrun's agent (real capture: tests/data/accelerate) ----------

std::string LauncherConsole(const std::string& launcher) {
  return ReadAll(std::string(FR_TEST_DATA_DIR) + "/" + launcher + "/exception/console.log");
}

TEST(Accelerate, TheWorkersExceptionIsTheOnlyOneAndTheTableNamesItsRank) {
  // accelerate runs torchrun's agent in its own process: its console is torchrun's. The
  // ChildFailedError traceback under accelerate's own frames is the launcher's report, no
  // exception of a worker; "Root Cause (first observed failure)" names rank 2.
  LogSet logs = Parse(LauncherConsole("accelerate/1.16.0"), "console.log");
  std::vector<const LogEvent*> exceptions;
  const LogEvent* table = nullptr;
  for (const LogEvent& e : logs.events) {
    if (e.kind == LogEventKind::kPythonException) exceptions.push_back(&e);
    if (e.kind == LogEventKind::kRootCauseTable) table = &e;
  }
  ASSERT_EQ(exceptions.size(), 1u);
  EXPECT_EQ(exceptions[0]->rank, 2);
  EXPECT_EQ(exceptions[0]->reason, "ValueError");
  EXPECT_FALSE(exceptions[0]->in_launcher);
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->rank, 2);
  EXPECT_EQ(table->exit_code, 1);
}

TEST(WorldLogs, AnEntryOfTheErrorTablePastedWithoutItsHeadIsRead) {
  LogSet logs = log_test::ParseWorld("megatron_elastic_sigsegv_rank0");
  ASSERT_THAT(Kinds(logs), ElementsAre("worker_failed"));
  EXPECT_EQ(logs.events[0].rank, 0);
  EXPECT_EQ(logs.events[0].local_rank, 0);
  EXPECT_EQ(logs.events[0].signal, 11);
  EXPECT_EQ(logs.events[0].pid, 6421);
}

TEST(Recognizers, ARankFieldOutsideATableShapeIsNoEntry) {
  LogSet logs = Parse("rank : banana (local_rank: 0)\nthe rank: 3 (local_rank: 1) was slow\n");
  EXPECT_THAT(Kinds(logs), IsEmpty());
}
}  // namespace
}  // namespace fr
