#include "fr/verdict/root_cause.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "fr/clock/job_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fr {
namespace {

// A log file known by its path only.
LogFile NamedFile(std::string path) {
  LogFile file;
  file.path = std::move(path);
  file.format = "test";
  return file;
}

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kSecond = 1000 * kMs;
constexpr int kRanksPerHost = 8;

int64_t Noon() {
  return absl::ToUnixNanos(
      absl::FromCivil(absl::CivilSecond(2026, 12, 1, 12, 0, 0), absl::UTCTimeZone()));
}

// Logs of a job of `hosts` x 8 ranks whose host clocks are off by `offsets`: events are given
// in true time and printed in each host's clock.
class JobLogs {
 public:
  explicit JobLogs(std::vector<int64_t> offsets) : offsets_(std::move(offsets)) {
    for (size_t h = 0; h < offsets_.size(); ++h) {
      logs_.files.push_back(NamedFile(Host(static_cast<int>(h)) + "/job.log"));
    }
  }

  static std::string Host(int h) { return "node0" + std::to_string(h); }
  static int HostOf(int rank) { return rank / kRanksPerHost; }
  int ranks() const { return static_cast<int>(offsets_.size()) * kRanksPerHost; }

  LogEvent& Add(LogEventKind kind, int rank, int64_t true_ns) {
    int h = HostOf(rank);
    LogEvent event;
    event.kind = kind;
    event.file = h;
    event.line = static_cast<int64_t>(logs_.events.size()) + 1;
    event.rank = rank;
    event.host = Host(h);
    event.raw_time = {.kind = LogTime::Kind::kLocal, .ns = true_ns + offsets_[h]};
    event.text = std::string(LogEventKindName(kind)) + " on rank " + std::to_string(rank);
    logs_.events.push_back(event);
    return logs_.events.back();
  }

  // Every rank but `except` times out in SeqNum `seq`, enqueued at `enqueue`.
  void TimeOut(int64_t seq, int64_t enqueue, const std::vector<int>& except) {
    for (int rank = 0; rank < ranks(); ++rank) {
      if (std::find(except.begin(), except.end(), rank) != except.end()) continue;
      LogEvent& event = Add(LogEventKind::kWatchdogTimeout, rank,
                            enqueue + 600 * kSecond + (rank % 5) * 100 * kMs);
      event.seq = seq;
      event.op = "ALLREDUCE";
      event.timeout_ms = 600'000;
      event.ran_for_ms = 600'000 + (rank % 5) * 100;
    }
  }

  report::Report Explain(const Judgment* dumps = nullptr) {
    report::Report report;
    Answer(dumps, &report);
    return report;
  }

  LogsAnswer Answer(const Judgment* dumps, report::Report* report) {
    JobClock clock = AlignClocks(&logs_, {});
    return ExplainFromLogs(logs_, clock, dumps, report);
  }

 private:
  std::vector<int64_t> offsets_;
  LogSet logs_;
};

std::vector<int32_t> Ranks(const report::RootCause& cause) {
  return {cause.ranks().begin(), cause.ranks().end()};
}

TEST(RootCauseTest, SkewedClocksDoNotMakeAVictimLookFirst) {
  // node01 (rank 13's host) runs 30 s ahead: by raw time rank 13's GPU OOM is 28 s after a
  // victim's transport error on node00, though it happened 2 s before it.
  JobLogs job({0, 30 * kSecond, 0});
  int64_t fault = Noon();
  LogEvent& oom = job.Add(LogEventKind::kCudaOom, 13, fault);
  oom.bytes = int64_t{2} << 30;
  job.Add(LogEventKind::kTransportError, 2, fault + 2 * kSecond);
  job.TimeOut(2383, fault - kSecond, {13});
  report::Report report = job.Explain();
  const report::RootCause& cause = report.verdict().root_cause();
  EXPECT_EQ(cause.kind(), "cuda_oom");
  EXPECT_THAT(Ranks(cause), ElementsAre(13));
  EXPECT_THAT(cause.hosts(), ElementsAre("node01"));
  EXPECT_EQ(cause.detail().at("bytes_requested"), std::to_string(int64_t{2} << 30));
  // The corrected time is the true one, not node01's.
  EXPECT_LE(std::llabs(cause.time_ns() - fault), 500 * kMs);
  EXPECT_EQ(report.verdict().culprit_ranks_size(), 1);
  EXPECT_EQ(report.verdict().culprit_ranks(0), 13);
  EXPECT_EQ(report.verdict().victim_ranks_size(), job.ranks() - 1);
  ASSERT_GE(cause.evidence_size(), 1);
  EXPECT_EQ(cause.evidence(0).rank(), 13);
  EXPECT_EQ(cause.evidence(0).kind(), "cuda_oom");
  // Every host's offset is reported against the consensus.
  ASSERT_EQ(report.timeline().hosts_size(), 3);
  EXPECT_NEAR(report.timeline().hosts(1).offset_ms() - report.timeline().hosts(0).offset_ms(),
              30'000, 100);
}

TEST(RootCauseTest, TheEarliestFaultWinsOverTheMostFrequentOne) {
  JobLogs job({0, 0});
  int64_t fault = Noon();
  LogEvent& exception = job.Add(LogEventKind::kPythonException, 9, fault);
  exception.reason = "KeyError";
  // Later, every other rank's communicator fails: many lines, none of them the cause.
  for (int rank = 0; rank < job.ranks(); ++rank) {
    if (rank != 9) job.Add(LogEventKind::kTransportError, rank, fault + 5 * kSecond);
  }
  report::Report report = job.Explain();
  EXPECT_EQ(report.verdict().root_cause().kind(), "python_exception");
  EXPECT_THAT(Ranks(report.verdict().root_cause()), ElementsAre(9));
  EXPECT_EQ(report.verdict().root_cause().detail().at("exception"), "KeyError");
}

TEST(RootCauseTest, TheAnswerAsValuesIsWhatTheReportSays) {
  // The exit status is decided on these values: they must say what the report says.
  JobLogs failed({0});
  failed.Add(LogEventKind::kSegfault, 3, Noon());
  report::Report report;
  LogsAnswer answer = failed.Answer(nullptr, &report);
  EXPECT_EQ(answer.kind, RootCauseKind::kSegfault);
  EXPECT_EQ(report.verdict().root_cause().kind(), "segfault");
  EXPECT_EQ(answer.failure_class, FailureClass::kMissingParticipant);
  EXPECT_EQ(report.verdict().failure_class(), "missing_participant");

  JobLogs healthy({0});
  report::Report quiet;
  LogsAnswer none = healthy.Answer(nullptr, &quiet);
  EXPECT_EQ(none.kind, RootCauseKind::kNone);
  EXPECT_EQ(none.failure_class, FailureClass::kNone);
  EXPECT_EQ(quiet.verdict().failure_class(), "none");
}

TEST(RootCauseTest, OnlyTimeoutsVisibleTheRankThatNeverReachedTheCollectiveIsTheCulprit) {
  JobLogs job({0, 7 * kSecond});
  int64_t enqueue = Noon();
  job.TimeOut(812, enqueue, {5});
  // Rank 5 timed out later on an earlier collective of the same group.
  LogEvent& late = job.Add(LogEventKind::kWatchdogTimeout, 5, enqueue + 900 * kSecond);
  late.seq = 811;
  late.timeout_ms = 600'000;
  report::Report report = job.Explain();
  const report::RootCause& cause = report.verdict().root_cause();
  EXPECT_EQ(cause.kind(), "collective_timeout");
  EXPECT_THAT(Ranks(cause), ElementsAre(5));
  EXPECT_EQ(cause.confidence(), "high");
  EXPECT_EQ(report.verdict().failure_class(), "missing_participant");
}

TEST(RootCauseTest, ASilentRankAmongTimeoutsIsTheCulprit) {
  JobLogs job({0, 0});
  job.TimeOut(40, Noon(), {11});
  job.Add(LogEventKind::kNcclInit, 11, Noon() - 3600 * kSecond).nranks = 16;
  report::Report report = job.Explain();
  EXPECT_EQ(report.verdict().root_cause().kind(), "collective_timeout");
  EXPECT_THAT(Ranks(report.verdict().root_cause()), ElementsAre(11));
}

// An init line's world size is only a claim: one far beyond the ranks that printed (a garbled or
// hostile line) cannot make every rank that did not print a suspect, nor be walked rank by rank.
TEST(RootCauseTest, AWorldSizeFarBeyondTheRanksThatPrintedNamesNoSilentRank) {
  JobLogs job({0, 0});
  job.TimeOut(40, Noon(), {11});
  job.Add(LogEventKind::kNcclInit, 11, Noon() - 3600 * kSecond).nranks = 2'000'000'000;
  report::Report report = job.Explain();
  // No rank named, so the logs do not say who never reached the collective: unknown.
  EXPECT_EQ(report.verdict().root_cause().kind(), "unknown");
  EXPECT_THAT(Ranks(report.verdict().root_cause()), IsEmpty());
}

TEST(RootCauseTest, AKillFromOutsideHasNoCulpritRank) {
  JobLogs job({0, 0});
  LogEvent& kill = job.Add(LogEventKind::kHostKill, 0, Noon());
  kill.reason = "time limit";
  kill.rank = -1;
  report::Report report = job.Explain();
  EXPECT_EQ(report.verdict().root_cause().kind(), "host_kill");
  EXPECT_THAT(Ranks(report.verdict().root_cause()), IsEmpty());
  EXPECT_THAT(report.verdict().culprit_ranks(), IsEmpty());
}

TEST(RootCauseTest, AKillAfterTheJobHadStalledIsNotTheCause) {
  JobLogs job({0, 0});
  job.TimeOut(99, Noon(), {4});
  LogEvent& kill = job.Add(LogEventKind::kHostKill, 0, Noon() + 3600 * kSecond);
  kill.reason = "time limit";
  report::Report report = job.Explain();
  EXPECT_EQ(report.verdict().root_cause().kind(), "collective_timeout");
  EXPECT_THAT(Ranks(report.verdict().root_cause()), ElementsAre(4));
}

TEST(RootCauseTest, ExceptionsRaisedBecauseCommunicationFailedAreTheCascade) {
  JobLogs job({0, 0});
  job.TimeOut(3, Noon(), {6});
  LogEvent& cascade = job.Add(LogEventKind::kPythonException, 1, Noon() + 601 * kSecond);
  cascade.reason = "torch.distributed.DistBackendError";
  report::Report report = job.Explain();
  EXPECT_EQ(report.verdict().root_cause().kind(), "collective_timeout");
}

TEST(RootCauseTest, AHealthyRunHasNoRootCause) {
  JobLogs job({0, 0});
  for (int rank = 0; rank < job.ranks(); ++rank) {
    job.Add(LogEventKind::kNcclInit, rank, Noon()).nranks = job.ranks();
  }
  report::Report report = job.Explain();
  EXPECT_EQ(report.verdict().root_cause().kind(), "none");
  EXPECT_EQ(report.verdict().failure_class(), "none");
  EXPECT_THAT(report.verdict().culprit_ranks(), IsEmpty());
}

// The lines below are the Xid, loss and store families' events (their wording is tested on real
// lines in tests/logs/families); here, when they happened decides whether they explain the hang.

TEST(RootCauseTest, AnXidLoggedADayAfterTheFailureIsNotItsCause) {
  JobLogs job({0, 0});
  job.TimeOut(42, Noon(), {5});
  LogEvent& xid = job.Add(LogEventKind::kXid, 9, Noon() + 24 * 3600 * kSecond);
  xid.xid = 79;
  report::Report report = job.Explain();
  EXPECT_EQ(report.verdict().root_cause().kind(), "collective_timeout");
  EXPECT_THAT(Ranks(report.verdict().root_cause()), ElementsAre(5));
}

TEST(RootCauseTest, ALineDatedAfterTheAnalysisIsFlaggedNotUsed) {
  JobLogs job({0, 0});
  job.TimeOut(42, Noon(), {5});
  int64_t year_2199 = absl::ToUnixNanos(
      absl::FromCivil(absl::CivilSecond(2199, 1, 1, 0, 0, 0), absl::UTCTimeZone()));
  LogEvent& xid = job.Add(LogEventKind::kXid, 9, year_2199);
  xid.xid = 79;
  report::Report report = job.Explain();
  EXPECT_EQ(report.verdict().root_cause().kind(), "collective_timeout");
  EXPECT_THAT(Ranks(report.verdict().root_cause()), ElementsAre(5));
  ASSERT_EQ(report.timeline().impossible_times_size(), 1);
  EXPECT_THAT(report.timeline().impossible_times(0), ::testing::HasSubstr("2199-01-01"));
}

TEST(RootCauseTest, ANanLossTheTrainingRecoveredFromIsNotTheCause) {
  JobLogs job({0, 0});
  LogEvent& nan = job.Add(LogEventKind::kNonFiniteLoss, 3, Noon() - 7200 * kSecond);
  nan.finite_losses_after = 500;  // two hours of finite losses after it
  job.TimeOut(42, Noon(), {5});
  report::Report report = job.Explain();
  EXPECT_EQ(report.verdict().root_cause().kind(), "collective_timeout");
  EXPECT_THAT(Ranks(report.verdict().root_cause()), ElementsAre(5));
  // Without the recovery it is the first fault.
  JobLogs stopped({0, 0});
  stopped.Add(LogEventKind::kNonFiniteLoss, 3, Noon() - 7200 * kSecond);
  stopped.TimeOut(42, Noon(), {5});
  EXPECT_EQ(stopped.Explain().verdict().root_cause().kind(), "non_finite");
}

TEST(RootCauseTest, TheSameNonFiniteReportOnEveryRankNamesNoneAsItsSource) {
  // A loss reduced across ranks is NaN on all of them at the same step: each rank raises the
  // same error (fast-reid's "Loss became infinite or NaN at iteration=N!").
  auto nan_at = [](JobLogs& job, int rank, int64_t ns, int iteration) {
    LogEvent& e = job.Add(LogEventKind::kNonFiniteLoss, rank, ns);
    e.reason = "FloatingPointError";
    e.text = "[rank" + std::to_string(rank) +
             "]:FloatingPointError: Loss became infinite or NaN at iteration=" +
             std::to_string(iteration) + "!";
  };
  JobLogs everywhere({0});
  for (int rank = 0; rank < 4; ++rank) nan_at(everywhere, rank, Noon() + rank * kMs, 1200);
  report::Report report = everywhere.Explain();
  const report::RootCause& cause = report.verdict().root_cause();
  EXPECT_EQ(cause.kind(), "non_finite");
  EXPECT_THAT(Ranks(cause), ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(cause.confidence(), "medium");
  EXPECT_THAT(report.verdict().culprit_ranks(), IsEmpty());
  // One rank's loss going NaN steps before the others' is that rank's.
  JobLogs one_first({0});
  nan_at(one_first, 2, Noon(), 1100);
  for (int rank : {0, 1, 3}) nan_at(one_first, rank, Noon() + 2 * kSecond, 1200);
  EXPECT_THAT(Ranks(one_first.Explain().verdict().root_cause()), ElementsAre(2));
}

TEST(RootCauseTest, AStoreErrorTheJobGotPastIsNoInitFailure) {
  // A client that failed to connect once and retried: communicators came up after it, and the
  // job later lost rank 12 to a CUDA OOM.
  JobLogs job({0, 0});
  job.Add(LogEventKind::kInitFailure, 2, Noon() - 3600 * kSecond);
  for (int rank = 0; rank < job.ranks(); ++rank) {
    job.Add(LogEventKind::kNcclInit, rank, Noon() - 3500 * kSecond).nranks = job.ranks();
  }
  job.Add(LogEventKind::kCudaOom, 12, Noon() - 10 * kSecond);
  job.TimeOut(42, Noon() - 5 * kSecond, {12});
  report::Report report = job.Explain();
  EXPECT_EQ(report.verdict().root_cause().kind(), "cuda_oom");
  EXPECT_THAT(Ranks(report.verdict().root_cause()), ElementsAre(12));
  // A store that stays unreachable is the init failure.
  JobLogs never({0, 0});
  never.Add(LogEventKind::kInitFailure, 2, Noon());
  EXPECT_EQ(never.Explain().verdict().root_cause().kind(), "init_failure");
}

TEST(RootCauseTest, AKernelFaultTheJobRanOnAfterIsNotTheCause) {
  // The kernel killed some process on node01 half an hour before the hang; the flight recorder
  // shows every rank completing collectives until a minute before it: the job went on.
  JobLogs job({0, 0});
  LogEvent& oom = job.Add(LogEventKind::kHostOom, 9, Noon() - 1800 * kSecond);
  oom.rank = -1;
  oom.pid = 4242;
  job.TimeOut(42, Noon(), {5});
  Judgment dumps;
  for (int rank = 0; rank < job.ranks(); ++rank) {
    dumps.last_completed_ns[rank] = Noon() - (rank == 5 ? 120 : 60) * kSecond;
  }
  report::Report report = job.Explain(&dumps);
  EXPECT_EQ(report.verdict().root_cause().kind(), "collective_timeout");
  EXPECT_THAT(Ranks(report.verdict().root_cause()), ElementsAre(5));
  // When the job's progress ended with it, it is the cause.
  Judgment stopped;
  for (int rank = 0; rank < job.ranks(); ++rank) {
    stopped.last_completed_ns[rank] = Noon() - 1801 * kSecond;
  }
  EXPECT_EQ(job.Explain(&stopped).verdict().root_cause().kind(), "host_oom");
}

TEST(RootCauseTest, AKernelLineOfAnotherProcessIsNotTheJobs) {
  // Every rank on node01 printed its NCCL init line with its pid; the OOM killer took pid 4242,
  // none of them, half an hour before rank 5 stopped.
  auto explain = [](int32_t killed_pid) {
    JobLogs job({0, 0});
    for (int rank = 0; rank < job.ranks(); ++rank) {
      LogEvent& init = job.Add(LogEventKind::kNcclInit, rank, Noon() - 3600 * kSecond);
      init.pid = 1000 + rank;
      init.nranks = job.ranks();
    }
    LogEvent& oom = job.Add(LogEventKind::kHostOom, 9, Noon() - 1800 * kSecond);
    oom.rank = -1;
    oom.pid = killed_pid;
    job.TimeOut(42, Noon(), {5});
    return job.Explain();
  };
  report::Report other = explain(4242);
  EXPECT_EQ(other.verdict().root_cause().kind(), "collective_timeout");
  EXPECT_THAT(Ranks(other.verdict().root_cause()), ElementsAre(5));
  // Rank 9's own pid: the kill is the job's.
  EXPECT_EQ(explain(1009).verdict().root_cause().kind(), "host_oom");
}

TEST(RootCauseTest, AnEarlierStepOfTheAllocationIsNotThisJobs) {
  // Step 0 (data preparation) was OOM-killed; two minutes later torchrun started the training
  // step, whose first collective the flight recorder holds, and which later hung on rank 5.
  JobLogs job({0, 0});
  LogEvent& step0 = job.Add(LogEventKind::kSlurmOomEvent, 0, Noon() - 900 * kSecond);
  step0.rank = -1;
  step0.reason = "1234.0";
  LogEvent& oom = job.Add(LogEventKind::kHostOom, 0, Noon() - 901 * kSecond);
  oom.rank = -1;
  job.Add(LogEventKind::kLauncherStart, 0, Noon() - 780 * kSecond);
  job.TimeOut(42, Noon(), {5});
  Judgment dumps;
  dumps.first_record_ns = Noon() - 700 * kSecond;
  report::Report report = job.Explain(&dumps);
  EXPECT_EQ(report.verdict().root_cause().kind(), "collective_timeout");
  EXPECT_THAT(Ranks(report.verdict().root_cause()), ElementsAre(5));
}

TEST(RootCauseTest, AConnectionNcclCouldNotMakeBeforeAnyCommunicatorIsAnInitFailure) {
  // NCCL's bootstrap (nccl-tests#15's wording): nothing had formed yet.
  auto explain = [](bool formed_first) {
    JobLogs job({0, 0});
    if (formed_first) {
      for (int rank = 0; rank < job.ranks(); ++rank) {
        job.Add(LogEventKind::kNcclInit, rank, Noon() - 60 * kSecond).nranks = job.ranks();
      }
    }
    LogEvent& connect = job.Add(LogEventKind::kTransportError, 3, Noon());
    connect.text = "[0] include/socket.h:360 WARN Call to connect failed : Connection timed out";
    connect.reason = "system error";
    return job.Explain();
  };
  report::Report never = explain(false);
  EXPECT_EQ(never.verdict().root_cause().kind(), "init_failure");
  EXPECT_THAT(never.verdict().root_cause().summary(),
              ::testing::HasSubstr("could not connect to its peers to form NCCL"));
  // Once communicators had come up, the same line is a transport error of a running job.
  EXPECT_EQ(explain(true).verdict().root_cause().kind(), "transport_error");
}

TEST(RootCauseTest, APastedExcerptsHighestRankDoesNotBoundTheWorld) {
  // Ranks 0, 3 and 4 pasted, timing out in a reduce-scatter whose sizes say 8 members
  // (hiyouga/LlamaFactory#6269's NumelIn=544997376, NumelOut=68124672): ranks 1, 2, 5, 6 and 7
  // are silent in this excerpt, so naming 1 and 2 would blame ranks nobody has seen.
  JobLogs job({0});
  for (int rank : {0, 3, 4}) {
    LogEvent& timeout = job.Add(LogEventKind::kWatchdogTimeout, rank, Noon());
    timeout.seq = 7753;
    timeout.op = "_REDUCE_SCATTER_BASE";
    timeout.numel_in = 544997376;
    timeout.numel_out = 68124672;
  }
  report::Report report = job.Explain();
  EXPECT_THAT(Ranks(report.verdict().root_cause()), IsEmpty());
  EXPECT_THAT(report.verdict().culprit_ranks(), IsEmpty());
  // Most of the group is silent here: nothing in the excerpt says who never came.
  EXPECT_EQ(report.verdict().root_cause().kind(), "unknown");
  EXPECT_EQ(report.verdict().root_cause().confidence(), "low");
}

TEST(RootCauseTest, AnXidTheProgramCanProvokeThenTheGpusOwnIsTheGpu) {
  // leptonai/gpud#46's dmesg: Xid 13 (graphics exception) on GPU cb:00, then 5 s later Xid 109
  // (context switch timeout) on the same GPU: the GPU failed.
  auto explain = [](const std::string& second_bus) {
    JobLogs job({0});
    LogEvent& app = job.Add(LogEventKind::kXid, 0, Noon());
    app.xid = 13;
    app.bus_id = "0000:cb:00";
    app.rank = -1;
    LogEvent& gpu = job.Add(LogEventKind::kXid, 0, Noon() + 5 * kSecond);
    gpu.xid = 109;
    gpu.bus_id = second_bus;
    gpu.rank = -1;
    return job.Explain();
  };
  report::Report same = explain("0000:cb:00");
  EXPECT_EQ(same.verdict().root_cause().kind(), "xid");
  EXPECT_EQ(same.verdict().root_cause().detail().at("xid"), "109");
  // On another GPU, the first stays the program's CUDA error.
  EXPECT_EQ(explain("0000:3b:00").verdict().root_cause().kind(), "cuda_error");
}

TEST(RootCauseTest, AStepCancelledWithoutAReasonIsTheCauseOnlyWhenNothingElseFailed) {
  // IGNF/myria3d#123: "*** STEP 6053.0 ON DEL2212S020 CANCELLED AT ... ***", then the task it
  // terminated. With a task that exited with an error first, srun ended the step itself.
  auto explain = [](bool task_failed_first) {
    JobLogs job({0});
    if (task_failed_first) {
      LogEvent& failed = job.Add(LogEventKind::kWorkerFailed, 3, Noon() - kSecond);
      failed.exit_code = 1;
    }
    LogEvent& cancel = job.Add(LogEventKind::kHostKill, 0, Noon());
    cancel.rank = -1;
    cancel.reason = "step cancelled";
    LogEvent& terminated = job.Add(LogEventKind::kWorkerFailed, 0, Noon() + kSecond);
    terminated.signal = 15;
    return job.Explain();
  };
  report::Report cancelled = explain(false);
  EXPECT_EQ(cancelled.verdict().root_cause().kind(), "host_kill");
  // No reason given: srun may have reacted to a failure these lines do not show.
  EXPECT_EQ(cancelled.verdict().root_cause().confidence(), "medium");
  report::Report after_failure = explain(true);
  EXPECT_NE(after_failure.verdict().root_cause().kind(), "host_kill");
  EXPECT_THAT(Ranks(after_failure.verdict().root_cause()), ElementsAre(3));
}

TEST(RootCauseTest, OneHostsUntimedLinesInOneFileKeepTheirOrder) {
  // gpu5's proxy thread reports an IB completion error; later in the same output its main
  // thread hits an illegal memory access. No line has a time: the order in the file decides,
  // not the layer.
  JobLogs job({0});
  // Each event is edited before the next is added: Add returns a reference into a vector.
  for (LogEventKind kind : {LogEventKind::kTransportError, LogEventKind::kCudaError}) {
    LogEvent& event = job.Add(kind, kind == LogEventKind::kCudaError ? 1 : 0, Noon());
    event.raw_time = LogTime();
    event.rank = -1;
  }
  EXPECT_EQ(job.Explain().verdict().root_cause().kind(), "transport_error");
}

TEST(RootCauseTest, OnlyAnExitCodeOneIsAnExceptionWhoseTracebackIsElsewhere) {
  // huggingface/trl#316: the launcher's table says rank 1 exited with code 1, nothing else.
  JobLogs job({0});
  LogEvent& failed = job.Add(LogEventKind::kRootCauseTable, 1, Noon());
  failed.exit_code = 1;
  report::Report report = job.Explain();
  const report::RootCause& cause = report.verdict().root_cause();
  EXPECT_EQ(cause.kind(), "python_exception");
  EXPECT_EQ(cause.confidence(), "low");
  EXPECT_THAT(Ranks(cause), ElementsAre(1));
  EXPECT_THAT(cause.summary(), ::testing::HasSubstr("traceback"));
  // Killed instead (SIGKILL): not an exception.
  JobLogs killed({0});
  killed.Add(LogEventKind::kRootCauseTable, 1, Noon()).signal = 9;
  EXPECT_EQ(killed.Explain().verdict().root_cause().kind(), "unknown");
}

TEST(RootCauseTest, ABusErrorIsACrashNamedAsSuch) {
  JobLogs job({0});
  job.Add(LogEventKind::kWorkerFailed, 2, Noon()).signal = 7;
  report::Report report = job.Explain();
  EXPECT_EQ(report.verdict().root_cause().kind(), "segfault");
  EXPECT_THAT(Ranks(report.verdict().root_cause()), ElementsAre(2));
  EXPECT_THAT(report.verdict().root_cause().summary(), ::testing::HasSubstr("bus error"));
}

}  // namespace
}  // namespace fr
