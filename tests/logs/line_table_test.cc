// The order in which the log families look at a line (lib/fr/logs/line_table.cc): where a line
// holds several families' needles, the family the table puts first makes its event. Each case is
// a line two recognizers would both accept, and would be read wrongly in the other order.
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
using ::testing::ElementsAre;

TEST(LineTable, SrunsTaskReportBeforeTheWorkersSegfault) {
  // srun's words name the task (the global rank) and are its launcher's report.
  LogSet logs = Parse("srun: error: node05: task 3: Segmentation fault (core dumped)\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("segfault"));
  EXPECT_EQ(logs.events[0].rank, 3);
  EXPECT_EQ(logs.events[0].host, "node05");
  EXPECT_EQ(logs.events[0].launcher, Launcher::kSlurm);
}

TEST(LineTable, MpirunsReportBeforeTheSegfaultItNames) {
  LogSet logs = Parse(
      "mpirun noticed that process rank 2 with PID 0 on node vm exited on signal 11 "
      "(Segmentation fault).\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("worker_failed"));
  EXPECT_EQ(logs.events[0].rank, 2);
  EXPECT_EQ(logs.events[0].signal, 11);
  EXPECT_EQ(logs.events[0].launcher, Launcher::kOpenMpi);
}

TEST(LineTable, RaysWorkerExitBeforeTheSigsegvOfItsStockAdvice) {
  // The raylet's real line (tests/data/ray/2.60.0/sigkill): the worker was SIGKILLed; the advice
  // that follows names SIGSEGV for every death.
  LogSet logs = Parse(
      "(raylet) A worker died or was killed while executing a task by an unexpected system error. "
      "Worker IP address: 192.0.2.2 Worker port: 34491 Worker PID: 24206 Worker exit type: "
      "SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. "
      "End of file. Some common causes include: (1) the process was killed by the OOM killer due "
      "to high memory usage, (2) ray stop --force was called, or (3) the worker crashed "
      "unexpectedly due to SIGSEGV or another unexpected error.\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("worker_failed"));
  EXPECT_EQ(logs.events[0].pid, 24206);
  EXPECT_EQ(logs.events[0].reason, "Ray worker exit: SYSTEM_ERROR");
}

TEST(LineTable, CudaErrorOutOfMemoryIsAnOom) {
  LogSet logs = Parse("RuntimeError: CUDA error: out of memory\n");
  EXPECT_THAT(Kinds(logs), ElementsAre("cuda_oom"));
}

TEST(LineTable, AnOpenErrorTableTakesItsLinesFirst) {
  // torchrun's real table (tests/data/torchrun/2.13.0/segfault): its "traceback : Signal 11
  // (SIGSEGV)" is the entry's, not a segfault line of its own.
  LogSet logs = Parse(
      "Root Cause (first observed failure):\n"
      "[0]:\n"
      "  time      : 2026-12-03_06:48:07\n"
      "  host      : localhost\n"
      "  rank      : 2 (local_rank: 2)\n"
      "  exitcode  : -11 (pid: 20488)  (SIGSEGV)\n"
      "  error_file: <N/A>\n"
      "  traceback : Signal 11 (SIGSEGV) received by PID 20488\n"
      "=======================================================\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("root_cause_table"));
  EXPECT_EQ(logs.events[0].rank, 2);
  EXPECT_EQ(logs.events[0].signal, 11);
  EXPECT_EQ(logs.events[0].pid, 20488);
}

TEST(LineTable, ATracebackTakesItsLinesFirst) {
  // Its frames quote code that holds needles; its exception line makes the one event, at the
  // traceback's first line.
  LogSet logs = Parse(
      "[rank1]: Traceback (most recent call last):\n"
      "[rank1]:   File \"train.py\", line 3, in <module>\n"
      "[rank1]:     raise RuntimeError(\"loss is nan\")\n"
      "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("cuda_error"));
  EXPECT_EQ(logs.events[0].line, 1);
  EXPECT_EQ(logs.events[0].rank, 1);
  EXPECT_EQ(logs.events[0].reason, "an illegal memory access was encountered");
}

}  // namespace
}  // namespace fr
