// The Ray Train family (lib/fr/logs/families/ray.cc), on real captures of Ray Train 2.60
// (tests/data/ray/2.60.0).
#include <string>
#include <vector>

#include "fr/logs/log_parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/logs/log_test_util.h"

namespace fr {
namespace {

using log_test::Parse;
using log_test::ReadAll;

std::string RayConsole(const std::string& scenario) {
  return ReadAll(std::string(FR_TEST_DATA_DIR) + "/ray/2.60.0/" + scenario + "/console.log");
}

TEST(Ray, AWorkersPidIsItsRankFromTheControllersMap) {
  LogSet logs = Parse(RayConsole("exception"), "console.log");
  EXPECT_EQ(logs.files[0].format, "ray");
  std::vector<const LogEvent*> exceptions;
  for (const LogEvent& e : logs.events) {
    if (e.kind == LogEventKind::kPythonException) exceptions.push_back(&e);
  }
  // The worker's own traceback and the quoted snippet are rank 2's; WorkerGroupError is only the
  // wrapper. Ray's deduplication reprints the lines later under the controller's pid ("[repeated
  // 2x across cluster]"), with no rank: they may stay unattributed, never another rank's.
  int ranked = 0;
  for (const LogEvent* e : exceptions) {
    EXPECT_TRUE(e->rank == 2 || e->rank == -1) << e->text;
    ranked += e->rank == 2;
    EXPECT_EQ(e->reason, "ValueError") << e->text;
    EXPECT_EQ(e->text.find('\x1b'), std::string::npos) << "colour codes are taken out";
  }
  EXPECT_GE(ranked, 2);
}

TEST(Ray, AKilledWorkerIsADeathNotTheSegfaultOfTheStockAdvice) {
  LogSet logs = Parse(RayConsole("sigkill"), "console.log");
  bool died = false;
  for (const LogEvent& e : logs.events) {
    EXPECT_NE(e.kind, LogEventKind::kSegfault) << e.text;
    EXPECT_NE(e.kind, LogEventKind::kHostOom) << e.text;
    EXPECT_NE(e.kind, LogEventKind::kPythonException) << "ActorDiedError wraps a death: " << e.text;
    if (e.kind == LogEventKind::kWorkerFailed && e.rank == 2) died = true;
  }
  EXPECT_TRUE(died);
}

TEST(Ray, ARetriedRanksNewProcessDoesNotMakeTheFailedOnesExceptionHandled) {
  // FailureConfig(max_failures=1): rank 2 (pid A) raised in attempt 1, Ray started every rank
  // again with new pids, and rank 2 (pid B) printed on. Rank 2's first exception is still a death
  // of its process, not one that process handled and went on from.
  LogSet logs = Parse(RayConsole("retry"), "console.log");
  std::vector<const LogEvent*> own;  // the workers' own tracebacks, not the controller's quotes
  for (const LogEvent& e : logs.events) {
    if (e.kind == LogEventKind::kPythonException &&
        e.text.find("RayTrainWorker") != std::string::npos) {
      own.push_back(&e);
    }
  }
  ASSERT_EQ(own.size(), 2u);
  EXPECT_EQ(own[0]->rank, 2);
  EXPECT_EQ(own[1]->rank, 3);
  EXPECT_LT(own[0]->line, own[1]->line);
  EXPECT_NE(own[0]->pid, own[1]->pid);
  for (const LogEvent* e : own) EXPECT_EQ(e->lines_after, 0) << e->text;
}

}  // namespace
}  // namespace fr
