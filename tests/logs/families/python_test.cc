// The Python family (lib/fr/logs/families/python.cc): tracebacks followed per writer and the
// faults a worker prints on one line, on real lines from public issues (tests/data/logs/real),
// real captures and lines of the documented shapes.
#include <algorithm>
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
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(RealLogs, CudaOom) {
  LogSet logs = ParseReal("cuda_oom.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("cuda_oom"));
  EXPECT_EQ(logs.events[0].bytes, 22LL * 1024 * 1024);
  EXPECT_EQ(logs.events[0].text.size(), 512u);
}

TEST(RealLogs, RayTaskErrorOutsideATracebackSaysWhatTheWorkerRaised) {
  // ray-project/ray#33011: Ray Tune's "Failure # 1" block, pasted without the worker's own
  // exception line. The wrapper's parentheses still say it raised RuntimeError, and its pid.
  LogSet logs = ParseReal("ray_task_error_cut.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("python_exception"));
  EXPECT_EQ(logs.events[0].reason, "RuntimeError");
  EXPECT_EQ(logs.events[0].pid, 3120093);
}

TEST(RealLogs, InvalidDeviceOrdinalIsALaunchThatDoesNotFitTheNode) {
  // karpathy/build-nanogpt#41: two processes, one GPU visible; rank 1's set_device(cuda:1) fails.
  // The agent's SIGTERM to rank 0 follows; torch's TORCH_USE_CUDA_DSA hint is no second error.
  LogSet logs = ParseReal("cuda_invalid_device_ordinal.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("init_failure", "signal_sent"));
  EXPECT_EQ(logs.events[0].rank, 1);
  EXPECT_EQ(logs.events[0].failed_step, "select its GPU");
}

TEST(Recognizers, RayTaskErrorWrappingAnotherWrapperAddsNothing) {
  // A task that died, or a distributed error: the lines that say why are read where they are.
  LogSet logs = Parse(
      "ray.exceptions.RayTaskError(ActorDiedError): ray::_Inner.train() (pid=1, ip=10.0.0.1)\n"
      "ray.exceptions.RayTaskError(DistBackendError): ray::_Inner.train() (pid=2, ip=10.0.0.1)\n");
  EXPECT_THAT(Kinds(logs), IsEmpty());
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

TEST(Recognizers, GloosSizeCheckIsACollectiveSizeMismatchWhereverItIsPrinted) {
  // The message as github.com/pytorch/gloo/pull/456 quotes a user's post; once as C++'s
  // terminate prints an uncaught exception (what():), once raised into Python.
  constexpr std::string_view kEnforce =
      "[enforce fail at fbcode/gloo/transport/tcp/pair.cc:456] op.preamble.length <= "
      "op.nbytes. 194478720 vs 4";
  LogSet logs = Parse(
      "[rank1]:terminate called after throwing an instance of 'gloo::EnforceNotMet'\n"
      "[rank1]:  what():  " +
      std::string(kEnforce) + "\n" +
      "[rank2]: Traceback (most recent call last):\n"
      "[rank2]:   File \"train.py\", line 9, in step\n"
      "[rank2]:     dist.all_reduce(t)\n"
      "[rank2]: RuntimeError: " +
      std::string(kEnforce) + "\n" + "[rank2]: next line\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("python_exception", "python_exception"));
  for (int i : {0, 1}) {
    EXPECT_EQ(logs.events[i].rank, i + 1);
    EXPECT_EQ(logs.events[i].reason,
              "gloo::EnforceNotMet (a collective's sizes differ across ranks: a peer sent "
              "194478720 bytes where this rank's op takes 4)");
  }
}

TEST(Recognizers, AnUntimedTracebackIsBoundedByTheTimedLinesAroundIt) {
  // The agent's line before it (tests/data/logs/real/torchrun_agent.log) and a watchdog line
  // after it (tests/data/logs/real/watchdog_default_pg.log), times edited. The traceback is
  // emitted while the watchdog line ends it: that line's time is its upper bound, not the
  // next timed line's (there is none here).
  LogSet logs = Parse(
      "I1201 10:00:00.000000 32974 torch/distributed/run.py:793] Setting OMP_NUM_THREADS "
      "environment variable for each process to be 1 in default\n"
      "[rank3]: Traceback (most recent call last):\n"
      "[rank3]:   File \"/app/train.py\", line 85, in <module>\n"
      "[rank3]: ValueError: batch has no labels\n"
      "[rank1]:[E1201 10:10:00.500000000 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught "
      "collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=1, "
      "NumelOut=1, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.\n");
  const LogEvent* exception = nullptr;
  for (const LogEvent& event : logs.events) {
    if (event.kind == LogEventKind::kPythonException) exception = &event;
  }
  ASSERT_NE(exception, nullptr);
  EXPECT_EQ(exception->raw_time.kind, LogTime::Kind::kNone);
  EXPECT_EQ(exception->nearby_time.ns % (24 * 3600 * 1'000'000'000LL), 10LL * 3600 * 1'000'000'000);
  EXPECT_EQ(exception->next_time.ns % (24 * 3600 * 1'000'000'000LL),
            (10LL * 3600 + 600) * 1'000'000'000 + 500'000'000);
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

TEST(Recognizers, ATracebackWithoutAChainMarkerIsAnotherOne) {
  // Python marks a chained exception ("During handling of the above exception..."); without
  // the marker, a traceback after an exception line is another one: the same writer's next
  // error, or another process of a combined console without prefixes. Each error stands, even
  // when the second traceback is cut off before its exception line.
  LogSet both = Parse(
      "Traceback (most recent call last):\n"
      "  File \"a.py\", line 1, in f\n"
      "KeyError: 'x'\n"
      "Traceback (most recent call last):\n"
      "  File \"b.py\", line 3, in g\n"
      "ValueError: y\n");
  ASSERT_THAT(Kinds(both), ElementsAre("python_exception", "python_exception"));
  EXPECT_EQ(both.events[0].reason, "KeyError");
  EXPECT_EQ(both.events[1].reason, "ValueError");
  EXPECT_EQ(both.events[1].line, 4);
  LogSet cut = Parse(
      "Traceback (most recent call last):\n"
      "  File \"train.py\", line 14, in <module>\n"
      "RuntimeError: setup failed\n"
      "Traceback (most recent call last):\n"
      "  File \"train.py\", line 14, in <module>\n");
  ASSERT_THAT(Kinds(cut), ElementsAre("python_exception"));
  EXPECT_EQ(cut.events[0].reason, "RuntimeError");
  EXPECT_EQ(cut.events[0].line, 1);
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

TEST(RealLogs, PdshHostPrefix) {
  // DeepSpeed's multi-node launcher runs pdsh, which puts "<host>: " before every remote line.
  LogSet logs = ParseReal("pdsh_deepspeed.log");
  EXPECT_EQ(logs.files[0].lines, 7);
  // The real traceback of a pdsh run, with its exception line (tests/data/logs/real/
  // python_traceback.log, behind the prefix pdsh adds: ours).
  std::string traceback = ReadAll(log_test::RealDir() + "python_traceback.log");
  std::string prefixed;
  for (size_t start = traceback.find('\n') + 1; start < traceback.size();) {
    size_t end = traceback.find('\n', start);
    prefixed += "worker-1: " + traceback.substr(start, end - start + 1);
    start = end + 1;
  }
  LogSet pdsh = Parse(prefixed);
  ASSERT_THAT(Kinds(pdsh), ElementsAre("python_exception"));
  EXPECT_EQ(pdsh.events[0].host, "worker-1");
  EXPECT_EQ(pdsh.events[0].rank, 0);
  EXPECT_EQ(pdsh.events[0].reason, "AttributeError");
  // Words before ": " that are no host: exception names, NCCL's "host:pid:tid" (its own host).
  LogSet not_hosts = Parse(ReadAll(log_test::RealDir() + "cuda_oom.log") +
                           ReadAll(log_test::RealDir() + "nccl_cuda_failure.log"));
  for (const LogEvent& e : not_hosts.events) {
    EXPECT_TRUE(e.host.empty() || e.host == "n122-164-108") << e.host;
  }
}

TEST(Recognizers, AQuotedMessageIsAdviceNotTheFault) {
  // A start-up tip that quotes torch's words: the rank that printed it had no fault.
  LogSet logs = Parse(
      "Tip: if you see \"torch.cuda.OutOfMemoryError: CUDA out of memory\", lower the batch\n"
      "hint: `CUDA error: device-side assert triggered` usually means a bad label index\n"
      "note: on a \"Segmentation fault\" rerun with faulthandler enabled\n");
  EXPECT_THAT(Kinds(logs), IsEmpty());
  // The same words as their producers print them are faults (NCCL's own single quotes too).
  EXPECT_THAT(Kinds(ParseReal("cuda_oom.log")), ElementsAre("cuda_oom"));
  EXPECT_THAT(Kinds(ParseReal("nccl_cuda_failure.log")), Contains("cuda_error"));
}

TEST(RealLogs, ANanLossTheTrainingRecoveredFrom) {
  // loss_nan.log's lines: its NaN loss, then its finite loss printed twice more: training went
  // on (a dynamic loss scaler skips such a step).
  std::string real = ReadAll(log_test::RealDir() + "loss_nan.log");
  std::vector<std::string> lines;
  for (size_t start = 0; start < real.size();) {
    size_t end = real.find('\n', start);
    lines.push_back(real.substr(start, end - start + 1));
    start = end + 1;
  }
  ASSERT_EQ(lines.size(), 3u);
  LogSet logs = Parse(lines[2] + lines[1] + lines[1]);
  ASSERT_THAT(Kinds(logs), ElementsAre("non_finite_loss"));
  EXPECT_EQ(logs.events[0].finite_losses_after, 2);
  EXPECT_EQ(ParseReal("loss_nan.log").events[0].finite_losses_after, 0);
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

TEST(WorldLogs, UcxsCaughtSignalIsTheProcessCrash) {
  LogSet logs = log_test::ParseWorld("megatron_nccl_sigbus_shm");
  std::vector<std::string> kinds = Kinds(logs);
  auto at = std::find(kinds.begin(), kinds.end(), "segfault");
  ASSERT_NE(at, kinds.end());
  const LogEvent& crash = logs.events[static_cast<size_t>(at - kinds.begin())];
  EXPECT_EQ(crash.signal, 7);
  EXPECT_EQ(crash.host, "09677202c889");
  EXPECT_EQ(crash.pid, 5283);
  EXPECT_EQ(crash.reason, "Bus error");
}

TEST(Recognizers, CaughtSignalCountsCrashSignalsOnly) {
  LogSet logs = Parse(
      "[node1:77:0:78] Caught signal 11 (Segmentation fault: address not mapped to object at "
      "address 0x8)\n"
      "[node1:77:0:78] Caught signal 15 (Terminated)\n"
      "handler: Caught signal 2\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("segfault"));
  EXPECT_EQ(logs.events[0].signal, 11);
  EXPECT_EQ(logs.events[0].pid, 77);
}

TEST(WorldLogs, GlooAndNonFiniteExceptionsWhoseTracebackWasCut) {
  LogSet gloo = log_test::ParseWorld("gloo_isend_peer_exited");
  ASSERT_THAT(Kinds(gloo), ElementsAre("remote_peer_gone"));
  EXPECT_EQ(gloo.events[0].peer_address, "18.25.6.30:30872");
  LogSet nan = log_test::ParseWorld("fastreid_ddp_nan_iteration1");
  ASSERT_THAT(Kinds(nan), Contains("non_finite_loss"));
}

TEST(Recognizers, AFloatingPointErrorAboutNoNonFiniteValueIsNoLoss) {
  LogSet logs = Parse(
      "FloatingPointError: overflow encountered in exp\n"
      "RuntimeError: Timed out waiting 1800000ms for recv operation to complete\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("watchdog_timeout"));
  EXPECT_EQ(logs.events[0].timeout_ms, 1800000);
}
}  // namespace
}  // namespace fr
