#include "fr/logs/log_parser.h"

#include <dirent.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

LogSet Parse(std::string_view text, std::string_view path = "test.log") {
  LogSet logs;
  EXPECT_TRUE(ParseLogText(path, text, &logs).ok());
  return logs;
}

std::string RealDir() { return std::string(FR_TEST_DATA_DIR) + "/logs/real/"; }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

LogSet ParseReal(const std::string& name) {
  std::string path = RealDir() + name;
  absl::StatusOr<LogSet> logs = ParseLogFiles({path});
  EXPECT_TRUE(logs.ok());
  EXPECT_THAT(logs->errors, IsEmpty());
  return *std::move(logs);
}

std::vector<std::string> Kinds(const LogSet& logs) {
  std::vector<std::string> kinds;
  for (const LogEvent& e : logs.events) kinds.push_back(LogEventKindName(e.kind));
  return kinds;
}

TEST(LogEventKindName, LowerSnakeCase) {
  EXPECT_STREQ(LogEventKindName(LogEventKind::kXid), "xid");
  EXPECT_STREQ(LogEventKindName(LogEventKind::kWorkTimeoutSeqs), "work_timeout_seqs");
  EXPECT_STREQ(LogEventKindName(LogEventKind::kCollectiveEnqueue), "collective_enqueue");
}

// --- Open MPI's mpirun --tag-output (real captures: tests/data/mpirun/4.1.4, Open MPI 4.1.4) ---

std::string MpirunConsole(const std::string& scenario) {
  return ReadAll(std::string(FR_TEST_DATA_DIR) + "/mpirun/4.1.4/" + scenario + "/console.log");
}

TEST(OpenMpi, TaggedLinesAreALogAndCarryTheirRank) {
  std::string console = MpirunConsole("exception");
  EXPECT_TRUE(LooksLikeLog(console));
  LogSet logs = Parse(console, "console.log");
  ASSERT_EQ(logs.files.size(), 1u);
  EXPECT_EQ(logs.files[0].format, "openmpi");
  const LogEvent* exception = nullptr;
  for (const LogEvent& e : logs.events) {
    if (e.kind == LogEventKind::kPythonException) exception = &e;
  }
  ASSERT_NE(exception, nullptr);
  EXPECT_EQ(exception->rank, 2);
  EXPECT_NE(exception->text.find("ValueError: bad batch at step 3"), std::string::npos);
}

TEST(OpenMpi, MpirunNamesTheRankThatDiedOfASignal) {
  LogSet logs = Parse(MpirunConsole("segfault"), "console.log");
  const LogEvent* noticed = nullptr;
  const LogEvent* fatal = nullptr;
  for (const LogEvent& e : logs.events) {
    if (e.kind == LogEventKind::kWorkerFailed) noticed = &e;
    if (e.kind == LogEventKind::kSegfault && fatal == nullptr) fatal = &e;
  }
  ASSERT_NE(noticed, nullptr);
  EXPECT_EQ(noticed->rank, 2);
  EXPECT_EQ(noticed->signal, 11);
  EXPECT_EQ(noticed->host, "vm");
  // faulthandler's "Fatal Python error: Segmentation fault" in tagged fragments.
  ASSERT_NE(fatal, nullptr);
  EXPECT_EQ(fatal->rank, 2);
}

TEST(OpenMpi, TheFirstProcessToExitAndItsCode) {
  // In a hang the first rank to exit is a victim whose collective timed out (rank 1 here); the
  // event says only what mpirun saw.
  LogSet logs = Parse(MpirunConsole("hang"), "console.log");
  const LogEvent* first = nullptr;
  for (const LogEvent& e : logs.events) {
    if (e.kind == LogEventKind::kWorkerFailed) first = &e;
  }
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->exit_code, 1);
  EXPECT_GE(first->rank, 0);
  EXPECT_NE(first->rank, 2);
}

TEST(OpenMpi, TagsInsideALineAreTakenOut) {
  // A write without its newline runs into the next tag; faulthandler writes a frame in pieces.
  LogSet logs = Parse(
      "[1,2]<stderr>:Fatal Python error: [1,2]<stderr>:Segmentation fault\n"
      "[1,0]<stdout>:step 3 loss nan[1,0]<stdout>:\n",
      "console.log");
  ASSERT_FALSE(logs.events.empty());
  EXPECT_EQ(logs.events[0].kind, LogEventKind::kSegfault);
  EXPECT_EQ(logs.events[0].rank, 2);
  // The line keeps its own tag; the one inside it is gone.
  EXPECT_EQ(logs.events[0].text, "[1,2]<stderr>:Fatal Python error: Segmentation fault");
}

// --- torchrun --tee: a line copied before its writer ended it -------------------------------

// torchrun's tail thread copies what it read so far, newline or not; faulthandler writes "Fatal
// Python error: " and "Segmentation fault" apart. The real capture's line, torn both ways the
// copy can tear it: continued by the same worker, or by another worker's line, or running on
// from another worker's torn line.
TEST(TorchrunTee, ALineTornByTheCopyIsReadAsItsWriterPrintedIt) {
  std::string console =
      ReadAll(std::string(FR_TEST_DATA_DIR) + "/torchrun/2.13.0/segfault/console.log");
  const std::string whole = "[default2]:Fatal Python error: Segmentation fault\n";
  ASSERT_NE(console.find(whole), std::string::npos);
  for (const std::string& torn :
       {std::string("[default2]:Fatal Python error: [default2]:Segmentation fault\n"),
        std::string("[default2]:Fatal Python error: [default0]:step 3 loss 0.2931\n"
                    "[default2]:Segmentation fault\n"),
        std::string("[default0]:step 3 lo[default2]:Fatal Python error: Segmentation fault\n"
                    "[default0]:ss 0.2931\n")}) {
    std::string text = console;
    text.replace(text.find(whole), whole.size(), torn);
    LogSet logs = Parse(text, "console.log");
    int segfaults = 0;
    for (const LogEvent& e : logs.events) {
      if (e.kind != LogEventKind::kSegfault) continue;
      ++segfaults;
      EXPECT_EQ(e.local_rank, 2) << e.text;
      EXPECT_EQ(e.text.find("[default0]"), std::string::npos) << e.text;
    }
    EXPECT_GE(segfaults, 1) << torn;
  }
  // The same worker's line reads whole again.
  LogSet same = Parse("[default2]:Fatal Python error: [default2]:Segmentation fault\n");
  ASSERT_EQ(same.events.size(), 1u);
  EXPECT_EQ(same.events[0].text, "[default2]:Fatal Python error: Segmentation fault");
}

TEST(TorchrunTee, TorchsOwnRankPrefixAfterTheTagIsNotATear) {
  LogSet logs = Parse(
      "[default1]:[rank1]: Traceback (most recent call last):\n"
      "[default1]:[rank1]:   File \"/job.py\", line 9, in <module>\n"
      "[default1]:[rank1]: ValueError: injected fault on rank 1\n");
  ASSERT_EQ(logs.events.size(), 1u);
  EXPECT_EQ(logs.events[0].kind, LogEventKind::kPythonException);
  EXPECT_EQ(logs.events[0].rank, 1);
  EXPECT_EQ(logs.events[0].local_rank, 1);
}

// --- Ray Train 2.60 (real captures: tests/data/ray/2.60.0) ----------------------------------

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

// --- PyTorch Lightning 2.6 and accelerate 1.16 (real captures: tests/data/lightning,
// tests/data/accelerate) ---------------------------------------------------------------------

std::string LauncherConsole(const std::string& launcher) {
  return ReadAll(std::string(FR_TEST_DATA_DIR) + "/" + launcher + "/exception/console.log");
}

TEST(Lightning, EveryRanksTracebackCarriesTorchsRankPrefix) {
  // Lightning's own ranks share one console without a prefix of its own; torch prefixes an
  // uncaught exception's lines with "[rankN]:". Rank 2 raised; the others' RuntimeErrors are
  // Gloo's closed connection.
  LogSet logs = Parse(LauncherConsole("lightning/2.6.6"), "console.log");
  std::map<int32_t, std::string> exceptions;
  for (const LogEvent& e : logs.events) {
    if (e.kind == LogEventKind::kPythonException) exceptions[e.rank] = e.reason;
  }
  EXPECT_EQ(exceptions[2], "ValueError");
  for (int32_t rank : {0, 1, 3}) EXPECT_NE(exceptions[rank], "ValueError") << rank;
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

// --- Real lines from public issues (tests/data/logs/real) ------------------------------------

// DeepSpeed's launcher (lines quoted in DeepSpeed issues #618, #3232, #5302).
TEST(RealLogs, DeepSpeedLauncherReportsTheFirstExitButNoRank) {
  LogSet logs = ParseReal("deepspeed_launcher.log");
  EXPECT_EQ(logs.files[0].launchers, LauncherBit(Launcher::kDeepSpeed));
  std::vector<const LogEvent*> exits, kills;
  for (const LogEvent& e : logs.events) {
    if (e.kind == LogEventKind::kWorkerFailed) exits.push_back(&e);
    if (e.kind == LogEventKind::kSignalSent) kills.push_back(&e);
  }
  ASSERT_EQ(exits.size(), 2u);
  EXPECT_EQ(exits[0]->exit_code, 1);
  EXPECT_EQ(exits[0]->signal, -1);
  EXPECT_EQ(exits[1]->exit_code, -9);
  EXPECT_EQ(exits[1]->signal, 9);
  for (const LogEvent* e : exits) {
    EXPECT_EQ(e->launcher, Launcher::kDeepSpeed);
    // The quoted command is the last-spawned worker's ('--local_rank=4'), not the failed one's.
    EXPECT_EQ(e->rank, -1) << e->text;
    EXPECT_EQ(e->local_rank, -1) << e->text;
    EXPECT_EQ(e->raw_time.kind, LogTime::Kind::kLocal) << e->text;
  }
  // "Killing subprocess N" is the launcher's own doing, for every worker: never a death.
  ASSERT_EQ(kills.size(), 3u);
  EXPECT_EQ(kills[0]->pid, 3353707);
}

TEST(Launchers, EachLaunchersPrefixesMarkTheFile) {
  EXPECT_EQ(Parse("[1,2]<stderr>:step 1\n", "a.log").files[0].launchers,
            LauncherBit(Launcher::kOpenMpi));
  EXPECT_EQ(Parse("[default3]:step 1\n", "a.log").files[0].launchers,
            LauncherBit(Launcher::kTorchrun));
  // torch prints "[rank3]:" itself, whatever launched it.
  EXPECT_EQ(Parse("[rank3]:step 1\n", "a.log").files[0].launchers, 0u);
  EXPECT_EQ(Parse("12: [default0]:step 1\n", "a.log").files[0].launchers,
            LauncherBit(Launcher::kSlurm) | LauncherBit(Launcher::kTorchrun));
  EXPECT_EQ(Parse("(RayTrainWorker pid=15904) step 1\n", "a.log").files[0].launchers,
            LauncherBit(Launcher::kRay));
}

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

TEST(RealLogs, NcclInit) {
  LogSet logs = ParseReal("nccl_init.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("nccl_init", "nccl_init"));
  const LogEvent& e = logs.events[0];
  EXPECT_EQ(e.host, "hostname-test");
  EXPECT_EQ(e.pid, 984);
  EXPECT_EQ(e.cuda_dev, 4);
  EXPECT_EQ(e.comm_rank, 36);
  EXPECT_EQ(e.nranks, 64);
  EXPECT_EQ(e.bus_id, "0000:9b:00");
  EXPECT_EQ(e.comm_id, "0x5ae77eb5ea4ec1ee");
  EXPECT_EQ(logs.files[0].format, "nccl");
  LogSet old = ParseReal("nccl_init_old.log");
  ASSERT_THAT(Kinds(old), ElementsAre("nccl_init"));
  EXPECT_EQ(old.events[0].bus_id, "0000:e7:00");
  EXPECT_EQ(old.events[0].host, "A03-R28-I49-3-9000018");
}

TEST(RealLogs, NcclTransportWarnings) {
  LogSet ib = ParseReal("nccl_ib_warn.log");
  ASSERT_THAT(Kinds(ib), ElementsAre("transport_error"));
  EXPECT_EQ(ib.events[0].host, "kp-ddp-worker-0");
  EXPECT_EQ(ib.events[0].cuda_dev, 4);
  EXPECT_EQ(ib.events[0].peer_address, "10.216.210.236<54862>");
  EXPECT_EQ(ib.events[0].reason, "NET/IB completion error");
  LogSet socket = ParseReal("nccl_socket_warn.log");
  ASSERT_THAT(Kinds(socket), ElementsAre("transport_error"));
  EXPECT_EQ(socket.events[0].peer_address, "10.200.84.247<58355>");
}

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

TEST(RealLogs, SlurmOom) {
  LogSet old = ParseReal("slurm_oom_old.log");
  // The step cancelled after a task failed is the cascade, not a kill from outside.
  ASSERT_THAT(Kinds(old), ElementsAre("slurm_oom_event", "slurm_oom_event", "worker_failed"));
  EXPECT_EQ(old.events[0].reason, "3495064.0");
  EXPECT_EQ(old.events[1].rank, 4);
  EXPECT_EQ(old.events[1].host, "Orion-01-01");
  EXPECT_EQ(old.events[2].rank, 289);
  EXPECT_EQ(old.events[2].signal, 7);
  LogSet current = ParseReal("slurm_oom.log");
  ASSERT_THAT(Kinds(current), ElementsAre("slurm_oom_event", "slurm_oom_event"));
  EXPECT_EQ(current.events[0].reason, "11300781.0");
}

TEST(RealLogs, KernelOomOneEventPerKill) {
  LogSet logs = ParseReal("kernel_oom.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("host_oom"));
  EXPECT_EQ(logs.events[0].pid, 22213);
  EXPECT_EQ(logs.events[0].bytes, 25348912LL * 1024);
  LogSet dmesg = ParseReal("dmesg_t_oom.log");
  ASSERT_THAT(Kinds(dmesg), ElementsAre("host_oom"));
  EXPECT_EQ(dmesg.events[0].reason, "python");
  EXPECT_EQ(dmesg.events[0].raw_time.kind, LogTime::Kind::kLocal);
  LogSet syslog = ParseReal("syslog_kernel.log");
  EXPECT_THAT(Kinds(syslog), IsEmpty());
  EXPECT_EQ(syslog.files[0].format, "syslog");
}

TEST(RealLogs, Xid) {
  LogSet logs = ParseReal("xid.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("xid"));
  EXPECT_EQ(logs.events[0].xid, 79);
  EXPECT_EQ(logs.events[0].bus_id, "0000:44:00");
  EXPECT_EQ(logs.events[0].reason, "GPU has fallen off the bus");
}

TEST(RealLogs, RemotePeerGone) {
  LogSet logs = ParseReal("remote_error.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("remote_peer_gone", "remote_peer_gone"));
  EXPECT_EQ(logs.events[0].rank, 3);
}

TEST(RealLogs, CudaOom) {
  LogSet logs = ParseReal("cuda_oom.log");
  ASSERT_THAT(Kinds(logs), ElementsAre("cuda_oom"));
  EXPECT_EQ(logs.events[0].bytes, 22LL * 1024 * 1024);
  EXPECT_EQ(logs.events[0].text.size(), 512u);
}

// --- One recognizer each, on lines of the documented shapes ------------------------------------

TEST(Recognizers, XidWithProcess) {
  LogSet logs = Parse(
      "[ 1234.567890] NVRM: Xid (PCI:0000:3B:00): 79, pid=1234, name=python, GPU has fallen off "
      "the bus.\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("xid"));
  EXPECT_EQ(logs.events[0].bus_id, "0000:3b:00");
  EXPECT_EQ(logs.events[0].pid, 1234);
  EXPECT_EQ(logs.events[0].reason, "GPU has fallen off the bus.");
  EXPECT_EQ(logs.events[0].raw_time.kind, LogTime::Kind::kSinceBoot);
  EXPECT_EQ(logs.events[0].raw_time.ns, 1234567890000LL);
}

TEST(Recognizers, KernLogHostAndTime) {
  LogSet logs = Parse(
      "Dec  1 12:03:04 node05 kernel: [1234.56] NVRM: Xid (PCI:0000:3b:00): 48, pid=7, name=x, "
      "DBE\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("xid"));
  EXPECT_EQ(logs.events[0].host, "node05");
  EXPECT_EQ(logs.events[0].raw_time.kind, LogTime::Kind::kNoYear);
  EXPECT_EQ(logs.events[0].raw_time.month, 12);
  EXPECT_EQ(logs.events[0].raw_time.day, 1);
}

TEST(Recognizers, Rfc3339SyslogIsUtc) {
  LogSet logs = Parse(
      "2026-12-01T12:03:04.123456+01:00 node05 kernel: Memory cgroup out of memory: Killed process "
      "1234 (python) total-vm:100kB, anon-rss:2048kB, file-rss:0kB\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("host_oom"));
  const LogEvent& e = logs.events[0];
  EXPECT_EQ(e.host, "node05");
  EXPECT_EQ(e.bytes, 2048 * 1024);
  EXPECT_EQ(e.raw_time.kind, LogTime::Kind::kUtc);
  // 2026-12-01T11:03:04.123456Z
  EXPECT_EQ(e.raw_time.ns, 1796122984123456000LL);
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

TEST(Recognizers, SrunPrefixAroundTorchrunAndGlog) {
  LogSet logs = Parse(
      "37: [rank37]:[E1201 12:03:04.123456 ProcessGroupNCCL.cpp:616] [Rank 37] Watchdog caught "
      "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, Timeout(ms)=1000) ran "
      "for 1001 milliseconds before timing out.\n"
      " 5: node05:1234:1234 [5] NCCL INFO comm 0x1 rank 5 nranks 8 cudaDev 5 busId 0000:3B:00.0 "
      "commId 0x2 - Init COMPLETE\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("watchdog_timeout", "nccl_init"));
  EXPECT_EQ(logs.events[0].rank, 37);
  EXPECT_EQ(logs.events[0].raw_time.month, 12);
  EXPECT_EQ(logs.events[0].raw_time.day, 1);
  EXPECT_EQ(logs.events[1].rank, 5);
  EXPECT_EQ(logs.events[1].bus_id, "0000:3b:00");
  EXPECT_EQ(logs.events[1].host, "node05");
}

TEST(Recognizers, LocalRankPrefixAndLogDirPath) {
  LogSet logs =
      Parse("[default3]:RuntimeError: CUDA error: an illegal memory access was encountered\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("cuda_error"));
  EXPECT_EQ(logs.events[0].local_rank, 3);
  EXPECT_EQ(logs.events[0].reason, "an illegal memory access was encountered");
  LogSet by_path =
      Parse("Fatal Python error: Segmentation fault\n", "/logs/run_1/attempt_0/6/stderr.log");
  ASSERT_THAT(Kinds(by_path), ElementsAre("segfault"));
  EXPECT_EQ(by_path.files[0].local_rank, 6);
  EXPECT_EQ(by_path.events[0].local_rank, 6);
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

TEST(Recognizers, NcclCudaFailureAndSystemError) {
  LogSet logs = Parse(
      "node1:1:2 [0] enqueue.cc:12 NCCL WARN Cuda failure 'out of memory'\n"
      "node1:1:2 [0] NCCL WARN Cuda failure 'an illegal memory access was encountered'\n"
      "RuntimeError: NCCL error in: x.cpp:1, unhandled system error, ncclSystemError: boom\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("cuda_oom", "cuda_error", "transport_error"));
  EXPECT_EQ(logs.events[1].reason, "an illegal memory access was encountered");
}

TEST(Recognizers, Rendezvous) {
  LogSet logs = Parse(
      "[2026-12-01 12:03:04,123] torch.distributed.elastic.agent.server.api: [INFO] [default] "
      "Rendezvous complete for workers. Result:\n");
  ASSERT_THAT(Kinds(logs), ElementsAre("rendezvous"));
  EXPECT_EQ(logs.events[0].raw_time.kind, LogTime::Kind::kLocal);
  EXPECT_EQ(logs.events[0].raw_time.ns, 1796126584123000000LL);
}

TEST(Recognizers, IsoTimeForms) {
  LogSet logs = Parse(
      "2026-12-01T12:03:04.123Z rank 0 loss=nan\n"
      "2026-12-01 12:03:04,123 - loss = NaN\n");
  ASSERT_EQ(logs.events.size(), 2u);
  EXPECT_EQ(logs.events[0].raw_time.kind, LogTime::Kind::kUtc);
  EXPECT_EQ(logs.events[1].raw_time.kind, LogTime::Kind::kLocal);
  EXPECT_EQ(logs.events[0].raw_time.ns, logs.events[1].raw_time.ns);
}

// --- Hostile input -----------------------------------------------------------------------------

TEST(Hostile, HugeLinesNulsAndInvalidUtf8) {
  std::string text(10 << 20, 'x');
  text += " NVRM: Xid (PCI:0000:3b:00): 79, boom\r\n";
  static constexpr char kBinary[] = "\0\0\xff\xfe NVRM: Xid (PCI:0000:3b:00): 13, \xff\xc0 bad\r\n";
  text += std::string(kBinary, sizeof(kBinary) - 1);
  text += "no newline at the end: loss: nan";
  LogSet logs = Parse(text);
  // The first line is read in pieces of at most the line cap: its Xid, 10 MiB in, is seen, on
  // the line it is on.
  ASSERT_THAT(Kinds(logs), ElementsAre("xid", "xid", "non_finite_loss"));
  EXPECT_EQ(logs.events[0].xid, 79);
  EXPECT_EQ(logs.events[0].line, 1);
  EXPECT_EQ(logs.events[1].xid, 13);
  EXPECT_EQ(logs.events[1].line, 2);
  EXPECT_EQ(logs.files[0].long_lines, 1);
  EXPECT_EQ(logs.files[0].lines, 3);
  for (const LogEvent& e : logs.events) EXPECT_LE(e.text.size(), 512u);
}

TEST(Hostile, EventsCapped) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "loss: nan\n";
  LogSet logs;
  LogParseOptions options;
  options.max_events_per_file = 10;
  ASSERT_TRUE(ParseLogText("x", text, &logs, options).ok());
  EXPECT_EQ(logs.events.size(), 10u);
  EXPECT_EQ(logs.files[0].events_dropped, 990);
}

TEST(Hostile, ManyOpenTracebacksAndRandomBytes) {
  std::string text;
  for (int i = 0; i < 20000; ++i) {
    text += "[rank" + std::to_string(i) + "]: Traceback (most recent call last):\n";
  }
  uint32_t state = 1;
  for (int i = 0; i < (1 << 20); ++i) {
    state = state * 1664525u + 1013904223u;
    text.push_back(static_cast<char>(state >> 24));
  }
  LogSet logs = Parse(text);
  EXPECT_LT(logs.events.size(), 1000u);
}

TEST(Hostile, ChunkedStreamMatchesWholeText) {
  std::string text = ReadAll(RealDir() + "watchdog_subgroup.log");
  FILE* stream = fmemopen(text.data(), text.size(), "r");
  ASSERT_NE(stream, nullptr);
  LogSet streamed;
  ASSERT_TRUE(ParseLogStream("-", stream, &streamed).ok());
  fclose(stream);
  LogSet whole = Parse(text);
  EXPECT_EQ(Kinds(streamed), Kinds(whole));
  EXPECT_EQ(streamed.files[0].path, "-");
}

// --- Recognizing logs by content ---------------------------------------------------------------

std::vector<std::string> FilesIn(const std::string& dir) {
  std::vector<std::string> files;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return files;
  while (dirent* entry = readdir(d)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") files.push_back(dir + "/" + name);
  }
  closedir(d);
  return files;
}

TEST(LooksLikeLog, FalseForDumps) {
  std::vector<std::string> dumps = FilesIn(std::string(FR_TEST_DATA_DIR) + "/fuzz/pickle");
  std::vector<std::string> json = FilesIn(std::string(FR_TEST_DATA_DIR) + "/fuzz/json");
  dumps.insert(dumps.end(), json.begin(), json.end());
  ASSERT_GT(dumps.size(), 10u);
  for (const std::string& path : dumps) {
    EXPECT_FALSE(LooksLikeLog(ReadAll(path).substr(0, 4096))) << path;
  }
}

TEST(LooksLikeLog, TrueForRealLogs) {
  std::vector<std::string> logs = FilesIn(RealDir());
  ASSERT_GT(logs.size(), 10u);
  for (const std::string& path : logs) EXPECT_TRUE(LooksLikeLog(ReadAll(path))) << path;
  EXPECT_TRUE(LooksLikeLog("[ 1234.567890] NVRM: Xid\n"));
  EXPECT_TRUE(LooksLikeLog("[2026-12-01 12:03:04,123] torch.distributed.run: [WARNING]\n"));
  EXPECT_TRUE(LooksLikeLog("[12:03:04] step 100 loss 2.5\n"));
  EXPECT_FALSE(LooksLikeLog("[12, 13]"));
  EXPECT_FALSE(LooksLikeLog("[1.5, 2]"));
  EXPECT_TRUE(LooksLikeLog("[rank0]: hello\n"));
  EXPECT_FALSE(LooksLikeLog(std::string("\x1f\x8b\x08\x00", 4)));
  EXPECT_FALSE(LooksLikeLog(std::string("\x28\xb5\x2f\xfd", 4)));
  EXPECT_FALSE(LooksLikeLog(""));
}

TEST(ParseLogFiles, UnreadableFileIsAnErrorOthersParsed) {
  absl::StatusOr<LogSet> logs = ParseLogFiles({"/nonexistent/fr/log.txt", RealDir() + "xid.log"});
  ASSERT_TRUE(logs.ok());
  ASSERT_EQ(logs->errors.size(), 1u);
  EXPECT_EQ(logs->errors[0].rfind("/nonexistent/fr/log.txt: ", 0), 0u);
  ASSERT_EQ(logs->files.size(), 1u);
  ASSERT_THAT(Kinds(*logs), ElementsAre("xid"));
  EXPECT_EQ(logs->events[0].file, 0);
}

}  // namespace
}  // namespace fr
