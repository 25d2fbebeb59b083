// The Python family (lib/fr/logs/families/python.cc): tracebacks followed per writer and the
// faults a worker prints on one line, on real lines from public issues (tests/data/logs/real),
// real captures and lines of the documented shapes.
#include <map>
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

TEST(RealLogs, CudaOom) {
  LogSet logs = ParseReal("cuda_oom.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("cuda_oom"));
  EXPECT_EQ(logs.events[0].bytes, 22LL * 1024 * 1024);
  EXPECT_EQ(logs.events[0].text.size(), 512u);
}

TEST(Recognizers, PythonTracebackOneEventPerRank) {
  LogSet logs = Parse(
      "[rank1]: Traceback (most recent call last):\n"
      "[rank2]: Traceback (most recent call last):\n"
      "[rank1]:   File \"train.py\", line 3, in <module>\n"
      "[rank2]:   File \"train.py\", line 9, in step\n"
      "[rank1]:     loss = model(x)\n"
      "[rank1]: ValueError: bad shape\n"
      "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has\n"
      "[rank1]: next line\n"
      "[rank2]: next line\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("python_exception", "cuda_oom"));
  EXPECT_EQ(logs.events[0].rank, 1);
  EXPECT_EQ(logs.events[0].line, 1);
  EXPECT_EQ(logs.events[0].reason, "ValueError");
  EXPECT_EQ(logs.events[1].rank, 2);
  EXPECT_EQ(logs.events[1].line, 2);
  EXPECT_EQ(logs.events[1].bytes, 2LL << 30);
}

TEST(Recognizers, ChainedTracebackReportsLastException) {
  LogSet logs = Parse(
      "Traceback (most recent call last):\n"
      "  File \"a.py\", line 1, in f\n"
      "KeyError: 'x'\n"
      "\n"
      "During handling of the above exception, another exception occurred:\n"
      "\n"
      "Traceback (most recent call last):\n"
      "  File \"a.py\", line 3, in f\n"
      "RuntimeError: wrapped\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("python_exception"));
  EXPECT_EQ(logs.events[0].reason, "RuntimeError");
  EXPECT_EQ(logs.events[0].line, 1);
}

TEST(Recognizers, DistBackendTimeoutTracebackIsCascade) {
  LogSet logs = Parse(
      "Traceback (most recent call last):\n"
      "  File \"a.py\", line 1, in f\n"
      "torch.distributed.DistBackendError: [PG 0 Rank 3] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, Timeout(ms)=1) ran for 2 milliseconds before "
      "timing out.\n");
  EXPECT_THAT(Kinds(logs), IsEmpty());
}

TEST(Recognizers, NonFiniteLoss) {
  LogSet logs = Parse(
      "step 10 loss: 2.31\n"
      "step 11 loss: nan\n"
      "{'loss': inf, 'grad_norm': 1.0}\n"
      "Loss is NaN, stopping\n"
      "cross entropy across ranks: information\n");
  EXPECT_THAT(Kinds(logs), ElementsAre("non_finite_loss", "non_finite_loss", "non_finite_loss"));
}

TEST(RealLogs, PythonTraceback) {
  LogSet logs = ParseReal("python_traceback.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("python_exception"));
  EXPECT_EQ(logs.events[0].reason, "AttributeError");
  EXPECT_EQ(logs.events[0].rank, 0);
  EXPECT_EQ(logs.events[0].line, 2);  // dated by the traceback's first line
}

TEST(RealLogs, GlooClosedConnectionIsAPeerGone) {
  LogSet logs = ParseReal("gloo_connection_closed.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("remote_peer_gone"));
  EXPECT_EQ(logs.events[0].peer_address, "172.28.0.12:43185");
  EXPECT_EQ(logs.events[0].line, 3);
}

TEST(RealLogs, IllegalMemoryAccess) {
  LogSet logs = ParseReal("illegal_memory_access.log");
  ASSERT_FALSE(logs.events.empty());
  EXPECT_EQ(logs.events[0].kind, LogEventKind::kCudaError);
  EXPECT_EQ(logs.events[0].reason, "an illegal memory access was encountered");
  EXPECT_EQ(logs.events[0].rank, 0);
}

TEST(RealLogs, LossNan) {
  LogSet logs = ParseReal("loss_nan.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("non_finite_loss"));
  EXPECT_EQ(logs.events[0].line, 3);
  EXPECT_EQ(logs.events[0].rank, 1);
}

TEST(RealLogs, LoggedExceptionThenTheProcessWentOn) {
  // The debug server's dumper logged a KeyError and the job trained on: lines after it.
  LogSet logs = ParseReal("debug_server_dumper_keyerror.log");
  const LogEvent* exception = nullptr;
  for (const LogEvent& e : logs.events) {
    if (e.kind == LogEventKind::kPythonException) exception = &e;
  }
  ASSERT_NE(exception, nullptr);
  EXPECT_EQ(exception->reason, "KeyError");
  EXPECT_EQ(exception->rank, 0);
  EXPECT_GT(exception->lines_after, 0);
}

TEST(Python, SegfaultFromFaulthandler) {
  LogSet logs = Parse(
      "Fatal Python error: Segmentation fault\n"
      "Signal 11 (SIGSEGV) received by PID 20488\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("segfault", "segfault"));
  EXPECT_EQ(logs.events[0].signal, 11);
  EXPECT_EQ(logs.events[1].pid, 20488);
}

// --- PyTorch Lightning 2.6 (real capture: tests/data/lightning) ------------------------------

TEST(Lightning, EveryRanksTracebackCarriesTorchsRankPrefix) {
  // Lightning's own ranks share one console without a prefix of its own; torch prefixes an
  // uncaught exception's lines with "[rankN]:". Rank 2 raised; the others' RuntimeErrors are
  // Gloo's closed connection.
  LogSet logs =
      Parse(ReadAll(std::string(FR_TEST_DATA_DIR) + "/lightning/2.6.6/exception/console.log"),
            "console.log");
  std::map<int32_t, std::string> exceptions;
  for (const LogEvent& e : logs.events) {
    if (e.kind == LogEventKind::kPythonException) exceptions[e.rank] = e.reason;
  }
  EXPECT_EQ(exceptions[2], "ValueError");
  for (int32_t rank : {0, 1, 3}) EXPECT_NE(exceptions[rank], "ValueError") << rank;
}

}  // namespace
}  // namespace fr
